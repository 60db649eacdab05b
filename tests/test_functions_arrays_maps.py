"""The ``arrays_maps`` functions where the conformance cases cannot reach: lambdas' variables
(nested, named like a column), a Python function's wrong shape, and the refusals of the
generators of several columns and of ``shuffle``. The expected values are PySpark 4.3's.
"""

from __future__ import annotations

import pytest

from strataflow.pyspark import SparkContext
from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql import SparkSession
from strataflow.pyspark.sql import functions as F


@pytest.fixture(scope="module")
def spark():
    sc = SparkContext("local[1]", "arrays_maps")
    try:
        yield SparkSession(sc)
    finally:
        sc.stop()


@pytest.fixture(scope="module")
def df(spark):
    frame = spark.createDataFrame([([1, 2, None], [10, 20], 5)], "a array<int>, b array<int>, i int")
    frame.createOrReplaceTempView("hof")
    return frame


def test_a_lambda_variable_named_like_a_column_is_the_element(spark, df):
    assert df.select(F.transform("a", lambda i: i + 1).alias("t")).first().t == [2, 3, None]
    assert spark.sql("SELECT transform(a, i -> i + 1) AS t FROM hof").first().t == [2, 3, None]


def test_nested_lambdas_see_the_outer_variable(spark, df):
    got = df.select(F.transform("a", lambda x: F.transform("b", lambda y: y + x)).alias("t")).first().t
    assert got == [[11, 21], [12, 22], [None, None]]
    sql = spark.sql("SELECT transform(a, x -> transform(b, y -> y + x)) AS t FROM hof").first().t
    assert sql == got


def test_a_lambda_may_read_a_column(spark, df):
    assert df.select(F.filter("a", lambda x: x < F.col("i") - 3).alias("f")).first().f == [1]


def test_the_column_name_shows_each_variable_as_spark_does(df):
    assert df.select(F.exists("a", lambda x: x > 1)).columns == [
        "exists(a, lambdafunction((namedlambdavariable() > 1), namedlambdavariable()))"]


def test_a_python_function_of_the_wrong_shape_is_refused_by_name():
    with pytest.raises(ValueError, match="WRONG_NUM_ARGS_FOR_HIGHER_ORDER_FUNCTION"):
        F.transform("a", lambda: F.lit(1))
    with pytest.raises(ValueError, match="HIGHER_ORDER_FUNCTION_SHOULD_RETURN_COLUMN"):
        F.transform("a", lambda x: 1)


def test_a_comparator_that_returns_null_fails(spark, df):
    with pytest.raises(Exception, match="COMPARATOR_RETURNS_NULL"):
        df.select(F.array_sort("a", lambda l, r: r - l)).collect()


@pytest.mark.parametrize("build", [
    lambda: F.posexplode_outer("a"), lambda: F.inline(F.array(F.struct(F.lit(1).alias("n")))),
    lambda: F.inline_outer(F.array(F.struct(F.lit(1).alias("n")))), lambda: F.stack(F.lit(1), F.lit(2)),
    lambda: F.explode(F.create_map(F.lit("k"), F.col("i"))), lambda: F.shuffle("a"), lambda: F.shuffle("a", 7),
], ids=["posexplode_outer", "inline", "inline_outer", "stack", "explode_map", "shuffle", "shuffle_seed"])
def test_generators_of_several_columns_and_shuffle_are_refused_by_name(df, build):
    with pytest.raises(AnalysisException, match="STRATAFLOW_UNSUPPORTED"):
        df.select(build())


def test_explode_of_an_array_still_runs(df):
    assert [r[0] for r in df.select(F.explode("a")).collect()] == [1, 2, None]
