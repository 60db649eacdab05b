"""Lineage: how each partition of a dataset is computed from its parents.

A Dataset wraps one *node*. A node names its dependencies and computes one partition
from the parents' partitions, which it obtains through ``parent.iterator(split, tc)`` (the
block manager's call), never by calling the parent's compute directly. Dependencies are
narrow (each child partition needs a few parent partitions, computed in the same task)
or shuffle (every child partition needs every parent partition: a stage boundary).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from strataflow.common.batch import concat, iter_rows, materialize
from strataflow.shuffle.partitioner import Partitioner
from strataflow.shuffle import Aggregator, ExternalAggregator, Grouping, SortOrder

if TYPE_CHECKING:
    from strataflow.dataset import Dataset
    from strataflow.executor.task import TaskContext

__all__ = [
    "Dependency", "NarrowDependency", "ShuffleDependency", "Node", "SourceNode",
    "MapPartitionsNode", "ZippedPartitionsNode", "UnionNode", "CoalescedNode", "ShuffledNode", "CombinedNode",
    "CoGroupedNode", "narrow_ancestors",
]


# -- dependencies ---------------------------------------------------------------------
@dataclass(eq=False)
class Dependency:
    parent: "Dataset"


@dataclass(eq=False)
class NarrowDependency(Dependency):
    """Child partition ``split`` reads the parent partitions ``parents_of(split)``."""

    parents_of: Callable[[int], Sequence[int]] = lambda split: [split]


@dataclass(eq=False)
class ShuffleDependency(Dependency):
    """Every child partition reads a bucket of every parent partition.

    ``partitioner`` None means ``repartition``: rows are dealt out in slices, not by key.
    With an ``aggregator`` and ``map_side_combine``, map tasks combine values by key
    before writing, as Spark's reduceByKey does."""

    partitioner: Partitioner | None = None
    num_partitions: int = 1
    aggregator: Aggregator | None = None
    map_side_combine: bool = False
    shuffle_id: int = -1


def narrow_ancestors(dataset: "Dataset") -> tuple[list["Dataset"], list["ShuffleDependency"]]:
    """Datasets reached through narrow dependencies (one stage) and the shuffle
    dependencies at the stage's edge, in discovery order."""
    seen: set[int] = set()
    members: list = []
    shuffles: list = []
    stack = [dataset]
    while stack:
        ds = stack.pop()
        if ds.id in seen:
            continue
        seen.add(ds.id)
        members.append(ds)
        for dep in ds.node.deps:
            if isinstance(dep, ShuffleDependency):
                if all(dep is not s for s in shuffles):
                    shuffles.append(dep)
            else:
                stack.append(dep.parent)
    return members, shuffles


# -- nodes ----------------------------------------------------------------------------
class Node:
    """How one dataset computes its partitions."""

    deps: list[Dependency] = []
    num_partitions: int = 1
    partitioner: Partitioner | None = None

    #: whether :meth:`preferred_nodes` may name nodes (the scheduler asks only such nodes)
    located: bool = False

    def compute(self, split: int, tc: "TaskContext") -> Any:
        raise TypeError(f"{type(self).__name__} cannot compute partitions")

    def preferred_nodes(self, split: int) -> Sequence[str]:
        """The nodes (ids, as executors report theirs) where partition ``split``'s data
        lies, so its task is best run there (Spark's ``getPreferredLocations``): a block in
        a node's store (``store/ray_store.py``). Empty: anywhere."""
        return ()

    def describe(self) -> str:
        return ""


class SourceNode(Node):
    """A node with no parents (a collection, a range, a file)."""

    deps: list[Dependency] = []


