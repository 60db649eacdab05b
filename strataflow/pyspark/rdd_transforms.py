"""``RDD``'s narrow transformations: ``map``, ``flatMap``, the partition functions, ``filter``,
``union``, ``zip``, ``coalesce``, ``sample``, ``pipe``, ``barrier``...: the ones that need no
keyed shuffle.

A mixin of :class:`~strataflow.pyspark.rdd.RDD`, apart so that the RDD's methods are found
by what they do; each delegates to the dataset method of the same meaning, PySpark's
partition functions (iterator in) wrapped as strataflow's (partition value in).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence, TypeVar

from strataflow.pyspark.partition_iterators import on_index_iterator, on_iterator
from strataflow.pyspark.rdd_barrier import RDDBarrier
from strataflow.pyspark.rdd_group import RDDGroup

if TYPE_CHECKING:
    from strataflow.pyspark.rdd import RDD


T = TypeVar("T")
U = TypeVar("U")


class RDDTransforms(RDDGroup[T]):
    """The transformations that keep records in place (a mixin of ``RDD``)."""

    def map(self, f: Callable[[T], U], preservesPartitioning: bool = False) -> "RDD[U]":
        """``f(record)`` for every record.

        >>> sc.parallelize([1, 2, 3]).map(lambda x: x * 10).collect()
        [10, 20, 30]
        """
        return self._wrap(self.dataset.map(f, preservesPartitioning))

    def flatMap(self, f: Callable[[T], Iterable[U]], preservesPartitioning: bool = False) -> "RDD[U]":
        """``f(record)`` returns an iterable; its items are the new RDD's records.

        >>> sc.parallelize(["a b", "c"]).flatMap(str.split).collect()
        ['a', 'b', 'c']
        """
        return self._wrap(self.dataset.flat_map(f, preservesPartitioning))

    def mapPartitions(self, f: Callable[[Iterator[T]], Iterable[U]],
                      preservesPartitioning: bool = False) -> "RDD[U]":
        """``f`` receives an iterator over each partition's records and returns an iterable of the new
        ones.

        >>> sc.parallelize(range(6), 2).mapPartitions(lambda it: [sum(it)]).collect()
        [3, 12]
        """
        return self._wrap(self.dataset.map_partitions(on_iterator(f), preservesPartitioning))

    def mapPartitionsWithIndex(self, f: Callable[[int, Iterator[T]], Iterable[U]],
                               preservesPartitioning: bool = False) -> "RDD[U]":
        """``f(index, iterator)`` on each partition (``mapPartitionsWithSplit`` is the old name).

        >>> sc.parallelize("abc", 3).mapPartitionsWithIndex(lambda i, it: [(i, x) for x in it]).collect()
        [(0, 'a'), (1, 'b'), (2, 'c')]
        """
        return self._wrap(self.dataset.map_partitions_with_index(on_index_iterator(f), preservesPartitioning))

    mapPartitionsWithSplit = mapPartitionsWithIndex

    def filter(self, f: Callable[[T], bool]) -> "RDD[T]":
        """The records for which ``f`` is true.

        >>> sc.parallelize(range(6)).filter(lambda x: x % 2 == 0).collect()
        [0, 2, 4]
        """
        return self._wrap(self.dataset.filter(f))

    def glom(self) -> "RDD[list[T]]":
        """Each partition becomes one record: the list of its records.

        >>> sc.parallelize(range(5), 2).glom().collect()
        [[0, 1], [2, 3, 4]]
        """
        return self._wrap(self.dataset.glom())

    def keyBy(self, f: Callable[[T], Any]) -> "RDD[tuple]":
        """``(f(record), record)`` pairs.

        >>> sc.parallelize(["apple", "bee"]).keyBy(len).collect()
        [(5, 'apple'), (3, 'bee')]
        """
        return self._wrap(self.dataset.key_by(f))

    def union(self, other: "RDD[U]") -> "RDD[T | U]":
        """The partitions of this RDD then of ``other`` (no shuffle, duplicates kept; also ``rdd +
        other``).

        >>> sc.parallelize([1, 2]).union(sc.parallelize([2, 3])).collect()
        [1, 2, 2, 3]
        """
        return self._wrap(self.dataset.union(other.dataset))

    def zip(self, other: "RDD[U]") -> "RDD[tuple[T, U]]":
        """``(record, other_record)`` pairs; partitions must hold equal record counts.

        >>> sc.parallelize([1, 2, 3], 2).zip(sc.parallelize("abc", 2)).collect()
        [(1, 'a'), (2, 'b'), (3, 'c')]
        """
        return self._wrap(self.dataset.zip(other.dataset))

    def zipWithIndex(self) -> "RDD[tuple[T, int]]":
        """``(record, index)`` with indices in partition order (a job counts the partitions first).

        >>> sc.parallelize("abc", 2).zipWithIndex().collect()
        [('a', 0), ('b', 1), ('c', 2)]
        """
        return self._wrap(self.dataset.zip_with_index())

    def zipWithUniqueId(self) -> "RDD[tuple[T, int]]":
        """``(record, id)`` with unique ids and no job: record j of partition i gets ``j * n + i``.

        >>> sc.parallelize("abc", 2).zipWithUniqueId().collect()
        [('a', 0), ('b', 1), ('c', 3)]
        """
        return self._wrap(self.dataset.zip_with_unique_id())

    def coalesce(self, numPartitions: int, shuffle: bool = False) -> "RDD[T]":
        """Fewer partitions: neighbours joined without a shuffle (with ``shuffle=True``, as
        ``repartition``).

        >>> sc.parallelize(range(6), 3).coalesce(1).glom().collect()
        [[0, 1, 2, 3, 4, 5]]
        """
        return self._wrap(self.dataset.coalesce(numPartitions, shuffle))

    def repartition(self, numPartitions: int) -> "RDD[T]":
        """Exactly ``numPartitions`` partitions, through a shuffle.

        >>> sc.parallelize(range(6), 1).repartition(3).getNumPartitions()
        3
        """
        return self._wrap(self.dataset.repartition(numPartitions))

    def sample(self, withReplacement: bool, fraction: float, seed: int | None = None) -> "RDD[T]":
        """A random sample, reproducible for a seed: each record kept with probability ``fraction``
        (Poisson copies with replacement).

        >>> sample = sc.parallelize(range(1000)).sample(False, 0.1, seed=7)
        >>> sample.collect() == sample.collect(), 50 < sample.count() < 150
        (True, True)
        """
        return self._wrap(self.dataset.sample(withReplacement, fraction, seed))

    def randomSplit(self, weights: Sequence[float], seed: int | None = None) -> "list[RDD[T]]":
        """RDDs that split the records at random in proportion to ``weights``: disjoint, together every
        record once.

        >>> a, b = sc.parallelize(range(100)).randomSplit([0.5, 0.5], seed=1)
        >>> sorted(a.collect() + b.collect()) == list(range(100))
        True
        """
        return [self._wrap(d) for d in self.dataset.random_split(weights, seed)]

    def cartesian(self, other: "RDD[U]") -> "RDD[tuple[T, U]]":
        """Every pair ``(a, b)`` of a record of this RDD and one of ``other``.

        >>> sorted(sc.parallelize([1, 2]).cartesian(sc.parallelize("xy")).collect())
        [(1, 'x'), (1, 'y'), (2, 'x'), (2, 'y')]
        """
        return self._wrap(self.dataset.cartesian(other.dataset))

    def pipe(self, command: str, env: dict | None = None, checkCode: bool = False) -> "RDD[str]":
        """The output lines of ``command`` fed each partition's records, a line each (no shell runs).

        >>> sc.parallelize(["b", "a"], 1).pipe("sort").collect()
        ['a', 'b']
        """
        return self._wrap(self.dataset.pipe(command, env, checkCode))

    def barrier(self) -> "RDDBarrier[T]":
        """The RDD as a barrier stage (``RDDBarrier``); strataflow runs its tasks as ordinary tasks,
        with no gang scheduling.

        >>> sc.parallelize([1, 2, 3], 3).barrier().mapPartitions(lambda it: [sum(it)]).collect()
        [1, 2, 3]
        """
        return RDDBarrier(self)
