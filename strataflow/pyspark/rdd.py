"""``RDD``: PySpark's RDD names and signatures over a strataflow :class:`~strataflow.Dataset`.

Each method delegates to the dataset method of the same meaning (``takeOrdered`` ->
``take_ordered``) and wraps a dataset result in an RDD; the few differences of semantics
are PySpark's and are made here: partition functions receive an *iterator* over the
records (strataflow hands them the partition value), ``groupByKey`` and ``cogroup`` values
are :class:`ResultIterable`, ``countByKey``/``countByValue`` return a ``defaultdict``,
``toDebugString`` returns bytes, ``stats`` a StatCounter with PySpark's method names. The
Hadoop output formats raise :class:`UnsupportedOperation`.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, Iterator, Sequence, TypeVar

from strataflow.dataset.actions import EmptyDatasetError
from strataflow.dataset.approximate import BoundedFloat
from strataflow.common.batch import iter_rows
from strataflow.shuffle.partitioner import portable_hash
from strataflow.pyspark.debug_string import debug_string, rdd_name
from strataflow.pyspark.resultiterable import ResultIterable
from strataflow.pyspark.statcounter import StatCounter
from strataflow.pyspark.storagelevel import StorageLevel, as_pyspark, from_native, to_native

from strataflow.dataset import StorageLevelLocked
from strataflow.io.compression import CodecError

if TYPE_CHECKING:
    from strataflow.dataset import Dataset
    from strataflow.pyspark.context import SparkContext

__all__ = ["RDD", "RDDBarrier", "UnsupportedOperation", "BoundedFloat", "Py4JJavaError"]

T = TypeVar("T")
U = TypeVar("U")


class UnsupportedOperation(NotImplementedError):
    """A PySpark operation strataflow does not offer (Hadoop formats, DataFrames); its message
    names what to use instead. A NotImplementedError, so ``except NotImplementedError`` catches it.

    >>> try:
    ...     sc.parallelize([("k", 1)]).saveAsSequenceFile(tmp_dir + "/seq")
    ... except UnsupportedOperation as exc:
    ...     isinstance(exc, NotImplementedError)
    True
    """


class Py4JJavaError(ValueError):
    """What PySpark raises where the JVM refuses an operation (here: ``persist`` at a second
    storage level). Named as Py4J names it, so that code and tests written against PySpark
    see the exception they expect; it is also a ValueError, strataflow's own error there."""


Py4JJavaError.__module__ = "py4j.protocol"  # PySpark's traceback line: py4j.protocol.Py4JJavaError

#: PySpark's bound on ``takeSample``'s num (``RDD.takeSample``: sys.maxsize less ten sigma)
_MAX_SAMPLE = sys.maxsize - int(10 * math.sqrt(sys.maxsize))


def unsupported(what: str, why: str = "Hadoop input and output formats need the JVM") -> UnsupportedOperation:
    return UnsupportedOperation(f"{what} is not supported in strataflow ({why}); "
                                "use saveAsPickleFile/pickleFile or saveAsTextFile/textFile instead")


def _on_iterator(f: Callable[[Iterator[Any]], Iterable[Any]]) -> Callable[[Any], Iterable[Any]]:
    """A PySpark partition function (iterator in) as a strataflow one (value in)."""
    return lambda v: f(iter_rows(v))


def _on_index_iterator(f: Callable[[int, Iterator[Any]], Iterable[Any]]) -> Callable[[int, Any], Iterable[Any]]:
    return lambda i, v: f(i, iter_rows(v))


def _groups(lists: tuple) -> tuple:
    return tuple(ResultIterable(x) for x in lists)


