"""The partition count of a shuffle given none (issue 39 §3): the Context's
``default_parallelism`` (Spark's ``spark.default.parallelism``) when set, else the input's
own count for one input and Spark's ``defaultPartitioner`` for a cogroup of several; a
dataset already partitioned as asked is combined in place, without a shuffle."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

import strataflow
from strataflow.config import ConfigError
from strataflow.lineage import CombinedNode, ShuffleDependency
from strataflow.shuffle.partitioner import HashPartitioner, RangePartitioner, default_partitioner


def fake(n: int, partitioner=None) -> SimpleNamespace:
    return SimpleNamespace(num_partitions=n, partitioner=partitioner)


def shuffles(ds) -> int:
    """Shuffle dependencies in ``ds``'s lineage."""
    seen, todo, count = set(), [ds], 0
    while todo:
        d = todo.pop()
        if d.id in seen:
            continue
        seen.add(d.id)
        for dep in d.node.deps:
            count += isinstance(dep, ShuffleDependency)
            todo.append(dep.parent)
    return count


# -- Spark's defaultPartitioner ---------------------------------------------------------------
def test_no_partitioner_and_no_default_takes_the_largest_input():
    assert default_partitioner([fake(2), fake(7), fake(3)], None) == HashPartitioner(7)


def test_a_set_default_wins_over_the_inputs_counts():
    assert default_partitioner([fake(2), fake(700)], 4) == HashPartitioner(4)


def test_an_existing_partitioner_within_tenfold_of_the_largest_input_is_kept():
    rng = RangePartitioner([10, 20])  # 3 partitions
    kept = default_partitioner([fake(3, rng), fake(29)], None)
    assert kept is rng
    # the partitioned input with the most partitions is the one asked
    h5 = HashPartitioner(5)
    assert default_partitioner([fake(3, rng), fake(5, h5), fake(40)], None) is h5


def test_a_partitioner_tenfold_smaller_than_the_largest_input_is_not_kept():
    assert default_partitioner([fake(3, HashPartitioner(3)), fake(30)], None) == HashPartitioner(30)
    # ... unless it has at least the default count
    h3 = HashPartitioner(3)
    assert default_partitioner([fake(3, h3), fake(30)], 3) is h3
    assert default_partitioner([fake(3, h3), fake(30)], 4) == HashPartitioner(4)


def test_default_partitioner_needs_an_input():
    with pytest.raises(ValueError, match="at least one"):
        default_partitioner([], None)


# -- the option -------------------------------------------------------------------------------
def test_default_parallelism_is_checked_and_layered(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="default_parallelism"):
        strataflow.Context(default_parallelism=0, backend="threads", parallelism=1, local_dirs=str(tmp_path))
    monkeypatch.setenv("STRATAFLOW_DEFAULT_PARALLELISM", "3")
    with strataflow.Context(parallelism=2, backend="threads", progress=False, local_dirs=str(tmp_path)) as c:
        assert c.config.default_parallelism == 3 and c.config_sources["default_parallelism"].startswith("env")
        assert c.default_parallelism == 3 and c.config.task_slots == 2  # task slots stay parallelism's
        assert c.parallelize(range(10)).num_partitions == 3  # sources too, as Spark's parallelize
    monkeypatch.delenv("STRATAFLOW_DEFAULT_PARALLELISM")
    with strataflow.Context(parallelism=2, backend="threads", progress=False, local_dirs=str(tmp_path)) as c:
        assert c.config.default_parallelism is None and c.default_parallelism == 2


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """A Context whose shuffles default to 3 partitions."""
    d = tmp_path_factory.mktemp("default3")
    with strataflow.Context(memory="128MB", parallelism=2, default_parallelism=3, backend="threads",
                            progress=False, local_dirs=str(d)) as c:
        yield c


PAIRS = [(i % 7, i) for i in range(60)]


@pytest.mark.parametrize("op, expect", [
    (lambda a, b: a.reduce_by_key(lambda x, y: x + y), lambda: sorted(_sums(PAIRS).items())),
    (lambda a, b: a.group_by_key().map_values(sorted), lambda: sorted(_groups(PAIRS).items())),
    (lambda a, b: a.keys().distinct(), lambda: sorted({k for k, _ in PAIRS})),
    (lambda a, b: a.fold_by_key(0, lambda x, y: x + y), lambda: sorted(_sums(PAIRS).items())),
    (lambda a, b: a.partition_by(), lambda: sorted(PAIRS)),
    (lambda a, b: a.join(b), lambda: sorted((k, (v, w)) for k, v in PAIRS for k2, w in [(1, "x"), (2, "y")]
                                            if k == k2)),
    (lambda a, b: a.keys().intersection(b.keys()), lambda: [1, 2]),
    (lambda a, b: a.keys().subtract(b.keys()).distinct(), lambda: [0, 3, 4, 5, 6]),
    (lambda a, b: a.subtract_by_key(b).keys().distinct(), lambda: [0, 3, 4, 5, 6]),
])
def test_every_shuffle_without_a_count_takes_the_default(three, op, expect):
    a = three.parallelize(PAIRS, 5)
    b = three.parallelize([(1, "x"), (2, "y")], 2)
    out = op(a, b)
    assert out.num_partitions == 3
    assert sorted(out.collect()) == expect()


