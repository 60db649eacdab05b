"""Context: the user's entry point, and the wiring of one application.

It has the configuration validated (by :meth:`Config.build`: a bad one fails here, before
any work), makes the per-application cache and shuffle directories, and owns the services
every task uses: the memory manager, the block manager, the shuffle manager, the scheduler
with its thread pool, and the event bus with its log and progress bar.
"""

from __future__ import annotations

import atexit
import resource
import itertools
import os
import sys
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from .config import Config, check_num_partitions, parse_size
from .dataset import Dataset
from .io.npy import NpySource
from .io.parquet import ParquetSource
from .io.sources import RangeSource, collection_source, numpy_source
from .io.text import CsvSource, TextSource
from .memory import MemoryManager
from .metrics import EventBus, JsonLinesLog, gc_timer
from .options import DEFAULT_WATERMARKS
from .scheduler import DAGScheduler
from .shuffle import ShuffleManager
from .storage.disk_store import DiskStore
from .storage.gc_free import gc_unfreeze
from .storage.manager import BlockManager
from .storage.region_store import RegionStore
from .storage.policies import make_policy
from .storage.status import StorageStatus, storage_status, tier_bytes, tier_hits
from .storage.tiers import Tier, TieredStore
from .workdirs import create_app_dirs, new_app_id, remove_dirs, remove_stale

__all__ = ["Context"]

_live: "weakref.WeakSet[Context]" = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for ctx in list(_live):
        ctx.stop()


