"""Column methods against plain Python models of Spark's answers, and the names Spark gives
the columns they make (programs read results by those names).

The data hold what users bring: None, NaN, negative numbers, unicode, nested structs,
maps, arrays; each result is compared with the same computation done in Python.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import pickle

import pytest

from strataflow.pyspark import SparkConf, SparkContext
from strataflow.pyspark.sql import Row, SparkSession
from strataflow.pyspark.sql import functions as F
from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.column_names import expand_struct_ops, spark_name

INTS = [(170, 75), (-1, 5), (0, -8), (None, 3), (7, None), (2**40, -(2**33))]
FLOATS = [1.5, float("nan"), None, -0.0, -2.25, float("inf")]
TEXTS = ["Zoë 日本", "  pad  ", None, "", "Čeněk", "abc"]


@pytest.fixture(scope="module")
def spark():
    sc = SparkContext("local[2]", "column methods", conf=SparkConf().set("spark.sql.shuffle.partitions", "2"))
    try:
        yield SparkSession(sc)
    finally:
        sc.stop()


def _col(rows, i=0):
    return [r[i] for r in rows]


def _nan_eq(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


# -- bitwise -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method,op,sym", [("bitwiseAND", lambda a, b: a & b, "&"),
                                           ("bitwiseOR", lambda a, b: a | b, "|"),
                                           ("bitwiseXOR", lambda a, b: a ^ b, "^")])
def test_bitwise_ops_match_python_and_spark_names(spark, method, op, sym):
    df = spark.createDataFrame(INTS, "a long, b long").repartition(3)
    out = df.select("a", "b", getattr(df.a, method)(df.b), getattr(F.col("a"), method)(-3).alias("k")).collect()
    assert out[0].__fields__[2] == f"(a {sym} b)"
    got = sorted((((r[0], r[1]), r[2], r[3]) for r in out), key=repr)
    want = sorted((((a, b), None if a is None or b is None else op(a, b), None if a is None else op(a, -3))
                   for a, b in INTS), key=repr)
    assert got == want


# -- isNaN, try_cast, transform ------------------------------------------------------------------------------
def test_isnan_is_false_for_null_and_numbers(spark):
    df = spark.createDataFrame([(v,) for v in FLOATS], "h double")
    got = [tuple(r) for r in df.select("h", df.h.isNaN(), F.isnan("h").alias("f")).collect()]
    assert df.select(df.h.isNaN()).columns == ["isnan(h)"]
    for h, a, b in got:
        want = isinstance(h, float) and math.isnan(h)
        assert a is want and b is want, (h, a, b)
    assert df.filter(df.h.isNaN()).count() == sum(1 for v in FLOATS if isinstance(v, float) and math.isnan(v))


def test_try_cast_is_null_where_the_value_does_not_convert(spark):
    vals = ["123", "-7", "Bob", None, " 5 ", "1.5", "日本"]
    df = spark.createDataFrame([(v,) for v in vals], "s string")

    def model_long(v):
        try:
            return int(v.strip())
        except (ValueError, AttributeError):
            return None

    def model_double(v):
        try:
            return float(v.strip())
        except (ValueError, AttributeError):
            return None

    longs = df.select(df.s.try_cast("long"))
    assert longs.columns == ["s"]  # Spark 4 names try_cast(s) as s
    got = _col(longs.collect())
    assert [g for g, v in zip(got, vals) if v != "1.5"] == [model_long(v) for v in vals if v != "1.5"]
    assert _col(df.select(df.s.try_cast("double")).collect()) == [model_double(v) for v in vals]
    assert df.select(df.s.cast("long")).columns == ["s"]  # a column cast keeps its name, as in PySpark
    assert df.select((df.s + 1).cast("long")).columns == ["CAST((s + 1) AS BIGINT)"]


def test_transform_applies_functions_in_order(spark):
    df = spark.createDataFrame([(t,) for t in TEXTS], "t string")
    got = _col(df.select(df.t.transform(F.trim).transform(F.upper).alias("r")).collect())
    assert got == [None if t is None else t.strip().upper() for t in TEXTS]
    nums = spark.createDataFrame([(v,) for v in (10, -20, None)], "v long")
    out = nums.select(nums.v.transform(lambda c: c + 5).transform(lambda c: c * 2).alias("r")).collect()
    assert _col(out) == [None if v is None else (v + 5) * 2 for v in (10, -20, None)]
    with pytest.raises(TypeError):
        nums.v.transform(lambda c: 1)


# -- __getitem__, getItem, getField and their names ----------------------------------------------------------
def test_slice_is_substr_start_length(spark):
    df = spark.createDataFrame([(t,) for t in TEXTS], "l string")
    out = df.select(df.l[1:3], df.l[2:2].alias("b"))
    assert out.columns == ["substr(l, 1, 3)", "b"]
    assert [tuple(r) for r in out.collect()] == [(None, None) if t is None else (t[0:3], t[1:3]) for t in TEXTS]
    with pytest.raises(ValueError):
        df.l[1:3:2]


def test_items_fields_and_their_names(spark):
    rows = [([1, -2], {"key": "välue"}, Row(a=1, b="x")), ([], {"other": "y"}, Row(a=None, b=None)),
            (None, None, None)]
    df = spark.createDataFrame(rows, "l array<long>, d map<string,string>, r struct<a:long,b:string>")
    out = df.select(df.l.getItem(0), df.l[1], df.d.getItem("key"), df.d["key"], df.r.getField("b"), df.r.a)
    assert out.columns == ["l[0]", "l[1]", "d[key]", "d[key]", "r.b", "r.a"]
    want = []
    for lst, d, r in rows:
        item = (lambda i: lst[i] if lst is not None and i < len(lst) else None)
        dv = None if d is None else d.get("key")
        want.append((item(0), item(1), dv, dv, None if r is None else r.b, None if r is None else r.a))
    assert [tuple(r) for r in out.collect()] == want
    # no DataFrame qualifier leaks into a name
    assert all("__df" not in c for c in out.columns)


def test_map_value_by_attribute_is_named_with_brackets_given_the_fields(spark):
    df = spark.createDataFrame([("x", {"key": "value"}, Row(a=1))], ["l", "d", "r"])
    fields = df._current.fields
    assert spark_name(df.d.key._expr) == "d.key"  # without the types: as written
    assert spark_name(df.d.key._expr, fields=fields) == "d[key]"
    assert spark_name(df.r.getItem("a")._expr, fields=fields) == "r.a"
    assert df.select(df.d.key.alias("v")).first().v == "value"


def test_getattr_raises_attribute_error_for_private_names():
    c = F.col("a")
    with pytest.raises(AttributeError):
        c._ipython_display_
    with pytest.raises(AttributeError):
        c.__length_hint__
    assert repr(copy.copy(c)) == repr(c) == "Column<'a'>"
    assert repr(pickle.loads(pickle.dumps(F.col("a") + 1))) == "Column<'(a + 1)'>"
    with pytest.raises(TypeError):
        iter(c)
    with pytest.raises(ValueError):
        1 in c  # noqa: B015


# -- between, eqNullSafe, when: behaviour and names ----------------------------------------------------------
def test_between_matches_python_and_spark_names(spark):
    vals = [2, 4, 5, -1, None, 3]
    df = spark.createDataFrame([(v,) for v in vals], "age long")
    out = df.select(df.age.between(2, 4), df.age.between(-2, F.lit(0)).alias("neg"))
    assert out.columns == ["((age >= 2) AND (age <= 4))", "neg"]
    assert [tuple(r) for r in out.collect()] == [(None, None) if v is None else (2 <= v <= 4, -2 <= v <= 0)
                                                 for v in vals]
    days = [dt.date(2023, 1, 1), dt.date(2023, 2, 1), None]
    dd = spark.createDataFrame([(d,) for d in days], "date date")
    got = dd.select(dd.date.between(dt.date(2023, 1, 1), dt.date(2023, 1, 15)))
    assert got.columns == ["((date >= DATE '2023-01-01') AND (date <= DATE '2023-01-15'))"]
    assert _col(got.collect()) == [None if d is None else dt.date(2023, 1, 1) <= d <= dt.date(2023, 1, 15)
                                   for d in days]
    strs = dd.select(dd.date.between("2023-01-01", "2023-01-15"))
    assert strs.columns == ["((date >= 2023-01-01) AND (date <= 2023-01-15))"]
    assert _col(strs.collect()) == _col(got.collect())


def test_eq_null_safe_with_nan_and_null(spark):
    df = spark.createDataFrame([(v,) for v in FLOATS], "value double")
    out = df.select(df.value.eqNullSafe(None), df.value.eqNullSafe(float("nan")), df.value.eqNullSafe(-2.25))
    assert out.columns == ["(value <=> NULL)", "(value <=> NaN)", "(value <=> -2.25)"]
    want = [(v is None, v is not None and math.isnan(v), v == -2.25) for v in FLOATS]
    assert [tuple(r) for r in out.collect()] == want


def test_literal_names():
    assert repr(F.lit(-1)) == "Column<'-1'>"
    assert repr(-F.col("a")) == "Column<'(- a)'>"
    assert repr(F.lit(float("inf"))) == "Column<'Infinity'>"
    assert repr(F.lit(dt.datetime(2023, 1, 1, 10, 0))) == "Column<'TIMESTAMP '2023-01-01 10:00:00''>"
    w = F.when(F.col("age") > 4, 1).when(F.col("age") < 3, -1).otherwise(0)
    assert spark_name(w._expr) == "CASE WHEN (age > 4) THEN 1 WHEN (age < 3) THEN -1 ELSE 0 END"


def test_when_with_negative_values_and_raise_error_not_reached(spark):
    ages = [2, 5, None, -3]
    df = spark.createDataFrame([(a,) for a in ages], "age long")
    w = F.when(df.age > 4, 1).when(df.age < 3, -1).otherwise(0)
    got = df.select(w, F.when(F.lit(True), 1).otherwise(F.raise_error("unreachable")).alias("ok")).collect()
    assert [tuple(r) for r in got] == [(1 if a is not None and a > 4 else -1 if a is not None and a < 3 else 0, 1)
                                       for a in ages]
    with pytest.raises(Exception, match="boom"):
        df.select(F.raise_error("boom")).collect()


# -- isin ----------------------------------------------------------------------------------------------------
def test_isin_values_and_dataframe(spark):
    rows = [(2, "Alice"), (5, "Bob"), (8, "Mike"), (None, "Zoë"), (-1, None)]
    df = spark.createDataFrame(rows, "age long, name string")
    sub = spark.range(6)
    got = sorted((tuple(r) for r in df.where(df.age.isin(sub)).collect()), key=repr)
    assert got == sorted((r for r in rows if r[0] is not None and 0 <= r[0] < 6), key=repr)
    pairs = spark.range(6).select("id", F.lit("Bob"))
    got2 = [tuple(r) for r in df.where(F.struct(df.age, df.name).isin(pairs)).collect()]
    assert got2 == [(5, "Bob")]
    got3 = sorted((tuple(r) for r in df.where(df.name.isin("Zoë", "Mike", None)).collect()), key=repr)
    assert got3 == sorted((r for r in rows if r[1] in ("Zoë", "Mike")), key=repr)
    empty = spark.range(0)
    assert df.where(df.age.isin(empty)).count() == 0
    assert df.where(~df.age.isin(empty)).count() == len(rows)  # NOT IN of no rows: true, for null too


# -- withField, dropFields -------------------------------------------------------------------------------------
STRUCTS = [Row(a=Row(b=1, c=2, d=3, e=Row(f=4, g=5, h=6))), Row(a=Row(b=-1, c=None, d=0, e=None)), Row(a=None)]
STRUCT_SCHEMA = "a struct<b:long,c:long,d:long,e:struct<f:long,g:long,h:long>>"


def _as_dict(r):
    return None if r is None else {k: _as_dict(v) if isinstance(v, Row) else v for k, v in r.asDict().items()}


def test_with_field_adds_replaces_and_keeps_null(spark):
    df = spark.createDataFrame(STRUCTS, STRUCT_SCHEMA)
    out = df.withColumn("a", df.a.withField("b", F.lit(30)).withField("z", F.lit("日本")))
    got = [_as_dict(r.a) for r in out.collect()]
    want = [None if r.a is None else {**_as_dict(r.a), "b": 30, "z": "日本"} for r in STRUCTS]
    assert got == want
    nested = df.select(F.col("a").withField("e.g", F.col("a.b") * -1).alias("a")).collect()
    want_n = []
    for r in STRUCTS:
        if r.a is None:
            want_n.append(None)
            continue
        d = _as_dict(r.a)
        d["e"] = None if d["e"] is None else {**d["e"], "g": -d["b"]}
        want_n.append(d)
    # a null nested struct stays null, as Spark's
    assert [_as_dict(r.a) for r in nested] == want_n
    assert df.select(df.a.withField("b", F.lit(3)).alias("x")).select("x.b").collect()[0].b == 3
    with pytest.raises(TypeError):
        df.a.withField("b", 3)


def test_drop_fields_once_the_type_is_known(spark):
    df = spark.createDataFrame(STRUCTS, STRUCT_SCHEMA)
    fields = df._current.fields

    def run(c):
        return [_as_dict(r.a) for r in df.select(Column(expand_struct_ops(c._expr, fields)).alias("a")).collect()]

    def model(drop, nested=()):
        out = []
        for r in STRUCTS:
            d = _as_dict(r.a)
            if d is not None:
                d = {k: v for k, v in d.items() if k not in drop}
                if "e" in d and d["e"] is not None:
                    d["e"] = {k: v for k, v in d["e"].items() if k not in nested}
            out.append(d)
        return out

    assert run(df.a.dropFields("b")) == model({"b"})
    assert run(df.a.dropFields("b", "C", "nope")) == model({"b", "c"})  # any case; a missing name: no-op
    assert run(F.col("a").dropFields("e.g", "e.h")) == model(set(), {"g", "h"})
    with pytest.raises(ValueError):
        expand_struct_ops(df.a.dropFields("b", "c", "d", "e")._expr, fields)
    name = spark_name(expand_struct_ops(df.a.dropFields("b")._expr, fields))
    assert name == "update_fields(a, dropfield(b))"


# -- alias metadata ----------------------------------------------------------------------------------------
def test_alias_keeps_metadata_on_the_column():
    c = F.col("age").alias("age3", metadata={"max": 99})
    assert c._metadata == {"max": 99}
    assert F.col("age").alias("x")._metadata is None
    with pytest.raises(TypeError):
        F.col("age").alias("x", meta={})
