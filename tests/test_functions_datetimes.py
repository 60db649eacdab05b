"""Date and timestamp functions the conformance suite's value table cannot check: time
windows grouped by (against a Python model and Spark's shape), the clock's functions
(nondeterministic), and the names Spark gives ``extract``/``datepart`` and the
``timestampadd`` SQL syntax. The answers written here are real PySpark 4.3's.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from decimal import Decimal

import pytest

from strataflow.pyspark.errors import AnalysisException


@pytest.fixture(scope="module")
def spark():
    from strataflow.pyspark import SparkContext
    from strataflow.pyspark.sql import SparkSession

    sc = SparkContext("local[2]", "datetimes")
    try:
        session = SparkSession(sc)
        session.conf.set("spark.sql.session.timeZone", "UTC")
        yield session
    finally:
        sc.stop()


@pytest.fixture()
def F():
    from strataflow.pyspark.sql import functions

    return functions


_TIMES = [dt.datetime(2024, 3, 10, 9, 58, 1), dt.datetime(2024, 3, 10, 10, 0), dt.datetime(2024, 3, 10, 10, 9, 59, 999999),
          dt.datetime(2024, 3, 10, 10, 10), dt.datetime(1969, 12, 31, 23, 55, 30), dt.datetime(2024, 3, 10, 10, 3)]


def _model(times: list[dt.datetime], size: dt.timedelta, start: dt.timedelta = dt.timedelta(0)) -> Counter:
    """(window start, end) -> rows: the window is the last multiple of ``size`` after the
    epoch, shifted by ``start``, at or before the time."""
    epoch = dt.datetime(1970, 1, 1)
    out: Counter = Counter()
    for t in times:
        k = (t - epoch - start) // size
        s = epoch + start + k * size
        out[(s, s + size)] += 1
    return out


@pytest.mark.parametrize("size,start", [("10 minutes", None), ("1 hour", None), ("5 minutes", "2 minutes"),
                                        ("1 day", None), ("1 week", None)])
def test_window_groups_rows_as_spark(spark, F, size, start):
    df = spark.createDataFrame([(t, 1) for t in _TIMES], "ts timestamp, v int")
    w = F.window("ts", size) if start is None else F.window("ts", size, size, start)
    got = df.groupBy(w).agg(F.sum("v").alias("n"))
    assert got.columns == ["window", "n"]
    assert got.schema["window"].dataType.simpleString() == "struct<start:timestamp,end:timestamp>"
    units = {"minutes": "minutes", "minute": "minutes", "hour": "hours", "day": "days", "week": "weeks"}

    def delta(text: str) -> dt.timedelta:
        n, unit = text.split()
        return dt.timedelta(**{units[unit]: int(n)})

    model = _model(_TIMES, delta(size), delta(start) if start else dt.timedelta(0))
    assert Counter({(r.window.start, r.window.end): r.n for r in got.collect()}) == model


def test_window_in_the_session_zone_is_the_same_instant(spark, F):
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        df = spark.createDataFrame([(dt.datetime(2024, 3, 10, 1, 59),)], "ts timestamp")
        r = df.select(F.window("ts", "1 hour").alias("w")).first().w
        assert (r.start, r.end) == (dt.datetime(2024, 3, 10, 1, 0), dt.datetime(2024, 3, 10, 2, 0))  # instants
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_window_time_and_sql_form(spark, F):
    df = spark.createDataFrame([(dt.datetime(2016, 3, 11, 9, 0, 7), 1)], "ts timestamp, v int")
    w = df.groupBy(F.window("ts", "5 seconds")).agg(F.sum("v").alias("s"))
    assert w.select(F.window_time("window")).columns == ["window_time(window)"]
    assert w.select(F.window_time("window")).first()[0] == dt.datetime(2016, 3, 11, 9, 0, 9, 999999)
    df.createOrReplaceTempView("events")
    got = spark.sql("SELECT w.start AS s, count(*) AS n FROM (SELECT window(ts, '5 seconds') AS w FROM events) "
                    "GROUP BY w").first()
    assert (got.s, got.n) == (dt.datetime(2016, 3, 11, 9, 0, 5), 1)


def test_windows_refused_where_they_would_differ(spark, F):
    df = spark.createDataFrame([(dt.datetime(2016, 3, 11, 9, 0, 7),), (None,)], "ts timestamp")
    with pytest.raises(AnalysisException, match="STRATAFLOW_UNSUPPORTED.*window"):
        df.select(F.window("ts", "10 minutes", "5 minutes")).collect()  # sliding: a row in two windows
    with pytest.raises(Exception, match="STRATAFLOW_UNSUPPORTED.*null time"):
        df.select(F.window("ts", "10 minutes")).collect()  # Spark drops the null row
    with pytest.raises(AnalysisException, match="STRATAFLOW_UNSUPPORTED.*session_window"):
        df.groupBy(F.session_window("ts", "5 minutes")).count().collect()
    with pytest.raises(TypeError):
        F.window("ts", 10)


def test_extract_and_datepart_named_as_spark(spark, F):
    df = spark.createDataFrame([(dt.datetime(2024, 3, 10, 10, 30, 5, 250000), dt.date(2024, 3, 10))],
                               "ts timestamp, d date")
    got = df.select(F.extract(F.lit("YEAR"), "ts"), F.datepart(F.lit("SECOND"), "ts"), F.extract(F.lit("dow"), "d"),
                    F.datepart(F.lit("DOY"), F.col("d")))
    assert got.columns == ["extract(YEAR FROM ts)", "datepart(SECOND FROM ts)", "extract(dow FROM d)",
                           "datepart(DOY FROM d)"]
    assert tuple(got.first()) == (2024, Decimal("5.250000"), 1, 70)
    assert spark.sql("SELECT extract(MONTH FROM TIMESTAMP'2024-03-10 10:30:00') AS m").first().m == 3
    with pytest.raises(AnalysisException, match="INVALID_EXTRACT_FIELD"):
        df.select(F.extract(F.lit("fortnight"), "ts")).collect()


def test_try_make_timestamp_hides_its_zone_in_the_name(spark, F):
    df = spark.createDataFrame([(2024, 3, 10, 2, 30, Decimal("1.5"))], "y int, mo int, d int, h int, mi int, s decimal(10,2)")
    got = df.select(F.try_make_timestamp("y", "mo", "d", "h", "mi", "s", F.lit("Europe/Paris")))
    assert got.columns == ["try_make_timestamp(y, mo, d, h, mi, s)"]
    assert got.first()[0] == dt.datetime(2024, 3, 10, 1, 30, 1, 500000)


def test_timestampadd_and_timestampdiff_sql_syntax(spark, F):
    row = spark.sql("SELECT timestampadd(HOUR, 3, TIMESTAMP'2024-03-10 10:00:00') AS a, "
                    "timestampdiff(MONTH, DATE'2024-01-31', DATE'2024-03-30') AS b, "
                    "dateadd(DAY, 1, TIMESTAMP'2024-03-10 10:00:00') AS c").first()
    assert (row.a, row.b, row.c) == (dt.datetime(2024, 3, 10, 13, 0), 1, dt.datetime(2024, 3, 11, 10, 0))
    got = spark.range(1).select(F.timestamp_add("year", F.lit(1), F.lit(dt.datetime(2024, 3, 10))))
    assert got.columns == ["timestampadd(year, 1, TIMESTAMP '2024-03-10 00:00:00')"]
    with pytest.raises(AnalysisException, match="UNRESOLVED_ROUTINE"):
        spark.sql("SELECT timestamp_add('HOUR', 1, TIMESTAMP'2024-03-10 10:00:00')").collect()


def test_the_clock(spark, F):
    got = spark.range(1).select(F.curdate(), F.now(), F.current_timezone())
    assert got.columns == ["current_date()", "now()", "current_timezone()"]
    today, now, zone = got.first()
    assert today == dt.datetime.now(dt.timezone.utc).date() or abs((today - dt.date.today()).days) <= 1
    assert abs((now - dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)).total_seconds()) < 60
    assert zone == "UTC"
    with pytest.raises(AnalysisException, match="STRATAFLOW_UNSUPPORTED.*timestamp_ntz"):
        spark.range(1).select(F.localtimestamp()).collect()


@pytest.mark.parametrize("fn", ["from_utc_timestamp", "to_utc_timestamp"])
def test_a_zone_column_reads_each_row_as_its_literal_would(spark, F, fn):
    """A zone given as a column gives each row what the zone as a literal (checked by the
    conformance suite against Spark) gives; a name Java does not know is refused."""
    zones = ["JST", "PST", "EST", "+05:30", "+5:30", "UTC", "America/New_York", "Asia/Kolkata", "GMT+8",
             "America/Los_Angeles", "CET", "EST5EDT"]
    times = [dt.datetime(2024, 3, 10, 10, 30), dt.datetime(2024, 3, 10, 2, 30), dt.datetime(2024, 11, 3, 1, 30),
             dt.datetime(1969, 12, 31, 23, 59, 59, 500000)]
    df = spark.createDataFrame([(t, z) for t in times for z in zones] + [(times[0], None)], "ts timestamp, tz string")
    f = getattr(F, fn)
    got = df.select("ts", "tz", f("ts", F.col("tz")).alias("v")).collect()
    for r in got:
        want = None if r.tz is None else df.limit(1).select(f(F.lit(r.ts), r.tz)).first()[0]
        assert r.v == want, (r.ts, r.tz)
    fields = df.select(*[F.lit(v).alias(k) for k, v in (("y", 2024), ("mo", 3), ("d", 10), ("h", 2), ("mi", 30))],
                       F.lit(Decimal("1.5")).alias("s"), "tz").distinct()
    made = fields.select("tz", F.make_timestamp("y", "mo", "d", "h", "mi", "s", F.col("tz")).alias("v")).collect()
    for r in made:
        want = None if r.tz is None else fields.limit(1).select(
            F.make_timestamp("y", "mo", "d", "h", "mi", "s", F.lit(r.tz))).first()[0]
        assert r.v == want, r.tz
    bad = spark.createDataFrame([(times[0], "Nowhere/X")], "ts timestamp, tz string")
    with pytest.raises(Exception, match="STRATAFLOW_UNSUPPORTED"):
        bad.select(f("ts", F.col("tz"))).collect()
