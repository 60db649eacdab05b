"""Typed configuration of one application, validated before any work starts.

Every mistake a user can make in a ``Context(...)`` call (a size string we cannot read,
a directory that does not exist or that we cannot write, a partition count below one)
raises :class:`ConfigError` naming the option and the offending value, so a bad
configuration fails in the constructor instead of half-way through a long job.

Sizes follow Spark's convention: ``"512MB"``, ``"1g"``, ``"1.5GiB"`` and plain integers
(bytes) are accepted, and every unit is a power of 1024 (``1KB == 1KiB == 1024``).
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Sequence

__all__ = ["ConfigError", "Config", "parse_size", "check_num_partitions"]


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
        if value < 0 or value != value:
            raise ConfigError(f"{option}: a size cannot be negative or NaN, got {value!r}")
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


def _check_dirs(dirs: Sequence[str | os.PathLike] | str | None, option: str) -> list[str]:
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
        out.append(path)
    if not out:
        raise ConfigError(f"{option}: give at least one directory")
    return out


@dataclass
class Config:
    """The validated settings of one Context (see ``Context`` for their meaning)."""

    memory: int = 1 << 30
    parallelism: int = max(1, os.cpu_count() or 1)
    local_dirs: list[str] = field(default_factory=lambda: [tempfile.gettempdir()])
    shuffle_dirs: list[str] = field(default_factory=lambda: [tempfile.gettempdir()])
    event_log: str | None = None
    shuffle_sync: bool = False
    max_task_attempts: int = 4
    max_stage_attempts: int = 4
    progress: bool | None = None
    app_name: str = "strataflow"

    @classmethod
    def build(
        cls,
        memory: int | str = "1GB",
        parallelism: int | None = None,
        local_dirs: Sequence[str] | str | None = None,
        shuffle_dirs: Sequence[str] | str | None = None,
        event_log: str | os.PathLike | None = None,
        shuffle_sync: bool = False,
        max_task_attempts: int = 4,
        max_stage_attempts: int = 4,
        progress: bool | None = None,
        app_name: str = "strataflow",
    ) -> "Config":
        mem = parse_size(memory, "memory")
        if mem < 1 << 20:
            raise ConfigError(f"memory: {memory!r} is below the 1MB minimum")
        par = check_num_partitions(
            parallelism if parallelism is not None else max(1, os.cpu_count() or 1), "parallelism"
        )
        log = None
        if event_log is not None:
            log = os.path.abspath(os.fspath(event_log))
            parent = os.path.dirname(log)
            if not os.path.isdir(parent):
                raise ConfigError(f"event_log: directory {parent!r} of {log!r} does not exist")
            if not os.access(parent, os.W_OK):
                raise ConfigError(f"event_log: directory {parent!r} is not writable")
        return cls(
            memory=mem,
            parallelism=par,
            local_dirs=_check_dirs(local_dirs, "local_dirs"),
            shuffle_dirs=_check_dirs(shuffle_dirs, "shuffle_dirs"),
            event_log=log,
            shuffle_sync=bool(shuffle_sync),
            max_task_attempts=check_num_partitions(max_task_attempts, "max_task_attempts"),
            max_stage_attempts=check_num_partitions(max_stage_attempts, "max_stage_attempts"),
            progress=progress,
            app_name=str(app_name),
        )
