"""Every transformation against plain Python on the same data.

Hypothesis draws a partition *layout*: 1..9 partitions, each a short list that may be
empty, so empty partitions appear first, last and in between. A dataset is built with
exactly that layout (``parallelize(parts, len(parts)).flat_map(...)``), optionally as
numpy or Arrow batches, and every result is compared with the same computation on the
flat Python list.
"""

from __future__ import annotations

import operator
import threading
from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strataflow
from strataflow import TaskFailedError
from strataflow.shuffle.partitioner import portable_hash

from layouts import SETTINGS, flat, ints, layouts, pair, py, small_keys  # noqa: F401

pytestmark = pytest.mark.usefixtures("no_leaks")

nparts = st.integers(1, 9)
out_parts = st.one_of(st.none(), nparts)


def records(ctx, parts, kind="list"):
    """Integer records laid out exactly as ``parts``: lists, or 1-D int64 ndarrays."""
    base = ctx.parallelize(parts, len(parts))
    if kind == "list":
        return base.flat_map(lambda p: p)
    assert kind == "numpy"
    return base.map_partitions(lambda v: np.asarray(v[0], dtype=np.int64))


def pairs(ctx, parts, kind="list"):
    """``(key, value)`` records laid out as ``parts``: tuples, (n, 2) int64 ndarrays, or
    two-column Arrow tables."""
    base = ctx.parallelize(parts, len(parts))
    if kind == "list":
        return base.flat_map(lambda p: p)
    if kind == "numpy":
        return base.map_partitions(lambda v: np.asarray(v[0], dtype=np.int64).reshape(-1, 2))
    assert kind == "arrow"
    return base.map_partitions(lambda v: pa.table({
        "k": pa.array([k for k, _ in v[0]], type=pa.int64()),
        "v": pa.array([x for _, x in v[0]], type=pa.int64()),
    }))


def collect(ds):
    return [py(x) for x in ds.collect()]


def partitions(ds):
    """Each partition's records, as plain Python lists (one job)."""
    return [[py(x) for x in (p if isinstance(p, list) else _rows(p))] for p in ds.glom().collect()]


def _rows(batch):
    if isinstance(batch, pa.Table):
        return list(zip(*(c.to_pylist() for c in batch.columns)))
    return list(batch)


def group(kvs):
    d = defaultdict(list)
    for k, v in kvs:
        d[k].append(v)
    return d


record_kinds = st.sampled_from(["list", "numpy"])
pair_kinds = st.sampled_from(["list", "numpy", "arrow"])


# -- narrow transformations -------------------------------------------------------------
@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_map_keeps_layout(ctx, parts, kind):
    ds = records(ctx, parts, kind).map(lambda x: x * 3 - 1)
    assert ds.num_partitions == len(parts)
    assert partitions(ds) == [[x * 3 - 1 for x in p] for p in parts]
    assert collect(ds) == [x * 3 - 1 for x in flat(parts)]


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_filter(ctx, parts, kind):
    ds = records(ctx, parts, kind).filter(lambda x: x % 3 == 0)
    assert partitions(ds) == [[x for x in p if x % 3 == 0] for p in parts]
    if kind == "numpy":  # a batch stays a batch of the kept rows
        assert all(isinstance(v, np.ndarray) for v in ds.collect_partitions())


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_flat_map(ctx, parts, kind):
    f = lambda x: [x] * (abs(x) % 3)  # noqa: E731 - zero, one or two copies
    ds = records(ctx, parts, kind).flat_map(f)
    assert partitions(ds) == [[y for x in p for y in f(x)] for p in parts]


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_map_partitions_with_list_and_generator_functions(ctx, parts, kind):
    ds = records(ctx, parts, kind)
    summed = ds.map_partitions(lambda v: [sum(int(x) for x in v), len(v)])
    assert collect(summed) == [y for p in parts for y in (sum(p), len(p))]

    def gen(it):
        for x in it:
            if x % 2:
                yield int(x) * 10

    assert partitions(ds.map_partitions(gen)) == [[x * 10 for x in p if x % 2] for p in parts]
    # tuples and map objects are iterables too: made lists
    assert collect(ds.map_partitions(lambda v: tuple(v))) == flat(parts)
    assert collect(ds.map_partitions(lambda v: map(abs, v))) == [abs(x) for x in flat(parts)]


