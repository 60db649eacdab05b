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


# column names of Spark SQL text's calls, as real PySpark 4.3 named them over a view t(x int, d double)
_NAMES = [
    ("log(x)", "LOG(E(), x)"), ("log(log(x))", "LOG(E(), LOG(E(), x))"), ("log(2.5D)", "LOG(E(), 2.5)"),
    ("positive(-x)", "(+ (- x))"), ("positive(x) + 1", "((+ x) + 1)"), ("isnotnull(x + 1)", "((x + 1) IS NOT NULL)"),
    ("isNotNull(x)", "(x IS NOT NULL)"), ("E()", "E()"), ("e()", "E()"), ("Expm1(x)", "EXPM1(x)"),
    ("LOG1P(x)", "LOG1P(x)"), ("Hypot(x, d)", "HYPOT(x, d)"), ("COT(d)", "COT(d)"), ("pi()", "PI()"),
    ("shiftRightUnsigned(x, 1)", "shiftrightunsigned(x, 1)"), ("SHIFTLEFT(x, 1)", "shiftleft(x, 1)"),
    ("BROUND(d, 1)", "bround(d, 1)"), ("SIGN(x)", "sign(x)"), ("Abs(x)", "abs(x)"),
    ("2.5D", "2.5"), ("2L", "2"), ("2S", "2"), ("2Y", "2"), ("1.5BD", "1.5"), ("1.5F", "1.5"), ("-2.5D", "-2.5"),
    ("1E10", "1.0E10"),
    ("2.5::double", "CAST(2.5 AS DOUBLE)"), ("CAST(2.5 AS DOUBLE)", "CAST(2.5 AS DOUBLE)"),
    ("TRY_CAST(2.5 AS DOUBLE)", "TRY_CAST(2.5 AS DOUBLE)"),
]


@pytest.mark.parametrize("call,name", _NAMES)
def test_sql_call_names(spark, call, name):
    spark.createDataFrame([(1, 2.0)], "x int, d double").createOrReplaceTempView("t")
    assert spark.sql(f"SELECT {call} FROM t").columns == [name]


def test_sql_call_values(spark):
    spark.createDataFrame([(1, 2.0)], "x int, d double").createOrReplaceTempView("t")
    row = spark.sql("SELECT log(x), positive(x), isnotnull(x), e(), -9223372036854775808L, 1.5BD FROM t").first()
    assert tuple(row) == (0.0, 1, True, 2.718281828459045, -9223372036854775808, Decimal("1.5"))


# PySpark 4.3's exception classes for the error classes the rules raise as a query runs
_ERRORS = [
    ("SELECT getbit(x, p) FROM e", "IllegalArgumentException", "INVALID_PARAMETER_VALUE.BIT_POSITION_RANGE",
     "[INVALID_PARAMETER_VALUE.BIT_POSITION_RANGE] The value of parameter(s) `pos` in `getbit` is invalid: expects "
     "an integer value in [0, 32), but got 40."),
    ("SELECT assert_true(x > 5, 'no') FROM e", "SparkRuntimeException", "USER_RAISED_EXCEPTION",
     "[USER_RAISED_EXCEPTION] no"),
    ("SELECT map(n, 1) FROM e", "SparkRuntimeException", "NULL_MAP_KEY", "[NULL_MAP_KEY] Cannot use null as map key."),
    ("SELECT map(k, 1, k, 2) FROM e", "SparkRuntimeException", "DUPLICATED_MAP_KEY", "[DUPLICATED_MAP_KEY] Duplicate"),
]


@pytest.mark.parametrize("query,kind,condition,message", _ERRORS)
def test_runtime_error_classes(spark, query, kind, condition, message):
    from strataflow.pyspark.errors import SparkRuntimeException
    from strataflow.pyspark.errors import IllegalArgumentException

    spark.createDataFrame([(1, 40, None, "k")], "x int, p int, n string, k string").createOrReplaceTempView("e")
    with pytest.raises(SparkRuntimeException) as err:
        spark.sql(query).collect()
    assert isinstance(err.value, IllegalArgumentException) == (kind == "IllegalArgumentException")
    assert err.value.getCondition() == condition.split(".")[0] or err.value.getCondition() == condition
    assert message in str(err.value)


_MAX = 9223372036854775807


def test_sum_of_bigints_wraps_without_ansi(spark):
    """Real PySpark 4.3: sum(MAX, 1) is -9223372036854775808 without ANSI (the long wraps),
    sum(MAX, 1, -5) 9223372036854775803; ARITHMETIC_OVERFLOW under ANSI."""
    df = spark.createDataFrame([(1, _MAX), (2, 1), (3, -5)], "i int, x long")
    df.createOrReplaceTempView("s")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        assert spark.sql("SELECT sum(x) FROM s WHERE i < 3").first()[0] == -9223372036854775808
        assert spark.sql("SELECT sum(x) FROM s").first()[0] == 9223372036854775803
        assert df.repartition(3).agg({"x": "sum"}).first()[0] == 9223372036854775803
        assert [r.r for r in spark.sql("SELECT sum(x) OVER (ORDER BY i) AS r FROM s").collect()] == \
            [_MAX, -9223372036854775808, 9223372036854775803]
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")


def test_sum_of_bigints_overflows_under_ansi(spark):
    spark.createDataFrame([(1, _MAX), (2, 1), (3, -5)], "i int, x long").createOrReplaceTempView("s")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        with pytest.raises(ArithmeticException, match=r"\[ARITHMETIC_OVERFLOW\] overflow. Use 'try_add'"):
            spark.sql("SELECT sum(x) FROM s WHERE i < 3").collect()
        with pytest.raises(Exception, match="STRATAFLOW_UNSUPPORTED"):  # Spark fails here by the order it adds in
            spark.sql("SELECT sum(x) FROM s").collect()
        assert spark.sql("SELECT sum(x) FROM s WHERE i > 1").first()[0] == -4
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")
