"""The calendar of a date or timestamp as Spark reads it: fields (``date_part``), day and
month names, the next day of a week, months between two instants, days added, and the
fixed time windows an instant falls in.

A timestamp's calendar is its wall clock in the session time zone; a date is its own.
"""

from __future__ import annotations

import re

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.semantics.casts import cast_rule
from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.instants import as_timestamp, literal_text, unsupported
from strataflow.pyspark.sql.semantics.template import fill
from strataflow.pyspark.sql.semantics.zones import from_local, local

__all__ = ["RULES", "ANONYMOUS", "REFUSE", "extract_rule", "as_date"]


def _is(t: pa.DataType | None, test) -> bool:
    return t is not None and test(t)


def as_date(x: exp.Expression, rules: Rules) -> exp.Expression:
    """``x`` as Spark's implicit cast to date gives it (a timestamp's date in the session zone)."""
    inner = x.this if isinstance(x, exp.TsOrDsToDate) and not x.args.get("format") else x
    t = rules.type_of(inner)
    if _is(t, pa.types.is_date32):
        return inner
    if _is(t, pa.types.is_timestamp):
        return fill("CAST({x} AS DATE)", x=local(inner, rules))
    return cast_rule(exp.Cast(this=inner, to=exp.DataType.build("DATE")), rules)


def _wall(x: exp.Expression, rules: Rules) -> exp.Expression:
    """The session zone's wall clock of a timestamp, or a date's midnight."""
    inner = x.this if isinstance(x, (exp.TsOrDsToDate, exp.TsOrDsToTimestamp)) and not x.args.get("format") else x
    t = rules.type_of(inner)
    if _is(t, pa.types.is_date32):
        return fill("CAST({x} AS TIMESTAMP)", x=inner)
    return local(as_timestamp(inner, rules), rules)


# -- fields ---------------------------------------------------------------------------------------------------

#: Spark's field names (``DatePart.parseExtractField``) -> DuckDB's SQL of the wall clock ``{x}``
_FIELDS = {
    ("YEAR", "Y", "YEARS", "YR", "YRS"): "year({x})", ("YEAROFWEEK",): "isoyear({x})",
    ("QUARTER", "QTR"): "quarter({x})", ("MONTH", "MON", "MONS", "MONTHS"): "month({x})",
    ("WEEK", "W", "WEEKS"): "week({x})", ("DAY", "D", "DAYS"): "day({x})",
    ("DAYOFWEEK", "DOW"): "dayofweek({x}) + 1", ("DAYOFWEEK_ISO", "DOW_ISO"): "isodow({x})",
    ("DOY",): "dayofyear({x})", ("HOUR", "H", "HOURS", "HR", "HRS"): "hour({x})",
    ("MINUTE", "M", "MIN", "MINS", "MINUTES"): "minute({x})", ("SECOND", "S", "SEC", "SECONDS", "SECS"): None,
}
_FIELD = {name: sql for names, sql in _FIELDS.items() for name in names}


def _field_of(node: exp.Expression, field: exp.Expression, source: exp.Expression, rules: Rules) -> exp.Expression:
    name = (field.name if isinstance(field, (exp.Var, exp.Identifier, exp.Literal, exp.Column)) else "").upper()
    if not isinstance(field, (exp.Var, exp.Identifier, exp.Literal, exp.Column)) or name not in _FIELD:
        shown = field.name if isinstance(field, (exp.Var, exp.Identifier, exp.Literal)) else field.sql()
        raise AnalysisException(f"[INVALID_EXTRACT_FIELD] Cannot extract {shown} from {source.sql('spark')}.",
                                "INVALID_EXTRACT_FIELD")
    t = rules.type_of(source.this if isinstance(source, exp.TsOrDsToDate) else source)
    if not (_is(t, pa.types.is_timestamp) or _is(t, pa.types.is_date32)):
        raise rules.refuse(node, f"a source of type {t}", "a date or a timestamp (intervals are not held)")
    x = _wall(source, rules)
    sql = _FIELD[name]
    if sql is None:  # seconds with their fraction, decimal(8,6)
        return typed(fill("CAST(CAST(microsecond({x}) AS DECIMAL(18,0)) * CAST(0.000001 AS DECIMAL(7,6)) "
                          "AS DECIMAL(8,6))", x=x), pa.decimal128(8, 6))
    return typed(fill(f"CAST({sql} AS INTEGER)", x=x), pa.int32())


