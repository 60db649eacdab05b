"""Timestamps between UTC and the session time zone, and Spark's parsing of timestamp text.

A timestamp is held as UTC wall clock (an instant); Spark shows it, splits it into fields
and reads text into it in ``spark.sql.session.timeZone``.
"""

from __future__ import annotations

import re

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["local", "from_local", "parse_timestamp", "zone_of", "local_in", "from_local_in", "zone_column"]


def local(x: exp.Expression, rules: Rules) -> exp.Expression:
    """A timestamp (UTC wall clock) as wall clock in the session time zone."""
    tz = rules.conf.tz
    if tz.upper() in ("UTC", "GMT", "Z", "+00:00", "ETC/UTC"):
        return x
    return fill(f"timezone('{_quote(tz)}', timezone('UTC', CAST({{x}} AS TIMESTAMP)))", x=x)


def from_local(x: exp.Expression, rules: Rules) -> exp.Expression:
    """Wall clock in the session time zone as a timestamp (UTC wall clock). A wall clock
    that happens twice (the hour a DST change repeats) is its earlier instant, as Java's
    ``ZonedDateTime.of`` takes it; ICU takes the later one."""
    tz = rules.conf.tz
    if tz.upper() in ("UTC", "GMT", "Z", "+00:00", "ETC/UTC"):
        return x
    z = _quote(tz)
    later = f"timezone('UTC', timezone('{z}', CAST({{x}} AS TIMESTAMP)))"
    earlier = f"({later} - INTERVAL 1 HOUR)"
    return fill(f"CASE WHEN timezone('{z}', timezone('UTC', {earlier})) = CAST({{x}} AS TIMESTAMP) THEN {earlier} "
                f"ELSE {later} END", x=x)


def _quote(s: str) -> str:
    return s.replace("'", "''")


_TS = ("^([0-9]{4})(?:-([0-9]{1,2})(?:-([0-9]{1,2}))?)?"
       "(?:[ T]([0-9]{1,2}):([0-9]{1,2})(?::([0-9]{1,2})(?:\\.([0-9]{1,6}))?)?)?"
       "(Z|[+-][0-9]{2}(?::?[0-9]{2})?)?$")


def parse_timestamp(x: exp.Expression, rules: Rules) -> exp.Expression:
    """Spark's ``stringToTimestamp`` for the forms ``yyyy[-m[m][-d[d]]][ |T h[h]:m[m][:s[s][.f]]][Z|±hh[:mm]]``:
    without a zone, wall clock in the session time zone; anything else null."""
    s = "regexp_replace({x}, '^[\\x00-\\x20]+|[\\x00-\\x20]+$', '', 'g')"

    def g(i: int, default: str) -> str:
        return f"CAST(coalesce(nullif(regexp_extract({s}, '{_TS}', {i}), ''), '{default}') AS BIGINT)"

    micros = f"CAST(rpad(coalesce(nullif(regexp_extract({s}, '{_TS}', 7), ''), '0'), 6, '0') AS BIGINT)"
    wall = (f"try(make_timestamp({g(1, '0')}, {g(2, '1')}, {g(3, '1')}, {g(4, '0')}, {g(5, '0')}, "
            f"CAST({g(6, '0')} AS DOUBLE) + {micros} / 1000000.0))")
    zone = f"regexp_extract({s}, '{_TS}', 8)"
    offset = (f"(CASE WHEN {zone} = 'Z' THEN 0 ELSE (CASE WHEN left({zone}, 1) = '-' THEN -1 ELSE 1 END) * "
              f"(CAST(substr({zone}, 2, 2) AS BIGINT) * 60 + coalesce(TRY_CAST(right(replace({zone}, ':', ''), 2) "
              f"AS BIGINT) * (length(replace({zone}, ':', '')) > 3)::BIGINT, 0)) END)")
    zoned = fill(f"{wall} - to_minutes({offset})", x=x)
    plain = from_local(fill(wall, x=x), rules)
    return fill(f"CASE WHEN NOT regexp_full_match({s}, '{_TS}') THEN NULL WHEN {zone} = '' THEN {{p}} ELSE {{z}} END",
                x=x, p=plain, z=zoned)




#: Java's ``ZoneId.SHORT_IDS``, which Spark's ``getZoneId`` reads zone names through
_SHORT_IDS = {"ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires",
              "ART": "Africa/Cairo", "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka",
              "CAT": "Africa/Harare", "CNT": "America/St_Johns", "CST": "America/Chicago", "CTT": "Asia/Shanghai",
              "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis",
              "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan",
              "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico",
              "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh",
              "EST": "-05:00", "MST": "-07:00", "HST": "-10:00"}
