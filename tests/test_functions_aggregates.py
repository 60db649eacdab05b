"""The aggregate family's functions the value table cannot check: window value functions
(``first_value``, ``last_value``, ``nth_value``) over ordered, partitioned windows with
ties and nulls — against a plain-Python model of Spark's frames and against PySpark's
recorded answers (``record_functions_aggregates.py``) — and the refusals that happen at
run time (``percentile_approx`` past its exact range, ``mode`` of tied values).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from record_functions_aggregates import GOLDEN, ROWS, SCHEMA, run  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    from strataflow.pyspark import SparkContext
    from strataflow.pyspark.sql import SparkSession

    sc = SparkContext("local[2]", "functions-aggregates")
    try:
        yield SparkSession(sc)
    finally:
        sc.stop()


def _model(frame: str) -> list[list]:
    """Spark's answers by hand: each row's frame in its partition (ordered by o, then id),
    then the first, last, non-null first/last, 2nd, 2nd non-null and 1st values."""
    out = []
    for rid, g, o, _ in ROWS:
        part = sorted((r for r in ROWS if r[1] == g), key=lambda r: (r[2], r[0]))
        i = next(k for k, r in enumerate(part) if r[0] == rid)
        if frame == "range":  # unbounded preceding to the current row's last peer
            win = [r for r in part if r[2] <= o]
        elif frame == "full":
            win = part
        else:  # rows between 1 preceding and 1 following
            win = part[max(0, i - 1):i + 2]
        xs = [r[3] for r in win]
        nn = [x for x in xs if x is not None]
        out.append([rid, xs[0], xs[-1], nn[0] if nn else None, nn[-1] if nn else None,
                    xs[1] if len(xs) > 1 else None, nn[1] if len(nn) > 1 else None, xs[0]])
    return sorted(out)


def test_window_value_functions_are_sparks(spark):
    from strataflow.pyspark.sql import Window, functions as F

    got = run(spark, F, Window)
    golden = json.loads(GOLDEN.read_text())["programs"]
    for frame in ("range", "full", "rows"):
        assert got[frame] == _model(frame), frame
        assert got[frame] == golden[frame], frame
    assert got["grouped"] == golden["grouped"]


def test_nth_value_outside_a_window_is_refused(spark):
    from strataflow.pyspark.errors import AnalysisException
    from strataflow.pyspark.sql import functions as F

    df = spark.createDataFrame(ROWS, SCHEMA)
    with pytest.raises(AnalysisException, match="nth_value"):
        df.select(F.nth_value("x", 2)).collect()


def test_percentile_approx_past_its_exact_range_fails_naming_it(spark):
    from strataflow.pyspark.sql import functions as F

    df = spark.range(60)
    assert df.select(F.percentile_approx("id", 0.5, 200)).first()[0] == 29  # 2 * 60 / 200 < 1: exact
    with pytest.raises(Exception, match="STRATAFLOW_UNSUPPORTED.*percentile_approx"):
        df.select(F.percentile_approx("id", 0.5, 100)).collect()


def test_mode_of_tied_values_fails_unless_deterministic(spark):
    from strataflow.pyspark.sql import functions as F

    df = spark.createDataFrame([(2,), (1,), (1,), (2,), (None,)], "x int")
    assert df.select(F.mode("x", True)).first()[0] == 1
    with pytest.raises(Exception, match="STRATAFLOW_UNSUPPORTED.*mode"):
        df.select(F.mode("x")).collect()
    assert df.groupBy().agg(F.mode("x", True).alias("m")).first().m == 1


def test_grouping_is_refused_by_name(spark):
    from strataflow.pyspark.errors import AnalysisException
    from strataflow.pyspark.sql import functions as F

    df = spark.createDataFrame([(1, "a")], "v int, k string")
    with pytest.raises(AnalysisException, match="grouping"):
        df.cube("k").agg(F.grouping("k")).collect()


def test_percentile_counts_each_value_frequency_times(spark):
    """Spark's ``percentile(col, p, frequency)``: each value counted ``frequency`` times, a
    row with a null value or frequency not at all, 0 times for 0; a negative one fails."""
    from strataflow.pyspark.sql import functions as F

    df = spark.createDataFrame([(1, 2), (2, 2), (3, None), (None, 4), (4, 0)], "x int, f int")
    got = df.select(F.percentile("x", 0.5, "f"), F.percentile("x", [0.25, 0.5], F.lit(1)),
                    F.percentile("x", 0.5, 2)).first()
    assert list(got) == [1.5, [1.75, 2.5], 2.5]  # 1,1,2,2 / 1,2,3,4 / 1,1,2,2,3,3,4,4
    assert df.columns == ["x", "f"] and list(got.asDict()) == [
        "percentile(x, 0.5, f)", "percentile(x, array(0.25, 0.5), 1)", "percentile(x, 0.5, 2)"]
    with pytest.raises(Exception, match="STRATAFLOW_UNSUPPORTED.*percentile"):
        spark.createDataFrame([(1, -1)], "x int, f int").select(F.percentile("x", 0.5, "f")).collect()


def test_first_value_ignore_nulls_in_sql(spark):
    """``first_value(x, true)`` is Spark's ``first_value(x)``; the ``IGNORE NULLS`` syntax of
    the aggregate, which Spark names ``first(x)``, is refused by name until the SQL form's
    naming gives it."""
    from strataflow.pyspark.errors import AnalysisException

    spark.createDataFrame([(None,), (2,)], "x int").createOrReplaceTempView("fv")
    assert spark.sql("SELECT first_value(x, true), last_value(x, true) FROM fv").collect()[0].asDict() == {
        "first_value(x)": 2, "last_value(x)": 2}
    with pytest.raises(AnalysisException, match="first_value"):
        spark.sql("SELECT first_value(x) IGNORE NULLS FROM fv").collect()


def test_try_sum_is_null_from_the_first_overflow(spark):
    """Spark's ``try_sum`` of integral values: each addition under TryEval, so a sum that
    overflows on the way is null even if later values would bring it back (one partition,
    the rows' order)."""
    from strataflow.pyspark.sql import functions as F

    big = 9223372036854775807
    over = spark.createDataFrame([(big,), (1,), (-1,)], "x bigint").coalesce(1)
    back = spark.createDataFrame([(-1,), (1,), (big,), (None,)], "x bigint").coalesce(1)
    assert over.select(F.try_sum("x")).first()[0] is None
    assert back.select(F.try_sum("x")).first()[0] == big
    assert spark.createDataFrame([(None,)], "x int").select(F.try_sum("x"), F.try_avg("x")).first() == (None, None)