@SETTINGS
@given(rows=st.integers(0, 30), cols=st.integers(1, 4), n=nparts)
def test_map_partitions_batch_functions_keep_batches(ctx, rows, cols, n):
    a = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
    w = np.arange(cols * 2, dtype=np.float64).reshape(cols, 2)
    doubled = ctx.from_numpy(a, n).map_partitions(lambda b: b * 2)
    parts = doubled.collect_partitions()
    assert len(parts) == n and all(isinstance(p, np.ndarray) for p in parts)
    np.testing.assert_array_equal(np.concatenate(parts), a * 2)
    assert doubled.count() == rows
    projected = ctx.from_numpy(a, n).map_partitions(lambda b: b @ w)
    np.testing.assert_array_equal(np.concatenate(projected.collect_partitions()), a @ w)
    assert [list(r) for r in projected.collect()] == (a @ w).tolist()


def test_map_partitions_returning_none_fails_the_job(ctx):
    with pytest.raises(TaskFailedError) as err:
        ctx.parallelize(range(4), 2).map_partitions(lambda v: None).collect()
    assert isinstance(err.value.__cause__, TypeError)


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_map_partitions_with_index(ctx, parts, kind):
    ds = records(ctx, parts, kind).map_partitions_with_index(lambda i, v: [(i, x) for x in v])
    assert collect(ds) == [(i, x) for i, p in enumerate(parts) for x in p]
    # every partition is called, empty ones too
    assert collect(records(ctx, parts, kind).map_partitions_with_index(lambda i, v: [i])) == list(range(len(parts)))


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_key_by(ctx, parts, kind):
    ds = records(ctx, parts, kind).key_by(lambda x: x % 5)
    assert partitions(ds) == [[(x % 5, x) for x in p] for p in parts]


@SETTINGS
@given(parts=layouts(pair), kind=pair_kinds)
def test_map_values_flat_map_values_keys_values(ctx, parts, kind):
    ds = pairs(ctx, parts, kind)
    assert partitions(ds.map_values(lambda v: v * 2)) == [[(k, v * 2) for k, v in p] for p in parts]
    f = lambda v: range(abs(v) % 3)  # noqa: E731
    assert partitions(ds.flat_map_values(f)) == [[(k, y) for k, v in p for y in f(v)] for p in parts]
    assert partitions(ds.keys()) == [[k for k, _ in p] for p in parts]
    assert partitions(ds.values()) == [[v for _, v in p] for p in parts]


@SETTINGS
@given(parts=layouts(pair), n=nparts)
def test_map_values_keeps_the_partitioner_and_map_drops_it(ctx, parts, n):
    hashed = pairs(ctx, parts).partition_by(n)
    assert hashed.map_values(lambda v: v + 1).partitioner == hashed.partitioner
    assert hashed.filter(lambda kv: kv[1] > 0).partitioner == hashed.partitioner
    assert hashed.map(lambda kv: kv).partitioner is None
    # ... and aggregating the partitioned dataset by key again gives the plain answer
    again = hashed.map_values(lambda v: v + 1).reduce_by_key(operator.add, n)
    assert dict(collect(again)) == {k: sum(v + 1 for v in vs) for k, vs in group(flat(parts)).items()}


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_glom(ctx, parts, kind):
    got = records(ctx, parts, kind).glom().collect()
    assert len(got) == len(parts)
    if kind == "numpy":  # a batch partition is glommed as the batch itself
        assert all(isinstance(g, np.ndarray) for g in got)
    assert [[py(x) for x in g] for g in got] == parts


@SETTINGS
@given(a=layouts(ints), b=layouts(ints), c=layouts(ints), kind=record_kinds)
def test_union(ctx, a, b, c, kind):
    u = records(ctx, a, kind).union(records(ctx, b), records(ctx, c, kind))
    assert u.num_partitions == len(a) + len(b) + len(c)
    assert partitions(u) == a + b + c
    assert u.count() == len(flat(a + b + c))
    assert collect(records(ctx, a).union()) == flat(a)


