"""How a DataFrame prints: ``show()``'s table and ``collect()``'s Python values, as PySpark's.

``show`` casts each value to a string the way Spark's ``Dataset.showString`` does (nulls
as ``NULL``, booleans ``true``/``false``, doubles as Java prints them: ``1.0E7``,
``NaN``, ``Infinity``; arrays ``[1, 2]``, maps ``{a -> 1}``, structs ``{1, x}``), cuts
strings to 20 characters (17 and ``...``) unless ``truncate=False`` and right-aligns them
(left-aligns without truncation), as Spark does.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from typing import Any

import numpy as np
import pyarrow as pa

from strataflow.pyspark.sql.row import Row

__all__ = ["show_string", "to_rows", "cell", "in_zone", "zone_of"]


def _double(x: float, single: bool = False) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        r = repr(float(np.float32(x))) if single else repr(x)
        if single:
            r = np.format_float_positional(np.float32(x), unique=True, trim="0")
        return r if ("." in r or "e" in r) else r + ".0"
    text = np.format_float_scientific(np.float32(x) if single else x, unique=True, trim="0")
    mant, _, exp_ = text.partition("e")
    if "." not in mant or mant.endswith("."):
        mant = mant.rstrip(".") + ".0"
    return f"{mant}E{int(exp_)}"


def in_zone(v: dt.datetime, zone: "dt.tzinfo | None") -> dt.datetime:
    """A TimestampType value (a naive UTC instant, or an aware one) as the wall clock of
    the session's ``zone`` (None: UTC), as Spark shows and writes it."""
    if zone is None:
        return v if v.tzinfo is None else v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    aware = v if v.tzinfo is not None else v.replace(tzinfo=dt.timezone.utc)
    try:
        return aware.astimezone(zone).replace(tzinfo=None)
    except OverflowError:  # beyond Python's years in that zone: shown in UTC rather than not at all
        return aware.replace(tzinfo=None)


def zone_of(session: Any) -> "dt.tzinfo | None":
    """The session's ``spark.sql.session.timeZone`` (None for UTC)."""
    from zoneinfo import ZoneInfo

    name = str(session.conf.get("spark.sql.session.timeZone", "UTC") or "UTC")
    return None if name.upper() in ("UTC", "Z", "GMT", "ETC/UTC") else ZoneInfo(name)


def cell(v: Any, t: pa.DataType, zone: "dt.tzinfo | None" = None) -> str:
    """One value as ``show`` prints it (a timestamp in the session's ``zone``)."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return _double(v, pa.types.is_float32(t))
    if isinstance(v, dt.datetime):
        v = in_zone(v, zone)
        s = f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"
        return s + (f".{v.microsecond:06d}".rstrip("0") if v.microsecond else "")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return "[" + " ".join(f"{b:02X}" for b in v) + "]"
    if pa.types.is_map(t):
        return "{" + ", ".join(f"{cell(k, t.key_type, zone)} -> {cell(x, t.item_type, zone)}" for k, x in v) + "}"
    if pa.types.is_struct(t):
        return "{" + ", ".join(cell(v.get(f.name), f.type, zone) for f in t) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(cell(x, t.value_type, zone) for x in v) + "]"
    return str(v)


_META = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f", "\b": "\\b",
                       "\u000b": "\\v", "\u0007": "\\a"})
#: the characters Spark's ``Utils.stringHalfWidth`` counts twice (East Asian full width, BMP only)
_FULL_WIDTH = re.compile("[\u1100-\u115F\u2E80-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE10-\uFE19\uFE30-\uFE6F"
                         "\uFF00-\uFF60\uFFE0-\uFFE6]")


def _utf16(s: str) -> int:
    """Java's ``String.length``: UTF-16 code units (a character outside the BMP is two)."""
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


def _cut(s: str, units: int) -> str:
    """Java's ``substring(0, units)``; half of a surrogate pair prints as ``?``, as PySpark shows it."""
    out, n = [], 0
    for ch in s:
        w = 2 if ord(ch) > 0xFFFF else 1
        if n + w > units:
            if n < units:
                out.append("?")
            break
        out.append(ch)
        n += w
    return "".join(out)


def _truncated(s: str, width: int) -> str:
    if width and _utf16(s) > width:
        return _cut(s, width) if width < 4 else _cut(s, width - 3) + "..."
    return s


def show_string(table: pa.Table, names: list[str], n: int, truncate: "bool | int", vertical: bool,
                more: bool, zone: "dt.tzinfo | None" = None) -> str:
    """The text ``show`` prints (PySpark's ``_show_string``: Spark's ``showString``, whose
    last newline PySpark leaves out after "only showing top n rows"); timestamps in ``zone``."""
    width = 20 if truncate is True else int(truncate) if truncate else 0
    rows = []
    for row in zip(*[c.to_pylist() for c in table.columns]) if table.num_columns else [()] * table.num_rows:
        rows.append([_truncated(cell(v, f.type, zone).translate(_META), width) for v, f in zip(row, table.schema)])
    header = [h.translate(_META) for h in names]  # Spark truncates the cells, never the names
    footer = f"only showing top {n} {'row' if n == 1 else 'rows'}" if more else ""
    if vertical:
        return _vertical(header, rows, footer)
    widths = [max([3, _w(h)] + [_w(r[i]) for r in rows]) for i, h in enumerate(header)]
    sep = "+" + "+".join("-" * w for w in widths) + "+"

    def line(cells: list[str]) -> str:
        if width:
            return "|" + "|".join(" " * (w - _w(c)) + c for c, w in zip(cells, widths)) + "|"
        return "|" + "|".join(c + " " * (w - _w(c)) for c, w in zip(cells, widths)) + "|"

    out = [sep, line(header), sep, *(line(r) for r in rows), sep]
    return "\n".join(out) + ("\n" + footer if footer else "\n")


def _vertical(names: list[str], rows: list[list[str]], footer: str) -> str:
    if not rows:
        return "(0 rows)\n"
    key_w = max([3] + [_w(n) for n in names])
    val_w = max([3] + [_w(c) for r in rows for c in r])
    out = []
    for i, r in enumerate(rows):
        head = f"-RECORD {i}"
        out.append(head + "-" * max(0, key_w + val_w + 5 - len(head)))
        out += [f" {n}{' ' * (key_w - _w(n))} | {c}{' ' * (val_w - _w(c))} " for n, c in zip(names, r)]
    return "\n".join(out) + ("\n" + footer if footer else "\n")


def _w(s: str) -> int:
    """Display width as Spark's ``Utils.stringHalfWidth``: UTF-16 length plus one per full-width character."""
    return _utf16(s) + len(_FULL_WIDTH.findall(s))


def _py(v: Any, t: pa.DataType) -> Any:
    """A value from Arrow's ``to_pylist`` as PySpark collects it: structs as Rows, maps as dicts."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        return Row._of([f.name for f in t], [_py(v.get(f.name), f.type) for f in t])
    if pa.types.is_map(t):
        return {_py(k, t.key_type): _py(x, t.item_type) for k, x in v}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_py(x, t.value_type) for x in v]
    return v


def to_rows(table: pa.Table, names: list[str]) -> list[Row]:
    """The table's rows as PySpark's ``Row``s named ``names``."""
    cols = []
    for c in table.columns:
        values = c.to_pylist()
        if pa.types.is_struct(c.type) or pa.types.is_map(c.type) or pa.types.is_list(c.type):
            values = [_py(v, c.type) for v in values]
        cols.append(values)
    if not cols:
        return [Row._of([], ()) for _ in range(table.num_rows)]
    return [Row._of(names, vals) for vals in zip(*cols)]
