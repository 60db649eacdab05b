"""Python UDFs (``functions.udf``, ``pandas_udf``, ``spark.udf.register``) against plain
Python running the same function over the same values (None, unicode, negative numbers),
in executor processes: the function travels with the task."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strataflow.pyspark import SparkContext
from strataflow.pyspark.sql import AnalysisException, SparkSession
from strataflow.pyspark.sql import functions as F
from strataflow.pyspark.sql.types import IntegerType, StringType


@pytest.fixture(scope="module")
def spark():
    sc = SparkContext("local[2]", "udfs")
    try:
        yield SparkSession(sc)
    finally:
        sc.stop()


def _tag(s, n):
    return None if s is None else f"{s[::-1]}#{n if n is not None else '-'}"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.one_of(st.none(), st.text(alphabet="aé日Z ", max_size=4)),
                               st.one_of(st.none(), st.integers(-5, 5))), max_size=10),
       parts=st.integers(1, 3))
def test_a_udf_gives_what_the_function_gives_row_by_row(spark, rows, parts):
    df = spark.createDataFrame(rows, "s string, n int").repartition(parts)
    tag = F.udf(_tag, StringType())
    got = sorted((tuple(r) for r in df.select("s", "n", tag("s", "n").alias("t")).collect()), key=str)
    assert got == sorted(((s, n, _tag(s, n)) for s, n in rows), key=str)


def test_udfs_in_filters_groups_nesting_and_sql(spark):
    df = spark.createDataFrame([("a", 1), ("b", -2), ("a", None), (None, 4)], ["k", "v"])

    @F.udf(returnType=IntegerType())
    def sq(x):
        return None if x is None else x * x

    assert sorted(r.v for r in df.filter(sq("v") > 1).collect()) == [-2, 4]
    assert df.select(sq(sq("v")).alias("q")).collect()[1].q == 16
    assert df.select(sq("v")).columns == ["sq(v)"]
    upper = F.udf(lambda s: s and s.upper())
    grouped = {(r[0], r[1]) for r in df.groupBy(upper("k").alias("K")).agg(F.count("*")).collect()}
    assert grouped == {("A", 2), ("B", 1), (None, 1)}
    spark.udf.register("sq_sql", sq)
    spark.udf.register("len_or_zero", lambda s: len(s) if s else 0, "int")
    df.createOrReplaceTempView("udf_kv")
    got = sorted((tuple(r) for r in spark.sql("SELECT k, sq_sql(v) AS q, len_or_zero(k) AS n FROM udf_kv "
                                               "WHERE v IS NOT NULL").collect()), key=str)
    assert got == sorted([("a", 1, 1), ("b", 4, 1), (None, 16, 0)], key=str)


def test_a_pandas_udf_runs_on_series(spark):
    @F.pandas_udf("double")
    def scaled(v, w):
        return v * 10 + w

    df = spark.createDataFrame([(1.0, 2.0), (None, 1.0), (-3.5, 0.0)], "v double, w double")
    assert [r[0] for r in df.select(scaled("v", "w")).collect()] == [12.0, None, -35.0]


def test_udf_errors_say_what_is_wrong(spark):
    with pytest.raises(TypeError, match="NOT_CALLABLE"):
        F.udf(3, "int")  # not a function: a return type given first is the decorator form
    boom = F.udf(lambda x: 1 // 0, "int")
    with pytest.raises(Exception, match="ZeroDivisionError|division"):
        spark.range(2).select(boom("id")).collect()
    a, b = spark.range(3), spark.range(3).withColumnRenamed("id", "j")
    with pytest.raises(AnalysisException, match="UDF in a join condition"):
        a.join(b, F.udf(lambda x: x, "long")(a.id) == b.j)


def test_a_result_of_another_type_is_converted_as_pyspark_does(spark):
    as_text = F.udf(lambda x: x * 2)  # no return type: string, so 4 is "4"
    as_int = F.udf(lambda x: "nope" if x == 1 else x, "long")  # a value the type cannot hold is null
    assert [tuple(r) for r in spark.range(3).select(as_text("id"), as_int("id")).collect()] == \
        [("0", 0), ("2", None), ("4", 2)]


def _parse_twice(s):
    return int(s) * 2  # the line a failing UDF's error must show


def test_a_udfs_error_shows_the_users_line_as_pysparks_python_exception(spark):
    """A UDF that raises fails the query with PySpark's ``PythonException``: its message
    is the traceback of the user's function (file, line, source and the exception), not
    DuckDB's one-line summary; ``pandas_udf`` alike."""
    import pandas as pd

    from strataflow.pyspark.errors import PythonException

    df = spark.createDataFrame([("1",), ("x",)], ["s"])
    twice = F.udf(_parse_twice, IntegerType())
    with pytest.raises(PythonException) as err:
        df.select(twice("s")).collect()
    text = str(err.value)
    assert "An exception was thrown from the Python worker" in text
    assert f'File "{__file__}"' in text and "in _parse_twice" in text
    assert "return int(s) * 2  # the line a failing UDF's error must show" in text
    assert "ValueError: invalid literal for int() with base 10: 'x'" in text
    assert "engine.py" not in text  # strataflow's own frames are left out
    assert err.value.getCondition() == "PYTHON_EXCEPTION"

    @F.pandas_udf("long")
    def ints(s: pd.Series) -> pd.Series:
        return s.astype("int64")

    with pytest.raises(PythonException, match=r"in ints\n") as err:
        df.select(ints("s")).collect()
    assert "ValueError" in str(err.value)
