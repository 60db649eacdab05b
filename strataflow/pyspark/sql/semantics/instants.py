"""Timestamps as instants: moved between zones, counted from the epoch, made from fields,
and moved by units of time, as Spark's ``DateTimeUtils`` does it.

A timestamp is held as UTC wall clock (an instant); a calendar unit (a day, a month) is
added on the session zone's wall clock and read back as an instant, as Java's
``LocalDateTime.atZone`` reads it; a unit of time (an hour) is added to the instant.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.semantics.casts import cast_rule
from strataflow.pyspark.sql.semantics.core import Rules, spark_name_of, typed
from strataflow.pyspark.sql.semantics.template import fill
from strataflow.pyspark.sql.semantics.zones import from_local, from_local_in, local, local_in, zone_column, zone_of

__all__ = ["RULES", "ANONYMOUS", "REFUSE", "as_timestamp", "literal_text", "unsupported"]

_TS = pa.timestamp("us")


def literal_text(node: exp.Expression, arg: exp.Expression, rules: Rules, what: str) -> str:
    """The text of a literal string argument (refused where it is not one)."""
    if isinstance(arg, exp.Literal) and arg.is_string:
        return arg.this
    if isinstance(arg, exp.Var):
        return arg.name
    raise rules.refuse(node, f"its {what} is not a literal string", f"a literal {what}")


def unsupported(fn: str, why: str, instead: str) -> str:
    """DuckDB's ``error`` call for a row strataflow refuses (``STRATAFLOW_UNSUPPORTED``)."""
    text = (f"[STRATAFLOW_UNSUPPORTED] strataflow does not run `{fn}` {why}, so its answer could differ from "
            f"Spark's. Instead: {instead}.")
    return "error('" + text.replace("'", "''") + "')"


def as_timestamp(x: exp.Expression, rules: Rules) -> exp.Expression:
    """``x`` as Spark's implicit cast to timestamp gives it (a date is its midnight in the session zone)."""
    t = rules.type_of(x)
    if t is not None and pa.types.is_timestamp(t):
        return x
    return cast_rule(exp.Cast(this=x, to=exp.DataType.build("TIMESTAMP")), rules)


def _zone(node: exp.Expression, arg: exp.Expression, rules: Rules) -> "str | int":
    text = literal_text(node, arg, rules, "time zone")
    zone = zone_of(text)
    if zone is None:
        raise rules.refuse(node, f"the time zone '{text}' is not one strataflow reads", "a region name "
                           "(America/New_York) or an offset (+05:30)")
    return zone


# -- instants between zones -----------------------------------------------------------------------------------

def _from_utc(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``from_utc_timestamp``: the instant's wall clock in the zone, read as UTC (the
    session zone plays no part)."""
    x, z = as_timestamp(node.this, rules), node.args["zone"]
    if not (isinstance(z, exp.Literal) and z.is_string):
        return typed(zone_column(x, z, True, "from_utc_timestamp"), _TS)
    return typed(local_in(x, _zone(node, z, rules), rules), _TS)


def _to_utc(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``to_utc_timestamp``: the instant's UTC wall clock read in the zone."""
    x, z = as_timestamp(node.this, rules), node.args["zone"]
    if not (isinstance(z, exp.Literal) and z.is_string):
        return typed(zone_column(x, z, False, "to_utc_timestamp"), _TS)
    return typed(from_local_in(x, _zone(node, z, rules), rules), _TS)


# -- epoch numbers ------------------------------------------------------------------------------------------------

def _floor_div(x: str, n: int) -> str:
    return f"(({x}) - ((({x}) % {n}) + {n}) % {n}) // {n}"


def _epoch(unit: int):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        t = rules.type_of(node.this)
        if t is not None and pa.types.is_date32(t):
            raise AnalysisException(f"[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve "
                                    f"\"{spark_name_of(node)}\" due to data type mismatch: it requires a timestamp, "
                                    f"not a date.", "DATATYPE_MISMATCH")
        if not (t is not None and pa.types.is_timestamp(t)):
            raise rules.refuse(node, f"an argument of type {t}", "a timestamp")
        x = node.this
        us = "epoch_us(CAST({x} AS TIMESTAMP))"
        return typed(fill(f"CAST({_floor_div(us, unit) if unit > 1 else us} AS BIGINT)", x=x), pa.int64())

    return rule


