"""Dataset: an immutable, partitioned collection with lineage (Spark's RDD).

This module holds the dataset's identity, its lineage (``explain``), the one call through
which a partition is obtained (``iterator``, served by the block manager), and the narrow
transformations. Keyed and shuffle transformations are in ``keyed.py`` and actions in
``actions.py``; the lineage nodes that compute partitions are in ``lineage.py``.

A partition's value is a list of records or a batch (numpy ndarray / pyarrow Table).
Record transformations accept both; ``map_partitions`` sees the value itself.
"""

from __future__ import annotations

import os
import random
import sys
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from strataflow.dataset.actions import ActionOps
from strataflow.dataset.approximate import ApproxOps
from strataflow.dataset.barrier import BarrierDataset
from strataflow.common.batch import is_batch, iter_rows, mask_rows, num_rows, take_rows
from strataflow.common.frames import engine_file
from strataflow.lineage import CoalescedNode, MapPartitionsNode, Node, ShuffleDependency, UnionNode, ZippedPartitionsNode
from strataflow.dataset.checkpoint import CheckpointOps
from strataflow.dataset.small_results import MoreActionOps
from strataflow.dataset.keyed import PairOps
from strataflow.dataset.pickle_files import PickleFileOps
from strataflow.dataset.pipe import PipeOps
from strataflow.dataset.sampling import SamplingOps
from strataflow.dataset.sets import SetOps
from strataflow.dataset.statistics import StatisticsOps
from strataflow.executor.work import TaskCancelled
from strataflow.storage.blocks.block import BlockId
from strataflow.storage.level import StorageLevel
from strataflow.storage.blocks.serde import get_serializer

if TYPE_CHECKING:
    from strataflow.context import Context
    from strataflow.executor.task import TaskContext

__all__ = ["Dataset", "StorageLevelLocked"]



class StorageLevelLocked(ValueError):
    """``persist`` at another level than the one a dataset already has (as in Spark, a
    level cannot change; unpersist first)."""


def _call_site() -> str:
    """``file:line`` of the first caller outside strataflow (names stages like Spark)."""
    f = sys._getframe(2)
    while f is not None and engine_file(f.f_code.co_filename):  # the bundled jobs' own lines name them
        f = f.f_back
    if f is None:
        return "<strataflow>"
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"


def _shuffle_unreachable(ctx_ref: "weakref.ref[Context]", shuffle_id: int) -> None:
    """The dataset reading shuffle ``shuffle_id`` was garbage-collected: no job can read
    the shuffle again, so its files may go (at the next job: a finalizer must not block)."""
    ctx = ctx_ref()
    if ctx is not None:
        ctx._dead_shuffles.append(shuffle_id)


