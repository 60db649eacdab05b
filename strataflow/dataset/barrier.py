"""``Dataset.barrier()``: PySpark's RDDBarrier, for code that marks a stage as a barrier.

strataflow runs a barrier stage's tasks as ordinary tasks: it does not launch them all at
once nor offer a ``BarrierTaskContext.barrier()`` to synchronize them. Code that only
wraps its ``map_partitions`` in ``barrier()`` (to declare the intent) runs unchanged;
code that needs the tasks to meet must not rely on this."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from strataflow.dataset import Dataset

__all__ = ["BarrierDataset"]


class BarrierDataset:
    """The transformations a barrier stage offers (``map_partitions`` and
    ``map_partitions_with_index``), each returning an ordinary dataset."""

    def __init__(self, dataset: "Dataset") -> None:
        self.dataset = dataset

    def map_partitions(self, f: Callable[[Any], Any], preserves_partitioning: bool = False) -> "Dataset":
        return self.dataset.map_partitions(f, preserves_partitioning)

    def map_partitions_with_index(self, f: Callable[[int, Any], Any],
                                  preserves_partitioning: bool = False) -> "Dataset":
        return self.dataset.map_partitions_with_index(f, preserves_partitioning)