def _unix_date(node: exp.Expression, rules: Rules) -> exp.Expression:
    x = node.this
    t = rules.type_of(x)
    if t is not None and pa.types.is_timestamp(t):
        x = fill("CAST({x} AS DATE)", x=local(x, rules))
    elif t is not None and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        raise AnalysisException(f"[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{spark_name_of(node)}\" "
                                f"due to data type mismatch: it requires a date, not a string.", "DATATYPE_MISMATCH")
    elif not (t is not None and pa.types.is_date32(t)):
        raise rules.refuse(node, f"an argument of type {t}", "a date")
    return typed(fill("CAST({x} - DATE '1970-01-01' AS INTEGER)", x=x), pa.int32())


def _date_from_unix_date(node: exp.Expression, rules: Rules) -> exp.Expression:
    x = node.this
    t = rules.type_of(x)
    if not (t is not None and pa.types.is_integer(t)):
        raise rules.refuse(node, f"an argument of type {t}", "an int count of days")
    n = cast_rule(exp.Cast(this=x, to=exp.DataType.build("INT")), rules)  # Spark's implicit cast to int
    return typed(fill("CAST(DATE '1970-01-01' + {n} AS DATE)", n=n), pa.date32())


#: the largest count of microseconds strataflow turns into a timestamp (DuckDB's range, about the year 294246)
_MAX_US = 9_214_646_400_000_000_000 - 1


def _from_epoch(unit: int, fn: str):
    """``timestamp_seconds`` (unit 1e6), ``timestamp_millis`` (1e3), ``timestamp_micros`` (1)."""

    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        x = node.expressions[0]
        t = rules.type_of(x)
        beyond = unsupported(fn, "beyond the year 294246 (Spark fails with DATETIME_OVERFLOW, or gives a year "
                                 "Python's datetime cannot hold)", "filter them first")
        if t is not None and pa.types.is_integer(t):
            limit = _MAX_US // unit
            us = f"CAST({{x}} AS BIGINT) * {unit}" if unit > 1 else "CAST({x} AS BIGINT)"
            body = f"CASE WHEN abs(CAST({{x}} AS HUGEINT)) > {limit} THEN {beyond} ELSE make_timestamp({us}) END"
        elif unit == 1_000_000 and t is not None and pa.types.is_decimal(t) and t.scale <= 6:
            body = (f"CASE WHEN abs({{x}}) > {_MAX_US // unit} THEN {beyond} "
                    f"ELSE make_timestamp(CAST({{x}} * 1000000 AS BIGINT)) END")
        elif unit == 1_000_000 and t is not None and pa.types.is_floating(t):
            body = (f"CASE WHEN isnan({{x}}) OR isinf({{x}}) THEN NULL WHEN abs(CAST({{x}} AS DOUBLE)) * 1000000 "
                    f"> {_MAX_US} THEN {beyond} ELSE make_timestamp(CAST(trunc(CAST({{x}} AS DOUBLE) * 1000000) "
                    f"AS BIGINT)) END")
        else:
            raise rules.refuse(node, f"an argument of type {t}", "an integer count")
        return typed(fill(body, x=x), _TS)

    return rule


# -- timestamps from fields ------------------------------------------------------------------------------------------

_FRACTION = ("[STRATAFLOW_UNSUPPORTED] strataflow does not run `make_timestamp` of seconds between 60 and 61 "
             "(Spark fails with INVALID_FRACTION_OF_SECOND, a class strataflow''s errors do not map yet), so its "
             "answer could differ from Spark''s. Instead: seconds in [0, 60].")


#: the days of month ``{mo}`` of year ``{y}`` in the proleptic Gregorian calendar (Java's)
_DAYS_IN_MONTH = ("(CASE WHEN {mo} = 2 THEN (CASE WHEN ({y} % 4 = 0 AND {y} % 100 <> 0) OR {y} % 400 = 0 THEN 29 "
                  "ELSE 28 END) WHEN {mo} IN (4, 6, 9, 11) THEN 30 ELSE 31 END)")


