"""The block manager: the one call through which a task gets a dataset's partition.

    get_or_compute(block_id, level, compute, held)
      -> the task's own last read (``task_reads.py``: served from the value it holds)
      -> memory hit                         (policy.record_access "memory")
      -> else disk hit; the policy decides whether the block is re-cached in memory
      -> else, when the task was told another executor holds it (``peer``), read from
         there: its file, or fetched from its memory (``peer_blocks.py``), not cached here
      -> else compute from lineage and put at the level: the memory manager reserves the
         bytes and the policy names victims, which drop to disk (disk-capable levels) or
         are discarded; a block with no room in memory goes to disk or is not cached
      -> every step counts in ``metrics`` and posts a ``Block*`` event

Guarantees, each tested:
- A persisted block is never lost silently: a missing or corrupt block file posts ``BlockLost``
  and the partition is recomputed; a block that cannot be written (disk full, value that cannot
  be serialized) is not cached, with ``BlockNotStored`` and a warning, unless no level can hold
  it, in which case the task fails naming the dataset and the serializer.
- Accounted storage never exceeds the memory manager's budget: every memory put reserves
  its bytes first, and a victim's bytes are released only when it has left memory.
- No disk I/O under the memory lock, which every memory hit takes. Eviction is in two phases
  (``select`` under the lock marks the victims, which stay in memory and readable; ``drop``
  serializes and writes them with the lock released, then removes each one still the entry it
  chose). Synchronous and asynchronous (``eviction_writer.py``) eviction share phases and marks.
- Batches handed out from the cache are read-only; copy the array to modify it.

A task holds the value it was handed after its block is evicted (freed when the task
drops it): the process may exceed the budget by the running tasks' blocks (``parallelism``).

Below memory sit the disk tiers (``tiers.py``: fastest first; one ``disk`` tier when none
are configured). Mapped levels keep their region store, outside the tiers, its page cache
bounded by ``page_cache.MappedPageBound``. The manager owns the headroom an asynchronous
writer keeps (the policy's ``reserve``); the writer also runs the prefetches the policy names.
A value mapped from the store's input cache is never copied to disk (``backed.py``).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Callable

from strataflow.metrics import EventBus
from strataflow.storage.auto_level import AutoLevels, DiskCosts
from strataflow.storage.blocks.block import MISS, BlockId, BlockStoreError, DatasetInfo
from strataflow.storage.blocks.codec import BlockCodec
from strataflow.storage.cache_metrics import METRIC_KEYS, CacheMetrics
from strataflow.storage.cost_clock import from_environment
from strataflow.storage.tier_store import BlockUnavailable, StackedStore
from strataflow.storage.disk.disk_writes import DiskWriter
from strataflow.storage.eviction import Eviction, Victim
from strataflow.storage.eviction_writer import DEFAULT_WATERMARKS, EvictionWriter
from strataflow.storage.gc_free import gc_freeze, gc_unfreeze
from strataflow.storage.memory.split import MemorySplit
from strataflow.storage.memory.store import MemoryEntry, MemoryStore, join_frames, memory_form, off_heap_buffer, owned, readonly
from strataflow.storage.mapped.page_cache import MappedPageBound
from strataflow.storage.peer_blocks import Fetch, PeerBlock, read_peer, serve_peer
from strataflow.storage.backed import take as take_backed
from strataflow.storage.shared_blocks import SharedBlocks, read_shared, write_shared
from strataflow.storage.policies import Policy, Promotion
from strataflow.storage.blocks.serde import SerializationError, Serializer, get_serializer
from strataflow.storage.blocks.sizing import estimate_size
from strataflow.storage.task_reads import HeldBlock
from strataflow.storage.disk.tiers import TieredStore

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.storage.mapped.region_store import RegionStore

__all__ = ["BlockId", "BlockManager", "CacheMetrics", "DatasetInfo", "BlockStoreError", "Victim", "METRIC_KEYS"]


class BlockManager:
    """See the module's docstring. ``disk`` is one store or a stack of tiers;
    ``async_eviction`` starts the background writer that keeps memory use between the
    ``watermarks`` (fractions of the memory manager's total, validated by the caller), and
    a put short of room waits at most ``async_wait_s`` for it before evicting
    synchronously. Call ``close()`` to stop the writer (the Context does, on stop)."""

    def __init__(self, memory, disk: "StackedStore | TieredStore", policy: Policy, serializer: Serializer | None = None,
                 events: EventBus | None = None, regions: "RegionStore | None" = None,
                 mmap_memory: int | None = None, gc_free: bool = True, async_eviction: bool = False,
                 watermarks: tuple[float, float] = DEFAULT_WATERMARKS, async_wait_s: float = 1.0,
                 split: tuple[float, float] | None = None) -> None:
        self.memory = memory
        self.disk = disk if isinstance(disk, TieredStore) else TieredStore.single(disk)
        self.regions = regions
        self.gc_free = gc_free
        self.policy = policy
        self.serializer = get_serializer(serializer)
        self.events = events or EventBus()
        self.memory_store = MemoryStore()
        self.metrics = CacheMetrics()
        self.codec = BlockCodec(self.metrics)
        self.mapped_pages = MappedPageBound(  # out of the process; the page cache is the kernel's
            (lambda b: regions.release_pages(b, drop_cached=False)) if regions is not None else None,
                                            0 if split is not None else mmap_memory)
        self._datasets: dict[int, DatasetInfo] = {}
        self._locks: defaultdict = defaultdict(threading.RLock)
        self._locks_guard = threading.Lock()
        self.disk.post = self.events.post
        self.disk.count = self.metrics.add
        self.writes = DiskWriter(self.disk, regions, self.codec, self.metrics, self.events, on_write=self._disk_grew)
        #: where the seconds AUTO and the split weigh come from: the wall clock, or the
        #: costs a test declared (``cost_clock.py``)
        self.clock = from_environment()
        self.writes.clock = self.clock
        #: AUTO datasets' facts and choices; the disk costs are timed on every write and read
        self.auto = AutoLevels(DiskCosts(self.disk.tiers[0].bandwidth), self.events.post, self.metrics.add,
                               mapped_limit=lambda: self.mapped_pages.limit)
        self.writes.costs = self.auto.costs
        self.writes.on_auto_spill = self.auto.written
        #: the dynamic memory split (``split``: bounds of the mapped share), or None (fixed)
        self.split: MemorySplit | None = None
        if split is not None and regions is not None:
            self.split = MemorySplit(memory, self.mapped_pages, memory.total, split, self._miss_prior,
                                     self.events.post, self.metrics.add,
                                     spill_s_per_byte=lambda: sum(self.auto.costs.per_byte("serialized")))
        self.eviction = Eviction(memory, self.memory_store, policy, self._datasets, self.writes, self.metrics,
                                 self.events, headroom=self.headroom, auto=self.auto)
        self.writer = EvictionWriter(self.eviction, self, memory, evicting=async_eviction, watermarks=watermarks)
        #: how a block in another executor's memory is fetched (None: there are no peers)
        self.fetch_peer: Fetch | None = None
        #: where ``StorageLevel.STORE`` keeps blocks (``shared_blocks.py``; None: the disk tiers)
        self.shared: SharedBlocks | None = None
        self.policy.reserve = self.headroom()  # the manager owns it (see policies/base.py)
        if self.split is not None:
            self.eviction.left_memory = self.split.left_memory
        memory.set_evictor(self.eviction)
        if async_eviction:
            memory.set_reclaimer(self.writer, async_wait_s)

    def close(self) -> None:
        """Stops the background writer (joined; a block it was writing stays in memory)."""
        self.memory.set_reclaimer(None)
        self.writer.stop()

    # -- registration -----------------------------------------------------------------------
    def register(self, dataset_id: int, label: Callable[[], str], level: Any,
                 serializer: "str | Serializer | None", num_partitions: int) -> None:
        ser = get_serializer(serializer) if serializer is not None else self.serializer
        auto = self.auto.register(dataset_id) if getattr(level, "auto", False) else None
        self._datasets[dataset_id] = DatasetInfo(dataset_id, label, level, ser, num_partitions, auto=auto)

    def unregister(self, dataset_id: int) -> int:
        """Removes every block of the dataset from every store; returns how many."""
        info = self._datasets.pop(dataset_id, None)
        self.auto.forget(dataset_id)
        removed = 0
        with self.memory.lock:
            for bid, entry in self.memory_store.items():
                if bid.dataset_id == dataset_id:
                    self.memory_store.remove(bid)
                    self.policy.record_remove(bid)
                    self.memory.release_storage(entry.size)
                    removed += 1
        self.policy.forget_dataset(dataset_id)  # its knowledge of the blocks: unbounded otherwise
        for bid, _ in self.disk.items():
            if bid.dataset_id == dataset_id:
                self.disk.remove(bid)
                removed += 1
        if self.shared is not None and info is not None and info.level.shared:
            removed += self.shared.remove_dataset(dataset_id)
        if self.regions is not None:
            removed += self.regions.remove_dataset(dataset_id)  # the whole region at once
            self.mapped_pages.forget_dataset(dataset_id)
        if self.split is not None:
            self.split.forget_dataset(dataset_id)
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

    def datasets(self) -> list[DatasetInfo]:
        return list(self._datasets.values())

    def plan(self, blocks: list) -> None:
        """The persisted blocks the stage being submitted will read, in task order: for a
        policy that plans; and the prefetch back-off starts over."""
        if self.policy.plans:
            self.policy.plan(blocks)
            self.writer.rescan()

    def stage_started(self) -> None:
        """A stage begins here: rate-limited warnings start over, and the memory split is
        revised at stage boundaries, as TeraCache resizes between stages (and within one
        after enough misses)."""
        self.writes.warnings.new_stage()
        if self.split is not None:
            self.split.evaluate()

    def _miss_prior(self, side: str) -> float:
        """Seconds per byte of a miss before the split measured one: a serialized read
        from the tiers (heap) or a mapped read from the device (mapped)."""
        return self.auto.costs.per_byte("serialized" if side == "heap" else "mapped")[1]

    def headroom(self) -> int:
        """Free memory that is not free for promotions and prefetches: what the writer
        keeps free while it evicts asynchronously (0 otherwise, or once it failed)."""
        return self.writer.headroom()

    def room(self) -> int:
        """Free memory a promotion or prefetch may take without evicting."""
        return self.memory.free - self.headroom()

    def _disk_grew(self) -> None:
        self.writer.disk_grew()

    def _lock(self, bid: BlockId) -> threading.RLock:
        with self._locks_guard:
            return self._locks[bid]

    # -- the read path ----------------------------------------------------------------------
    def get_or_compute(self, block_id: BlockId, level: Any, compute: Callable[[], Any],
                       held: HeldBlock | None = None, peer: PeerBlock | None = None) -> Any:
        """The partition's value: from the task's last read, memory, disk, another
        executor (``peer``, where the driver said it is), or computed and stored. ``held``
        is the reading task's (see ``task_reads.py``)."""
        info = self._datasets.get(block_id.dataset_id)
        if info is None or level is None or not level.is_valid:
            return compute()
        if held is not None and held.serves(block_id):
            self.metrics.add(task_rereads=1)
            return held.value
        value = self._get_or_compute(block_id, level, info, compute, peer)
        if held is not None:
            held.hold(block_id, value)
        if self.policy.prefetches:
            self.writer.maybe_prefetch()
        if self.split is not None and self.split.due:
            self.split.evaluate()
        return value

    def _get_or_compute(self, block_id: BlockId, level: Any, info: DatasetInfo, compute: Callable[[], Any],
                        peer: PeerBlock | None = None) -> Any:
        with self._lock(block_id):
            value = self._get_memory(block_id)
            if value is not MISS:
                return value
            if level.use_disk:
                value = self._get_disk(block_id, info, count_hit=True)
                if value is not MISS:
                    return value
            if peer is not None:
                value = self._get_peer(block_id, peer)
                if value is not MISS:
                    return value
            self.metrics.add(misses=1)
            self.events.post("BlockAccess", block=str(block_id), dataset_id=block_id.dataset_id,
                             split=block_id.split, result="miss")
            t0 = self.clock.now()
            value = compute()
            if info.auto is not None:  # its own copy now, timed: a view of a mapped source
                value = owned(value)  # costs its copy out of the page cache (``_put`` would copy it)
            compute_s = self.clock.now() - t0
            nbytes = None
            if info.auto is not None:  # the choice, from this block's cost and size
                nbytes = estimate_size(value)
                self.auto.computed(info, value, nbytes, compute_s, looped=self.policy.rereads(block_id),
                                   split=block_id.split)
            if self.split is not None and (left := self.split.heap_size(block_id)) is not None:
                self.split.miss("heap", block_id, left, compute_s)  # recomputed: it had left memory
            where = self._put(block_id, value, info, nbytes)
            level = info.level
            if where == "disk" and level.use_memory and not level.mmap and self.policy.recache_after_spill:
                # Spark's getOrElseUpdate reads the block it just spilled back through
                # getLocalValues, which tries to cache it in memory again.
                again = self._get_disk(block_id, info, count_hit=False)
                if again is not MISS:
                    return again
            return readonly(value) if where in ("memory", "disk") else value

    def _get_memory(self, bid: BlockId) -> Any:
        with self.memory.lock:
            entry = self.memory_store.get(bid)
            if entry is None:
                return MISS
            self.policy.record_access(bid, "memory")
        self.metrics.add(memory_hits=1)
        self.metrics.hit("memory")
        if self.split is not None:
            self.split.hit("heap", entry.size)
        self.events.post("BlockAccess", block=str(bid), dataset_id=bid.dataset_id, split=bid.split,
                         result="memory", bytes=entry.size)
        if entry.deserialized:
            return readonly(entry.value)
        return readonly(self.codec.decode(entry.data(), entry.serializer, bid))

    def _get_disk(self, bid: BlockId, info: DatasetInfo, count_hit: bool) -> Any:
        if info.mapped:
            return self._get_mapped(bid)
        if info.level.shared and self.shared is not None:
            return read_shared(self, bid, info)
        if bid not in self.disk:
            return MISS
        try:
            t0 = time.perf_counter()
            payload, ser_name, tier = self.disk.read(bid)
            disk_s = time.perf_counter() - t0
            value = self.codec.decode(payload, ser_name, bid)
            read_s = self.clock.io("serialized", "read", payload.nbytes, time.perf_counter() - t0)
            self.auto.costs.observe("serialized", "read", payload.nbytes, read_s)
            if info.auto is not None and count_hit:
                self.auto.costs.served("serialized", payload.nbytes, read_s)
                self.auto.read(bid.dataset_id, bid.split, payload.nbytes, read_s)
        except (BlockUnavailable, SerializationError) as exc:
            self.disk.remove(bid)
            self._lost(bid, exc)
            return MISS
        self.metrics.add(disk_bytes_read=payload.nbytes, disk_read_s=disk_s, **({"disk_hits": 1} if count_hit else {}))
        if count_hit and self.split is not None and info.level.use_memory:
            self.split.miss("heap", bid, self.split.heap_size(bid) or payload.nbytes, read_s)
        if count_hit:
            self.metrics.hit(tier)
            self.policy.record_access(bid, "disk")
            self.events.post("BlockAccess", block=str(bid), dataset_id=bid.dataset_id, split=bid.split,
                             result="disk", bytes=payload.nbytes, tier=tier)
            if tier != self.disk.tiers[0].name:
                self.disk.promote(bid, payload, ser_name)  # up one tier if it has room; never evicts
        if info.level.use_memory:
            decision = Promotion.MAY_EVICT if not count_hit else self.policy.promote(bid, payload.nbytes)
            if decision:  # without a hit: Spark's read-back after a spill, which evicts
                self._recache(bid, info, value, payload, ser_name, evict=decision is Promotion.MAY_EVICT)
        return readonly(value)

    def _get_mapped(self, bid: BlockId) -> Any:
        """A block of a mapped level: served by mapping its extent, no deserialization and
        never re-cached in memory (the page cache is its memory part)."""
        regions = self.regions
        if regions is None or bid not in regions:
            return MISS
        pages = self.mapped_pages.state(bid) if self.split is not None else "new"  # only the split asks
        t0 = time.perf_counter()
        try:
            value, decode_s = regions.get_timed(bid)
        except BlockUnavailable as exc:
            self._lost(bid, exc)
            return MISS
        entry = regions.entry(bid)
        size = entry.length if entry is not None else 0
        read_s = time.perf_counter() - t0
        if pages == "released":  # read from the device again: what the cost model weighs
            read_s = self.clock.io("mapped", "read", size, read_s)
        if pages != "new":
            if pages == "held":
                self.split.hit("mapped", size)
            else:  # its pages were released: read from the device again
                self.split.miss("mapped", bid, size, read_s)
                self.auto.costs.observe("mapped", "read", size, read_s)
        info = self._datasets.get(bid.dataset_id)
        if info is not None and info.auto is not None:  # every read, warm ones too: measured, not assumed
            served_s = read_s if pages == "released" or not self.clock.declared else 0.0
            self.auto.costs.served("mapped", size, served_s)
            self.auto.read(bid.dataset_id, bid.split, size, served_s)
        self.metrics.add(disk_hits=1, deserialize_s=decode_s)
        self.metrics.hit("mapped")  # the region store: outside the tiers
        self.policy.record_access(bid, "disk")
        self.events.post("BlockAccess", block=str(bid), dataset_id=bid.dataset_id, split=bid.split,
                         result="disk", bytes=size, mapped=True)
        released = self.mapped_pages.touched(bid, size)
        if released:
            self.metrics.add(mmap_released_bytes=released)
        return value

    def _get_peer(self, bid: BlockId, peer: PeerBlock) -> Any:
        """The block from another executor, or MISS (``peer_blocks.read_peer``)."""
        return read_peer(self, bid, peer)

    def serve_peer(self, bid: BlockId) -> Any:
        """The block for another executor's task, or MISS (``peer_blocks.serve_peer``)."""
        return serve_peer(self, bid)

    def _lost(self, bid: BlockId, exc: Exception) -> None:
        self.metrics.add(blocks_lost=1)
        self.events.post("BlockLost", block=str(bid), dataset_id=bid.dataset_id, split=bid.split,
                         reason=str(exc), action="recompute from lineage")

    def _recache(self, bid: BlockId, info: DatasetInfo, value: Any, payload: memoryview, ser_name: str,
                 evict: bool = True) -> None:
        if not evict and self.room() < self.writes.in_memory(bid, payload.nbytes):
            return  # no room without evicting: stay on disk (checked before copying anything)
        entry = memory_form(info.level, value, payload, ser_name)
        if self._store_in_memory(bid, entry, evict=evict):
            self.metrics.add(blocks_recached=1, bytes_recached=entry.size)
            self.events.post("BlockRecached", block=str(bid), dataset_id=bid.dataset_id, bytes=entry.size)

    def prefetch(self, bid: BlockId) -> bool:
        """Loads one disk block into free memory without evicting anything (the writer's
        thread); skipped when a task is reading it now (it caches it itself if the policy
        says so). A bad block is left for the next read to find, report and recompute."""
        info = self._datasets.get(bid.dataset_id)
        if info is None or not info.level.use_memory or info.mapped:
            return False
        lock = self._lock(bid)
        if not lock.acquire(blocking=False):
            return False
        try:
            entry = self.disk.entry(bid)
            if bid in self.memory_store or entry is None or self.room() < self.writes.in_memory(bid, entry.size):
                return False
            try:
                t0 = time.perf_counter()
                payload, ser_name, tier = self.disk.read(bid)
                disk_s = time.perf_counter() - t0
                value = self.codec.decode(payload, ser_name, bid)
            except (BlockUnavailable, SerializationError):
                return False
            mem = memory_form(info.level, value, payload, ser_name)
            if not self._store_in_memory(bid, mem, evict=False):
                # read and decoded for nothing (its objects took more room than estimated, or
                # the room went to another block meanwhile): counted, since nothing else shows it
                self.metrics.add(prefetches_discarded=1, disk_bytes_read=payload.nbytes, disk_read_s=disk_s)
                return False
            self.metrics.add(blocks_prefetched=1, bytes_prefetched=mem.size, disk_bytes_read=payload.nbytes,
                             disk_read_s=disk_s)
            self.events.post("BlockPrefetched", block=str(bid), dataset_id=bid.dataset_id, bytes=mem.size, tier=tier)
            return True
        finally:
            lock.release()

    def prefetch_offer(self) -> tuple[list, int | None]:
        """The policy's prefetch candidates for the room there is now, and the size in
        memory of the smallest block on disk (None: no block a prefetch could load)."""
        with self.memory.lock:
            on_disk = {}
            for bid, e in self.disk.items():
                info = self._datasets.get(bid.dataset_id)
                if (info is not None and info.level.use_memory and not info.mapped
                        and bid not in self.memory_store):
                    on_disk[bid] = self.writes.in_memory(bid, e.size)  # what it takes once read
            room = self.room()
        if not on_disk:
            return [], None
        self.metrics.add(prefetch_scans=1)
        wanted = [b for b in self.policy.prefetch_candidates(room, on_disk) or [] if b in on_disk]
        return wanted, min(on_disk.values())

    # -- the write path -----------------------------------------------------------------------
    def _put(self, bid: BlockId, value: Any, info: DatasetInfo, nbytes: int | None = None) -> str:
        """Stores a computed block; returns where: ``memory``, ``disk`` or ``none``.
        ``nbytes``: its estimated size, when the caller has it already."""
        level = info.level
        frames = None
        backed = take_backed(value)  # mapped from the store's input cache: never copied to disk
        if level.use_memory:
            try:
                if level.deserialized:
                    value = owned(value)
                    entry = MemoryEntry(value, estimate_size(value) if nbytes is None else nbytes, True, backed=backed)
                else:
                    frames, size, ser = self.codec.encode(value, info, bid)
                    blob = off_heap_buffer(frames, size) if level.off_heap else join_frames(frames, size)
                    entry = MemoryEntry(blob, size, False, ser.name, level.off_heap, backed=backed)
            except SerializationError as exc:
                raise BlockStoreError(self.codec.failure(bid, info, exc)) from exc
            if self.policy.admit(bid, entry.size) and self._store_in_memory(bid, entry):
                self.events.post("BlockStored", block=str(bid), dataset_id=bid.dataset_id, where="memory",
                                 bytes=entry.size)
                if entry.deserialized and self.gc_free and isinstance(entry.value, list):
                    gc_freeze()
                    self.metrics.add(gc_frozen_puts=1)
                return "memory"
            if self.split is not None:
                self.split.left_memory(bid, entry.size)  # no room: its reads are heap misses
            if not level.use_disk:
                self.writes.not_stored(bid, "no room in memory", warn=False, bytes=entry.size)
                return "none"
        if backed and (level.use_disk or level.mmap):
            return self.writes.not_copied(bid)
        if level.mmap:
            return "disk" if self.writes.write_mapped(bid, value, info) else "none"
        if level.shared and self.shared is not None:
            return write_shared(self, bid, value, info)
        mem_bytes = entry.size if level.use_memory and level.deserialized else None
        encoded = None if frames is None else (frames, size, ser.name)  # serialized for memory already
        return self.writes.write_value(bid, value, info, encoded, mem_bytes)

    def _store_in_memory(self, bid: BlockId, entry: MemoryEntry, evict: bool = True) -> bool:
        """Reserves the entry's bytes (evicting, if allowed, with the lock released while
        victims are written) and puts it; True if the block is in memory now."""
        with self.memory.lock:
            if bid in self.memory_store:
                return True
        if not self.memory.acquire_storage(entry.size, bid, evict=evict):
            return False
        with self.memory.lock:
            if bid in self.memory_store:  # put by the prefetcher while this put waited for room
                self.memory.release_storage(entry.size)
                return True
            self.memory_store.put(bid, entry)
            self.policy.record_access(bid, "put")
        self.writer.kick(bid)
        return True