def test_union_refuses_datasets_of_another_context(ctx, tmp_path):
    with strataflow.Context(memory="64MB", parallelism=1, progress=False,
                            local_dirs=[str(tmp_path)], shuffle_dirs=[str(tmp_path)]) as other:
        with pytest.raises(ValueError):
            ctx.parallelize([1]).union(other.parallelize([2]))


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_zip_with_index(ctx, parts, kind):
    ds = records(ctx, parts, kind).zip_with_index()
    assert ds.num_partitions == len(parts)
    assert partitions(ds) == _relayout([(x, i) for i, x in enumerate(flat(parts))], parts)


def _relayout(items, parts):
    out, i = [], 0
    for p in parts:
        out.append(items[i:i + len(p)])
        i += len(p)
    return out


@SETTINGS
@given(parts=layouts(st.integers(0, 10_000), max_part=12), kind=record_kinds,
       fraction=st.sampled_from([0.1, 0.5, 0.9]), seed=st.integers(0, 2**31))
def test_sample_without_replacement(ctx, parts, kind, fraction, seed):
    # distinct records (value * 100 + position) so that "a subsequence" is checkable
    parts = _distinct(parts)
    ds = records(ctx, parts, kind)
    got = collect(ds.sample(False, fraction, seed))
    assert got == collect(records(ctx, parts, kind).sample(False, fraction, seed))  # same seed, same sample
    assert _is_subsequence(got, flat(parts))
    assert len(set(got)) == len(got)
    assert collect(ds.sample(False, 0.0, seed)) == []
    assert collect(ds.sample(False, 1.0, seed)) == flat(parts)
    smp = ds.sample(False, fraction, seed)
    assert smp.num_partitions == len(parts)
    if kind == "numpy":
        assert all(isinstance(v, np.ndarray) for v in smp.collect_partitions())


@SETTINGS
@given(parts=layouts(st.integers(0, 10_000), max_part=12), fraction=st.sampled_from([0.5, 1.0, 2.5]),
       seed=st.integers(0, 2**31))
def test_sample_with_replacement(ctx, parts, fraction, seed):
    parts = _distinct(parts)
    ds = records(ctx, parts)
    got = collect(ds.sample(True, fraction, seed))
    assert got == collect(ds.sample(True, fraction, seed))
    # each record appears 0..k times, in input order
    dedup = [x for i, x in enumerate(got) if i == 0 or got[i - 1] != x]
    assert _is_subsequence(dedup, flat(parts))
    assert collect(ds.sample(True, 0.0, seed)) == []


def test_sample_is_not_constant_across_seeds_and_rejects_negative_fraction(ctx):
    ds = ctx.parallelize(range(2000), 4)
    a, b = ds.sample(False, 0.5, 1).collect(), ds.sample(False, 0.5, 2).collect()
    assert a != b
    assert 800 < len(a) < 1200  # about half
    with pytest.raises(ValueError):
        ds.sample(False, -0.1, 1)


def _distinct(parts):
    out, i = [], 0
    for p in parts:
        out.append([x * 1000 + i + j for j, x in enumerate(p)])
        i += len(p)
    return out


def _is_subsequence(sub, seq):
    it = iter(seq)
    return all(any(x == y for y in it) for x in sub)


@SETTINGS
@given(parts=layouts(st.integers(-5, 5)), kind=record_kinds, n=out_parts)
def test_distinct(ctx, parts, kind, n):
    ds = records(ctx, parts, kind).distinct(n)
    got = collect(ds)
    assert sorted(got) == sorted(set(flat(parts)))
    assert ds.num_partitions == (n or len(parts))


def test_distinct_of_strings_and_tuples(ctx):
    data = ["a", "b", "a", "é", "", "", ("x", 1), ("x", 1), ("x", 2)]
    assert Counter(ctx.parallelize(data, 4).distinct(3).collect()) == Counter(set(data))


