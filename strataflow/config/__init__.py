"""Typed configuration of one application, validated once, before any work starts.

Every option of ``Context(...)`` is checked here and nowhere else: a size string we
cannot read, a directory that does not exist or that we cannot write, a partition count
below one, an unknown policy or serializer, a bad tier or watermark. Each mistake raises
:class:`ConfigError` naming the option and the offending value, so a bad configuration
fails in the constructor instead of half-way through a long job, and the Context only
wires up the validated :class:`Config`.

The options themselves are declared once, in :mod:`strataflow.config.options` (their
checks in :mod:`strataflow.config.validation`); ``Config``'s fields and :meth:`Config.build`'s
keywords are that table's. :meth:`Config.build` takes keywords only: with thirty options, a
positional call would silently shift values into the wrong ones. The checks of single values
that storage also needs live in :mod:`strataflow.common.checks` (re-exported here), because
this package imports the storage registries and storage must not import it back.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass
from typing import Any

from strataflow.common.checks import (ConfigError, ConfigWarning, check_num_partitions, check_watermarks, parse_size,
                                      physical_memory)
from strataflow.config.options import NAMES, OPTIONS, check_all, parameters
from strataflow.config.backends import BACKENDS, backend_class
from strataflow.config.validation import Seen, local_slots_bound

__all__ = ["BACKENDS", "Config", "ConfigError", "parse_size", "check_num_partitions", "check_watermarks",
           "local_slots_bound"]


def _option_fields(cls: type) -> type:
    """``cls`` as a frozen, keyword-only dataclass whose fields are the options' (in the
    table's order, typed as the checked values are)."""
    cls.__annotations__ = {o.name: o.field for o in OPTIONS}
    return dataclass(frozen=True, kw_only=True)(cls)


@_option_fields
class Config:
    """The validated settings of one Context, one field per option of
    :data:`strataflow.config.options.OPTIONS` (see ``Context`` for their meaning); made by
    :meth:`build`, frozen so that what was checked stays what is used. ``policy`` is a
    registered name (lower case) or the caller's own instance; ``mmap_memory`` bytes, None
    (no bound) or ``"auto"`` (the dynamic memory split, within ``mmap_share``); ``backend``
    and the executors' figures are resolved (``task_max_failures`` from the backend too)."""

    @property
    def memory_split(self) -> tuple[float, float] | None:
        """The mapped share's bounds when the memory split is dynamic, else None."""
        return self.mmap_share if self.mmap_memory == "auto" else None

    @property
    def task_slots(self) -> int:
        """Tasks that can run at once: executors times their cores."""
        return self.executors * self.cores_per_executor

    @classmethod
    def build(cls, **options: Any) -> "Config":
        """Checks every option; raises :class:`ConfigError` on the first bad one. Those that
        make directories are checked last, so a bad option elsewhere leaves nothing made."""
        unknown = [name for name in options if name not in NAMES]
        if unknown:
            raise TypeError(f"Config.build() got an unexpected keyword argument {unknown[0]!r}")
        given = {o.name: options.get(o.name, o.default) for o in OPTIONS}
        seen = Seen(given)
        check_all(given, [o for o in OPTIONS if not o.makes_files], seen)
        _warn_above_physical(seen["memory"], seen["executor_memory"], seen["executors"], seen["backend"])
        check_all(given, [o for o in OPTIONS if o.makes_files], seen)
        return cls(**seen)


Config.build.__func__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter("cls", inspect.Parameter.POSITIONAL_ONLY),
     *parameters(inspect.Parameter.KEYWORD_ONLY)], return_annotation="Config")


def _warn_above_physical(memory: int, executor_memory: int, executors: int, kind: str) -> None:
    """A warning, not an error, when the budget exceeds the machine's physical memory:
    the budget is a ceiling the cache and execution may grow to, not memory taken at
    start, and in a container psutil reads the host's memory, not the container's limit,
    while swap and the mapped levels' reclaimable pages make some overcommit work. Ray's
    executors run on other machines, so only the driver's machine is weighed for the
    local backends."""
    if not backend_class(kind).shares_local_files:
        return
    have = physical_memory()
    total = max(memory, executor_memory * executors)
    if total > have:
        what = (f"memory {memory:,} bytes" if total == memory else
                f"executor_memory {executor_memory:,} bytes x {executors} executors = {total:,} bytes")
        warnings.warn(f"{what} is more than this machine's physical memory ({have:,} bytes): the cache may "
                      f"grow until the machine swaps or the kernel kills a process; give less memory",
                      ConfigWarning, stacklevel=5)