class Context:
    """One application: configuration, storage, scheduler and events.

    Args:
        memory: the unified budget for execution (shuffle and aggregation buffers) and,
            from the cache on, storage; a size such as ``"1GB"`` (powers of 1024).
        parallelism: task threads; also the default partition count of sources.
        local_dirs: base directories for cache files (default: the temp directory).
        shuffle_dirs: base directories for shuffle and spill files, kept apart from the
            cache (give another device here when there is one).
        event_log: a path; every event is appended to it as a JSON line.
        shuffle_sync: fsync shuffle files before a map task reports success.
        max_task_attempts: attempts of a task before its job fails.
        max_stage_attempts: reruns of a stage whose shuffle input was lost.
        progress: show stage progress bars (default: when stderr is a terminal).
        blas_threads: BLAS threads while this context lives (default: cores divided by
            ``parallelism``, so task threads times BLAS threads never oversubscribe).
        storage_fraction: the part of ``memory`` that execution cannot take back from
            cached blocks (Spark's ``spark.memory.storageFraction``).
        policy: the cache policy by name (default ``lineage``, the best measured; see the
            README): ``spark`` (Spark's LRU with re-caching, the baseline), ``no-recache`` (Zhang et al.'s fix),
            ``adaptive`` (no-recache, but promotes into free memory) or ``lineage``
            (future-aware eviction, admission and prefetch from the scheduler's plan and
            the loop's access distances; ``adaptive`` without knowledge).
        serializer: ``auto`` (default: pickle5 for batches, pickle for records),
            ``pickle``, ``pickle5``, ``arrow``, ``arrow:lz4``, ``arrow:zstd``.
        disk_capacity: the most bytes the cache may write to its directories (default:
            no limit but the device's); a block that does not fit is not cached. With
            ``tiers`` it bounds only the mapped levels' region store (each tier has its
            own ``capacity``).
        mmap_memory: the most page cache the mapped levels' recently read blocks may hold
            (default: no bound but the kernel's); older blocks' pages are released.
        gc_free_cache: keep cached Python records out of the garbage collector's walks
            (``gc.freeze`` after each records put; undone on unpersist and stop).
        tiers: disk tiers below memory, fastest first, e.g. ``[{"name": "ssd", "dirs":
            [...], "capacity": "20GB", "bandwidth": "1.5GB/s"}, {"name": "hdd", "dirs":
            [...]}]`` (``capacity``, ``bandwidth`` and ``write_parallelism``, default 2,
            are optional). A block dropped from memory goes to the top tier; a full tier
            moves its least recently used blocks down; a block read from a lower tier
            moves up when the tier above has room. Without ``tiers``: one ``disk`` tier on
            ``local_dirs`` with ``disk_capacity``. Mapped levels (``DISK_MMAP``...) stay
            in their region store on ``local_dirs``, outside the tiers.
        async_eviction: a background thread writes eviction victims to the top tier
            before memory runs out, so puts rarely wait for a disk write. Default off:
            it keeps ``1 - high`` of memory free, which costs hits when the cache is read
            far more than written, and on K-means under 2x and 4x pressure (warm page
            cache, no-recache and spark policies) it was neither faster nor slower
            (0.96-1.05x of synchronous eviction, within run-to-run noise).
        eviction_watermarks: ``(low, high)`` fractions of ``memory``: past ``high`` in use
            the writer evicts down to ``low`` (default ``(0.85, 0.95)``).
    """

    def __init__(
        self,
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
        blas_threads: int | None = None,
        storage_fraction: float = 0.5,
        policy: str | None = None,
        serializer: str | None = None,
        disk_capacity: int | str | None = None,
        mmap_memory: int | str | None = None,
        gc_free_cache: bool = True,
        tiers: Sequence[dict] | None = None,
        async_eviction: bool = False,
        eviction_watermarks: tuple[float, float] = DEFAULT_WATERMARKS,
    ) -> None:
        self._closed = True  # until fully built, so stop() from a failed __init__ is a no-op
        self.config = cfg = Config.build(
            memory=memory, parallelism=parallelism, local_dirs=local_dirs, shuffle_dirs=shuffle_dirs,
            event_log=event_log, shuffle_sync=shuffle_sync, max_task_attempts=max_task_attempts,
            max_stage_attempts=max_stage_attempts, progress=progress, app_name=app_name,
            blas_threads=blas_threads, storage_fraction=storage_fraction, policy=policy, serializer=serializer,
            disk_capacity=disk_capacity, mmap_memory=mmap_memory, gc_free_cache=gc_free_cache, tiers=tiers,
            async_eviction=async_eviction, eviction_watermarks=eviction_watermarks)
        self.app_id = new_app_id()
        tier_bases = [d for spec in cfg.tiers or [] for d in spec.dirs]
        self.removed_stale_dirs = remove_stale(cfg.local_dirs + cfg.shuffle_dirs + tier_bases)
        self.local_dirs = create_app_dirs(cfg.local_dirs, self.app_id, "cache")
        self.shuffle_dirs = create_app_dirs(cfg.shuffle_dirs, self.app_id, "shuffle")
        self.tier_dirs: list[str] = []
        if cfg.tiers is None:
            self.disk_store = TieredStore.single(DiskStore(self.local_dirs, cfg.disk_capacity))
        else:
            made = []
            for spec in cfg.tiers:
                dirs = create_app_dirs(spec.dirs, self.app_id, f"cache-{spec.name}")
                self.tier_dirs += dirs
                made.append(Tier(spec.name, DiskStore(dirs, spec.capacity), spec.bandwidth, spec.write_parallelism))
            self.disk_store = TieredStore(made)
        self.events = EventBus()
        self._log = JsonLinesLog(cfg.event_log) if cfg.event_log else None
        if self._log:
            self.events.subscribe(self._log)
        self._progress = None
        show = cfg.progress if cfg.progress is not None else sys.stderr.isatty()
        if show:
            from .metrics.progress import StageProgress

            self._progress = StageProgress()
            self.events.subscribe(self._progress)
        self.memory = MemoryManager(cfg.memory, cfg.storage_fraction)
        self.regions = RegionStore(self.local_dirs, capacity=cfg.disk_capacity)
        self.block_manager = BlockManager(self.memory, self.disk_store, make_policy(cfg.policy), cfg.serializer,
                                          self.events, regions=self.regions, mmap_memory=cfg.mmap_memory,
                                          gc_free=cfg.gc_free_cache, async_eviction=cfg.async_eviction,
                                          watermarks=cfg.eviction_watermarks)
        self.shuffle = ShuffleManager(self.shuffle_dirs, cfg.shuffle_sync)
        self.scheduler = DAGScheduler(self)
        self._pool = ThreadPoolExecutor(max_workers=cfg.parallelism, thread_name_prefix="strataflow-task")
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._blas_limits = threadpool_limits(limits=cfg.blas_threads, user_api="blas")
        gc_timer.acquire()
        self._gc0 = gc_timer.snapshot()
        self._majflt0 = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
        self._closed = False
        _live.add(self)
        self.events.post("ApplicationStart", app_id=self.app_id, app_name=cfg.app_name, memory=cfg.memory,
                         parallelism=cfg.parallelism, local_dirs=self.local_dirs, shuffle_dirs=self.shuffle_dirs)

    # -- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        """Waits for running tasks, removes this application's directories, closes logs."""
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.events.post("ApplicationEnd", app_id=self.app_id)
        if self._progress:
            self._progress.close()
        self.block_manager.close()  # the background writer, before its directories go
        if self._log:
            self._log.close()
        self.regions.close()
        if self.block_manager.gc_free:
            gc_unfreeze()
        remove_dirs(self.local_dirs + self.shuffle_dirs + self.tier_dirs)
        self._blas_limits.restore_original_limits()
        gc_timer.release()
        _live.discard(self)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Context has been stopped")

    @property
    def default_parallelism(self) -> int:
        return self.config.parallelism

    def _new_dataset_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def spill_dir(self, task_id: int) -> str:
        """Where a task spills aggregation runs: execution data, so the shuffle dirs."""
        return self.shuffle_dirs[task_id % len(self.shuffle_dirs)]

    def _num(self, n: int | None) -> int:
        return self.default_parallelism if n is None else check_num_partitions(n)

    # -- the cache, seen from outside --------------------------------------------------------
    @property
    def policy(self) -> str:
        return self.block_manager.policy.name

    def storage_status(self) -> StorageStatus:
        """One entry per persisted dataset: name, level, partitions and bytes in memory and
        on disk (``tier_bytes``: per disk tier); the list's ``tiers`` describes each tier
        (capacity, bytes used, blocks, hits, bandwidth), ``tier_bytes`` and ``tier_hits``
        give memory and every tier. ``str()`` of the list is a readable table."""
        return storage_status(self.block_manager)

    def measure_tiers(self, size: int | str = "64MB") -> dict[str, dict]:
        """Measures each disk tier's sequential bandwidth, cold and warm (the probe of
        ``strataflow probe DIR``), writing ``size`` bytes to each; a tier without a
        configured bandwidth takes the cold read figure. Returns name -> measurements."""
        n = parse_size(size, "size")
        return {t.name: t.measure(n) for t in self.block_manager.disk.tiers}

    def metrics(self) -> dict:
        """Totals for the application: cache hits, misses, drops, re-caches, disk bytes,
        (de)serialization and GC seconds (the same per job and stage are in the events).

        Tiers: ``tier_bytes`` and ``tier_hits`` map ``memory`` and each disk tier (and
        ``mapped`` for the region store's hits) to bytes held and blocks served;
        ``bytes_moved_between_tiers``, ``blocks_moved_down``/``_up`` count moves between
        disk tiers (memory to disk is ``bytes_dropped``, disk to memory
        ``bytes_recached`` and ``bytes_prefetched``). Eviction: ``sync_evictions`` (blocks
        dropped on a task's thread), ``async_evictions`` (by the background writer),
        ``eviction_failures``, ``eviction_wait_s`` (time puts waited for the writer);
        prefetch: ``blocks_prefetched``, ``bytes_prefetched``, ``prefetch_scans`` (scans of the
        disk blocks for candidates; after an empty one they back off until memory is freed)."""
        out = self.block_manager.metrics.snapshot()
        gc_s, gc_n = gc_timer.snapshot()
        out.update(gc_s=gc_s - self._gc0[0], gc_collections=gc_n - self._gc0[1],
                   mmap_bytes_mapped=self.regions.mapped_bytes,
                   major_page_faults=resource.getrusage(resource.RUSAGE_SELF).ru_majflt - self._majflt0,
                   storage_memory_used=self.memory.storage_used, peak_storage_memory=self.memory.peak_storage,
                   peak_execution_memory=self.memory.peak_execution,
                   tier_bytes=tier_bytes(self.block_manager), tier_hits=tier_hits(self.block_manager),
                   eviction_wait_s=self.memory.reclaim_waited_s)
        return out

    # -- sources ----------------------------------------------------------------------------
    def parallelize(self, data: Iterable, num_partitions: int | None = None) -> Dataset:
        """A dataset of the given records, cut into contiguous slices."""
        n = self._num(num_partitions)
        if isinstance(data, range):
            return Dataset(self, RangeSource(data, n), "parallelize")
        return Dataset(self, collection_source(list(data), n), "parallelize")

    def range(self, start: int, stop: int | None = None, step: int = 1, num_partitions: int | None = None) -> Dataset:
        """Integers ``range(start, stop, step)`` (``range(0, start)`` with one argument)."""
        if stop is None:
            start, stop = 0, start
        if step == 0:
            raise ValueError("range: step must not be zero")
        return Dataset(self, RangeSource(range(start, stop, step), self._num(num_partitions)), "range")

    def from_numpy(self, array: np.ndarray, num_partitions: int | None = None) -> Dataset:
        """Rows of ``array`` in contiguous ndarray partitions (views, not copies)."""
        return Dataset(self, numpy_source(np.asarray(array), self._num(num_partitions)), "from_numpy")

    def text_file(self, path: str | os.PathLike, min_partitions: int | None = None) -> Dataset:
        """Lines of a text file, or of every visible file of a directory (UTF-8)."""
        n = self._num(min_partitions)
        return Dataset(self, TextSource(os.fspath(path), n), "text_file")

    def csv_file(self, path: str | os.PathLike, min_partitions: int | None = None, delimiter: str = ",",
                 column_names: list[str] | None = None, column_types: dict | None = None) -> Dataset:
        """Delimited text as pyarrow Table partitions, parsed by pyarrow's vectorized CSV
        reader (no header row; ``column_names`` names the columns, ``column_types`` maps
        names to pyarrow types). Same line-aligned byte ranges as ``text_file``."""
        n = self._num(min_partitions)
        return Dataset(self, CsvSource(os.fspath(path), n, delimiter, column_names, column_types), "csv_file")

    def parquet_file(self, path: str | os.PathLike, num_partitions: int | None = None,
                     columns: list[str] | None = None) -> Dataset:
        """A Parquet file as pyarrow Table partitions of whole row groups."""
        return Dataset(self, ParquetSource(os.fspath(path), self._num(num_partitions), columns), "parquet_file")

    def npy_file(self, path: str | os.PathLike, num_partitions: int | None = None) -> Dataset:
        """Row ranges of a memory-mapped ``.npy`` file (read-only views)."""
        return Dataset(self, NpySource(os.fspath(path), self._num(num_partitions)), "npy_file")

