"""Dates and timestamps as Spark reads them: a timestamp is an instant (held as UTC wall
clock) shown, split into fields and formatted in the session time zone; date fields are
``int`` (``dayofweek`` from 1 = Sunday); patterns are Java's ``DateTimeFormatter`` letters,
translated to strftime's, and a letter not translated is refused by name.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics import calendar, instants
from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.casts import cast_rule
from strataflow.pyspark.sql.semantics.template import fill
from strataflow.pyspark.sql.semantics.zones import from_local, local

__all__ = ["KEEP", "RULES", "REFUSE", "ANONYMOUS", "strftime_pattern"]


def _is_timestamp(t: pa.DataType | None) -> bool:
    return t is not None and pa.types.is_timestamp(t)


#: Spark's pattern letters (by run length) as strftime's, and the text each accepts when
#: parsing (Java's parser is strict: ``MM`` is two digits, ``M`` one or two)
_LETTERS = {"yyyy": ("%Y", "[0-9]{4}"), "MMMM": ("%B", "[A-Za-z]+"), "MMM": ("%b", "[A-Za-z]{3}"),
            "EEEE": ("%A", "[A-Za-z]+"), "EEE": ("%a", "[A-Za-z]{3}"), "SSSSSS": ("%f", "[0-9]{6}"),
            "SSS": ("%g", "[0-9]{3}"), "yy": ("%y", "[0-9]{2}"), "MM": ("%m", "[0-9]{2}"), "dd": ("%d", "[0-9]{2}"),
            "HH": ("%H", "[0-9]{2}"), "hh": ("%I", "[0-9]{2}"), "mm": ("%M", "[0-9]{2}"), "ss": ("%S", "[0-9]{2}"),
            "DDD": ("%j", "[0-9]{3}"), "M": ("%-m", "[0-9]{1,2}"), "d": ("%-d", "[0-9]{1,2}"),
            "H": ("%-H", "[0-9]{1,2}"), "h": ("%-I", "[0-9]{1,2}"), "m": ("%-M", "[0-9]{1,2}"),
            "s": ("%-S", "[0-9]{1,2}"), "a": ("%p", "(AM|PM|am|pm)")}
_RE_SPECIAL = set(".^$*+?()[]{}|\\")


def translate_pattern(pattern: str) -> tuple[str, str] | None:
    """A Spark datetime pattern as (strftime's letters, the regular expression of the text
    it parses); None where it has a letter (or a run of one) this translation does not know."""
    fmt, rx, i = [], [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                return None
            text = "'" if end == i + 1 else pattern[i + 1:end]
            fmt.append(text.replace("%", "%%"))
            rx.append("".join("\\" + ch if ch in _RE_SPECIAL else ch for ch in text))
            i = end + 1
            continue
        if c.isalpha():
            run = len(pattern) - i - len(pattern[i:].lstrip(c))
            hit = _LETTERS.get(pattern[i:i + run])
            if hit is None:
                return None
            fmt.append(hit[0])
            rx.append(hit[1])
            i += run
            continue
        fmt.append("%%" if c == "%" else c)
        rx.append("\\" + c if c in _RE_SPECIAL else c)
        i += 1
    return "".join(fmt), "".join(rx)


def strftime_pattern(pattern: str) -> str | None:
    """A Spark datetime pattern in strftime's letters (None: a letter not translated)."""
    got = translate_pattern(pattern)
    return None if got is None else got[0]


def _spark_pattern(text: str) -> str:
    """The Spark pattern the program wrote: sqlglot's Spark parser turns a pattern into
    strftime letters of its own (``%mstrict``), which its inverse mapping turns back."""
    if "%" not in text:
        return text
    from sqlglot.dialects.spark import Spark
    from sqlglot.time import format_time

    spark = Spark()
    return format_time(text, spark.INVERSE_TIME_MAPPING, spark.INVERSE_TIME_TRIE) or text


