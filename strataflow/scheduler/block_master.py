"""The block-location master: which executor holds which cached block, and where.

Executors report, with every task outcome, where the persisted blocks the task touched
now live on them (memory, or disk: a tier or the mapped region store). The scheduler
asks it for a task's preferred executors (memory first, then disk: Spark's
PROCESS_LOCAL before NODE_LOCAL) and the planner for the blocks that are stored.
Locations are hints: a block evicted since its report is recomputed where the task runs,
and an executor lost forgets all of its blocks at once. A task placed away from its
blocks is told where they are (``peers``: a disk copy's file description, which any
executor of the machine can read, or the memory of the holder, which serves it).
"""

from __future__ import annotations

import threading
from typing import Iterable

from strataflow.storage.blocks.block import BlockId
from strataflow.storage.blocks.location import BlockLocation
from strataflow.storage.peer_blocks import PeerBlock

__all__ = ["BlockMaster"]


class BlockMaster:
    def __init__(self) -> None:
        self._where: dict[BlockId, dict[str, PeerBlock]] = {}
        self._lock = threading.Lock()

    def update(self, executor_id: str, blocks: Iterable[tuple]) -> None:
        """``blocks``: (block, ``memory`` or ``disk``, its disk copy's description or None)."""
        with self._lock:
            for bid, where, source in blocks:
                self._where.setdefault(bid, {})[executor_id] = PeerBlock(executor_id, where, source)

    def preferred(self, blocks: Iterable[BlockId]) -> list[str]:
        """Executors holding any of ``blocks``: those with one in memory first."""
        mem: dict[str, None] = {}
        disk: dict[str, None] = {}
        with self._lock:
            for bid in blocks:
                for eid, held in self._where.get(bid, {}).items():
                    (mem if held.where == BlockLocation.MEMORY else disk)[eid] = None
        return list(mem) + [e for e in disk if e not in mem]

    def splits(self, dataset_id: int) -> set[int]:
        """The splits of the dataset stored on some executor."""
        with self._lock:
            return {b.split for b in self._where if b.dataset_id == dataset_id}

    def executor_of(self, bid: BlockId) -> dict[str, str]:
        """Executor -> ``memory`` or ``disk``, for each executor holding the block."""
        with self._lock:
            return {eid: held.where for eid, held in self._where.get(bid, {}).items()}

    def peers(self, blocks: Iterable[BlockId], executor_id: str) -> dict[BlockId, PeerBlock] | None:
        """For a task placed on ``executor_id``: the blocks it will read that only other
        executors hold, each with the cheapest place to read it from (a disk copy, read
        straight from its file, before another executor's memory). None: nothing."""
        out: dict[BlockId, PeerBlock] = {}
        with self._lock:
            for bid in blocks:
                held = self._where.get(bid)
                if not held or executor_id in held:
                    continue
                out[bid] = min(held.values(), key=lambda h: h.source is None)
        return out or None

    def remove_dataset(self, dataset_id: int) -> None:
        with self._lock:
            for bid in [b for b in self._where if b.dataset_id == dataset_id]:
                del self._where[bid]

    def executor_lost(self, executor_id: str) -> None:
        with self._lock:
            for bid in list(self._where):
                held = self._where[bid]
                held.pop(executor_id, None)
                if not held:
                    del self._where[bid]
