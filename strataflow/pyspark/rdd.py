"""``RDD``: PySpark's RDD names and signatures over a strataflow :class:`~strataflow.Dataset`.

Each method delegates to the dataset method of the same meaning (``takeOrdered`` ->
``take_ordered``) and wraps a dataset result in an RDD; the few differences of semantics
are PySpark's and are made here: partition functions receive an *iterator* over the
records (strataflow hands them the partition value), ``groupByKey`` and ``cogroup`` values
are :class:`ResultIterable`, ``countByKey``/``countByValue`` return a ``defaultdict``,
``toDebugString`` returns bytes, ``stats`` a StatCounter with PySpark's method names. The
Hadoop output formats raise :class:`UnsupportedOperation`.

This module holds the RDD's core (what it wraps, its identity, name and lineage) and
assembles the class from mixins, one module per kind of method: ``rdd_persistence``
(cache, persist, checkpoints), ``rdd_transforms`` (narrow transformations),
``rdd_shuffles`` (shuffles of whole records), ``rdd_pairs`` (key-value functions and
joins), ``rdd_actions`` (jobs that return records), ``rdd_statistics`` (numeric
summaries) and ``rdd_output`` (writers). ``RDDBarrier`` is in ``rdd_barrier`` and the
exceptions in ``errors``; both are importable from here as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from strataflow.dataset.approximate import BoundedFloat
from strataflow.pyspark.debug_string import debug_string, rdd_name
from strataflow.pyspark.errors import Py4JJavaError, UnsupportedOperation, unsupported  # noqa: F401 (unsupported: re-exported)
from strataflow.pyspark.rdd_actions import RDDActions
from strataflow.pyspark.rdd_barrier import RDDBarrier
from strataflow.pyspark.rdd_output import RDDOutput
from strataflow.pyspark.rdd_pairs import RDDPairs
from strataflow.pyspark.rdd_persistence import RDDPersistence
from strataflow.pyspark.rdd_shuffles import RDDShuffles
from strataflow.pyspark.rdd_statistics import RDDStatistics
from strataflow.pyspark.rdd_transforms import RDDTransforms
from strataflow.pyspark.storagelevel import StorageLevel

if TYPE_CHECKING:
    from strataflow.dataset import Dataset
    from strataflow.pyspark.context import SparkContext

__all__ = ["RDD", "RDDBarrier", "UnsupportedOperation", "BoundedFloat", "Py4JJavaError"]

T = TypeVar("T")
U = TypeVar("U")


class RDD(RDDPersistence[T], RDDTransforms[T], RDDShuffles[T], RDDPairs[T], RDDActions[T], RDDStatistics[T],
          RDDOutput[T], Generic[T]):
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

