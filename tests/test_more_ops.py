"""The native API's newer operations (issue 17): each against plain Python on the same
data, on both backends, with empty partitions and numpy batches in the layouts, and the
errors for bad input. PySpark's documented examples are in test_pyspark_api.py."""

from __future__ import annotations

import bisect
import math
import os
import pickle
import statistics
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strataflow import TaskFailedError
from strataflow.dataset.approximate import BoundedFloat
from strataflow.dataset.statistics import StatCounter

from layouts import SETTINGS, flat, ints, layouts, pair, py  # noqa: F401

pytestmark = pytest.mark.usefixtures("no_leaks")

FEW = settings(SETTINGS, max_examples=10)


def build(ctx, parts, kind="list"):
    base = ctx.parallelize(parts, len(parts))
    if kind == "list":
        return base.flat_map(lambda p: p)
    return base.map_partitions(lambda v: np.asarray(v[0], dtype=np.int64))


kinds = st.sampled_from(["list", "numpy"])


# -- actions ----------------------------------------------------------------------------------
@FEW
@given(parts=layouts(ints), kind=kinds, num=st.integers(0, 12))
def test_top_and_take_ordered(ctx, parts, kind, num):
    ds, data = build(ctx, parts, kind), flat(parts)
    assert [py(x) for x in ds.top(num)] == sorted(data, reverse=True)[:num]
    assert [py(x) for x in ds.take_ordered(num)] == sorted(data)[:num]
    assert [py(x) for x in ds.take_ordered(num, key=lambda x: -x)] == sorted(data, reverse=True)[:num]


@FEW
@given(parts=layouts(ints), kind=kinds)
def test_stats_min_max_against_python(ctx, parts, kind):
    ds, data = build(ctx, parts, kind), flat(parts)
    st_ = ds.stats()
    assert st_.count() == len(data)
    if not data:
        assert math.isnan(st_.variance()) and st_.sum() == 0
        with pytest.raises(ValueError, match="empty"):
            ds.max()
        return
    assert st_.mean() == pytest.approx(statistics.fmean(data))
    assert st_.variance() == pytest.approx(statistics.pvariance(data), abs=1e-6)
    assert (st_.min(), st_.max()) == (min(data), max(data))
    assert py(ds.max()) == max(data) and py(ds.min()) == min(data)
    assert py(ds.max(key=lambda x: -x)) == min(data)
    if len(data) > 1:
        assert ds.sample_stdev() == pytest.approx(statistics.stdev(data), abs=1e-6)


@FEW
@given(parts=layouts(ints), kind=kinds, n=st.integers(1, 6))
def test_histogram_against_python(ctx, parts, kind, n):
    ds, data = build(ctx, parts, kind), flat(parts)
    bounds = [-1000, -10, 0, 3, 500, 1000]
    _, counts = ds.histogram(bounds)
    expected = [0] * (len(bounds) - 1)
    for x in data:
        expected[min(bisect.bisect_right(bounds, x) - 1, len(bounds) - 2)] += 1
    assert counts == expected
    if data:
        got_bounds, got = ds.histogram(n)
        assert sum(got) == len(data) and got_bounds[0] == min(data) and got_bounds[-1] == max(data)


def test_histogram_bad_buckets(ctx):
    ds = ctx.parallelize([1, 2, 3])
    for bad, err in [(0, ValueError), ([1], ValueError), ([3, 1], ValueError), ([1, 1, 2], ValueError),
                     ([1, None], ValueError), ("abc", TypeError)]:
        with pytest.raises(err, match="histogram"):
            ds.histogram(bad)
    with pytest.raises(ValueError, match="empty"):
        ctx.parallelize([], 2).histogram(3)


def test_stat_counter_merges_like_one_pass():
    a, b = StatCounter([1, 2, 3]), StatCounter([10.0, 20.0])
    one = StatCounter([1, 2, 3, 10.0, 20.0])
    merged = a.copy().merge_stats(b)
    assert merged.count() == 5 and merged.mean() == pytest.approx(one.mean())
    assert merged.variance() == pytest.approx(one.variance())
    assert a.merge_stats(a).count() == 6
    with pytest.raises(TypeError, match="StatCounter"):
        a.merge_stats([1])
    assert StatCounter.of_array(np.array([1, 2, 3])).stdev() == pytest.approx(StatCounter([1, 2, 3]).stdev())


