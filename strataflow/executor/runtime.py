"""The executor's services: what a task reaches where it runs.

One executor has its own memory manager (its share of the application's budget), block
manager with its disk tiers and region store, shuffle writer and spill directories, all
under ``exec-<id>`` subdirectories of the application's directories (so a lost executor's
files can be removed without touching the others', and a crashed application's are still
found by the driver's owner file). The threads backend builds one in the driver's process;
the processes backend builds one in each executor process (``worker.py``).

Every pickled frame these services write to a file is tagged with the application's
secret key (``storage/frame_auth.py``), which the driver makes once per fleet and hands
over in the :class:`ExecutorSpec` (in memory, or over the executor's private socket; never
written to disk). The runtime gives it to its stores and shuffle writer, and registers it
for the application's directories for as long as it runs (``storage/app_keys.py``), so
that the readers handed only a path -- another executor's block file or extent, a map
output, a source slice the driver wrote -- authenticate with the same key.
"""

from __future__ import annotations

import os
import resource
import shutil
import threading
from dataclasses import dataclass, field

from strataflow.config import Config
from strataflow.shipping.files import install as install_files
from strataflow.storage.memory.unified import MemoryManager
from strataflow.metrics import EventBus, gc_timer
from strataflow.shuffle import ShuffleWriter
from strataflow.shuffle.files import MapOutput, read_bucket
from strataflow.shuffle.manager import BucketReader, remove_output
from strataflow.storage.blocks import app_keys
from strataflow.storage.blocks.frame_auth import FrameAuth, new_key
from strataflow.storage.gc_free import gc_unfreeze
from strataflow.storage.manager import BlockManager
from strataflow.storage.policies import make_policy
from strataflow.storage.status import StorageStatus, storage_status, tier_bytes, tier_hits
from strataflow.storage.stores import build_stores, share
from strataflow.store.input_reader import InputCache
from strataflow.store.level_blocks import StoreLevelBlocks, app_of

__all__ = ["ExecutorSpec", "ExecutorRuntime", "executor_dirs", "app_dirs"]


@dataclass(frozen=True)
class ExecutorSpec:
    """What the driver tells an executor when it starts it."""

    executor_id: str
    config: Config
    #: the application's directories (the driver made and owns them)
    cache_dirs: list[str]
    shuffle_dirs: list[str]
    #: per disk tier (``config.tiers``), the application's directories of that tier
    tier_dirs: list[list[str]]
    driver_pid: int
    #: the application's secret key, which authenticates the pickled frames of its files
    #: (the fleet gives every executor of an application the same; out of ``repr``)
    auth_key: bytes = field(default_factory=new_key, repr=False)
    #: where the driver writes the source slices this executor reads (``source_store.py``)
    source_dirs: list[str] = field(default_factory=list)
    #: its backend runs it in the driver's process (decided by the driver, where the backend
    #: is registered: an executor process need not know its backend's class)
    in_driver_process: bool = False


def _subdir(spec: ExecutorSpec) -> str:
    """``exec-<id>``; the one executor of a backend in the driver's process uses the
    application's directories themselves (it is never lost, and nothing else writes there)."""
    return "" if spec.in_driver_process else f"exec-{spec.executor_id}"


def executor_dirs(spec: ExecutorSpec) -> list[str]:
    """Every directory the executor writes: removed by the driver when it is lost."""
    sub = _subdir(spec)
    bases = spec.cache_dirs + spec.shuffle_dirs + [d for dirs in spec.tier_dirs for d in dirs]
    return [os.path.join(b, sub) for b in bases]


def app_dirs(cache_dirs: list[str], shuffle_dirs: list[str], tier_dirs: list[list[str]]) -> list[str]:
    """The application's directories (not an executor's subdirectories): every
    executor's files, and the driver's source slices, lie below them."""
    return cache_dirs + shuffle_dirs + [d for dirs in tier_dirs for d in dirs]


def _make_dirs(bases: list[str], sub: str) -> list[str]:
    out = []
    for b in bases:
        path = os.path.join(b, sub) if sub else b
        os.makedirs(path, mode=0o700, exist_ok=True)
        out.append(path)
    return out