# -- aggregations by key ---------------------------------------------------------------
def _check_hash_placement(ds, n):
    for i, part in enumerate(partitions(ds)):
        for rec in part:
            assert portable_hash(rec[0]) % n == i, f"key {rec[0]!r} in partition {i} of {n}"


@SETTINGS
@given(parts=layouts(pair), kind=pair_kinds, n=out_parts)
def test_reduce_by_key(ctx, parts, kind, n):
    ds = pairs(ctx, parts, kind).reduce_by_key(operator.add, n)
    out_n = n or len(parts)
    assert ds.num_partitions == out_n
    got = collect(ds)
    assert len(got) == len({k for k, _ in got})  # each key once
    assert dict(got) == {k: sum(vs) for k, vs in group(flat(parts)).items()}
    _check_hash_placement(ds, out_n)


@SETTINGS
@given(parts=layouts(st.tuples(st.text(max_size=3), ints)), n=out_parts)
def test_reduce_by_key_with_string_keys(ctx, parts, n):
    ds = pairs(ctx, parts).reduce_by_key(max, n)
    assert dict(collect(ds)) == {k: max(vs) for k, vs in group(flat(parts)).items()}
    _check_hash_placement(ds, n or len(parts))


@SETTINGS
@given(parts=layouts(pair), kind=pair_kinds, n=out_parts)
def test_aggregate_by_key(ctx, parts, kind, n):
    ds = pairs(ctx, parts, kind)
    sums = ds.aggregate_by_key((0, 0), lambda acc, v: (acc[0] + v, acc[1] + 1),
                               lambda a, b: (a[0] + b[0], a[1] + b[1]), n)
    assert dict(collect(sums)) == {k: (sum(vs), len(vs)) for k, vs in group(flat(parts)).items()}
    # a mutable zero value is copied for every key: mutating it in place is allowed
    zero = []
    lists = ds.aggregate_by_key(zero, lambda acc, v: (acc.append(py(v)), acc)[1],
                                lambda a, b: (a.extend(b), a)[1], n)
    assert {k: sorted(v) for k, v in collect(lists)} == {k: sorted(vs) for k, vs in group(flat(parts)).items()}
    assert zero == []


@SETTINGS
@given(parts=layouts(pair), kind=pair_kinds, n=out_parts)
def test_fold_by_key(ctx, parts, kind, n):
    ds = pairs(ctx, parts, kind)
    assert dict(collect(ds.fold_by_key(0, operator.add, n))) == {k: sum(vs) for k, vs in group(flat(parts)).items()}
    zero = []
    lists = ds.map_values(lambda v: [py(v)]).fold_by_key(zero, lambda a, b: (a.extend(b), a)[1], n)
    assert {k: sorted(v) for k, v in collect(lists)} == {k: sorted(vs) for k, vs in group(flat(parts)).items()}
    assert zero == []


@SETTINGS
@given(parts=layouts(pair), kind=pair_kinds, n=out_parts, map_side=st.booleans())
def test_combine_by_key(ctx, parts, kind, n, map_side):
    ds = pairs(ctx, parts, kind).combine_by_key(
        lambda v: [py(v)], lambda c, v: c + [py(v)], lambda a, b: a + b, n, map_side_combine=map_side)
    got = collect(ds)
    assert {k: sorted(v) for k, v in got} == {k: sorted(vs) for k, vs in group(flat(parts)).items()}
    _check_hash_placement(ds, n or len(parts))


@SETTINGS
@given(parts=layouts(pair), kind=pair_kinds, n=out_parts)
def test_group_by_key(ctx, parts, kind, n):
    ds = pairs(ctx, parts, kind).group_by_key(n)
    got = collect(ds)
    assert len(got) == len({k for k, _ in got})
    assert {k: sorted(v) for k, v in got} == {k: sorted(vs) for k, vs in group(flat(parts)).items()}
    _check_hash_placement(ds, n or len(parts))


