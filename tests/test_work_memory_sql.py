"""DataFrame partitions under the executor's budget: each task's DuckDB gets its share of
execution memory as ``memory_limit`` and spills to the application's spill directory, so
an aggregate, a join, a window and a sort whose state is several times that limit finish
with the right answer (the model: plain Python over the same rows). The partition is
~63 MB of Arrow under a 64 MiB limit; the queries' state is larger (measured once: DuckDB
spilled 150 MB for the aggregate, 110 MB for the join, 46 MB for the sort).

What is asserted is what can be checked deterministically: the task's connection's
``memory_limit`` and ``temp_directory`` (asked of DuckDB inside a task), the bytes DuckDB
reports it spilled (the tasks' ``spill_bytes``), the answers, and the memory manager's
figures for :class:`TaskMemory` (checked out on entry, given back on exit)."""

from __future__ import annotations

import math
import os
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest

from strataflow.storage.memory.unified import MemoryManager
from strataflow.pyspark import SparkConf, SparkContext
from strataflow.pyspark.sql import SparkSession, Window
from strataflow.pyspark.sql import functions as F
from strataflow.pyspark.sql.engine import QueryOutOfMemory, connection_settings, run_query, under_budget
from strataflow.pyspark.sql.task_memory import FLOOR, INPUT_FACTOR, TaskMemory, map_queries

MiB = 2**20
ROWS = 1_500_000  # ~63 MB of Arrow: the queries' state is several times the 64 MiB limit