def test_is_empty_and_tree_reduce(ctx):
    assert ctx.parallelize([], 3).is_empty() and ctx.empty_dataset().is_empty()
    assert not ctx.parallelize([[], [], [1]], 3).flat_map(lambda p: p).is_empty()
    ds = ctx.parallelize([str(i) for i in range(20)], 7)
    for depth in (1, 2, 3):
        assert ds.tree_reduce(lambda a, b: a + b, depth) == "".join(str(i) for i in range(20))
    with pytest.raises(ValueError, match="empty"):
        ctx.parallelize([[], []], 2).flat_map(lambda p: p).tree_reduce(max)


@pytest.mark.parametrize("prefetch", [False, True])
def test_to_local_iterator_runs_a_job_per_partition(local_ctx, prefetch):
    jobs = []
    listener = lambda ev: ev["event"] == "JobStart" and jobs.append(ev)  # noqa: E731
    local_ctx.events.subscribe(listener)
    try:
        it = local_ctx.parallelize(range(10), 5).to_local_iterator(prefetch)
        assert next(it) == 0 and len(jobs) <= 2
        assert list(it) == list(range(1, 10)) and len(jobs) == 5
    finally:
        local_ctx.events.unsubscribe(listener)


def test_approximate_actions(ctx):
    ds = ctx.parallelize(range(1000), 4)
    assert ds.count_approx(10) == 1000
    s, m = ds.sum_approx(10), ds.mean_approx(10, 0.5)
    assert isinstance(s, BoundedFloat) and s == 499500 and m == 499.5 and m.confidence == 0.5
    assert pickle.loads(pickle.dumps(s)).high == s.high
    n = ctx.parallelize(range(100_000), 4).map(str).count_approx_distinct(0.01)
    assert abs(n - 100_000) / 100_000 < 0.05
    assert ctx.parallelize([i % 7 for i in range(500)]).count_approx_distinct() == 7
    with pytest.raises(ValueError, match="relative_sd"):
        ds.count_approx_distinct(0.000001)
    with pytest.raises(ValueError, match="confidence"):
        ds.count_approx(10, 1.5)


# -- sampling -----------------------------------------------------------------------------------
def test_take_sample(ctx):
    ds = ctx.parallelize(range(100), 4)
    s = ds.take_sample(False, 30, seed=7)
    assert len(s) == 30 == len(set(s)) and set(s) <= set(range(100))
    assert s == ds.take_sample(False, 30, seed=7)
    assert sorted(ds.take_sample(False, 500, seed=1)) == list(range(100))
    assert len(ds.take_sample(True, 250, seed=3)) == 250
    assert ds.take_sample(True, 0) == [] and ctx.parallelize([], 2).take_sample(True, 5) == []
    with pytest.raises(ValueError, match="num must be >= 0, got -1"):
        ds.take_sample(False, -1)
    with pytest.raises(TypeError, match="num must be an int"):
        ds.take_sample(False, 2.5)


@FEW
@given(parts=layouts(ints), kind=kinds, seed=st.integers(0, 2**40))
def test_random_split_is_a_partition_of_the_records(ctx, parts, kind, seed):
    ds = build(ctx, parts, kind)
    splits = ds.random_split([1, 2, 3], seed)
    got = [py(x) for s in splits for x in s.collect()]
    assert Counter(got) == Counter(flat(parts))
    again = ds.random_split([1, 2, 3], seed)[0].collect()
    assert [py(x) for x in again] == [py(x) for x in splits[0].collect()]  # reproducible for a seed


def test_random_split_proportions_and_bad_weights(ctx):
    a, b = ctx.parallelize(range(2000), 4).random_split([0.25, 0.75], seed=11)
    assert 400 < a.count() < 600 and a.count() + b.count() == 2000
    for bad in ([], [-1, 2], [0, 0]):
        with pytest.raises(ValueError, match="random_split"):
            ctx.parallelize([1]).random_split(bad)


def test_sample_by_key(ctx):
    ds = ctx.parallelize([(k, i) for k in "abc" for i in range(300)], 3)
    got = Counter(k for k, _ in ds.sample_by_key(False, {"a": 0.0, "b": 0.5, "c": 1.0}, seed=2).collect())
    assert got["a"] == 0 and 100 < got["b"] < 200 and got["c"] == 300
    again = ds.sample_by_key(True, {"a": 2.0, "b": 0.0, "c": 0.0}, seed=5).collect()
    assert 450 < len(again) < 750 and {k for k, _ in again} == {"a"}
    with pytest.raises(ValueError, match="fraction of key 'a'"):
        ds.sample_by_key(False, {"a": -0.5})
    with pytest.raises(TaskFailedError) as info:
        ds.sample_by_key(False, {"a": 0.5}).count()
    assert "no fraction for key" in str(info.value) and info.value.attempts == 1


