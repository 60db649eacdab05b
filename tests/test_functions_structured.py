"""The structured family's functions that the value-table suite cannot check: sort orders
(they order rows), ``uuid`` (random: its shape), ``assert_true``'s failure, ``call_function``,
``from_json`` given a DataType, and the functions that stay refused by name."""

from __future__ import annotations

import re

import pytest

from strataflow.pyspark import SparkContext
from strataflow.pyspark.sql import SparkSession
from strataflow.pyspark.sql import functions as F
from strataflow.pyspark.sql import types as T


@pytest.fixture(scope="module")
def spark():
    sc = SparkContext("local[2]", "structured")
    try:
        yield SparkSession(sc)
    finally:
        sc.stop()


def test_sort_orders_put_nulls_where_named(spark):
    df = spark.createDataFrame([(2,), (None,), (1,), (3,)], "a int").repartition(2)
    order = {f: [r.a for r in df.orderBy(getattr(F, f)("a")).collect()]
             for f in ("asc_nulls_first", "asc_nulls_last", "desc_nulls_first", "desc_nulls_last")}
    assert order == {"asc_nulls_first": [None, 1, 2, 3], "asc_nulls_last": [1, 2, 3, None],
                     "desc_nulls_first": [None, 3, 2, 1], "desc_nulls_last": [3, 2, 1, None]}
    assert [r.a for r in df.orderBy(F.desc_nulls_first(F.col("a"))).collect()] == [None, 3, 2, 1]


def test_uuid_is_a_version_4_string_new_each_row(spark):
    df = spark.range(200).select(F.uuid().alias("u"))
    assert df.schema["u"].dataType == T.StringType()
    got = [r.u for r in df.collect()]
    assert len(set(got)) == 200
    assert all(re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", u) for u in got)
    with pytest.raises(Exception, match="STRATAFLOW_UNSUPPORTED"):
        spark.range(1).select(F.uuid(7)).collect()


def test_assert_true_is_null_or_fails_with_spark_message(spark):
    df = spark.createDataFrame([(1, 2), (3, 2)], "a int, b int")
    assert df.limit(1).select(F.assert_true(F.col("a") < F.col("b"))).first()[0] is None
    with pytest.raises(Exception, match=re.escape("[USER_RAISED_EXCEPTION] '(a < b)' is not true!")):
        df.select(F.assert_true(F.col("a") < F.col("b"))).collect()
    with pytest.raises(Exception, match=re.escape("[USER_RAISED_EXCEPTION] too big")):
        df.select(F.assert_true(F.col("a") < F.col("b"), "too big")).collect()


def test_call_function_calls_spark_sql_function_by_name(spark):
    df = spark.createDataFrame([(-2, "ab")], "a int, s string")
    row = df.select(F.call_function("abs", "a"), F.call_function("upper", F.col("s"))).first()
    assert tuple(row) == (2, "AB")


def test_from_json_takes_a_datatype_schema(spark):
    schema = T.StructType([T.StructField("a", T.IntegerType()), T.StructField("b", T.ArrayType(T.StringType()))])
    df = spark.createDataFrame([('{"a": 1, "b": ["x", 2]}',)], "j string")
    assert df.select(F.from_json("j", schema).alias("r")).first().r.asDict() == {"a": 1, "b": ["x", "2"]}
    got = df.select(F.from_json("j", T.MapType(T.StringType(), T.StringType()))).first()
    assert got.asDict() == {"entries": {"a": "1", "b": '["x",2]'}}


def test_to_json_writes_timestamps_in_the_session_zone(spark):
    import datetime as dt

    df = spark.createDataFrame([(dt.datetime(2024, 3, 10, 10, 0, 0, 123456),)], "t timestamp")
    try:
        spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
        assert df.select(F.to_json(F.struct("t"))).first()[0] == '{"t":"2024-03-10T03:00:00.123-07:00"}'
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert df.select(F.to_json(F.struct("t"))).first()[0] == '{"t":"2024-03-10T10:00:00.123Z"}'


def test_a_literal_where_a_column_is_wanted_is_not_expected_type():
    with pytest.raises(TypeError, match="NOT_EXPECTED_TYPE"):
        F.typeof(1)


@pytest.mark.parametrize("name", ["monotonically_increasing_id", "spark_partition_id", "input_file_name",
                                  "json_tuple", "from_csv", "schema_of_csv", "from_xml", "parse_json",
                                  "variant_get", "version"])
def test_functions_not_made_yet_are_refused_by_name(name):
    with pytest.raises(AttributeError, match=name):
        getattr(F, name)


def test_assert_true_is_named_with_its_message(spark):
    df = spark.createDataFrame([(0, 1)], "a int, b int")
    assert df.select(F.assert_true(df.a < df.b)).columns == ["assert_true((a < b), '(a < b)' is not true!)"]
    assert df.select(F.assert_true(df.a < df.b, "m")).columns == ["assert_true((a < b), m)"]
