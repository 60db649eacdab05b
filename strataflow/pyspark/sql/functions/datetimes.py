"""``pyspark.sql.functions``: date, timestamp and interval functions (PySpark's Date and Timestamp Functions).

Each function is defined with PySpark's signature and an example; ``call`` builds the
node by Spark's name, and ``sql/semantics`` gives it Spark's meaning or refuses it. Where
sqlglot's node for Spark's name would reorder or wrap the arguments, the node is an
``Anonymous`` call by Spark's name (``_named``), the same node ``spark.sql`` text gives.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp as sx

from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.functions.builtin import arg, call
from strataflow.pyspark.sql.functions.named_calls import columns as _opt, named as _named
from strataflow.pyspark.sql.functions.time_windows import session_window, window, window_time
from strataflow.pyspark.sql.functions.unheld_types import (convert_timezone, localtimestamp, make_dt_interval,
                                                           make_interval, make_timestamp_ntz, make_ym_interval,
                                                           to_timestamp_ntz, try_make_interval,
                                                           try_make_timestamp_ntz)

__all__ = ["from_utc_timestamp", "to_utc_timestamp", "convert_timezone", "date_diff", "dateadd", "date_part",
           "datepart", "extract", "dayname", "monthname", "weekday", "next_day", "months_between",
           "timestamp_seconds", "timestamp_millis", "timestamp_micros", "unix_date", "unix_seconds", "unix_millis",
           "unix_micros", "date_from_unix_date", "to_unix_timestamp", "make_timestamp", "make_timestamp_ltz",
           "try_make_timestamp", "try_make_timestamp_ltz", "try_to_timestamp", "try_to_date", "to_timestamp_ltz",
           "timestamp_add", "timestamp_diff", "curdate", "now", "localtimestamp", "current_timezone",
           "make_interval", "make_dt_interval", "make_ym_interval", "try_make_interval", "window", "window_time",
           "session_window", "to_timestamp_ntz", "make_timestamp_ntz", "try_make_timestamp_ntz"]


# -- instants between zones -----------------------------------------------------------------------------------

def from_utc_timestamp(timestamp: "Column | str", tz: "Column | str") -> Column:
    """The wall clock in zone ``tz`` of a UTC instant, as a timestamp (shown in the session zone).

    >>> import datetime as dt
    >>> df = spark.createDataFrame([(dt.datetime(1997, 2, 28, 10, 30),)], ["ts"])
    >>> df.select(F.from_utc_timestamp("ts", "Asia/Kolkata").alias("t")).first()
    Row(t=datetime.datetime(1997, 2, 28, 16, 0))
    """
    return call("from_utc_timestamp", arg(timestamp, "c"), arg(tz, "l"))


def to_utc_timestamp(timestamp: "Column | str", tz: "Column | str") -> Column:
    """The UTC instant of a wall clock read in zone ``tz``, as a timestamp.

    >>> import datetime as dt
    >>> df = spark.createDataFrame([(dt.datetime(1997, 2, 28, 10, 30),)], ["ts"])
    >>> df.select(F.to_utc_timestamp("ts", "Asia/Kolkata").alias("t")).first()
    Row(t=datetime.datetime(1997, 2, 28, 5, 0))
    """
    return call("to_utc_timestamp", arg(timestamp, "c"), arg(tz, "l"))


# -- days ------------------------------------------------------------------------------------------------------

def date_diff(end: "Column | str", start: "Column | str") -> Column:
    """Days from ``start`` to ``end`` (timestamps read as dates in the session zone).

    >>> import datetime as dt
    >>> df = spark.createDataFrame([(dt.date(2015, 4, 8), dt.date(2015, 5, 8))], ["d1", "d2"])
    >>> df.select(F.date_diff("d2", "d1").alias("n")).first()
    Row(n=30)
    """
    return call("date_diff", arg(end, "c"), arg(start, "c"))


def dateadd(start: "Column | str", days: "Column | str | int") -> Column:
    """The date ``days`` days after ``start`` (before it, for a negative count).

    >>> import datetime as dt
    >>> spark.createDataFrame([(dt.date(2015, 4, 8),)], ["d"]).select(F.dateadd("d", 1)).first()
    Row(date_add(d, 1)=datetime.date(2015, 4, 9))
    """
    return call("dateadd", arg(start, "c"), arg(days, "l" if isinstance(days, int) else "c"))


def _part(name: str, field: Column, source: "Column | str") -> Column:
    from strataflow.pyspark.sql.column import spark_name

    c = _named(name, arg(field, "c"), arg(source, "c"))
    if name != "date_part":  # Spark names extract and datepart as the SQL syntax: extract(YEAR FROM ts)
        f, x = c._expr.expressions
        c._expr.meta["shown"] = f"{name}({spark_name(f)} FROM {spark_name(x)})"
    return c


def date_part(field: Column, source: "Column | str") -> Column:
    """The ``field`` (YEAR, MONTH, DAY, HOUR, SECOND with its fraction, DAYOFWEEK, DOY, WEEK...) of a date or timestamp.

    >>> import datetime as dt
    >>> df = spark.createDataFrame([(dt.datetime(2015, 4, 8, 13, 8, 15, 500000),)], ["ts"])
    >>> df.select(F.date_part(F.lit("YEAR"), "ts"), F.date_part(F.lit("SECOND"), "ts")).first()
    Row(date_part(YEAR, ts)=2015, date_part(SECOND, ts)=Decimal('15.500000'))
    """
    return _part("date_part", field, source)


def datepart(field: Column, source: "Column | str") -> Column:
    """``date_part``: the ``field`` of a date or timestamp.

    >>> import datetime as dt
    >>> df = spark.createDataFrame([(dt.date(2015, 4, 8),)], ["d"])
    >>> df.select(F.datepart(F.lit("MONTH"), "d")).first()
    Row(datepart(MONTH FROM d)=4)
    """
    return _part("datepart", field, source)


def extract(field: Column, source: "Column | str") -> Column:
    """``date_part``: the ``field`` of a date or timestamp.

    >>> import datetime as dt
    >>> df = spark.createDataFrame([(dt.date(2015, 4, 8),)], ["d"])
    >>> df.select(F.extract(F.lit("DOY"), "d")).first()
    Row(extract(DOY FROM d)=98)
    """
    return _part("extract", field, source)


def dayname(col: "Column | str") -> Column:
    """The day of the week's three-letter English name (Mon...Sun).

    >>> import datetime as dt
    >>> spark.createDataFrame([(dt.date(2015, 4, 8),)], ["d"]).select(F.dayname("d")).first()
    Row(dayname(d)='Wed')
    """
    return call("dayname", arg(col, "c"))


def monthname(col: "Column | str") -> Column:
    """The month's three-letter English name (Jan...Dec).

    >>> import datetime as dt
    >>> spark.createDataFrame([(dt.date(2015, 4, 8),)], ["d"]).select(F.monthname("d")).first()
    Row(monthname(d)='Apr')
    """
    return call("monthname", arg(col, "c"))


def weekday(col: "Column | str") -> Column:
    """The day of the week, 0 = Monday ... 6 = Sunday.

    >>> import datetime as dt
    >>> spark.createDataFrame([(dt.date(2015, 4, 8),)], ["d"]).select(F.weekday("d")).first()
    Row(weekday(d)=2)
    """
    return _named("weekday", arg(col, "c"))


def next_day(date: "Column | str", dayOfWeek: str) -> Column:
    """The first date after ``date`` that is a ``dayOfWeek`` ("Mon", "TU", "friday"...).

    >>> import datetime as dt
    >>> spark.createDataFrame([(dt.date(2015, 7, 27),)], ["d"]).select(F.next_day("d", "Sun")).first()
    Row(next_day(d, Sun)=datetime.date(2015, 8, 2))
    """
    return call("next_day", arg(date, "c"), arg(dayOfWeek, "l"))


def months_between(date1: "Column | str", date2: "Column | str", roundOff: bool = True) -> Column:
    """Months from ``date2`` to ``date1``: whole where the days of month match (or both end
    a month), else with the rest counted in 31-day months; rounded to 8 digits unless ``roundOff`` is False.

    >>> import datetime as dt
    >>> df = spark.createDataFrame([(dt.datetime(1997, 2, 28, 10, 30), dt.date(1996, 10, 30))], ["t", "d"])
    >>> df.select(F.months_between("t", "d").alias("m")).first()
    Row(m=3.94959677)
    """
    return call("months_between", arg(date1, "c"), arg(date2, "c"), sx.Boolean(this=bool(roundOff)))


# -- epoch numbers ------------------------------------------------------------------------------------------------

def timestamp_seconds(col: "Column | str") -> Column:
    """The timestamp ``col`` seconds after 1970-01-01 00:00:00 UTC.

    >>> spark.createDataFrame([(1230219000,)], ["s"]).select(F.timestamp_seconds("s").alias("t")).first()
    Row(t=datetime.datetime(2008, 12, 25, 15, 30))
    """
    return _named("timestamp_seconds", arg(col, "c"))


def timestamp_millis(col: "Column | str") -> Column:
    """The timestamp ``col`` milliseconds after 1970-01-01 00:00:00 UTC.

    >>> spark.createDataFrame([(1230219000123,)], ["s"]).select(F.timestamp_millis("s").alias("t")).first()
    Row(t=datetime.datetime(2008, 12, 25, 15, 30, 0, 123000))
    """
    return _named("timestamp_millis", arg(col, "c"))


def timestamp_micros(col: "Column | str") -> Column:
    """The timestamp ``col`` microseconds after 1970-01-01 00:00:00 UTC.

    >>> spark.createDataFrame([(1230219000123456,)], ["s"]).select(F.timestamp_micros("s").alias("t")).first()
    Row(t=datetime.datetime(2008, 12, 25, 15, 30, 0, 123456))
    """
    return _named("timestamp_micros", arg(col, "c"))


def unix_date(col: "Column | str") -> Column:
    """Days since 1970-01-01.

    >>> import datetime as dt
    >>> spark.createDataFrame([(dt.date(1970, 1, 2),)], ["d"]).select(F.unix_date("d")).first()
    Row(unix_date(d)=1)
    """
    return call("unix_date", arg(col, "c"))


def unix_seconds(col: "Column | str") -> Column:
    """Whole seconds since 1970-01-01 00:00:00 UTC (rounded down).

    >>> import datetime as dt
    >>> df = spark.createDataFrame([(dt.datetime(1969, 12, 31, 23, 59, 59, 500000),)], ["t"])
    >>> df.select(F.unix_seconds("t")).first()
    Row(unix_seconds(t)=-1)
    """
    return call("unix_seconds", arg(col, "c"))


def unix_millis(col: "Column | str") -> Column:
    """Whole milliseconds since 1970-01-01 00:00:00 UTC (rounded down).

    >>> import datetime as dt
    >>> spark.createDataFrame([(dt.datetime(1970, 1, 1, 0, 0, 1, 2500),)], ["t"]).select(F.unix_millis("t")).first()
    Row(unix_millis(t)=1002)
    """
    return call("unix_millis", arg(col, "c"))


def unix_micros(col: "Column | str") -> Column:
    """Microseconds since 1970-01-01 00:00:00 UTC.

    >>> import datetime as dt
    >>> spark.createDataFrame([(dt.datetime(1970, 1, 1, 0, 0, 1, 2500),)], ["t"]).select(F.unix_micros("t")).first()
    Row(unix_micros(t)=1002500)
    """
    return call("unix_micros", arg(col, "c"))


def date_from_unix_date(days: "Column | str") -> Column:
    """The date ``days`` days after 1970-01-01.

    >>> spark.createDataFrame([(1,)], "n int").select(F.date_from_unix_date("n")).first()
    Row(date_from_unix_date(n)=datetime.date(1970, 1, 2))
    """
    return call("date_from_unix_date", arg(days, "c"))


def to_unix_timestamp(timestamp: "Column | str", format: "Column | str | None" = None) -> Column:
    """Seconds since 1970-01-01 00:00:00 UTC of a timestamp, a date, or text in ``format``
    (default ``yyyy-MM-dd HH:mm:ss``, read in the session zone).

    >>> spark.createDataFrame([("2015-04-08",)], ["s"]).select(F.to_unix_timestamp("s", F.lit("yyyy-MM-dd")).alias("u")).first()
    Row(u=1428451200)
    """
    return call("to_unix_timestamp", *_opt(timestamp, format))


# -- timestamps from fields and text ------------------------------------------------------------------------------

def _fields(years: Any, months: Any, days: Any, hours: Any, mins: Any, secs: Any, timezone: Any) -> list:
    return _opt(years, months, days, hours, mins, secs, timezone)


def make_timestamp(years: "Column | str", months: "Column | str", days: "Column | str", hours: "Column | str",
                   mins: "Column | str", secs: "Column | str", timezone: "Column | str | None" = None) -> Column:
    """The timestamp of a wall clock's fields read in ``timezone`` (default the session's);
    ``secs`` may have a fraction, 60 is the next minute; an invalid field is an error under ANSI, else null.

    >>> df = spark.createDataFrame([(2014, 12, 28, 6, 30, 45.887)], ["y", "m", "d", "h", "mi", "s"])
    >>> df.select(F.make_timestamp("y", "m", "d", "h", "mi", "s").alias("t")).first()
    Row(t=datetime.datetime(2014, 12, 28, 6, 30, 45, 887000))
    """
    return _named("make_timestamp", *_fields(years, months, days, hours, mins, secs, timezone))


def make_timestamp_ltz(years: "Column | str", months: "Column | str", days: "Column | str",
                       hours: "Column | str", mins: "Column | str", secs: "Column | str",
                       timezone: "Column | str | None" = None) -> Column:
    """``make_timestamp``: the timestamp of a wall clock's fields.

    >>> df = spark.createDataFrame([(2014, 12, 28, 6, 30, 45.887)], ["y", "m", "d", "h", "mi", "s"])
    >>> df.select(F.make_timestamp_ltz("y", "m", "d", "h", "mi", "s", F.lit("UTC")).alias("t")).first()
    Row(t=datetime.datetime(2014, 12, 28, 6, 30, 45, 887000))
    """
    return _named("make_timestamp_ltz", *_fields(years, months, days, hours, mins, secs, timezone))


def try_make_timestamp(years: "Column | str", months: "Column | str", days: "Column | str",
                       hours: "Column | str", mins: "Column | str", secs: "Column | str",
                       timezone: "Column | str | None" = None) -> Column:
    """``make_timestamp``, null for invalid fields in either ANSI mode.

    >>> df = spark.createDataFrame([(2014, 13, 28, 6, 30, 45.887)], ["y", "m", "d", "h", "mi", "s"])
    >>> df.select(F.try_make_timestamp("y", "m", "d", "h", "mi", "s").alias("t")).first()
    Row(t=None)
    """
    parts = _fields(years, months, days, hours, mins, secs, timezone)
    return _named("try_make_timestamp", *parts, shown=parts[:6])


def try_make_timestamp_ltz(years: "Column | str", months: "Column | str", days: "Column | str",
                           hours: "Column | str", mins: "Column | str", secs: "Column | str",
                           timezone: "Column | str | None" = None) -> Column:
    """``make_timestamp_ltz``, null for invalid fields in either ANSI mode.

    >>> df = spark.createDataFrame([(2014, 12, 28, 6, 30, 45.887)], ["y", "m", "d", "h", "mi", "s"])
    >>> df.select(F.try_make_timestamp_ltz("y", "m", "d", "h", "mi", "s").alias("t")).first()
    Row(t=datetime.datetime(2014, 12, 28, 6, 30, 45, 887000))
    """
    return _named("try_make_timestamp_ltz", *_fields(years, months, days, hours, mins, secs, timezone))


def try_to_timestamp(col: "Column | str", format: "Column | str | None" = None) -> Column:
    """``to_timestamp``, null for text that does not parse in either ANSI mode.

    >>> df = spark.createDataFrame([("1997-02-28 10:30:00",), ("nope",)], ["s"])
    >>> [r.t for r in df.select(F.try_to_timestamp("s").alias("t")).collect()]
    [datetime.datetime(1997, 2, 28, 10, 30), None]
    """
    return _named("try_to_timestamp", *_opt(col, format))


def try_to_date(col: "Column | str", format: str | None = None) -> Column:
    """``to_date``, null for text that does not parse in either ANSI mode.

    >>> df = spark.createDataFrame([("1997-02-28",), ("nope",)], ["s"])
    >>> [r.d for r in df.select(F.try_to_date("s", "yyyy-MM-dd").alias("d")).collect()]
    [datetime.date(1997, 2, 28), None]
    """
    parts = [arg(col, "c")] + ([] if format is None else [arg(format, "l")])
    return _named("try_to_date", *parts)


def to_timestamp_ltz(timestamp: "Column | str", format: "Column | str | None" = None) -> Column:
    """``to_timestamp``: text (in ``format``) or a date as a timestamp.

    >>> df = spark.createDataFrame([("2016-12-31",)], ["s"])
    >>> df.select(F.to_timestamp_ltz("s", F.lit("yyyy-MM-dd")).alias("t")).first()
    Row(t=datetime.datetime(2016, 12, 31, 0, 0))
    """
    return _named("to_timestamp_ltz", *_opt(timestamp, format))


# -- units of time -----------------------------------------------------------------------------------------------

def timestamp_add(unit: str, quantity: "Column | str", ts: "Column | str") -> Column:
    """``ts`` plus ``quantity`` units (YEAR, QUARTER, MONTH, WEEK, DAY on the session zone's
    wall clock; HOUR ... MICROSECOND on the instant).

    >>> import datetime as dt
    >>> df = spark.createDataFrame([(dt.datetime(2016, 3, 11, 9, 0, 7), 2)], ["ts", "n"])
    >>> df.select(F.timestamp_add("YEAR", "n", "ts").alias("t")).first()
    Row(t=datetime.datetime(2018, 3, 11, 9, 0, 7))
    """
    parts = [sx.var(str(unit)), arg(quantity, "c"), arg(ts, "c")]
    return _named("timestamp_add", *parts, called="timestampadd")


def timestamp_diff(unit: str, start: "Column | str", end: "Column | str") -> Column:
    """Whole ``unit``s (YEAR ... MICROSECOND) from ``start`` to ``end``, on the session zone's wall clock.

    >>> import datetime as dt
    >>> df = spark.createDataFrame([(dt.datetime(2016, 3, 11, 9, 0, 7), dt.datetime(2024, 4, 2, 9, 0, 7))], ["a", "b"])
    >>> df.select(F.timestamp_diff("YEAR", "a", "b").alias("n")).first()
    Row(n=8)
    """
    parts = [sx.var(str(unit)), arg(start, "c"), arg(end, "c")]
    return _named("timestamp_diff", *parts, called="timestampdiff")


# -- the session ---------------------------------------------------------------------------------------------------

def curdate() -> Column:
    """Today's date in the session zone.

    >>> import datetime as dt; spark.range(1).select(F.curdate().alias("d")).first().d == dt.date.today()
    True
    """
    return call("curdate")


def now() -> Column:
    """The current timestamp.

    >>> import datetime as dt; isinstance(spark.range(1).select(F.now().alias("t")).first().t, dt.datetime)
    True
    """
    return _named("now")


def current_timezone() -> Column:
    """The session time zone (``spark.sql.session.timeZone``).

    >>> spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    >>> spark.range(1).select(F.current_timezone()).first()
    Row(current_timezone()='America/Los_Angeles')
    >>> spark.conf.unset("spark.sql.session.timeZone")
    """
    return call("current_timezone")




#: the family's functions kept in modules of their own (time windows; types strataflow's
#: frames do not hold) belong to this module, as PySpark's one ``functions`` module holds
#: them all: their examples run with this module's
for _f in (window, window_time, session_window, convert_timezone, localtimestamp, make_interval, make_dt_interval,
           make_ym_interval, try_make_interval, to_timestamp_ntz, make_timestamp_ntz, try_make_timestamp_ntz):
    _f.__module__ = __name__