# -- set operations and pairs ------------------------------------------------------------------
@FEW
@given(a=layouts(st.integers(0, 9)), b=layouts(st.integers(0, 9), max_parts=3))
def test_subtract_intersection_cartesian(ctx, a, b):
    da, db = build(ctx, a), build(ctx, b)
    fa, fb = flat(a), flat(b)
    assert Counter(da.subtract(db).collect()) == Counter(x for x in fa if x not in fb)
    assert sorted(da.intersection(db).collect()) == sorted(set(fa) & set(fb))
    cart = da.cartesian(db)
    assert cart.num_partitions == len(a) * len(b)
    assert Counter(cart.collect()) == Counter((x, y) for x in fa for y in fb)


def test_cartesian_of_batches(ctx):
    a = ctx.from_numpy(np.arange(4), 2)
    assert sorted(py(x) for x in a.cartesian(ctx.parallelize(["x", "y"], 1)).collect()) == \
        [(i, s) for i in range(4) for s in "xy"]


@FEW
@given(a=layouts(pair), b=layouts(pair, max_parts=3))
def test_subtract_by_key_group_with_lookup(ctx, a, b):
    da, db = build(ctx, a), build(ctx, b)
    fa, fb = flat(a), flat(b)
    keys_b = {k for k, _ in fb}
    assert Counter(da.subtract_by_key(db).collect()) == Counter(kv for kv in fa if kv[0] not in keys_b)
    grouped = dict(da.group_with(db, db).collect())
    assert set(grouped) == {k for k, _ in fa} | keys_b
    for k, (va, vb, vb2) in grouped.items():
        assert sorted(va) == sorted(v for kk, v in fa if kk == k) and vb == vb2
    for key in (0, 3, 99):
        expect = sorted(v for k, v in fa if k == key)
        assert sorted(da.lookup(key)) == expect
        assert sorted(da.partition_by(3).lookup(key)) == expect
    reduced = {}
    for k, v in fa:
        reduced[k] = reduced.get(k, 0) + v
    assert da.reduce_by_key_locally(lambda x, y: x + y) == reduced
    assert da.collect_as_map() == dict(fa)


def test_lookup_reads_one_partition_when_partitioned(local_ctx):
    tasks = []
    listener = lambda ev: ev["event"] == "StageStart" and tasks.append(ev["num_tasks"])  # noqa: E731
    ds = local_ctx.parallelize([(i, i * i) for i in range(100)], 4).partition_by(8)
    ds.count()
    local_ctx.events.subscribe(listener)
    try:
        assert ds.lookup(7) == [49]
    finally:
        local_ctx.events.unsubscribe(listener)
    assert tasks[-1] == 1


@FEW
@given(parts=layouts(pair), n=st.integers(1, 4), ascending=st.booleans())
def test_repartition_and_sort_within_partitions(ctx, parts, n, ascending):
    ds = build(ctx, parts).repartition_and_sort_within_partitions(n, lambda k: k * 7, ascending)
    got = ds.glom().collect()
    assert len(got) == n
    for i, p in enumerate(got):
        assert all((k * 7) % n == i for k, _ in p)
        keys = [k for k, _ in p]
        assert keys == sorted(keys, reverse=not ascending)
    assert Counter(py(x) for p in got for x in p) == Counter(flat(parts))


def test_zip_with_unique_id(ctx):
    """Partitions a,b | c,d | e,f,g: the j-th record of partition i gets j * 3 + i."""
    got = ctx.parallelize(list("abcdefg"), 3).zip_with_unique_id().collect()
    assert got == [("a", 0), ("b", 3), ("c", 1), ("d", 4), ("e", 2), ("f", 5), ("g", 8)]


def test_plus_union_and_context_union(ctx):
    a, b = ctx.parallelize([1, 2], 2), ctx.parallelize([3], 1)
    assert (a + b).collect() == [1, 2, 3]
    assert ctx.union(a, b, a).collect() == [1, 2, 3, 1, 2]
    assert ctx.union().count() == 0 and ctx.empty_dataset().num_partitions == 0


# -- external processes and files --------------------------------------------------------------
def test_pipe(ctx):
    ds = ctx.parallelize(["b", "a", "c", "a"], 2)  # partitions b,a | c,a
    assert ds.pipe("sort").glom().collect() == [["a", "b"], ["a", "c"]]
    assert ds.pipe(["grep", "-c", "a"]).collect() == ["1", "1"]
    assert ctx.parallelize(range(3), 1).pipe("cat", env={"PATH": os.environ["PATH"]}).collect() == ["0", "1", "2"]
    assert ds.pipe("false").collect() == []
    with pytest.raises(TaskFailedError, match="exited with status 1"):
        ds.pipe("false", check_code=True).collect()
    with pytest.raises(ValueError, match="empty"):
        ds.pipe("")


