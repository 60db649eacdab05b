"""Checks of single configuration values, for every layer that reads one.

Why a module of its own: :mod:`strataflow.config` validates a whole ``Context`` and so
imports the storage layer (the policy and serializer registries, the tier specs), while
storage itself needs the same small checks (a size, a directory, the eviction
watermarks). Kept here, below both and importing nothing of strataflow, they are written
once and no lower layer imports a higher one.

Every check raises :class:`ConfigError` naming the option and the offending value.
Sizes follow Spark's convention: ``"512MB"``, ``"1g"``, ``"1.5GiB"`` and plain integers
(bytes) are accepted, and every unit is a power of 1024 (``1KB == 1KiB == 1024``).
"""

from __future__ import annotations

import os
import stat
import re
import tempfile
from typing import Any, Sequence

__all__ = ["ConfigError", "parse_size", "check_num_partitions", "check_dirs", "check_watermarks",
           "DEFAULT_WATERMARKS"]

#: The asynchronous eviction writer's ``(low, high)`` fractions of memory.
DEFAULT_WATERMARKS: tuple[float, float] = (0.85, 0.95)


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the option and the value."""


_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*$")


def parse_size(value: int | float | str, option: str = "size") -> int:
    """Bytes in ``value``: an int, or a string such as ``"512MB"`` (powers of 1024)."""
    if isinstance(value, bool):
        raise ConfigError(f"{option}: expected a size such as '512MB', got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0 or value != value or value == float("inf"):
            raise ConfigError(f"{option}: a size must be a finite number >= 0, got {value!r}")
        return int(value)
    if not isinstance(value, str):
        raise ConfigError(f"{option}: expected a size such as '512MB', got {type(value).__name__} {value!r}")
    m = _SIZE_RE.match(value)
    if not m or m.group(2).lower() not in _UNITS:
        raise ConfigError(
            f"{option}: cannot read size {value!r}; write a number and a unit such as "
            f"'512MB', '2GB' or '1.5GiB' (units B, KB, MB, GB, TB, powers of 1024)"
        )
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def check_num_partitions(n: object, option: str = "num_partitions") -> int:
    """``n`` as an int >= 1, or a ConfigError naming ``option``."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise ConfigError(f"{option}: expected an integer >= 1, got {n!r}")
    if n < 1:
        raise ConfigError(f"{option}: must be >= 1, got {n}")
    return n


def check_dirs(dirs: Sequence[str | os.PathLike] | str | os.PathLike | None, option: str) -> list[str]:
    """Absolute paths of existing, writable directories (None: the temp directory), so
    a bad one fails at configuration, not at the first spill of a long job."""
    if dirs is None:
        return [tempfile.gettempdir()]
    if isinstance(dirs, (str, os.PathLike)):
        dirs = [dirs]
    out: list[str] = []
    for d in dirs:
        path = os.path.abspath(os.fspath(d))
        if not os.path.exists(path):
            raise ConfigError(f"{option}: directory {path!r} does not exist")
        if not os.path.isdir(path):
            raise ConfigError(f"{option}: {path!r} is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ConfigError(f"{option}: directory {path!r} is not writable")
        mode = os.stat(path).st_mode
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            raise ConfigError(f"{option}: directory {path!r} is writable by every user and has no sticky bit, so "
                              f"another user could rename strataflow's directories there and plant files in "
                              f"their place; use a private directory, or set the sticky bit (chmod +t) as /tmp has")
        out.append(path)
    if not out:
        raise ConfigError(f"{option}: give at least one directory")
    return out


def check_watermarks(marks: Any, option: str = "eviction_watermarks") -> tuple[float, float]:
    """``(low, high)`` as floats with ``0 < low <= high <= 1``: past ``high`` of memory in
    use the eviction writer evicts down to ``low``. The one check of the watermarks, for
    the Context, the eviction writer and the simulator alike."""
    try:
        low, high = (float(m) for m in marks)
    except (TypeError, ValueError):
        raise ConfigError(f"{option}: expected (low, high) fractions of memory, got {marks!r}") from None
    if not 0.0 < low <= high <= 1.0:
        raise ConfigError(f"{option}: need 0 < low <= high <= 1, got {marks!r}")
    return low, high
