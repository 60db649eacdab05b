"""``RDD``'s functions of ``(key, value)`` pairs: ``keys``/``values``, ``mapValues``, the
``*ByKey`` aggregations, ``cogroup`` and the joins, ``sampleByKey``.

A mixin of :class:`~strataflow.pyspark.rdd.RDD`, apart because the pairs carry PySpark's
own rules: ``groupByKey`` and ``cogroup`` values are ResultIterables, and a cogroup or
join without ``numPartitions`` takes PySpark's partition count
(:func:`cogroup_partitions`), not the native API's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, TypeVar

from strataflow.shuffle.partitioner import portable_hash
from strataflow.pyspark.resultiterable import ResultIterable
from strataflow.pyspark.rdd_group import RDDGroup

if TYPE_CHECKING:
    from strataflow.pyspark.rdd import RDD


def as_result_iterables(lists: tuple) -> tuple:
    """A cogroup's value lists as PySpark gives them: ResultIterables."""
    return tuple(ResultIterable(x) for x in lists)


def cogroup_partitions(rdds: Sequence["RDD[Any]"], numPartitions: int | None, partitioned: bool = True) -> int:
    """The partition count PySpark gives a cogroup or join of ``rdds``: its Python side
    unions the inputs and groups by key (PySpark's ``pyspark/join.py``), so without
    ``numPartitions`` it is ``spark.default.parallelism`` when set, else the union's
    partition count: the inputs' own when all are partitioned alike (then nothing is
    shuffled), else their sum. ``partitioned=False``: inputs keyed by a ``map`` first
    (``intersection``, ``subtract``), which PySpark's partitioners do not survive.
    (Scala Spark and strataflow's native API take the largest input's count instead:
    ``partitioner.default_partitioner``.)"""
    if numPartitions is not None:
        return numPartitions
    default = rdds[0].ctx.ctx.config.default_parallelism
    if default is not None:
        return default
    first = rdds[0].dataset
    if partitioned and first.partitioner is not None and all(
            r.dataset.partitioner == first.partitioner and r.dataset.num_partitions == first.num_partitions
            for r in rdds):
        return first.num_partitions
    return sum(r.dataset.num_partitions for r in rdds)


T = TypeVar("T")
U = TypeVar("U")