def _cogroup_partitions(rdds: Sequence["RDD[Any]"], numPartitions: int | None, partitioned: bool = True) -> int:
    """The partition count PySpark gives a cogroup or join of ``rdds``: its Python side
    unions the inputs and groups by key (``pyspark/join.py``), so without
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


class RDD(Generic[T]):
    """A Resilient Distributed Dataset with PySpark's API; ``RDD[int]`` is a valid type
    hint. ``rdd.dataset`` is the strataflow dataset it names."""

    def __init__(self, dataset: "Dataset", ctx: "SparkContext") -> None:
        self.dataset = dataset
        self.ctx = ctx
        self._level: StorageLevel | None = None  # as given to persist (its replication, say)

    def _wrap(self, dataset: "Dataset") -> "RDD[Any]":
        return RDD(dataset, self.ctx)

    def __repr__(self) -> str:
        return rdd_name(self.dataset)

    def __reduce__(self):
        raise RuntimeError("It appears that you are attempting to broadcast an RDD or reference an RDD from an "
                           "action or transformation. RDD transformations and actions can only be invoked by the "
                           "driver, not inside of other transformations (SPARK-5063).")

    def __add__(self, other: "RDD[U]") -> "RDD[T | U]":
        if not isinstance(other, RDD):
            raise TypeError(f"unsupported operand type(s) for +: 'RDD' and '{type(other).__name__}'")
        return self.union(other)

    # -- identity -----------------------------------------------------------------------------
    @property
    def context(self) -> "SparkContext":
        """The SparkContext that made this RDD.

        >>> sc.parallelize([1]).context is sc
        True
        """
        return self.ctx

    def id(self) -> int:
        """The RDD's id within its SparkContext (the dataset's id).

        >>> rdd = sc.parallelize([1])
        >>> rdd.id() == rdd.dataset.id
        True
        """
        return self.dataset.id

    def name(self) -> str | None:
        """The name ``setName`` gave, or None.

        >>> sc.parallelize([1]).setName("points").name()
        'points'
        """
        return self.dataset.name

    def setName(self, name: str) -> "RDD[T]":
        """Names the RDD (shown by ``toDebugString`` and the status page); returns it.

        >>> sc.parallelize([1]).setName("points").name()
        'points'
        """
        self.dataset.set_name(name)
        return self

    def getNumPartitions(self) -> int:
        """How many partitions the RDD has.

        >>> sc.parallelize(range(10), 4).getNumPartitions()
        4
        """
        return self.dataset.num_partitions

    @property
    def partitioner(self) -> Any:
        """How keys are placed in partitions (after ``partitionBy`` or a ``*ByKey`` aggregation), or
        None.

        >>> pairs = sc.parallelize([(1, "a")])
        >>> pairs.partitioner is None, pairs.partitionBy(2).partitioner is None
        (True, False)
        """
        return self.dataset.partitioner

    def toDebugString(self) -> bytes:
        """The lineage in Spark's layout (``debug_string.py``), as bytes as in PySpark.

        >>> print(sc.parallelize([1, 2]).setName("nums").toDebugString().decode())  # doctest: +ELLIPSIS
        (2) nums ParallelCollectionRDD[...] at ...
        """
        return debug_string(self.dataset).encode("utf-8")

    # -- persistence ----------------------------------------------------------------------------
    @property
    def is_cached(self) -> bool:
        """True while the RDD is persisted (``cache``/``persist`` until ``unpersist``).

        >>> rdd = sc.parallelize([1])
        >>> rdd.is_cached, rdd.cache().is_cached, rdd.unpersist().is_cached
        (False, True, False)
        """
        return self.dataset.is_cached

    def cache(self) -> "RDD[T]":
        """``persist(StorageLevel.MEMORY_ONLY)``: later jobs read the computed partitions instead of
        recomputing.

        >>> rdd = sc.parallelize(range(4)).cache()
        >>> rdd.is_cached, rdd.sum()
        (True, 6)
        >>> _ = rdd.unpersist()
        """
        return self.persist(StorageLevel.MEMORY_ONLY)

    def persist(self, storageLevel: StorageLevel = StorageLevel.MEMORY_ONLY) -> "RDD[T]":
        """Keeps computed partitions at ``storageLevel``; like Spark, the level cannot change once set
        (Py4JJavaError).

        >>> from strataflow.pyspark import StorageLevel
        >>> rdd = sc.parallelize(range(4)).persist(StorageLevel.DISK_ONLY)
        >>> rdd.sum(), rdd.getStorageLevel() == StorageLevel.DISK_ONLY
        (6, True)
        >>> _ = rdd.unpersist()
        """
        try:
            self.dataset.persist(to_native(storageLevel))
        except StorageLevelLocked as exc:
            raise Py4JJavaError(f"Cannot change storage level of an RDD after it was already assigned a level "
                                f"({exc})") from exc
        self._level = as_pyspark(storageLevel)
        return self

    def unpersist(self, blocking: bool = False) -> "RDD[T]":
        """Removes the RDD's blocks from every store (always synchronously here).

        >>> sc.parallelize([1]).cache().unpersist().is_cached
        False
        """
        self.dataset.unpersist(blocking)
        return self

    def getStorageLevel(self) -> StorageLevel:
        """The level given to ``persist`` (PySpark's flags, replication included) while the
        dataset is kept at it, else the PySpark name of the dataset's level.

        >>> from strataflow.pyspark import StorageLevel
        >>> rdd = sc.parallelize([1]).persist(StorageLevel.MEMORY_AND_DISK)
        >>> rdd.getStorageLevel() == StorageLevel.MEMORY_AND_DISK
        True
        >>> _ = rdd.unpersist()
        """
        native = self.dataset.get_storage_level()
        if isinstance(self._level, StorageLevel) and to_native(self._level) is native:
            return self._level
        return from_native(native)

    def checkpoint(self) -> None:
        """Marks the RDD to be written to the checkpoint directory by the next job that reads it; then
        its lineage is cut.

        >>> sc.setCheckpointDir(tmp_dir)
        >>> rdd = sc.parallelize(range(3)).map(lambda x: x + 1)
        >>> rdd.checkpoint(); rdd.collect()
        [1, 2, 3]
        >>> rdd.isCheckpointed()
        True
        """
        self.dataset.checkpoint()

    def localCheckpoint(self) -> None:
        """As ``checkpoint``, to the application's own directory (removed by ``stop()``), no checkpoint
        directory needed.

        >>> rdd = sc.parallelize(range(3)); rdd.localCheckpoint()
        >>> rdd.collect(), rdd.isCheckpointed()
        ([0, 1, 2], True)
        """
        self.dataset.local_checkpoint()

    @property
    def is_checkpointed(self) -> bool:
        """PySpark's attribute: True once ``checkpoint()`` was called (``isCheckpointed()``
        says whether the files are written).

        >>> sc.setCheckpointDir(tmp_dir)
        >>> rdd = sc.parallelize([1]); rdd.checkpoint()
        >>> rdd.is_checkpointed, rdd.isCheckpointed()
        (True, False)
        """
        return self.dataset.is_marked_for_checkpoint

    def isCheckpointed(self) -> bool:
        """True once the checkpoint files are written.

        >>> sc.parallelize([1]).isCheckpointed()
        False
        """
        return self.dataset.is_checkpointed

    def isLocallyCheckpointed(self) -> bool:
        """True from ``localCheckpoint()`` on.

        >>> rdd = sc.parallelize([1]); rdd.localCheckpoint()
        >>> rdd.isLocallyCheckpointed()
        True
        """
        return self.dataset.is_locally_checkpointed

    def getCheckpointFile(self) -> str | None:
        """The directory of the checkpoint files once written, else None.

        >>> sc.setCheckpointDir(tmp_dir)
        >>> rdd = sc.parallelize([1]); rdd.checkpoint(); _ = rdd.count()
        >>> rdd.getCheckpointFile().startswith(tmp_dir)
        True
        """
        return self.dataset.get_checkpoint_file()

    def cleanShuffleDependencies(self, blocking: bool = False) -> None:
        """Accepted: strataflow removes a shuffle's files once no dataset can read it.

        >>> sc.parallelize([("a", 1)]).reduceByKey(max).cleanShuffleDependencies()
        """

    def withResources(self, profile: Any) -> "RDD[T]":
        """Accepted and ignored: strataflow has no resource profiles.

        >>> rdd = sc.parallelize([1])
        >>> rdd.withResources(None) is rdd
        True
        """
        return self

    def getResourceProfile(self) -> None:
        """Always None: strataflow has no resource profiles.

        >>> sc.parallelize([1]).getResourceProfile() is None
        True
        """
        return None

    # -- narrow transformations ------------------------------------------------------------
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
        return self._wrap(self.dataset.map_partitions(_on_iterator(f), preservesPartitioning))

    def mapPartitionsWithIndex(self, f: Callable[[int, Iterator[T]], Iterable[U]],
                               preservesPartitioning: bool = False) -> "RDD[U]":
        """``f(index, iterator)`` on each partition (``mapPartitionsWithSplit`` is the old name).

        >>> sc.parallelize("abc", 3).mapPartitionsWithIndex(lambda i, it: [(i, x) for x in it]).collect()
        [(0, 'a'), (1, 'b'), (2, 'c')]
        """
        return self._wrap(self.dataset.map_partitions_with_index(_on_index_iterator(f), preservesPartitioning))

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

    # -- shuffles -------------------------------------------------------------------------------
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
        n = _cogroup_partitions((self, other), None, partitioned=False)
        return self._wrap(self.dataset.intersection(other.dataset, n))

    def subtract(self, other: "RDD[T]", numPartitions: int | None = None) -> "RDD[T]":
        """The records not in ``other`` (duplicates kept).

        >>> sorted(sc.parallelize([1, 2, 2, 3]).subtract(sc.parallelize([3])).collect())
        [1, 2, 2]
        """
        n = _cogroup_partitions((self, other), numPartitions, partitioned=False)
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

    # -- pair transformations -----------------------------------------------------------------
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
        n = _cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.cogroup(other.dataset, num_partitions=n).map_values(_groups))

    def groupWith(self, other: "RDD[Any]", *others: "RDD[Any]") -> "RDD[tuple]":
        """``cogroup`` with any number of other RDDs.

        >>> a, b, c = (sc.parallelize([("k", v)]) for v in (1, 2, 3))
        >>> [(k, [list(g) for g in groups]) for k, groups in a.groupWith(b, c).collect()]
        [('k', [[1], [2], [3]])]
        """
        n = _cogroup_partitions((self, other, *others), None)
        return self._wrap(self.dataset.group_with(other.dataset, *(o.dataset for o in others), num_partitions=n)
                          .map_values(_groups))

    def join(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        """``(key, (left, right))`` for every pair of values that share a key (inner join).

        >>> a, b = sc.parallelize([("x", 1), ("y", 2)]), sc.parallelize([("x", "a")])
        >>> a.join(b).collect()
        [('x', (1, 'a'))]
        """
        return self._wrap(self.dataset.join(other.dataset, _cogroup_partitions((self, other), numPartitions)))

    def leftOuterJoin(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        """``(key, (left, right or None))`` for every pair of the left side.

        >>> a, b = sc.parallelize([("x", 1), ("y", 2)]), sc.parallelize([("x", "a")])
        >>> sorted(a.leftOuterJoin(b).collect())
        [('x', (1, 'a')), ('y', (2, None))]
        """
        n = _cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.left_outer_join(other.dataset, n))

    def rightOuterJoin(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        """``(key, (left or None, right))`` for every pair of the right side.

        >>> a, b = sc.parallelize([("x", 1)]), sc.parallelize([("x", "a"), ("y", "b")])
        >>> sorted(a.rightOuterJoin(b).collect())
        [('x', (1, 'a')), ('y', (None, 'b'))]
        """
        n = _cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.right_outer_join(other.dataset, n))

    def fullOuterJoin(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        """``(key, (left or None, right or None))`` for every key of either side.

        >>> a, b = sc.parallelize([("x", 1), ("y", 2)]), sc.parallelize([("y", 3), ("z", 4)])
        >>> sorted(a.fullOuterJoin(b).collect())
        [('x', (1, None)), ('y', (2, 3)), ('z', (None, 4))]
        """
        n = _cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.full_outer_join(other.dataset, n))

    def subtractByKey(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        """The pairs whose key is not a key of ``other``.

        >>> sc.parallelize([("a", 1), ("b", 2)]).subtractByKey(sc.parallelize([("a", 0)])).collect()
        [('b', 2)]
        """
        n = _cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.subtract_by_key(other.dataset, n))

    def sampleByKey(self, withReplacement: bool, fractions: dict, seed: int | None = None) -> "RDD[tuple]":
        """A stratified sample: each key keeps its own fraction, ``fractions[key]``.

        >>> pairs = sc.parallelize([("keep", i) for i in range(5)] + [("drop", i) for i in range(5)])
        >>> dict(pairs.sampleByKey(False, {"keep": 1.0, "drop": 0.0}, seed=1).countByKey())
        {'keep': 5}
        """
        return self._wrap(self.dataset.sample_by_key(withReplacement, fractions, seed))

    # -- actions ----------------------------------------------------------------------------------
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
        if isinstance(num, int) and num > _MAX_SAMPLE:
            raise ValueError(f"Sample size cannot be greater than {_MAX_SAMPLE}.")
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

    def sum(self) -> Any:
        """The sum of the records (0 when empty).

        >>> sc.parallelize(range(5)).sum()
        10
        """
        return self.dataset.sum()

    def mean(self) -> float:
        """The arithmetic mean of the records.

        >>> sc.parallelize([1, 2, 3, 4]).mean()
        2.5
        """
        return self.dataset.mean()

    def max(self, key: Callable[[T], Any] | None = None) -> T:
        """The largest record (by ``key(record)`` when given).

        >>> sc.parallelize([3, 9, 4]).max(), sc.parallelize(["bb", "a"]).max(key=len)
        (9, 'bb')
        """
        return self.dataset.max(key)

    def min(self, key: Callable[[T], Any] | None = None) -> T:
        """The smallest record (by ``key(record)`` when given).

        >>> sc.parallelize([3, 9, 4]).min()
        3
        """
        return self.dataset.min(key)

    def stats(self) -> StatCounter:
        """Count, mean, stdev, max and min of the records in one job, as a StatCounter.

        >>> sc.parallelize([1, 2, 3, 4]).stats()  # doctest: +ELLIPSIS
        (count: 4, mean: 2.5, stdev: 1.118..., max: 4.0, min: 1.0)
        """
        return StatCounter.from_native(self.dataset.stats())

    def variance(self) -> float:
        """The population variance (divides by n).

        >>> sc.parallelize([1, 2, 3, 4]).variance()
        1.25
        """
        return self.dataset.variance()

    def stdev(self) -> float:
        """The population standard deviation (divides by n).

        >>> sc.parallelize([1, 2, 3, 4]).stdev()  # doctest: +ELLIPSIS
        1.118033...
        """
        return self.dataset.stdev()

    def sampleVariance(self) -> float:
        """The sample variance (divides by n - 1).

        >>> sc.parallelize([1, 2, 3, 4]).sampleVariance()  # doctest: +ELLIPSIS
        1.666666...
        """
        return self.dataset.sample_variance()

    def sampleStdev(self) -> float:
        """The sample standard deviation (divides by n - 1).

        >>> sc.parallelize([1, 2, 3, 4]).sampleStdev()  # doctest: +ELLIPSIS
        1.290994...
        """
        return self.dataset.sample_stdev()

    def histogram(self, buckets: int | Sequence[Any]) -> tuple[Sequence[Any], list[int]]:
        """Counts per bucket as ``(bounds, counts)``; ``buckets`` is a count of even buckets or the
        sorted bounds.

        >>> sc.parallelize([1, 2, 3, 9, 10]).histogram([0, 5, 10])
        ([0, 5, 10], [3, 2])
        """
        return self.dataset.histogram(buckets)

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

    def countApprox(self, timeout: int, confidence: float = 0.95) -> int:
        """The record count (exact here: strataflow waits for every task; ``timeout`` in ms is checked
        and unused).

        >>> sc.parallelize(range(100), 4).countApprox(1000)
        100
        """
        return self.dataset.count_approx(timeout, confidence)

    def sumApprox(self, timeout: int, confidence: float = 0.95) -> BoundedFloat:
        """The sum as a BoundedFloat (exact here: low == high).

        >>> sc.parallelize([1, 2, 3]).sumApprox(1000)
        6.0
        """
        return self.dataset.sum_approx(timeout, confidence)

    def meanApprox(self, timeout: int, confidence: float = 0.95) -> BoundedFloat:
        """The mean as a BoundedFloat (exact here: low == high).

        >>> sc.parallelize([1, 2, 3, 4]).meanApprox(1000)
        2.5
        """
        return self.dataset.mean_approx(timeout, confidence)

    def countApproxDistinct(self, relativeSD: float = 0.05) -> int:
        """About how many distinct records there are, within ``relativeSD``, by HyperLogLog.

        >>> 900 < sc.parallelize([i % 1000 for i in range(5000)], 4).countApproxDistinct() < 1100
        True
        """
        return self.dataset.count_approx_distinct(relativeSD)

    # -- output -------------------------------------------------------------------------------------
    def saveAsTextFile(self, path: str, compressionCodecClass: str | None = None) -> None:
        """A ``part-NNNNN`` file per partition, a line per record (gzip, bzip2, deflate or xz by codec
        class name; Snappy, LZ4 and Zstandard raise UnsupportedOperation).

        >>> sc.parallelize(["one", "two"]).saveAsTextFile(tmp_dir + "/t", "org.apache.hadoop.io.compress.GzipCodec")
        >>> sc.textFile(tmp_dir + "/t").collect()
        ['one', 'two']
        """
        try:
            self.dataset.save_as_text_file(path, compressionCodecClass)
        except CodecError as exc:
            raise UnsupportedOperation(str(exc)) from None

    def saveAsPickleFile(self, path: str, batchSize: int = 10) -> None:
        """Writes the records as pickles in batches of ``batchSize``; ``SparkContext.pickleFile`` reads
        them back.

        >>> sc.parallelize([{"a": 1}, None], 1).saveAsPickleFile(tmp_dir + "/p")
        >>> sc.pickleFile(tmp_dir + "/p").collect()
        [{'a': 1}, None]
        """
        self.dataset.save_as_pickle_file(path, batchSize)

    def saveAsSequenceFile(self, path: str, compressionCodecClass: str | None = None) -> None:
        """Not supported (UnsupportedOperation): sequence files are a Hadoop format; use
        ``saveAsPickleFile``.

        >>> sc.parallelize([("k", 1)]).saveAsSequenceFile(tmp_dir + "/s")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: saveAsSequenceFile is not supported in strataflow ...
        """
        raise unsupported("saveAsSequenceFile")

    def saveAsHadoopFile(self, path: str, outputFormatClass: str, *args: Any, **kwargs: Any) -> None:
        """Not supported (UnsupportedOperation): Hadoop output formats need the JVM.

        >>> sc.parallelize([("k", 1)]).saveAsHadoopFile(tmp_dir + "/h", "TextOutputFormat")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: saveAsHadoopFile is not supported in strataflow ...
        """
        raise unsupported("saveAsHadoopFile")

    def saveAsNewAPIHadoopFile(self, path: str, outputFormatClass: str, *args: Any, **kwargs: Any) -> None:
        """Not supported (UnsupportedOperation): Hadoop output formats need the JVM.

        >>> sc.parallelize([("k", 1)]).saveAsNewAPIHadoopFile(tmp_dir + "/h", "TextOutputFormat")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: saveAsNewAPIHadoopFile is not supported in strataflow ...
        """
        raise unsupported("saveAsNewAPIHadoopFile")

    def saveAsHadoopDataset(self, conf: dict, *args: Any, **kwargs: Any) -> None:
        """Not supported (UnsupportedOperation): Hadoop output formats need the JVM.

        >>> sc.parallelize([("k", 1)]).saveAsHadoopDataset({})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: saveAsHadoopDataset is not supported in strataflow ...
        """
        raise unsupported("saveAsHadoopDataset")

    def saveAsNewAPIHadoopDataset(self, conf: dict, *args: Any, **kwargs: Any) -> None:
        """Not supported (UnsupportedOperation): Hadoop output formats need the JVM.

        >>> sc.parallelize([("k", 1)]).saveAsNewAPIHadoopDataset({})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: saveAsNewAPIHadoopDataset is not supported in strataflow ...
        """
        raise unsupported("saveAsNewAPIHadoopDataset")

    def toDF(self, schema: Any = None, sampleRatio: float | None = None) -> Any:
        """Not supported (UnsupportedOperation): there is no SparkSession or DataFrame API;
        ``collect()``, or use the native API's pandas/Arrow interop.

        >>> sc.parallelize([(1, "a")]).toDF()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: toDF is not supported in strataflow: ...
        """
        raise UnsupportedOperation("toDF is not supported in strataflow: there is no SparkSession or DataFrame "
                                   "API; collect() the records, or use the pandas/Arrow interop of the native API")


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
        native = self.rdd.dataset.barrier().map_partitions(_on_iterator(f), preservesPartitioning)
        return self.rdd._wrap(native)

    def mapPartitionsWithIndex(self, f: Callable[[int, Iterator[T]], Iterable[U]],
                               preservesPartitioning: bool = False) -> RDD[U]:
        """``f(index, iterator)`` over each partition, as ``RDD.mapPartitionsWithIndex``; the
        tasks run as ordinary tasks, not launched together.

        >>> sc.parallelize(range(4), 2).barrier().mapPartitionsWithIndex(lambda i, it: [(i, list(it))]).collect()
        [(0, [0, 1]), (1, [2, 3])]
        """
        native = self.rdd.dataset.barrier().map_partitions_with_index(_on_index_iterator(f), preservesPartitioning)
        return self.rdd._wrap(native)