class ExecutorRuntime:
    """One executor's memory manager, block manager, stores and shuffle writer.

    Capacities that the configuration gives for the whole application (``disk_capacity``,
    each tier's ``capacity``, ``mmap_memory``) are divided evenly among the executors, as
    ``memory`` is; ``executor_memory`` is this executor's memory total."""

    def __init__(self, spec: ExecutorSpec, events: EventBus | None = None) -> None:
        cfg = spec.config
        self.spec = spec
        self.executor_id = spec.executor_id
        self.config = cfg
        n = cfg.executors
        sub = _subdir(spec)
        self.events = events or EventBus()
        self.local_dirs = _make_dirs(spec.cache_dirs, sub)
        self.shuffle_dirs = _make_dirs(spec.shuffle_dirs, sub)
        key = spec.auth_key
        stores = build_stores(cfg.tiers, [_make_dirs(bases, sub) for bases in spec.tier_dirs], self.local_dirs,
                              cfg.disk_capacity, n, key)
        self.disk_store, self.regions = stores.tiers, stores.regions
        self.memory = MemoryManager(cfg.executor_memory, cfg.storage_fraction)
        self.block_manager = BlockManager(self.memory, self.disk_store, make_policy(cfg.policy), cfg.serializer,
                                          self.events, regions=self.regions,
                                          mmap_memory=None if cfg.memory_split else share(cfg.mmap_memory, n),
                                          split=cfg.memory_split,
                                          gc_free=cfg.gc_free_cache, async_eviction=cfg.async_eviction,
                                          watermarks=cfg.eviction_watermarks)
        # StorageLevel.STORE's blocks: in the shared store, under the application's id
        self.block_manager.shared = StoreLevelBlocks(cfg.store, app_of(self.spec.cache_dirs[0]) if spec.cache_dirs
                                                     else f"driver{spec.driver_pid}")
        #: the store's input cache, as this executor reads files (``store/input_reader.py``)
        self.inputs: InputCache | None = InputCache(cfg.store, cfg.input_cache, self.block_manager.metrics,
                                                    self.events, app_of(spec.cache_dirs[0]) if spec.cache_dirs
                                                    else "") if cfg.input_cache != "off" else None
        self.shuffle = ShuffleWriter(self.shuffle_dirs, cfg.shuffle_sync, key=key, executor_id=spec.executor_id)
        #: how this executor's reduce tasks read a bucket (the ray backend's actor reads an
        #: output of another node through the executor that wrote it)
        self.read_bucket: BucketReader = read_bucket
        #: buckets its reduce tasks fetched from another node's executor (ray), and bytes
        self._remote_shuffle = [0, 0]
        self._remote_lock = threading.Lock()
        self._auth = FrameAuth(key)
        self._app_dirs = app_dirs(spec.cache_dirs, spec.shuffle_dirs, spec.tier_dirs) + spec.source_dirs
        install_files({}, os.path.join(executor_dirs(spec)[0], "files"))  # where shipped files are written
        app_keys.register(self._app_dirs, self._auth)  # last: a failed constructor leaves none
        gc_timer.acquire()
        self._gc0 = gc_timer.snapshot()
        self._majflt0 = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
        self._closed = False

    def spill_dir(self, task_id: int) -> str:
        """Where a task spills aggregation runs: execution data, so the shuffle dirs."""
        return self.shuffle_dirs[task_id % len(self.shuffle_dirs)]

    # -- figures, asked by the driver ---------------------------------------------------------
    def cache_snapshot(self) -> dict:
        """The cache counters and the process's GC figures: sent with every task result so
        the driver can tell each stage's and job's differences."""
        out = self.block_manager.metrics.snapshot()
        gc_s, gc_n = gc_timer.snapshot()
        out["gc_s"] = gc_s - self._gc0[0]
        out["gc_collections"] = gc_n - self._gc0[1]
        return out

    def metrics(self) -> dict:
        """This executor's part of ``Context.metrics()``."""
        out = self.cache_snapshot()
        bm = self.block_manager
        out.update(mmap_bytes_mapped=self.regions.mapped_bytes,
                   major_page_faults=resource.getrusage(resource.RUSAGE_SELF).ru_majflt - self._majflt0,
                   storage_memory_used=self.memory.storage_used, peak_storage_memory=self.memory.peak_storage,
                   execution_memory_used=self.memory.execution_used,
                   peak_execution_memory=self.memory.peak_execution,
                   tier_bytes=tier_bytes(bm), tier_hits=tier_hits(bm),
                   inputs=self.inputs.figures() if self.inputs is not None else {},
                   eviction_wait_s=self.memory.reclaim_waited_s,
                   shuffle_remote_fetches=self._remote_shuffle[0], shuffle_remote_bytes_read=self._remote_shuffle[1])
        return out

    def count_remote_bucket(self, nbytes: int) -> None:
        """A bucket fetched from the executor that wrote it, on another node."""
        with self._remote_lock:
            self._remote_shuffle[0] += 1
            self._remote_shuffle[1] += nbytes

    def storage_status(self) -> StorageStatus:
        return storage_status(self.block_manager)

    def measure_tiers(self, size: int) -> dict[str, dict]:
        return {t.name: t.measure(size) for t in self.block_manager.disk.tiers}

    def unpersist(self, dataset_id: int) -> int:
        return self.block_manager.unregister(dataset_id)

    def remove_lost_executor(self, executor_id: str) -> int:
        """Removes the directories of a lost executor of this node (on a cluster the
        driver cannot reach them): ``exec-<id>`` under the application's directories.
        How many were there."""
        if not str(executor_id).isdigit() or str(executor_id) == self.executor_id:
            raise ValueError(f"remove_lost_executor: {executor_id!r} is not another executor's id")
        n = 0
        for base in self._app_dirs:
            d = os.path.join(base, f"exec-{executor_id}")
            if os.path.isdir(d):
                shutil.rmtree(d, ignore_errors=True)
                n += 1
        return n

    def remove_map_outputs(self, outputs: list[MapOutput]) -> int:
        """Removes this executor's files of a shuffle no dataset reads any more (on a
        cluster the driver cannot); another directory's paths are refused. How many."""
        mine = [os.path.join(os.path.realpath(d), "") for d in self.shuffle_dirs]
        n = 0
        for out in outputs:
            paths = [os.path.realpath(p) for p in (out.index_path, out.data_path)]
            if all(any(p.startswith(d) for d in mine) for p in paths):
                remove_output(out)
                n += 1
        return n

    def close(self, remove_files: bool = True) -> None:
        """Stops the background writer, unmaps the region store, undoes the GC freeze and
        (by default) removes this executor's directories."""
        if self._closed:
            return
        self._closed = True
        if self.inputs is not None:
            self.inputs.close()
        self.block_manager.close()
        self.regions.close()
        app_keys.unregister(self._app_dirs, self._auth)
        if self.block_manager.gc_free:
            gc_unfreeze()
        gc_timer.release()
        if remove_files and _subdir(self.spec):
            for d in self.local_dirs + self.shuffle_dirs + [d for t in self.disk_store.tiers for d in t.store.dirs]:
                shutil.rmtree(d, ignore_errors=True)
