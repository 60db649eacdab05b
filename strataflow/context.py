"""Context: the user's entry point, and the driver of one application.

It has the configuration validated (by :meth:`Config.build`: a bad one fails here, before
any work), makes the per-application cache and shuffle directories, starts the executors
(``executor/``: each with its own memory share, block manager and task slots) and owns
what the driver keeps: the DAG scheduler, the block-location master, the map-output
tracker, the registry of persisted datasets, and the event bus with its log and progress
bar (executors' events are re-posted on it).
"""

from __future__ import annotations

import atexit
import collections
import itertools
import os
import sys
import threading
import weakref
from typing import Any, Iterable, Sequence

import numpy as np
import pyarrow as pa
from threadpoolctl import threadpool_limits

from strataflow.shipping.accumulators import Accumulator, Accumulators
from strataflow.shipping.broadcast import Broadcast
from strataflow.config.layers import with_layered_options
from strataflow.config import Config, parse_size
from strataflow.config.backends import SHIPS_BY_OBJECT_STORE, backend_class
from strataflow.dataset import Dataset
from strataflow.common.batch import check_rows, is_dataframe
from strataflow.io.delimited import CsvSource, CsvTypesSource, widen_types
from strataflow.io.frames import arrow_source, pandas_source, require_pandas
from strataflow.io.npy import NpySource
from strataflow.io.parquet import ParquetSource
from strataflow.io.paths import PathSpec
from strataflow.io.sources import RangeSource, collection_source, numpy_source
from strataflow.io.text import TextSource
from strataflow.executor.fleet import Fleet
from strataflow.shipping.source_store import SourceStore
from strataflow.metrics import EventBus, gc_timer
from strataflow.metrics.events import open_event_log
from strataflow.common.checks import DEFAULT_WATERMARKS, MAX_PARTITIONS, check_partition_count
from strataflow.scheduler import DAGScheduler
from strataflow.scheduler.block_master import BlockMaster
from strataflow.shuffle import MapOutputTracker
from strataflow.storage.policies import make_policy
from strataflow.storage.status import StorageStatus, merge_metrics, merge_status
from strataflow.shipping.files import FileRegistry, ShippedFile
from strataflow.shipping.files import forget as forget_files
from strataflow.shipping.files import install as install_files
from strataflow.storage.workdirs import create_app_dirs, ensure_app_dir, new_app_id, remove_dirs, remove_stale

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
            from the cache on, storage; a size such as ``"1GB"`` (powers of 1024). Divided
            evenly among the executors (each has its own memory manager).
        parallelism: the default partition count of sources, and the task slots: with
            ``processes``, ``parallelism // cores_per_executor`` executors by default.
            Like Spark's ``local[N]``, it does not set the partition count of shuffles.
        default_parallelism: the partition count of a shuffle (``reduce_by_key``,
            ``distinct``, ``join``...) called without ``num_partitions``, and of sources
            (Spark's ``spark.default.parallelism``). Unset (the default), a shuffle of one
            dataset keeps its partition count and a join or cogroup takes its largest
            input's, as in Spark; set it to stop an iterative job whose every round joins
            and unions from multiplying its partitions (``partitioner.py``).
        local_dirs: base directories for cache files (default: the temp directory); one
            that does not exist is made (0700, with its parents), as Spark makes its local
            directories.
        shuffle_dirs: base directories for shuffle and spill files, kept apart from the
            cache (give another device here when there is one); made as ``local_dirs``.
        event_log: a path; every event is appended to it as a JSON line (the file is
            0600, its missing folders are made 0700).
        shuffle_sync: fsync shuffle files before a map task reports success.
        max_task_attempts: attempts of a task that failed for the infrastructure's sake (its
            executor lost, a full or refused shuffle device, a damaged spill file) before
            its job fails (default 4).
        task_max_failures: attempts of a task whose own code raised (Spark's
            ``spark.task.maxFailures``). Default: 1 in local mode (threads, processes, a
            Ray instance of this machine), as PySpark's ``local[N]``: a deterministic
            error is reported at once; ``max_task_attempts`` on a Ray cluster
            (``address`` given). See ``strataflow/common/retries.py``.
        max_stage_attempts: reruns of a stage whose shuffle input was lost.
        progress: show stage progress bars (default: when stderr is a terminal).
        live: a live view of the job instead of the bars, on stderr while it runs (stages
            and tasks per executor, cache occupancy per tier against the budget, hit ratio,
            bytes moved; ``metrics/live.py``); nothing when stderr is not a terminal.
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
            ``"auto"`` (the default when ``default_level="AUTO"``): the dynamic memory
            split, in which ``memory`` holds those pages too and the engine moves it, while
            running, between the heap (execution and cached values) and the mapped
            pages, toward whichever saves more time per byte (``MemorySplitMoved`` events).
        mmap_share: ``(least, most)`` fractions of ``memory`` the mapped pages may hold
            under ``mmap_memory="auto"`` (default ``(0.0, 0.5)``; most below 0.9).
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
        backend: where tasks run. ``processes`` (the default when ``parallelism`` > 1):
            executor processes on this machine, so numpy and Python record code use every
            core; ``threads`` (the default for ``parallelism=1``): one executor inside this
            process with ``parallelism`` task threads, nothing pickled, for debugging;
            ``ray``: executors as Ray actors on the nodes of a Ray cluster (``address``;
            ``pip install strataflow[ray]``).
        executors: how many executors (``processes``, ``ray``; default ``parallelism //
            cores_per_executor``).
        cores_per_executor: task slots (threads) of each executor.
        executor_memory: each executor's memory instead of ``memory / executors``.
        locality_wait: seconds a task waits for a slot on the executor that holds its
            cached partition before it runs elsewhere (Spark's ``spark.locality.wait``).
        address: the Ray cluster (``ray`` backend): None starts a local Ray instance of
            ``executors * cores_per_executor`` CPUs (stopped with the Context), ``"auto"``
            joins the one ``ray start`` made, ``"ray://host:port"`` connects through Ray
            Client; a connection the caller already made (``ray.init``) is used as it is.
        max_partitions: the most partitions a count given to a source or transformation
            (``num_partitions``, ``min_partitions``, ``repartition(n)``...) may ask for
            (default 100,000: each is a task of every job over the dataset).
        default_level: the level of ``persist()`` and ``cache()`` called without one:
            ``MEMORY_ONLY`` (Spark's), or ``"AUTO"`` to let the engine choose per dataset
            (see ``StorageLevel.AUTO``).
        conf: any of the options above by name, e.g. ``{"memory": "8GB"}``. Precedence:
            an argument, then ``conf``, then the environment variable
            ``STRATAFLOW_<OPTION>`` (``STRATAFLOW_MEMORY=8GB``, ``STRATAFLOW_BACKEND=threads``;
            strings converted by the option's kind: see ``strataflow/config/layers.py``), then the
            default. ``config_sources`` says where each value came from.
    """

    @with_layered_options
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
        task_max_failures: int | None = None,
        progress: bool | None = None,
        app_name: str = "strataflow",
        blas_threads: int | None = None,
        storage_fraction: float = 0.5,
        policy: str | None = None,
        serializer: str | None = None,
        disk_capacity: int | str | None = None,
        mmap_memory: int | str | None = None,
        mmap_share: tuple[float, float] = (0.0, 0.5),
        gc_free_cache: bool = True,
        tiers: Sequence[dict] | None = None,
        async_eviction: bool = False,
        eviction_watermarks: tuple[float, float] = DEFAULT_WATERMARKS,
        backend: str | None = None,
        executors: int | None = None,
        cores_per_executor: int = 1,
        executor_memory: int | str | None = None,
        locality_wait: float = 3.0,
        address: str | None = None,
        default_level: str | Any = "MEMORY_ONLY",
        live: bool = False,
        max_partitions: int = MAX_PARTITIONS,
        default_parallelism: int | None = None,
        conf: dict | None = None,
    ) -> None:
        self._closed = True  # until fully built, so stop() from a failed __init__ is a no-op
        self.config = cfg = Config.build(
            memory=memory, parallelism=parallelism, local_dirs=local_dirs, shuffle_dirs=shuffle_dirs,
            event_log=event_log, shuffle_sync=shuffle_sync, max_task_attempts=max_task_attempts,
            max_stage_attempts=max_stage_attempts, task_max_failures=task_max_failures,
            progress=progress, app_name=app_name,
            blas_threads=blas_threads, storage_fraction=storage_fraction, policy=policy, serializer=serializer,
            disk_capacity=disk_capacity, mmap_memory=mmap_memory, mmap_share=mmap_share,
            gc_free_cache=gc_free_cache, tiers=tiers,
            async_eviction=async_eviction, eviction_watermarks=eviction_watermarks, backend=backend,
            executors=executors, cores_per_executor=cores_per_executor, executor_memory=executor_memory,
            locality_wait=locality_wait, address=address, default_level=default_level, live=live,
            max_partitions=max_partitions, default_parallelism=default_parallelism)
        self.app_id = new_app_id()
        tier_bases = [d for spec in cfg.tiers or [] for d in spec.dirs]
        self.removed_stale_dirs = remove_stale(cfg.local_dirs + cfg.shuffle_dirs + tier_bases)
        # A constructor that fails half-way (an event log path that is a directory, a
        # full shuffle device, an executor that cannot start) leaves nothing behind.
        self.local_dirs: list[str] = []
        self.shuffle_dirs: list[str] = []
        self.tier_dirs: list[str] = []
        self.source_dirs: list[str] = []
        self._log = self._progress = self._blas_limits = self._view = self._status_server = None
        self._gc_timed = False
        try:
            self.local_dirs = create_app_dirs(cfg.local_dirs, self.app_id, "cache")
            self.shuffle_dirs = create_app_dirs(cfg.shuffle_dirs, self.app_id, "shuffle")
            # the driver's source slices: apart from the cache, whose faults cost cache blocks only
            self.source_dirs = create_app_dirs(cfg.local_dirs[:1], self.app_id, "sources")
            tier_dirs = []
            for spec in cfg.tiers or []:
                tier_dirs.append(create_app_dirs(spec.dirs, self.app_id, f"cache-{spec.name}"))
                self.tier_dirs.extend(tier_dirs[-1])
            self.events = EventBus()
            self._log = open_event_log(cfg.event_log) if cfg.event_log else None
            if self._log:
                self.events.subscribe(self._log)
            show = cfg.progress if cfg.progress is not None else sys.stderr.isatty()
            if show and not (cfg.live and sys.stderr.isatty()):  # the live view shows progress itself
                from strataflow.metrics.progress import StageProgress

                self._progress = StageProgress()
                self.events.subscribe(self._progress)
            #: the policy's flags (does it take plans?); each executor makes its own instance
            self.policy_flags = make_policy(cfg.policy)
            #: large driver collections, written once for the executors (processes and ray backends)
            self.sources = SourceStore(self.source_dirs[0], events=self.events)
            self.block_master = BlockMaster()
            #: accumulators made by ``accumulator()``; tasks' updates are merged here once each
            self._accumulators = Accumulators()
            #: files and archives shipped to the executors (``add_file`` / ``add_archive``): with the
            #: sources, apart from the cache, since nothing recomputes them either
            self._files = FileRegistry(os.path.join(self.source_dirs[0], "files"),
                                       broadcast=self.broadcast if backend_class(cfg.backend).ships_by == SHIPS_BY_OBJECT_STORE else None)
            #: shuffles whose reading dataset was garbage-collected (``_clean_shuffles``)
            self._dead_shuffles: collections.deque[int] = collections.deque()
            #: broadcasts the program no longer holds, for the executors to drop (``_clean_broadcasts``)
            self._dead_broadcasts: collections.deque[str] = collections.deque()
            self.map_outputs = MapOutputTracker(local_files=backend_class(cfg.backend).shares_local_files)
            self._registry: "weakref.WeakValueDictionary[int, Dataset]" = weakref.WeakValueDictionary()
            self._ids = itertools.count()
            self._lock = threading.Lock()
            self._blas_limits = (threadpool_limits(limits=cfg.blas_threads, user_api="blas")
                                 if backend_class(cfg.backend).in_driver_process else None)
            gc_timer.acquire()
            self._gc_timed = True
            self.fleet = Fleet(cfg, self.events, self.local_dirs, self.shuffle_dirs, tier_dirs, os.getpid(),
                               self.source_dirs, self.sources.serve)
            self.fleet.on_lost(self.block_master.executor_lost)
            self.fleet.on_lost(self.map_outputs.executor_lost)
            self.events.post("ApplicationStart", app_id=self.app_id, app_name=cfg.app_name, memory=cfg.memory,
                             parallelism=cfg.parallelism, local_dirs=self.local_dirs, shuffle_dirs=self.shuffle_dirs,
                             backend=cfg.backend, executors=cfg.executors, cores_per_executor=cfg.cores_per_executor,
                             executor_memory=cfg.executor_memory, policy=self.policy_flags.name,
                             storage_fraction=cfg.storage_fraction,
                             eviction_watermarks=list(cfg.eviction_watermarks) if cfg.async_eviction else None)
            #: seconds until every executor was ready
            self.startup_s = self.fleet.start()
            if self.fleet.session is not None and hasattr(self.fleet.session, "source_store"):
                self.sources = self.fleet.session.source_store()  # a cluster: not the driver's files
        except BaseException:
            self._release()
            raise
        live = self.fleet.live()
        self._local_executor = live[0] if backend_class(cfg.backend).in_driver_process else None
        self.scheduler = DAGScheduler(self)
        self._closed = False
        _live.add(self)
        if cfg.live and sys.stderr.isatty():
            self._start_view()

    def _start_view(self) -> None:
        """The live view (``live=True`` on a terminal): fed by the events, polling the
        cache's figures once a second."""
        from strataflow.metrics.live import LiveState, LiveView

        state = LiveState(self.config.memory)
        self.events.subscribe(state)
        split = self.config.memory_split is not None
        self._view = LiveView(state, lambda: (self.metrics(), self.storage_status().split if split else None))
        self._view.start()

    def serve_status(self, port: int | None = None) -> str:
        """Starts (once) the application's status page on 127.0.0.1 and returns its URL:
        jobs, stages, persisted datasets and cache counters (``report/status_page.py``; PySpark's
        ``uiWebUrl``). ``port``: a fixed port, else the first free one from 4040.

        >>> ctx.serve_status()  # doctest: +ELLIPSIS
        'http://127.0.0.1:...'
        """
        self._check_open()
        if self._status_server is None:
            from strataflow.report.status_page import StatusServer

            self._status_server = StatusServer(self, port)
        return self._status_server.url

    # -- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        """Stops the executors (running tasks finish first), removes this application's
        directories, closes logs.

        >>> other = Context(memory="64MB", parallelism=1, progress=False)
        >>> other.stop()
        >>> other.parallelize([1]).count()
        Traceback (most recent call last):
        ...
        RuntimeError: this Context has been stopped
        """
        if self._closed:
            return
        if self._view is not None:
            self._view.stop()  # its last poll needs the executors
            self._view = None
        self._closed = True
        if self._status_server is not None:
            self._status_server.stop()
        self.fleet.stop()
        forget_files(self._files.entries())
        self.events.post("ApplicationEnd", app_id=self.app_id)
        self._release()
        _live.discard(self)

    def _release(self) -> None:
        if self._progress:
            self._progress.close()
        if self._log:
            self._log.close()
        remove_dirs(self.local_dirs + self.shuffle_dirs + self.tier_dirs + self.source_dirs)
        if self._blas_limits is not None:
            self._blas_limits.restore_original_limits()
        if self._gc_timed:
            self._gc_timed = False
            gc_timer.release()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Context has been stopped")

    def _own_dirs(self) -> None:
        """Before each job: an application directory removed while the application ran
        (a user cleaning a disk mid-job) is made and owned again, so that the files its
        writers make there again are still found and removed after a crash."""
        for d in self.local_dirs + self.shuffle_dirs + self.tier_dirs + self.source_dirs:
            try:
                ensure_app_dir(d)
            except OSError:
                pass  # its writers meet the same error and say so (a block not cached, a failed map)

    def _clean_shuffles(self) -> None:
        """Removes the files of shuffles no dataset can read any more (Spark's
        ContextCleaner), found by the datasets' finalizers since the last job: a loop that
        makes a new shuffle each iteration keeps its shuffle directories from growing."""
        while self._dead_shuffles:
            shuffle_id = self._dead_shuffles.popleft()
            self.scheduler.forget_shuffle(shuffle_id)
            by_writer = self.map_outputs.remove_shuffle(shuffle_id)
            if not self.map_outputs.local_files:  # on the writers' nodes: they remove them
                for eid, outs in by_writer.items():
                    handle = self.fleet.get(eid)
                    if handle is not None and handle.alive:
                        handle.call_async("remove_map_outputs", outs)
            self.events.post("ShuffleCleaned", shuffle_id=shuffle_id)

    def _clean_broadcasts(self) -> None:
        """Tells every executor to drop its copies of the broadcasts the program no longer
        holds (queued by their finalizers since the last job), without waiting for the
        answers: executors keep only the broadcasts that can still be read."""
        bids = []
        while self._dead_broadcasts:
            bids.append(self._dead_broadcasts.popleft())
        if not bids or backend_class(self.config.backend).in_driver_process:  # nothing was loaded
            return
        for handle in self.fleet.live():
            handle.call_async("forget_broadcast", *bids)

    def __reduce__(self):
        raise TypeError("a Context cannot be sent to executors: it lives on the driver only (use it outside "
                        "the functions given to transformations and actions)")

    # -- executors ---------------------------------------------------------------------------
    @property
    def backend(self) -> str:
        """Where tasks run: ``processes``, ``threads`` or ``ray`` (the ``backend`` argument, or its
        default).

        >>> ctx.backend
        'threads'
        """
        return self.config.backend

    def executors(self) -> list[str]:
        """The ids of the live executors.

        >>> ctx.executors()  # the threads backend has one executor, in this process
        ['0']
        """
        return [h.executor_id for h in self.fleet.live()]

    def _local(self, what: str):
        if self._local_executor is None:
            raise RuntimeError(f"Context.{what}: with the {self.config.backend} backend each executor has its own; "
                               f"use storage_status() and metrics() (by_executor=True), or backend='threads'")
        return self._local_executor.runtime

    @property
    def block_manager(self):
        """The threads backend's one block manager (for tests and debugging).

        >>> ctx.block_manager.memory is ctx.memory
        True
        """
        return self._local("block_manager").block_manager

    @property
    def memory(self):
        """The threads backend's memory manager: the unified budget for execution and storage (for
        tests and debugging).

        >>> ctx.memory.total == 256 * 2**20
        True
        """
        return self._local("memory").memory

    @property
    def regions(self):
        """The threads backend's region store, where the mapped levels (``DISK_MMAP``...) keep their
        blocks (for tests and debugging).

        >>> ctx.regions.bytes_on_disk >= 0
        True
        """
        return self._local("regions").regions

    @property
    def disk_store(self):
        """The threads backend's store of blocks on disk, its tiers fastest first (for tests and
        debugging; other backends keep one per executor).

        >>> [tier.name for tier in ctx.disk_store.tiers]
        ['disk']
        """
        return self._local("disk_store").disk_store

    # -- persisted datasets ---------------------------------------------------------------------
    def _persisted(self, ds: Dataset) -> None:
        """A dataset was persisted: executors register it when its first stage reaches them."""
        self._registry[ds.id] = ds

    def _unpersist(self, dataset_id: int) -> None:
        """Removes the dataset's blocks from every executor (and waits for them)."""
        self._registry.pop(dataset_id, None)
        if not self._closed:
            self.fleet.ask_all("unpersist", dataset_id)
        self.block_master.remove_dataset(dataset_id)

    @property
    def default_parallelism(self) -> int:
        """Partitions of a source made without a count: ``default_parallelism`` when set,
        else ``parallelism`` (Spark's ``sc.defaultParallelism``: ``spark.default.parallelism``,
        else the cores of ``local[N]``).

        >>> ctx.default_parallelism, ctx.parallelize(range(10)).num_partitions
        (2, 2)
        """
        cfg = self.config
        return cfg.parallelism if cfg.default_parallelism is None else cfg.default_parallelism

    # -- shared variables ------------------------------------------------------------------
    def broadcast(self, value: Any) -> Broadcast:
        """A read-only value for tasks (``b.value``), shipped once to each executor rather
        than with every stage (``broadcast.py``); ``unpersist()`` / ``destroy()``.

        >>> table = ctx.broadcast({"a": 1, "b": 2})
        >>> ctx.parallelize(["a", "b", "a"]).map(lambda k: table.value[k]).collect()
        [1, 2, 1]
        """
        self._check_open()
        return Broadcast(self, value)

    def accumulator(self, value: Any, accum_param: Any = None) -> Accumulator:
        """A value tasks add to (``acc.add(x)`` or ``acc += x``) and the driver reads
        (``acc.value``), counted exactly once per successful task (``accumulators.py``).
        Numbers and numpy arrays add with ``+``; others need ``accum_param``, an
        ``AccumulatorParam`` with ``zero(value)`` and ``add_in_place(a, b)``.

        >>> acc = ctx.accumulator(0)
        >>> ctx.parallelize(range(5)).foreach(lambda x: acc.add(x))
        >>> acc.value
        10
        """
        self._check_open()
        return self._accumulators.new(value, accum_param)

    def add_file(self, path: str | os.PathLike, recursive: bool = False) -> None:
        """Ships a file (or, with ``recursive=True``, a directory) to every executor: tasks
        open ``strataflow.shipping.files.get(basename)``. Copied now (later changes to the original
        are not seen); the same path again is ignored (``files.py``).

        >>> from strataflow import files
        >>> _ = open(tmp_dir + "/words.txt", "w").write("spam eggs")
        >>> ctx.add_file(tmp_dir + "/words.txt")
        >>> ctx.parallelize([0], 1).map(lambda _: open(files.get("words.txt")).read().split()).collect()
        [['spam', 'eggs']]
        """
        self._check_open()
        self._ship(self._files.add_file(path, recursive))

    def add_archive(self, path: str | os.PathLike) -> None:
        """Ships an archive (zip, jar, tar, tar.gz/tgz, tar.bz2, tar.xz), unpacked: tasks
        find its directory at ``strataflow.shipping.files.get(basename)`` (or ``path#alias``: the
        alias).

        >>> import os, shutil
        >>> from strataflow import files
        >>> os.makedirs(tmp_dir + "/model"); _ = open(tmp_dir + "/model/w.txt", "w").write("0.5")
        >>> archive = shutil.make_archive(tmp_dir + "/model", "zip", tmp_dir + "/model")
        >>> ctx.add_archive(archive)
        >>> ctx.parallelize([0], 1).map(lambda _: open(files.get("model.zip") + "/w.txt").read()).collect()
        ['0.5']
        """
        self._check_open()
        self._ship(self._files.add_archive(path))

    def _ship(self, entry: "ShippedFile | None") -> None:
        if entry is not None:  # visible to the driver's own code at once (and the threads backend's tasks)
            install_files({entry.name: entry}, self._files.root)

    @property
    def list_files(self) -> list[str]:
        """The URIs of the files and directories added with ``add_file``.

        >>> _ = open(tmp_dir + "/listed.txt", "w").write("x")
        >>> ctx.add_file(tmp_dir + "/listed.txt")
        >>> any(uri.endswith("/listed.txt") for uri in ctx.list_files)
        True
        """
        return self._files.uris("file", "dir")

    @property
    def list_archives(self) -> list[str]:
        """The URIs of the archives added with ``add_archive``.

        >>> import shutil
        >>> archive = shutil.make_archive(tmp_dir + "/empty", "zip", tmp_dir)
        >>> ctx.add_archive(archive)
        >>> any(uri.endswith("/empty.zip") for uri in ctx.list_archives)
        True
        """
        return self._files.uris("archive")

    def _new_dataset_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def _num(self, n: int | None) -> int:
        return self.default_parallelism if n is None else check_partition_count(n, most=self.config.max_partitions)

    # -- the cache, seen from outside --------------------------------------------------------
    @property
    def policy(self) -> str:
        """The name of the cache's eviction policy (the ``policy`` argument; ``lineage`` by default).

        >>> ctx.policy
        'lineage'
        """
        return self.policy_flags.name

    def storage_status(self, by_executor: bool = False) -> "StorageStatus | dict[str, StorageStatus]":
        """One entry per persisted dataset: name, level, partitions and bytes in memory and
        on disk (``tier_bytes``: per disk tier), summed over the executors; the list's
        ``tiers`` describes each tier (capacity, bytes used, blocks, hits, bandwidth),
        ``tier_bytes`` and ``tier_hits`` give memory and every tier. ``str()`` of the list
        is a readable table. ``by_executor=True``: executor id -> its own list.

        >>> ds = ctx.parallelize(range(4), 2).set_name("points").cache()
        >>> _ = ds.count()
        >>> [(s.name, s.level, s.memory_partitions) for s in ctx.storage_status()]  # doctest: +ELLIPSIS
        [('points#...', 'MEMORY_ONLY', 2)]
        >>> _ = ds.unpersist()
        """
        answers = self.fleet.ask_all("storage_status")
        if by_executor:
            return answers
        registered = [(d.id, d.label, d.storage_level.name, d.num_partitions)
                      for d in sorted(self._registry.values(), key=lambda d: d.id) if d.storage_level.is_valid]
        return merge_status(list(answers.values()), registered)

    def measure_tiers(self, size: int | str = "64MB") -> dict[str, dict]:
        """Measures each disk tier's sequential bandwidth, cold and warm (the probe of
        ``strataflow probe DIR``), writing ``size`` bytes to each (on the first executor:
        they share the devices); a tier without a configured bandwidth takes the cold read
        figure. Returns name -> measurements.

        >>> measured = ctx.measure_tiers("1MB")
        >>> sorted(measured), sorted(measured["disk"])
        (['disk'], ['cold', 'warm'])
        """
        n = parse_size(size, "size")
        live = self.fleet.live()
        return live[0].call("measure_tiers", n, timeout=None) if live else {}

    def metrics(self, by_executor: bool = False) -> dict:
        """Totals for the application: cache hits, misses, drops, re-caches, disk bytes,
        (de)serialization and GC seconds (the same per job and stage are in the events),
        summed over the executors (``by_executor=True``: executor id -> its own figures;
        peaks are summed too, an upper bound of the peak of the sum).

        Tiers: ``tier_bytes`` and ``tier_hits`` map ``memory`` and each disk tier (and
        ``mapped`` for the region store's hits) to bytes held and blocks served;
        ``bytes_moved_between_tiers``, ``blocks_moved_down``/``_up`` count moves between
        disk tiers (memory to disk is ``bytes_dropped``, disk to memory
        ``bytes_recached`` and ``bytes_prefetched``). Eviction: ``sync_evictions`` (blocks
        dropped on a task's thread), ``async_evictions`` (by the background writer),
        ``eviction_failures``, ``eviction_wait_s`` (time puts waited for the writer);
        prefetch: ``blocks_prefetched``, ``bytes_prefetched``, ``prefetch_scans`` (scans of the
        disk blocks for candidates; after an empty one they back off until memory is freed).
        Shuffle on a cluster: ``shuffle_remote_fetches`` and ``shuffle_remote_bytes_read``
        (buckets a reduce task fetched from the executor that wrote them, on another node).
        Executors: ``executors`` (live), ``executors_lost``. Source slices (``parallelize``,
        ``from_numpy``, broadcasts, as the driver's store wrote them): ``source_slices_lost``
        (an executor could not use a slice's file), ``source_slices_rewritten`` (the driver
        wrote it again), ``source_slices_sent`` (the driver sent a slice itself).

        >>> ds = ctx.parallelize(range(4), 2).cache()
        >>> _ = ds.count(); before = ctx.metrics()["memory_hits"]
        >>> _ = ds.count(); ctx.metrics()["memory_hits"] - before
        2
        >>> _ = ds.unpersist()
        """
        answers = self.fleet.ask_all("metrics")
        if by_executor:
            return answers
        out = merge_metrics(list(answers.values()), self.scheduler.totals.retired())
        out.update(executors=len(answers), executors_lost=len(self.fleet.lost), **self.sources.counts)
        return out

    # -- sources ----------------------------------------------------------------------------
    def parallelize(self, data: Iterable, num_partitions: int | None = None) -> Dataset:
        """A dataset of the given records, cut into contiguous slices. A pyarrow Table or
        RecordBatch, or a pandas DataFrame, gives its rows (as ``from_arrow`` /
        ``from_pandas``: batch partitions whose records are row tuples), never its
        columns; a pyarrow Array or ChunkedArray its values as Python objects. A columnar
        value of another library is refused (``RowsTypeError``): convert it first.

        >>> ds = ctx.parallelize([1, 2, 3, 4, 5], 2)
        >>> ds.collect_partitions()
        [[1, 2], [3, 4, 5]]
        """
        n = self._num(num_partitions)
        if isinstance(data, range):
            return Dataset(self, RangeSource(data, n), "parallelize")
        if isinstance(data, (pa.Table, pa.RecordBatch)):
            return Dataset(self, arrow_source(data, n), "parallelize")
        if is_dataframe(data):
            return Dataset(self, pandas_source(data, n), "parallelize")
        if isinstance(data, (pa.Array, pa.ChunkedArray)):
            data = data.to_pylist()
        check_rows(data, "parallelize's data")
        return Dataset(self, collection_source(list(data), n), "parallelize")

    def from_pandas(self, df: Any, num_partitions: int | None = None) -> Dataset:
        """Rows of a pandas DataFrame in contiguous DataFrame partitions (``df.iloc``
        slices: their index labels and dtypes are kept; ``to_pandas`` gives ``df`` back).
        Records are row tuples in column order, so ``count`` counts rows, ``filter`` keeps
        rows and a two-column frame is a pair dataset (``group_by_key`` works).

        >>> import pandas as pd
        >>> df = pd.DataFrame({"k": ["a", "b", "a"], "v": [1, 2, 3]})
        >>> sorted(ctx.from_pandas(df, 2).reduce_by_key(lambda x, y: x + y).collect())
        [('a', 4), ('b', 2)]
        """
        require_pandas("from_pandas")
        return Dataset(self, pandas_source(df, self._num(num_partitions)), "from_pandas")

    def from_arrow(self, table: Any, num_partitions: int | None = None) -> Dataset:
        """Rows of a pyarrow Table (or RecordBatch) in contiguous Table partitions
        (zero-copy slices); records are row tuples in column order.

        >>> import pyarrow as pa
        >>> ctx.from_arrow(pa.table({"x": [1, 2, 3], "y": ["a", "b", "c"]}), 2).collect()
        [(1, 'a'), (2, 'b'), (3, 'c')]
        """
        return Dataset(self, arrow_source(table, self._num(num_partitions)), "from_arrow")

    def range(self, start: int, stop: int | None = None, step: int = 1, num_partitions: int | None = None) -> Dataset:
        """Integers ``range(start, stop, step)`` (``range(0, start)`` with one argument).

        >>> ctx.range(5).collect(), ctx.range(10, 0, -3).collect()
        ([0, 1, 2, 3, 4], [10, 7, 4, 1])
        """
        if stop is None:
            start, stop = 0, start
        if step == 0:
            raise ValueError("range: step must not be zero")
        return Dataset(self, RangeSource(range(start, stop, step), self._num(num_partitions)), "range")

    def from_numpy(self, array: np.ndarray, num_partitions: int | None = None) -> Dataset:
        """Rows of ``array`` in contiguous ndarray partitions (views, not copies).

        >>> import numpy as np
        >>> points = ctx.from_numpy(np.arange(8.0).reshape(4, 2), 2)
        >>> points.count(), points.map_partitions(lambda block: block.sum(axis=0)).collect_partitions()[0]
        (4, array([2., 4.]))
        """
        return Dataset(self, numpy_source(np.asarray(array), self._num(num_partitions)), "from_numpy")

    def text_file(self, path: PathSpec, min_partitions: int | None = None, recursive: bool = False) -> Dataset:
        r"""Lines (UTF-8) of the files ``path`` names: a file, a directory's visible files
        (its whole tree's with ``recursive``), a glob (``logs/part-*.txt``, ``?``,
        ``[a-c]``, ``{a,b}``), several of these joined by commas or in a list, on the local
        disk (also as ``file://``) or at any fsspec URL (``s3://``, ``gs://``,
        ``memory://``...; see ``io/paths.py``).

        >>> _ = open(tmp_dir + "/poem.txt", "w").write("to be\nor not\n")
        >>> ctx.text_file(tmp_dir + "/poem.txt").collect()
        ['to be', 'or not']
        """
        n = self._num(min_partitions)
        return Dataset(self, TextSource(path, n, recursive=recursive), "text_file")

    def csv_file(self, path: str | os.PathLike, min_partitions: int | None = None, delimiter: str = ",",
                 column_names: list[str] | None = None, column_types: dict | None = None,
                 header: bool = False, infer_schema: bool = True, recursive: bool = False) -> Dataset:
        r"""Delimited text as pyarrow Table partitions that all have ONE schema (same
        line-aligned byte ranges as ``text_file``; see ``io/delimited.py``).

        ``header``: the first line of each file names the columns and is not data.
        ``column_names`` names them instead (else ``f0``, ``f1``...); ``column_types`` maps
        names to pyarrow types. The other columns' types are inferred from the whole
        input when ``infer_schema`` (one pass over the data now, as Spark's
        ``inferSchema``; mixed ints and floats give double, other mixes string), or are
        strings. Naming every column's type skips the pass. ``path`` and ``recursive``: as
        ``text_file``'s.

        >>> _ = open(tmp_dir + "/people.csv", "w").write("name,age\nada,36\nalan,41\n")
        >>> people = ctx.csv_file(tmp_dir + "/people.csv", header=True)
        >>> people.collect(), people.to_arrow().schema.field("age").type
        ([('ada', 36), ('alan', 41)], DataType(int64))
        """
        n = self._num(min_partitions)
        source = CsvSource(path, n, delimiter, column_names, column_types, header, recursive)
        if source.untyped and infer_schema:
            found = Dataset(self, CsvTypesSource(source), "csv_file infer_schema").collect()
            source.set_types(widen_types(found))
        source.set_types({name: pa.string() for name in source.untyped})
        return Dataset(self, source, "csv_file")

    def parquet_file(self, path: PathSpec, num_partitions: int | None = None,
                     columns: list[str] | None = None, recursive: bool = False) -> Dataset:
        """A Parquet file, or a directory of them (``save_as_parquet``'s, read through its
        manifest), as pyarrow Table partitions of whole row groups, all of one schema.
        ``path`` and ``recursive``: as ``text_file``'s.

        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> pq.write_table(pa.table({"x": [1, 2], "y": ["a", "b"]}), tmp_dir + "/t.parquet")
        >>> ctx.parquet_file(tmp_dir + "/t.parquet", columns=["y"]).collect()
        [('a',), ('b',)]
        """
        return Dataset(self, ParquetSource(path, self._num(num_partitions), columns, recursive), "parquet_file")

    def npy_file(self, path: PathSpec, num_partitions: int | None = None, recursive: bool = False) -> Dataset:
        """Row ranges of a memory-mapped ``.npy`` file (read-only views), or of the parts
        of a directory (``save_as_npy``'s, read through its manifest) as one array; a
        remote file's rows are read as byte ranges. ``path`` and ``recursive``: as
        ``text_file``'s.

        >>> import numpy as np
        >>> np.save(tmp_dir + "/points.npy", np.arange(6.0).reshape(3, 2))
        >>> ctx.npy_file(tmp_dir + "/points.npy", 2).map(lambda row: float(row.sum())).collect()
        [1.0, 5.0, 9.0]
        """
        return Dataset(self, NpySource(path, self._num(num_partitions), recursive), "npy_file")

    # -- more sources and settings (PySpark's SparkContext has them; issue 17) ------------------
    def union(self, *datasets: Dataset) -> Dataset:
        """The partitions of every dataset, one after the other (an empty dataset for none).

        >>> ctx.union(ctx.parallelize([1]), ctx.parallelize([2, 3])).collect()
        [1, 2, 3]
        """
        if not datasets:
            return self.empty_dataset()
        return datasets[0].union(*datasets[1:])

    def empty_dataset(self) -> Dataset:
        """A dataset with no partitions and no records.

        >>> ctx.empty_dataset().collect(), ctx.empty_dataset().num_partitions
        ([], 0)
        """
        from strataflow.lineage import ListSource

        return Dataset(self, ListSource([]), "empty_dataset")

    def whole_text_files(self, path: PathSpec, min_partitions: int | None = None,
                         encoding: str = "utf-8", recursive: bool = False) -> Dataset:
        """``(path, content)`` of every file ``path`` names (as ``text_file``'s: a
        directory, a glob, a list, a URL), a record each.

        >>> import os
        >>> os.makedirs(tmp_dir + "/docs"); _ = open(tmp_dir + "/docs/a.txt", "w").write("hello")
        >>> [(os.path.basename(p), text) for p, text in ctx.whole_text_files(tmp_dir + "/docs").collect()]
        [('a.txt', 'hello')]
        """
        from strataflow.io.whole_files import whole_files

        return whole_files(self, path, min_partitions, encoding=encoding, recursive=recursive)

    def binary_files(self, path: PathSpec, min_partitions: int | None = None, recursive: bool = False) -> Dataset:
        """``(path, bytes)`` of every file ``path`` names (as ``text_file``'s), a record each.

        >>> import os
        >>> os.makedirs(tmp_dir + "/blobs"); _ = open(tmp_dir + "/blobs/b.bin", "wb").write(b"ab")
        >>> [(os.path.basename(p), data) for p, data in ctx.binary_files(tmp_dir + "/blobs").collect()]
        [('b.bin', b'ab')]
        """
        from strataflow.io.whole_files import whole_files

        return whole_files(self, path, min_partitions, binary=True, recursive=recursive)

    def pickle_file(self, path: PathSpec, recursive: bool = False) -> Dataset:
        """The records ``Dataset.save_as_pickle_file`` wrote (to one directory or to each of
        a list; any path ``text_file`` takes), a partition per part file.

        >>> ctx.parallelize([(1, {"a"}), (2, None)]).save_as_pickle_file(tmp_dir + "/objs")
        >>> ctx.pickle_file(tmp_dir + "/objs").collect()
        [(1, {'a'}), (2, None)]
        """
        from strataflow.dataset.pickle_files import open_pickle_file

        return open_pickle_file(self, path, recursive)

    def set_checkpoint_dir(self, path: str | os.PathLike) -> None:
        """Where ``Dataset.checkpoint()`` writes: a directory of this application's own
        is made under ``path`` (files stay after ``stop()``, as Spark's).

        >>> ctx.set_checkpoint_dir(tmp_dir)
        >>> ds = ctx.parallelize([1, 2])
        >>> ds.checkpoint(); _ = ds.count()
        >>> ds.get_checkpoint_file().startswith(ctx.checkpoint_dir)
        True
        """
        from strataflow.dataset.checkpoint import app_checkpoint_dir

        self._checkpoint_dir = app_checkpoint_dir(path, self.app_id)

    @property
    def checkpoint_dir(self) -> str | None:
        """The directory ``set_checkpoint_dir`` made, or None.

        >>> ctx.set_checkpoint_dir(tmp_dir)
        >>> ctx.checkpoint_dir.startswith(tmp_dir)
        True
        """
        return getattr(self, "_checkpoint_dir", None)

    def set_log_level(self, level: str | int) -> None:
        """The level of strataflow's loggers (``"DEBUG"``, ``"INFO"``, ``"WARN"``, ``"ERROR"``,
        ``"OFF"``..., or a ``logging`` number).

        >>> import logging
        >>> ctx.set_log_level("ERROR")
        >>> logging.getLogger("strataflow").level == logging.ERROR
        True
        >>> ctx.set_log_level("WARN")
        """
        import logging

        names = {"ALL": logging.NOTSET, "TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
                 "WARN": logging.WARNING, "WARNING": logging.WARNING, "ERROR": logging.ERROR,
                 "FATAL": logging.CRITICAL, "OFF": logging.CRITICAL + 10}
        if isinstance(level, str):
            if level.upper() not in names:
                raise ValueError(f"set_log_level: unknown level {level!r}; choose one of {', '.join(names)}")
            level = names[level.upper()]
        logging.getLogger("strataflow").setLevel(level)
