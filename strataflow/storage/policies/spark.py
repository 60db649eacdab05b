"""``spark``: Apache Spark's block placement, reproduced as the baseline (Spark 2.x-4.x).

Each rule, and the Spark source it mirrors (core/src/main/scala/org/apache/spark/storage):

- LRU in access order: ``MemoryStore.entries`` is a ``LinkedHashMap(..., accessOrder =
  true)``, so every ``getValues``/``getBytes`` moves a block to the young end, and
  ``evictBlocksToFreeSpace`` walks from the old end.
- A block is never evicted to make room for another block of the same RDD:
  ``blockIsEvictable`` requires ``rddToAdd.isEmpty || rddToAdd != getRddId(blockId)``.
  When execution memory asks (``UnifiedMemoryManager.maybeGrowExecutionPool`` ->
  ``freeSpaceToShrinkPool`` -> ``evictBlocksToFreeSpace(None, ...)``), ``rddToAdd`` is
  empty and any block may go.
- All or nothing: victims are selected until they free enough; if they cannot, none is
  dropped (``if (freedMemory >= space) ... else 0L``).
- A dropped block of a disk-capable level is written to disk unless it is already there
  (``BlockManager.dropFromMemory``: ``if (level.useDisk && !diskStore.contains(blockId))``);
  otherwise it is discarded.
- Re-caching: a block read from disk for a memory-capable level is put back into memory
  (``BlockManager.getLocalValues`` -> ``maybeCacheDiskValuesInMemory`` /
  ``maybeCacheDiskBytesInMemory``), which evicts LRU blocks of other datasets.
- And right after ``doPutIterator`` spilled a block to disk, ``getOrElseUpdate`` reads it
  back through ``getLocalValues``, which tries the memory put again.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Mapping

from strataflow.storage.policies.base import Policy, Promotion

__all__ = ["SparkPolicy"]


class SparkPolicy(Policy):
    name = "spark"
    recache_after_spill = True

    def __init__(self) -> None:
        self._lru: OrderedDict = OrderedDict()

    def record_access(self, block_id: Any, where: str) -> None:
        if where in ("memory", "put"):
            self._lru[block_id] = None
            self._lru.move_to_end(block_id)

    def record_remove(self, block_id: Any) -> None:
        self._lru.pop(block_id, None)

    def promote(self, block_id: Any, size: int) -> Promotion:
        return Promotion.MAY_EVICT

    def sizes(self) -> dict[str, int]:
        return {"policy_lru": len(self._lru)}

    def select_victims(self, space: int, for_block: Any, entries: Mapping[Any, int]) -> list | None:
        rdd_to_add = getattr(for_block, "dataset_id", None)
        chosen, freed = [], 0
        for bid in self._lru:
            if freed >= space:
                break
            if bid not in entries:
                continue
            if rdd_to_add is None or getattr(bid, "dataset_id", None) != rdd_to_add:
                chosen.append(bid)
                freed += entries[bid]
        return chosen if freed >= space else None