def _is_text(t: pa.DataType | None) -> bool:
    return t is not None and (pa.types.is_string(t) or pa.types.is_large_string(t))


def _lenient(rules: Rules) -> Rules:
    from dataclasses import replace

    return replace(rules, conf=replace(rules.conf, ansi=False))


def _make_timestamp(fn: str, fail: bool | None = None):
    """``make_timestamp`` and its kin: the wall clock of the fields (``secs`` a
    decimal(16,6); 60 with no fraction is the next minute) read in the zone argument or
    the session's; invalid fields an error under ANSI (``fail`` None), else null."""

    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        if isinstance(node, exp.TimestampFromParts):
            parts = [node.args.get(k) for k in ("year", "month", "day", "hour", "min", "sec")]
            extra = [v for k, v in node.args.items() if k not in ("year", "month", "day", "hour", "min", "sec")
                     and v is not None]
            parts += extra
        else:
            parts = list(node.expressions)
        if len(parts) not in (6, 7) or any(p is None for p in parts):
            raise rules.refuse(node, "its arguments are not six fields and a zone", "make_timestamp(y, mo, d, "
                               "h, mi, s[, zone])")
        zone_arg = parts[6] if len(parts) == 7 else None
        by_row = zone_arg is not None and not (isinstance(zone_arg, exp.Literal) and zone_arg.is_string)
        zone = rules.conf.tz if zone_arg is None or by_row else _zone(node, zone_arg, rules)
        ints = [cast_rule(exp.Cast(this=p, to=exp.DataType.build("INT")), rules) for p in parts[:5]]
        raw = parts[5]
        to_dec = exp.DataType.build("DECIMAL(16,6)")
        if _is_text(rules.type_of(raw)):
            sec, cast_bad = cast_rule(exp.Cast(this=raw, to=to_dec), rules), "false"
        else:  # the cast's overflow is raised below, in the rows' order with the fields' errors
            sec = cast_rule(exp.Cast(this=raw, to=to_dec), _lenient(rules))
            cast_bad = "({r} IS NOT NULL AND {s} IS NULL)" if rules.conf.ansi else "false"
        y, mo, d, h, mi = ints
        us = "CAST(CAST({s} AS DECIMAL(38,6)) * 1000000 AS BIGINT)"
        valid = (f"{{mo}} BETWEEN 1 AND 12 AND {{d}} BETWEEN 1 AND 31 AND {{y}} BETWEEN -290000 AND 290000 "
                 f"AND {{d}} <= {_DAYS_IN_MONTH} AND {{h}} BETWEEN 0 AND 23 "
                 f"AND {{mi}} BETWEEN 0 AND 59 AND ({us} BETWEEN 0 AND 59999999 OR {us} = 60000000)")
        wall = fill(f"CAST(make_date({{y}}, {{mo}}, {{d}}) AS TIMESTAMP) + to_microseconds((CAST({{h}} AS BIGINT) "
                    f"* 3600 + {{mi}} * 60) * 1000000 + {us})", y=y, mo=mo, d=d, h=h, mi=mi, s=sec)
        instant = zone_column(wall, zone_arg, False, fn) if by_row else from_local_in(wall, zone, rules)
        nulls = " OR ".join(f"{{{k}}} IS NULL" for k in ("y", "mo", "d", "h", "mi", "s"))
        fields_fail = rules.conf.ansi if fail is None else fail
        bad_fields = f"(NOT ({nulls}) AND NOT coalesce({valid}, false))" if fields_fail else "false"
        frac = f"{us} > 60000000 AND {us} < 61000000"
        message = (f"CASE WHEN {cast_bad} THEN '[NUMERIC_VALUE_OUT_OF_RANGE] The seconds cannot be represented as "
                   f"Decimal(16, 6). If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this "
                   f"error.' WHEN {frac} THEN '{_FRACTION}' ELSE '[DATETIME_FIELD_OUT_OF_BOUNDS] Invalid date or "
                   f"time field. If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error.' END")
        body = (f"CASE WHEN {cast_bad} OR {bad_fields} THEN error({message}) WHEN {nulls} THEN NULL "
                f"WHEN {valid} THEN {{t}} ELSE NULL END")
        return typed(fill(body, y=y, mo=mo, d=d, h=h, mi=mi, s=sec, r=raw, t=instant), _TS)

    return rule


