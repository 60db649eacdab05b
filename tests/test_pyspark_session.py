"""Spark's defaults a PySpark program relies on (issue 39 §3): ``SparkSession`` as Spark's
own RDD examples start, ``spark.default.parallelism`` as the partition count of shuffles,
``sc.version``; and Spark's ``transitive_closure.py`` example run unchanged but for its
import line (``spark_examples/``)."""

from __future__ import annotations

import os
import runpy
import sys
import warnings
from random import Random

import pytest

import strataflow
from strataflow.pyspark import SPARK_API_VERSION, SparkConf, SparkContext, UnsupportedOperation
from strataflow.pyspark.sql import SparkSession

EXAMPLES = os.path.join(os.path.dirname(__file__), "spark_examples")


def threads(builder: SparkSession.Builder) -> SparkSession.Builder:
    return builder.config("strataflow.backend", "threads").config("strataflow.progress", "false")


@pytest.fixture(autouse=True)
def no_session_left():
    yield
    assert SparkSession.getActiveSession() is None and SparkContext._active_spark_context is None


# -- SparkSession -----------------------------------------------------------------------------
def test_builder_makes_a_session_over_a_spark_context():
    spark = threads(SparkSession.builder.appName("app").master("local[3]")
                    .config("spark.default.parallelism", 2).config(map={"spark.task.maxFailures": 2})).getOrCreate()
    try:
        sc = spark.sparkContext
        assert spark._sc is sc and isinstance(sc, SparkContext)
        assert sc.appName == "app" and sc.master == "local[3]"
        assert sc.ctx.config.task_slots == 3 and sc.ctx.config.task_max_failures == 2
        assert sc.defaultParallelism == 2 and sc.ctx.config.default_parallelism == 2
        assert spark.conf.get("spark.app.name") == "app" and spark.conf.get("missing", "d") == "d"
        spark.conf.set("spark.sql.shuffle.partitions", 7)
        assert spark.conf.get("spark.sql.shuffle.partitions") == "7"
        assert SparkSession.builder.getOrCreate() is spark is SparkSession.active()
        assert sc.parallelize(range(10)).map(lambda x: x * 2).sum() == 90
    finally:
        spark.stop()
    assert SparkSession.getActiveSession() is None
    with pytest.raises(RuntimeError, match="No active SparkSession"):
        SparkSession.active()


def test_builder_takes_a_spark_conf_and_works_as_a_context_manager():
    conf = SparkConf().setMaster("local[2]").setAppName("from-conf")
    with threads(SparkSession.builder.config(conf=conf)).getOrCreate() as spark:
        assert spark.sparkContext.appName == "from-conf" and spark.sparkContext.defaultParallelism == 2


def test_a_running_context_keeps_its_settings_and_the_ignored_ones_are_named():
    sc = SparkContext("local[2]", "first", conf=SparkConf().set("strataflow.backend", "threads")
                      .set("strataflow.progress", "false"))
    try:
        with pytest.warns(UserWarning, match=r"spark.app.name=second.*spark.default.parallelism=9"):
            spark = SparkSession.builder.appName("second").config("spark.default.parallelism", 9).getOrCreate()
        assert spark.sparkContext is sc and sc.appName == "first" and sc.ctx.config.default_parallelism is None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert SparkSession.builder.appName("first").getOrCreate() is spark  # nothing differs: no warning
        assert spark.newSession().sparkContext is sc
    finally:
        spark.stop()
    assert SparkContext._active_spark_context is None


def test_a_session_whose_context_was_stopped_is_replaced():
    first = threads(SparkSession.builder.master("local[1]")).getOrCreate()
    first.sparkContext.stop()
    second = threads(SparkSession.builder.master("local[1]")).getOrCreate()
    try:
        assert second is not first and second.sparkContext.range(4).count() == 4
    finally:
        second.stop()


@pytest.mark.parametrize("name, hint", [
    ("tvf", "RDD"), ("readStream", "batch"),
])
def test_what_is_not_built_yet_is_a_clear_error(name, hint):
    with threads(SparkSession.builder.master("local[1]")).getOrCreate() as spark:
        with pytest.raises(UnsupportedOperation, match=rf"SparkSession\.{name} .*DataFrame.*{hint}"):
            getattr(spark, name)
        with pytest.raises(AttributeError, match="no attribute 'bogus'"):
            spark.bogus


def test_hive_and_spark_connect_are_clear_errors():
    with pytest.raises(UnsupportedOperation, match="Hive"):
        SparkSession.builder.enableHiveSupport()
    with pytest.raises(UnsupportedOperation, match="Spark Connect"):
        SparkSession.builder.remote("sc://host:15002")


# -- sc.version -------------------------------------------------------------------------------
def test_version_is_the_spark_api_mirrored_and_passes_pysparks_checks():
    with threads(SparkSession.builder.master("local[1]")).getOrCreate() as spark:
        sc = spark.sparkContext
        assert sc.version == spark.version == SPARK_API_VERSION == strataflow.pyspark.__version__
        assert sc.version >= "3" and sc.version >= "3.5" and not sc.version < "2.4"
        assert int(sc.version.split(".")[0]) >= 3
        assert tuple(int(p) for p in sc.version.split(".")) >= (3, 0, 0)
        assert sc.version != strataflow.__version__  # strataflow's own is apart