@pytest.fixture(scope="module")
def spark():
    conf = (SparkConf().set("strataflow.memory", "64MB").set("spark.sql.shuffle.partitions", "1")
            .set("spark.sql.autoBroadcastJoinThreshold", "-1"))
    sc = SparkContext("local[1]", "work-memory-sql", conf=conf)  # one executor of 64 MB, one task slot
    session = SparkSession(sc)
    session.conf.set("spark.sql.shuffle.partitions", "1")
    session.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        yield session
    finally:
        sc.stop()


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(65)
    k = rng.integers(0, ROWS // 2, ROWS)
    s = [f"key-{v:08d}-ünïcode-{v % 7}" for v in rng.integers(0, ROWS, ROWS)]  # 28+ bytes: stored out of line
    x = rng.random(ROWS)
    x[::97] = np.nan
    xs = x.tolist()
    for i in range(0, ROWS, 101):
        xs[i] = None
    return pa.table({"k": pa.array(k), "s": pa.array(s), "x": pa.array(xs, pa.float64())})


def _spills(spark, run) -> tuple[object, list[int]]:
    """``run()``'s value and the spill bytes of each task it ran."""
    spilled: list[int] = []

    def listen(ev: dict) -> None:
        if ev.get("event") == "TaskEnd" and ev.get("ok"):
            spilled.append(ev.get("spill_bytes", 0))

    bus = spark.sparkContext.ctx.events
    bus.subscribe(listen)
    try:
        return run(), spilled
    finally:
        bus.unsubscribe(listen)


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def test_a_task_connection_has_its_share_and_the_application_spill_dir(spark):
    ctx = spark.sparkContext.ctx
    got = map_queries(ctx.parallelize([0], 1), lambda _: [connection_settings()]).collect()[0]
    assert got["memory_limit"] == "64.0 MiB"  # the executor's 64 MB is all one task's: the floor too
    temp = os.path.realpath(got["temp_directory"])
    assert any(temp.startswith(os.path.join(os.path.realpath(d), "")) for d in ctx.shuffle_dirs), (temp, ctx.shuffle_dirs)
    assert os.path.basename(temp).startswith("duckdb-")


def test_group_by_over_a_partition_larger_than_the_limit(spark, rows):
    df = spark.createDataFrame(rows)
    assert df.rdd.getNumPartitions() == 1
    out, spilled = _spills(spark, lambda: df.groupBy("k", "s").agg(F.sum("x").alias("t"), F.count("x").alias("n"),
                                                                     F.count("*").alias("c")).toArrow())
    model: dict = defaultdict(lambda: [None, 0, 0])
    for k, s, x in zip(*(rows.column(c).to_pylist() for c in ("k", "s", "x"))):
        m = model[(k, s)]
        m[2] += 1
        if x is not None:
            m[0] = x if m[0] is None else m[0] + x
            m[1] += 1
    got = {(k, s): (t, n, c) for k, s, t, n, c in zip(*(out.column(c).to_pylist() for c in ("k", "s", "t", "n", "c")))}
    assert got.keys() == model.keys()
    bad = [key for key, (t, n, c) in got.items() if not (_close(t, model[key][0]) and [n, c] == model[key][1:])]
    assert not bad, bad[:5]
    assert sum(spilled) > 0, spilled  # DuckDB spilled: its state outgrew the limit


def test_a_parquet_partition_read_by_duckdb_is_under_the_limit_too(spark, rows, tmp_path):
    """The first query over a Parquet file runs on DuckDB's own reader (``parquet_scan.py``):
    its partial aggregate spills under the task's limit as well."""
    import pyarrow.parquet as pq

    pq.write_table(rows, tmp_path / "r.parquet", row_group_size=ROWS)  # one row group: one partition
    df = spark.read.parquet(str(tmp_path / "r.parquet"))
    out, spilled = _spills(spark, lambda: df.groupBy("s").agg(F.count("*").alias("c"), F.max("k").alias("m"))
                           .toArrow())
    model: dict = {}
    for k, s in zip(rows.column("k").to_pylist(), rows.column("s").to_pylist()):
        c, m = model.get(s, (0, k))
        model[s] = (c + 1, max(m, k))
    assert dict(zip(out.column("s").to_pylist(), zip(out.column("c").to_pylist(), out.column("m").to_pylist()))) \
        == model
    assert sum(spilled) > 0, spilled


def test_join_over_partitions_larger_than_the_limit(spark, rows):
    left = spark.createDataFrame(rows.select(["k", "s"]))
    right = spark.createDataFrame(pa.table({"s": rows.column("s"), "y": pa.array(np.arange(ROWS))}))
    joined = left.join(right, "s")
    out, spilled = _spills(spark, lambda: joined.groupBy("k").agg(F.count("*").alias("n"), F.sum("y").alias("t"),
                                                                    F.max("s").alias("m")).toArrow())
    by_s = defaultdict(list)
    for s, y in zip(rows.column("s").to_pylist(), range(ROWS)):
        by_s[s].append(y)
    model: dict = {}
    for k, s in zip(rows.column("k").to_pylist(), rows.column("s").to_pylist()):
        ys = by_s[s]
        n, t, m = model.get(k, (0, 0, None))
        model[k] = (n + len(ys), t + sum(ys), s if m is None or s > m else m)
    got = {k: (n, t, m) for k, n, t, m in zip(*(out.column(c).to_pylist() for c in ("k", "n", "t", "m")))}
    assert got == model
    assert sum(spilled) > 0, spilled


def test_window_over_a_partition_larger_than_the_limit(spark, rows):
    df = spark.createDataFrame(rows.append_column("i", pa.array(np.arange(ROWS))))  # s rides along: wide rows
    w = Window.partitionBy("k").orderBy(F.col("x").asc_nulls_first(), F.col("i"))
    out, spilled = _spills(spark, lambda: df.select("i", "s", F.row_number().over(w).alias("rn")).toArrow())
    groups = defaultdict(list)
    for i, (k, x) in enumerate(zip(rows.column("k").to_pylist(), rows.column("x").to_pylist())):
        # Spark orders NaN above every number; nulls first (asked)
        groups[k].append((0 if x is None else 2 if math.isnan(x) else 1, 0.0 if x is None or math.isnan(x) else x, i))
    model = {}
    for members in groups.values():
        for rn, (_, _, i) in enumerate(sorted(members), 1):
            model[i] = rn
    got = dict(zip(out.column("i").to_pylist(), out.column("rn").to_pylist()))
    assert got == model
    assert out.column("s").to_pylist() == rows.column("s").take(out.column("i")).to_pylist()
    assert sum(spilled) > 0, spilled


def test_order_by_over_a_partition_larger_than_the_limit(spark, rows):
    df = spark.createDataFrame(rows)
    out, spilled = _spills(spark, lambda: df.orderBy(F.col("s").desc(), "k").select("s", "k").toArrow())
    model = sorted(zip(rows.column("s").to_pylist(), rows.column("k").to_pylist()), key=lambda r: r[1])
    model.sort(key=lambda r: r[0].encode(), reverse=True)  # Spark compares strings by their UTF-8 bytes
    assert list(zip(out.column("s").to_pylist(), out.column("k").to_pylist())) == model
    assert sum(spilled) > 0, spilled


def test_a_small_query_does_not_spill(spark):
    df = spark.createDataFrame([(i % 3, float(i)) for i in range(100)], "k INT, x DOUBLE")
    out, spilled = _spills(spark, lambda: sorted(tuple(r) for r in df.groupBy("k").agg(F.sum("x")).collect()))
    assert out == [(k, float(sum(i for i in range(100) if i % 3 == k))) for k in range(3)]
    assert spilled and not any(spilled)


# -- TaskMemory against a real memory manager ------------------------------------------------
def test_task_memory_checks_out_its_share_and_gives_it_back(tmp_path):
    mm = MemoryManager(512 * MiB, storage_fraction=0.5)
    mm.task_started(1)
    mm.task_started(2)  # two tasks run: each may hold at most half
    big = TaskMemory(mm, 1, [str(tmp_path)], str(tmp_path), input_bytes=400 * MiB)
    with big:
        assert big.want == INPUT_FACTOR * 400 * MiB
        assert big.held == big.limit == 256 * MiB  # 1/N of the reachable memory
        assert mm.held_by(1) == 256 * MiB
        small = TaskMemory(mm, 2, [str(tmp_path)], str(tmp_path), input_bytes=1000)
        with small:
            assert small.held == small.limit == FLOOR  # a small input asks for the floor only
        assert mm.held_by(2) == 0
        assert big.grow() and big.limit == 512 * MiB  # up to the executor's memory...
        assert mm.held_by(1) == 256 * MiB  # ...though the manager grants no more than the share
        assert not big.grow()
    assert mm.held_by(1) == 0 and mm.execution_used == 0


def test_a_tiny_executor_still_gives_duckdb_the_floor(tmp_path):
    mm = MemoryManager(16 * MiB)
    with TaskMemory(mm, 7, [str(tmp_path)], str(tmp_path), input_bytes=0) as tm:
        assert tm.held == 16 * MiB and tm.limit == FLOOR
        assert tm.grow() and tm.limit == 2 * FLOOR and not tm.grow()
    assert mm.execution_used == 0


def test_owns_only_its_application_spill_dirs(tmp_path):
    mine, other = tmp_path / "app-a" / "shuffle", tmp_path / "app-b" / "shuffle"
    tm = TaskMemory(MemoryManager(MiB), 1, [str(mine)], str(mine), 0)
    assert tm.owns(str(mine / "duckdb-1-2")) and not tm.owns(str(other / "duckdb-1-2"))


def _list_of(n: int, budget: TaskMemory):
    """One group's ``list`` of ``n`` bigints: state DuckDB cannot spill (8n bytes at once)."""
    with budget, under_budget(budget):
        return run_query(f"SELECT len(l) AS n, list_sum(l) AS t FROM (SELECT list(range) l FROM range({n}))", {})


def test_a_query_over_its_limit_runs_again_with_twice_the_limit(tmp_path):
    mm = MemoryManager(256 * MiB)
    budget = TaskMemory(mm, 1, [str(tmp_path)], str(tmp_path), 0)
    n = 5_000_000  # 40 MB of list: more than 64 MiB with DuckDB's own blocks, less than 128
    assert _list_of(n, budget).to_pylist() == [{"n": n, "t": n * (n - 1) // 2}]
    assert budget.grown == 1 and budget.limit == 2 * FLOOR
    assert mm.execution_used == 0


def test_a_query_that_cannot_fit_names_the_sizes(tmp_path):
    """A tiny executor: the limit grows to twice the floor and no further; a query whose
    state cannot spill fails with an error that names the size and what to change."""
    mm = MemoryManager(FLOOR)
    budget = TaskMemory(mm, 1, [str(tmp_path)], str(tmp_path), 0)
    with pytest.raises(QueryOutOfMemory, match=r"more than 128 MiB.*memory=.*partitions"):
        _list_of(40_000_000, budget)
    assert budget.grown == 1 and mm.execution_used == 0
