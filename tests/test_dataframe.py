"""The DataFrame API against models of the right answer: real PySpark (the same program,
its import changed) where Java and pyspark are installed, and plain Python everywhere.

The data are the values users bring: None in every column, unicode, dates, timestamps,
decimals, NaN, a skewed key, more partitions than rows (empty partitions). Results are
compared as sorted rows unless the program orders them.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strataflow.pyspark import SparkConf, SparkContext, StorageLevel
from strataflow.pyspark.sql import AnalysisException, Row, SparkSession, Window
from strataflow.pyspark.sql import functions as F

PEOPLE = [(1, "Ann", "eng", 3.5, dt.date(2024, 1, 5), Decimal("10.50")),
          (2, "Bo", "eng", None, dt.date(2023, 12, 31), Decimal("0.01")),
          (3, "Čeněk", "ops", float("nan"), None, Decimal("-3.00")),
          (4, None, "eng", 1.25, dt.date(2024, 2, 29), None),
          (5, "Zoë 日本", None, -0.5, dt.date(2024, 1, 5), Decimal("7.77")),
          (6, "Ann", "eng", 2.0, dt.date(2020, 6, 1), Decimal("1.00"))]
PEOPLE_SCHEMA = "id BIGINT, name STRING, dept STRING, score DOUBLE, born DATE, pay DECIMAL(10,2)"
DEPTS = [("eng", "Engineering", 10), ("ops", "Operations", 20), ("hr", "People", 30)]


@pytest.fixture(scope="module")
def spark():
    conf = SparkConf().set("spark.sql.shuffle.partitions", "3")
    sc = SparkContext("local[2]", "dataframes", conf=conf)
    session = SparkSession(sc)
    session.conf.set("spark.sql.shuffle.partitions", "3")
    try:
        yield session
    finally:
        sc.stop()


def _frames(spark_, functions):
    people = spark_.createDataFrame(PEOPLE, PEOPLE_SCHEMA).repartition(4)  # 6 rows, 4 partitions: some empty
    depts = spark_.createDataFrame(DEPTS, "dept STRING, title STRING, floor INT")
    return people, depts


def _programs(F_, Window_):
    """name -> program(people, depts) -> DataFrame, written once for both engines."""
    w = Window_.partitionBy("dept").orderBy(F_.col("id"))
    return {
        "select_expr": lambda p, d: p.select("id", (F_.col("id") * 2 + 1).alias("x"), F_.upper("name").alias("u")),
        "filter_null": lambda p, d: p.filter(F_.col("score").isNull() | (F_.col("score") > 1)).select("id"),
        "group_agg": lambda p, d: p.groupBy("dept").agg(F_.count("*").alias("n"), F_.sum("id").alias("s"),
                                                         F_.max("born").alias("b"), F_.min("name").alias("m")),
        "group_decimal": lambda p, d: p.groupBy("dept").agg(F_.sum("pay").alias("total")),
        "global_agg": lambda p, d: p.agg(F_.count("name").alias("c"), F_.countDistinct("dept").alias("dd")),
        "inner_join": lambda p, d: p.join(d, "dept").select("id", "title", "floor"),
        "left_join": lambda p, d: p.join(d, p.dept == d.dept, "left").select(p.id, d.title),
        "full_join": lambda p, d: p.join(d, "dept", "full").select("dept", "id"),
        "semi_join": lambda p, d: p.join(d.filter(F_.col("floor") > 15), "dept", "left_semi").select("id"),
        "anti_join": lambda p, d: p.join(d, "dept", "left_anti").select("id"),
        "order_nulls": lambda p, d: p.orderBy(F_.col("born").desc(), "id").select("id", "born"),
        "order_strings": lambda p, d: p.orderBy("name", "id").select("name", "id"),
        "window_rank": lambda p, d: p.select("id", "dept", F_.row_number().over(w).alias("rn"),
                                             F_.sum("id").over(w).alias("run"), F_.lag("id").over(w).alias("prev")),
        "distinct": lambda p, d: p.select("dept").distinct(),
        "when": lambda p, d: p.select("id", F_.when(F_.col("score") > 2, "hi").when(F_.col("score").isNull(), "none")
                                      .otherwise("lo").alias("band")),
        "dates": lambda p, d: p.select("id", F_.year("born").alias("y"), F_.month("born").alias("m"),
                                       F_.date_add("born", 30).alias("later")),
        "strings": lambda p, d: p.select("id", F_.length("name").alias("len"), F_.concat_ws("-", "name", "dept")
                                         .alias("cw"), F_.substring("name", 1, 2).alias("sub")),
        "union": lambda p, d: p.select("dept").union(d.select("dept")),
        "fillna": lambda p, d: p.na.fill({"name": "?", "dept": "none"}).select("id", "name", "dept"),
        "limit_sorted": lambda p, d: p.orderBy(F_.desc("id")).limit(2).select("id"),
        "with_column": lambda p, d: p.withColumn("id", F_.col("id") + 100).withColumnRenamed("name", "who")
                                     .drop("pay", "born"),
    }


ORDERED = {"order_nulls", "order_strings", "limit_sorted"}


def _norm(rows):
    def v(x):
        if isinstance(x, float) and math.isnan(x):
            return "NaN"
        if isinstance(x, float):
            return round(x, 9)
        return x
    return [tuple(v(x) for x in r) for r in rows]


def _key(r):
    return tuple((x is None, str(type(x)), x if x is not None else 0) for x in r)


def real_pyspark_results(programs, app: str) -> dict:
    """Each program's columns and rows as real PySpark computes them, ``programs`` taking
    PySpark's ``functions`` and ``Window`` (skips the test if PySpark or Java is missing)."""
    from strataflow.bench.peers.pyspark_peer import available

    ok, why = available()
    if not ok:
        pytest.skip(f"PySpark unavailable: {why}")
    from pyspark.sql import SparkSession as RealSession, Window as RealWindow, functions as RF

    real = (RealSession.builder.master("local[2]").appName(app).config("spark.sql.shuffle.partitions", "3")
            .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").getOrCreate())
    try:
        p, d = _frames(real, RF)
        out = {}
        for name, prog in programs(RF, RealWindow).items():
            df = prog(p, d)
            out[name] = (df.columns, _norm(df.collect()))
        return out
    finally:
        real.stop()


@pytest.fixture(scope="module")
def pyspark_results():
    return real_pyspark_results(_programs, "model")


def assert_as_pyspark(df, model: tuple, ordered: bool) -> None:
    """``df``'s columns and rows are PySpark's (``model``), in order if ``ordered``."""
    cols, rows = model
    got = _norm(df.collect())
    assert df.columns == cols
    if ordered:
        assert got == rows
    else:
        assert sorted(got, key=_key) == sorted(rows, key=_key)


@pytest.mark.parametrize("name", sorted(_programs(F, Window)))
def test_program_matches_pyspark(spark, pyspark_results, name):
    p, d = _frames(spark, F)
    assert_as_pyspark(_programs(F, Window)[name](p, d), pyspark_results[name], name in ORDERED)


def test_show_prints_as_pyspark(spark, capsys):
    df = spark.createDataFrame([(1, "a" * 25, 1e7, True, dt.date(2024, 1, 2)), (2, None, 0.1, None, None)],
                               "id INT, s STRING, x DOUBLE, b BOOLEAN, d DATE")
    df.show()
    assert capsys.readouterr().out == (
        "+---+--------------------+-----+----+----------+\n"
        "| id|                   s|    x|   b|         d|\n"
        "+---+--------------------+-----+----+----------+\n"
        "|  1|aaaaaaaaaaaaaaaaa...|1.0E7|true|2024-01-02|\n"
        "|  2|                NULL|  0.1|NULL|      NULL|\n"
        "+---+--------------------+-----+----+----------+\n\n")
    spark.range(5).show(2)
    assert capsys.readouterr().out.endswith("|  1|\n+---+\nonly showing top 2 rows\n")  # as PySpark 4: no blank line
    # a name longer than 20 characters is shown whole (Spark cuts the cells, not the names:
    # PySpark's own doctest of Column.between)
    df.select(df.id.between(1, 4)).show()
    assert capsys.readouterr().out.splitlines()[1] == "|((id >= 1) AND (id <= 4))|"


# -- plain-Python models over generated data --------------------------------------------------------------
KEYS = st.one_of(st.none(), st.sampled_from(["a", "b", "ß", "日本", ""]), st.text(max_size=3))
ROWS = st.lists(st.tuples(KEYS, st.one_of(st.none(), st.integers(-10**6, 10**6))), max_size=40)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS, parts=st.integers(1, 5))
def test_group_by_matches_a_python_model(spark, rows, parts):
    """Partial aggregation (per map partition, then combined) gives the one-pass answer."""
    df = spark.createDataFrame(rows, "k STRING, v BIGINT").repartition(parts)
    agg = df.groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s"), F.min("v").alias("lo"),
                              F.max("v").alias("hi"), F.avg("v").alias("m"), F.count("v").alias("nv"))
    got = {r.k: (r.n, r.s, r.lo, r.hi, None if r.m is None else round(r.m, 6), r.nv) for r in agg.collect()}
    model: dict = {}
    for k, v in rows:
        model.setdefault(k, []).append(v)
    want = {}
    for k, vs in model.items():
        xs = [v for v in vs if v is not None]
        want[k] = (len(vs), sum(xs) if xs else None, min(xs, default=None), max(xs, default=None),
                   round(sum(xs) / len(xs), 6) if xs else None, len(xs))
    assert got == want
    total = df.agg(F.count("*").alias("n"), F.sum("v").alias("s")).collect()
    assert tuple(total[0]) == (len(rows), sum(v for _, v in rows if v is not None) if any(
        v is not None for _, v in rows) else None)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(left=ROWS, right=ROWS, how=st.sampled_from(["inner", "left", "full", "left_anti"]))