def test_sort_by_key_without_a_count_takes_the_default(three):
    out = three.parallelize(list(range(100, 0, -1)), 7).map(lambda x: (x, None)).sort_by_key()
    assert out.num_partitions == 3 and out.keys().collect() == list(range(1, 101))


def test_an_explicit_count_wins_over_the_default(three):
    a = three.parallelize(PAIRS, 5)
    assert a.reduce_by_key(lambda x, y: x + y, 4).num_partitions == 4
    assert a.join(a, 6).num_partitions == 6


def test_without_a_default_one_input_keeps_its_count_and_a_join_takes_the_largest(local_ctx):
    a = local_ctx.parallelize(PAIRS, 5)
    b = local_ctx.parallelize([(1, "x")], 2)
    assert local_ctx.config.default_parallelism is None
    assert a.reduce_by_key(lambda x, y: x + y).num_partitions == 5
    assert b.distinct().num_partitions == 2
    assert a.join(b).num_partitions == 5 and b.join(a).num_partitions == 5
    assert b.cogroup(b, b).num_partitions == 2


def test_a_join_keeps_an_inputs_partitioner(local_ctx):
    """Spark's rule: the partitioned input's partitioner is kept, so the join needs no
    shuffle of the inputs partitioned alike and its output stays partitioned so."""
    links = local_ctx.parallelize(PAIRS, 3).partition_by(4)
    ranks = links.map_values(lambda _: 1.0)  # keeps the partitioner
    other = local_ctx.parallelize([(1, "x"), (3, "y")], 2)
    joined = links.join(other)
    assert joined.partitioner == HashPartitioner(4) and joined.num_partitions == 4
    assert sorted(joined.collect()) == sorted((k, (v, w)) for k, v in PAIRS for k2, w in [(1, "x"), (3, "y")]
                                              if k == k2)
    zipped = links.join(ranks)  # both partitioned alike: no shuffle beyond partition_by's
    assert shuffles(zipped) == 1
    assert Counter(zipped.collect()) == Counter((k, (v, 1.0)) for k, v in PAIRS for k2, _ in PAIRS if k == k2)


def test_a_join_keeps_a_range_partitioner(local_ctx):
    data = [(i, str(i)) for i in range(50)]
    ordered = local_ctx.parallelize(data, 4).sort_by_key(num_partitions=3)
    other = local_ctx.parallelize([(i, i * i) for i in range(0, 50, 5)], 2)
    joined = ordered.join(other)
    assert joined.partitioner == ordered.partitioner
    assert sorted(joined.collect()) == [(i, (str(i), i * i)) for i in range(0, 50, 5)]


def test_an_aggregation_of_a_dataset_partitioned_alike_needs_no_shuffle(ctx):
    """PySpark's combineByKey through ``partitionBy``: already partitioned by the same
    partitioner, each partition combines its own keys (on both backends)."""
    parted = ctx.parallelize(PAIRS, 3).partition_by(4)
    sums = parted.reduce_by_key(lambda x, y: x + y, 4)
    assert isinstance(sums.node, CombinedNode) and shuffles(sums) == 1
    assert sums.partitioner == parted.partitioner
    assert sorted(sums.collect()) == sorted(_sums(PAIRS).items())
    groups = parted.group_by_key()  # no count: the input's own, 4, so in place too
    assert isinstance(groups.node, CombinedNode)
    assert {k: sorted(v) for k, v in groups.collect()} == _groups(PAIRS)
    other = parted.reduce_by_key(lambda x, y: x + y, 2)  # another count: a shuffle
    assert not isinstance(other.node, CombinedNode) and shuffles(other) == 2
    assert sorted(other.collect()) == sorted(_sums(PAIRS).items())


def test_transitive_closure_keeps_the_default_count_every_round(three):
    """Spark's transitive_closure.py loop on the native API: with a default the
    partitions stay at it; without one (below) they double each round."""
    edges = {(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (5, 6)}
    tc = three.parallelize(sorted(edges), 2)
    rev = tc.map(lambda xy: (xy[1], xy[0]))
    counts = []
    for _ in range(4):
        tc = tc.union(tc.join(rev).map(lambda a: (a[1][1], a[1][0]))).distinct()
        counts.append(tc.num_partitions)
    assert counts == [3, 3, 3, 3]
    assert set(tc.collect()) == closure(edges)


def test_without_a_default_the_closure_loop_doubles_its_partitions(local_ctx):
    tc = local_ctx.parallelize([(0, 1), (1, 2)], 2)
    rev = tc.map(lambda xy: (xy[1], xy[0]))
    counts = []
    for _ in range(3):
        tc = tc.union(tc.join(rev).map(lambda a: (a[1][1], a[1][0]))).distinct()
        counts.append(tc.num_partitions)
    assert counts == [4, 8, 16]


def closure(edges: set) -> set:
    out = set(edges)
    while True:
        new = {(x, w) for x, y in out for z, w in edges if y == z} | out
        if new == out:
            return out
        out = new


def _sums(pairs):
    out: dict = {}
    for k, v in pairs:
        out[k] = out.get(k, 0) + v
    return out


def _groups(pairs):
    out: dict = {}
    for k, v in pairs:
        out.setdefault(k, []).append(v)
    return {k: sorted(v) for k, v in out.items()}