#: names of the tz database's files that are not Java's zone IDs
_NOT_JAVA = frozenset({"Factory", "localtime", "posixrules", "posix", "right"})
_OFFSET = re.compile(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?")


def zone_of(text: str) -> "str | int | None":
    """Spark's ``getZoneId`` of ``text``: a region's name (str), a fixed offset from UTC
    in seconds (int), or None where Java knows no such zone."""
    import zoneinfo

    t = re.sub(r"^([+-])(\d):", r"\g<1>0\2:", text)
    t = _SHORT_IDS.get(t, t)
    if t in ("Z", "UTC", "GMT", "UT"):
        return 0
    m = _OFFSET.fullmatch(t)
    if m is not None:
        sign, h, mi, s = m.group(1), int(m.group(2)), int(m.group(3) or 0), int(m.group(4) or 0)
        if h > 18 or mi > 59 or s > 59:
            return None
        return (-1 if sign == "-" else 1) * (h * 3600 + mi * 60 + s)
    try:
        zoneinfo.ZoneInfo(t)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        return None
    return t if t in zoneinfo.available_timezones() - _NOT_JAVA else None


def _in_zone(rules: Rules, zone: str) -> Rules:
    from dataclasses import replace

    return replace(rules, conf=replace(rules.conf, tz=zone))


def local_in(x: exp.Expression, zone: "str | int", rules: Rules) -> exp.Expression:
    """A timestamp (UTC wall clock) as wall clock in ``zone`` (``zone_of``'s answer)."""
    if isinstance(zone, int):
        return x if zone == 0 else fill(f"CAST({{x}} AS TIMESTAMP) + to_seconds({zone})", x=x)
    return local(x, _in_zone(rules, zone))


def from_local_in(x: exp.Expression, zone: "str | int", rules: Rules) -> exp.Expression:
    """Wall clock in ``zone`` (``zone_of``'s answer) as a timestamp (UTC wall clock), as
    Java's ``LocalDateTime.atZone`` reads it."""
    if isinstance(zone, int):
        return x if zone == 0 else fill(f"CAST({{x}} AS TIMESTAMP) - to_seconds({zone})", x=x)
    return from_local(x, _in_zone(rules, zone))


def _zone_text(z: str) -> str:
    """DuckDB SQL of a zone name column ``z`` read as ``getZoneId`` reads it: short IDs
    mapped, ``+h:mm`` padded."""
    cases = " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in _SHORT_IDS.items())
    return f"(CASE {z} {cases} ELSE regexp_replace({z}, '^([+-])([0-9]):', '\\1' || '0' || '\\2:') END)"


def _offset_seconds(zt: str) -> str:
    """Seconds east of UTC of a fixed-offset zone text (null: a region, or not a zone)."""
    rx = "^(UTC|GMT|UT)?([+-])([0-9]{1,2})(:?([0-9]{2}))?(:?([0-9]{2}))?$"
    part = f"CAST(coalesce(nullif(regexp_extract({zt}, '{rx}', @), ''), '0') AS INTEGER)"
    fields = f"({part.replace('@', '3')} * 3600 + {part.replace('@', '5')} * 60 + {part.replace('@', '7')})"
    return (f"(CASE WHEN {zt} IN ('Z', 'UTC', 'GMT', 'UT') THEN 0 WHEN regexp_full_match({zt}, '{rx[1:-1]}') AND "
            f"{part.replace('@', '3')} <= 18 THEN (CASE WHEN regexp_extract({zt}, '{rx}', 2) = '-' THEN -1 ELSE 1 END) * "
            f"{fields} END)")


def _regions() -> str:
    import zoneinfo

    names = sorted(n for n in zoneinfo.available_timezones() - _NOT_JAVA if "'" not in n)
    return "[" + ", ".join(f"'{n}'" for n in names) + "]"


def zone_column(x: exp.Expression, z: exp.Expression, to_local: bool, fn: str) -> exp.Expression:
    """``local_in``/``from_local_in`` (``to_local``) for a zone that is a column: each
    row's zone read as Spark's ``getZoneId`` reads it; a name that is neither a region nor
    an offset refused on its row."""
    zt = _zone_text("{z}")
    off = _offset_seconds(zt)
    bad = (f"error('[STRATAFLOW_UNSUPPORTED] strataflow does not run `{fn}` of the time zone ' || {{z}} || "
           f"': not a region name or offset it reads, so its answer could differ from Spark''s. Instead: a region "
           f"name (America/New_York) or an offset (+05:30).')")
    if to_local:
        fixed = f"CAST({{x}} AS TIMESTAMP) + to_seconds({off})"
        region = f"CAST(timezone({zt}, timezone('UTC', CAST({{x}} AS TIMESTAMP))) AS TIMESTAMP)"
    else:
        fixed = f"CAST({{x}} AS TIMESTAMP) - to_seconds({off})"
        later = f"CAST(timezone('UTC', timezone({zt}, CAST({{x}} AS TIMESTAMP))) AS TIMESTAMP)"
        earlier = f"({later} - INTERVAL 1 HOUR)"
        region = (f"(CASE WHEN CAST(timezone({zt}, timezone('UTC', {earlier})) AS TIMESTAMP) = CAST({{x}} AS TIMESTAMP) "
                  f"THEN {earlier} ELSE {later} END)")
    return fill(f"CASE WHEN {{z}} IS NULL OR {{x}} IS NULL THEN NULL WHEN {off} IS NOT NULL THEN {fixed} "
                f"WHEN list_contains({_regions()}, {zt}) THEN {region} ELSE {bad} END", x=x, z=z)
