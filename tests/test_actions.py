"""Every action against plain Python on the same data.

As in test_transformations, hypothesis draws a layout of 1..9 partitions (empty ones
included) and the dataset is built with exactly that layout. Order-sensitive actions use
non-commutative operations (string and list concatenation), so a result that combined
partitions out of order would differ.
"""

from __future__ import annotations

import math
import operator
import os
import tempfile
import threading
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from layouts import SETTINGS, flat, ints, layouts, pair, py, small_keys  # noqa: F401

pytestmark = pytest.mark.usefixtures("no_leaks")

words = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=4)
record_kinds = st.sampled_from(["list", "numpy"])


def build(ctx, parts, kind="list"):
    base = ctx.parallelize(parts, len(parts))
    if kind == "list":
        return base.flat_map(lambda p: p)
    if kind == "numpy":
        return base.map_partitions(lambda v: np.asarray(v[0], dtype=np.int64))
    if kind == "numpy_pairs":
        return base.map_partitions(lambda v: np.asarray(v[0], dtype=np.int64).reshape(-1, 2))
    assert kind == "arrow"  # one-column table of ints
    return base.map_partitions(lambda v: pa.table({"x": pa.array(v[0], type=pa.int64())}))


# -- bringing records back ----------------------------------------------------------------
@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_collect_keeps_partition_order(ctx, parts, kind):
    assert [py(x) for x in build(ctx, parts, kind).collect()] == flat(parts)


@SETTINGS
@given(parts=layouts(ints), kind=st.sampled_from(["list", "numpy", "arrow"]))
def test_count(ctx, parts, kind):
    assert build(ctx, parts, kind).count() == len(flat(parts))


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_first(ctx, parts, kind):
    ds = build(ctx, parts, kind)
    if flat(parts):
        assert py(ds.first()) == flat(parts)[0]
    else:
        with pytest.raises(ValueError, match="empty"):
            ds.first()


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds, data=st.data())
def test_take(ctx, parts, kind, data):
    ds = build(ctx, parts, kind)
    n = len(flat(parts))
    k = data.draw(st.integers(0, n + 5), label="num")
    assert [py(x) for x in ds.take(k)] == flat(parts)[:k]
    assert ds.take(0) == []
    assert ds.take(-3) == []
    assert [py(x) for x in ds.take(n + 100)] == flat(parts)


def test_take_scans_only_the_partitions_it_needs(local_ctx):
    ctx = local_ctx
    seen, lock = [], threading.Lock()

    def record(i, v):
        with lock:
            seen.append(i)
        return v

    parts = [[1, 2, 3]] + [[i] * 3 for i in range(19)]
    ds = ctx.parallelize(parts, 20).flat_map(lambda p: p).map_partitions_with_index(record)
    assert ds.take(2) == [1, 2]
    assert seen == [0]
    seen.clear()
    # partitions 0..3 are empty: one partition, then four more, then sixteen
    parts = [[]] * 4 + [[9]] + [[7]] * 15
    ds = ctx.parallelize(parts, 20).flat_map(lambda p: p).map_partitions_with_index(record)
    assert ds.take(1) == [9]
    assert sorted(seen) == [0, 1, 2, 3, 4]


# -- folding --------------------------------------------------------------------------------
@SETTINGS
@given(parts=layouts(words))
def test_reduce_combines_in_partition_order(ctx, parts):
    ds = build(ctx, parts)
    if flat(parts):
        assert ds.reduce(operator.add) == "".join(flat(parts))
    else:
        with pytest.raises(ValueError, match="empty"):
            ds.reduce(operator.add)


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_reduce_numbers(ctx, parts, kind):
    ds = build(ctx, parts, kind)
    if flat(parts):
        assert ds.reduce(max) == max(flat(parts))
        assert ds.map(lambda x: [int(x)]).reduce(operator.add) == flat(parts)
    else:
        with pytest.raises(ValueError):
            ds.reduce(max)


@SETTINGS
@given(parts=layouts(words), zero=st.sampled_from(["", "|", "ab"]))
def test_fold(ctx, parts, zero):
    # zero starts every partition and the final combination, as in Spark
    expected = zero + "".join(zero + "".join(p) for p in parts)
    assert build(ctx, parts).fold(zero, operator.add) == expected


@SETTINGS
@given(parts=layouts(ints))
def test_fold_with_a_mutating_op_never_changes_the_zero(ctx, parts):
    zero = []

    def extend(acc, xs):
        acc.extend(xs)
        return acc

    assert build(ctx, parts).map(lambda x: [x]).fold(zero, extend) == flat(parts)
    assert zero == []


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_aggregate(ctx, parts, kind):
    ds = build(ctx, parts, kind)
    zero = []
    got = ds.aggregate(zero, lambda acc, x: (acc.append(int(x)), acc)[1], lambda a, b: (a.extend(b), a)[1])
    assert got == flat(parts)  # partition order kept
    assert zero == []
    s, n = ds.aggregate((0, 0), lambda acc, x: (acc[0] + int(x), acc[1] + 1), lambda a, b: (a[0] + b[0], a[1] + b[1]))
    assert (s, n) == (sum(flat(parts)), len(flat(parts)))


