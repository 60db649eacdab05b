"""The checks of each ``Context`` option: an argument in, the value ``Config`` keeps out, or a
:class:`ConfigError` naming the option and the offending value.

Why apart from the table (:mod:`strataflow.config.options`), which names one of these per
option: the table reads as a list of options, these as what each value must be. A check
takes the argument and ``seen``, the options checked before it (name -> checked value;
``seen.given`` holds the raw arguments): the few that depend on others (the executors on
the backend, the executors' memory on their count) name them in the table's ``needs``, so
they are checked after them. The checks of single values that storage also needs live in
:mod:`strataflow.common.checks`, because storage must not import this floor.
"""

from __future__ import annotations

import errno
import importlib.util
import os
from typing import Any, Callable, Mapping

from strataflow.common.checks import ConfigError, check_dirs, check_num_partitions, make_private_dir_tree, parse_size
from strataflow.common.retries import default_task_max_failures
from strataflow.config.backends import BACKENDS, backend_class, default_backend
from strataflow.storage.level import StorageLevel
from strataflow.storage.policies import Policy, make_policy

__all__ = ["Seen", "local_slots_bound"]


#: a check: (argument, the options checked so far) -> the value Config keeps
Check = Callable[[Any, "Seen"], Any]


class Seen(dict):
    """The options checked so far (name -> checked value), and ``given``: every raw argument
    (the default where none was given)."""

    def __init__(self, given: Mapping[str, Any]) -> None:
        super().__init__()
        self.given = dict(given)


def alone(check: Callable[[Any], Any]) -> Check:
    """A check of one value that needs no other option."""
    return lambda value, seen: check(value)


def count(name: str) -> Check:
    """An integer >= 1 (``check_num_partitions``), named ``name`` in its error."""
    return lambda value, seen: check_num_partitions(value, name)


def optional_count(name: str) -> Check:
    """None, or an integer >= 1."""
    return lambda value, seen: None if value is None else check_num_partitions(value, name)


def size_or_none(name: str) -> Check:
    return lambda value, seen: None if value is None else parse_size(value, name)


def as_bool(value: Any, seen: Seen) -> bool:
    return bool(value)


def optional_bool(value: Any, seen: Seen) -> bool | None:
    return None if value is None else bool(value)


def as_text(value: Any, seen: Seen) -> str:
    return str(value)


def dirs(name: str) -> Check:
    """Directories, made when missing (``check_dirs``): checked last, so a bad option
    elsewhere leaves nothing made."""
    return lambda value, seen: check_dirs(value, name, create=True)


def cores() -> int:
    return max(1, os.cpu_count() or 1)


def local_slots_bound(cores: int | None = None) -> int:
    """The most task slots (task threads of the threads backend; executor processes times
    their threads) one machine may be asked for: 8 per core, at least 64. More only
    oversubscribe the cores, and each executor process holds ~24 MB idle, so
    ``parallelism=10**6`` must fail here, not fork until the machine runs out of pids or
    memory. Ray's executors are placed on a cluster, whose own check names its CPUs."""
    return max(64, 8 * (cores or os.cpu_count() or 1))


def _check_memory(memory: Any, seen: Seen) -> int:
    mem = parse_size(memory, "memory")
    if mem < 1 << 20:
        raise ConfigError(f"memory: {memory!r} is below the 1MB minimum")
    return mem


def _check_parallelism(parallelism: Any, seen: Seen) -> int:
    return check_num_partitions(cores() if parallelism is None else parallelism, "parallelism")


# The backend, its executors and their cores, by the backend's capabilities (the registry,
# ``config/backends.py``): ``processes`` is the default whenever ``parallelism`` > 1; a
# backend in the driver's process (``threads``) is one executor with ``parallelism`` task
# threads (today's engine, for debugging), so it takes neither ``executors`` > 1 nor
# ``cores_per_executor``. The others: ``parallelism // cores_per_executor`` executors unless
# ``executors`` is given, bounded by this machine's cores where they run on it. Checked in
# this order: backend, cores, executors.
def _check_backend(backend: Any, seen: Seen) -> str:
    kind = default_backend(seen["parallelism"]) if backend is None else str(backend).lower()
    cls = backend_class(kind)
    if cls.requires_module is not None and importlib.util.find_spec(cls.requires_module) is None:
        raise ConfigError(f"backend: {kind!r} needs {cls.requires_module}, which is not installed "
                          f"(pip install strataflow[{kind}])")
    return kind


def _check_cores_per_executor(cores_per_executor: Any, seen: Seen) -> int:
    per = check_num_partitions(cores_per_executor, "cores_per_executor")
    return seen["parallelism"] if backend_class(seen["backend"]).in_driver_process else per