# -- units of time ---------------------------------------------------------------------------------------------------

#: unit -> (months or days per unit, "months"/"days"), or microseconds per unit
_CALENDAR = {"YEAR": (12, "months"), "QUARTER": (3, "months"), "MONTH": (1, "months"), "WEEK": (7, "days"),
             "DAY": (1, "days"), "DAYOFYEAR": (1, "days")}
_TIME = {"HOUR": 3_600_000_000, "MINUTE": 60_000_000, "SECOND": 1_000_000, "MILLISECOND": 1_000, "MICROSECOND": 1}
#: the largest quantity of each unit strataflow adds (about 200,000 years)
_MOST = {"months": 2_400_000, "days": 73_000_000}


def _unit_parts(node: exp.Expression, rules: Rules) -> tuple[str, exp.Expression, exp.Expression]:
    """(unit, first, second) of ``timestampadd``/``timestampdiff`` written either way (the
    SQL syntax's node holds the second as ``this``)."""
    if isinstance(node, exp.Anonymous):
        unit, a, b = node.expressions
        return unit.name.upper(), a, b
    if node._meta and node.meta.get("written") in ("timestamp_add", "timestamp_diff"):
        raise AnalysisException(f"[UNRESOLVED_ROUTINE] Cannot resolve routine `{node.meta['written']}` on search "
                                f"path [`system`.`builtin`, `system`.`session`, `spark_catalog`.`default`].",
                                "UNRESOLVED_ROUTINE")
    unit = node.args.get("unit")
    return (unit.name if unit is not None else "DAY").upper(), node.expression, node.this


def _timestamp_add(node: exp.Expression, rules: Rules) -> exp.Expression:
    unit, n, x = _unit_parts(node, rules)
    ts = as_timestamp(x, rules)
    n = cast_rule(exp.Cast(this=n, to=exp.DataType.build("BIGINT")), rules)
    fn = "timestampadd"
    if unit in _CALENDAR:
        k, kind = _CALENDAR[unit]
        limit = _MOST[kind] // k
        moved = from_local(fill(f"CAST({{w}} AS TIMESTAMP) + to_{kind}(CAST({{n}} * {k} AS INTEGER))",
                                w=local(ts, rules), n=n), rules)
    elif unit in _TIME:
        limit = 6_300_000_000_000_000_000 // _TIME[unit]
        moved = fill(f"CAST({{x}} AS TIMESTAMP) + to_microseconds({{n}} * {_TIME[unit]})", x=ts, n=n)
    else:
        raise rules.refuse(node, f"the unit '{unit}'", "YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, "
                           "MILLISECOND or MICROSECOND")
    beyond = unsupported(fn, "beyond 200,000 years (Spark fails with DATETIME_OVERFLOW or gives a year Python's "
                             "datetime cannot hold)", "filter them first")
    guard = fill(f"CASE WHEN abs({{n}}) > {limit} THEN {beyond} ELSE {{m}} END", n=n, m=moved)
    return typed(guard, _TS)


def _trunc_div(x: str, n: int) -> str:
    return f"(({x}) // {n})"  # DuckDB's // truncates toward zero, as Java's /


