"""The block manager: the one call through which a task gets a dataset's partition.

    get_or_compute(block_id, level, compute)
      -> memory hit                         (policy.record_access "memory")
      -> else disk hit; the policy decides whether the block is re-cached in memory
      -> else compute from lineage and put at the level: the memory manager reserves the
         bytes and the policy names victims, which drop to disk (disk-capable levels) or
         are discarded; a block with no room in memory goes to disk or is not cached
      -> every step counts in ``metrics`` and posts a ``Block*`` event

Guarantees, each tested:
- A persisted block is never lost silently: a missing or corrupt block file posts
  ``BlockLost`` and the partition is recomputed; a block that cannot be written (disk
  full, value that cannot be serialized) is not cached, with ``BlockNotStored`` and a
  warning, unless no level can hold it, in which case the task fails naming the dataset
  and the serializer.
- Accounted storage never exceeds the memory manager's budget: every memory put reserves
  its bytes first, and memory-store changes happen under the memory manager's lock.
- Batches handed out from the cache are read-only (a write raises numpy's usual
  "assignment destination is read-only"): a task that wrote into a cached array would
  otherwise change what later tasks read. Copy the array to modify it.

A task still holds the value it was handed after its block is evicted: the memory is
freed when the task drops it, so the process may exceed the budget by the blocks the
running tasks are reading (at most ``parallelism`` partitions).

Below memory sit the disk tiers (``tiers.py``: fastest first; one ``disk`` tier when none
are configured): a dropped block goes to the top tier, full tiers push their LRU blocks
down, and a block read from a lower tier moves up one tier when there is room. Mapped
levels keep their own region store and are not part of the tiers. With asynchronous
eviction (``eviction_writer.py``) victims are written by a background thread before
memory runs out; the same thread prefetches the blocks a policy names into free memory.
"""

from __future__ import annotations

import gc
import mmap
import threading
import time
import warnings
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np
import pyarrow as pa

from ..metrics import EventBus
from .disk_store import BlockUnavailable, DiskFull, DiskStore
from .eviction_writer import DEFAULT_WATERMARKS, EvictionWriter
from .region_store import RegionStore
from .memory_store import MemoryEntry, MemoryStore, join_frames, off_heap_buffer
from .policies import Policy
from .serde import SERIALIZERS, SerializationError, Serializer, get_serializer
from .sizing import estimate_size
from .tiers import TieredStore

__all__ = ["BlockId", "BlockManager", "CacheMetrics", "DatasetInfo", "BlockStoreError"]

_MISS = object()

METRIC_KEYS = (
    "memory_hits", "disk_hits", "misses", "blocks_dropped", "bytes_dropped", "blocks_recached",
    "bytes_recached", "disk_bytes_written", "disk_bytes_read", "serialize_s", "deserialize_s",
    "blocks_discarded", "blocks_not_stored", "blocks_lost", "mmap_released_bytes", "gc_frozen_puts",
    # tiers, asynchronous eviction and prefetch
    "bytes_moved_between_tiers", "blocks_moved_down", "blocks_moved_up", "sync_evictions", "async_evictions",
    "eviction_failures", "blocks_prefetched", "bytes_prefetched", "prefetch_scans",
    # a task's second read of the block it read last, served from the value it holds
    "task_rereads",
)


class BlockId(NamedTuple):
    """One partition of one dataset: Spark's ``rdd_<dataset>_<split>``. A named tuple, so
    hashing and comparing (every store and policy keys dicts by it, on every access) run
    in C: a frozen dataclass's generated ``__hash__`` was a quarter of the ``lineage``
    policy's time."""

    dataset_id: int
    split: int

    def __str__(self) -> str:
        return f"rdd_{self.dataset_id}_{self.split}"

    def __repr__(self) -> str:
        return f"BlockId(dataset_id={self.dataset_id}, split={self.split})"


class BlockStoreError(RuntimeError):
    """A block could be stored nowhere its level allows (e.g. it cannot be serialized
    for a serialized-only or disk-only level)."""


