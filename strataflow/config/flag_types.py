"""The ``type=`` functions of the ``strataflow`` command's options, and the naming of the
Context's errors by the flag that set them.

Why a module of its own: argparse turns a ``ValueError`` from a type function into
``invalid <function name> value: 'x'``, which leaked internal names (``invalid _size
value: '12XB'``). Each function here raises :class:`argparse.ArgumentTypeError` with the
value and the forms accepted, and argparse puts the option in front (``argument --memory:
'12XB' is not a size (use e.g. 512MB, 2GB or auto; units ...)``). The functions return
the text they checked where the command reads it again later (a size stays ``"512MB"``),
so checking a flag at parse time changes nothing downstream.
"""

from __future__ import annotations

import argparse
import contextlib
import math
from typing import Any, Callable, Iterator

from strataflow.config import ConfigError, parse_size

__all__ = ["positive", "integer", "size", "machine_size", "number_list", "levels", "tier", "unprefixed", "flag_errors",
           "HelpFormatter"]

_KIND_NAMES = {int: "an integer", float: "a number"}
_SIZE_UNITS = "units B, KB, MB, GB, TB, powers of 1024"


def unprefixed(message: str, *names: str) -> str:
    """``message`` without a leading ``NAME: `` for any of ``names`` (argparse, or the
    caller, puts the flag in front itself: ``argument --tier: --tier: ...`` said it twice)."""
    for name in names:
        if message.startswith(name + ": "):
            return message[len(name) + 2:]
    return message


def positive(kind: type, zero: bool = False) -> Callable[[str], Any]:
    """A number of ``kind`` greater than zero (``--pressure 0`` would divide by zero,
    ``--partitions 0`` silently run with the default), or at least zero with ``zero``
    (``bench --repeat 0`` only summarizes --pool files)."""
    bound = ">= 0" if zero else "> 0"
    what = _KIND_NAMES.get(kind, f"a {kind.__name__}")
    finite = " and finite" if kind is float else ""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} {bound}, got {text!r}") from None
        if not (value >= 0 if zero else value > 0) or not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be {bound}{finite}, got {text!r}")
        return value

    parse.__name__ = f"{'non-negative' if zero else 'positive'} {kind.__name__}"
    return parse


def integer(text: str) -> int:
    """Any integer (a seed)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer such as 0 or 42, got {text!r}") from None


def size(auto: bool = False, zero_ok: bool = True) -> Callable[[str], str]:
    """A size such as ``512MB`` (``auto`` too, with ``auto``), returned as written (the
    command reads it with ``parse_size`` where it uses it)."""
    example = "512MB, 2GB or auto" if auto else "300MB, 2GB or 1.5GiB"

    def parse(text: str) -> str:
        if auto and text == "auto":
            return text
        try:
            n = parse_size(text)
        except ConfigError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a size (use e.g. {example}; {_SIZE_UNITS})") from None
        if not zero_ok and n == 0:
            raise argparse.ArgumentTypeError(f"{text!r} is zero bytes; give a size above zero, e.g. {example}")
        return text

    parse.__name__ = "size"
    return parse


def machine_size(text: str) -> str:
    """``--machine-memory``: a size (``2GB``), or ``budget+SIZE``: each run's own memory
    budget plus SIZE (``bench auto``'s budgets differ by pressure; a fixed machine would
    leave more page cache to the higher pressures). Returned as written."""
    rest = text[len("budget+"):] if text.startswith("budget+") else text
    try:
        n = parse_size(rest)
    except ConfigError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a machine size (use e.g. 2GB, or budget+768MB: each run's "
                                         f"memory budget plus 768MB; {_SIZE_UNITS})") from None
    if n == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is zero bytes; give a size above zero, e.g. 2GB or budget+768MB")
    return text


def number_list(kind: type, example: str) -> Callable[[str], str]:
    """A comma-separated list of numbers of ``kind``, each > 0 (``--threads 1,4``,
    ``--pressures 0.5,2``), returned as written."""
    one = positive(kind)

    def parse(text: str) -> str:
        items = [x for x in text.split(",") if x.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list such as {example}, got {text!r}")
        for x in items:
            try:
                one(x.strip())
            except argparse.ArgumentTypeError:
                raise argparse.ArgumentTypeError(f"{x.strip()!r} in {text!r} is not {_KIND_NAMES[kind]} > 0; "
                                                 f"expected a comma-separated list such as {example}") from None
        return text

    parse.__name__ = f"list of {kind.__name__}"
    return parse


def levels(text: str) -> str:
    """A comma-separated list of storage level names, returned as written."""
    from strataflow.storage.level import StorageLevel

    for name in (x.strip() for x in text.split(",") if x.strip()):
        try:
            StorageLevel.parse(name)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(unprefixed(str(exc), "storage level")) from None
    return text


def tier(text: str) -> dict:
    """One ``--tier`` -> a ``Context(tiers=[...])`` entry (the forms: ``storage/disk/tier_text.py``)."""
    from strataflow.storage.disk.tier_text import parse_tier_text

    try:
        return parse_tier_text(text)
    except ConfigError as exc:  # argparse names the option itself: "argument --tier: ..."
        raise argparse.ArgumentTypeError(unprefixed(str(exc), "--tier")) from None


@contextlib.contextmanager
def flag_errors(flags: dict[str, str]) -> Iterator[None]:
    """Re-raises a :class:`ConfigError` whose message starts with a Context option's name
    (``mmap_memory: cannot read size 'x'``) with the flag that set it instead
    (``--mmap-memory: ...``): on the command line, the user typed the flag."""
    try:
        yield
    except ConfigError as exc:
        message = str(exc)
        for name, flag in flags.items():
            if message.startswith(name + ":"):
                raise ConfigError(flag + message[len(name):]) from exc
        raise


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that shows each option's default where it has one (argparse's
    ``ArgumentDefaultsHelpFormatter`` would also print "(default: None)" and repeat the
    defaults some help texts already explain) and keeps the workload list's lines."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (default is not None and default is not False and default is not argparse.SUPPRESS and action.option_strings
                and "default" not in text and "%(default)" not in text):
            text += " (default: %(default)s)"
        return text