def _timestamp_diff(node: exp.Expression, rules: Rules) -> exp.Expression:
    """Whole units from start to end on the session zone's wall clocks, as Java's
    ``ChronoUnit.between`` of two ``LocalDateTime``s counts them (toward zero)."""
    unit, a, b = _unit_parts(node, rules)
    w1, w2 = (local(as_timestamp(v, rules), rules) for v in (a, b))
    if unit in _TIME:
        body = _trunc_div("epoch_us(CAST({b} AS TIMESTAMP)) - epoch_us(CAST({a} AS TIMESTAMP))", _TIME[unit])
    elif unit in _CALENDAR:
        d1, d2 = "CAST({a} AS DATE)", "CAST({b} AS DATE)"
        t1 = "(epoch_us(CAST({a} AS TIMESTAMP)) - epoch_us(CAST(CAST({a} AS DATE) AS TIMESTAMP)))"
        t2 = "(epoch_us(CAST({b} AS TIMESTAMP)) - epoch_us(CAST(CAST({b} AS DATE) AS TIMESTAMP)))"
        end = (f"(CASE WHEN {d2} > {d1} AND {t2} < {t1} THEN {d2} - 1 WHEN {d2} < {d1} AND {t2} > {t1} "
               f"THEN {d2} + 1 ELSE {d2} END)")
        if _CALENDAR[unit][1] == "days":
            body = _trunc_div(f"CAST({end} - {d1} AS BIGINT)", _CALENDAR[unit][0])
        else:
            packed = "((CAST(year({d}) AS BIGINT) * 12 + month({d}) - 1) * 32 + day({d}))"
            months = _trunc_div(f"{packed.format(d=end)} - {packed.format(d=d1)}", 32)
            body = _trunc_div(months, _CALENDAR[unit][0])
    else:
        raise rules.refuse(node, f"the unit '{unit}'", "YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, "
                           "MILLISECOND or MICROSECOND")
    return typed(fill(f"CAST({body} AS BIGINT)", a=w1, b=w2), pa.int64())


# -- the session -------------------------------------------------------------------------------------------------------

def _current_timezone(node: exp.Expression, rules: Rules) -> exp.Expression:
    return typed(exp.Literal.string(rules.conf.tz), pa.string())


def _now(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``now()``: ``current_timestamp()`` (read as each partition's query starts)."""
    return typed(fill("CAST(timezone('UTC', current_timestamp) AS TIMESTAMP)"), _TS)


def _refuse(why: str, instead: str):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        raise rules.refuse(node, why, instead)

    return rule


_NTZ = ("strataflow's frames have no timestamp_ntz type (a timestamp is an instant there)",
        "the timestamp (instant) form: to_timestamp, make_timestamp, current_timestamp")
_INTERVAL = ("strataflow's frames have no interval types", "add units with timestamp_add, date_add or add_months")

RULES = {exp.AtTimeZone: _from_utc, exp.FromTimeZone: _to_utc, exp.UnixSeconds: _epoch(1_000_000),
         exp.UnixMillis: _epoch(1_000), exp.UnixMicros: _epoch(1), exp.UnixDate: _unix_date,
         exp.DateFromUnixDate: _date_from_unix_date, exp.TimestampFromParts: _make_timestamp("make_timestamp"),
         exp.TimestampAdd: _timestamp_add, exp.TimestampDiff: _timestamp_diff,
         exp.CurrentTimezone: _current_timezone}
ANONYMOUS = {"timestamp_seconds": _from_epoch(1_000_000, "timestamp_seconds"),
             "timestamp_millis": _from_epoch(1_000, "timestamp_millis"),
             "timestamp_micros": _from_epoch(1, "timestamp_micros"),
             "make_timestamp": _make_timestamp("make_timestamp"),
             "make_timestamp_ltz": _make_timestamp("make_timestamp_ltz"),
             "try_make_timestamp": _make_timestamp("try_make_timestamp", fail=False),
             "try_make_timestamp_ltz": _make_timestamp("try_make_timestamp_ltz", fail=False),
             "timestamp_add": _timestamp_add, "timestamp_diff": _timestamp_diff, "timestampadd": _timestamp_add,
             "timestampdiff": _timestamp_diff, "now": _now,
             "convert_timezone": _refuse(*_NTZ), "to_timestamp_ntz": _refuse(*_NTZ),
             "make_timestamp_ntz": _refuse(*_NTZ), "try_make_timestamp_ntz": _refuse(*_NTZ),
             "make_interval": _refuse(*_INTERVAL), "make_dt_interval": _refuse(*_INTERVAL),
             "make_ym_interval": _refuse(*_INTERVAL), "try_make_interval": _refuse(*_INTERVAL),
             "session_window": _refuse("a session spans rows (it grows while the next row is within the gap), which "
                                       "a per-row expression cannot see", "window() for fixed windows, or a "
                                       "window function over the rows ordered by time")}
REFUSE = {exp.ConvertTimezone: _NTZ, exp.Localtimestamp: _NTZ, exp.MakeInterval: _INTERVAL}
