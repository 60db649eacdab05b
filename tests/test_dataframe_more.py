"""The DataFrame members beyond the core (set operations, rollup/cube/grouping sets,
pivot, ``na.replace``, ``unpivot``, ordinals, ``offset``, user functions over Arrow and
pandas batches, the catalog and global views, table-valued ``range`` in SQL) against
models of the right answer: real PySpark running the same program, and plain Python
(``collections.Counter`` for multiset semantics) over values users have: None, NaN,
unicode, duplicates, empty partitions.
"""

from __future__ import annotations

import collections
import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_dataframe import _frames, assert_as_pyspark, real_pyspark_results

from strataflow.pyspark import SparkConf, SparkContext
from strataflow.pyspark.sql import AnalysisException, SparkSession
from strataflow.pyspark.sql import functions as F


@pytest.fixture(scope="module")
def spark():
    conf = SparkConf().set("spark.sql.shuffle.partitions", "3")
    sc = SparkContext("local[2]", "dataframes-more", conf=conf)
    session = SparkSession(sc)
    try:
        yield session
    finally:
        sc.stop()


def _programs(F_):
    """name -> program(people, depts) -> DataFrame, written once for both engines."""
    return {
        "intersect": lambda p, d: p.select("dept").intersect(d.select("dept")),
        "intersect_all": lambda p, d: p.select("dept").intersectAll(p.filter("id > 1").select("dept")),
        "subtract": lambda p, d: p.select("dept", "name").subtract(p.filter("id = 1").select("dept", "name")),
        "except_all": lambda p, d: p.select("dept").exceptAll(d.select("dept")),
        "rollup": lambda p, d: p.rollup("dept", "name").agg(F_.count("*").alias("n"), F_.sum("id").alias("s")),
        "cube": lambda p, d: p.cube("dept").agg(F_.max("score").alias("m")),
        "grouping_sets": lambda p, d: p.groupingSets([["dept"], []], "dept").agg(F_.avg("id").alias("a")),
        "pivot_values": lambda p, d: p.groupBy("dept").pivot("name", ["Ann", "Bo"]).agg(F_.sum("id")),
        "pivot_inferred": lambda p, d: p.groupBy("dept").pivot("born").count(),
        "pivot_two_aggs": lambda p, d: p.groupBy("name").pivot("dept", ["eng", "ops"]).agg(
            F_.sum("id"), F_.count("score")),
        "replace_numbers": lambda p, d: p.na.replace(3, 30).select("id", "score"),
        "replace_strings": lambda p, d: p.na.replace(["Ann", "eng"], ["A", None], ["name", "dept"])
                                         .select("id", "name", "dept"),
        "replace_dict": lambda p, d: p.replace({"Bo": "B", "ops": "o"}).select("id", "name", "dept"),
        "dropna_nan": lambda p, d: p.na.drop(subset=["score"]).select("id"),
        "dropna_thresh": lambda p, d: p.dropna(thresh=5).select("id"),
        "unpivot": lambda p, d: d.unpivot("dept", ["floor"], "var", "val"),
        "sort_ordinal": lambda p, d: p.select("id", "dept").sort(-1, 1),
        "group_ordinal": lambda p, d: p.select("dept", "id").groupBy(1).agg(F_.sum("id").alias("s")),
        "offset": lambda p, d: p.orderBy("id").offset(4).select("id"),
        "casts_truncate": lambda p, d: p.filter(F_.col("score").isNotNull() & ~F_.isnan("score")).select(
            "id", F_.col("score").cast("int"), (F_.col("score") * -1).cast("bigint").alias("neg"),
            F_.col("pay").cast("int").alias("pay_int")),
        "string_coercions": lambda p, d: p.select(F_.upper("id").alias("u"), F_.length("id").alias("l"),
                                                  (F_.lit("2") + F_.col("id")).alias("a")),
        "cast_names": lambda p, d: p.select(F_.col("id").cast("string"), (F_.col("id") + 1).cast("int"),
                                            F_.col("name").cast("string")),
        "sql_names": lambda p, d: _sql(p, "SELECT ID AS MyId, Name, id + 1, CAST(id AS INT), CAST(id + 1 AS INT), "
                                          "count(*) OVER (PARTITION BY dept) AS n, upper(dept) FROM people_v"),
        "sql_star": lambda p, d: _sql(d, "SELECT *, floor * 2 FROM people_v"),
    }


def _sql(df, query):
    df.createOrReplaceTempView("people_v")
    return df.sparkSession.sql(query)


ORDERED = {"sort_ordinal"}