class ListSource(SourceNode):
    """Partitions given in memory, one value each (``parallelize``, ``from_numpy``).

    On the driver it keeps its slices: they are the lineage root nothing can recompute,
    and what the driver sends again when an executor cannot use a slice's file
    (``executor/source_store.py``)."""

    def __init__(self, slices: list) -> None:
        self.slices = slices
        self.num_partitions = len(slices)
        self.ref = None  # where an executor reads the slices (a SliceRef, ``source_store.py``)
        self._uid: str | None = None

    def __getstate__(self) -> dict:
        """Large slices travel as a reference to files written once (``executor/source_store.py``)."""
        from strataflow.shipping.source_store import INLINE_BYTES, current_store, new_uid

        state = self.__dict__.copy()
        store = current_store()
        if store is None or self.slices is None or _approx_bytes(self.slices) < INLINE_BYTES:
            return state
        if self._uid is None:
            self._uid = new_uid()
        state["ref"] = store.ship(self._uid, self, _slices_of)
        state["slices"] = None
        state["_uid"] = self._uid
        return state

    def compute(self, split: int, tc: "TaskContext") -> Any:
        if self.slices is None:
            from strataflow.shipping.source_slices import load_slice

            value = load_slice(self.ref, split)
        else:
            value = self.slices[split]
        return list(value) if isinstance(value, list) else value


def _slices_of(source: ListSource) -> list:
    return source.slices


def _approx_bytes(slices: list) -> int:
    """Bytes of ndarray slices, or a rough 64 per record of lists (enough to choose)."""
    total = 0
    for s in slices:
        total += s.nbytes if hasattr(s, "nbytes") else 64 * len(s) if hasattr(s, "__len__") else 64
    return total


class MapPartitionsNode(Node):
    """``f(split, value) -> value`` applied to each parent partition (a narrow dependency)."""

    def __init__(self, parent: "Dataset", f: Callable[[int, Any], Any], preserves_partitioning: bool = False):
        self.deps = [NarrowDependency(parent)]
        self.f = f
        self.num_partitions = parent.num_partitions
        self.partitioner = parent.partitioner if preserves_partitioning else None

    def compute(self, split: int, tc: "TaskContext") -> Any:
        return materialize(self.f(split, self.deps[0].parent.iterator(split, tc)))


class ZippedPartitionsNode(Node):
    """``f(value_a, value_b, ...)`` on the same partition of several datasets with equal
    partition counts (Spark's zipPartitions): narrow, computed in one task."""

    def __init__(self, parents: Sequence["Dataset"], f: Callable[..., Any], partitioner: Partitioner | None = None) -> None:
        counts = {p.num_partitions for p in parents}
        if len(counts) != 1:
            raise ValueError(f"zip: datasets must have the same number of partitions, got {sorted(counts)}")
        self.deps = [NarrowDependency(p) for p in parents]
        self.f = f
        self.num_partitions = counts.pop()
        self.partitioner = partitioner

    def compute(self, split: int, tc: "TaskContext") -> Any:
        return materialize(self.f(*(d.parent.iterator(split, tc) for d in self.deps)))


class UnionNode(Node):
    """The partitions of several datasets, one after the other."""

    def __init__(self, parents: Sequence["Dataset"]) -> None:
        self.offsets = list(itertools.accumulate([0] + [p.num_partitions for p in parents]))
        self.deps = []
        for i, p in enumerate(parents):
            lo = self.offsets[i]
            self.deps.append(NarrowDependency(p, parents_of=lambda s, lo=lo, n=p.num_partitions: [s - lo] if lo <= s < lo + n else []))
        self.num_partitions = self.offsets[-1]

    def compute(self, split: int, tc: "TaskContext") -> Any:
        for i, dep in enumerate(self.deps):
            lo, hi = self.offsets[i], self.offsets[i + 1]
            if lo <= split < hi:
                return dep.parent.iterator(split - lo, tc)
        raise IndexError(f"union has no partition {split}")


