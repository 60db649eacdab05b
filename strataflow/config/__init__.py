"""Typed configuration of one application, validated once, before any work starts.

Every option of ``Context(...)`` is checked here and nowhere else: a size string we
cannot read, a directory that does not exist or that we cannot write, a partition count
below one, an unknown policy or serializer, a bad tier or watermark. Each mistake raises
:class:`ConfigError` naming the option and the offending value, so a bad configuration
fails in the constructor instead of half-way through a long job, and the Context only
wires up the validated :class:`Config`.

:meth:`Config.build` takes keywords only: with twenty options, a positional call would
silently shift values into the wrong ones. The checks of single values that storage also
needs live in :mod:`strataflow.common.checks` (re-exported here), because this module imports
the storage registries and storage must not import it back.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from strataflow.common.checks import (DEFAULT_WATERMARKS, MAX_PARTITIONS, ConfigError, ConfigWarning, check_dirs,
                      check_num_partitions, check_watermarks, make_private_dir_tree, parse_size,
                      physical_memory)
from strataflow.common.retries import default_task_max_failures
from strataflow.config.backends import BACKENDS, backend_class, default_backend
from strataflow.storage.policies import Policy, make_policy
from strataflow.storage.level import StorageLevel
from strataflow.storage.blocks.serde import Serializer, get_serializer
from strataflow.storage.disk.tier_spec import TierSpec, parse_tiers

__all__ = ["Config", "ConfigError", "parse_size", "check_num_partitions", "check_watermarks"]


@dataclass(frozen=True, kw_only=True)
class Config:
    """The validated settings of one Context (see ``Context`` for their meaning); made by
    :meth:`build`, frozen so that what was checked stays what is used."""

    memory: int
    parallelism: int
    local_dirs: list[str]
    shuffle_dirs: list[str]
    event_log: str | None
    shuffle_sync: bool
    max_task_attempts: int
    #: attempts of a task whose user code raised (``retries.py``); resolved from the
    #: backend when not given: 1 in local mode, ``max_task_attempts`` on a Ray cluster
    task_max_failures: int
    max_stage_attempts: int
    progress: bool | None
    app_name: str
    blas_threads: int
    storage_fraction: float
    #: a registered name (lower case), or the caller's own instance; a name, not an
    #: instance, because a policy holds one application's state and each Context makes its own
    policy: str | Policy
    serializer: Serializer
    disk_capacity: int | None
    #: bytes, None (no bound) or ``"auto"`` (the dynamic memory split, within ``mmap_share``)
    mmap_memory: int | str | None
    gc_free_cache: bool
    tiers: list[TierSpec] | None
    async_eviction: bool
    eviction_watermarks: tuple[float, float]
    #: how executors run: ``threads`` (one in-process executor), ``processes`` or ``ray``
    backend: str
    executors: int
    cores_per_executor: int
    #: each executor's share of ``memory`` (its memory manager's total)
    executor_memory: int
    locality_wait: float
    #: the Ray cluster (``ray`` backend): None (a local instance), ``"auto"`` or ``"ray://host:port"``
    address: str | None = None
    #: the level of ``persist()`` and ``cache()`` without one (Spark's MEMORY_ONLY unless set)
    default_level: Any = StorageLevel.MEMORY_ONLY
    #: least and most fractions of each executor's memory the mapped pages may hold (split)
    mmap_share: tuple[float, float] = (0.0, 0.5)
    #: the live view on a terminal (``metrics/live.py``)
    live: bool = False
    #: the most partitions a count given by the user may ask for (``options.MAX_PARTITIONS``)
    max_partitions: int = MAX_PARTITIONS
    #: the partition count of a shuffle given none (Spark's ``spark.default.parallelism``);
    #: None: the largest input's count, as Spark when that key is not set
    default_parallelism: int | None = None

    @property
    def memory_split(self) -> tuple[float, float] | None:
        """The mapped share's bounds when the memory split is dynamic, else None."""
        return self.mmap_share if self.mmap_memory == "auto" else None

    @property
    def task_slots(self) -> int:
        """Tasks that can run at once: executors times their cores."""
        return self.executors * self.cores_per_executor

    @classmethod
    def build(
        cls,
        *,
        memory: int | str = "1GB",
        parallelism: int | None = None,
        local_dirs: Sequence[str] | str | None = None,
        shuffle_dirs: Sequence[str] | str | None = None,
        event_log: str | os.PathLike | None = None,
        shuffle_sync: bool = False,
        max_task_attempts: int = 4,
        max_stage_attempts: int = 4,
        task_max_failures: int | None = None,
        progress: bool | None = None,
        app_name: str = "strataflow",
        blas_threads: int | None = None,
        storage_fraction: float = 0.5,
        policy: str | Policy | None = None,
        serializer: str | Serializer | None = None,
        disk_capacity: int | str | None = None,
        mmap_memory: int | str | None = None,
        mmap_share: tuple[float, float] = (0.0, 0.5),
        gc_free_cache: bool = True,
        tiers: Sequence[Mapping] | None = None,
        async_eviction: bool = False,
        eviction_watermarks: tuple[float, float] = DEFAULT_WATERMARKS,
        backend: str | None = None,
        executors: int | None = None,
        cores_per_executor: int = 1,
        executor_memory: int | str | None = None,
        locality_wait: float = 3.0,
        address: str | None = None,
        default_level: Any = "MEMORY_ONLY",
        live: bool = False,
        max_partitions: int = MAX_PARTITIONS,
        default_parallelism: int | None = None,
    ) -> "Config":
        """Checks every option; raises :class:`ConfigError` on the first bad one."""
        mem = parse_size(memory, "memory")
        if mem < 1 << 20:
            raise ConfigError(f"memory: {memory!r} is below the 1MB minimum")
        cores = max(1, os.cpu_count() or 1)
        par = check_num_partitions(cores if parallelism is None else parallelism, "parallelism")
        kind, n_exec, per_exec = _check_executors(backend, executors, cores_per_executor, par)
        exec_mem = mem // n_exec if executor_memory is None else parse_size(executor_memory, "executor_memory")
        if exec_mem < 1 << 16:
            raise ConfigError(f"executor_memory: {exec_mem} bytes per executor is below the 64KB minimum "
                              f"(memory {memory!r} divided among {n_exec} executors)")
        slots = n_exec * per_exec
        _warn_above_physical(mem, exec_mem, n_exec, kind)
        level = _check_default_level(default_level)
        return cls(
            memory=mem,
            parallelism=par,
            shuffle_sync=bool(shuffle_sync),
            max_task_attempts=check_num_partitions(max_task_attempts, "max_task_attempts"),
            task_max_failures=(default_task_max_failures(address, max_task_attempts)
                               if task_max_failures is None
                               else check_num_partitions(task_max_failures, "task_max_failures")),
            max_stage_attempts=check_num_partitions(max_stage_attempts, "max_stage_attempts"),
            progress=None if progress is None else bool(progress),
            app_name=str(app_name),
            # default: task threads times BLAS threads never oversubscribe the cores
            blas_threads=(max(1, cores // slots) if blas_threads is None
                          else check_num_partitions(blas_threads, "blas_threads")),
            storage_fraction=_check_fraction(storage_fraction),
            policy=_check_policy(policy),
            serializer=get_serializer(serializer),
            disk_capacity=None if disk_capacity is None else parse_size(disk_capacity, "disk_capacity"),
            mmap_memory=_check_mmap_memory(mmap_memory, level),
            mmap_share=_check_mmap_share(mmap_share),
            gc_free_cache=bool(gc_free_cache),
            tiers=None if tiers is None else parse_tiers(tiers),
            async_eviction=bool(async_eviction),
            eviction_watermarks=check_watermarks(eviction_watermarks, "eviction_watermarks"),
            backend=kind,
            executors=n_exec,
            cores_per_executor=per_exec,
            executor_memory=exec_mem,
            locality_wait=_check_seconds(locality_wait, "locality_wait"),
            address=_check_address(address, kind),
            default_level=level,
            live=bool(live),
            max_partitions=check_num_partitions(max_partitions, "max_partitions"),
            default_parallelism=(None if default_parallelism is None
                                 else check_num_partitions(default_parallelism, "default_parallelism")),
            # last, since they make what is missing: a bad option above leaves nothing made
            local_dirs=check_dirs(local_dirs, "local_dirs", create=True),
            shuffle_dirs=check_dirs(shuffle_dirs, "shuffle_dirs", create=True),
            event_log=_check_event_log(event_log),
        )


def local_slots_bound(cores: int | None = None) -> int:
    """The most task slots (task threads of the threads backend; executor processes times
    their threads) one machine may be asked for: 8 per core, at least 64. More only
    oversubscribe the cores, and each executor process holds ~24 MB idle, so
    ``parallelism=10**6`` must fail here, not fork until the machine runs out of pids or
    memory. Ray's executors are placed on a cluster, whose own check names its CPUs."""
    return max(64, 8 * (cores or os.cpu_count() or 1))


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


def _check_executors(backend: str | None, executors: int | None, cores_per_executor: int,
                     parallelism: int) -> tuple[str, int, int]:
    """(backend, executors, cores per executor), the backend one of the registry's
    (``config/backends.py``), by its capabilities: ``processes`` is the default whenever
    ``parallelism`` > 1; a backend in the driver's process (``threads``) is one executor
    with ``parallelism`` task threads (today's engine, for debugging), so it takes neither
    ``executors`` > 1 nor ``cores_per_executor``. The others: ``parallelism //
    cores_per_executor`` executors unless ``executors`` is given, bounded by this
    machine's cores where they run on it."""
    kind = default_backend(parallelism) if backend is None else str(backend).lower()
    cls = backend_class(kind)
    if cls.requires_module is not None and importlib.util.find_spec(cls.requires_module) is None:
        raise ConfigError(f"backend: {kind!r} needs {cls.requires_module}, which is not installed "
                          f"(pip install strataflow[{kind}])")
    per = check_num_partitions(cores_per_executor, "cores_per_executor")
    bound = local_slots_bound()
    if cls.in_driver_process:
        if executors not in (None, 1):
            raise ConfigError(f"executors: the {kind} backend runs one executor in the driver's process, got "
                              f"executors={executors!r} (use backend={default_backend(2)!r} for more)")
        if parallelism > bound:
            raise ConfigError(f"parallelism: {parallelism:,} task threads is above the bound of {bound:,} for this "
                              f"machine (8 per core, at least 64)")
        return kind, 1, parallelism
    n = max(1, parallelism // per) if executors is None else check_num_partitions(executors, "executors")
    if cls.shares_local_files and n * per > bound:
        name = "parallelism" if executors is None else "executors"
        raise ConfigError(f"{name}: {n:,} executors x {per} cores = {n * per:,} task slots is above the bound of "
                          f"{bound:,} for this machine (8 per core, at least 64)")
    return kind, n, per


def _check_address(address: object, kind: str) -> str | None:
    """The Ray cluster to connect to: None (start a local one), ``"auto"`` (the cluster
    ``ray start`` made on this machine, or ``RAY_ADDRESS``), ``"ray://host:port"`` (Ray
    Client) or ``"host:port"`` (a head node's GCS); only with the ``ray`` backend."""
    if address is None:
        return None
    if not backend_class(kind).takes_address:
        takers = " or ".join(f"backend={name!r}" for name, cls in BACKENDS.items() if cls.takes_address)
        raise ConfigError(f"address: only for {takers} (the {kind} backend runs on this machine), got {address!r}")
    text = str(address).strip()
    rest = text[len("ray://"):] if text.startswith("ray://") else text
    host, _, port = rest.rpartition(":")
    if text != "auto" and not (host and port.isdigit()):
        raise ConfigError(f"address: expected 'auto', 'ray://HOST:PORT' or 'HOST:PORT', got {address!r}")
    return text


def _check_mmap_memory(mmap_memory: Any, default_level: Any) -> int | str | None:
    """Bytes, None, or ``"auto"`` (the default under ``default_level="AUTO"``)."""
    if mmap_memory is None:
        return "auto" if getattr(default_level, "auto", False) else None
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