def extract_rule(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``extract(field FROM x)``, ``extract(field, x)``, ``date_part``/``datepart(field, x)``."""
    if isinstance(node, exp.Extract):
        return _field_of(node, node.this, node.expression, rules)
    field, source = node.expressions
    return _field_of(node, field, source, rules)


def _day_text(pattern: str):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        return typed(fill(f"strftime({{d}}, '{pattern}')", d=as_date(node.this, rules)), pa.string())

    return rule


def _weekday(node: exp.Expression, rules: Rules) -> exp.Expression:
    return typed(fill("CAST(isodow({d}) - 1 AS INTEGER)", d=as_date(node.expressions[0], rules)), pa.int32())


#: Spark's day-of-week names (``getDayOfWeekFromString``), ISO numbers (Monday 1)
_DAYS = {n: i + 1 for i, names in enumerate([("MO", "MON", "MONDAY"), ("TU", "TUE", "TUESDAY"),
                                              ("WE", "WED", "WEDNESDAY"), ("TH", "THU", "THURSDAY"),
                                              ("FR", "FRI", "FRIDAY"), ("SA", "SAT", "SATURDAY"),
                                              ("SU", "SUN", "SUNDAY")]) for n in names}


def _next_day(node: exp.Expression, rules: Rules) -> exp.Expression:
    d = as_date(node.this, rules)
    text = literal_text(node, node.expression, rules, "day of week")
    target = _DAYS.get(text.upper())
    if target is None:
        if not rules.conf.ansi:
            return typed(fill("CAST(NULL AS DATE)"), pa.date32())
        why = unsupported("next_day", f"of the day of week '{text.replace(chr(39), '')}' (Spark fails with "
                                      f"ILLEGAL_DAY_OF_WEEK)", "one of MO, TU, WE, TH, FR, SA, SU (or MON, MONDAY...)")
        return typed(fill(f"CASE WHEN {{d}} IS NULL THEN CAST(NULL AS DATE) ELSE {why} END", d=d), pa.date32())
    return typed(fill(f"CAST({{d}} + CAST((({target} - isodow({{d}})) + 6) % 7 + 1 AS INTEGER) AS DATE)", d=d), pa.date32())


def _date_add(node: exp.Expression, rules: Rules) -> "exp.Expression | None":
    """``date_add``/``dateadd`` of a timestamp or text: its date (in the session zone) plus days."""
    t = rules.type_of(node.this)
    if _is(t, pa.types.is_date32):
        return None  # DuckDB's date + days is Spark's
    return typed(fill("CAST({d} + CAST({n} AS INTEGER) AS DATE)", d=as_date(node.this, rules), n=node.expression),
                 pa.date32())


# -- months between ---------------------------------------------------------------------------------------------

def _months_between(node: exp.Expression, rules: Rules) -> exp.Expression:
    """Spark's ``monthsBetween``: whole months where the days of month are equal or both
    are the last; else the months plus the seconds between the days of month (counted
    from each local midnight) over 31 days' seconds; rounded half up to 8 digits."""
    sides = []
    for x in (node.this, node.expression):
        t = rules.type_of(x)
        if _is(t, pa.types.is_date32):
            sides.append((x, None))
        else:
            ts = as_timestamp(x, rules)
            d = fill("CAST({w} AS DATE)", w=local(ts, rules))
            start = from_local(fill("CAST({d} AS TIMESTAMP)", d=d), rules)
            secs = fill("(epoch_us(CAST({x} AS TIMESTAMP)) - epoch_us(CAST({s} AS TIMESTAMP))) // 1000000",
                        x=ts, s=start)
            sides.append((d, secs))
    (d1, s1), (d2, s2) = sides
    parts = {"d1": d1, "d2": d2, "s1": s1 if s1 is not None else exp.Literal.number(0),
             "s2": s2 if s2 is not None else exp.Literal.number(0)}
    months = "CAST((year({d1}) * 12 + month({d1})) - (year({d2}) * 12 + month({d2})) AS DOUBLE)"
    secs = "CAST((day({d1}) - day({d2})) * 86400 + {s1} - {s2} AS DOUBLE)"
    diff = f"({months} + {secs} / 2678400.0)"
    round_off = node.args.get("roundoff")
    if round_off is None or (isinstance(round_off, exp.Boolean) and round_off.this):
        diff = f"(floor({diff} * 100000000.0 + 0.5) / 100000000.0)"
    elif not isinstance(round_off, exp.Boolean):
        raise rules.refuse(node, "its roundOff is not a literal boolean", "true or false")
    body = (f"CASE WHEN day({{d1}}) = day({{d2}}) OR ({{d1}} = last_day({{d1}}) AND {{d2}} = last_day({{d2}})) "
            f"THEN {months} ELSE {diff} END")
    return typed(fill(body, **parts), pa.float64())


# -- time windows ------------------------------------------------------------------------------------------------

_UNITS = {"microsecond": 1, "millisecond": 1_000, "second": 1_000_000, "minute": 60_000_000,
          "hour": 3_600_000_000, "day": 86_400_000_000, "week": 7 * 86_400_000_000}


def _duration(node: exp.Expression, text: str, rules: Rules) -> int:
    """Microseconds of an interval string ("10 minutes", "1 hour 30 minutes", "interval 1 day")."""
    words = text.strip().lower().split()
    if words and words[0] == "interval":
        words = words[1:]
    if not words or len(words) % 2:
        raise rules.refuse(node, f"the duration '{text}' is not one strataflow reads", "'<n> <unit>' pairs, units "
                           "week, day, hour, minute, second, millisecond, microsecond")
    total = 0
    for n, unit in zip(words[::2], words[1::2]):
        unit = unit[:-1] if unit.endswith("s") else unit
        if not re.fullmatch(r"-?\d+", n) or unit not in _UNITS:
            raise rules.refuse(node, f"the duration '{text}' is not one strataflow reads", "'<n> <unit>' pairs, "
                               "units week, day, hour, minute, second, millisecond, microsecond")
        total += int(n) * _UNITS[unit]
    return total


def _window(node: exp.Expression, rules: Rules) -> exp.Expression:
    """A tumbling window: ``start`` the last multiple of the duration (shifted by
    ``startTime``) at or before the instant, ``end`` a duration later. Spark drops the
    rows whose time is null; here such a row is refused."""
    ts, *texts = node.expressions
    t = rules.type_of(ts)
    if not _is(t, pa.types.is_timestamp):
        raise rules.refuse(node, f"a time column of type {t}", "a timestamp column")
    durations = [_duration(node, literal_text(node, v, rules, "duration"), rules) for v in texts]
    size = durations[0]
    slide = durations[1] if len(durations) > 1 else size
    start = durations[2] if len(durations) > 2 else 0
    if size <= 0 or slide != size:
        raise rules.refuse(node, "a sliding window (each row in several windows)", "a tumbling window (no "
                           "slideDuration), or explode an array of the windows' starts")
    if abs(start) >= slide:
        raise AnalysisException("[DATATYPE_MISMATCH.PARAMETER_CONSTRAINT_VIOLATION] The absolute value of "
                                "startTime must be less than slideDuration.", "DATATYPE_MISMATCH")
    null = unsupported("window", "over a null time (Spark drops the row)", "filter the nulls first")
    us = "epoch_us(CAST({x} AS TIMESTAMP))"
    first = f"make_timestamp({us} - ((({us} - {start}) % {slide}) + {slide}) % {slide})"
    body = (f"CASE WHEN {{x}} IS NULL THEN {null} ELSE struct_pack(\"start\" := {first}, \"end\" := {first} + "
            f"to_microseconds({size})) END")
    return typed(fill(body, x=ts), pa.struct([("start", pa.timestamp("us")), ("end", pa.timestamp("us"))]))


def _window_time(node: exp.Expression, rules: Rules) -> exp.Expression:
    w = node.expressions[0]
    t = rules.type_of(w)
    if not (_is(t, pa.types.is_struct) and [f.name for f in t] == ["start", "end"]):
        raise rules.refuse(node, f"a column of type {t}", "the window column that window() makes")
    return typed(fill("struct_extract({w}, 'end') - INTERVAL 1 MICROSECOND", w=w), pa.timestamp("us"))


RULES = {exp.Dayname: _day_text("%a"), exp.Monthname: _day_text("%b"), exp.NextDay: _next_day,
         exp.MonthsBetween: _months_between, exp.TsOrDsAdd: _date_add, exp.Extract: extract_rule}
ANONYMOUS = {"weekday": _weekday, "date_part": extract_rule, "datepart": extract_rule, "extract": extract_rule,
             "window": _window, "window_time": _window_time}
REFUSE: dict = {}