@SETTINGS
@given(parts=layouts(pair), n=nparts)
def test_custom_partition_func(ctx, parts, n):
    ds = pairs(ctx, parts).reduce_by_key(operator.add, n, partition_func=lambda k: k // 2)
    for i, part in enumerate(partitions(ds)):
        assert all((k // 2) % n == i for k, _ in part)
    assert dict(collect(ds)) == {k: sum(vs) for k, vs in group(flat(parts)).items()}


def test_aggregation_that_spills_gives_the_same_answer(tmp_path):
    """1MB of execution memory for 40k keys: the aggregators spill sorted runs to disk
    and merge them; the answer must not change."""
    spilled = []
    data = [(i % 40_000, i) for i in range(120_000)]
    with strataflow.Context(memory="1MB", parallelism=2, progress=False,
                            local_dirs=[str(tmp_path)], shuffle_dirs=[str(tmp_path)]) as c:
        c.events.subscribe(lambda e: spilled.append(e.get("spill_bytes", 0)) if e["event"] == "TaskEnd" else None)
        got = dict(c.parallelize(data, 3).reduce_by_key(operator.add, 2).collect())
        groups = dict(c.parallelize(data, 3).group_by_key(2).collect())
    assert sum(spilled) > 0, "expected the aggregation to spill with 1MB of memory"
    expected = defaultdict(int)
    for k, v in data:
        expected[k] += v
    assert got == expected
    assert len(groups) == 40_000 and sorted(groups[7]) == [7, 40_007, 80_007]


# -- joins ---------------------------------------------------------------------------------
def _join(a, b):
    return Counter((k, (v, w)) for k, v in a for k2, w in b if k == k2)


def _left(a, b):
    gb = group(b)
    return Counter((k, (v, w)) for k, v in a for w in (gb.get(k) or [None]))


def _right(a, b):
    ga = group(a)
    return Counter((k, (v, w)) for k, w in b for v in (ga.get(k) or [None]))


def _full(a, b):
    ga, gb = group(a), group(b)
    return Counter((k, (v, w)) for k in set(ga) | set(gb) for v in (ga.get(k) or [None]) for w in (gb.get(k) or [None]))


@SETTINGS
@given(a=layouts(pair), b=layouts(pair), ka=pair_kinds, kb=pair_kinds, n=out_parts)
def test_joins(ctx, a, b, ka, kb, n):
    da, db = pairs(ctx, a, ka), pairs(ctx, b, kb)
    fa, fb = flat(a), flat(b)
    for method, expect in [("join", _join), ("left_outer_join", _left),
                           ("right_outer_join", _right), ("full_outer_join", _full)]:
        ds = getattr(da, method)(db, n)
        assert Counter(collect(ds)) == expect(fa, fb), method
        assert ds.num_partitions == (n or max(len(a), len(b))), method


def test_joins_with_duplicate_and_missing_keys(ctx):
    a = [(1, "a1"), (1, "a2"), (2, "a3"), (4, "a4")]
    b = [(1, "b1"), (1, "b2"), (3, "b3"), (4, "b4"), (4, "b5")]
    da, db = ctx.parallelize(a, 3), ctx.parallelize(b, 5)
    assert Counter(da.join(db).collect()) == Counter([
        (1, ("a1", "b1")), (1, ("a1", "b2")), (1, ("a2", "b1")), (1, ("a2", "b2")),
        (4, ("a4", "b4")), (4, ("a4", "b5"))])
    assert Counter(da.left_outer_join(db, 2).collect()) == _join(a, b) + Counter([(2, ("a3", None))])
    assert Counter(da.right_outer_join(db, 7).collect()) == _join(a, b) + Counter([(3, (None, "b3"))])
    assert Counter(da.full_outer_join(db).collect()) == _join(a, b) + Counter([(2, ("a3", None)), (3, (None, "b3"))])
    empty = ctx.parallelize([], 2)
    assert da.join(empty).collect() == []
    assert Counter(da.left_outer_join(empty).collect()) == Counter((k, (v, None)) for k, v in a)
    assert Counter(empty.right_outer_join(db).collect()) == Counter((k, (None, w)) for k, w in b)


@SETTINGS
@given(a=layouts(pair), b=layouts(pair), c=layouts(pair), n=out_parts)
def test_cogroup(ctx, a, b, c, n):
    ga, gb, gc = group(flat(a)), group(flat(b)), group(flat(c))
    two = pairs(ctx, a).cogroup(pairs(ctx, b, "numpy"), num_partitions=n)
    assert {k: (sorted(v), sorted(w)) for k, (v, w) in collect(two)} == {
        k: (sorted(ga.get(k, [])), sorted(gb.get(k, []))) for k in set(ga) | set(gb)}
    assert two.num_partitions == (n or max(len(a), len(b)))
    three = pairs(ctx, a).cogroup(pairs(ctx, b), pairs(ctx, c, "arrow"), num_partitions=n)
    assert {k: tuple(sorted(x) for x in vs) for k, vs in collect(three)} == {
        k: (sorted(ga.get(k, [])), sorted(gb.get(k, [])), sorted(gc.get(k, []))) for k in set(ga) | set(gb) | set(gc)}


# -- sorting -------------------------------------------------------------------------------
def _indexed(parts):
    """(small key, position) pairs: many ties, and the position shows stability."""
    out, i = [], 0
    for p in parts:
        out.append([(k, i + j) for j, (k, _) in enumerate(p)])
        i += len(p)
    return out


@SETTINGS
@given(parts=layouts(pair), kind=pair_kinds, ascending=st.booleans(), n=out_parts)
def test_sort_by_key_is_a_stable_total_sort(ctx, parts, kind, ascending, n):
    parts = _indexed(parts)
    ds = pairs(ctx, parts, kind).sort_by_key(ascending, n)
    expected = sorted(flat(parts), key=lambda kv: kv[0], reverse=not ascending)  # stable
    assert collect(ds) == expected
    assert 1 <= ds.num_partitions <= (n or len(parts))
    # equal keys share a partition
    where = defaultdict(set)
    for i, part in enumerate(partitions(ds)):
        for k, _ in part:
            where[k].add(i)
    assert all(len(s) == 1 for s in where.values())


@SETTINGS
@given(parts=layouts(pair), ascending=st.booleans(), n=out_parts)
def test_sort_by_key_with_key_func(ctx, parts, ascending, n):
    parts = _indexed(parts)
    ds = pairs(ctx, parts).sort_by_key(ascending, n, key_func=lambda k: -k if k % 2 else k * 10)
    kf = lambda kv: -kv[0] if kv[0] % 2 else kv[0] * 10  # noqa: E731
    assert collect(ds) == sorted(flat(parts), key=kf, reverse=not ascending)


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds, ascending=st.booleans(), n=out_parts)
def test_sort_by(ctx, parts, kind, ascending, n):
    ds = records(ctx, parts, kind).sort_by(lambda x: x % 7, ascending, n)
    assert collect(ds) == sorted(flat(parts), key=lambda x: x % 7, reverse=not ascending)
    total = records(ctx, parts, kind).sort_by(lambda x: x, ascending, n)
    assert collect(total) == sorted(flat(parts), reverse=not ascending)


@SETTINGS
@given(parts=layouts(st.tuples(st.integers(-300, 300), ints)), ascending=st.booleans(), n=nparts,
       dtypes=st.lists(st.sampled_from(["smallest", "int64", "uint16", "float64"]), min_size=9, max_size=9))
def test_sort_by_key_over_batches_of_different_dtypes(ctx, parts, ascending, n, dtypes):
    """Each partition a batch of its own dtype (int8 when its keys fit, uint16, float64,
    ...): range bounds sampled from one partition must still place the keys of another."""
    parts = _indexed(parts)
    parts = [[(k - 150 * (i % 3), v) for k, v in p] for i, p in enumerate(parts)]  # some negative

    def batch(i, v):
        rows = np.asarray(v[0], dtype=np.int64).reshape(-1, 2)
        kind = dtypes[i]
        if kind == "smallest":
            kind = "int8" if rows.size == 0 or np.abs(rows).max() < 128 else "int16"
        if kind == "uint16" and (rows < 0).any():
            kind = "int32"
        return rows.astype(kind)

    ds = ctx.parallelize(parts, len(parts)).map_partitions_with_index(batch)
    got = [(int(k), int(v)) for k, v in (py(r) for r in ds.sort_by_key(ascending, n).collect())]
    assert got == sorted(flat(parts), key=lambda kv: kv[0], reverse=not ascending)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.sampled_from([0, 1, 63, 64, 150]), min_size=1, max_size=6),
       key_range=st.sampled_from([3, 1000, 2**63]), ascending=st.booleans(), n=nparts, seed=st.integers(0, 2**32 - 1))