# -- spark.default.parallelism ------------------------------------------------------------------
def _session(default: int | None) -> SparkSession:
    b = threads(SparkSession.builder.master("local[4]"))
    return (b if default is None else b.config("spark.default.parallelism", default)).getOrCreate()


def test_pyspark_partition_counts_follow_pyspark():
    """Without the key, a shuffle of one RDD keeps its count and a join takes the count of
    the union PySpark's Python side makes (the inputs' sum, or their own when partitioned
    alike); with it, every shuffle given no count has it."""
    with _session(None) as spark:
        sc = spark.sparkContext
        a = sc.parallelize([(i % 5, i) for i in range(40)], 3)
        b = sc.parallelize([(1, "x"), (2, "y")], 2)
        assert sc.defaultParallelism == 4
        assert a.reduceByKey(lambda x, y: x + y).getNumPartitions() == 3
        assert a.keys().distinct().getNumPartitions() == 3
        assert a.join(b).getNumPartitions() == 5 and a.cogroup(b).getNumPartitions() == 5
        assert a.keys().intersection(b.keys()).getNumPartitions() == 5
        pa, pb = a.partitionBy(4), b.partitionBy(4)
        assert pa.join(pb).getNumPartitions() == 4  # partitioned alike: not shuffled again
        assert sorted(pa.join(pb).collect()) == sorted(a.join(b).collect())
    with _session(2) as spark:
        sc = spark.sparkContext
        a = sc.parallelize([(i % 5, i) for i in range(40)], 3)
        b = sc.parallelize([(1, "x"), (2, "y")], 5)
        assert sc.defaultParallelism == 2 and sc.parallelize(range(9)).getNumPartitions() == 2
        for rdd in (a.reduceByKey(lambda x, y: x + y), a.groupByKey(), a.keys().distinct(), a.join(b),
                    a.leftOuterJoin(b), a.rightOuterJoin(b), a.fullOuterJoin(b), a.cogroup(b), a.groupWith(b),
                    a.subtractByKey(b), a.keys().subtract(b.keys()), a.keys().intersection(b.keys()),
                    a.sortByKey(), a.partitionBy(), a.combineByKey(lambda v: v, max, max)):
            assert rdd.getNumPartitions() == 2
        assert a.reduceByKey(lambda x, y: x + y, 6).getNumPartitions() == 6  # an explicit count wins
        assert sorted(a.join(b).collect()) == sorted((k, (v, w)) for k, v in a.collect() for k2, w in b.collect()
                                                     if k == k2)


def test_intersection_order_as_pyspark_on_two_cores():
    """``SparkContext()`` on a two-core machine: two slices per RDD, and PySpark's cogroup
    into the union's 4 partitions puts 1, 2, 3 in that order (2 partitions would not)."""
    with threads(SparkSession.builder.master("local[2]")).getOrCreate() as spark:
        sc2 = spark.sparkContext
        rdd1 = sc2.parallelize([1, 10, 2, 3, 4, 5])
        rdd2 = sc2.parallelize([1, 6, 2, 3, 7, 8])
        both = rdd1.intersection(rdd2)
        assert both.getNumPartitions() == 4 and both.collect() == [1, 2, 3]


def pure_closure(edges: set) -> set:
    """The transitive closure by repeated composition, in plain Python."""
    out = set(edges)
    while True:
        new = out | {(x, w) for x, y in out for z, w in edges if y == z}
        if new == out:
            return out
        out = new


def test_sparks_transitive_closure_keeps_two_partitions(monkeypatch, capsys):
    """Spark's example, run as ``spark-submit --conf spark.default.parallelism=2`` runs it:
    the session it builds is the one made here with that setting. Every count reads
    2 partitions, as under PySpark (without the setting they double each round)."""
    spark = threads(SparkSession.builder.appName("PythonTransitiveClosure").master("local[2]")
                    .config("spark.default.parallelism", 2)).getOrCreate()
    stages: list[tuple[str, int]] = []
    spark.sparkContext.ctx.events.subscribe(
        lambda ev: stages.append((ev["kind"], ev["num_tasks"])) if ev["event"] == "StageStart" else None)
    monkeypatch.setattr(sys, "argv", ["transitive_closure.py"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the example's builder asks for nothing the session lacks
        g = runpy.run_path(os.path.join(EXAMPLES, "transitive_closure.py"), run_name="__main__")
    assert SparkSession.getActiveSession() is None  # the example stopped it
    result_tasks = {n for kind, n in stages if kind == "result"}
    assert result_tasks == {2}, stages
    assert max(n for _, n in stages) <= 4  # a round's widest stage: the union of 2 + 2 before distinct
    rounds = sum(1 for kind, _ in stages if kind == "result") - 2  # one count per round, plus two
    assert rounds >= 5
    g["generateGraph"].__globals__["rand"] = Random(42)  # the example's graph again
    expected = pure_closure(g["generateGraph"]())
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"TC has {len(expected)} edges"
    assert g["nextCount"] == len(expected)