def test_pickle_file_round_trip(ctx, tmp_path):
    records = [1, "two", (3, 4.0), None, {"k": [5]}, b"\x00"] * 5
    out = tmp_path / "p"
    ctx.parallelize(records, 3).save_as_pickle_file(out, batch_size=4)
    assert (out / "_SUCCESS").exists() and len(list(out.glob("part-*"))) == 3
    back = ctx.pickle_file(out)
    assert back.num_partitions == 3 and back.collect() == records
    with pytest.raises(FileExistsError):
        ctx.parallelize([1]).save_as_pickle_file(out)
    ctx.from_numpy(np.arange(6).reshape(3, 2), 2).save_as_pickle_file(tmp_path / "np")
    assert [py(x) for x in ctx.pickle_file([tmp_path / "np", out]).take(4)] == [(0, 1), (2, 3), (4, 5), 1]


def test_whole_text_files(ctx, tmp_path):
    for i in range(5):
        (tmp_path / f"{i}.txt").write_text(f"file {i}\nline two\n")
    ds = ctx.whole_text_files(tmp_path, 2)
    assert ds.num_partitions == 2
    assert sorted(ds.collect()) == [(str(tmp_path / f"{i}.txt"), f"file {i}\nline two\n") for i in range(5)]
    assert ctx.whole_text_files(tmp_path / "3.txt").collect() == [(str(tmp_path / "3.txt"), "file 3\nline two\n")]


# -- checkpoints ------------------------------------------------------------------------------------
def test_checkpoint_truncates_lineage_and_keeps_results(ctx, tmp_path):
    ctx.set_checkpoint_dir(tmp_path)
    base = ctx.parallelize(range(20), 4).map(lambda x: (x % 3, x)).reduce_by_key(lambda a, b: a + b)
    ds = base.map_values(lambda v: v * 10)
    ds.checkpoint()
    assert ds.is_marked_for_checkpoint and not ds.is_checkpointed and ds.get_checkpoint_file() is None
    child = ds.map(lambda kv: kv[1])
    assert sorted(child.collect()) == [570, 630, 700]  # a job on a child writes the checkpoint too
    assert ds.is_checkpointed
    path = ds.get_checkpoint_file()
    assert path.startswith(str(tmp_path)) and len(os.listdir(path)) == ds.num_partitions
    assert "stage boundary" not in ds.to_debug_string() and "CheckpointSource" in ds.to_debug_string()
    assert ds.partitioner == base.partitioner  # records did not move
    assert sorted(ds.collect()) == [(0, 630), (1, 700), (2, 570)]
    assert sorted(child.collect()) == [570, 630, 700]


def test_checkpoint_of_persisted_batches(ctx, tmp_path):
    ctx.set_checkpoint_dir(tmp_path)
    ds = ctx.from_numpy(np.arange(12.0).reshape(6, 2), 3).map_partitions(lambda a: a * 2).persist()
    ds.checkpoint()
    try:
        assert ds.count() == 6 and ds.is_checkpointed
        parts = ds.collect_partitions()
        assert all(isinstance(p, np.ndarray) for p in parts)
        np.testing.assert_array_equal(np.concatenate(parts), np.arange(12.0).reshape(6, 2) * 2)
    finally:
        ds.unpersist()


def test_local_checkpoint(ctx):
    ds = ctx.parallelize(range(5), 2).map(lambda x: x + 1)
    ds.local_checkpoint()
    assert ds.is_locally_checkpointed and ds.sum() == 15 and ds.is_checkpointed
    assert ds.node.directory.startswith(ctx.local_dirs[0])
    assert ds.get_checkpoint_file() is None  # a local checkpoint's files are the application's


def test_get_storage_level_and_barrier(ctx):
    from strataflow import StorageLevel

    ds = ctx.parallelize(range(4), 2)
    assert ds.get_storage_level() is StorageLevel.NONE
    ds.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        assert ds.get_storage_level() is StorageLevel.MEMORY_AND_DISK
        assert ds.barrier().map_partitions(lambda v: [sum(v)]).collect() == [1, 5]
        assert ds.barrier().map_partitions_with_index(lambda i, v: [i]).collect() == [0, 1]
    finally:
        ds.unpersist()


def test_top_and_take_ordered_reject_bad_num(ctx):
    ds = ctx.parallelize([3, 1, 2])
    assert ds.top(0) == [] and ds.take_ordered(10) == [1, 2, 3]
    with pytest.raises(ValueError, match="top: num must be >= 0, got -1"):
        ds.top(-1)
    with pytest.raises(TypeError, match="take_ordered: num must be an int"):
        ds.take_ordered("3")
