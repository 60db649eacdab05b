"""Spark's datetime patterns (``dateFormat``, ``timestampFormat``) as parsers, and Spark's
lenient default parsing of dates and timestamps when no pattern is given.

Spark's patterns are ``java.time.DateTimeFormatter``'s letters (``yyyy-MM-dd HH:mm:ss.SSS``),
not strftime's: ``MM`` is a month and ``mm`` a minute, ``SSS`` a fraction of a second, text
in quotes is literal. A pattern becomes one regular expression matched against the
whole value (a parse that leaves text over fails, as Java's does) and the fields are
checked as ``java.time`` checks them (month 13 or February 30 fail: the value is null,
never a date of another day). The letters of the common patterns are translated; any
other letter (week-based years, era, quarter, day of week names...) is refused by name
with :class:`UnsupportedOperation`, never read as something else.

Without a pattern Spark falls back to ``DateTimeUtils.stringToDate`` / ``stringToTimestamp``:
``yyyy[-[m]m[-[d]d]]`` and, for timestamps, an optional ``T`` or space, ``[h]h:[m]m[:[s]s[.fraction]]``
and a zone (``Z``, ``+hh:mm``, ``UTC``, a region such as ``Europe/Oslo``); a zone-less
timestamp is in the session's time zone.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Callable
from zoneinfo import ZoneInfo

from strataflow.pyspark.errors import UnsupportedOperation

__all__ = ["date_parser", "timestamp_parser", "DEFAULT_DATE_PATTERN"]

DEFAULT_DATE_PATTERN = "yyyy-MM-dd"

_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"]
_NUMERIC = {  # letter -> (group name, regex by count: 1 letter, 2 letters)
    "M": ("month", r"\d{1,2}", r"\d{2}"), "d": ("day", r"\d{1,2}", r"\d{2}"), "H": ("hour", r"\d{1,2}", r"\d{2}"),
    "h": ("hour12", r"\d{1,2}", r"\d{2}"), "m": ("minute", r"\d{1,2}", r"\d{2}"),
    "s": ("second", r"\d{1,2}", r"\d{2}"), "D": ("doy", r"\d{1,3}", r"\d{2,3}"),
}
_ZONE = r"(?P<zone>Z|[+-]\d{2}(?::?\d{2})?|UTC|GMT|[A-Za-z]+/[A-Za-z_]+)"


def _compile(pattern: str, option: str) -> re.Pattern:
    """The regular expression of a Spark datetime pattern; unsupported letters refused."""
    out, i, seen = [], 0, set()
    while i < len(pattern):
        ch = pattern[i]
        if ch == "'":
            j = pattern.find("'", i + 1)
            if j < 0:
                raise UnsupportedOperation(f"[INVALID_DATETIME_PATTERN] {option} {pattern!r}: an unclosed quote")
            text = pattern[i + 1:j] or "'"
            out.append(re.escape(text))
            i = j + 1
            continue
        if ch in "[]":  # an optional section
            out.append("(?:" if ch == "[" else ")?")
            i += 1
            continue
        if not ch.isalpha():
            out.append(re.escape(ch))
            i += 1
            continue
        j = i
        while j < len(pattern) and pattern[j] == ch:
            j += 1
        n = j - i
        i = j
        if ch in seen:
            raise UnsupportedOperation(f"[INVALID_DATETIME_PATTERN] {option} {pattern!r}: the letter {ch!r} twice")
        seen.add(ch)
        if ch in ("y", "u"):
            out.append(r"(?P<year2>\d{2})" if n == 2 else r"(?P<year>[+-]?\d{4,})" if n != 1 else r"(?P<year>\d{1,})")
        elif ch == "M" and n >= 3:
            names = "|".join(m[:3] if n == 3 else m for m in _MONTHS)
            out.append(f"(?P<monthname>(?i:{names}))")
        elif ch in _NUMERIC and n <= 2:
            name, one, two = _NUMERIC[ch]
            out.append(f"(?P<{name}>{one if n == 1 else two})")
        elif ch == "D" and n == 3:
            out.append(r"(?P<doy>\d{3})")
        elif ch == "S" and n <= 9:
            out.append(rf"(?P<fraction>\d{{1,{n}}})")
        elif ch == "a" and n == 1:
            out.append(r"(?P<ampm>(?i:AM|PM))")
        elif ch in ("X", "x", "Z") or (ch == "V" and n == 2) or (ch == "z" and n <= 3):
            out.append(_ZONE)
        else:
            raise UnsupportedOperation(
                f"[INVALID_DATETIME_PATTERN] {option} {pattern!r}: the pattern letter {ch * n!r} is not supported "
                f"by strataflow's readers (supported: y, M/MM/MMM/MMMM, d, D, H, h, a, m, s, S..., X/Z/VV zones and "
                f"'quoted text'); read the column as a string and convert it with to_timestamp")
    return re.compile("".join(out))


def _zone(text: str | None, default: dt.tzinfo) -> dt.tzinfo:
    if not text:
        return default
    if text in ("Z", "UTC", "GMT"):
        return dt.timezone.utc
    m = re.fullmatch(r"([+-])(\d{1,2}):?(\d{2})?", text)
    if m:
        delta = dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
        if delta > dt.timedelta(hours=18):
            raise ValueError(f"zone offset {text!r} out of range")
        return dt.timezone(delta if m.group(1) == "+" else -delta)
    try:
        return ZoneInfo(text)
    except (KeyError, ValueError) as exc:  # ZoneInfoNotFoundError is a KeyError
        raise ValueError(f"unknown time zone {text!r}") from exc


def _fields(m: re.Match, zone: dt.tzinfo) -> dt.datetime:
    """The instant a pattern's match names (ValueError for an impossible date or time)."""
    try:
        return _instant(m.groupdict(), zone)
    except OverflowError as exc:  # a year out of Python's range: not a date, as out of Spark's
        raise ValueError(str(exc)) from None