class CoalescedNode(Node):
    """Fewer partitions without a shuffle: child partition i joins a contiguous run of
    parent partitions, so order is kept."""

    def __init__(self, parent: "Dataset", num_partitions: int) -> None:
        n = parent.num_partitions
        k = max(1, min(num_partitions, n))
        self.groups = [list(range((i * n) // k, ((i + 1) * n) // k)) for i in range(k)]
        self.deps = [NarrowDependency(parent, parents_of=lambda s: self.groups[s])]
        self.num_partitions = k

    def compute(self, split: int, tc: "TaskContext") -> Any:
        parent = self.deps[0].parent
        return concat([parent.iterator(s, tc) for s in self.groups[split]])

    def describe(self) -> str:
        return f"{self.deps[0].parent.num_partitions} -> {self.num_partitions}"


class ShuffledNode(Node):
    """The reduce side of a shuffle: reads its bucket of every map output, then groups by
    key (a :class:`Grouping`), combines by key (another aggregator), sorts (``key_order``),
    or concatenates. Grouping, combining and sorting are the task's work structures: each
    holds what it has within the task's execution memory and spills sorted runs beyond it
    (``shuffle/spillable_group.py``, ``aggregator.py``, ``external_sort.py``)."""

    def __init__(self, dep: ShuffleDependency, key_order: SortOrder | None = None) -> None:
        self.deps = [dep]
        self.dep = dep
        self.num_partitions = dep.num_partitions
        self.partitioner = dep.partitioner
        self.key_order = key_order

    def compute(self, split: int, tc: "TaskContext") -> Any:
        dep = self.dep
        buckets = tc.read_shuffle(dep.shuffle_id, split, dep.parent.num_partitions)
        if isinstance(dep.aggregator, Grouping):
            grouper = tc.grouper(dep.aggregator)
            for b in buckets:
                grouper.insert(iter_rows(b))
            out = list(grouper.groups())
        elif dep.aggregator is not None:
            combiner = tc.aggregator(dep.aggregator)
            for b in buckets:
                if dep.map_side_combine:
                    combiner.insert_combiners(iter_rows(b))
                else:
                    combiner.insert_values(iter_rows(b))
            out = list(combiner.items())
        elif self.key_order is not None:
            sorter = tc.sorter(self.key_order)
            for b in buckets:
                sorter.insert_all(iter_rows(b))
            return list(sorter.sorted_records())
        else:
            return concat(list(buckets))
        if self.key_order is not None:
            sorter = tc.sorter(self.key_order)
            sorter.insert_all(out)
            out = list(sorter.sorted_records())
        return out

    def describe(self) -> str:
        p = self.dep.partitioner
        return f"shuffle {self.dep.shuffle_id}, {type(p).__name__ if p else 'slices'}"


class CombinedNode(Node):
    """Values combined (or grouped) by key within each partition of a parent already
    partitioned by key (no key spans two partitions), so an aggregation needs no shuffle:
    Spark's and PySpark's ``combineByKey`` on a dataset whose partitioner is the one asked
    for."""

    def __init__(self, parent: "Dataset", aggregator: Aggregator) -> None:
        self.deps = [NarrowDependency(parent)]
        self.aggregator = aggregator
        self.num_partitions = parent.num_partitions
        self.partitioner = parent.partitioner

    def compute(self, split: int, tc: "TaskContext") -> Any:
        value = self.deps[0].parent.iterator(split, tc)
        if isinstance(self.aggregator, Grouping):
            grouper = tc.grouper(self.aggregator)
            grouper.insert(iter_rows(value))
            return list(grouper.groups())
        combiner = tc.aggregator(self.aggregator)
        combiner.insert_values(iter_rows(value))
        return list(combiner.items())

    def describe(self) -> str:
        return "combined in place: already partitioned by key"


class CoGroupedNode(Node):
    """``(key, (values of parent 0, values of parent 1, ...))`` for parents partitioned
    alike (Spark's CoGroupedRDD without a shuffle): partition ``split`` of every parent is
    grouped in one task, through the task's grouper (groups may be larger than memory)."""

    def __init__(self, parents: Sequence["Dataset"], partitioner: Partitioner) -> None:
        self.deps = [NarrowDependency(p) for p in parents]
        self.num_partitions = parents[0].num_partitions
        self.partitioner = partitioner

    def compute(self, split: int, tc: "TaskContext") -> Any:
        grouper = tc.grouper(Grouping(width=len(self.deps)))
        for i, dep in enumerate(self.deps):
            grouper.insert((k, (i, x)) for k, x in iter_rows(dep.parent.iterator(split, tc)))
        return list(grouper.groups())

    def describe(self) -> str:
        return f"cogroup of {len(self.deps)} datasets partitioned alike"


def map_side_combine(value: Any, agg: Aggregator, tc: "TaskContext") -> list:
    """A map task's records combined by key before they are written."""
    combiner: ExternalAggregator = tc.aggregator(agg)
    combiner.insert_values(iter_rows(value))
    return list(combiner.items())