def test_shuffles_of_large_record_partitions(ctx, sizes, key_range, ascending, n, seed):
    """Partitions of 64 records and more (int keys in such lists are placed vectorized):
    sorting, hash placement and aggregation must agree with the record-by-record rule."""
    rng = np.random.default_rng(seed)
    parts, i = [], 0
    for size in sizes:
        keys = rng.integers(-key_range, key_range, size=size, dtype=np.int64, endpoint=key_range < 2**63).tolist()
        parts.append([(k, i + j) for j, k in enumerate(keys)])
        i += size
    ds = pairs(ctx, parts)
    assert collect(ds.sort_by_key(ascending, n)) == sorted(flat(parts), key=lambda kv: kv[0], reverse=not ascending)
    got = partitions(ds.partition_by(n))
    for p_i, part in enumerate(got):
        assert all(portable_hash(k) % n == p_i for k, _ in part)
    assert Counter(flat(got)) == Counter(flat(parts))
    assert dict(collect(ds.reduce_by_key(operator.add, n))) == {k: sum(vs) for k, vs in group(flat(parts)).items()}


def test_sort_by_key_spreads_distinct_keys_over_partitions(ctx):
    ds = ctx.parallelize([(k, k) for k in range(1000)][::-1], 4).sort_by_key(num_partitions=4)
    sizes = [len(p) for p in ds.glom().collect()]
    assert len(sizes) == 4 and min(sizes) > 0
    assert ds.keys().collect() == list(range(1000))
    desc = ctx.parallelize([(str(k), k) for k in range(100)], 3).sort_by_key(False, 5)
    assert desc.keys().collect() == sorted((str(k) for k in range(100)), reverse=True)