@SETTINGS
@given(parts=layouts(words), depth=st.sampled_from([1, 2, 3]))
def test_tree_aggregate(ctx, parts, depth):
    ds = build(ctx, parts)
    assert ds.tree_aggregate("", operator.add, operator.add, depth) == "".join(flat(parts))
    zero = []
    got = ds.tree_aggregate(zero, lambda acc, x: (acc.append(x), acc)[1], lambda a, b: (a.extend(b), a)[1], depth)
    assert got == flat(parts)
    assert zero == []


@SETTINGS
@given(parts=layouts(words, max_part=3, max_parts=70), depth=st.sampled_from([1, 2, 3, 4]))
def test_tree_aggregate_over_many_partitions_keeps_order(ctx, parts, depth):
    """Enough partitions for two or three levels of combining tasks."""
    assert build(ctx, parts).tree_aggregate("", operator.add, operator.add, depth) == "".join(flat(parts))


def test_tree_aggregate_rejects_depth_below_one(ctx):
    with pytest.raises(ValueError):
        ctx.parallelize([1, 2]).tree_aggregate(0, operator.add, operator.add, 0)


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_sum_and_mean(ctx, parts, kind):
    ds = build(ctx, parts, kind)
    data = flat(parts)
    assert ds.sum() == sum(data)
    if data:
        assert math.isclose(ds.mean(), sum(data) / len(data), rel_tol=1e-12, abs_tol=1e-12)
    else:
        assert math.isnan(ds.mean())


@SETTINGS
@given(rows=st.integers(0, 25), cols=st.integers(1, 3), n=st.integers(1, 9))
def test_sum_and_mean_of_numpy_rows(ctx, rows, cols, n):
    a = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) - 7
    ds = ctx.from_numpy(a, n)
    np.testing.assert_allclose(ds.sum(), a.sum(axis=0) if rows else 0)
    if rows:
        np.testing.assert_allclose(ds.mean(), a.mean(axis=0))
    assert ds.count() == rows  # rows, not elements


@SETTINGS
@given(parts=layouts(pair), kind=st.sampled_from(["list", "numpy_pairs"]))
def test_count_by_key(ctx, parts, kind):
    got = build(ctx, parts, kind).count_by_key()
    assert got == Counter(k for k, _ in flat(parts))


@SETTINGS
@given(parts=layouts(st.one_of(st.integers(-3, 3), words)))
def test_count_by_value(ctx, parts):
    assert build(ctx, parts).count_by_value() == Counter(flat(parts))


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_foreach_sees_every_record_once(local_ctx, parts, kind):
    ctx = local_ctx
    seen, lock = [], threading.Lock()

    def f(x):
        with lock:
            seen.append(int(x))

    assert build(ctx, parts, kind).foreach(f) is None
    assert sorted(seen) == sorted(flat(parts))


@SETTINGS
@given(parts=layouts(ints), kind=record_kinds)
def test_foreach_partition_gets_an_iterator_per_partition(local_ctx, parts, kind):
    ctx = local_ctx
    seen, lock = [], threading.Lock()

    def f(it):
        assert iter(it) is it  # an iterator, as in PySpark, not the list itself
        rows = [int(x) for x in it]
        with lock:
            seen.append(rows)

    build(ctx, parts, kind).foreach_partition(f)
    assert sorted(seen) == sorted(parts)  # one call per partition, empty ones too


# -- output ---------------------------------------------------------------------------------
@SETTINGS
@given(parts=layouts(st.one_of(words, ints)), kind=st.sampled_from(["list", "numpy"]))
def test_save_as_text_file(ctx, parts, kind):
    if kind == "numpy":
        parts = [[x for x in p if isinstance(x, int)] for p in parts]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        assert build(ctx, parts, kind).save_as_text_file(out) is None
        names = sorted(os.listdir(out))
        assert names == sorted([f"part-{i:05d}" for i in range(len(parts))] + ["_SUCCESS"])  # no temp files left
        for i, p in enumerate(parts):
            with open(os.path.join(out, f"part-{i:05d}"), encoding="utf-8") as f:
                assert f.read() == "".join(f"{x}\n" for x in p)
        assert ctx.text_file(out).collect() == [str(x) for x in flat(parts)]  # _SUCCESS is skipped


def test_save_as_text_file_refuses_an_existing_path(ctx, tmp_path):
    ds = ctx.parallelize(["a", "b"], 2)
    existing = tmp_path / "exists"
    existing.mkdir()
    (existing / "keep").write_text("mine")
    with pytest.raises(FileExistsError):
        ds.save_as_text_file(existing)
    assert os.listdir(existing) == ["keep"] and (existing / "keep").read_text() == "mine"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(FileExistsError):
        ds.save_as_text_file(str(a_file))
    assert a_file.read_text() == "x"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileExistsError):
        ds.save_as_text_file(empty)
    ds.save_as_text_file(tmp_path / "new")  # a PathLike that does not exist is fine
    with pytest.raises(FileExistsError):
        ds.save_as_text_file(tmp_path / "new")  # ...but only once