class Dataset(SetOps, SamplingOps, PipeOps, PickleFileOps, StatisticsOps, ApproxOps, MoreActionOps, CheckpointOps,
              PairOps, ActionOps):
    """A partitioned collection. Transformations return new datasets lazily; actions run
    jobs. Obtain one from a :class:`~strataflow.Context`, never directly.

    The operations live in mixins by topic: keyed and shuffle ones in ``keyed.py``,
    actions in ``actions.py`` and ``small_results.py``, and ``sets``, ``sampling``,
    ``statistics``, ``approximate``, ``checkpoint``, ``pipe`` and ``pickle_files``
    (``CheckpointOps`` comes before ``ActionOps``: it follows each job with the writes of
    the checkpoints the job's lineage marked)."""

    def __init__(self, ctx: "Context", node: Node, op: str) -> None:
        self.ctx = ctx
        self.node = node
        self.id = ctx._new_dataset_id()
        self.op = f"{op} at {_call_site()}"
        self._name: str | None = None
        self.storage_level = StorageLevel.NONE
        #: the serializer ``persist`` chose for this dataset (None: the context's)
        self.serializer_name: str | None = None
        for dep in node.deps:  # Spark's ContextCleaner: a shuffle no dataset can read any more
            if isinstance(dep, ShuffleDependency):
                weakref.finalize(self, _shuffle_unreachable, weakref.ref(ctx), dep.shuffle_id).atexit = False

    def __getstate__(self) -> dict:
        """A dataset travels to executors as its lineage, without its Context (which
        lives on the driver only): there, partitions are obtained through the task's
        executor (``iterator``), and the dataset cannot start jobs."""
        state = self.__dict__.copy()
        state["ctx"] = None
        return state

    # -- identity and lineage ------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        """How many partitions (and so tasks per stage) the dataset has.

        >>> ctx.parallelize(range(10), 4).num_partitions
        4
        """
        return self.node.num_partitions

    @property
    def partitioner(self):
        """How the keys are placed in partitions (after ``partition_by``, a ``*_by_key`` aggregation or
        ``sort_by_key``), or None; datasets that share one join without a shuffle.

        >>> pairs = ctx.parallelize([(1, "a")])
        >>> pairs.partitioner is None, pairs.partition_by(2).partitioner is None
        (True, False)
        """
        return self.node.partitioner

    @property
    def name(self) -> str | None:
        """The name ``set_name`` gave (shown by ``explain``, the status page and the event log), or
        None.

        >>> ctx.parallelize([1]).set_name("points").name
        'points'
        """
        return self._name

    @name.setter
    def name(self, value: str | None) -> None:
        self._name = value

    def set_name(self, name: str) -> "Dataset":
        """Names the dataset (for ``explain``, the status page, errors and the event log); returns it.

        >>> ctx.parallelize([1]).set_name("points").name
        'points'
        """
        self._name = name
        return self

    @property
    def label(self) -> str:
        """How errors and logs name this dataset: ``name#id`` or ``op#id``.

        >>> ctx.parallelize([1]).set_name("points").label  # doctest: +ELLIPSIS
        'points#...'
        """
        return f"{self._name or self.op.split(' at ')[0]}#{self.id}"

    def __repr__(self) -> str:
        return f"Dataset[{self.id}] {self._name or ''} {self.op} ({self.num_partitions} partitions)".replace("  ", " ")

    def to_debug_string(self) -> str:
        """The lineage as text (``explain()``; Spark's name).

        >>> print(ctx.parallelize([1]).set_name("one").to_debug_string())  # doctest: +ELLIPSIS
        result stage: 2 tasks
        (2) one ListSource[...] parallelize at ...
        """
        return self.explain()

    def explain(self) -> str:
        """The lineage as text, one dataset a line, shuffle boundaries marked as stages.

        >>> print(ctx.parallelize(range(4)).map(str).explain())  # doctest: +ELLIPSIS
        result stage: 2 tasks
        (2) MapPartitionsNode[...] map at ...
        (2) RangeSource[...] parallelize at ... [range(0, 4)]
        """
        lines: list[str] = []
        seen: set[int] = set()

        def walk(ds: Dataset, indent: int, stage_mark: str | None) -> None:
            pad = "  " * indent
            if stage_mark:
                lines.append(f"{pad}{stage_mark}")
            desc = ds.node.describe()
            name = f"{ds._name} " if ds._name else ""
            again = " (shown above)" if ds.id in seen else ""
            lines.append(f"{pad}({ds.num_partitions}) {name}{type(ds.node).__name__}[{ds.id}] {ds.op}"
                         f"{' [' + desc + ']' if desc else ''}{again}")
            if again:
                return
            seen.add(ds.id)
            for dep in ds.node.deps:
                if isinstance(dep, ShuffleDependency):
                    walk(dep.parent, indent + 1,
                         f"+- stage boundary: shuffle {dep.shuffle_id} -> {dep.num_partitions} partitions "
                         f"(map stage of {dep.parent.num_partitions} tasks)")
                else:
                    walk(dep.parent, indent + 1 if len(ds.node.deps) > 1 else indent, None)

        walk(self, 0, f"result stage: {self.num_partitions} tasks")
        return "\n".join(lines)

    # -- persistence ---------------------------------------------------------------------------
    def persist(self, level=None, serializer: str | None = None) -> "Dataset":
        """Keeps computed partitions at ``level`` (a StorageLevel or its name; default the
        Context's ``default_level``, MEMORY_ONLY unless set) so that later jobs read them
        instead of recomputing; ``StorageLevel.AUTO`` lets the engine choose, per dataset
        and from what it measures, whether blocks leaving memory are dropped, mapped or
        serialized to disk. ``serializer`` overrides the context's for this dataset. Like
        Spark, the level cannot change once set (unpersist first).

        >>> from strataflow import StorageLevel
        >>> ds = ctx.parallelize(range(4)).persist(StorageLevel.MEMORY_AND_DISK)
        >>> ds.get_storage_level(), ds.sum()
        (StorageLevel.MEMORY_AND_DISK, 6)
        >>> _ = ds.unpersist()
        """
        level = StorageLevel.parse(self.ctx.config.default_level if level is None else level)
        if self.storage_level not in (StorageLevel.NONE, level):
            raise StorageLevelLocked(f"persist: dataset {self.label} is already persisted at {self.storage_level.name}; "
                             f"unpersist() it before choosing {level.name}")
        if level.is_valid:  # check first: a bad serializer must leave the dataset unpersisted
            self.serializer_name = None if serializer is None else get_serializer(serializer).name
            self.storage_level = level
            self.ctx._persisted(self)
        else:
            self.storage_level = level
        return self

    def cache(self) -> "Dataset":
        """``persist()``: the Context's ``default_level`` (Spark's MEMORY_ONLY unless set).

        >>> ds = ctx.parallelize(range(4)).cache()
        >>> ds.sum(), ds.is_cached
        (6, True)
        >>> _ = ds.unpersist()
        """
        return self.persist()

    def unpersist(self, blocking: bool = True) -> "Dataset":
        """Removes this dataset's blocks from every store (always synchronously here, so
        ``blocking`` is accepted for PySpark compatibility).

        >>> ds = ctx.parallelize([1]).cache()
        >>> ds.unpersist().is_cached
        False
        """
        self.ctx._unpersist(self.id)
        self.storage_level = StorageLevel.NONE
        return self

    @property
    def is_cached(self) -> bool:
        """True while the dataset is persisted at some level (``cache``/``persist`` until
        ``unpersist``).

        >>> ds = ctx.parallelize([1])
        >>> ds.is_cached, ds.cache().is_cached, ds.unpersist().is_cached
        (False, True, False)
        """
        return self.storage_level.is_valid

    def get_storage_level(self) -> StorageLevel.Level:
        """The level ``persist`` set (``StorageLevel.NONE`` when not persisted).

        >>> ctx.parallelize([1]).get_storage_level()
        StorageLevel.NONE
        """
        return self.storage_level

    # -- getting a partition ----------------------------------------------------------------
    def compute(self, split: int, tc: "TaskContext") -> Any:
        """Partition ``split`` computed from its parents (the engine calls this inside a task; users
        call ``collect`` and the other actions).

        >>> ctx.parallelize(range(4), 2).map(lambda x: x + 1).collect_partitions()[1]
        [3, 4]
        """
        return self.node.compute(split, tc)

    def iterator(self, split: int, tc: "TaskContext") -> Any:
        """This dataset's partition ``split``: through the block manager, which serves it
        from the task's last read (``storage/task_reads.py``), from the cache (once there
        is one) or computes it from lineage.

        >>> ctx.parallelize(range(4), 2).cache().collect_partitions()  # each task reads through iterator()
        [[0, 1], [2, 3]]
        """
        if tc.cancelled is not None and tc.cancelled.is_set():
            raise TaskCancelled(f"stage {tc.stage_id} was cancelled")
        bid = BlockId(self.id, split)
        if self.storage_level.is_valid:
            tc.touched.append(bid)
        try:
            return tc.runtime.block_manager.get_or_compute(bid, self.storage_level, lambda: self.compute(split, tc),
                                                           tc.held, tc.peers.get(bid) if tc.peers else None)
        except Exception as exc:
            if not hasattr(exc, "_strataflow_origin"):
                try:  # the innermost dataset that failed, by id (the error may travel to the driver)
                    exc._strataflow_origin = (self.id, self.label, split)
                except AttributeError:
                    pass
            raise

    def _derive(self, node: Node, op: str) -> "Dataset":
        return Dataset(self.ctx, node, op)

    # -- narrow transformations ---------------------------------------------------------------
    def map_partitions_with_index(self, f: Callable[[int, Any], Any], preserves_partitioning: bool = False) -> "Dataset":
        """``f(index, value)`` -> a list, a batch or any iterable (made a list).

        >>> ds = ctx.parallelize(["a", "b", "c"], 3)
        >>> ds.map_partitions_with_index(lambda i, part: [(i, r) for r in part]).collect()
        [(0, 'a'), (1, 'b'), (2, 'c')]
        """
        return self._derive(MapPartitionsNode(self, f, preserves_partitioning), "map_partitions_with_index")

    def map_partitions(self, f: Callable[[Any], Any], preserves_partitioning: bool = False) -> "Dataset":
        """``f(value)`` on each whole partition: a batch stays a batch (``lambda a: a @ w``)
        and a PySpark-style generator over the records works too.

        >>> ctx.parallelize(range(6), 2).map_partitions(lambda part: [sum(part)]).collect()
        [3, 12]
        """
        return self._derive(MapPartitionsNode(self, lambda _, v: f(v), preserves_partitioning), "map_partitions")

    def map(self, f: Callable[[Any], Any], preserves_partitioning: bool = False) -> "Dataset":
        """``f(record)`` for every record (rows of a batch partition one at a time: ``map_partitions``
        keeps a batch whole).

        >>> ctx.parallelize([1, 2, 3]).map(lambda x: x * 10).collect()
        [10, 20, 30]
        """
        return self._derive(
            MapPartitionsNode(self, lambda _, v: [f(x) for x in iter_rows(v)], preserves_partitioning), "map"
        )

    def filter(self, f: Callable[[Any], bool]) -> "Dataset":
        """Keeps the records for which ``f`` is true; a batch stays a batch of the kept rows.

        >>> ctx.parallelize(range(6)).filter(lambda x: x % 2 == 0).collect()
        [0, 2, 4]
        """

        def keep(_, v):
            if is_batch(v):
                mask = np.fromiter((bool(f(x)) for x in iter_rows(v)), dtype=bool, count=num_rows(v))
                return mask_rows(v, mask)
            return [x for x in v if f(x)]

        return self._derive(MapPartitionsNode(self, keep, True), "filter")

    def flat_map(self, f: Callable[[Any], Iterable], preserves_partitioning: bool = False) -> "Dataset":
        """``f(record)`` returns an iterable; its items are the new dataset's records.

        >>> ctx.parallelize(["a b", "c"]).flat_map(str.split).collect()
        ['a', 'b', 'c']
        """
        return self._derive(
            MapPartitionsNode(self, lambda _, v: [y for x in iter_rows(v) for y in f(x)], preserves_partitioning),
            "flat_map",
        )

    def glom(self) -> "Dataset":
        """Each partition becomes one record: its list of records, or its batch itself.

        >>> ctx.parallelize(range(5), 2).glom().collect()
        [[0, 1], [2, 3, 4]]
        """
        return self._derive(MapPartitionsNode(self, lambda _, v: [v if is_batch(v) else list(v)]), "glom")

    def key_by(self, f: Callable[[Any], Any]) -> "Dataset":
        """``(f(record), record)`` pairs, making a pair dataset for the ``*_by_key`` operations.

        >>> ctx.parallelize(["apple", "bee"]).key_by(len).collect()
        [(5, 'apple'), (3, 'bee')]
        """
        return self._derive(MapPartitionsNode(self, lambda _, v: [(f(x), x) for x in iter_rows(v)]), "key_by")

    def union(self, *others: "Dataset") -> "Dataset":
        """The partitions of this dataset and then of each of ``others`` (no shuffle, duplicates kept).

        >>> ctx.parallelize([1, 2]).union(ctx.parallelize([2, 3])).collect()
        [1, 2, 2, 3]
        """
        for o in others:
            if o.ctx is not self.ctx:
                raise ValueError("union: datasets belong to different contexts")
        return self._derive(UnionNode([self, *others]), "union")

    def __add__(self, other: "Dataset") -> "Dataset":
        """``a + b`` is ``a.union(b)``, as for PySpark's RDDs."""
        if not isinstance(other, Dataset):
            return NotImplemented
        return self.union(other)

    def barrier(self) -> BarrierDataset:
        """The stage's transformations marked as a barrier stage (PySpark's RDDBarrier);
        strataflow runs them as ordinary tasks (see ``barrier.py``).

        >>> ctx.parallelize([1, 2, 3], 3).barrier().map_partitions(lambda part: [sum(part)]).collect()
        [1, 2, 3]
        """
        return BarrierDataset(self)

    def zip_partitions(self, *others: "Dataset", f: Callable[..., Any]) -> "Dataset":
        """``f(value, other_value, ...)`` on partition i of this and every other dataset
        (same partition counts); no shuffle. E.g. points with their cached norms.

        >>> a, b = ctx.parallelize([1, 2, 3, 4], 2), ctx.parallelize([10, 20, 30, 40], 2)
        >>> a.zip_partitions(b, f=lambda x, y: [sum(x) + sum(y)]).collect()
        [33, 77]
        """
        return self._derive(ZippedPartitionsNode([self, *others], f), "zip_partitions")

    def zip(self, other: "Dataset") -> "Dataset":
        """``(record, other_record)`` pairs; partitions must hold equal record counts.

        >>> ctx.parallelize([1, 2, 3], 2).zip(ctx.parallelize("abc", 2)).collect()
        [(1, 'a'), (2, 'b'), (3, 'c')]
        """

        def pair(a, b):
            ra, rb = list(iter_rows(a)), list(iter_rows(b))
            if len(ra) != len(rb):
                raise ValueError(f"zip: partitions hold {len(ra)} and {len(rb)} records; zip needs equal counts")
            return list(zip(ra, rb))

        return self.zip_partitions(other, f=pair)

    def coalesce(self, num_partitions: int, shuffle: bool = False) -> "Dataset":
        """Fewer partitions: without ``shuffle``, by joining neighbours (no stage boundary);
        with it, as ``repartition``.

        >>> ctx.parallelize(range(6), 3).coalesce(1).glom().collect()
        [[0, 1, 2, 3, 4, 5]]
        """
        self.ctx._num(num_partitions)  # an int in [1, max_partitions], or a ConfigError
        if shuffle:
            return self.repartition(num_partitions)
        return self._derive(CoalescedNode(self, num_partitions), "coalesce")

    def sample(self, with_replacement: bool, fraction: float, seed: int | None = None) -> "Dataset":
        """A random sample, reproducible for a seed (each partition seeds ``seed + index``).
        Without replacement each record is kept with probability ``fraction``; with it, a
        record appears Poisson(``fraction``) times.

        >>> sample = ctx.parallelize(range(1000)).sample(False, 0.1, seed=7)
        >>> sample.collect() == sample.collect(), 50 < sample.count() < 150
        (True, True)
        """
        if fraction < 0:
            raise ValueError(f"sample: fraction must be >= 0, got {fraction}")
        base = random.randrange(1 << 30) if seed is None else seed

        def pick(i, v):
            rng = np.random.default_rng([base, i])
            n = num_rows(v)
            if with_replacement:
                counts = rng.poisson(fraction, n)
                idx = np.repeat(np.arange(n), counts)
            else:
                idx = np.flatnonzero(rng.random(n) < fraction)
            return take_rows(v, idx)

        return self._derive(MapPartitionsNode(self, pick, True), "sample")

    def zip_with_index(self) -> "Dataset":
        """``(record, index)`` with indices in partition order; like Spark, this runs a job
        to count the partitions first when there is more than one.

        >>> ctx.parallelize("abc", 2).zip_with_index().collect()
        [('a', 0), ('b', 1), ('c', 2)]
        """
        counts = self.map_partitions(lambda v: [num_rows(v)]).collect() if self.num_partitions > 1 else [0]
        starts = np.concatenate([[0], np.cumsum(counts)]).tolist()
        return self._derive(
            MapPartitionsNode(self, lambda i, v: [(x, starts[i] + j) for j, x in enumerate(iter_rows(v))]),
            "zip_with_index",
        )


    def zip_with_unique_id(self) -> "Dataset":
        """``(record, id)`` with unique ids and no job (unlike ``zip_with_index``): the
        j-th record of partition i gets ``j * num_partitions + i``, so ids have gaps.

        >>> ctx.parallelize("abc", 2).zip_with_unique_id().collect()
        [('a', 0), ('b', 1), ('c', 3)]
        """
        n = self.num_partitions
        return self._derive(
            MapPartitionsNode(self, lambda i, v: [(x, j * n + i) for j, x in enumerate(iter_rows(v))]),
            "zip_with_unique_id",
        )