def test_join_matches_a_python_model(spark, left, right, how):
    a = spark.createDataFrame(left, "k STRING, v BIGINT")
    b = spark.createDataFrame(right, "k STRING, w BIGINT")
    got = sorted(map(tuple, a.join(b, a.k == b.k, how).collect()), key=_key)
    model = []
    for lk, lv in left:
        hits = [(rk, rw) for rk, rw in right if lk is not None and rk == lk]
        if how == "left_anti":
            model += [] if hits else [(lk, lv)]
        else:
            model += [(lk, lv, rk, rw) for rk, rw in hits] or ([(lk, lv, None, None)] if how in ("left", "full") else [])
    if how == "full":
        model += [(None, None, rk, rw) for rk, rw in right if rk is None or rk not in {k for k, _ in left}]
    assert got == sorted(model, key=_key)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.one_of(st.none(), st.floats(allow_nan=False, width=64), st.integers(-5, 5).map(float)),
                       max_size=60), parts=st.integers(1, 4), desc=st.booleans())
def test_order_by_matches_a_python_model(spark, values, parts, desc):
    df = spark.createDataFrame([(v,) for v in values], "x DOUBLE").repartition(parts)
    got = [r.x for r in df.orderBy(F.col("x").desc() if desc else F.col("x")).collect()]
    nulls = [None] * values.count(None)
    body = sorted((v for v in values if v is not None), reverse=desc)
    assert got == (body + nulls if desc else nulls + body)  # Spark: ascending nulls first, descending nulls last


