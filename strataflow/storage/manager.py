"""The block manager: the one call through which a task gets a dataset's partition.

A task never computes a parent partition directly: it calls
``BlockManager.get_or_compute(block_id, level, compute)``. In this first version no level
but ``StorageLevel.NONE`` exists yet, so the call computes from lineage and counts the
computation; the intermediate-data cache (memory and disk stores, policies) plugs in
behind this same call without touching the scheduler or the datasets.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["BlockId", "BlockManager"]


@dataclass(frozen=True, order=True)
class BlockId:
    """One partition of one dataset: Spark's ``rdd_<dataset>_<split>``."""

    dataset_id: int
    split: int

    def __str__(self) -> str:
        return f"rdd_{self.dataset_id}_{self.split}"


class BlockManager:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.computed = 0

    def get_or_compute(self, block_id: BlockId, level: Any, compute: Callable[[], Any]) -> Any:
        """The partition's value: served from the cache once there is one, else computed."""
        value = compute()
        with self._lock:
            self.computed += 1
        return value
