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

import errno
import os
import stat
import re
import tempfile
from typing import Any, Sequence

import psutil

__all__ = ["ConfigError", "ConfigWarning", "parse_size", "check_num_partitions", "check_partition_count",
           "check_dirs", "check_watermarks", "DEFAULT_WATERMARKS", "MAX_PARTITIONS", "physical_memory"]

#: The asynchronous eviction writer's ``(low, high)`` fractions of memory.
DEFAULT_WATERMARKS: tuple[float, float] = (0.85, 0.95)


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the option and the value."""


class ConfigWarning(UserWarning):
    """A configuration value is allowed but probably a mistake (``memory=`` above the
    machine's physical memory); the message names the option and both figures."""


#: The default of ``max_partitions``: the most partitions a dataset may be given by a
#: count the user types (``num_partitions``, ``numSlices``, ``min_partitions``...). Each
#: partition is a task of every job over the dataset: measured here, a task costs the
#: driver about 1.5 ms of scheduling and 1-3 KB while its job runs, so 100,000 partitions
#: are minutes a job and a few hundred MB at most, where ``range(10, num_partitions=10**9)``
#: grew the driver by 10 GB in 30 s before the first task. A cluster that needs more
#: raises ``max_partitions``.
MAX_PARTITIONS = 100_000


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


def physical_memory() -> int:
    """The machine's physical memory in bytes, as psutil reads it (in a container: the
    host's, not the container's limit)."""
    return int(psutil.virtual_memory().total)


def check_partition_count(n: object, option: str = "num_partitions", most: int = MAX_PARTITIONS) -> int:
    """``n`` as an int in ``[1, most]``, or a ConfigError naming ``option``, the value and
    the bound: a count typed by the user becomes that many tasks in every job, so one
    mistyped exponent must fail at once, not grow the driver until the machine swaps."""
    n = check_num_partitions(n, option)
    if n > most:
        raise ConfigError(f"{option}: {n:,} partitions is above the bound of {most:,} (max_partitions): every "
                          f"partition is a task of each job (about 1.5 ms and a few KB of the driver's memory each); "
                          f"use fewer, larger partitions, or raise max_partitions if you mean it")
    return n


def make_private_dir_tree(path: str, option: str) -> None:
    """Makes ``path`` and its missing parents, each 0700 whatever the umask (as Spark
    makes its local directories); a ConfigError naming ``option``, the path and the errno
    when it cannot (a parent that is a file, a read-only or full file system)."""
    from strataflow.common.private_file import PRIVATE_DIR, make_dirs

    try:
        make_dirs(path, PRIVATE_DIR)
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        raise ConfigError(f"{option}: cannot create directory {path!r} ({name}: {exc.strerror} at "
                          f"{exc.filename!r})") from exc


def check_dirs(dirs: Sequence[str | os.PathLike] | str | os.PathLike | None, option: str,
               create: bool = False) -> list[str]:
    """Absolute paths of writable directories that no other user can tamper with (None:
    the temp directory), so a bad one fails at configuration, not at the first spill of
    a long job. With ``create``, a missing one is made (0700, with its parents), as Spark
    makes its local directories; without, it must exist (a tier names a device: a typo
    must not silently put it on another one)."""
    if dirs is None:
        return [tempfile.gettempdir()]
    if isinstance(dirs, (str, os.PathLike)):
        dirs = [dirs]
    out: list[str] = []
    for d in dirs:
        path = os.path.abspath(os.fspath(d))
        if not os.path.exists(path):
            if not create:
                raise ConfigError(f"{option}: directory {path!r} does not exist")
            make_private_dir_tree(path, option)
        if not os.path.isdir(path):
            raise ConfigError(f"{option}: {path!r} is not a directory ({errno.errorcode[errno.ENOTDIR]})")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ConfigError(f"{option}: directory {path!r} is not writable")
        st = os.stat(path)
        if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
            raise ConfigError(f"{option}: directory {path!r} is writable by every user and has no sticky bit, so "
                              f"another user could rename strataflow's directories there and plant files in "
                              f"their place; use a private directory, or set the sticky bit (chmod +t) as /tmp has")
        if st.st_uid not in (os.geteuid(), 0):
            raise ConfigError(f"{option}: directory {path!r} belongs to another user (uid {st.st_uid}), who could "
                              f"rename strataflow's directories there and plant files in their place; use a "
                              f"directory of your own")
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