# -- errors -----------------------------------------------------------------------------------------------
def test_an_unknown_column_is_named_with_the_ones_that_exist(spark):
    df = spark.createDataFrame([(1, "x")], ["id", "name"])
    with pytest.raises(AnalysisException, match=r"`nmae` cannot be resolved.*\[`id`, `name`\]") as info:
        df.select(F.col("nmae") + 1)
    assert info.value.getErrorClass() == "UNRESOLVED_COLUMN"
    with pytest.raises(AnalysisException, match="nmae"):
        df.filter("nmae > 1")
    with pytest.raises(AttributeError, match="nmae"):
        df.nmae


def test_an_ambiguous_column_after_a_join_is_an_error_and_a_qualified_one_is_not(spark):
    a = spark.createDataFrame([(1, "x")], ["id", "v"])
    b = spark.createDataFrame([(1, "y")], ["id", "v"])
    j = a.join(b, a.id == b.id)
    assert j.columns == ["id", "v", "id", "v"]
    with pytest.raises(AnalysisException, match="AMBIGUOUS_REFERENCE"):
        j.select("v")
    assert j.select(a.v, b.v).collect() == [Row(v="x", v2="y")[:2]] or j.select(a.v, b.v).collect()[0][:] == ("x", "y")


def test_sql_errors_name_the_problem(spark):
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND.*no_such_view"):
        spark.sql("SELECT * FROM no_such_view")
    with pytest.raises(AnalysisException, match="PARSE_SYNTAX_ERROR"):
        spark.sql("SELEC 1")
    with pytest.raises(ValueError, match="Unsupported join type 'sideways'"):
        spark.range(1).join(spark.range(1), "id", "sideways")
    with pytest.raises(ValueError, match="schema string"):
        spark.createDataFrame([(1,)], "a NOTATYPE")