class CacheMetrics:
    """Counters of the cache, thread-safe; ``snapshot()`` for totals and differences."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._c: dict[str, float] = dict.fromkeys(METRIC_KEYS, 0)
        self._tier_hits: dict[str, int] = {}

    def add(self, **deltas: float) -> None:
        with self._lock:
            for k, v in deltas.items():
                self._c[k] += v

    def hit(self, tier: str) -> None:
        """A block served from ``tier`` (``memory`` or a disk tier's name)."""
        with self._lock:
            self._tier_hits[tier] = self._tier_hits.get(tier, 0) + 1

    def tier_hits(self) -> dict[str, int]:
        with self._lock:
            return dict(self._tier_hits)

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return dict(self._c)

    @staticmethod
    def diff(after: dict, before: dict) -> dict:
        return {k: after[k] - before.get(k, 0) for k in after}


@dataclass
class DatasetInfo:
    dataset_id: int
    label: Callable[[], str]
    level: Any
    serializer: Serializer
    num_partitions: int


_frozen = threading.Lock()


def gc_freeze() -> None:
    """The garbage-collector-free cache for Python records: ``gc.freeze()`` moves every live
    object, the newly cached records among them, to the permanent generation, which no
    collection walks (measured: a gen-2 collection over 2M cached records fell from 0.55 s
    to 4 microseconds). The cost: cyclic garbage that exists at that moment is kept until
    the next ``gc_unfreeze`` (on unpersist and at stop); objects freed by reference
    counting are freed as usual."""
    with _frozen:
        gc.freeze()


def gc_unfreeze() -> None:
    with _frozen:
        gc.unfreeze()


def _readonly(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.flags.writeable:
        view = value.view()
        view.flags.writeable = False
        return view
    return value


def _owned(value: Any) -> Any:
    """A value that holds its own memory: an ndarray viewing a memory-mapped file is
    copied, so that caching it in memory really moves it into RAM."""
    if isinstance(value, np.ndarray):
        base = value
        while base is not None:
            if isinstance(base, (mmap.mmap, np.memmap, pa.Buffer)):
                return np.array(value)
            base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return value


class BlockManager:
    """See the module's docstring. ``disk`` is one store or a stack of tiers;
    ``async_eviction`` starts the background writer that keeps memory use between the
    ``watermarks`` (fractions of the memory manager's total), and a put short of room
    waits at most ``async_wait_s`` for it before evicting synchronously. Call ``close()``
    to stop the writer (the Context does, on stop)."""

    def __init__(self, memory, disk: "DiskStore | TieredStore", policy: Policy, serializer: Serializer | None = None,
                 events: EventBus | None = None, regions: "RegionStore | None" = None,
                 mmap_memory: int | None = None, gc_free: bool = True, async_eviction: bool = False,
                 watermarks: tuple[float, float] = DEFAULT_WATERMARKS, async_wait_s: float = 1.0) -> None:
        self.memory = memory
        self.disk = disk if isinstance(disk, TieredStore) else TieredStore.single(disk)
        self.regions = regions
        self.mmap_memory = mmap_memory
        self.gc_free = gc_free
        self._mapped_lru: "OrderedDict[BlockId, int]" = OrderedDict()  # blocks read through maps, oldest first
        self._mapped_lock = threading.Lock()
        self.policy = policy
        self.serializer = get_serializer(serializer)
        self.events = events or EventBus()
        self.memory_store = MemoryStore()
        self.metrics = CacheMetrics()
        self._datasets: dict[int, DatasetInfo] = {}
        self._locks: defaultdict = defaultdict(threading.RLock)
        self._locks_guard = threading.Lock()
        self.disk.post = self.events.post
        self.disk.count = self.metrics.add
        self.writer = EvictionWriter(self, evicting=async_eviction, watermarks=watermarks)
        self._prefetching = type(policy).prefetch_candidates is not Policy.prefetch_candidates
        self._smallest_on_disk = 0  # the smallest disk block at the last prefetch scan
        # After a scan that found nothing to prefetch, the next ones wait (1, 2, 4 ... 64
        # served blocks) unless free memory grows or a stage is planned: a scan is linear in
        # the blocks on disk, and a policy holding free memory for a stage's own puts says
        # "nothing" on every served block of that stage.
        self._scan_skip = 0
        self._scan_backoff = 1
        self._scan_free = 0
        memory.set_evictor(self._evict)
        if async_eviction:
            memory.set_reclaimer(self.writer, async_wait_s)

    def close(self) -> None:
        """Stops the background writer (joined; a block it was writing stays in memory)."""
        if self.memory._reclaimer is self.writer:
            self.memory.set_reclaimer(None)
        self.writer.stop()

    # -- registration -----------------------------------------------------------------------
    def register(self, dataset_id: int, label: Callable[[], str], level: Any,
                 serializer: "str | Serializer | None", num_partitions: int) -> None:
        ser = get_serializer(serializer) if serializer is not None else self.serializer
        self._datasets[dataset_id] = DatasetInfo(dataset_id, label, level, ser, num_partitions)

    def unregister(self, dataset_id: int) -> int:
        """Removes every block of the dataset from every store; returns how many."""
        info = self._datasets.pop(dataset_id, None)
        removed = 0
        with self.memory.lock:
            for bid, entry in self.memory_store.items():
                if bid.dataset_id == dataset_id:
                    self.memory_store.remove(bid)
                    self.policy.record_remove(bid)
                    self.memory.release_storage(entry.size)
                    removed += 1
        for bid, _ in self.disk.items():
            if bid.dataset_id == dataset_id:
                self.disk.remove(bid)
                removed += 1
        if self.regions is not None:
            removed += self.regions.remove_dataset(dataset_id)  # the whole region at once
            with self._mapped_lock:
                for bid in [b for b in self._mapped_lru if b.dataset_id == dataset_id]:
                    del self._mapped_lru[bid]
        if info is not None and info.level.deserialized and self.gc_free:
            gc_unfreeze()
        with self._locks_guard:
            for bid in [b for b in self._locks if b.dataset_id == dataset_id]:
                del self._locks[bid]
        if info is not None:
            self.events.post("DatasetUnpersisted", dataset_id=dataset_id, name=info.label(), blocks=removed)
        return removed

    def info(self, dataset_id: int) -> DatasetInfo | None:
        return self._datasets.get(dataset_id)

    def _lock(self, bid: BlockId) -> threading.RLock:
        with self._locks_guard:
            return self._locks[bid]

    # -- the read path ----------------------------------------------------------------------
    def get_or_compute(self, block_id: BlockId, level: Any, compute: Callable[[], Any]) -> Any:
        """The partition's value: from memory, from disk, or computed and stored."""
        info = self._datasets.get(block_id.dataset_id)
        if info is None or level is None or not level.is_valid:
            return compute()
        value = self._get_or_compute(block_id, level, info, compute)
        if self._prefetching:
            self._maybe_prefetch()
        return value

    def _get_or_compute(self, block_id: BlockId, level: Any, info: DatasetInfo, compute: Callable[[], Any]) -> Any:
        with self._lock(block_id):
            value = self._get_memory(block_id)
            if value is not _MISS:
                return value
            if level.use_disk:
                value = self._get_disk(block_id, info, count_hit=True)
                if value is not _MISS:
                    return value
            self.metrics.add(misses=1)
            self.events.post("BlockAccess", block=str(block_id), dataset_id=block_id.dataset_id,
                             split=block_id.split, result="miss")
            value = compute()
            where = self._put(block_id, value, info)
            if where == "disk" and level.use_memory and not level.mmap and self.policy.recache_after_spill:
                # Spark's getOrElseUpdate reads the block it just spilled back through
                # getLocalValues, which tries to cache it in memory again.
                again = self._get_disk(block_id, info, count_hit=False)
                if again is not _MISS:
                    return again
            return _readonly(value) if where in ("memory", "disk") else value

    def _get_memory(self, bid: BlockId) -> Any:
        with self.memory.lock:
            entry = self.memory_store.get(bid)
            if entry is None:
                return _MISS
            self.policy.record_access(bid, "memory")
        self.metrics.add(memory_hits=1)
        self.metrics.hit("memory")
        self.events.post("BlockAccess", block=str(bid), dataset_id=bid.dataset_id, split=bid.split,
                         result="memory", bytes=entry.size)
        if entry.deserialized:
            return _readonly(entry.value)
        return _readonly(self._deserialize(entry.data(), entry.serializer, bid))

    def _get_disk(self, bid: BlockId, info: DatasetInfo, count_hit: bool) -> Any:
        if info.level.mmap:
            return self._get_mapped(bid, info)
        if bid not in self.disk:
            return _MISS
        try:
            payload, ser_name, tier = self.disk.read(bid)
            value = self._deserialize(payload, ser_name, bid)
        except (BlockUnavailable, SerializationError) as exc:
            self.disk.remove(bid)
            self.metrics.add(blocks_lost=1)
            self.events.post("BlockLost", block=str(bid), dataset_id=bid.dataset_id, split=bid.split,
                             reason=str(exc), action="recompute from lineage")
            return _MISS
        self.metrics.add(disk_bytes_read=payload.nbytes, **({"disk_hits": 1} if count_hit else {}))
        if count_hit:
            self.metrics.hit(tier)
            self.policy.record_access(bid, "disk")
            self.events.post("BlockAccess", block=str(bid), dataset_id=bid.dataset_id, split=bid.split,
                             result="disk", bytes=payload.nbytes, tier=tier)
            if tier != self.disk.tiers[0].name:
                self.disk.promote(bid, payload, ser_name)  # up one tier if it has room; never evicts
        if info.level.use_memory and not count_hit:
            self._recache(bid, info, value, payload, ser_name, evict=True)  # Spark's read-back after a spill
        elif info.level.use_memory and self.policy.promote(bid, payload.nbytes):
            self._recache(bid, info, value, payload, ser_name, evict=self.policy.evict_to_promote)
        return _readonly(value)

    def _get_mapped(self, bid: BlockId, info: DatasetInfo) -> Any:
        """A block of a mapped level: served by mapping its extent, no deserialization and
        never re-cached in memory (the page cache is its memory part)."""
        regions = self.regions
        if regions is None or bid not in regions:
            return _MISS
        decode0 = regions.stats()["decode_s"]
        try:
            value = regions.get(bid)
        except BlockUnavailable as exc:
            self.metrics.add(blocks_lost=1)
            self.events.post("BlockLost", block=str(bid), dataset_id=bid.dataset_id, split=bid.split,
                             reason=str(exc), action="recompute from lineage")
            return _MISS
        entry = regions.entry(bid)
        size = entry.length if entry is not None else 0
        self.metrics.add(disk_hits=1, deserialize_s=regions.stats()["decode_s"] - decode0)
        self.metrics.hit("mapped")  # the region store: outside the tiers
        self.policy.record_access(bid, "disk")
        self.events.post("BlockAccess", block=str(bid), dataset_id=bid.dataset_id, split=bid.split,
                         result="disk", bytes=size, mapped=True)
        self._bound_mapped_pages(bid, size)
        return value

    def _bound_mapped_pages(self, bid: BlockId, size: int) -> None:
        """Keeps the page cache held by recently read mapped blocks under ``mmap_memory``:
        the oldest blocks' pages are released (madvise/fadvise DONTNEED) first."""
        if self.mmap_memory is None or self.regions is None:
            return
        released = 0
        with self._mapped_lock:
            self._mapped_lru.pop(bid, None)
            self._mapped_lru[bid] = size
            total = sum(self._mapped_lru.values())
            victims = []
            while total > self.mmap_memory and len(self._mapped_lru) > 1:
                old, n = self._mapped_lru.popitem(last=False)
                victims.append(old)
                total -= n
        for old in victims:
            released += self.regions.release_pages(old)
        if released:
            self.metrics.add(mmap_released_bytes=released)

    @staticmethod
    def _memory_entry(info: DatasetInfo, value: Any, payload: memoryview, ser_name: str) -> MemoryEntry:
        """The memory form, at the dataset's level, of a block read from disk."""
        level = info.level
        if level.deserialized:
            value = _owned(value)  # a large block was loaded as views of its file's mapping
            return MemoryEntry(value, estimate_size(value), True)
        if level.off_heap:
            return MemoryEntry(off_heap_buffer([payload], payload.nbytes), payload.nbytes, False, ser_name, True)
        return MemoryEntry(bytearray(payload), payload.nbytes, False, ser_name)  # its own copy, in memory

    def _recache(self, bid: BlockId, info: DatasetInfo, value: Any, payload: memoryview, ser_name: str,
                 evict: bool = True) -> None:
        if not evict and self._room() < payload.nbytes:
            return  # no room without evicting: stay on disk (checked before copying anything)
        entry = self._memory_entry(info, value, payload, ser_name)
        if self._store_in_memory(bid, entry, evict=evict):
            self.metrics.add(blocks_recached=1, bytes_recached=entry.size)
            self.events.post("BlockRecached", block=str(bid), dataset_id=bid.dataset_id, bytes=entry.size)

    # -- the write path -----------------------------------------------------------------------
    def _put(self, bid: BlockId, value: Any, info: DatasetInfo) -> str:
        """Stores a computed block; returns where: ``memory``, ``disk`` or ``none``."""
        level = info.level
        frames = None
        if level.use_memory:
            try:
                if level.deserialized:
                    value = _owned(value)
                    entry = MemoryEntry(value, estimate_size(value), True)
                else:
                    frames, size, ser = self._serialize(value, info, bid)
                    blob = off_heap_buffer(frames, size) if level.off_heap else join_frames(frames, size)
                    entry = MemoryEntry(blob, size, False, ser.name, level.off_heap)
            except SerializationError as exc:
                raise BlockStoreError(self._ser_message(bid, info, exc)) from exc
            if self.policy.admit(bid, entry.size) and self._store_in_memory(bid, entry):
                self.events.post("BlockStored", block=str(bid), dataset_id=bid.dataset_id, where="memory",
                                 bytes=entry.size)
                if entry.deserialized and self.gc_free and isinstance(entry.value, list):
                    gc_freeze()
                    self.metrics.add(gc_frozen_puts=1)
                return "memory"
            if not level.use_disk:
                self.metrics.add(blocks_not_stored=1)
                self.events.post("BlockNotStored", block=str(bid), dataset_id=bid.dataset_id,
                                 reason="no room in memory", bytes=entry.size)
                return "none"
        if level.mmap:
            return "disk" if self._write_mapped(bid, value, info) else "none"
        try:
            if frames is None:
                frames, size, ser = self._serialize(value, info, bid)
        except SerializationError as exc:
            if not level.deserialized:  # no level but a serialized one can hold this block
                raise BlockStoreError(self._ser_message(bid, info, exc)) from exc
            # MEMORY_AND_DISK with no room in memory: the task keeps its value, uncached.
            self.metrics.add(blocks_not_stored=1)
            reason = self._ser_message(bid, info, exc)
            self.events.post("BlockNotStored", block=str(bid), dataset_id=bid.dataset_id, reason=reason)
            warnings.warn(f"strataflow: block {bid} not cached: {reason}", RuntimeWarning, stacklevel=2)
            return "none"
        return "disk" if self._write_disk(bid, frames, size, ser.name) else "none"

    def _store_in_memory(self, bid: BlockId, entry: MemoryEntry, evict: bool = True) -> bool:
        with self.memory.lock:
            if bid in self.memory_store:
                return True
            if not self.memory.acquire_storage(entry.size, bid, evict=evict):
                return False
            if bid in self.memory_store:  # put by the prefetcher while this put waited for room
                self.memory.release_storage(entry.size)
                return True
            self.memory_store.put(bid, entry)
            self.policy.record_access(bid, "put")
            self.writer.kick(bid)
            return True

    def _write_mapped(self, bid: BlockId, value: Any, info: DatasetInfo) -> bool:
        """Writes a block once in the zero-copy mapped layout (the region store)."""
        if self.regions is None:
            raise BlockStoreError(f"dataset {info.label()}: level {info.level.name} needs a region store")
        t0 = time.perf_counter()
        try:
            entry = self.regions.put(bid, value)
        except SerializationError as exc:
            if not info.level.use_memory:
                raise BlockStoreError(self._ser_message(bid, info, exc)) from exc
            self.metrics.add(blocks_not_stored=1)
            self.events.post("BlockNotStored", block=str(bid), dataset_id=bid.dataset_id,
                             reason=self._ser_message(bid, info, exc))
            return False
        except OSError as exc:  # DiskFull or an unwritable directory
            self.metrics.add(blocks_not_stored=1)
            reason = f"cannot write block to its region: {exc}"
            self.events.post("BlockNotStored", block=str(bid), dataset_id=bid.dataset_id, reason=reason)
            warnings.warn(f"strataflow: block {bid} not cached: {reason}", RuntimeWarning, stacklevel=2)
            return False
        self.metrics.add(disk_bytes_written=entry.length, serialize_s=time.perf_counter() - t0)
        return True

    def _write_disk(self, bid: BlockId, frames: list, size: int, ser_name: str) -> bool:
        try:
            entry = self.disk.put(bid, frames, size, ser_name)
        except OSError as exc:  # DiskFull, or an unwritable cache directory
            self.metrics.add(blocks_not_stored=1)
            reason = f"cannot write block to disk: {exc}"
            self.events.post("BlockNotStored", block=str(bid), dataset_id=bid.dataset_id, reason=reason)
            warnings.warn(f"strataflow: block {bid} not cached: {reason}", RuntimeWarning, stacklevel=2)
            return False
        self.metrics.add(disk_bytes_written=entry.size)
        self._smallest_on_disk = 0  # a smaller block may be on disk now: the next prefetch scan looks
        return True

    # -- eviction (called by the memory manager, under its lock) -----------------------------
    def _evict(self, space: int, for_block: Any) -> int:
        busy = self.writer.inflight()  # being written by the background writer: not ours to drop
        sizes = self.memory_store.sizes(busy)
        victims = [v for v in self.policy.select_victims(space, for_block, sizes) or [] if v in sizes]
        freed = sum(self._drop(bid) for bid in victims)
        if victims:
            self.metrics.add(sync_evictions=len(victims))
        return freed

    # -- asynchronous eviction and prefetch (the background writer's thread) -----------------
    def _async_candidates(self, exclude: "set | tuple") -> dict:
        """Blocks the writer may evict: in memory, of a tiered disk level (not memory-only:
        that would lose them; not mapped: the region store writes those on the task's thread)."""
        with self.memory.lock:
            out = {}
            for bid, e in self.memory_store.items():
                info = self._datasets.get(bid.dataset_id)
                if info is not None and info.level.use_disk and not info.level.mmap and bid not in exclude:
                    out[bid] = e.size
            return out

    def _write_for_eviction(self, bid: BlockId, entry: MemoryEntry) -> None:
        """Writes a memory block's disk copy (the writer's thread, no lock held). Raises on
        any failure; the block is still in memory then."""
        info = self._datasets.get(bid.dataset_id)
        if info is None or bid in self.disk:
            return
        if entry.deserialized:
            frames, size, ser = self._serialize(entry.value, info, bid)
            ser_name = ser.name
        else:
            frames, size, ser_name = [entry.data()], entry.size, entry.serializer
        written = self.disk.put(bid, frames, size, ser_name)
        self._smallest_on_disk = 0
        self.metrics.add(disk_bytes_written=written.size)

    def _finish_async_drop(self, bid: BlockId, entry: MemoryEntry) -> None:
        """Releases a written block's memory if it is still the entry that was written; a
        disk copy of a block unpersisted meanwhile is removed."""
        with self.memory.lock:
            done = self.memory_store.get(bid) is entry
            if done:
                self.memory_store.remove(bid)
                self.policy.record_remove(bid)
                self.memory.release_storage(entry.size)
            elif bid.dataset_id not in self._datasets:
                self.disk.remove(bid)
        if done:
            self.metrics.add(blocks_dropped=1, bytes_dropped=entry.size, async_evictions=1)
            self.events.post("BlockDropped", block=str(bid), dataset_id=bid.dataset_id, bytes=entry.size,
                             to="disk", mode="async")

    def _room(self) -> int:
        """Free memory a promotion or prefetch may take without evicting: with asynchronous
        eviction on, the headroom the writer keeps free is not room (a block promoted into
        it would be written out again at once: promotion thrash under the writer)."""
        writer = getattr(self, "writer", None)
        headroom = 0
        if writer is not None and writer.evicting and writer.failed is None:
            headroom = int(self.memory.total * (1 - writer.high))
        return self.memory.free - headroom

    def rescan_prefetch(self) -> None:
        """A new stage is planned: the next served block may prefetch again at once."""
        self._scan_skip, self._scan_backoff, self._scan_free = 0, 1, 0

    def _maybe_prefetch(self) -> None:
        """Asks the policy which disk blocks to load into free memory, and queues them for
        the background thread (the task goes on at once)."""
        with self.memory.lock:
            free = self.memory.free
            if free <= 0 or free < self._smallest_on_disk:
                return  # no disk block fits: skip the scan (one per served block otherwise)
            if self._scan_skip > 0 and free <= self._scan_free:
                self._scan_skip -= 1  # the last scan found nothing and no memory was freed since
                return
            on_disk = {}
            for bid, e in self.disk.items():
                info = self._datasets.get(bid.dataset_id)
                if (info is not None and info.level.use_memory and not info.level.mmap
                        and bid not in self.memory_store):
                    on_disk[bid] = e.size
            if not on_disk:
                return
            self._smallest_on_disk = min(on_disk.values())
            wanted = [b for b in self.policy.prefetch_candidates(free, on_disk) or [] if b in on_disk]
            self.metrics.add(prefetch_scans=1)
            if wanted:
                self._scan_skip, self._scan_backoff, self._scan_free = 0, 1, 0
            else:
                self._scan_skip, self._scan_free = self._scan_backoff, free
                self._scan_backoff = min(64, self._scan_backoff * 2)
        if wanted:
            self.writer.prefetch(wanted)

    def _prefetch(self, bid: BlockId) -> bool:
        """Loads one disk block into free memory without evicting anything; skipped when a
        task is reading it now (it will cache it itself if the policy says so)."""
        info = self._datasets.get(bid.dataset_id)
        if info is None or not info.level.use_memory or info.level.mmap:
            return False
        lock = self._lock(bid)
        if not lock.acquire(blocking=False):
            return False
        try:
            entry = self.disk.entry(bid)
            if bid in self.memory_store or entry is None or self._room() < entry.size:
                return False
            try:
                payload, ser_name, tier = self.disk.read(bid)
                value = self._deserialize(payload, ser_name, bid)
            except (BlockUnavailable, SerializationError):
                return False  # the next read finds it bad, posts BlockLost and recomputes
            mem = self._memory_entry(info, value, payload, ser_name)
            if not self._store_in_memory(bid, mem, evict=False):
                return False
            self.metrics.add(blocks_prefetched=1, bytes_prefetched=mem.size, disk_bytes_read=payload.nbytes)
            self.events.post("BlockPrefetched", block=str(bid), dataset_id=bid.dataset_id, bytes=mem.size, tier=tier)
            return True
        finally:
            lock.release()

    def _drop(self, bid: BlockId) -> int:
        """Spark's dropFromMemory: to disk if the level allows and it is not there yet."""
        entry = self.memory_store.remove(bid)
        if entry is None:
            return 0
        self.policy.record_remove(bid)
        self.memory.release_storage(entry.size)
        info = self._datasets.get(bid.dataset_id)
        to = "discarded"
        if info is not None and info.level.mmap:
            if (self.regions is not None and bid in self.regions) or self._write_mapped(bid, entry.value, info):
                to = "disk"  # written once in the mapped layout; served by mapping from now on
        elif info is not None and info.level.use_disk:
            if bid in self.disk:
                to = "disk"
            else:
                try:
                    if entry.deserialized:
                        frames, size, ser = self._serialize(entry.value, info, bid)
                        ser_name = ser.name
                    else:
                        frames, size, ser_name = [entry.data()], entry.size, entry.serializer
                    if self._write_disk(bid, frames, size, ser_name):
                        to = "disk"
                except SerializationError as exc:
                    self.events.post("BlockNotStored", block=str(bid), dataset_id=bid.dataset_id,
                                     reason=self._ser_message(bid, info, exc))
        self.metrics.add(blocks_dropped=1, bytes_dropped=entry.size,
                         **({"blocks_discarded": 1} if to == "discarded" else {}))
        self.events.post("BlockDropped", block=str(bid), dataset_id=bid.dataset_id, bytes=entry.size, to=to)
        return entry.size

    # -- serialization ----------------------------------------------------------------------------
    def _serialize(self, value: Any, info: DatasetInfo, bid: BlockId) -> tuple[list, int, Serializer]:
        ser = info.serializer.for_value(value)
        t0 = time.perf_counter()
        try:
            frames = ser.dumps(value)
        except SerializationError:
            raise
        except Exception as exc:  # pickle raises many kinds (PicklingError, TypeError, AttributeError)
            raise SerializationError(f"{type(exc).__name__}: {exc}") from exc
        size = sum(memoryview(f).nbytes for f in frames)
        self.metrics.add(serialize_s=time.perf_counter() - t0)
        return frames, size, ser

    def _deserialize(self, data: memoryview, ser_name: str, bid: BlockId) -> Any:
        t0 = time.perf_counter()
        try:
            value = SERIALIZERS[ser_name].loads(data)
        except SerializationError:
            raise
        except Exception as exc:
            raise SerializationError(f"{ser_name} cannot load block {bid}: {exc}") from exc
        self.metrics.add(deserialize_s=time.perf_counter() - t0)
        return value

    @staticmethod
    def _ser_message(bid: BlockId, info: DatasetInfo, exc: Exception) -> str:
        return (f"dataset {info.label()}: serializer {info.serializer.name!r} cannot serialize block {bid} "
                f"(level {info.level.name}): {exc}")

    # -- status ----------------------------------------------------------------------------------
    def tier_bytes_of(self, dataset_id: int) -> dict[str, int]:
        """Bytes of the dataset's blocks on each disk tier (mapped levels: not tiered)."""
        return {name: sum(e.size for b, e in items if b.dataset_id == dataset_id)
                for name, items in self.disk.items_by_tier().items()}

    def tier_bytes(self) -> dict[str, int]:
        """Bytes held in memory and on each disk tier, fastest first."""
        return {"memory": self.memory.storage_used, **{t.name: t.used for t in self.disk.tiers}}

    def blocks_of(self, dataset_id: int) -> tuple[dict, dict]:
        """Sizes of the dataset's blocks in memory and on disk."""
        with self.memory.lock:
            mem = {b.split: e.size for b, e in self.memory_store.items() if b.dataset_id == dataset_id}
        disk = {b.split: e.size for b, e in self.disk.items() if b.dataset_id == dataset_id}
        if self.regions is not None:
            disk.update({b.split: e.length for b, e in self.regions.entries() if b.dataset_id == dataset_id})
        return mem, disk

    def layout_of(self, dataset_id: int) -> str:
        """How a mapped dataset's blocks are laid out: zero-copy kinds, or the pickle
        fallback (plain Python records are loaded, not mapped)."""
        if self.regions is None:
            return ""
        kinds = {(e.kind, e.zero_copy) for b, e in self.regions.entries() if b.dataset_id == dataset_id}
        return ", ".join(sorted(f"{k}{'' if z else ' (pickle fallback: loaded, not mapped)'}" for k, z in kinds))

    def datasets(self) -> list[DatasetInfo]:
        return list(self._datasets.values())

