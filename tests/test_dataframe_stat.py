"""The DataFrame's statistics and sampling against plain-Python and numpy models: nulls,
NaN, empty partitions (more partitions than rows), one-row frames, a skewed column, and
clear errors for bad input."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from decimal import Decimal

import numpy as np
import pytest

from strataflow.pyspark.sql import AnalysisException, Row
from strataflow.pyspark.sql import functions as F
from test_dataframe import spark  # noqa: F401  (the module's SparkSession fixture, shared)

ROWS = [(1, 2.0, "a"), (2, None, "b"), (None, 3.5, None), (4, -1.0, "a"), (5, 10.0, "c"), (6, 7.25, "a"),
        (7, 0.5, "b"), (8, 2.0, "a")]


@pytest.fixture(scope="module")
def df(spark):
    return spark.createDataFrame(ROWS, "i BIGINT, x DOUBLE, s STRING").repartition(11)  # empty partitions too


def _pairs(rows, a, b):
    return [(r[a], r[b]) for r in rows if r[a] is not None and r[b] is not None]


def _rank_quantile(values, p):
    v = sorted(values)
    return v[max(1, math.ceil(p * len(v))) - 1]


# -- corr and cov -----------------------------------------------------------------------------------------------
def test_corr_and_cov_leave_out_rows_with_a_null(df):
    xs, ys = zip(*_pairs(ROWS, 0, 1))
    assert df.corr("i", "x") == pytest.approx(np.corrcoef(xs, ys)[0, 1], rel=1e-12)
    assert df.cov("i", "x") == pytest.approx(np.cov(xs, ys, ddof=1)[0, 1], rel=1e-12)
    assert df.stat.corr("x", "i") == pytest.approx(df.corr("i", "x"), rel=1e-12)
    assert df.stat.cov("i", "i") == pytest.approx(statistics.variance([r[0] for r in ROWS if r[0] is not None]))


def test_corr_on_skewed_and_large_data_merges_partitions(spark):
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(1e6, 1, 5000), rng.normal(0, 1e-3, 10)])  # skewed, large offset
    y = 3 * x + rng.normal(0, 1, len(x))
    frame = spark.createDataFrame([(float(a), float(b)) for a, b in zip(x, y)], ["x", "y"]).repartition(7)
    assert frame.corr("x", "y") == pytest.approx(np.corrcoef(x, y)[0, 1], rel=1e-9)
    assert frame.cov("x", "y") == pytest.approx(np.cov(x, y, ddof=1)[0, 1], rel=1e-9)


def test_corr_and_cov_of_too_few_rows_are_nan(spark):
    one = spark.createDataFrame([(1, 2)], ["a", "b"])
    assert math.isnan(one.corr("a", "b")) and math.isnan(one.cov("a", "b"))
    const = spark.createDataFrame([(1, 2), (1, 3)], ["a", "b"])
    assert math.isnan(const.corr("a", "b")) and const.cov("a", "b") == 0.0
    nan = spark.createDataFrame([(1.0, 2.0), (float("nan"), 3.0), (3.0, 1.0)], ["a", "b"])
    assert math.isnan(nan.corr("a", "b"))


def test_corr_and_cov_reject_bad_input(df):
    with pytest.raises(AnalysisException):
        df.corr("i", "nope")
    with pytest.raises(ValueError, match="data type string"):
        df.corr("i", "s")
    with pytest.raises(ValueError, match="data type string"):
        df.cov("s", "i")
    with pytest.raises(ValueError, match="pearson"):
        df.corr("i", "x", "spearman")
    with pytest.raises(TypeError):
        df.cov("i", 1)


# -- describe and summary ---------------------------------------------------------------------------------------
def test_describe_matches_a_python_model(df):
    got = {r.summary: r for r in df.describe().collect()}
    assert df.describe().columns == ["summary", "i", "x", "s"]
    ints = [r[0] for r in ROWS if r[0] is not None]
    xs = [r[1] for r in ROWS if r[1] is not None]
    assert got["count"].i == str(len(ints)) and got["count"].s == "7"
    assert float(got["mean"].i) == pytest.approx(sum(ints) / len(ints))
    assert float(got["stddev"].x) == pytest.approx(statistics.stdev(xs), rel=1e-12)
    assert (got["min"].i, got["max"].i, got["min"].x, got["max"].x) == ("1", "8", "-1.0", "10.0")
    assert (got["min"].s, got["max"].s, got["mean"].s, got["stddev"].s) == ("a", "c", None, None)
    assert [r.summary for r in df.describe("x").collect()] == ["count", "mean", "stddev", "min", "max"]
    assert df.describe(["i", "s"]).columns == ["summary", "i", "s"]


def test_summary_percentiles_keep_the_column_type(df):
    rows = df.summary("count", "25%", "50%", "75%", "count_distinct").collect()
    ints = [r[0] for r in ROWS if r[0] is not None]
    xs = [r[1] for r in ROWS if r[1] is not None]
    by = {r.summary: r for r in rows}
    for p, key in ((0.25, "25%"), (0.5, "50%"), (0.75, "75%")):
        assert by[key].i == str(_rank_quantile(ints, p))
        assert float(by[key].x) == _rank_quantile(xs, p)
        assert by[key].s is None  # strings that are not numbers
    assert by["count_distinct"].s == "3" and by["count_distinct"].x == str(len(set(xs)))
    assert [r.summary for r in df.summary().collect()] == ["count", "mean", "stddev", "min", "25%", "50%", "75%",
                                                           "max"]


def test_summary_of_empty_one_row_nan_decimal_and_numeric_string_frames(spark):
    empty = spark.createDataFrame([], "a INT, s STRING").summary().collect()
    assert [r.a for r in empty] == ["0"] + [None] * 7 and [r.s for r in empty] == ["0"] + [None] * 7
    one = {r.summary: r.a for r in spark.createDataFrame([(5,)], ["a"]).summary().collect()}
    assert (one["count"], one["mean"], one["stddev"], one["min"], one["50%"]) == ("1", "5.0", None, "5", "5")
    nan = {r.summary: r.a for r in spark.createDataFrame([(1.0,), (float("nan"),)], ["a"]).describe().collect()}
    assert (nan["mean"], nan["min"], nan["max"]) == ("NaN", "1.0", "NaN")
    dec = spark.createDataFrame([(Decimal("1.10"),), (Decimal("2.25"),)], "d DECIMAL(10,2)").describe().collect()
    assert {r.summary: r.d for r in dec}["mean"] == "1.675000"
    num = spark.createDataFrame([("1",), ("3",), ("x",)], ["s"]).summary("mean", "50%", "max").collect()
    assert [r.s for r in num] == ["2.0", "1.0", "x"]


def test_summary_and_describe_reject_bad_input(df):
    with pytest.raises(ValueError, match="not a recognised statistic"):
        df.summary("median")
    with pytest.raises(ValueError, match="percentile"):
        df.summary("x%")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        df.summary("150%")
    with pytest.raises(AnalysisException):
        df.describe("nope")


# -- approxQuantile ---------------------------------------------------------------------------------------------
def test_approx_quantile_exact_for_small_data(df):
    probs = [0.0, 0.1, 0.25, 0.5, 0.9, 1.0]
    ints = [r[0] for r in ROWS if r[0] is not None]
    xs = [r[1] for r in ROWS if r[1] is not None]
    assert df.approxQuantile("i", probs, 0.0) == [float(_rank_quantile(ints, p)) for p in probs]
    assert df.stat.approxQuantile(["x", "i"], tuple(probs), 0.01) == [
        [_rank_quantile(xs, p) for p in probs], [float(_rank_quantile(ints, p)) for p in probs]]


def test_approx_quantile_ignores_nan_and_null_and_gives_empty_for_no_values(spark):
    frame = spark.createDataFrame([(float("nan"), None), (1.0, None), (None, None), (3.0, None)], "a DOUBLE, b INT")
    assert frame.approxQuantile("a", [0.0, 0.5, 1.0], 0.0) == [1.0, 1.0, 3.0]
    assert frame.approxQuantile(["b", "a"], [0.5], 0.1) == [[], [1.0]]
    assert spark.createDataFrame([(7,)], ["a"]).approxQuantile("a", [0.0, 0.3, 1.0], 0.5) == [7.0, 7.0, 7.0]


@pytest.mark.parametrize("err", [0.001, 0.01, 0.1])
def test_approx_quantile_rank_within_the_relative_error(spark, err):
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.exponential(1.0, 30000), np.full(5000, 2.0)])  # skewed, a heavy value
    frame = spark.createDataFrame([(float(v),) for v in values], ["v"]).repartition(5)
    probs = [0.0, 0.05, 0.3, 0.5, 0.77, 0.99, 1.0]
    s, n = np.sort(values), len(values)
    for p, q in zip(probs, frame.approxQuantile("v", probs, err)):
        lo, hi = np.searchsorted(s, q, "left") + 1, np.searchsorted(s, q, "right")  # q's ranks (1-based)
        assert lo <= math.ceil((p + err) * n) and hi >= math.floor((p - err) * n), (p, q)


def test_approx_quantile_rejects_bad_input(df):
    for bad in ([1.5], [-0.1], ["0.5"], [True], 0.5):
        with pytest.raises(TypeError, match="probabilities"):
            df.approxQuantile("i", bad, 0.1)
    with pytest.raises(ValueError, match="relativeError"):
        df.approxQuantile("i", [0.5], -1)
    with pytest.raises(TypeError):
        df.approxQuantile(1, [0.5], 0.1)
    with pytest.raises(ValueError, match="Quantile calculation for column s"):
        df.approxQuantile("s", [0.5], 0.1)
    with pytest.raises(AnalysisException):
        df.approxQuantile(["i", "nope"], [0.5], 0.1)


# -- crosstab and freqItems -------------------------------------------------------------------------------------
def test_crosstab_matches_a_counter(df):
    table = df.crosstab("s", "i")
    model = Counter(("null" if r[2] is None else r[2], "null" if r[0] is None else str(r[0])) for r in ROWS)
    heads = sorted({b for _, b in model})
    assert table.columns == ["s_i"] + heads
    assert table.dtypes[0] == ("s_i", "string") and all(t == "bigint" for _, t in table.dtypes[1:])
    for row in table.collect():
        assert [row[h] for h in heads] == [model.get((row.s_i, h), 0) for h in heads]
    assert sorted(r.s_i for r in table.collect()) == sorted({a for a, _ in model})
    with pytest.raises(AnalysisException):
        df.crosstab("s", "nope")


def test_freq_items_finds_every_frequent_item(spark):
    values = [0] * 400 + [1] * 150 + [2] * 120 + list(range(100, 430))  # 1000 rows, 3 frequent
    frame = spark.createDataFrame([(v, str(v % 3)) for v in values], ["v", "m"]).repartition(6)
    row = frame.freqItems(["v", "m"], 0.1).first()
    assert {0, 1, 2} <= set(row.v_freqItems)
    assert sorted(row.m_freqItems) == ["0", "1", "2"]
    small = spark.createDataFrame([(1, None), (1, "x"), (3, "x")], "a INT, b STRING")
    got = small.stat.freqItems(("a", "b")).first()
    assert sorted(got.a_freqItems) == [1, 3] and set(got.b_freqItems) == {None, "x"}
    with pytest.raises(ValueError, match="Support"):
        small.freqItems(["a"], 1e-6)
    with pytest.raises(TypeError):
        small.freqItems("a")
    with pytest.raises(AnalysisException):
        small.freqItems(["nope"])


# -- sampling ---------------------------------------------------------------------------------------------------
def test_sample_is_deterministic_and_near_the_fraction(spark):
    frame = spark.range(0, 20000, 1, 4)
    a = [r.id for r in frame.sample(fraction=0.3, seed=11).collect()]
    assert a == [r.id for r in frame.sample(False, 0.3, 11).collect()]
    assert abs(len(a) - 6000) < 400 and len(set(a)) == len(a)
    assert a != [r.id for r in frame.sample(fraction=0.3, seed=12).collect()]
    assert frame.sample(0.0, 1).count() == 0 and frame.sample(1.0).count() == 20000
    rep = [r.id for r in frame.sample(True, 2.0, 5).collect()]
    assert abs(len(rep) - 40000) < 1500 and max(Counter(rep).values()) > 1
    assert spark.range(0).sample(0.5, 1).count() == 0


def test_sample_rejects_bad_arguments(spark):
    frame = spark.range(5)
    with pytest.raises(TypeError):
        frame.sample(fraction=1)  # an int fraction, as PySpark refuses it
    with pytest.raises(ValueError, match="interval"):
        frame.sample(False, 1.5)
    with pytest.raises(ValueError, match="nonnegative"):
        frame.sample(True, -0.5)


def test_sample_by_keeps_each_stratum_at_its_fraction(spark):
    frame = spark.range(0, 9000, 1, 5).select((F.col("id") % 3).alias("k"), "id")
    got = frame.sampleBy("k", {0: 1.0, 1: 0.5}, seed=2)
    counts = {r.k: r["count"] for r in got.groupBy("k").count().collect()}
    assert counts[0] == 3000 and abs(counts[1] - 1500) < 150 and 2 not in counts
    assert got.columns == ["k", "id"]
    assert sorted(r.id for r in got.collect()) == sorted(r.id for r in frame.sampleBy(F.col("k"), {0: 1.0, 1: 0.5},
                                                                                        seed=2).collect())
    with pytest.raises(ValueError, match="Fractions"):
        frame.sampleBy("k", {0: 1.5})
    with pytest.raises(TypeError):
        frame.sampleBy("k", [0.5])
    with pytest.raises(AnalysisException):
        frame.sampleBy("nope", {0: 0.5}).count()


def test_random_split_is_a_partition_of_the_rows(spark, df):
    frame = spark.range(0, 5000, 1, 3)
    parts = frame.randomSplit([1.0, 2.0, 1.0], seed=9)
    ids = [sorted(r.id for r in p.collect()) for p in parts]
    assert sorted(sum(ids, [])) == list(range(5000))
    assert [abs(len(x) - e) < 200 for x, e in zip(ids, (1250, 2500, 1250))] == [True] * 3
    assert ids == [sorted(r.id for r in p.collect()) for p in frame.randomSplit([1.0, 2.0, 1.0], seed=9)]
    with_nulls = df.randomSplit([0.5, 0.5], seed=1)
    assert sum(p.count() for p in with_nulls) == len(ROWS)
    with pytest.raises(ValueError):
        frame.randomSplit([1.0, -1.0])
    with pytest.raises(ValueError):
        frame.randomSplit([0.0, 0.0])


def test_stat_is_pysparks_class(df):
    assert type(df.stat).__name__ == "DataFrameStatFunctions" and df.stat.df is df
    assert df.stat.crosstab("s", "s").count() == 4
    assert df.stat.sampleBy("s", {"a": 1.0}, 1).count() == 4
    assert df.stat.freqItems(["s"]).first() == Row(s_freqItems=df.freqItems(["s"]).first().s_freqItems)
