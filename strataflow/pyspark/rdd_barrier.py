"""``RDDBarrier``: what ``rdd.barrier()`` returns, PySpark's ``mapPartitions`` of a barrier
stage. strataflow runs a barrier stage's tasks as ordinary tasks (no gang scheduling).

Apart from ``rdd.py`` because it is a class of its own in PySpark's API; it wraps the
RDD it came from and does not import the RDD class at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Generic, Iterable, Iterator, TypeVar

from strataflow.pyspark.partition_iterators import on_index_iterator, on_iterator

if TYPE_CHECKING:
    from strataflow.pyspark.rdd import RDD

__all__ = ["RDDBarrier"]

T = TypeVar("T")
U = TypeVar("U")


class RDDBarrier(Generic[T]):
    """``rdd.barrier()``: ``mapPartitions`` of a barrier stage. strataflow runs its tasks as
    ordinary tasks (no gang scheduling, no ``BarrierTaskContext.barrier()``)."""

    def __init__(self, rdd: RDD[T]) -> None:
        self.rdd = rdd

    def __repr__(self) -> str:
        """PySpark's (its class's default repr), so output compared with PySpark's matches,
        as ``RDD``'s repr is Spark's."""
        return f"<pyspark.core.rdd.RDDBarrier object at {id(self):#x}>"

    def mapPartitions(self, f: Callable[[Iterator[T]], Iterable[U]],
                      preservesPartitioning: bool = False) -> RDD[U]:
        """``f`` over each partition's iterator, as ``RDD.mapPartitions``; the tasks run as
        ordinary tasks, not launched together.

        >>> sc.parallelize(range(6), 2).barrier().mapPartitions(lambda it: [sum(it)]).collect()
        [3, 12]
        """
        native = self.rdd.dataset.barrier().map_partitions(on_iterator(f), preservesPartitioning)
        return self.rdd._wrap(native)

    def mapPartitionsWithIndex(self, f: Callable[[int, Iterator[T]], Iterable[U]],
                               preservesPartitioning: bool = False) -> RDD[U]:
        """``f(index, iterator)`` over each partition, as ``RDD.mapPartitionsWithIndex``; the
        tasks run as ordinary tasks, not launched together.

        >>> sc.parallelize(range(4), 2).barrier().mapPartitionsWithIndex(lambda i, it: [(i, list(it))]).collect()
        [(0, [0, 1]), (1, [2, 3])]
        """
        native = self.rdd.dataset.barrier().map_partitions_with_index(on_index_iterator(f), preservesPartitioning)
        return self.rdd._wrap(native)