def test_sql_over_views_matches_the_dataframe_program(spark):
    p, d = _frames(spark, F)
    p.createOrReplaceTempView("people")
    d.createOrReplaceTempView("depts")
    got = spark.sql("""
        WITH staff AS (SELECT * FROM people WHERE name IS NOT NULL)
        SELECT d.title, count(*) AS n, sum(s.id) AS ids,
               CASE WHEN count(*) > 2 THEN 'big' ELSE 'small' END AS size
        FROM staff s JOIN depts d ON s.dept = d.dept
        WHERE s.born >= DATE '2021-01-01' OR s.born IS NULL
        GROUP BY d.title HAVING count(*) >= 1 ORDER BY n DESC, d.title""").collect()
    assert [tuple(r) for r in got] == [("Engineering", 2, 3, "small"), ("Operations", 1, 3, "small")]
    assert spark.sql("SELECT name FROM people WHERE name LIKE 'A%' ORDER BY id LIMIT 1").collect() == [Row(name="Ann")]


def test_sql_subqueries_answer_as_sql_does(spark):
    """IN, NOT IN (a null in the subquery: no row; a null value: never kept), EXISTS and
    correlated scalar subqueries, against a Python reading of SQL's rules."""
    a = [(1, 10), (2, 20), (3, None), (None, 5)]
    b = [(1,), (3,), (None,)]
    spark.createDataFrame(a, "k INT, v INT").createOrReplaceTempView("sa")
    spark.createDataFrame(b, "k INT").createOrReplaceTempView("sb")
    spark.createDataFrame([(1,), (3,)], "k INT").createOrReplaceTempView("sc")

    def ks(q):
        return sorted((r[0] for r in spark.sql(q).collect()), key=lambda x: (x is None, x))

    assert ks("SELECT k FROM sa WHERE k IN (SELECT k FROM sb)") == [1, 3]
    assert ks("SELECT k FROM sa WHERE k NOT IN (SELECT k FROM sb)") == []  # sb holds a null
    assert ks("SELECT k FROM sa WHERE k NOT IN (SELECT k FROM sc)") == [2]  # a null k is never kept
    assert ks("SELECT k FROM sa WHERE EXISTS (SELECT 1 FROM sb WHERE sb.k = sa.k)") == [1, 3]
    assert ks("SELECT k FROM sa WHERE NOT EXISTS (SELECT 1 FROM sc WHERE sc.k = sa.k)") == [2, None]
    assert ks("SELECT k FROM sa WHERE v > (SELECT avg(v) FROM sa)") == [2]
    with pytest.raises(AnalysisException, match="cannot rewrite as joins"):  # correlated by <=: not yet
        spark.sql("SELECT k FROM sa o WHERE v >= (SELECT max(v) FROM sa i WHERE i.k <= o.k)")


@pytest.mark.parametrize("level", ["MEMORY_ONLY", "MEMORY_AND_DISK", "DISK_ONLY"])
def test_cache_keeps_the_answer_at_every_level(spark, level):
    p, _ = _frames(spark, F)
    before = sorted(_norm(p.groupBy("dept").count().collect()), key=_key)
    p.persist(getattr(StorageLevel, level))
    assert p.is_cached and p.storageLevel == getattr(StorageLevel, level)
    for _ in range(2):
        assert sorted(_norm(p.groupBy("dept").count().collect()), key=_key) == before
    p.unpersist()
    assert not p.is_cached


def test_files_round_trip(spark, tmp_path):
    p, _ = _frames(spark, F)
    p.write.parquet(str(tmp_path / "pq"))
    back = spark.read.parquet(str(tmp_path / "pq"))
    assert back.dtypes == p.dtypes
    assert sorted(_norm(back.collect()), key=_key) == sorted(_norm(p.collect()), key=_key)
    with pytest.raises(AnalysisException, match="PATH_ALREADY_EXISTS"):
        p.write.parquet(str(tmp_path / "pq"))
    p.select("id", "name").write.mode("overwrite").csv(str(tmp_path / "pq"), header=True)
    csv = spark.read.csv(str(tmp_path / "pq"), header=True, inferSchema=True)
    assert sorted(_norm(csv.collect()), key=_key) == sorted(_norm(p.select("id", "name").collect()), key=_key)