# -- repartitioning ------------------------------------------------------------------------
@SETTINGS
@given(parts=layouts(ints), kind=record_kinds, n=nparts)
def test_repartition(ctx, parts, kind, n):
    ds = records(ctx, parts, kind).repartition(n)
    assert ds.num_partitions == n
    got = partitions(ds)
    assert len(got) == n
    assert Counter(flat(got)) == Counter(flat(parts))
    sizes = [len(p) for p in got]
    assert max(sizes) - min(sizes) <= len(parts)  # each map task deals near-equal slices
    if kind == "numpy":  # batches shuffle as batches
        assert all(isinstance(v, np.ndarray) for v in ds.collect_partitions())


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds, n=nparts)
def test_coalesce(ctx, parts, kind, n):
    ds = records(ctx, parts, kind).coalesce(n)
    assert ds.num_partitions == min(n, len(parts))
    got = partitions(ds)
    assert flat(got) == flat(parts)  # neighbours joined: order kept
    # each output partition is a contiguous run of whole input partitions
    bounds = [0]
    for p in parts:
        bounds.append(bounds[-1] + len(p))
    pos = 0
    for p in got:
        pos += len(p)
        assert pos in bounds
    shuffled = records(ctx, parts, kind).coalesce(n, shuffle=True)
    assert shuffled.num_partitions == n
    assert Counter(collect(shuffled)) == Counter(flat(parts))


@SETTINGS
@given(parts=layouts(pair), kind=pair_kinds, n=nparts)
def test_repartition_and_coalesce_of_pair_batches(ctx, parts, kind, n):
    ds = pairs(ctx, parts, kind)
    cls = {"list": list, "numpy": np.ndarray, "arrow": pa.Table}[kind]
    re = ds.repartition(n)
    assert re.num_partitions == n and all(isinstance(v, cls) for v in re.collect_partitions())
    assert Counter(collect(re)) == Counter(flat(parts))
    co = ds.coalesce(n)
    assert all(isinstance(v, cls) for v in co.collect_partitions())
    assert collect(co) == flat(parts)