def _pattern(node: exp.Expression, arg: exp.Expression | None, rules: Rules, default: str) -> str:
    return _patterns(node, arg, rules, default)[0]


def _patterns(node: exp.Expression, arg: exp.Expression | None, rules: Rules, default: str) -> tuple[str, str]:
    """(strftime's pattern, the parse regex), quoted for SQL, of a Spark pattern argument."""
    if arg is None:
        f, r = translate_pattern(default)
        return f, r
    text = None
    if isinstance(arg, exp.Literal) and arg.is_string:
        text = _spark_pattern(arg.this)
    if text is None:
        raise rules.refuse(node, "its pattern is not a literal string", "a literal pattern")
    got = translate_pattern(text)
    if got is None:
        raise rules.refuse(node, f"the datetime pattern '{text}' has letters strataflow does not translate",
                           "the letters y M d H h m s S E a and quoted text")
    return got[0].replace("'", "''"), got[1].replace("'", "''")


def _parsed_wall(node: exp.Expression, x: exp.Expression, fmt: exp.Expression | None, rules: Rules,
                 default: str) -> exp.Expression:
    """The wall clock that text ``x`` in a Spark pattern reads as (Java's strict parse: the
    whole text, each field its width); null where it does not parse, ANSI's
    CANNOT_PARSE_TIMESTAMP error instead under ANSI mode."""
    f, r = _patterns(node, fmt, rules, default)
    wall = fill(f"CASE WHEN regexp_full_match({{x}}, '{r}') THEN CAST(try_strptime({{x}}, '{f}') AS TIMESTAMP) "
                f"ELSE NULL END", x=x)
    if not rules.conf.ansi:
        return wall
    return fill("CASE WHEN {x} IS NOT NULL AND {w} IS NULL THEN error('[CANNOT_PARSE_TIMESTAMP] Text cannot be "
                "parsed in the pattern. Use `try_to_timestamp` to tolerate invalid input string and return NULL "
                "instead.') ELSE {w} END", x=x, w=wall)


def _field(sql_fn: str, plus: int = 0):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        x = node.this
        inner = x.this if isinstance(x, exp.TsOrDsToDate) and not x.args.get("format") else x
        t = rules.type_of(inner)
        if pa.types.is_string(t) if t is not None else False:
            raise rules.refuse(node, "a string argument (Spark casts it to a date first)", "cast it to date first")
        arg = local(inner, rules) if _is_timestamp(t) else inner
        body = f"CAST({sql_fn}({{x}}) + {plus} AS INTEGER)" if plus else f"CAST({sql_fn}({{x}}) AS INTEGER)"
        return typed(fill(body, x=arg), pa.int32())

    return rule


def _time_field(sql_fn: str):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        x = node.this
        t = rules.type_of(x)
        if not _is_timestamp(t):
            raise rules.refuse(node, f"an argument of type {t}", "cast it to timestamp first")
        return typed(fill(f"CAST({sql_fn}({{x}}) AS INTEGER)", x=local(x, rules)), pa.int32())

    return rule


def _second(node: exp.Expression, rules: Rules) -> exp.Expression:
    x = node.this
    if not _is_timestamp(rules.type_of(x)):
        raise rules.refuse(node, "a non-timestamp argument", "cast it to timestamp first")
    return typed(fill("CAST(second({x}) AS INTEGER)", x=local(x, rules)), pa.int32())


def _add_months(node: exp.Expression, rules: Rules) -> exp.Expression:
    x, n = node.this, node.expression
    if not pa.types.is_date32(rules.type_of(x) or pa.null()):
        raise rules.refuse(node, "a non-date argument", "cast it to date first")
    return typed(fill("CAST({x} + to_months(CAST({n} AS INTEGER)) AS DATE)", x=x, n=n), pa.date32())


