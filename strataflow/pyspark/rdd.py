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

from ..actions import EmptyDatasetError
from ..approximate import BoundedFloat
from ..batch import iter_rows
from ..partitioner import portable_hash
from .debug_string import debug_string, rdd_name
from .resultiterable import ResultIterable
from .statcounter import StatCounter
from .storagelevel import StorageLevel, as_pyspark, from_native, to_native

from ..dataset import StorageLevelLocked
from ..io.compression import CodecError

if TYPE_CHECKING:
    from ..dataset import Dataset
    from .context import SparkContext

__all__ = ["RDD", "RDDBarrier", "UnsupportedOperation", "BoundedFloat", "Py4JJavaError"]

T = TypeVar("T")
U = TypeVar("U")


class UnsupportedOperation(NotImplementedError):
    """A PySpark operation strataflow does not offer (Hadoop formats, DataFrames)."""


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
        return self.ctx

    def id(self) -> int:
        return self.dataset.id

    def name(self) -> str | None:
        return self.dataset.name

    def setName(self, name: str) -> "RDD[T]":
        self.dataset.set_name(name)
        return self

    def getNumPartitions(self) -> int:
        return self.dataset.num_partitions

    @property
    def partitioner(self) -> Any:
        return self.dataset.partitioner

    def toDebugString(self) -> bytes:
        """The lineage in Spark's layout (``debug_string.py``), as bytes as in PySpark."""
        return debug_string(self.dataset).encode("utf-8")

    # -- persistence ----------------------------------------------------------------------------
    @property
    def is_cached(self) -> bool:
        return self.dataset.is_cached

    def cache(self) -> "RDD[T]":
        return self.persist(StorageLevel.MEMORY_ONLY)

    def persist(self, storageLevel: StorageLevel = StorageLevel.MEMORY_ONLY) -> "RDD[T]":
        try:
            self.dataset.persist(to_native(storageLevel))
        except StorageLevelLocked as exc:
            raise Py4JJavaError(f"Cannot change storage level of an RDD after it was already assigned a level "
                                f"({exc})") from exc
        self._level = as_pyspark(storageLevel)
        return self

    def unpersist(self, blocking: bool = False) -> "RDD[T]":
        self.dataset.unpersist(blocking)
        return self

    def getStorageLevel(self) -> StorageLevel:
        """The level given to ``persist`` (PySpark's flags, replication included) while the
        dataset is kept at it, else the PySpark name of the dataset's level."""
        native = self.dataset.get_storage_level()
        if isinstance(self._level, StorageLevel) and to_native(self._level) is native:
            return self._level
        return from_native(native)

    def checkpoint(self) -> None:
        self.dataset.checkpoint()

    def localCheckpoint(self) -> None:
        self.dataset.local_checkpoint()

    @property
    def is_checkpointed(self) -> bool:
        """PySpark's attribute: True once ``checkpoint()`` was called (``isCheckpointed()``
        says whether the files are written)."""
        return self.dataset.is_marked_for_checkpoint

    def isCheckpointed(self) -> bool:
        return self.dataset.is_checkpointed

    def isLocallyCheckpointed(self) -> bool:
        return self.dataset.is_locally_checkpointed

    def getCheckpointFile(self) -> str | None:
        return self.dataset.get_checkpoint_file()

    def cleanShuffleDependencies(self, blocking: bool = False) -> None:
        """Accepted: strataflow removes a shuffle's files once no dataset can read it."""

    def withResources(self, profile: Any) -> "RDD[T]":
        """Accepted and ignored: strataflow has no resource profiles."""
        return self

    def getResourceProfile(self) -> None:
        return None

    # -- narrow transformations ------------------------------------------------------------
    def map(self, f: Callable[[T], U], preservesPartitioning: bool = False) -> "RDD[U]":
        return self._wrap(self.dataset.map(f, preservesPartitioning))

    def flatMap(self, f: Callable[[T], Iterable[U]], preservesPartitioning: bool = False) -> "RDD[U]":
        return self._wrap(self.dataset.flat_map(f, preservesPartitioning))

    def mapPartitions(self, f: Callable[[Iterator[T]], Iterable[U]],
                      preservesPartitioning: bool = False) -> "RDD[U]":
        return self._wrap(self.dataset.map_partitions(_on_iterator(f), preservesPartitioning))

    def mapPartitionsWithIndex(self, f: Callable[[int, Iterator[T]], Iterable[U]],
                               preservesPartitioning: bool = False) -> "RDD[U]":
        return self._wrap(self.dataset.map_partitions_with_index(_on_index_iterator(f), preservesPartitioning))

    mapPartitionsWithSplit = mapPartitionsWithIndex

    def filter(self, f: Callable[[T], bool]) -> "RDD[T]":
        return self._wrap(self.dataset.filter(f))

    def glom(self) -> "RDD[list[T]]":
        return self._wrap(self.dataset.glom())

    def keyBy(self, f: Callable[[T], Any]) -> "RDD[tuple]":
        return self._wrap(self.dataset.key_by(f))

    def union(self, other: "RDD[U]") -> "RDD[T | U]":
        return self._wrap(self.dataset.union(other.dataset))

    def zip(self, other: "RDD[U]") -> "RDD[tuple[T, U]]":
        return self._wrap(self.dataset.zip(other.dataset))

    def zipWithIndex(self) -> "RDD[tuple[T, int]]":
        return self._wrap(self.dataset.zip_with_index())

    def zipWithUniqueId(self) -> "RDD[tuple[T, int]]":
        return self._wrap(self.dataset.zip_with_unique_id())

    def coalesce(self, numPartitions: int, shuffle: bool = False) -> "RDD[T]":
        return self._wrap(self.dataset.coalesce(numPartitions, shuffle))

    def repartition(self, numPartitions: int) -> "RDD[T]":
        return self._wrap(self.dataset.repartition(numPartitions))

    def sample(self, withReplacement: bool, fraction: float, seed: int | None = None) -> "RDD[T]":
        return self._wrap(self.dataset.sample(withReplacement, fraction, seed))

    def randomSplit(self, weights: Sequence[float], seed: int | None = None) -> "list[RDD[T]]":
        return [self._wrap(d) for d in self.dataset.random_split(weights, seed)]

    def cartesian(self, other: "RDD[U]") -> "RDD[tuple[T, U]]":
        return self._wrap(self.dataset.cartesian(other.dataset))

    def pipe(self, command: str, env: dict | None = None, checkCode: bool = False) -> "RDD[str]":
        return self._wrap(self.dataset.pipe(command, env, checkCode))

    def barrier(self) -> "RDDBarrier[T]":
        return RDDBarrier(self)

    # -- shuffles -------------------------------------------------------------------------------
    def distinct(self, numPartitions: int | None = None) -> "RDD[T]":
        return self._wrap(self.dataset.distinct(numPartitions))

    def intersection(self, other: "RDD[T]") -> "RDD[T]":
        n = _cogroup_partitions((self, other), None, partitioned=False)
        return self._wrap(self.dataset.intersection(other.dataset, n))

    def subtract(self, other: "RDD[T]", numPartitions: int | None = None) -> "RDD[T]":
        n = _cogroup_partitions((self, other), numPartitions, partitioned=False)
        return self._wrap(self.dataset.subtract(other.dataset, n))

    def groupBy(self, f: Callable[[T], Any], numPartitions: int | None = None,
                partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple[Any, ResultIterable[T]]]":
        return self.keyBy(f).groupByKey(numPartitions, partitionFunc)

    def sortBy(self, keyfunc: Callable[[T], Any], ascending: bool = True,
               numPartitions: int | None = None) -> "RDD[T]":
        return self._wrap(self.dataset.sort_by(keyfunc, ascending, numPartitions))

    def sortByKey(self, ascending: bool = True, numPartitions: int | None = None,
                  keyfunc: Callable[[Any], Any] = lambda x: x) -> "RDD[tuple]":
        return self._wrap(self.dataset.sort_by_key(ascending, numPartitions, keyfunc))

    def partitionBy(self, numPartitions: int | None = None, partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple]":
        return self._wrap(self.dataset.partition_by(numPartitions, partitionFunc))

    def repartitionAndSortWithinPartitions(self, numPartitions: int | None = None,
                                           partitionFunc: Callable[[Any], int] = portable_hash,
                                           ascending: bool = True,
                                           keyfunc: Callable[[Any], Any] = lambda x: x) -> "RDD[tuple]":
        return self._wrap(self.dataset.repartition_and_sort_within_partitions(numPartitions, partitionFunc,
                                                                              ascending, keyfunc))

    # -- pair transformations -----------------------------------------------------------------
    def keys(self) -> "RDD[Any]":
        return self._wrap(self.dataset.keys())

    def values(self) -> "RDD[Any]":
        return self._wrap(self.dataset.values())

    def mapValues(self, f: Callable[[Any], U]) -> "RDD[tuple[Any, U]]":
        return self._wrap(self.dataset.map_values(f))

    def flatMapValues(self, f: Callable[[Any], Iterable[U]]) -> "RDD[tuple[Any, U]]":
        return self._wrap(self.dataset.flat_map_values(f))

    def combineByKey(self, createCombiner: Callable, mergeValue: Callable, mergeCombiners: Callable,
                     numPartitions: int | None = None,
                     partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple]":
        return self._wrap(self.dataset.combine_by_key(createCombiner, mergeValue, mergeCombiners, numPartitions,
                                                      partitionFunc))

    def reduceByKey(self, func: Callable[[Any, Any], Any], numPartitions: int | None = None,
                    partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple]":
        return self._wrap(self.dataset.reduce_by_key(func, numPartitions, partitionFunc))

    def foldByKey(self, zeroValue: Any, func: Callable[[Any, Any], Any], numPartitions: int | None = None,
                  partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple]":
        return self._wrap(self.dataset.fold_by_key(zeroValue, func, numPartitions, partitionFunc))

    def aggregateByKey(self, zeroValue: Any, seqFunc: Callable, combFunc: Callable,
                       numPartitions: int | None = None,
                       partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple]":
        return self._wrap(self.dataset.aggregate_by_key(zeroValue, seqFunc, combFunc, numPartitions, partitionFunc))

    def groupByKey(self, numPartitions: int | None = None,
                   partitionFunc: Callable[[Any], int] = portable_hash) -> "RDD[tuple[Any, ResultIterable]]":
        return self._wrap(self.dataset.group_by_key(numPartitions, partitionFunc).map_values(ResultIterable))

    def cogroup(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        n = _cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.cogroup(other.dataset, num_partitions=n).map_values(_groups))

    def groupWith(self, other: "RDD[Any]", *others: "RDD[Any]") -> "RDD[tuple]":
        n = _cogroup_partitions((self, other, *others), None)
        return self._wrap(self.dataset.group_with(other.dataset, *(o.dataset for o in others), num_partitions=n)
                          .map_values(_groups))

    def join(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        return self._wrap(self.dataset.join(other.dataset, _cogroup_partitions((self, other), numPartitions)))

    def leftOuterJoin(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        n = _cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.left_outer_join(other.dataset, n))

    def rightOuterJoin(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        n = _cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.right_outer_join(other.dataset, n))

    def fullOuterJoin(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        n = _cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.full_outer_join(other.dataset, n))

    def subtractByKey(self, other: "RDD[Any]", numPartitions: int | None = None) -> "RDD[tuple]":
        n = _cogroup_partitions((self, other), numPartitions)
        return self._wrap(self.dataset.subtract_by_key(other.dataset, n))

    def sampleByKey(self, withReplacement: bool, fractions: dict, seed: int | None = None) -> "RDD[tuple]":
        return self._wrap(self.dataset.sample_by_key(withReplacement, fractions, seed))

    # -- actions ----------------------------------------------------------------------------------
    def collect(self) -> list[T]:
        return self.dataset.collect()

    def collectWithJobGroup(self, groupId: str, description: str, interruptOnCancel: bool = False) -> list[T]:
        self.ctx.setJobGroup(groupId, description, interruptOnCancel)
        return self.collect()

    def count(self) -> int:
        return self.dataset.count()

    def first(self) -> T:
        try:
            return self.dataset.first()
        except EmptyDatasetError:
            raise ValueError("RDD is empty") from None

    def take(self, num: int) -> list[T]:
        return self.dataset.take(num)

    def top(self, num: int, key: Callable[[T], Any] | None = None) -> list[T]:
        return self.dataset.top(num, key)

    def takeOrdered(self, num: int, key: Callable[[T], Any] | None = None) -> list[T]:
        return self.dataset.take_ordered(num, key)

    def takeSample(self, withReplacement: bool, num: int, seed: int | None = None) -> list[T]:
        if isinstance(num, int) and num > _MAX_SAMPLE:
            raise ValueError(f"Sample size cannot be greater than {_MAX_SAMPLE}.")
        return self.dataset.take_sample(withReplacement, num, seed)

    def isEmpty(self) -> bool:
        return self.dataset.is_empty()

    def toLocalIterator(self, prefetchPartitions: bool = False) -> Iterator[T]:
        return self.dataset.to_local_iterator(prefetchPartitions)

    def foreach(self, f: Callable[[T], None]) -> None:
        self.dataset.foreach(f)

    def foreachPartition(self, f: Callable[[Iterator[T]], None]) -> None:
        self.dataset.foreach_partition(f)

    def reduce(self, f: Callable[[T, T], T]) -> T:
        try:
            return self.dataset.reduce(f)
        except EmptyDatasetError:
            raise ValueError("Can not reduce() empty RDD") from None

    def treeReduce(self, f: Callable[[T, T], T], depth: int = 2) -> T:
        try:
            return self.dataset.tree_reduce(f, depth)
        except EmptyDatasetError:
            raise ValueError("Cannot reduce empty RDD.") from None

    def fold(self, zeroValue: T, op: Callable[[T, T], T]) -> T:
        return self.dataset.fold(zeroValue, op)

    def aggregate(self, zeroValue: U, seqOp: Callable[[U, T], U], combOp: Callable[[U, U], U]) -> U:
        return self.dataset.aggregate(zeroValue, seqOp, combOp)

    def treeAggregate(self, zeroValue: U, seqOp: Callable[[U, T], U], combOp: Callable[[U, U], U],
                      depth: int = 2) -> U:
        return self.dataset.tree_aggregate(zeroValue, seqOp, combOp, depth)

    def sum(self) -> Any:
        return self.dataset.sum()

    def mean(self) -> float:
        return self.dataset.mean()

    def max(self, key: Callable[[T], Any] | None = None) -> T:
        return self.dataset.max(key)

    def min(self, key: Callable[[T], Any] | None = None) -> T:
        return self.dataset.min(key)

    def stats(self) -> StatCounter:
        return StatCounter.from_native(self.dataset.stats())

    def variance(self) -> float:
        return self.dataset.variance()

    def stdev(self) -> float:
        return self.dataset.stdev()

    def sampleVariance(self) -> float:
        return self.dataset.sample_variance()

    def sampleStdev(self) -> float:
        return self.dataset.sample_stdev()

    def histogram(self, buckets: int | Sequence[Any]) -> tuple[Sequence[Any], list[int]]:
        return self.dataset.histogram(buckets)

    def countByValue(self) -> "defaultdict[T, int]":
        return defaultdict(int, self.dataset.count_by_value())

    def countByKey(self) -> "defaultdict[Any, int]":
        return defaultdict(int, self.dataset.count_by_key())

    def collectAsMap(self) -> dict:
        return self.dataset.collect_as_map()

    def reduceByKeyLocally(self, func: Callable[[Any, Any], Any]) -> dict:
        return self.dataset.reduce_by_key_locally(func)

    def lookup(self, key: Any) -> list:
        return self.dataset.lookup(key)

    def countApprox(self, timeout: int, confidence: float = 0.95) -> int:
        return self.dataset.count_approx(timeout, confidence)

    def sumApprox(self, timeout: int, confidence: float = 0.95) -> BoundedFloat:
        return self.dataset.sum_approx(timeout, confidence)

    def meanApprox(self, timeout: int, confidence: float = 0.95) -> BoundedFloat:
        return self.dataset.mean_approx(timeout, confidence)

    def countApproxDistinct(self, relativeSD: float = 0.05) -> int:
        return self.dataset.count_approx_distinct(relativeSD)

    # -- output -------------------------------------------------------------------------------------
    def saveAsTextFile(self, path: str, compressionCodecClass: str | None = None) -> None:
        try:
            self.dataset.save_as_text_file(path, compressionCodecClass)
        except CodecError as exc:
            raise UnsupportedOperation(str(exc)) from None

    def saveAsPickleFile(self, path: str, batchSize: int = 10) -> None:
        self.dataset.save_as_pickle_file(path, batchSize)

    def saveAsSequenceFile(self, path: str, compressionCodecClass: str | None = None) -> None:
        raise unsupported("saveAsSequenceFile")

    def saveAsHadoopFile(self, path: str, outputFormatClass: str, *args: Any, **kwargs: Any) -> None:
        raise unsupported("saveAsHadoopFile")

    def saveAsNewAPIHadoopFile(self, path: str, outputFormatClass: str, *args: Any, **kwargs: Any) -> None:
        raise unsupported("saveAsNewAPIHadoopFile")

    def saveAsHadoopDataset(self, conf: dict, *args: Any, **kwargs: Any) -> None:
        raise unsupported("saveAsHadoopDataset")

    def saveAsNewAPIHadoopDataset(self, conf: dict, *args: Any, **kwargs: Any) -> None:
        raise unsupported("saveAsNewAPIHadoopDataset")

    def toDF(self, schema: Any = None, sampleRatio: float | None = None) -> Any:
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
        native = self.rdd.dataset.barrier().map_partitions(_on_iterator(f), preservesPartitioning)
        return self.rdd._wrap(native)

    def mapPartitionsWithIndex(self, f: Callable[[int, Iterator[T]], Iterable[U]],
                               preservesPartitioning: bool = False) -> RDD[U]:
        native = self.rdd.dataset.barrier().map_partitions_with_index(_on_index_iterator(f), preservesPartitioning)
        return self.rdd._wrap(native)
