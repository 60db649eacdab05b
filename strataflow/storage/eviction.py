"""Eviction in two phases, so that no disk I/O happens under the memory lock.

Spark's ``MemoryStore.evictBlocksToFreeSpace`` drops its victims, serializing and writing
each to disk, while it holds the memory manager's lock; every memory hit takes that lock,
so a hit waits behind a disk write, and with more task slots that lock is the bottleneck.
Here:

1. ``select`` (under the memory lock): the policy names victims for the bytes wanted; each
   is *marked* with the entry it is now. A marked block stays in memory, readable and
   accounted (so the budget holds), and no other eviction may choose it.
2. ``write`` (no lock held): each victim's disk copy is written if its level has one
   (``disk_writes.DiskWriter.write_entry``).
3. ``release`` (under the lock again): the victim leaves memory and its bytes are freed,
   but only if it is still the entry marked. An unpersist in between wins, and a disk
   copy whose dataset is gone is removed; nothing is freed twice.

For a put of a block of a dataset AUTO drops, both selections see only the blocks that
are cheaper to get back (``cost_admission.py``); for every other put, all of them.

Synchronous eviction (the memory manager's ``Evictor``: ``select`` + ``drop``) and the
background writer (``eviction_writer.EvictionHandler``: ``select_for_writer``,
``write_victim``, ``release``, ``unmark``, ``eviction_failed``) share all three phases and
the marks, so the two never pick the same block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from strataflow.metrics import EventBus
from strataflow.storage.blocks.block import BlockId, DatasetInfo
from strataflow.storage.cache_metrics import CacheMetrics
from strataflow.storage.cost_admission import CostAdmission
from strataflow.storage.disk.disk_writes import DiskWriter
from strataflow.storage.memory.store import MemoryEntry, MemoryStore
from strataflow.storage.policies import Policy

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.storage.auto_level import AutoLevels

__all__ = ["Eviction", "Victim"]


@dataclass(frozen=True)
class Victim:
    """A block chosen for eviction, and the entry it was when chosen (the identity that
    ``release`` checks before it removes anything)."""

    block_id: BlockId
    entry: MemoryEntry


class Eviction:
    def __init__(self, memory: Any, store: MemoryStore, policy: Policy, datasets: Mapping[int, DatasetInfo],
                 writes: DiskWriter, metrics: CacheMetrics, events: EventBus, headroom: Callable[[], int],
                 auto: "AutoLevels | None" = None) -> None:
        self.memory, self.store, self.policy, self.datasets = memory, store, policy, datasets
        #: narrows the victims a cheap AUTO block may evict (``cost_admission.py``); None: no AUTO
        self.weigh = None if auto is None else CostAdmission(datasets, auto, writes.disk)
        if self.weigh is not None:  # told of each spill's bytes on disk per byte in memory
            writes.on_spill_sizes = self.weigh.spilled
        self.writes, self.metrics, self.events = writes, metrics, events
        self.headroom = headroom  # the block manager's: what the policy's reserve is
        self._marked: dict[BlockId, MemoryEntry] = {}  # chosen and being written (memory lock)
        #: told of each block that left memory and its size there (the memory split's evidence)
        self.left_memory: Callable[[BlockId, int], None] | None = None

    # -- phase 1, under the memory lock ------------------------------------------------------
    def select(self, space: int, for_block: Any) -> list[Victim]:
        """The policy's victims for ``space`` bytes for ``for_block`` (None: execution
        memory asks), among the blocks not marked already."""
        sizes = self.store.sizes(self._marked)
        if self.weigh is not None:
            sizes = self.weigh.victims_for(for_block, sizes)
        victims = self.policy.select_victims(space, for_block, sizes) or []
        if not victims and getattr(sizes, "excluded", False):
            self.metrics.add(auto_cost_bypasses=1)  # kept out: only dearer blocks could make room
        return self._mark(victims, sizes)

    def select_for_writer(self, need: int, for_block: Any) -> list[Victim]:
        """Victims the background writer may write, as if for the block put last (the
        policy's rules for a put hold), and at least one block when all or nothing names
        none. Only blocks of tiered disk levels: a memory-only block would be lost, a
        mapped one is written by the region store on the task's thread."""
        cands = {}
        for bid, e in self.store.items():
            info = self.datasets.get(bid.dataset_id)
            if info is not None and info.level.use_disk and not info.level.mmap and bid not in self._marked:
                cands[bid] = e.size
        if not cands or need <= 0:
            return []
        if self.weigh is not None:
            cands = self.weigh.victims_for(for_block, cands)
            if not cands:
                return []
        victims = self.policy.select_victims(min(need, sum(cands.values())), for_block, cands)
        if not victims:
            victims = self.policy.select_victims(min(cands.values()), for_block, cands)
        return self._mark(victims or [], cands)

    def _mark(self, bids: list, allowed: Mapping) -> list[Victim]:
        out = []
        for bid in bids:
            entry = self.store.get(bid)
            if entry is not None and bid in allowed and bid not in self._marked:
                self._marked[bid] = entry
                out.append(Victim(bid, entry))
        return out

    def unmark(self, victims: list[Victim]) -> None:
        """Victims not dropped after all (the writer stopped or failed): evictable again."""
        with self.memory.lock:
            for v in victims:
                if self._marked.get(v.block_id) is v.entry:
                    del self._marked[v.block_id]

    # -- phases 2 and 3 ------------------------------------------------------------------------
    def drop(self, victims: list[Victim]) -> int:
        """Synchronous eviction (lock not held): Spark's dropFromMemory for each victim;
        returns the bytes freed. Never raises: a victim that cannot be written is
        discarded, with ``BlockNotStored``."""
        if victims:
            self.metrics.add(sync_evictions=len(victims))
        return sum(self.release(v, self.write_victim(v)) for v in victims)

    def write_victim(self, victim: Victim, strict: bool = False) -> str:
        """``disk`` or ``discarded``; ``strict`` (the writer): a failure raises, and the
        block stays in memory."""
        info = self.datasets.get(victim.block_id.dataset_id)
        if info is None:
            return "discarded"  # unpersisted meanwhile: ``release`` finds it gone
        return self.writes.write_entry(victim.block_id, victim.entry, info, strict)

    def release(self, victim: Victim, to: str, mode: str | None = None) -> int:
        """Removes a written victim from memory if it is still the entry marked; returns
        the bytes freed. ``mode`` ``"async"``: the writer's (counted and reported so)."""
        bid, entry = victim.block_id, victim.entry
        with self.memory.lock:
            if self._marked.get(bid) is entry:
                del self._marked[bid]
            done = self.store.get(bid) is entry
            if done:
                self.store.remove(bid)
                self.policy.record_remove(bid)
                self.memory.release_storage(entry.size)
            elif to == "disk" and bid.dataset_id not in self.datasets:
                self.writes.disk.remove(bid)  # a copy nobody owns
                if self.writes.regions is not None:
                    self.writes.regions.remove(bid)
        if not done:
            return 0
        if self.left_memory is not None:
            self.left_memory(bid, entry.size)
        self.metrics.add(blocks_dropped=1, bytes_dropped=entry.size,
                         **({"blocks_discarded": 1} if to == "discarded" else {}),
                         **({"async_evictions": 1} if mode == "async" else {}))
        self.events.post("BlockDropped", block=str(bid), dataset_id=bid.dataset_id, bytes=entry.size, to=to,
                         **({"mode": mode} if mode else {}))
        return entry.size

    def eviction_failed(self, bid: Any, reason: str) -> None:
        """The writer gave up (its block stays in memory): synchronous eviction from now
        on, and its headroom is free memory again."""
        self.policy.reserve = self.headroom()
        self.metrics.add(eviction_failures=1)
        self.events.post("EvictionFailed", block=str(bid), dataset_id=getattr(bid, "dataset_id", None),
                         reason=reason, kept="in memory", fallback="synchronous eviction")