def _datediff(node: exp.Expression, rules: Rules) -> exp.Expression:
    end, start = node.this, node.expression
    parts = []
    for side in (end, start):
        inner = side.this if isinstance(side, exp.TsOrDsToDate) and not side.args.get("format") else side
        t = rules.type_of(inner)
        if _is_timestamp(t):
            parts.append(fill("CAST({x} AS DATE)", x=local(inner, rules)))
        elif t is not None and pa.types.is_date32(t):
            parts.append(inner)
        elif t is not None and pa.types.is_string(t):  # Spark's implicit cast of text to a date
            parts.append(cast_rule(exp.Cast(this=inner, to=exp.DataType.build("DATE")), rules))
        else:
            raise rules.refuse(node, f"an argument of type {t}", "cast it to date first")
    return typed(fill("CAST(date_diff('day', {s}, {e}) AS INTEGER)", s=parts[1], e=parts[0]), pa.int32())


def _to_date(node: exp.Expression, rules: Rules) -> exp.Expression:
    x, fmt = node.this, node.args.get("format")
    t = rules.type_of(x)
    if fmt is None:
        return cast_rule(exp.Cast(this=x, to=exp.DataType.build("DATE")), rules)
    return typed(fill("CAST({w} AS DATE)", w=_parsed_wall(node, x, fmt, rules, "yyyy-MM-dd")), pa.date32())


def _to_timestamp(node: exp.Expression, rules: Rules) -> exp.Expression:
    x, fmt = node.this, node.args.get("format")
    if fmt is None:
        return cast_rule(exp.Cast(this=x, to=exp.DataType.build("TIMESTAMP")), rules)
    return typed(from_local(_parsed_wall(node, x, fmt, rules, "yyyy-MM-dd HH:mm:ss"), rules), pa.timestamp("us"))


def _date_format(node: exp.Expression, rules: Rules) -> exp.Expression:
    x = node.this
    inner = x.this if isinstance(x, exp.TsOrDsToTimestamp) else x
    t = rules.type_of(inner)
    pattern = _pattern(node, node.args.get("format"), rules, "yyyy-MM-dd HH:mm:ss")
    if _is_timestamp(t):
        arg = local(inner, rules)
    elif t is not None and pa.types.is_date32(t):
        arg = fill("CAST({x} AS TIMESTAMP)", x=inner)
    else:
        raise rules.refuse(node, f"an argument of type {t}", "cast it to timestamp first")
    return typed(fill(f"strftime({{x}}, '{pattern}')", x=arg), pa.string())


def _from_unixtime(node: exp.Expression, rules: Rules) -> exp.Expression:
    x = node.this
    pattern = _pattern(node, node.args.get("format"), rules, "yyyy-MM-dd HH:mm:ss")
    ts = fill("CASE WHEN abs(CAST({x} AS HUGEINT)) > 9223372036854 THEN error('[STRATAFLOW_UNSUPPORTED] "
              "strataflow does not run `from_unixtime` of seconds beyond the year 294247 (Spark overflows). "
              "Instead: filter them first.') ELSE make_timestamp(CAST({x} AS BIGINT) * 1000000) END", x=x)
    return typed(fill(f"strftime({{t}}, '{pattern}')", t=local(ts, rules)), pa.string())


