"""Set operations between datasets: ``subtract``, ``intersection``, ``cartesian``.

``subtract`` and ``intersection`` are cogroups by record (one shuffle, the records as
keys), as in Spark; ``cartesian`` needs no shuffle: its partition ``(i, j)`` pairs
partition i of one dataset with partition j of the other, so both are read in one task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strataflow.common.batch import rows_list
from strataflow.lineage import NarrowDependency, Node

if TYPE_CHECKING:
    from strataflow.dataset import Dataset
    from strataflow.executor.task import TaskContext

__all__ = ["SetOps", "CartesianNode"]


class CartesianNode(Node):
    """Partition ``i * len(b) + j`` holds every pair of partition i of ``a`` and j of ``b``."""

    def __init__(self, a: "Dataset", b: "Dataset") -> None:
        nb = b.num_partitions
        self.width = nb
        self.deps = [NarrowDependency(a, parents_of=lambda s: [s // nb]),
                     NarrowDependency(b, parents_of=lambda s: [s % nb])]
        self.num_partitions = a.num_partitions * nb

    def compute(self, split: int, tc: "TaskContext") -> list:
        left = rows_list(self.deps[0].parent.iterator(split // self.width, tc))
        right = rows_list(self.deps[1].parent.iterator(split % self.width, tc))
        return [(x, y) for x in left for y in right]

    def describe(self) -> str:
        return f"{self.deps[0].parent.num_partitions} x {self.width}"


def _mark(x: Any) -> tuple:
    return (x, True)


class SetOps:
    """Set operations, a mixin of Dataset."""

    def subtract(self, other: "Dataset", num_partitions: int | None = None) -> "Dataset":
        """Records of this dataset not in ``other`` (duplicates kept, as Spark's).

        >>> sorted(ctx.parallelize([1, 2, 2, 3]).subtract(ctx.parallelize([3])).collect())
        [1, 2, 2]
        """
        return self.map(_mark).subtract_by_key(other.map(_mark), num_partitions).keys()

    def intersection(self, other: "Dataset", num_partitions: int | None = None) -> "Dataset":
        """Distinct records found in both datasets.

        >>> sorted(ctx.parallelize([1, 2, 2, 3]).intersection(ctx.parallelize([2, 3, 4])).collect())
        [2, 3]
        """
        return (self.map(_mark).cogroup(other.map(_mark), num_partitions=num_partitions)
                .filter(lambda kv: bool(kv[1][0]) and bool(kv[1][1])).keys())

    def cartesian(self, other: "Dataset") -> "Dataset":
        """Every pair ``(a, b)`` of a record of this dataset and one of ``other``.

        >>> sorted(ctx.parallelize([1, 2]).cartesian(ctx.parallelize(["x", "y"])).collect())
        [(1, 'x'), (1, 'y'), (2, 'x'), (2, 'y')]
        """
        if other.ctx is not self.ctx:
            raise ValueError("cartesian: datasets belong to different contexts")
        return self._derive(CartesianNode(self, other), "cartesian")
