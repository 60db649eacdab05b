"""Spark SQL text as PySpark's own examples write it: inline tables (``FROM VALUES ...``),
the names Spark gives calls sqlglot has no node for, and sums of bigints past int64.
Each expected value is PySpark 4.3's, recorded by running the same statement under real
PySpark (local[1], with Java) once and copying its schema, rows or error here."""

from __future__ import annotations

from decimal import Decimal

import pytest

from strataflow.pyspark import SparkContext
from strataflow.pyspark.errors import AnalysisException, ArithmeticException
from strataflow.pyspark.sql import SparkSession


@pytest.fixture(scope="module")
def spark():
    sc = SparkContext("local[2]", "sql-front-end")
    try:
        yield SparkSession(sc)
    finally:
        sc.stop()


@pytest.fixture(params=["false", "true"])
def ansi(spark, request):
    spark.conf.set("spark.sql.ansi.enabled", request.param)
    try:
        yield request.param == "true"
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")


# (query, schema, rows) as real PySpark 4.3 gave them, the same with ANSI on and off
_INLINE = [
    ("SELECT * FROM VALUES (1, 'a'), (2, NULL) AS tab(x, y)", "struct<x:int,y:string>", [(1, "a"), (2, None)]),
    ("SELECT * FROM VALUES (-2), (2), (NULL) AS tab(value)", "struct<value:int>", [(-2,), (2,), (None,)]),
    ("SELECT * FROM VALUES (1, 2)", "struct<col1:int,col2:int>", [(1, 2)]),
    ("VALUES (1, 2)", "struct<col1:int,col2:int>", [(1, 2)]),
    ("SELECT * FROM VALUES (1.5), (2) AS t(a)", "struct<a:decimal(11,1)>", [(Decimal("1.5"),), (Decimal("2.0"),)]),
    ("SELECT * FROM VALUES (1.5), (22.25) AS t(a)", "struct<a:decimal(4,2)>", [(Decimal("1.50"),), (Decimal("22.25"),)]),
    ("SELECT * FROM VALUES (1), (2L) AS t(a)", "struct<a:bigint>", [(1,), (2,)]),
    ("SELECT * FROM VALUES (NULL) AS t(a)", "struct<a:void>", [(None,)]),
    ("SELECT * FROM VALUES (1), (1.5D) AS t(a)", "struct<a:double>", [(1.0,), (1.5,)]),
    ("SELECT * FROM VALUES (array(1,2)), (array(3)) AS t(a)", "struct<a:array<int>>", [([1, 2],), ([3],)]),
    ("SELECT a + 1, t.b FROM VALUES (1, 2) t(a, b)", "struct<(a + 1):int,b:int>", [(2, 2)]),
    ("SELECT * FROM VALUES (1) AS t(a) JOIN VALUES (1) AS u(a) USING (a)", "struct<a:int>", [(1,)]),
]


@pytest.mark.parametrize("query,schema,rows", _INLINE)
def test_inline_table(spark, ansi, query, schema, rows):
    df = spark.sql(query)
    assert df.schema.simpleString() == schema
    assert [tuple(r) for r in df.collect()] == rows


# PySpark 4.3 raises ParseException (an AnalysisException) for the first two, AnalysisException for the last
_INLINE_ERRORS = [
    ("SELECT * FROM VALUES (1, 'a'), ('b', 2) AS t(a, b)",
     "[INVALID_INLINE_TABLE.INCOMPATIBLE_TYPES_IN_INLINE_TABLE] Invalid inline table. Found incompatible types in "
     "the column `a` for inline table."),
    ("SELECT * FROM VALUES (1, 2), (3) AS t(a, b)",
     "[INVALID_INLINE_TABLE.NUM_COLUMNS_MISMATCH] Invalid inline table. Inline table expected 2 columns but found 1 "
     "columns in row 1."),
    ("SELECT * FROM VALUES (1, 2) AS t(a)",
     "[INVALID_INLINE_TABLE.NUM_COLUMNS_MISMATCH] Invalid inline table. Inline table expected 1 columns but found 2 "
     "columns in row 0."),
    ("SELECT * FROM VALUES (rand()) AS t(a)",
     "[INVALID_INLINE_TABLE.CANNOT_EVALUATE_EXPRESSION_IN_INLINE_TABLE] Invalid inline table. Cannot evaluate the "
     "expression \"rand()\" in inline table definition."),
]


@pytest.mark.parametrize("query,message", _INLINE_ERRORS)
def test_inline_table_errors(spark, query, message):
    with pytest.raises(AnalysisException) as err:
        spark.sql(query).collect()
    assert str(err.value).startswith(message)