def _python_year(year: int) -> int:
    """``year`` where Python's dates hold it; a year Spark reads (it goes to +294247) that
    Python cannot hold is refused by name, never read as a null."""
    if not -290308 <= year <= 294247:
        raise ValueError(f"the year {year} is out of Spark's range too")  # null, as Spark's
    if not 1 <= year <= 9999:
        raise UnsupportedOperation(f"strataflow does not read the year {year} as a date or timestamp: Spark does, "
                                   f"but Python's dates stop at 1..9999. Read the column as a string (schema) and "
                                   f"filter or cast what fits.")
    return year


def _instant(g: dict, zone: dt.tzinfo) -> dt.datetime:
    year = _python_year(int(g["year"]) if g.get("year") else 2000 + int(g["year2"]) if g.get("year2") else 1970)
    month = int(g["month"]) if g.get("month") else (
        [n[:len(g["monthname"])] if len(g["monthname"]) == 3 else n for n in _MONTHS].index(g["monthname"].lower()) + 1
        if g.get("monthname") else 1)
    if g.get("doy"):
        base = dt.date(year, 1, 1) + dt.timedelta(days=int(g["doy"]) - 1)
        if base.year != year or (g.get("month") and base.month != month):
            raise ValueError("day of year out of range")
        month, day = base.month, base.day
    else:
        day = int(g["day"]) if g.get("day") else 1
    hour = int(g["hour"]) if g.get("hour") else 0
    if g.get("hour12"):
        h12 = int(g["hour12"])
        if not 1 <= h12 <= 12:
            raise ValueError("clock hour of am/pm out of range")
        hour = h12 % 12 + (12 if (g.get("ampm") or "AM").upper() == "PM" else 0)
    frac = g.get("fraction") or ""
    micro = int((frac + "000000")[:6]) if frac else 0
    out = dt.datetime(year, month, day, hour, int(g.get("minute") or 0), int(g.get("second") or 0), micro)
    return out.replace(tzinfo=_zone(g.get("zone"), zone))


_LENIENT_DATE = re.compile(r"\s*([+-]?\d{4,})(?:-(\d{1,2})(?:-(\d{1,2})(?:[T ].*)?)?)?\s*", re.S)
_LENIENT_TS = re.compile(
    r"\s*(?P<year>[+-]?\d{4,})(?:-(?P<month>\d{1,2})(?:-(?P<day>\d{1,2})"
    r"(?:[T ](?:(?P<hour>\d{1,2}):(?P<minute>\d{1,2})(?::(?P<second>\d{1,2})(?:\.(?P<fraction>\d{1,9}))?)?)?"
    r"\s*" + _ZONE.replace("(?P<zone>", "(?P<zone>[+-]\\d{1,2}|") + r"?)?)?)?\s*")


def date_parser(pattern: str | None, option: str = "dateFormat") -> Callable[[str], dt.date]:
    """A function from text to a date (ValueError when the text is not one): ``pattern``
    Spark's, or None for Spark's lenient default (``yyyy-MM-dd`` then ``stringToDate``)."""
    if pattern is None:
        return _lenient_date
    rx = _compile(pattern, option)

    def parse(text: str) -> dt.date:
        m = rx.fullmatch(text)
        if m is None:
            raise ValueError(f"{text!r} does not match {pattern!r}")
        return _fields(m, dt.timezone.utc).date()

    return parse


def _lenient_date(text: str) -> dt.date:
    m = _LENIENT_DATE.fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is not a date")
    try:
        return dt.date(_python_year(int(m.group(1))), int(m.group(2) or 1), int(m.group(3) or 1))
    except OverflowError as exc:
        raise ValueError(str(exc)) from None


def timestamp_parser(pattern: str | None, zone: dt.tzinfo, option: str = "timestampFormat"
                     ) -> Callable[[str], dt.datetime]:
    """A function from text to an aware datetime (ValueError when the text is not one);
    a value without a zone is in ``zone`` (the session's)."""
    if pattern is None:
        def lenient(text: str) -> dt.datetime:
            m = _LENIENT_TS.fullmatch(text)
            if m is None:
                raise ValueError(f"{text!r} is not a timestamp")
            return _fields(m, zone)

        return lenient
    rx = _compile(pattern, option)

    def parse(text: str) -> dt.datetime:
        m = rx.fullmatch(text)
        if m is None:
            raise ValueError(f"{text!r} does not match {pattern!r}")
        return _fields(m, zone)

    return parse