def _unix_timestamp(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``unix_timestamp``/``to_unix_timestamp``: seconds (rounded down) of a timestamp, a
    date's midnight in the session zone, or text read in the pattern."""
    x = node.this
    t = rules.type_of(x)
    if _is_timestamp(t) or (t is not None and pa.types.is_date32(t)):
        ts = x if _is_timestamp(t) else from_local(fill("CAST({x} AS TIMESTAMP)", x=x), rules)
        us = "epoch_us(CAST({t} AS TIMESTAMP))"
        return typed(fill(f"CAST({us} // 1000000 AS BIGINT)", t=ts),  # Java's /: toward zero
                     pa.int64())
    if not (pa.types.is_string(t) if t is not None else False):
        raise rules.refuse(node, f"an argument of type {t}", "unix_timestamp of a string with a pattern")
    wall = _parsed_wall(node, x, node.args.get("format"), rules, "yyyy-MM-dd HH:mm:ss")
    return typed(fill("CAST(floor(epoch_us({t}) / 1000000) AS BIGINT)", t=from_local(wall, rules)), pa.int64())


def _make_date(node: exp.Expression, rules: Rules) -> exp.Expression:
    y, m, d = node.expressions
    try_ = fill("try(make_date(CAST({y} AS BIGINT), CAST({m} AS BIGINT), CAST({d} AS BIGINT)))", y=y, m=m, d=d)
    if rules.conf.ansi:
        return typed(fill("CASE WHEN {y} IS NOT NULL AND {m} IS NOT NULL AND {d} IS NOT NULL AND {t} IS NULL THEN "
                          "error('[DATETIME_FIELD_OUT_OF_BOUNDS] Invalid date. If necessary set "
                          "\"spark.sql.ansi.enabled\" to \"false\" to bypass this error.') ELSE {t} END",
                          y=y, m=m, d=d, t=try_), pa.date32())
    return typed(try_, pa.date32())


def _trunc(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``trunc(date, unit)`` (DateTrunc) and ``date_trunc(unit, ts)`` (TimestampTrunc)."""
    x = node.this
    unit = node.args.get("unit")
    name = (unit.name if isinstance(unit, (exp.Var, exp.Literal, exp.Identifier)) else unit.sql() if unit else "")
    name = name.strip("'").lower()
    units = {"year": "year", "yyyy": "year", "yy": "year", "month": "month", "mon": "month", "mm": "month",
             "quarter": "quarter", "week": "week", "day": "day", "dd": "day", "hour": "hour", "minute": "minute",
             "second": "second"}
    if name not in units:
        raise rules.refuse(node, f"the unit '{name}'", "one of year, quarter, month, week, day, hour, minute, second")
    t = rules.type_of(x)
    if isinstance(node, exp.DateTrunc) and not isinstance(node, exp.TimestampTrunc):
        if units[name] not in ("year", "quarter", "month", "week"):
            return typed(fill("CAST(NULL AS DATE)"), pa.date32())
        if not (t is not None and pa.types.is_date32(t)):
            raise rules.refuse(node, f"an argument of type {t}", "cast it to date first")
        return typed(fill(f"CAST(date_trunc('{units[name]}', {{x}}) AS DATE)", x=x), pa.date32())
    if not _is_timestamp(t):
        raise rules.refuse(node, f"an argument of type {t}", "cast it to timestamp first")
    if units[name] in ("minute", "second") or (units[name] == "hour" and _whole_hours(rules.conf.tz)):
        return typed(fill(f"date_trunc('{units[name]}', {{x}})", x=x), pa.timestamp("us"))  # the same instant
    return typed(from_local(fill(f"date_trunc('{units[name]}', {{x}})", x=local(x, rules)), rules),
                 pa.timestamp("us"))


def _whole_hours(tz: str) -> bool:
    """Whether ``tz``'s offsets from UTC are whole hours (then an hour starts at the same
    instant in it as in UTC), judged over its transitions since 1900."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    try:
        zone = ZoneInfo(tz)
    except Exception:  # noqa: BLE001 - an unknown zone: DuckDB will name it
        return False
    for year in range(1900, 2040, 2):
        for month in (1, 7):
            off = dt.datetime(year, month, 1, tzinfo=zone).utcoffset()
            if off is None or off.total_seconds() % 3600:
                return False
    return True


RULES = {
    exp.Year: _field("year"), exp.Month: _field("month"), exp.DayOfMonth: _field("day"),
    exp.DayOfWeek: _field("dayofweek", plus=1), exp.DayOfYear: _field("dayofyear"), exp.Quarter: _field("quarter"),
    exp.WeekOfYear: _field("weekofyear"), exp.Hour: _time_field("hour"), exp.Minute: _time_field("minute"),
    exp.Second: _second, exp.AddMonths: _add_months, exp.DateDiff: _datediff, exp.TsOrDsToDate: _to_date,
    exp.StrToTime: _to_timestamp, exp.TimeToStr: _date_format, exp.UnixToStr: _from_unixtime,
    exp.StrToUnix: _unix_timestamp, exp.DateTrunc: _trunc, exp.TimestampTrunc: _trunc,
}
REFUSE: dict = {}
ANONYMOUS = {"make_date": _make_date}


def _last_day(node: exp.Expression, rules: Rules) -> exp.Expression:
    x = node.this
    inner = x.this if isinstance(x, exp.TsOrDsToDate) and not x.args.get("format") else x
    t = rules.type_of(inner)
    arg = fill("CAST({x} AS DATE)", x=local(inner, rules)) if _is_timestamp(t) else inner
    return typed(fill("last_day({x})", x=arg), pa.date32())


RULES[exp.LastDay] = _last_day


def _as_timestamp(node: exp.Expression, rules: Rules) -> exp.Expression:
    """sqlglot's conversion of a ``date_format`` argument: Spark's cast to timestamp."""
    if node.args.get("format") is not None:
        raise rules.refuse(node, "a format", "to_timestamp(col, format)")
    return cast_rule(exp.Cast(this=node.this, to=exp.DataType.build("TIMESTAMP")), rules)


RULES[exp.TimeStrToTime] = _as_timestamp
RULES[exp.Day] = _field("day")




def _now(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``current_timestamp()`` as an instant (UTC wall clock) and ``current_date()`` as the
    date in the session time zone. Each partition's query reads the clock as it starts,
    where Spark reads it once per query: partitions may differ by the time between them."""
    now = fill("CAST(timezone('UTC', current_timestamp) AS TIMESTAMP)")
    if isinstance(node, exp.CurrentDate):
        return typed(fill("CAST({t} AS DATE)", t=local(now, rules)), pa.date32())
    return typed(now, pa.timestamp("us"))


RULES[exp.CurrentTimestamp] = _now
RULES[exp.CurrentDate] = _now



def _lenient(rules: Rules) -> Rules:
    """``rules`` with ANSI mode off: the ``try_`` functions' null for text that does not parse."""
    from dataclasses import replace

    return replace(rules, conf=replace(rules.conf, ansi=False))


def _text_to(kind: str, lenient: bool):
    """``try_to_timestamp``, ``to_timestamp_ltz`` (``kind`` timestamp) and ``try_to_date``
    (date): the ``to_timestamp``/``to_date`` of the text (null where it does not parse,
    for the ``try_`` ones, whatever the ANSI mode)."""

    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        x, fmt = (list(node.expressions) + [None])[:2]
        r = _lenient(rules) if lenient else rules
        if fmt is None:
            return cast_rule(exp.Cast(this=x, to=exp.DataType.build(kind.upper())), r)
        if kind == "date":
            return typed(fill("CAST({w} AS DATE)", w=_parsed_wall(node, x, fmt, r, "yyyy-MM-dd")), pa.date32())
        return typed(from_local(_parsed_wall(node, x, fmt, r, "yyyy-MM-dd HH:mm:ss"), r), pa.timestamp("us"))

    return rule


ANONYMOUS.update({"try_to_timestamp": _text_to("timestamp", True), "try_to_date": _text_to("date", True),
                  "to_timestamp_ltz": _text_to("timestamp", False)})

#: the family's other modules' tables, merged into this one's (``registry`` reads this module's)
for _part in (instants, calendar):
    RULES.update(_part.RULES)
    ANONYMOUS.update(_part.ANONYMOUS)
    REFUSE.update(_part.REFUSE)

#: kinds whose DuckDB answer the suite found equal to Spark's (merged by ``registry``)
KEEP: frozenset[type] = frozenset()
