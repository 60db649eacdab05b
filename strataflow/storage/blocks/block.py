"""What the storage layer knows of a block: its id, its dataset's registration, and the
error raised when no store its level allows can hold it. Every other storage module
imports these; they import nothing of the storage layer themselves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from strataflow.storage.blocks.serde import Serializer

__all__ = ["BlockId", "BlockStoreError", "DatasetInfo", "MISS"]

#: "Not here": a read that found nothing (``None`` is a valid partition value).
MISS = object()


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


@dataclass
class DatasetInfo:
    """A persisted dataset as the block manager knows it: ids, not lineage (storage knows
    nothing of datasets beyond this)."""

    dataset_id: int
    label: Callable[[], str]
    level: Any  # for an AUTO dataset: the level chosen now (``auto_level.py``)
    serializer: Serializer
    num_partitions: int
    auto: Any = None  # an AUTO dataset's DatasetFacts

    @property
    def mapped(self) -> bool:
        """Whether the dataset's blocks leave memory for the mapped layout (an AUTO
        dataset's spill form is fixed by its first block, whatever it chooses now)."""
        return bool(self.level.mmap or (self.auto is not None and self.auto.zero_copy))

    @property
    def level_name(self) -> str:
        return f"AUTO:{self.level.name}" if self.auto is not None else self.level.name
