"""The session settings that change a query's meaning: ``spark.sql.ansi.enabled`` (Spark 4's
default, true) and ``spark.sql.session.timeZone``, set with ``spark.conf.set`` or Spark SQL's
``SET``; PySpark's exceptions with Spark's error classes where ANSI mode fails a query.
The values are PySpark 4.3's (the conformance goldens hold the same cases at scale)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from strataflow.pyspark import SparkContext
from strataflow.pyspark.errors import AnalysisException, ArithmeticException, NumberFormatException
from strataflow.pyspark.sql import SparkSession, functions as F


@pytest.fixture(scope="module")
def spark():
    sc = SparkContext("local[2]", "sql-conf")
    try:
        yield SparkSession(sc)
    finally:
        sc.stop()


def test_set_statements_change_ansi_mode(spark):
    df = spark.createDataFrame([(1, 0), (6, 3)], "a int, b int")
    spark.sql("RESET spark.sql.ansi.enabled")
    with pytest.raises(ArithmeticException) as err:  # the default is Spark 4's: ANSI on
        df.select(F.col("a") / F.col("b")).collect()
    assert err.value.getCondition() == "DIVIDE_BY_ZERO"
    assert isinstance(err.value, ArithmeticError)
    shown = spark.sql("SET spark.sql.ansi.enabled = false").collect()
    assert [tuple(r) for r in shown] == [("spark.sql.ansi.enabled", "false")]
    assert spark.conf.get("spark.sql.ansi.enabled") == "false"
    assert [r[0] for r in df.select(F.col("a") / F.col("b")).collect()] == [None, 2.0]
    assert spark.sql("SET spark.sql.ansi.enabled").collect()[0].value == "false"
    spark.sql("RESET spark.sql.ansi.enabled")
    assert spark.sql("SET spark.sql.ansi.enabled").collect()[0].value == "<undefined>"


def test_ansi_casts_raise_spark_error_classes_and_try_cast_does_not(spark):
    df = spark.createDataFrame([("12",), ("12.7",), (None,)], "s string")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    with pytest.raises(NumberFormatException) as err:
        df.select(F.col("s").cast("int")).collect()
    assert err.value.getErrorClass() == "CAST_INVALID_INPUT"
    assert [r[0] for r in df.select(F.col("s").try_cast("int")).collect()] == [12, None, None]
    spark.conf.set("spark.sql.ansi.enabled", "false")
    assert [r[0] for r in df.select(F.col("s").cast("int")).collect()] == [12, 12, None]  # Spark truncates
    spark.conf.unset("spark.sql.ansi.enabled")


def test_overflow_wraps_without_ansi_and_raises_with_it(spark):
    df = spark.createDataFrame([(2147483647, 1)], "a int, b int")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    assert df.select((F.col("a") + F.col("b")).alias("s")).first().s == -2147483648
    spark.conf.set("spark.sql.ansi.enabled", "true")
    with pytest.raises(ArithmeticException) as err:
        df.select(F.col("a") + F.col("b")).collect()
    assert err.value.getCondition() == "ARITHMETIC_OVERFLOW"
    spark.conf.unset("spark.sql.ansi.enabled")


def test_session_time_zone_shapes_fields_text_and_parsing(spark):
    ts = dt.datetime(2024, 3, 10, 10, 30)  # an instant: 10:30 UTC is 03:30 in Los Angeles (PDT)
    df = spark.createDataFrame([(ts,)], "t timestamp")
    spark.sql("SET spark.sql.session.timeZone=America/Los_Angeles")
    row = df.select(F.hour("t").alias("h"), F.date_format("t", "yyyy-MM-dd HH:mm").alias("f"),
                    F.col("t").cast("string").alias("s"), F.col("t").cast("date").alias("d")).first()
    assert (row.h, row.f, row.s, row.d) == (3, "2024-03-10 03:30", "2024-03-10 03:30:00", dt.date(2024, 3, 10))
    parsed = spark.createDataFrame([("2024-11-03 01:30:00",)], "s string").select(F.col("s").cast("timestamp"))
    assert parsed.first()[0] == dt.datetime(2024, 11, 3, 8, 30)  # the repeated hour: its earlier instant (PDT)
    spark.sql("SET spark.sql.session.timeZone=UTC")
    assert df.select(F.hour("t")).first()[0] == 10


def test_refusals_name_the_function_and_say_what_to_use(spark):
    df = spark.createDataFrame([([1, 2],)], "a array<int>")
    for fn, name in ((F.posexplode, "posexplode"), (F.explode_outer, "explode_outer")):
        with pytest.raises(AnalysisException) as err:
            df.select(fn("a")).collect()
        assert err.value.getErrorClass() == "STRATAFLOW_UNSUPPORTED"
        assert f"`{name}`" in str(err.value) and "Instead:" in str(err.value)


def test_a_generators_column_is_named_as_sparks(spark):
    """``explode(a)`` makes a column named ``col`` (Spark names a generator's output, not
    the call), in both forms."""
    df = spark.createDataFrame([([1, 2],)], "a array<int>")
    assert df.select(F.explode("a")).columns == ["col"]
    assert [r.col for r in df.select(F.explode("a")).collect()] == [1, 2]
    assert spark.sql("SELECT explode(array(1, 2))").columns == ["col"]
    assert df.select(F.explode("a").alias("v")).columns == ["v"]


def test_a_structs_unnamed_fields_are_col1_col2(spark):
    """``struct`` names a field after a column or an alias, anything else ``col<position>``
    as Spark's CreateStruct does."""
    row = spark.range(1).select(F.struct(F.lit(1), "id", F.lit("x").alias("t"), F.col("id") + 1).alias("s")).first()
    assert row.s.asDict() == {"col1": 1, "id": 0, "t": "x", "col4": 1}


