"""Conformance cases of the ``functions.datetimes`` family (see ``cases.py`` for ``Case``).

Numbers a function reads as columns (``make_timestamp``'s fields) are written ``Lit("2024")``
where a fixed value is wanted: a string literal Spark casts to the field's int.
"""

from __future__ import annotations

from conformance.cases import C, Case, Lit  # noqa: F401

__all__ = ["CASES"]


def _build() -> list[Case]:
    out: list[Case] = []
    add = out.extend
    # -- instants between zones ----------------------------------------------------------------------
    for fn in ("from_utc_timestamp", "to_utc_timestamp"):
        add([Case(fn, (C("ts"), "America/New_York")), Case(fn, (C("ts"), "Asia/Kolkata")),
             Case(fn, (C("ts"), "UTC")), Case(fn, (C("dt"), "Asia/Tokyo")), Case(fn, (C("ts"), "+05:30")),
             Case(fn, (C("ts"), "PST"))])
    add([Case("convert_timezone", (Lit("UTC"), Lit("America/New_York"), C("ts")))])
    # -- days --------------------------------------------------------------------------------------------
    add([Case("date_diff", (C("dt"), C("ts"))), Case("date_diff", (C("ts"), C("dt"))),
         Case("dateadd", (C("dt"), 3)), Case("dateadd", (C("dt"), -400)), Case("dateadd", (C("ts"), 1)),
         Case("dateadd", (C("dt"), C("i2"))),
         Case("dayname", (C("dt"),)), Case("dayname", (C("ts"),)), Case("monthname", (C("dt"),)),
         Case("monthname", (C("ts"),)), Case("weekday", (C("dt"),)), Case("weekday", (C("ts"),)),
         Case("next_day", (C("dt"), "Mon")), Case("next_day", (C("dt"), "sunday")),
         Case("next_day", (C("ts"), "FR")), Case("next_day", (C("dt"), "xyz")),
         Case("months_between", (C("dt"), C("ts"))), Case("months_between", (C("ts"), C("dt"), False)),
         Case("months_between", (C("ts"), C("ts"))), Case("months_between", (C("dt"), C("dt"), False))])
    # -- text read as a date or timestamp (Spark's implicit casts) ------------------------------------------
    add([Case("date_diff", (C("sd"), C("dt"))), Case("dayname", (C("sd"),)), Case("weekday", (C("sd"),)),
         Case("next_day", (C("sd"), "MO")), Case("months_between", (C("sd"), C("dt"))),
         Case("timestamp_add", ("HOUR", C("i2"), C("sd"))), Case("timestamp_diff", ("DAY", C("sd"), C("ts"))),
         Case("unix_date", (C("sd"),)), Case("from_utc_timestamp", (C("ts"), "EST")),
         Case("to_utc_timestamp", (C("ts"), "GMT+8"))])
    # -- fields --------------------------------------------------------------------------------------------
    fields = ["YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "DAYOFWEEK", "DOW", "DAYOFWEEK_ISO", "DOY", "HOUR",
              "MINUTE", "SECOND", "YEAROFWEEK", "D", "MON", "H", "yyyy"]
    add([Case("date_part", (Lit(f), C("ts"))) for f in fields])
    add([Case("date_part", (Lit(f), C("dt"))) for f in ("YEAR", "DAYOFWEEK", "DOY", "WEEK", "SECOND", "HOUR")])
    # extract and datepart share date_part's rule; Spark names them extract(YEAR FROM ts), which
    # strataflow's SQL names do not write yet: tests/test_functions_datetimes.py checks their DataFrame form
    add([Case("date_part", (Lit("NOPE"), C("ts"))), Case("date_part", (Lit("sec"), C("ts"))),
         Case("date_part", (Lit("dow_iso"), C("dt")))])
    # -- epoch numbers -------------------------------------------------------------------------------------
    add([Case("timestamp_seconds", (C(c),)) for c in ("i", "l", "d", "m", "f")])
    add([Case("timestamp_millis", (C(c),)) for c in ("i", "l")])
    add([Case("timestamp_micros", (C(c),)) for c in ("i", "l")])
    add([Case("unix_date", (C("dt"),)), Case("unix_seconds", (C("ts"),)), Case("unix_seconds", (C("dt"),)), Case("unix_millis", (C("ts"),)),
         Case("unix_micros", (C("ts"),)), Case("date_from_unix_date", (C("i"),)),
         Case("date_from_unix_date", (C("i2"),)), Case("date_from_unix_date", (C("h"),)),
         Case("to_unix_timestamp", (C("sd"),)), Case("to_unix_timestamp", (C("sd"), Lit("yyyy-MM-dd"))),
         Case("to_unix_timestamp", (C("ts"),)), Case("to_unix_timestamp", (C("dt"),))])
    # -- timestamps from fields and text ---------------------------------------------------------------------
    ymd = (Lit("2024"), Lit("3"), Lit("10"))
    add([Case("make_timestamp", (*ymd, Lit("2"), Lit("30"), C("m"))),
         Case("make_timestamp", (*ymd, Lit("10"), C("i2"), C("d"))),
         Case("make_timestamp", (Lit("2024"), C("i2"), C("i2"), C("y"), Lit("0"), Lit("0"))),
         Case("make_timestamp", (Lit("2024"), Lit("11"), Lit("3"), Lit("1"), Lit("30"), C("m2"))),
         Case("make_timestamp", (*ymd, Lit("2"), Lit("30"), Lit("0"), Lit("Asia/Tokyo"))),
         Case("make_timestamp", (Lit("2024"), Lit("2"), Lit("29"), C("i2"), Lit("0"), Lit("60"))),
         Case("make_timestamp_ltz", (*ymd, Lit("2"), Lit("30"), C("m"))),
         Case("make_timestamp_ltz", (*ymd, C("i2"), Lit("0"), Lit("1.5"), Lit("America/New_York"))),
         Case("try_make_timestamp", (Lit("2024"), C("i2"), C("i2"), C("i2"), C("i2"), C("m"))),
         Case("try_make_timestamp", (*ymd, Lit("2"), Lit("30"), C("d"))),

         Case("try_make_timestamp_ltz", (Lit("2024"), C("i2"), C("i2"), C("i2"), C("i2"), C("m"))),
         Case("try_make_timestamp_ltz", (*ymd, Lit("2"), C("i2"), C("m"), Lit("UTC")))])
    add([Case("try_to_timestamp", (C("sd"),)), Case("try_to_timestamp", (C("sd"), Lit("yyyy-MM-dd HH:mm:ss"))),
         Case("try_to_timestamp", (C("sd"), Lit("dd/MM/yyyy"))), Case("try_to_timestamp", (C("s"),)),
         Case("try_to_date", (C("sd"),)), Case("try_to_date", (C("sd"), "dd/MM/yyyy")),
         Case("try_to_date", (C("sd"), "yyyy-MM-dd")),
         Case("to_timestamp_ltz", (C("sd"),)), Case("to_timestamp_ltz", (C("sd"), Lit("yyyy-MM-dd"))),
         Case("to_timestamp_ltz", (C("dt"),))])
    # -- units of time ---------------------------------------------------------------------------------------
    for unit in ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND",
                 "MICROSECOND"):
        add([Case("timestamp_add", (unit, C("i2"), C("ts"))), Case("timestamp_diff", (unit, C("dt"), C("ts")))])
    add([Case("timestamp_add", ("DAY", C("i"), C("ts"))), Case("timestamp_add", ("MONTH", C("y"), C("dt"))),
         Case("timestamp_diff", ("HOUR", C("ts"), C("dt")))])
    # -- the session ------------------------------------------------------------------------------------------
    add([Case("current_timezone", ())])
    # -- refused: types strataflow's frames do not hold ----------------------------------------------------------
    add([Case("make_interval", (C("i2"), C("i2"))), Case("make_dt_interval", (C("i2"),)),
         Case("make_ym_interval", (C("i2"),)), Case("try_make_interval", (C("i2"),)),
         Case("to_timestamp_ntz", (C("sd"),)),
         Case("make_timestamp_ntz", (*ymd, Lit("2"), Lit("30"), C("m"))),
         Case("try_make_timestamp_ntz", (*ymd, Lit("2"), Lit("30"), C("m")))])
    return out


CASES: list[Case] = _build()
