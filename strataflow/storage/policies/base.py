"""The policy interface: what the block manager asks a cache policy.

A policy sees every access and decides four things; everything else (stores, bytes,
locks, disk writes) is the block manager's. Keeping the interface this small is what
lets each policy (Spark's LRU, the paper's fix, and later adaptive promotion or
future-aware eviction) be one small module.

- ``record_access(block_id, where)``: a hit in memory or on disk, or a new block put in
  memory (``where`` is ``"memory"``, ``"disk"`` or ``"put"``).
- ``record_remove(block_id)``: a block left memory (dropped, unpersisted).
- ``admit(block_id, size)``: may a newly computed block enter memory at all?
- ``promote(block_id, size)``: may a block just read from disk be put back in memory
  ("re-caching")? ``evict_to_promote`` says whether that may evict other blocks.
- ``recache_after_spill``: after a put that found no room in memory and went to disk,
  does the reading task try memory again (Spark's ``getOrElseUpdate``)?
- ``select_victims(space, for_block, entries)``: blocks to drop from memory to free
  ``space`` bytes for ``for_block`` (None: execution memory is asking), or None to drop
  nothing.
- ``plan(accesses)``: the scheduler's knowledge of the future: the persisted blocks the
  stage being submitted will read, in task order (a policy may ignore it).
- ``prefetch_candidates(free, on_disk)``: disk blocks to read into memory ahead of the
  tasks that need them, using only ``free`` bytes (never evicting); ``on_disk`` maps each
  block on disk to its size. The block manager does the reads off the critical path.
"""

from __future__ import annotations

import abc
from typing import Any, Mapping, Sequence

__all__ = ["Policy"]


class Policy(abc.ABC):
    name = "base"
    recache_after_spill = False
    evict_to_promote = True  # may a promotion (re-cache) evict other blocks?

    def record_access(self, block_id: Any, where: str) -> None:
        """Called on every memory hit, disk hit and memory put."""

    def record_remove(self, block_id: Any) -> None:
        """Called when a block leaves memory."""

    def admit(self, block_id: Any, size: int) -> bool:
        return True

    def promote(self, block_id: Any, size: int) -> bool:
        return False

    @abc.abstractmethod
    def select_victims(self, space: int, for_block: Any, entries: Mapping[Any, int]) -> list | None:
        """Blocks (keys of ``entries``, which maps each block in memory to its size) to
        drop so that ``space`` bytes are freed; None or [] to drop nothing."""

    def plan(self, accesses: Sequence[Any]) -> None:
        """The persisted blocks a stage about to run will read, in task order."""

    def prefetch_candidates(self, free: int, on_disk: Mapping[Any, int]) -> list:
        """Blocks of ``on_disk`` to move into ``free`` bytes of memory now; [] for none."""
        return []