def _wide_pairs():
    return st.tuples(st.integers(-2**63, 2**63 - 1), ints)


@SETTINGS
@given(parts=layouts(pair), kind=pair_kinds, n=nparts)
def test_partition_by_places_each_record_by_portable_hash(ctx, parts, kind, n):
    ds = pairs(ctx, parts, kind).partition_by(n)
    assert ds.num_partitions == n
    got = partitions(ds)
    assert Counter(flat(got)) == Counter(flat(parts))
    for i, part in enumerate(got):
        assert all(portable_hash(k) % n == i for k, _ in part)
    if kind != "list":  # batches move as sub-batches of the same kind
        cls = np.ndarray if kind == "numpy" else pa.Table
        assert all(isinstance(v, cls) for v in ds.collect_partitions())


@SETTINGS
@given(parts=layouts(_wide_pairs()), kind=pair_kinds, n=nparts)
def test_partition_by_with_any_int64_key_matches_records(ctx, parts, kind, n):
    """Integer keys of batches are hashed vectorized; that must give the partition the
    scalar hash gives for every int64, extremes included."""
    got = partitions(pairs(ctx, parts, kind).partition_by(n))
    for i, part in enumerate(got):
        for k, _ in part:
            assert portable_hash(k) % n == i, f"key {k} in partition {i} of {n}"


def test_partition_by_extreme_and_unsigned_integer_keys(ctx):
    keys = [-2**63, -2**63 + 1, 2**63 - 1, -1, -2, 0, 1, 2**61 - 1, 2**61, -(2**61 - 1), -(2**61)]
    for n in (3, 7):
        arr = np.array([[k, 0] for k in keys], dtype=np.int64)
        for i, part in enumerate(ctx.from_numpy(arr, 2).partition_by(n).collect_partitions()):
            assert all(portable_hash(int(k)) % n == i for k in part[:, 0]), (n, i, part[:, 0])
        ukeys = [0, 1, 2**63 - 1, 2**63, 2**64 - 1, 2**61 - 1, 2**62]
        uarr = np.array([[k, 0] for k in ukeys], dtype=np.uint64)
        for i, part in enumerate(ctx.from_numpy(uarr, 2).partition_by(n).collect_partitions()):
            assert all(portable_hash(int(k)) % n == i for k in part[:, 0]), (n, i, part[:, 0])
        table = pa.table({"k": pa.array(ukeys, pa.uint64()), "v": pa.array(range(len(ukeys)))})
        ds = ctx.parallelize([0], 1).map_partitions(lambda _: table).partition_by(n)
        for i, part in enumerate(ds.glom().collect()):
            assert all(portable_hash(k) % n == i for k in part.column(0).to_pylist()), (n, i)


@SETTINGS
@given(parts=layouts(st.tuples(st.one_of(st.text(max_size=4), st.none(), st.tuples(small_keys, st.text(max_size=2))),
                                ints)), n=nparts)
def test_partition_by_other_key_types(ctx, parts, n):
    got = partitions(pairs(ctx, parts).partition_by(n))
    assert Counter(flat(got)) == Counter(flat(parts))
    for i, part in enumerate(got):
        assert all(portable_hash(k) % n == i for k, _ in part)


@SETTINGS
@given(parts=layouts(pair), n=nparts)
def test_partition_by_custom_function(ctx, parts, n):
    got = partitions(pairs(ctx, parts).partition_by(n, lambda k: k * 3))
    for i, part in enumerate(got):
        assert all((k * 3) % n == i for k, _ in part)
    assert Counter(flat(got)) == Counter(flat(parts))


def test_transformations_are_lazy(local_ctx):
    ctx = local_ctx
    calls = []
    lock = threading.Lock()

    def f(x):
        with lock:
            calls.append(x)
        return x

    ds = ctx.parallelize(range(10), 3).map(f).filter(lambda x: True)
    assert calls == []
    assert ds.count() == 10 and sorted(calls) == list(range(10))
