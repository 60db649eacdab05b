"""``pyspark.sql.functions``' date and time functions whose answers are types strataflow's
frames do not hold (intervals, timestamp_ntz): defined with PySpark's signatures, and
refused by name where they run (``sql/semantics/instants.py``)."""

from __future__ import annotations

from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.functions.builtin import arg, call
from strataflow.pyspark.sql.functions.named_calls import columns as _opt, named as _named

__all__ = ["convert_timezone", "localtimestamp", "make_interval", "make_dt_interval", "make_ym_interval",
           "try_make_interval", "to_timestamp_ntz", "make_timestamp_ntz", "try_make_timestamp_ntz"]


def convert_timezone(sourceTz: "Column | None", targetTz: Column, sourceTs: "Column | str") -> Column:
    """A wall clock (timestamp_ntz) moved from zone ``sourceTz`` to ``targetTz``: refused
    here, strataflow's frames have no timestamp_ntz type.

    >>> spark.range(1).select(F.convert_timezone(None, F.lit("UTC"), F.lit("2024-01-01")))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] ...
    """
    parts = ([] if sourceTz is None else [arg(sourceTz, "c")]) + [arg(targetTz, "c"), arg(sourceTs, "c")]
    return _named("convert_timezone", *parts)


def localtimestamp() -> Column:
    """The session zone's wall clock now, as timestamp_ntz: refused here, strataflow's
    frames have no timestamp_ntz type.

    >>> spark.range(1).select(F.localtimestamp())
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] ...
    """
    return call("localtimestamp")


# -- intervals: types strataflow's frames do not hold -----------------------------------------------------------------

def make_interval(years: "Column | str | None" = None, months: "Column | str | None" = None,
                  weeks: "Column | str | None" = None, days: "Column | str | None" = None,
                  hours: "Column | str | None" = None, mins: "Column | str | None" = None,
                  secs: "Column | str | None" = None) -> Column:
    """A calendar interval of the parts: refused here (no interval type in strataflow's frames).

    >>> spark.range(1).select(F.make_interval(F.lit(1)))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] ...
    """
    return _named("make_interval", *_opt(years, months, weeks, days, hours, mins, secs))


def make_dt_interval(days: "Column | str | None" = None, hours: "Column | str | None" = None,
                     mins: "Column | str | None" = None, secs: "Column | str | None" = None) -> Column:
    """A day-time interval of the parts: refused here (no interval type in strataflow's frames).

    >>> spark.range(1).select(F.make_dt_interval(F.lit(1)))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] ...
    """
    return _named("make_dt_interval", *_opt(days, hours, mins, secs))


def make_ym_interval(years: "Column | str | None" = None, months: "Column | str | None" = None) -> Column:
    """A year-month interval of the parts: refused here (no interval type in strataflow's frames).

    >>> spark.range(1).select(F.make_ym_interval(F.lit(1)))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] ...
    """
    return _named("make_ym_interval", *_opt(years, months))


def try_make_interval(years: "Column | str | None" = None, months: "Column | str | None" = None,
                      weeks: "Column | str | None" = None, days: "Column | str | None" = None,
                      hours: "Column | str | None" = None, mins: "Column | str | None" = None,
                      secs: "Column | str | None" = None) -> Column:
    """``make_interval``, null on overflow: refused here (no interval type in strataflow's frames).

    >>> spark.range(1).select(F.try_make_interval(F.lit(1)))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] ...
    """
    return _named("try_make_interval", *_opt(years, months, weeks, days, hours, mins, secs))


# -- timestamp_ntz: a type strataflow's frames do not hold -------------------------------------------------------------

def to_timestamp_ntz(timestamp: "Column | str", format: "Column | str | None" = None) -> Column:
    """Text as a wall clock (timestamp_ntz): refused here, strataflow's frames have no timestamp_ntz type.

    >>> spark.range(1).select(F.to_timestamp_ntz(F.lit("2024-01-01")))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] ...
    """
    return _named("to_timestamp_ntz", *_opt(timestamp, format))


def make_timestamp_ntz(years: "Column | str", months: "Column | str", days: "Column | str",
                       hours: "Column | str", mins: "Column | str", secs: "Column | str") -> Column:
    """A wall clock (timestamp_ntz) of the fields: refused here, strataflow's frames have no timestamp_ntz type.

    >>> spark.range(1).select(F.make_timestamp_ntz(*[F.lit(1)] * 6))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] ...
    """
    return _named("make_timestamp_ntz", *_opt(years, months, days, hours, mins, secs))


def try_make_timestamp_ntz(years: "Column | str", months: "Column | str", days: "Column | str",
                           hours: "Column | str", mins: "Column | str", secs: "Column | str") -> Column:
    """``make_timestamp_ntz``, null for invalid fields: refused here, strataflow's frames have no timestamp_ntz type.

    >>> spark.range(1).select(F.try_make_timestamp_ntz(*[F.lit(1)] * 6))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] ...
    """
    return _named("try_make_timestamp_ntz", *_opt(years, months, days, hours, mins, secs))