def _check_executors(executors: Any, seen: Seen) -> int:
    kind, parallelism, per = seen["backend"], seen["parallelism"], seen["cores_per_executor"]
    cls = backend_class(kind)
    bound = local_slots_bound()
    if cls.in_driver_process:
        if executors not in (None, 1):
            raise ConfigError(f"executors: the {kind} backend runs one executor in the driver's process, got "
                              f"executors={executors!r} (use backend={default_backend(2)!r} for more)")
        if parallelism > bound:
            raise ConfigError(f"parallelism: {parallelism:,} task threads is above the bound of {bound:,} for this "
                              f"machine (8 per core, at least 64)")
        return 1
    n = max(1, parallelism // per) if executors is None else check_num_partitions(executors, "executors")
    if cls.shares_local_files and n * per > bound:
        name = "parallelism" if executors is None else "executors"
        raise ConfigError(f"{name}: {n:,} executors x {per} cores = {n * per:,} task slots is above the bound of "
                          f"{bound:,} for this machine (8 per core, at least 64)")
    return n


def _check_executor_memory(executor_memory: Any, seen: Seen) -> int:
    n_exec = seen["executors"]
    exec_mem = seen["memory"] // n_exec if executor_memory is None else parse_size(executor_memory, "executor_memory")
    if exec_mem < 1 << 16:
        raise ConfigError(f"executor_memory: {exec_mem} bytes per executor is below the 64KB minimum "
                          f"(memory {seen.given['memory']!r} divided among {n_exec} executors)")
    return exec_mem


def _check_task_max_failures(task_max_failures: Any, seen: Seen) -> int:
    if task_max_failures is None:
        return default_task_max_failures(seen["address"], seen["max_task_attempts"])
    return check_num_partitions(task_max_failures, "task_max_failures")


def _check_blas_threads(blas_threads: Any, seen: Seen) -> int:
    # default: task threads times BLAS threads never oversubscribe the cores
    if blas_threads is None:
        return max(1, cores() // (seen["executors"] * seen["cores_per_executor"]))
    return check_num_partitions(blas_threads, "blas_threads")


def _check_address(address: object, seen: Seen) -> str | None:
    """The Ray cluster to connect to: None (start a local one), ``"auto"`` (the cluster
    ``ray start`` made on this machine, or ``RAY_ADDRESS``), ``"ray://host:port"`` (Ray
    Client) or ``"host:port"`` (a head node's GCS); only with the ``ray`` backend."""
    if address is None:
        return None
    kind = seen["backend"]
    if not backend_class(kind).takes_address:
        takers = " or ".join(f"backend={name!r}" for name, cls in BACKENDS.items() if cls.takes_address)
        raise ConfigError(f"address: only for {takers} (the {kind} backend runs on this machine), got {address!r}")
    text = str(address).strip()
    rest = text[len("ray://"):] if text.startswith("ray://") else text
    host, _, port = rest.rpartition(":")
    if text != "auto" and not (host and port.isdigit()):
        raise ConfigError(f"address: expected 'auto', 'ray://HOST:PORT' or 'HOST:PORT', got {address!r}")
    return text


def _check_mmap_memory(mmap_memory: Any, seen: Seen) -> int | str:
    """Bytes (a bound of the mapped pages' own, outside ``memory``), or ``"auto"`` (the
    default, for every level: ``memory`` holds the heap's blocks and the mapped blocks'
    pages alike, see docs/caching.md "What memory= counts")."""
    if mmap_memory is None:
        return "auto"
    if isinstance(mmap_memory, str) and mmap_memory.strip().lower() == "auto":
        return "auto"
    return parse_size(mmap_memory, "mmap_memory")


def _check_mmap_share(share: Any) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in share)
    except (TypeError, ValueError):
        raise ConfigError(f"mmap_share: expected (least, most) fractions of memory, got {share!r}") from None
    if not 0.0 <= lo <= hi < 0.9:
        raise ConfigError(f"mmap_share: need 0 <= least <= most < 0.9 (the heap keeps a tenth), got {share!r}")
    return lo, hi


def _check_default_level(level: Any) -> Any:
    try:
        parsed = StorageLevel.parse(level)
    except ConfigError as exc:
        raise ConfigError(f"default_level: {exc}") from None
    if not parsed.is_valid:
        raise ConfigError(f"default_level: {parsed.name} stores nothing; persist() needs a level that caches")
    return parsed


def _check_seconds(value: object, name: str) -> float:
    try:
        s = float(value)  # type: ignore[arg-type]
        ok = s >= 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(f"{name}: must be a number of seconds >= 0, got {value!r}")
    return s


def _check_event_log(event_log: str | os.PathLike | None) -> str | None:
    """The log's absolute path; its missing folders are made (0700, with parents). A path
    that is a directory, or a folder that cannot be made or written, is a ConfigError
    naming the option, the path and the errno."""
    if event_log is None:
        return None
    log = os.path.abspath(os.fspath(event_log))
    if os.path.isdir(log):
        raise ConfigError(f"event_log: {log!r} is a directory ({errno.errorcode[errno.EISDIR]}); "
                          f"name a file, e.g. {os.path.join(log, 'events.jsonl')!r}")
    parent = os.path.dirname(log)
    if not os.path.exists(parent):
        make_private_dir_tree(parent, "event_log")
    if not os.path.isdir(parent):
        raise ConfigError(f"event_log: {parent!r}, the folder of {log!r}, is not a directory "
                          f"({errno.errorcode[errno.ENOTDIR]})")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"event_log: directory {parent!r} is not writable ({errno.errorcode[errno.EACCES]})")
    return log


def _check_fraction(value: object) -> float:
    try:
        fraction = float(value)  # type: ignore[arg-type]
        ok = 0.0 <= fraction <= 1.0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(f"storage_fraction: must be between 0 and 1, got {value!r}")
    return fraction


def _check_policy(policy: str | Policy | None) -> str | Policy:
    """The caller's instance, or the registered name (``make_policy`` checks it; the
    instance it makes is dropped: each Context makes its own)."""
    return policy if isinstance(policy, Policy) else make_policy(policy).name

