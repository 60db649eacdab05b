"""Keyed and shuffle transformations (PySpark's PairRDDFunctions), as a mixin of Dataset.

Records are ``(key, value)`` pairs; a batch's rows are pairs by their first two columns.
Every shuffle goes through one ShuffleDependency; ``combine_by_key`` is the primitive the
aggregations share, and ``cogroup`` the one the joins share, as in PySpark.

A shuffle called without ``num_partitions`` takes its partition count as PySpark does:
the Context's ``default_parallelism`` (``spark.default.parallelism``) when set, else the
dataset's own count for a shuffle of one dataset, and Spark's ``default_partitioner``
(``partitioner.py``) for a cogroup or join of several. A dataset already partitioned by
the partitioner a shuffle asks for is not shuffled again.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable

from strataflow.common.batch import iter_rows
from strataflow.lineage import CoGroupedNode, CombinedNode, MapPartitionsNode, ShuffleDependency, ShuffledNode
from strataflow.config.backends import backend_class
from strataflow.shuffle.partitioner import (HashPartitioner, Partitioner, RangePartitioner, default_partitioner, is_portable,
                                           portable_hash)
from strataflow.shuffle import Aggregator, Grouping, SortOrder

if TYPE_CHECKING:
    from strataflow.dataset import Dataset

__all__ = ["PairOps"]

_SAMPLES_PER_PARTITION = 20


def _pairs(f):
    """Lifts ``f(record)`` to a partition function over pair records."""
    return lambda _, v: [y for x in iter_rows(v) for y in f(x)]


class PairOps:
    # -- helpers ------------------------------------------------------------------------
    def _num_out(self, num_partitions: int | None) -> int:
        """The partition count of a shuffle of this dataset alone: ``num_partitions`` when
        given, else the Context's ``default_parallelism`` when set, else this dataset's own
        count (PySpark's ``_defaultReducePartitions``: ``local[N]`` alone sets no default,
        so an aggregation keeps its input's partition count)."""
        if num_partitions is not None:
            return self.ctx._num(num_partitions)
        default = self.ctx.config.default_parallelism
        return self.num_partitions if default is None else default

    def _shuffle(self, partitioner, num_partitions: int, op: str, aggregator: Aggregator | None = None,
                 map_side_combine: bool = False, key_order=None) -> "Dataset":
        dep = ShuffleDependency(self, partitioner, num_partitions, aggregator, map_side_combine,
                                self.ctx.map_outputs.new_shuffle_id())
        return self._derive(ShuffledNode(dep, key_order), op)

    # -- per-key narrow transformations ------------------------------------------------------
    def map_values(self, f: Callable[[Any], Any]) -> "Dataset":
        """``f`` on every pair's value, the key (and the partitioner) kept.

        >>> ctx.parallelize([("a", 1), ("b", 2)]).map_values(lambda v: v * 10).collect()
        [('a', 10), ('b', 20)]
        """
        return self._derive(
            MapPartitionsNode(self, lambda _, v: [(k, f(x)) for k, x in iter_rows(v)], True), "map_values"
        )

    def flat_map_values(self, f: Callable[[Any], Any]) -> "Dataset":
        """Each pair's value gives an iterable; a pair ``(key, item)`` per item (the partitioner is
        kept).

        >>> ctx.parallelize([("k", "ab")]).flat_map_values(list).collect()
        [('k', 'a'), ('k', 'b')]
        """
        return self._derive(MapPartitionsNode(self, _pairs(lambda kv: ((kv[0], y) for y in f(kv[1]))), True),
                            "flat_map_values")

    def keys(self) -> "Dataset":
        """The key of every pair.

        >>> ctx.parallelize([("a", 1), ("b", 2)]).keys().collect()
        ['a', 'b']
        """
        return self._derive(MapPartitionsNode(self, lambda _, v: [kv[0] for kv in iter_rows(v)]), "keys")

    def values(self) -> "Dataset":
        """The value of every pair.

        >>> ctx.parallelize([("a", 1), ("b", 2)]).values().collect()
        [1, 2]
        """
        return self._derive(MapPartitionsNode(self, lambda _, v: [kv[1] for kv in iter_rows(v)]), "values")

    # -- shuffles ---------------------------------------------------------------------------
    def partition_by(self, num_partitions: int | None = None,
                     partition_func: Callable[[Any], int] = portable_hash) -> "Dataset":
        """Records to partition ``partition_func(key) % num_partitions``; a batch moves as
        sub-batches (integer keys in the first column are hashed vectorized). Without
        ``num_partitions``: see ``_num_out``.

        >>> ctx.parallelize([(1, "a"), (2, "b"), (3, "c")]).partition_by(2).glom().collect()
        [[(2, 'b')], [(1, 'a'), (3, 'c')]]
        """
        n = self._num_out(num_partitions)
        part = HashPartitioner(n, None if partition_func is portable_hash else partition_func)
        if self.partitioner == part:
            return self
        return self._shuffle(part, n, "partition_by")

    def repartition(self, num_partitions: int) -> "Dataset":
        """Exactly ``num_partitions`` partitions of near-equal size, through a shuffle;
        batches stay batches.

        >>> ctx.parallelize(range(6), 1).repartition(3).num_partitions
        3
        """
        n = self.ctx._num(num_partitions)
        return self._shuffle(None, n, "repartition")

    def combine_by_key(self, create_combiner: Callable, merge_value: Callable, merge_combiners: Callable,
                       num_partitions: int | None = None, partition_func: Callable = portable_hash,
                       map_side_combine: bool = True, _op: str = "combine_by_key") -> "Dataset":
        """The general per-key aggregation: ``create_combiner`` turns a key's first value into a
        combiner, ``merge_value`` adds a value to it, ``merge_combiners`` merges two (the others are
        built on it).

        >>> pairs = ctx.parallelize([("a", 1), ("a", 2), ("b", 3)])
        >>> sorted(pairs.combine_by_key(lambda v: [v], lambda c, v: c + [v], lambda c, d: c + d).collect())
        [('a', [1, 2]), ('b', [3])]
        """
        part = HashPartitioner(self._num_out(num_partitions),
                               None if partition_func is portable_hash else partition_func)
        return self._combine(part, Aggregator(create_combiner, merge_value, merge_combiners), map_side_combine, _op)

    def _combine(self, part: Partitioner, agg: Aggregator, map_side_combine: bool, op: str) -> "Dataset":
        """``agg`` by key into ``part``'s partitions: in place when this dataset is
        partitioned so already (``partition_by``, or an aggregation into as many
        partitions), else through a shuffle."""
        if self.partitioner == part:
            return self._derive(CombinedNode(self, agg), op)
        return self._shuffle(part, part.num_partitions, op, agg, map_side_combine)

    def reduce_by_key(self, func: Callable[[Any, Any], Any], num_partitions: int | None = None,
                      partition_func: Callable = portable_hash) -> "Dataset":
        """Merges each key's values with ``func`` (associative and commutative), combining on the map
        side before the shuffle.

        >>> sorted(ctx.parallelize([("a", 1), ("b", 2), ("a", 3)]).reduce_by_key(lambda x, y: x + y).collect())
        [('a', 4), ('b', 2)]
        """
        return self.combine_by_key(lambda v: v, func, func, num_partitions, partition_func, _op="reduce_by_key")

    def fold_by_key(self, zero_value: Any, func: Callable, num_partitions: int | None = None,
                    partition_func: Callable = portable_hash) -> "Dataset":
        """Per key, folds the values into ``zero_value`` with ``func`` (``reduce_by_key`` with a start
        value).

        >>> sorted(ctx.parallelize([("a", 1), ("a", 2), ("b", 3)]).fold_by_key(0, lambda a, b: a + b).collect())
        [('a', 3), ('b', 3)]
        """
        import copy

        return self.combine_by_key(lambda v: func(copy.deepcopy(zero_value), v), func, func, num_partitions,
                                   partition_func, _op="fold_by_key")

    def aggregate_by_key(self, zero_value: Any, seq_func: Callable, comb_func: Callable,
                         num_partitions: int | None = None, partition_func: Callable = portable_hash) -> "Dataset":
        """Per key, folds the values into ``zero_value`` with ``seq_func`` (map side) and merges the
        partial results with ``comb_func`` (reduce side).

        >>> pairs = ctx.parallelize([("a", 1), ("a", 2), ("b", 3)])
        >>> sorted(pairs.aggregate_by_key(0, lambda acc, v: acc + v, lambda a, b: a + b).collect())
        [('a', 3), ('b', 3)]
        """
        import copy

        return self.combine_by_key(lambda v: seq_func(copy.deepcopy(zero_value), v), seq_func, comb_func,
                                   num_partitions, partition_func, _op="aggregate_by_key")

    def group_by_key(self, num_partitions: int | None = None, partition_func: Callable = portable_hash) -> "Dataset":
        """``(key, values)``; no map-side combine (it would only copy lists), as Spark.

        A group is a list, or, when it is larger than the task's execution memory (one
        key with half the records), a :class:`~strataflow.shuffle.SpilledGroup`: a
        read-only sequence backed by a spill file (``len``, iteration, indexing, ``==``
        with a list), which arrives as a list wherever it is pickled (``collect`` from
        executor processes). ``map_values(len)`` streams it; ``map_values(sorted)`` or
        ``map_values(list)`` bring it into memory, as asked.

        >>> sorted(ctx.parallelize([("a", 1), ("b", 2), ("a", 3)]).group_by_key().collect())
        [('a', [1, 3]), ('b', [2])]
        """
        part = HashPartitioner(self._num_out(num_partitions),
                               None if partition_func is portable_hash else partition_func)
        return self._combine(part, Grouping(), False, "group_by_key")

    def group_by(self, f: Callable[[Any], Any], num_partitions: int | None = None) -> "Dataset":
        """``(f(record), [records])`` for every distinct ``f(record)``.

        >>> sorted(ctx.parallelize(range(5)).group_by(lambda x: x % 2).collect())
        [(0, [0, 2, 4]), (1, [1, 3])]
        """
        return self.key_by(f).group_by_key(num_partitions)

    def distinct(self, num_partitions: int | None = None) -> "Dataset":
        """Each distinct record once, through a shuffle (records must be hashable).

        >>> sorted(ctx.parallelize([1, 2, 1, 3, 2]).distinct().collect())
        [1, 2, 3]
        """
        return (self.map(lambda x: (x, None))
                .reduce_by_key(lambda a, _: a, num_partitions)
                .keys())

    # -- joins --------------------------------------------------------------------------------
    def cogroup(self, *others: "Dataset", num_partitions: int | None = None) -> "Dataset":
        """``(key, ([values of self], [values of other], ...))`` for every key of any input.

        >>> a = ctx.parallelize([("k", 1), ("k", 2), ("j", 0)])
        >>> sorted(a.cogroup(ctx.parallelize([("k", "x")])).collect())
        [('j', ([0], [])), ('k', ([1, 2], ['x']))]
        """
        sources = (self, *others)
        width = len(sources)
        if num_partitions is None:
            part = default_partitioner(sources, self.ctx.config.default_parallelism)
        else:
            part = HashPartitioner(self.ctx._num(num_partitions))
        if all(ds.partitioner == part for ds in sources):
            # Spark's CoGroupedRDD: inputs already hash-partitioned alike (e.g. PageRank's
            # cached links and the ranks derived from them) are grouped partition by
            # partition, without shuffling them again.
            return self._derive(CoGroupedNode(sources, part), "cogroup")
        tagged = [ds.map_values(lambda v, i=i: (i, v)) for i, ds in enumerate(sources)]
        return tagged[0].union(*tagged[1:])._combine(part, Grouping(width=width), False, "cogroup")

    def join(self, other: "Dataset", num_partitions: int | None = None) -> "Dataset":
        """``(key, (left, right))`` for every pair of values that share a key (an inner join, by hash
        through one shuffle, none when both sides share a partitioner).

        >>> a, b = ctx.parallelize([("x", 1), ("y", 2)]), ctx.parallelize([("x", "a"), ("x", "b")])
        >>> sorted(a.join(b).collect())
        [('x', (1, 'a')), ('x', (1, 'b'))]
        """
        return self.cogroup(other, num_partitions=num_partitions).flat_map_values(
            lambda vw: [(v, w) for v in vw[0] for w in vw[1]])

    def left_outer_join(self, other: "Dataset", num_partitions: int | None = None) -> "Dataset":
        """``(key, (left, right or None))`` for every pair of the left side.

        >>> a, b = ctx.parallelize([("x", 1), ("y", 2)]), ctx.parallelize([("x", "a")])
        >>> sorted(a.left_outer_join(b).collect())
        [('x', (1, 'a')), ('y', (2, None))]
        """
        return self.cogroup(other, num_partitions=num_partitions).flat_map_values(
            lambda vw: [(v, w) for v in vw[0] for w in (vw[1] or [None])])

    def right_outer_join(self, other: "Dataset", num_partitions: int | None = None) -> "Dataset":
        """``(key, (left or None, right))`` for every pair of the right side.

        >>> a, b = ctx.parallelize([("x", 1)]), ctx.parallelize([("x", "a"), ("y", "b")])
        >>> sorted(a.right_outer_join(b).collect())
        [('x', (1, 'a')), ('y', (None, 'b'))]
        """
        return self.cogroup(other, num_partitions=num_partitions).flat_map_values(
            lambda vw: [(v, w) for v in (vw[0] or [None]) for w in vw[1]])

    def full_outer_join(self, other: "Dataset", num_partitions: int | None = None) -> "Dataset":
        """``(key, (left or None, right or None))`` for every key of either side.

        >>> a, b = ctx.parallelize([("x", 1), ("y", 2)]), ctx.parallelize([("y", 3), ("z", 4)])
        >>> sorted(a.full_outer_join(b).collect())
        [('x', (1, None)), ('y', (2, 3)), ('z', (None, 4))]
        """
        return self.cogroup(other, num_partitions=num_partitions).flat_map_values(
            lambda vw: [(v, w) for v in (vw[0] or [None]) for w in (vw[1] or [None])])

    def group_with(self, *others: "Dataset", num_partitions: int | None = None) -> "Dataset":
        """``cogroup`` with any number of other datasets (PySpark's groupWith).

        >>> a, b, c = (ctx.parallelize([("k", v)]) for v in (1, 2, 3))
        >>> a.group_with(b, c).collect()
        [('k', ([1], [2], [3]))]
        """
        return self.cogroup(*others, num_partitions=num_partitions)

    def subtract_by_key(self, other: "Dataset", num_partitions: int | None = None) -> "Dataset":
        """The pairs of this dataset whose key is not a key of ``other``.

        >>> ctx.parallelize([("a", 1), ("b", 2)]).subtract_by_key(ctx.parallelize([("a", 0)])).collect()
        [('b', 2)]
        """
        return self.cogroup(other, num_partitions=num_partitions).filter(
            lambda kv: bool(kv[1][0]) and not kv[1][1]).flat_map_values(lambda vw: vw[0])

    # -- keyed actions ----------------------------------------------------------------------------
    def lookup(self, key: Any) -> list:
        """The values of ``key``. When the dataset has a partitioner (after
        ``partition_by``, a ``*_by_key`` aggregation or ``sort_by_key``) only the one
        partition that can hold the key is read.

        >>> ctx.parallelize([("a", 1), ("b", 2), ("a", 3)]).lookup("a")
        [1, 3]
        """
        def values_of(v):
            return [x for k, x in iter_rows(v) if k == key]

        parts = None if self.partitioner is None else [self._partition_of(key)]
        return [x for p in self._run(values_of, parts, f"lookup {self.label}") for x in p]

    def _partition_of(self, key: Any) -> int:
        """The partition of ``key`` under this dataset's partitioner, as an executor places
        it. The driver is the user's interpreter, whose ``hash`` may be salted otherwise
        than the executors' (``key_hash.py``): it places a key itself only where that cannot
        matter (a portable key, a range partitioner, executors in this process), and asks an
        executor otherwise (one small task)."""
        part = self.partitioner
        in_driver = backend_class(self.ctx.config.backend).in_driver_process
        if (in_driver or isinstance(part, RangePartitioner)
                or isinstance(part, HashPartitioner) and part.partition_func is None and is_portable(key)):
            return part.partition(key)
        return self.ctx.parallelize([key], 1).map(part.partition).collect()[0]

    def collect_as_map(self) -> dict:
        """The pairs as a dict (a later value of a repeated key wins).

        >>> ctx.parallelize([("a", 1), ("b", 2)]).collect_as_map()
        {'a': 1, 'b': 2}
        """
        return dict(self.collect())

    def reduce_by_key_locally(self, func: Callable[[Any, Any], Any]) -> dict:
        """``reduce_by_key`` returned to the caller as a dict, without a shuffle: each
        partition reduces its own pairs, the caller merges the partitions' dicts.

        >>> ctx.parallelize([("a", 1), ("b", 2), ("a", 3)]).reduce_by_key_locally(lambda x, y: x + y)
        {'a': 4, 'b': 2}
        """
        agg = Aggregator(_identity, func, func)

        def local(tc, v):  # in the task's aggregator: within its execution memory, spilling beyond
            combiner = tc.aggregator(agg)
            combiner.insert_values(iter_rows(v))
            return dict(combiner.items())

        merged: dict = {}
        for part in self._run(local, description=f"reduce_by_key_locally {self.label}", with_task=True):
            for k, x in part.items():
                merged[k] = func(merged[k], x) if k in merged else x
        return merged

    # -- sorting --------------------------------------------------------------------------------
    def sort_by_key(self, ascending: bool = True, num_partitions: int | None = None,
                    key_func: Callable[[Any], Any] | None = None) -> "Dataset":
        """Sorted by ``key_func(key)``: one job samples keys to cut ranges, then a shuffle
        range-partitions and each reduce task sorts its range (stable: ties keep input
        order, and equal keys always share a partition).

        >>> ctx.parallelize([(3, "c"), (1, "a"), (2, "b")]).sort_by_key(ascending=False).collect()
        [(3, 'c'), (2, 'b'), (1, 'a')]
        """
        n = self._num_out(num_partitions)
        kf = key_func or _identity
        per = max(1, math.ceil(_SAMPLES_PER_PARTITION * n * 3 / max(1, self.num_partitions)))

        def sample(v):
            rows = v if isinstance(v, list) else list(iter_rows(v))
            if len(rows) > per:
                step = len(rows) / per
                rows = [rows[int(i * step)] for i in range(per)]
            return [kf(r[0]) for r in rows]

        keys = self.map_partitions(sample).collect() if n > 1 else []
        part = RangePartitioner.from_sample(keys, n, ascending, key_func)

        order = SortOrder(lambda kv: kf(kv[0]), not ascending)
        return self._shuffle(part, part.num_partitions, "sort_by_key", key_order=order)

    def repartition_and_sort_within_partitions(self, num_partitions: int | None = None,
                                               partition_func: Callable = portable_hash, ascending: bool = True,
                                               key_func: Callable[[Any], Any] | None = None) -> "Dataset":
        """Pairs to partition ``partition_func(key) % num_partitions`` (as ``partition_by``),
        each partition sorted by ``key_func(key)``, in the one shuffle (cheaper than
        ``partition_by`` then a sort; ties keep their input order).

        >>> pairs = ctx.parallelize([(3, "c"), (1, "a"), (4, "d"), (2, "b")])
        >>> pairs.repartition_and_sort_within_partitions(2, lambda k: k % 2).glom().collect()
        [[(2, 'b'), (4, 'd')], [(1, 'a'), (3, 'c')]]
        """
        n = self._num_out(num_partitions)
        part = HashPartitioner(n, None if partition_func is portable_hash else partition_func)
        kf = key_func or _identity

        order = SortOrder(lambda kv: kf(kv[0]), not ascending)
        return self._shuffle(part, n, "repartition_and_sort_within_partitions", key_order=order)

    def sort_by(self, key_func: Callable[[Any], Any], ascending: bool = True,
                num_partitions: int | None = None) -> "Dataset":
        """The records sorted by ``key_func(record)`` (``sort_by_key`` on ``(key_func(r), r)``: range
        partitions, stable).

        >>> ctx.parallelize(["ccc", "a", "bb"]).sort_by(len).collect()
        ['a', 'bb', 'ccc']
        """
        return self.key_by(key_func).sort_by_key(ascending, num_partitions).values()


def _identity(x: Any) -> Any:
    return x
