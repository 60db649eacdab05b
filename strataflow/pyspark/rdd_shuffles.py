"""``RDD``'s shuffling transformations on whole records: ``distinct``, ``intersection``,
``subtract``, ``groupBy``, the sorts and ``partitionBy``.

A mixin of :class:`~strataflow.pyspark.rdd.RDD`, apart from the pair functions
(``rdd_pairs.py``) whose partition-count rule (``cogroup_partitions``) ``intersection`` and
``subtract`` share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

from strataflow.shuffle.partitioner import portable_hash
from strataflow.pyspark.rdd_pairs import cogroup_partitions
from strataflow.pyspark.resultiterable import ResultIterable
from strataflow.pyspark.rdd_group import RDDGroup

if TYPE_CHECKING:
    from strataflow.pyspark.rdd import RDD


T = TypeVar("T")


class RDDShuffles(RDDGroup[T]):
    """Transformations that move records between partitions (a mixin of ``RDD``)."""

    def distinct(self, numPartitions: int | None = None) -> "RDD[T]":
        """Each distinct record once, through a shuffle.

        >>> sorted(sc.parallelize([1, 2, 1, 3]).distinct().collect())
        [1, 2, 3]
        """
        return self._wrap(self.dataset.distinct(numPartitions))

    def intersection(self, other: "RDD[T]") -> "RDD[T]":
        """The distinct records found in both RDDs.

        >>> sorted(sc.parallelize([1, 2, 2, 3]).intersection(sc.parallelize([2, 3, 4])).collect())
        [2, 3]
        """
        n = cogroup_partitions((self, other), None, partitioned=False)
        return self._wrap(self.dataset.intersection(other.dataset, n))

    def subtract(self, other: "RDD[T]", numPartitions: int | None = None) -> "RDD[T]":
        """The records not in ``other`` (duplicates kept).

        >>> sorted(sc.parallelize([1, 2, 2, 3]).subtract(sc.parallelize([3])).collect())
        [1, 2, 2]
        """
        n = cogroup_partitions((self, other), numPartitions, partitioned=False)
        return self._wrap(self.dataset.subtract(other.dataset, n))

    def groupBy(self, f: Callable[[T], Any], numPartitions: int | None = None,
                partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple[Any, ResultIterable[T]]]":
        """``(f(record), ResultIterable of records)`` for every distinct ``f(record)``.

        >>> sorted((k, sorted(v)) for k, v in sc.parallelize(range(5)).groupBy(lambda x: x % 2).collect())
        [(0, [0, 2, 4]), (1, [1, 3])]
        """
        return self.keyBy(f).groupByKey(numPartitions, partitionFunc)

    def sortBy(self, keyfunc: Callable[[T], Any], ascending: bool = True,
               numPartitions: int | None = None) -> "RDD[T]":
        """The records sorted by ``keyfunc(record)``.

        >>> sc.parallelize(["ccc", "a", "bb"]).sortBy(len).collect()
        ['a', 'bb', 'ccc']
        """
        return self._wrap(self.dataset.sort_by(keyfunc, ascending, numPartitions))

    def sortByKey(self, ascending: bool = True, numPartitions: int | None = None,
                  keyfunc: Callable[[Any], Any] = lambda x: x) -> "RDD[tuple]":
        """The pairs sorted by ``keyfunc(key)``, through a range-partitioning shuffle.

        >>> sc.parallelize([(3, "c"), (1, "a"), (2, "b")]).sortByKey(ascending=False).collect()
        [(3, 'c'), (2, 'b'), (1, 'a')]
        """
        return self._wrap(self.dataset.sort_by_key(ascending, numPartitions, keyfunc))

    def partitionBy(self, numPartitions: int | None = None, partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple]":
        """Pairs moved to partition ``partitionFunc(key) % numPartitions``.

        >>> sc.parallelize([(1, "a"), (2, "b"), (3, "c")]).partitionBy(2).glom().collect()
        [[(2, 'b')], [(1, 'a'), (3, 'c')]]
        """
        return self._wrap(self.dataset.partition_by(numPartitions, partitionFunc))

    def repartitionAndSortWithinPartitions(self, numPartitions: int | None = None,
                                           partitionFunc: Callable[[Any], int] = portable_hash,
                                           ascending: bool = True,
                                           keyfunc: Callable[[Any], Any] = lambda x: x) -> "RDD[tuple]":
        """Pairs partitioned by ``partitionFunc`` and sorted by key within each partition, in one
        shuffle.

        >>> pairs = sc.parallelize([(3, "c"), (1, "a"), (4, "d"), (2, "b")])
        >>> pairs.repartitionAndSortWithinPartitions(2, lambda k: k % 2).glom().collect()
        [[(2, 'b'), (4, 'd')], [(1, 'a'), (3, 'c')]]
        """
        return self._wrap(self.dataset.repartition_and_sort_within_partitions(numPartitions, partitionFunc,
                                                                              ascending, keyfunc))