@pytest.fixture(scope="module")
def pyspark_results():
    return real_pyspark_results(lambda functions, window: _programs(functions), "model-more")


@pytest.mark.parametrize("name", sorted(_programs(F)))
def test_program_matches_pyspark(spark, pyspark_results, name):
    p, d = _frames(spark, F)
    assert_as_pyspark(_programs(F)[name](p, d), pyspark_results[name], name in ORDERED)


VALUES = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from(["a", "é", "日"]))
ROWS = st.lists(st.tuples(st.integers(-1, 2), VALUES.map(lambda v: None if v is None else str(v))), max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(left=ROWS, right=ROWS, parts=st.integers(1, 4))
def test_set_operations_match_multiset_models(spark, left, right, parts):
    schema = "k int, v string"
    a = spark.createDataFrame(left, schema).repartition(parts)
    b = spark.createDataFrame(right, schema).repartition(1)
    ca, cb = collections.Counter(left), collections.Counter(right)

    def rows(df):
        return collections.Counter(tuple(r) for r in df.collect())

    assert rows(a.intersect(b)) == collections.Counter(set(ca) & set(cb))
    assert rows(a.intersectAll(b)) == ca & cb
    assert rows(a.subtract(b)) == collections.Counter(set(ca) - set(cb))
    assert rows(a.exceptAll(b)) == ca - cb


def test_set_operations_cast_both_sides_alike_and_check_widths(spark):
    ints = spark.createDataFrame([(1,), (2,)], "n int")
    doubles = spark.createDataFrame([(1.0,), (2.5,)], "n double")
    assert sorted(r.n for r in ints.intersect(doubles).collect()) == [1.0]
    assert ints.intersect(doubles).dtypes == [("n", "double")]
    with pytest.raises(AnalysisException, match="NUM_COLUMNS_MISMATCH"):
        ints.subtract(spark.range(1).select("id", "id"))


def test_nan_rows_meet_in_set_operations(spark):
    a = spark.createDataFrame([(float("nan"),), (1.0,)], "x double")
    got = a.intersect(spark.createDataFrame([(float("nan"),)], "x double")).collect()
    assert len(got) == 1 and math.isnan(got[0].x)


def test_an_ordinal_out_of_range_names_the_columns(spark):
    df = spark.createDataFrame([(1, "a")], ["n", "s"])
    with pytest.raises(AnalysisException, match=r"ordinal 3 .* \['n', 's'\]"):
        df.sort(3)
    with pytest.raises(AnalysisException, match="ordinal 0"):
        df.groupBy(0)


def test_pivot_of_an_unknown_column_is_named(spark):
    with pytest.raises(AnalysisException, match="nope"):
        spark.range(3).groupBy("id").pivot("nope").count()


def test_replace_needs_a_value_and_lists_of_one_length(spark):
    df = spark.createDataFrame([(1, "a")], ["n", "s"])
    with pytest.raises(TypeError, match="value argument is required"):
        df.replace(1)
    with pytest.raises(ValueError, match="same length"):
        df.replace([1, 2], [3])
    assert df.replace(True, False).collect() == df.collect()  # no boolean column: nothing changes


def test_map_in_arrow_and_pandas_run_per_partition_and_check_the_schema(spark):
    df = spark.range(10, numPartitions=3)

    def counts(batches):
        yield pa.RecordBatch.from_pydict({"n": [sum(b.num_rows for b in batches)]})

    assert sorted(r.n for r in df.mapInArrow(counts, "n long").collect()) == [3, 3, 4]

    def wrong(frames):
        for pdf in frames:
            yield pdf.rename(columns={"id": "other"})

    with pytest.raises(AnalysisException, match=r"lacks the columns \['id'\]"):
        df.mapInPandas(wrong, "id long").collect()

    def halves(frames):
        for pdf in frames:
            yield pdf.assign(id=pdf.id / 2)

    assert sorted(r.id for r in df.mapInPandas(halves, "id double").collect()) == [i / 2 for i in range(10)]


def test_foreach_and_transform(spark):
    seen = spark.sparkContext.accumulator(0)
    spark.range(5, numPartitions=2).foreach(lambda row: seen.add(row.id))
    assert seen.value == 10
    parts = spark.sparkContext.accumulator(0)
    spark.range(5, numPartitions=2).foreachPartition(lambda rows: parts.add(1))
    assert parts.value == 2
    with pytest.raises(TypeError, match="should return a DataFrame"):
        spark.range(1).transform(lambda df: 3)


def test_col_regex_to_and_checkpoints(spark):
    df = spark.createDataFrame([("x", 1, 2.5)], ["name", "n1", "n2"])
    assert df.select(df.colRegex("`n\\d`")).columns == ["n1", "n2"]
    assert df.select("name", df.colRegex("`zz.*`")).columns == ["name"]
    from strataflow.pyspark.sql.types import LongType, StringType, StructField, StructType

    to = df.to(StructType([StructField("n2", LongType()), StructField("name", StringType())]))
    assert to.collect()[0].asDict() == {"n2": 2, "name": "x"}
    with pytest.raises(AnalysisException, match="`missing`"):
        df.to(StructType([StructField("missing", LongType())]))
    assert df.localCheckpoint().collect() == df.collect() and df.checkpoint(eager=False).count() == 1


def test_catalog_views_global_views_and_show_tables(spark):
    spark.range(3).createOrReplaceTempView("cat_three")
    assert "cat_three" in [t.name for t in spark.catalog.listTables()]
    assert spark.catalog.tableExists("cat_three") and not spark.catalog.tableExists("cat_four")
    tables = {r.tableName for r in spark.sql("SHOW TABLES").collect()}
    assert "cat_three" in tables
    spark.range(2).createGlobalTempView("cat_shared")
    other = spark.newSession()
    assert other.sql("SELECT count(*) AS n FROM global_temp.cat_shared").first().n == 2
    assert other.table("global_temp.cat_shared").count() == 2
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        other.table("cat_three")  # a temporary view is its session's own
    with pytest.raises(AnalysisException, match="ALREADY_EXISTS.*global_temp.cat_shared"):
        spark.range(1).createGlobalTempView("cat_shared")
    assert spark.catalog.dropGlobalTempView("cat_shared") and not spark.catalog.dropGlobalTempView("cat_shared")
    assert spark.catalog.dropTempView("cat_three")
    spark.sql("DROP TABLE IF EXISTS cat_three")  # gone: IF EXISTS says nothing
    with pytest.raises(AnalysisException, match="cat_three"):
        spark.sql("DROP TABLE cat_three")


def test_range_as_a_table_function_in_sql(spark):
    assert [r.id for r in spark.sql("SELECT * FROM range(10) WHERE id > 7").collect()] == [8, 9]
    got = spark.sql("SELECT r.id, s.id AS j FROM range(1, 3) r JOIN range(0, 6, 2) s ON r.id * 2 = s.id").collect()
    assert sorted(tuple(x) for x in got) == [(1, 2), (2, 4)]
    assert "__range" not in " ".join(spark._views)  # the views range() made are gone with the query


def test_two_frames_over_one_source_keep_their_own_cache_levels(spark):
    from strataflow.pyspark import StorageLevel

    df = spark.createDataFrame([(1,), (2,)], ["n"])
    a, b = df.alias("a").persist(StorageLevel.MEMORY_ONLY), df.alias("b").persist(StorageLevel.DISK_ONLY)
    assert a.count() == b.count() == 2
    a.unpersist()
    assert not a.is_cached and b.is_cached and b.storageLevel == StorageLevel.DISK_ONLY
    assert sorted(r.n for r in b.collect()) == [1, 2]


def test_a_small_side_is_broadcast_unless_the_threshold_says_never(spark, tmp_path):
    """A side whose row bound (from its Parquet footers) is under the threshold joins every
    partition of the other whole, with no shuffle; either side of an inner join, only the
    side whose rows may all be dropped otherwise; the answers are the shuffled join's."""
    spark.createDataFrame([(k, f"n{k}") for k in range(7)] + [(None, "none")], "k long, name string") \
        .write.parquet(str(tmp_path / "small"))
    small = spark.read.parquet(str(tmp_path / "small"))
    big = spark.range(200, numPartitions=4).withColumn("k", F.when(F.col("id") % 9 < 8, F.col("id") % 9))

    def shuffles(df):
        return df._current.dataset().explain().count("ShuffledNode")

    def rows(df):
        return sorted((tuple(r) for r in df.collect()), key=str)

    plans = {"inner": lambda: big.join(small, "k"), "inner_left_small": lambda: small.join(big, "k"),
             "right_left_small": lambda: small.join(big, "k", "right"), "left": lambda: big.join(small, "k", "left"),
             "anti": lambda: big.join(small, "k", "left_anti"), "full": lambda: big.join(small, "k", "full")}
    auto = {name: (shuffles(make()), rows(make())) for name, make in plans.items()}
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        never = {name: (shuffles(make()), rows(make())) for name, make in plans.items()}
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    for name in plans:
        assert auto[name][1] == never[name][1], name
        assert never[name][0] == 2, name  # both sides hashed by the key
    assert all(auto[n][0] == 0 for n in ("inner", "inner_left_small", "right_left_small", "left", "anti"))
    assert auto["full"][0] == 2  # a full join keeps every row of both sides: never broadcast
    model = {(i, i % 9) for i in range(200) if i % 9 < 8 and i % 9 < 7}
    assert {(r[1], r[0]) for r in auto["inner"][1]} == model


def test_a_broadcast_side_travels_once_not_inside_every_stage(spark, monkeypatch):
    """The broadcast side of a join is a broadcast variable: written once, loaded once per
    executor. In the join's closure it was pickled into every stage downstream of the join
    and sent to every executor with each (TPC-H's q21: 10 MB, 5 stages x 16 executors at
    local[16], serially from the driver). What each stage sends stays small here while the
    side is megabytes, and the answers are a model's."""
    from strataflow.scheduler import task_set

    sent: list[int] = []
    payload_for = task_set.TaskSetRunner._payload_for

    def recorded(self, handle):
        payload = payload_for(self, handle)
        if payload is not None:
            sent.append(len(payload))
        return payload

    monkeypatch.setattr(task_set.TaskSetRunner, "_payload_for", recorded)
    dim_rows = [(k, f"{k:08d}-" + "é" * 30) for k in range(40000)]
    dim = spark.createDataFrame(dim_rows, "k long, label string")
    assert dim._current.dataset().collect_partitions() and \
        sum(t.nbytes for t in dim._current.dataset().collect_partitions()) > 2 << 20
    facts = spark.range(6000, numPartitions=4).withColumn("k", (F.col("id") * 7) % 40000)
    out = facts.join(F.broadcast(dim), "k").groupBy(F.substring("label", 1, 2).alias("p")).agg(F.count("*").alias("n"))
    model: dict[str, int] = {}
    for i in range(6000):
        p = f"{(i * 7) % 40000:08d}"[:2]
        model[p] = model.get(p, 0) + 1
    assert {r.p: r.n for r in out.collect()} == model
    assert sent and max(sent) < 1 << 20, sent  # the 3 MB side went as a reference


def test_a_joins_planned_types_are_the_types_its_partitions_have(spark):
    """A join of plain columns is typed from its sides, without asking DuckDB: the planned
    schema must be what the executors' tables hold, for every kind of join and the types
    users bring (dates, timestamps, decimals, unicode, lists, structs, booleans, nulls)."""
    import datetime
    import decimal

    left = spark.createDataFrame(
        [(1, datetime.date(2024, 2, 29), decimal.Decimal("1.25"), "ä", [1, 2], True),
         (2, None, None, None, None, None), (3, datetime.date(1970, 1, 1), decimal.Decimal("-3.50"), "🙂", [], False)],
        "k int, d date, m decimal(10,2), s string, xs array<bigint>, b boolean")
    right = spark.createDataFrame(
        [(1, datetime.datetime(2024, 1, 1, 12, 30), {"a": 1.5}), (4, None, None), (3, None, {"a": None})],
        "k long, t timestamp, st struct<a:double>")
    for how in ("inner", "left", "right", "full", "semi", "anti"):
        for joined in (left.join(right, "k", how), left.join(right, left.k == right.k, how)):
            got = joined.toArrow()
            planned = joined._current.schema
            assert got.schema.types == planned.types, how
    inner = left.join(right, "k").collect()
    assert sorted((r.k, r.s, r.t) for r in inner) == [(1, "ä", datetime.datetime(2024, 1, 1, 12, 30)), (3, "🙂", None)]


def test_rows_already_hashed_by_the_keys_are_not_shuffled_again(spark):
    """An aggregate's output joined by its keys, a join's output grouped by its keys: the
    rows are where the next step needs them, so one shuffle fewer; answers as a model's."""
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        a = spark.createDataFrame([(i % 5, i) for i in range(40)] + [(None, 1)], "k int, v long")
        b = spark.createDataFrame([(k, f"n{k}") for k in range(3)] + [(None, "x")], "k long, name string")

        def shuffles(df):
            return df._current.dataset().explain().count("ShuffledNode")

        sums = a.groupBy("k").agg(F.sum("v").alias("s"))
        joined = sums.join(b, "k")
        assert shuffles(joined) == 2  # a's aggregate, then b: not the aggregate's output again
        model = {k: sum(i for i in range(40) if i % 5 == k) for k in range(3)}
        assert {(r.k, r.s, r.name) for r in joined.collect()} == {(k, s, f"n{k}") for k, s in model.items()}
        counts = a.join(b, "k", "right").groupBy(b.k).agg(F.count("v").alias("c"))
        assert shuffles(counts) == 2  # both sides, then no third for the grouping by the right key
        assert sorted(((r.k, r.c) for r in counts.collect()), key=str) == sorted(
            [(k, 8) for k in range(3)] + [(None, 0)], key=str)
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def test_exists_with_a_non_equality_answers_as_sql_does(spark):
    """EXISTS / NOT EXISTS correlated by a key and an inequality (TPC-H q21's shape) run as
    semi and anti joins; nulls in the compared column count as SQL says. DuckDB, running
    the same SQL, is the model."""
    import duckdb

    rows = [(1, 10), (1, 11), (2, 20), (2, 20), (3, None), (3, 30), (4, 40), (None, 50), (5, None)]
    spark.createDataFrame(rows, "k int, s int").createOrReplaceTempView("ex_items")
    con = duckdb.connect()
    con.register("ex_items", pa.table({"k": [r[0] for r in rows], "s": [r[1] for r in rows]},
                                      schema=pa.schema([("k", pa.int32()), ("s", pa.int32())])))
    for query in [
        "SELECT a.k, a.s FROM ex_items a WHERE EXISTS (SELECT * FROM ex_items b WHERE b.k = a.k AND b.s <> a.s)",
        "SELECT a.k, a.s FROM ex_items a WHERE NOT EXISTS (SELECT * FROM ex_items b WHERE b.k = a.k AND b.s <> a.s)",
        "SELECT a.k, count(*) AS n FROM ex_items a WHERE EXISTS (SELECT * FROM ex_items b WHERE b.k = a.k AND "
        "b.s > a.s) AND NOT EXISTS (SELECT * FROM ex_items c WHERE c.k = a.k AND c.s < a.s) GROUP BY a.k",
    ]:
        want = sorted(con.sql(query).fetchall(), key=str)
        assert sorted((tuple(r) for r in spark.sql(query).collect()), key=str) == want, query


def test_a_filtered_side_is_computed_first_and_broadcast_when_small(spark, tmp_path):
    """A side whose rows a filter (or a semi join) narrows, under 64 MB by its row bound,
    is computed before the join: small, it is broadcast (no shuffle of the other side);
    not small, its computed rows feed the shuffle. Either way the answer is the model's."""
    spark.createDataFrame([(k, k % 10, f"d{k}") for k in range(3000)], "k long, g long, d string") \
        .write.parquet(str(tmp_path / "dim"))
    dim = spark.read.parquet(str(tmp_path / "dim"))
    facts = spark.range(20000, numPartitions=4).withColumn("k", F.col("id") % 3000)
    model = sorted((i, i % 3000) for i in range(20000) if (i % 3000) % 10 == 3)

    def run():
        out = facts.join(dim.filter("g = 3"), "k").select("id", "k")
        return out, sorted((r.id, r.k) for r in out.collect())

    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(4 << 20))
    small, rows = run()
    assert rows == model and small._current.dataset().explain().count("ShuffledNode") == 0
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "0")  # nothing is small: shuffled, from its rows
    try:
        shuffled, rows = run()
        assert rows == model and shuffled._current.dataset().explain().count("ShuffledNode") >= 1
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def test_sql_binds_parameters_and_formats_arguments(spark):
    people = spark.createDataFrame([(1, "O'Neil"), (2, "Bo"), (3, None)], "id int, name string")
    assert spark.sql("SELECT id FROM {p} WHERE id > :low AND id < :high", {"low": 1, "high": 3},
                     p=people).collect()[0].id == 2
    assert [r.id for r in spark.sql("SELECT id FROM {p} WHERE id >= ? ORDER BY id", [2], p=people).collect()] == [2, 3]
    assert spark.sql("SELECT id FROM {p} WHERE name = {who}", p=people, who="O'Neil").first().id == 1
    assert spark.sql("SELECT {c} FROM {p} ORDER BY id", c=people.name, p=people).columns == ["name"]
    with pytest.raises(AnalysisException, match="UNBOUND_SQL_PARAMETER.*high"):
        spark.sql("SELECT :high AS h", {"low": 1})
    with pytest.raises(AnalysisException, match="2 parameter markers and 1 values"):
        spark.sql("SELECT ? + ? AS s", [1])
    assert not [v for v in spark._views if v.startswith("__sql_arg")]  # the views {p} made are gone
