"""``RDD``'s actions that return records or run functions for their effects: ``collect``,
``count``, ``first``, ``take*``, ``foreach*``, ``reduce``/``fold``/``aggregate`` and their
tree forms, the counts by value and key, ``collectAsMap``, ``lookup``.

A mixin of :class:`~strataflow.pyspark.rdd.RDD`, apart so that the jobs an RDD starts are
found in one place; PySpark's errors for an empty RDD (``ValueError``) are made here from
strataflow's ``EmptyDatasetError``.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from typing import Any, Callable, Iterator, TypeVar

from strataflow.dataset.actions import EmptyDatasetError
from strataflow.pyspark.rdd_group import RDDGroup


#: PySpark's bound on ``takeSample``'s num (``RDD.takeSample``: sys.maxsize less ten sigma)
MAX_SAMPLE = sys.maxsize - int(10 * math.sqrt(sys.maxsize))


T = TypeVar("T")
U = TypeVar("U")


class RDDActions(RDDGroup[T]):
    """Jobs that bring records (or their effects) to the driver (a mixin of ``RDD``)."""

    def collect(self) -> list[T]:
        """Every record, in partition order, as a list on the driver.

        >>> sc.parallelize([3, 1, 2], 2).collect()
        [3, 1, 2]
        """
        return self.dataset.collect()

    def collectWithJobGroup(self, groupId: str, description: str, interruptOnCancel: bool = False) -> list[T]:
        """``collect()`` in job group ``groupId`` (``setJobGroup`` then ``collect``).

        >>> sc.parallelize([1, 2]).collectWithJobGroup("report", "collect the totals")
        [1, 2]
        >>> len(sc.statusTracker().getJobIdsForGroup("report")) > 0
        True
        """
        self.ctx.setJobGroup(groupId, description, interruptOnCancel)
        return self.collect()

    def count(self) -> int:
        """The number of records.

        >>> sc.parallelize(range(10), 3).count()
        10
        """
        return self.dataset.count()

    def first(self) -> T:
        """The first record; ValueError (``RDD is empty``) when there is none, as in PySpark.

        >>> sc.parallelize([5, 6]).first()
        5
        """
        try:
            return self.dataset.first()
        except EmptyDatasetError:
            raise ValueError("RDD is empty") from None

    def take(self, num: int) -> list[T]:
        """The first ``num`` records, reading as few partitions as it can.

        >>> sc.parallelize(range(100), 10).take(3)
        [0, 1, 2]
        """
        return self.dataset.take(num)

    def top(self, num: int, key: Callable[[T], Any] | None = None) -> list[T]:
        """The ``num`` largest records (by ``key(record)`` when given), largest first.

        >>> sc.parallelize([5, 1, 4, 2]).top(2)
        [5, 4]
        """
        return self.dataset.top(num, key)

    def takeOrdered(self, num: int, key: Callable[[T], Any] | None = None) -> list[T]:
        """The ``num`` smallest records (by ``key(record)`` when given), smallest first.

        >>> sc.parallelize([5, 1, 4, 2]).takeOrdered(2)
        [1, 2]
        """
        return self.dataset.take_ordered(num, key)

    def takeSample(self, withReplacement: bool, num: int, seed: int | None = None) -> list[T]:
        """``num`` records drawn at random, reproducible for a seed.

        >>> picked = sc.parallelize(range(10)).takeSample(False, 3, seed=1)
        >>> len(picked), len(set(picked))
        (3, 3)
        """
        if isinstance(num, int) and num > MAX_SAMPLE:
            raise ValueError(f"Sample size cannot be greater than {MAX_SAMPLE}.")
        return self.dataset.take_sample(withReplacement, num, seed)

    def isEmpty(self) -> bool:
        """True when the RDD has no record (scans partitions only until it finds one).

        >>> sc.emptyRDD().isEmpty(), sc.parallelize([0]).isEmpty()
        (True, False)
        """
        return self.dataset.is_empty()

    def toLocalIterator(self, prefetchPartitions: bool = False) -> Iterator[T]:
        """The records, one partition's job at a time (the driver holds one partition, not the RDD).

        >>> list(sc.parallelize(range(5), 2).toLocalIterator())
        [0, 1, 2, 3, 4]
        """
        return self.dataset.to_local_iterator(prefetchPartitions)

    def foreach(self, f: Callable[[T], None]) -> None:
        """Calls ``f`` on every record on the executors, for its side effects.

        >>> acc = sc.accumulator(0)
        >>> sc.parallelize([1, 2, 3]).foreach(lambda x: acc.add(x))
        >>> acc.value
        6
        """
        self.dataset.foreach(f)

    def foreachPartition(self, f: Callable[[Iterator[T]], None]) -> None:
        """Calls ``f`` with an iterator over each partition's records, on the executors.

        >>> acc = sc.accumulator(0)
        >>> sc.parallelize(range(6), 3).foreachPartition(lambda it: acc.add(len(list(it))))
        >>> acc.value
        6
        """
        self.dataset.foreach_partition(f)

    def reduce(self, f: Callable[[T, T], T]) -> T:
        """``f`` folded over the records; ValueError (``Can not reduce() empty RDD``) when there are
        none.

        >>> sc.parallelize([1, 2, 3, 4], 2).reduce(lambda a, b: a + b)
        10
        """
        try:
            return self.dataset.reduce(f)
        except EmptyDatasetError:
            raise ValueError("Can not reduce() empty RDD") from None

    def treeReduce(self, f: Callable[[T, T], T], depth: int = 2) -> T:
        """``reduce`` whose partial results are combined in ``depth`` levels of tasks.

        >>> sc.parallelize(range(10), 4).treeReduce(lambda a, b: a + b)
        45
        """
        try:
            return self.dataset.tree_reduce(f, depth)
        except EmptyDatasetError:
            raise ValueError("Cannot reduce empty RDD.") from None

    def fold(self, zeroValue: T, op: Callable[[T, T], T]) -> T:
        """Folds each partition into ``zeroValue`` with ``op``, then the partitions' results.

        >>> sc.parallelize([1, 2, 3, 4], 2).fold(0, lambda a, b: a + b)
        10
        """
        return self.dataset.fold(zeroValue, op)

    def aggregate(self, zeroValue: U, seqOp: Callable[[U, T], U], combOp: Callable[[U, U], U]) -> U:
        """Folds each partition into ``zeroValue`` with ``seqOp``, then the partitions' results with
        ``combOp`` (``Dataset.aggregate``).

        >>> seq, comb = (lambda a, x: (a[0] + x, a[1] + 1)), (lambda a, b: (a[0] + b[0], a[1] + b[1]))
        >>> sc.parallelize([1, 2, 3, 4], 2).aggregate((0, 0), seq, comb)
        (10, 4)
        """
        return self.dataset.aggregate(zeroValue, seqOp, combOp)

    def treeAggregate(self, zeroValue: U, seqOp: Callable[[U, T], U], combOp: Callable[[U, U], U],
                      depth: int = 2) -> U:
        """``aggregate`` whose partial results are combined in ``depth`` levels of tasks.

        >>> sc.parallelize(range(10), 4).treeAggregate(0, lambda a, x: a + x, lambda a, b: a + b)
        45
        """
        return self.dataset.tree_aggregate(zeroValue, seqOp, combOp, depth)

    def countByValue(self) -> "defaultdict[T, int]":
        """How many times each distinct record occurs, as a ``defaultdict(int)``.

        >>> sorted(sc.parallelize([1, 2, 1, 1]).countByValue().items())
        [(1, 3), (2, 1)]
        """
        return defaultdict(int, self.dataset.count_by_value())

    def countByKey(self) -> "defaultdict[Any, int]":
        """How many pairs each key has, as a ``defaultdict(int)`` (as PySpark returns it).

        >>> sorted(sc.parallelize([("a", 1), ("b", 1), ("a", 1)]).countByKey().items())
        [('a', 2), ('b', 1)]
        """
        return defaultdict(int, self.dataset.count_by_key())

    def collectAsMap(self) -> dict:
        """The pairs as a dict (a later value of a repeated key wins).

        >>> sc.parallelize([("a", 1), ("b", 2)]).collectAsMap()
        {'a': 1, 'b': 2}
        """
        return self.dataset.collect_as_map()

    def reduceByKeyLocally(self, func: Callable[[Any, Any], Any]) -> dict:
        """``reduceByKey`` returned to the driver as a dict, without a shuffle.

        >>> sc.parallelize([("a", 1), ("b", 2), ("a", 3)]).reduceByKeyLocally(lambda x, y: x + y)
        {'a': 4, 'b': 2}
        """
        return self.dataset.reduce_by_key_locally(func)

    def lookup(self, key: Any) -> list:
        """The values of ``key`` (only one partition is read when the RDD has a partitioner).

        >>> sc.parallelize([("a", 1), ("b", 2), ("a", 3)]).lookup("a")
        [1, 3]
        """
        return self.dataset.lookup(key)
