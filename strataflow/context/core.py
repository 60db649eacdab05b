"""The Context as assembled: its configuration, its start and stop, and what the driver keeps.

It has the configuration validated (by :meth:`Config.build`: a bad one fails here, before
any work), makes the per-application cache and shuffle directories, starts the executors
(``executor/``: each with its own memory share, block manager and task slots) and owns
what the driver keeps: the DAG scheduler, the block-location master, the map-output
tracker, the registry of persisted datasets, and the event bus with its log and progress
bar (executors' events are re-posted on it). What a user calls on it otherwise lives in
the mixins beside this module: the data sources (:mod:`.sources`), the file readers
(:mod:`.readers`), the shared variables (:mod:`.shared`) and the executors and their caches
seen from the driver (:mod:`.executors`). Its options, their defaults and their docstring
entries come from one table, :mod:`strataflow.config.options`.
"""

from __future__ import annotations

import atexit
import collections
import itertools
import os
import sys
import threading
import weakref
from typing import Any

from threadpoolctl import threadpool_limits

from strataflow.config.backends import SHIPS_BY_OBJECT_STORE, backend_class
from strataflow.config import Config
from strataflow.config.layers import with_layered_options
from strataflow.config.options import docs as option_docs
from strataflow.context import excepthook
from strataflow.context.executors import ExecutorViews
from strataflow.context.machine_fit import check_fits
from strataflow.context.readers import FileReaders
from strataflow.context.shared import SharedVariables
from strataflow.context.sources import DataSources
from strataflow.context.store_access import StoreAccess
from strataflow.dataset import Dataset
from strataflow.executor.fleet import Fleet
from strataflow.executor.messages import ForgetBroadcasts, ForgetShuffles, RemoveMapOutputs, Unpersist
from strataflow.metrics import EventBus, gc_timer
from strataflow.metrics.events import open_event_log
from strataflow.scheduler import DAGScheduler
from strataflow.scheduler.block_master import BlockMaster
from strataflow.scheduler.errors import fold_job_error
from strataflow.shipping.accumulators import Accumulators
from strataflow.shipping.files import FileRegistry
from strataflow.shipping.files import forget as forget_files
from strataflow.shipping.source_store import SourceStore
from strataflow.shuffle import MapOutputTracker
from strataflow.storage.policies import make_policy
from strataflow.storage.workdirs import create_app_dirs, ensure_app_dir, new_app_id, remove_dirs, remove_stale

__all__ = ["Context"]

_live: "weakref.WeakSet[Context]" = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for ctx in list(_live):
        ctx.stop()


class Context(DataSources, FileReaders, SharedVariables, ExecutorViews, StoreAccess):
    __doc__ = f"""One application: configuration, storage, scheduler and events.

    Args:
{option_docs(indent=8)}
        conf: any of the options above by name, e.g. ``{{"memory": "8GB"}}``. Precedence:
            an argument, then ``conf``, then the environment variable
            ``STRATAFLOW_<OPTION>`` (``STRATAFLOW_MEMORY=8GB``, ``STRATAFLOW_BACKEND=threads``;
            strings converted by the option's ``from_text``: see ``strataflow/config/options.py``),
            then the default. ``config_sources`` says where each value came from.
    """

    @with_layered_options
    def __init__(self, **options: Any) -> None:
        """Every option of the table (``strataflow/config/options.py``), by position or name;
        see the class docstring. The signature ``help()`` shows is the table's."""
        self._closed = True  # until fully built, so stop() from a failed __init__ is a no-op
        excepthook.install()  # an uncaught error of a script without `with` folded too (excepthook.py)
        self.config = cfg = Config.build(**options)
        check_fits(cfg)  # a machine too small for its processes: an error now, not OOM kills mid-job
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
        fold_job_error(exc[1] if len(exc) > 1 else None)  # the error starts with the user's line (issue 51)
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
        self._close_store()
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
        dead = []
        while self._dead_shuffles:
            shuffle_id = self._dead_shuffles.popleft()
            dead.append(shuffle_id)
            self.scheduler.forget_shuffle(shuffle_id)
            by_writer = self.map_outputs.remove_shuffle(shuffle_id)
            if not self.map_outputs.local_files:  # on the writers' nodes: they remove them
                for eid, outs in by_writer.items():
                    handle = self.fleet.get(eid)
                    if handle is not None and handle.alive:
                        handle.call_async(RemoveMapOutputs(tuple(outs)))
            self.events.post("ShuffleCleaned", shuffle_id=shuffle_id)
        if dead:  # each executor's cached indexes of them go now, not at its next stage
            for handle in self.fleet.live():
                handle.call_async(ForgetShuffles(tuple(dead)))

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
            handle.call_async(ForgetBroadcasts(tuple(bids)))

    def __reduce__(self):
        raise TypeError("a Context cannot be sent to executors: it lives on the driver only (use it outside "
                        "the functions given to transformations and actions)")


    # -- persisted datasets ---------------------------------------------------------------------
    def _persisted(self, ds: Dataset) -> None:
        """A dataset was persisted: executors register it when its first stage reaches them."""
        self._registry[ds.id] = ds
        if ds.storage_level.shared:  # STORE: the driver holds its blocks in the shared store
            self._hold_store_level(ds.id)

    def _unpersist(self, dataset_id: int) -> None:
        """Removes the dataset's blocks from every executor (and waits for them)."""
        self._registry.pop(dataset_id, None)
        if not self._closed:
            self.fleet.ask_all(Unpersist(dataset_id))
        self._release_store_level(dataset_id)
        self.block_master.remove_dataset(dataset_id)


    def _new_dataset_id(self) -> int:
        with self._lock:
            return next(self._ids)


    # -- settings (PySpark's SparkContext has them; issue 17) ------------------------------------
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