class RDDPairs(RDDGroup[T]):
    """Transformations of key-value pairs (a mixin of ``RDD``)."""

    def keys(self) -> "RDD[Any]":
        """The key of every pair.

        >>> sc.parallelize([("a", 1), ("b", 2)]).keys().collect()
        ['a', 'b']
        """
        return self._wrap(self.dataset.keys())

    def values(self) -> "RDD[Any]":
        """The value of every pair.

        >>> sc.parallelize([("a", 1), ("b", 2)]).values().collect()
        [1, 2]
        """
        return self._wrap(self.dataset.values())

    def mapValues(self, f: Callable[[Any], U]) -> "RDD[tuple[Any, U]]":
        """``f`` on every pair's value, the key (and the partitioner) kept.

        >>> sc.parallelize([("a", 1), ("b", 2)]).mapValues(lambda v: v * 10).collect()
        [('a', 10), ('b', 20)]
        """
        return self._wrap(self.dataset.map_values(f))

    def flatMapValues(self, f: Callable[[Any], Iterable[U]]) -> "RDD[tuple[Any, U]]":
        """A pair ``(key, item)`` for each item of ``f(value)``.

        >>> sc.parallelize([("k", "ab")]).flatMapValues(list).collect()
        [('k', 'a'), ('k', 'b')]
        """
        return self._wrap(self.dataset.flat_map_values(f))

    def combineByKey(self, createCombiner: Callable, mergeValue: Callable, mergeCombiners: Callable,
                     numPartitions: int | None = None,
                     partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple]":
        """The general per-key aggregation: ``createCombiner``, ``mergeValue`` and ``mergeCombiners``
        (``Dataset.combine_by_key``).

        >>> pairs = sc.parallelize([("a", 1), ("a", 2), ("b", 3)])
        >>> sorted(pairs.combineByKey(lambda v: [v], lambda c, v: c + [v], lambda c, d: c + d).collect())
        [('a', [1, 2]), ('b', [3])]
        """
        return self._wrap(self.dataset.combine_by_key(createCombiner, mergeValue, mergeCombiners, numPartitions,
                                                      partitionFunc))

    def reduceByKey(self, func: Callable[[Any, Any], Any], numPartitions: int | None = None,
                    partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple]":
        """Merges each key's values with ``func``, combining on the map side before the shuffle.

        >>> sorted(sc.parallelize([("a", 1), ("b", 2), ("a", 3)]).reduceByKey(lambda x, y: x + y).collect())
        [('a', 4), ('b', 2)]
        """
        return self._wrap(self.dataset.reduce_by_key(func, numPartitions, partitionFunc))

    def foldByKey(self, zeroValue: Any, func: Callable[[Any, Any], Any], numPartitions: int | None = None,
                  partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple]":
        """Per key, folds the values into ``zeroValue`` with ``func``.

        >>> sorted(sc.parallelize([("a", 1), ("a", 2), ("b", 3)]).foldByKey(0, lambda a, b: a + b).collect())
        [('a', 3), ('b', 3)]
        """
        return self._wrap(self.dataset.fold_by_key(zeroValue, func, numPartitions, partitionFunc))

    def aggregateByKey(self, zeroValue: Any, seqFunc: Callable, combFunc: Callable,
                       numPartitions: int | None = None,
                       partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple]":
        """Per key, folds the values into ``zeroValue`` with ``seqFunc`` and merges the results with
        ``combFunc``.

        >>> pairs = sc.parallelize([("a", 1), ("a", 2), ("b", 3)])
        >>> sorted(pairs.aggregateByKey(0, lambda acc, v: acc + v, lambda a, b: a + b).collect())
        [('a', 3), ('b', 3)]
        """
        return self._wrap(self.dataset.aggregate_by_key(zeroValue, seqFunc, combFunc, numPartitions, partitionFunc))

    def groupByKey(self, numPartitions: int | None = None,
                   partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple[Any, ResultIterable]]":
        """``(key, ResultIterable of values)`` for every key (no map-side combine, as in Spark).

        >>> sorted((k, list(v)) for k, v in sc.parallelize([("a", 1), ("b", 2), ("a", 3)]).groupByKey().collect())
        [('a', [1, 3]), ('b', [2])]
        """
        return self._wrap(self.dataset.group_by_key(numPartitions, partitionFunc).map_values(ResultIterable))

    def cogroup(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        """``(key, (values of self, values of other))`` for every key of either, as ResultIterables.

        >>> a, b = sc.parallelize([("k", 1), ("k", 2)]), sc.parallelize([("k", "x"), ("j", "y")])
        >>> sorted((k, tuple(map(list, groups))) for k, groups in a.cogroup(b).collect())
        [('j', ([], ['y'])), ('k', ([1, 2], ['x']))]
        """
        n = cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.cogroup(other.dataset, num_partitions=n).map_values(as_result_iterables))

    def groupWith(self, other: "RDD[Any]", *others: "RDD[Any]") -> "RDD[tuple]":
        """``cogroup`` with any number of other RDDs.

        >>> a, b, c = (sc.parallelize([("k", v)]) for v in (1, 2, 3))
        >>> [(k, [list(g) for g in groups]) for k, groups in a.groupWith(b, c).collect()]
        [('k', [[1], [2], [3]])]
        """
        n = cogroup_partitions((self, other, *others), None)
        return self._wrap(self.dataset.group_with(other.dataset, *(o.dataset for o in others), num_partitions=n)
                          .map_values(as_result_iterables))

    def join(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        """``(key, (left, right))`` for every pair of values that share a key (inner join).

        >>> a, b = sc.parallelize([("x", 1), ("y", 2)]), sc.parallelize([("x", "a")])
        >>> a.join(b).collect()
        [('x', (1, 'a'))]
        """
        return self._wrap(self.dataset.join(other.dataset, cogroup_partitions((self, other), numPartitions)))

    def leftOuterJoin(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        """``(key, (left, right or None))`` for every pair of the left side.

        >>> a, b = sc.parallelize([("x", 1), ("y", 2)]), sc.parallelize([("x", "a")])
        >>> sorted(a.leftOuterJoin(b).collect())
        [('x', (1, 'a')), ('y', (2, None))]
        """
        n = cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.left_outer_join(other.dataset, n))

    def rightOuterJoin(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        """``(key, (left or None, right))`` for every pair of the right side.

        >>> a, b = sc.parallelize([("x", 1)]), sc.parallelize([("x", "a"), ("y", "b")])
        >>> sorted(a.rightOuterJoin(b).collect())
        [('x', (1, 'a')), ('y', (None, 'b'))]
        """
        n = cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.right_outer_join(other.dataset, n))

    def fullOuterJoin(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        """``(key, (left or None, right or None))`` for every key of either side.

        >>> a, b = sc.parallelize([("x", 1), ("y", 2)]), sc.parallelize([("y", 3), ("z", 4)])
        >>> sorted(a.fullOuterJoin(b).collect())
        [('x', (1, None)), ('y', (2, 3)), ('z', (None, 4))]
        """
        n = cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.full_outer_join(other.dataset, n))

    def subtractByKey(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        """The pairs whose key is not a key of ``other``.

        >>> sc.parallelize([("a", 1), ("b", 2)]).subtractByKey(sc.parallelize([("a", 0)])).collect()
        [('b', 2)]
        """
        n = cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.subtract_by_key(other.dataset, n))

    def sampleByKey(self, withReplacement: bool, fractions: dict, seed: int | None = None) -> "RDD[tuple]":
        """A stratified sample: each key keeps its own fraction, ``fractions[key]``.

        >>> pairs = sc.parallelize([("keep", i) for i in range(5)] + [("drop", i) for i in range(5)])
        >>> dict(pairs.sampleByKey(False, {"keep": 1.0, "drop": 0.0}, seed=1).countByKey())
        {'keep': 5}
        """
        return self._wrap(self.dataset.sample_by_key(withReplacement, fractions, seed))