def test_the_current_date_and_time_are_named_as_sparks(spark):
    assert spark.range(1).select(F.current_date(), F.current_timestamp()).columns == [
        "current_date()", "current_timestamp()"]


def test_the_listed_silent_differences_now_give_spark_answers(spark):
    """The issue's list, each as PySpark 4.3 answers it (non-ANSI, UTC)."""
    spark.conf.set("spark.sql.ansi.enabled", "false")
    df = spark.createDataFrame([(2.675, 1.005, dt.date(2024, 3, 10), "John Smith", "ß", Decimal("1.25"), 0)],
                               "d double, e double, day date, name string, s string, m decimal(10,2), z int")
    row = df.select(F.round("d", 2).alias("r"), F.round("e", 2).alias("r2"), F.dayofweek("day").alias("w"),
                    F.regexp_replace("name", r"(\w+) (\w+)", "$2 $1").alias("sw"), F.substring("name", 0, 2).alias("sub"),
                    F.upper("s").alias("u"), (F.col("d") / F.col("z")).alias("q")).first()
    assert (row.r, row.r2, row.w, row.sw, row.sub, row.u, row.q) == (2.68, 1.01, 1, "Smith John", "Jo", "SS", None)
    avg = df.select(F.avg("m").alias("a"))
    assert avg.first().a == Decimal("1.250000") and avg.schema["a"].dataType.simpleString() == "decimal(14,6)"
    spark.conf.unset("spark.sql.ansi.enabled")


def test_every_pyspark_function_name_is_there_or_refused_by_name():
    """A PySpark 4.3 ``functions`` name strataflow lacks raises an AttributeError naming it."""
    from strataflow.pyspark.sql.function_names import PYSPARK_FUNCTIONS
    from strataflow.pyspark.sql.functions import MissingFunction

    have = missing = 0
    for name in PYSPARK_FUNCTIONS:
        try:
            getattr(F, name)
            have += 1
        except MissingFunction as exc:
            assert f"functions.{name} " in str(exc)
            missing += 1
    assert have + missing == len(PYSPARK_FUNCTIONS) and have >= 420
    with pytest.raises(AttributeError) as err:
        F.no_such_function
    assert not isinstance(err.value, MissingFunction)
