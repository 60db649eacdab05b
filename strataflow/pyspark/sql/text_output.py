"""The text ``df.write.csv`` and ``df.write.json`` make, byte for byte as Spark writes it
(recorded from PySpark in ``tests/goldens/readers``).

Why not pyarrow's CSV writer: it doubles a quote inside a quoted value where Spark escapes
it with a backslash, and Spark's own reader, like strataflow's, reads a doubled
quote as text: a file written that way came back with its quotes changed. So both writers
format each value as Spark's generators do: doubles as Java prints them (``1.0E7``),
timestamps ``2024-01-31T10:00:00.123Z`` (milliseconds and the offset), decimals plain.
CSV then trims blanks around a value, writes an empty string as ``""`` and null as
nothing, and quotes a value holding the delimiter, a quote or a line break; JSON leaves
nulls out of objects and writes NaN and the infinities as strings.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import pyarrow as pa

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.engine import as_table
from strataflow.pyspark.sql.show import cell

__all__ = ["csv_lines", "json_lines"]


def _timestamp(v: dt.datetime, zone: "dt.tzinfo | None") -> str:
    """Spark's default ``timestampFormat`` for writing, ``yyyy-MM-dd'T'HH:mm:ss.SSSXXX``, in
    the session's ``zone`` (``v`` a naive UTC instant, or an aware one)."""
    aware = (v if v.tzinfo is not None else v.replace(tzinfo=dt.timezone.utc)).astimezone(zone or dt.timezone.utc)
    offset = aware.utcoffset() or dt.timedelta(0)
    text = (f"{aware.year:04d}-{aware.month:02d}-{aware.day:02d}T{aware.hour:02d}:{aware.minute:02d}:"
            f"{aware.second:02d}.{aware.microsecond // 1000:03d}")
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _scalar_text(v: Any, t: pa.DataType, zone: "dt.tzinfo | None" = None) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return cell(v, t)
    if isinstance(v, dt.datetime):
        return _timestamp(v, zone)
    if isinstance(v, dt.date):
        return v.isoformat() if v.year >= 1000 else f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
    return str(v)


def _csv_field(v: Any, t: pa.DataType, o: Any, zone: "dt.tzinfo | None" = None) -> str:
    """One value as Spark's CSV writer (univocity, with ``o``'s settings) writes it."""
    if v is None:
        return o.null_value
    s = _scalar_text(v, t, zone)
    if o.trim_leading:
        s = s.lstrip(" \t\r\n\f\v\x00")
    if o.trim_trailing:
        s = s.rstrip(" \t\r\n\f\v\x00")
    if s == "":
        return o.empty_value
    q, esc = o.quote, o.escape
    if q is None:
        return s
    if o.quote_all or o.sep in s or q in s or "\n" in s or "\r" in s:
        if esc is not None:
            s = s.replace(esc, esc + esc) if esc != q else s
            s = s.replace(q, esc + q)
        return q + s + q
    return s


def csv_lines(o: Any, schema: pa.Schema, names: list[str], value: Any, zone: "dt.tzinfo | None" = None) -> list[str]:
    """One partition as CSV text by the writer options ``o`` (``writer_options``): a header
    line first with ``o.header``; timestamps in ``zone``."""
    t = as_table(value, schema)
    for f in t.schema:
        if pa.types.is_nested(f.type) or pa.types.is_binary(f.type):
            from strataflow.pyspark.sql.types import from_arrow

            raise AnalysisException(f"[UNSUPPORTED_DATA_TYPE_FOR_DATASOURCE] The CSV datasource doesn't support the "
                                    f"column `{f.name}` of the type \"{from_arrow(f.type).simpleString().upper()}\".",
                                    "UNSUPPORTED_DATA_TYPE_FOR_DATASOURCE")
    types = [f.type for f in t.schema]
    lines = [o.sep.join(_csv_field(n, pa.string(), o) for n in names)] if o.header else []
    cols = [c.to_pylist() for c in t.columns]
    lines += [o.sep.join(_csv_field(v, ty, o, zone) for v, ty in zip(row, types)) for row in zip(*cols)]
    if not lines:
        return []
    return [o.line_sep.join(lines) + ("" if o.line_sep == "\n" else o.line_sep)]


def _json_value(v: Any, t: pa.DataType, zone: "dt.tzinfo | None" = None) -> str:
    if v is None:
        return "null"
    if pa.types.is_struct(t):
        return "{" + ",".join(f"{json.dumps(f.name, ensure_ascii=False)}:{_json_value(v.get(f.name), f.type, zone)}"
                              for f in t if v.get(f.name) is not None) + "}"
    if pa.types.is_map(t):
        return "{" + ",".join(f"{json.dumps(_scalar_text(k, t.key_type), ensure_ascii=False)}:"
                              f"{_json_value(x, t.item_type, zone)}" for k, x in v) + "}"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return "[" + ",".join(_json_value(x, t.value_type, zone) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        text = cell(v, t)
        return json.dumps(text) if text in ("NaN", "Infinity", "-Infinity") else text
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        import base64

        return json.dumps(base64.b64encode(bytes(v)).decode())
    return json.dumps(_scalar_text(v, t, zone), ensure_ascii=False)


def json_lines(schema: pa.Schema, names: list[str], value: Any, zone: "dt.tzinfo | None" = None,
               nulls: bool = False) -> list[str]:
    """One partition as JSON lines: a null field left out, as Spark writes them (written
    as ``null`` with ``nulls``, Spark's ``ignoreNullFields=false``); timestamps in ``zone``."""
    t = as_table(value, schema)
    types = [f.type for f in t.schema]
    cols = [c.to_pylist() for c in t.columns]
    return ["{" + ",".join(f"{json.dumps(n, ensure_ascii=False)}:{_json_value(v, ty, zone)}"
                           for n, v, ty in zip(names, row, types) if nulls or v is not None) + "}"
            for row in zip(*cols)]
