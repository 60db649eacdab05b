"""``pyspark.sql.functions``' time windows: the fixed window an instant falls in
(``window``), its event time (``window_time``), and session windows (refused)."""

from __future__ import annotations

from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.functions.builtin import arg
from strataflow.pyspark.sql.functions.named_calls import named as _named

__all__ = ["window", "window_time", "session_window"]


def window(timeColumn: "Column | str", windowDuration: str, slideDuration: str | None = None,
           startTime: str | None = None) -> Column:
    """The tumbling time window (a struct of ``start`` and ``end``, named ``window``) that
    holds each timestamp: windows of ``windowDuration`` from 1970-01-01 UTC shifted by
    ``startTime``. Sliding windows (``slideDuration`` shorter) are refused.

    >>> import datetime as dt
    >>> df = spark.createDataFrame([(dt.datetime(2016, 3, 11, 9, 0, 7), 1)], ["ts", "v"])
    >>> df.groupBy(F.window("ts", "5 seconds")).agg(F.sum("v").alias("s")).select("window.start", "window.end", "s").first()
    Row(start=datetime.datetime(2016, 3, 11, 9, 0, 5), end=datetime.datetime(2016, 3, 11, 9, 0, 10), s=1)
    """
    for name, value in (("windowDuration", windowDuration), ("slideDuration", slideDuration),
                        ("startTime", startTime)):
        if value is not None and (not value or not isinstance(value, str)):
            raise TypeError(f"{name} should be provided as a string")
    parts = [arg(timeColumn, "c"), arg(windowDuration, "l")]
    if slideDuration is not None or startTime is not None:
        parts.append(arg(slideDuration or windowDuration, "l"))
    if startTime is not None:
        parts.append(arg(startTime, "l"))
    e = _named("window", *parts)._expr
    e.meta["shown"] = "window"
    return Column(e)


def window_time(windowColumn: "Column | str") -> Column:
    """The event time of a time window: its end less one microsecond.

    >>> import datetime as dt
    >>> df = spark.createDataFrame([(dt.datetime(2016, 3, 11, 9, 0, 7), 1)], ["ts", "v"])
    >>> w = df.groupBy(F.window("ts", "5 seconds")).agg(F.sum("v").alias("s"))
    >>> w.select(F.window_time("window").alias("t")).first()
    Row(t=datetime.datetime(2016, 3, 11, 9, 0, 9, 999999))
    """
    return _named("window_time", arg(windowColumn, "c"))


def session_window(timeColumn: "Column | str", gapDuration: "Column | str") -> Column:
    """Session windows (rows closer than ``gapDuration`` merged): refused here, a session
    spans rows, which a per-row expression cannot see.

    >>> spark.range(1).select(F.session_window(F.current_timestamp(), "5 minutes"))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] ...
    """
    e = _named("session_window", arg(timeColumn, "c"), arg(gapDuration, "l"))._expr
    e.meta["shown"] = "session_window"
    return Column(e)
