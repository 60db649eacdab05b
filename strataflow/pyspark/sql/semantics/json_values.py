"""JSON text read and written as Spark's Jackson does, in Python: the row-by-row
functions behind ``get_json_object``, ``json_array_length``, ``json_object_keys``,
``to_json``, ``from_json`` and ``schema_of_json`` (``structured`` binds them as UDFs).

Jackson keeps a JSON object's fields in order, duplicates included, and writes a number
as Java does (``Double.toString``: ``1.0E300``, ``1.0E-4``; ``BigDecimal.toString``),
a string with only the characters JSON requires escaped, and no spaces.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from decimal import Decimal
from typing import Any

__all__ = ["Raw", "parse", "java_double", "java_float", "write", "get_json_object", "parse_path",
           "json_array_length", "json_object_keys", "infer_ddl"]


class Raw(str):
    """A JSON number kept as its text (what Jackson reads it as is decided by the reader)."""


class _Pairs(list):
    """A JSON object: its (name, value) pairs in order, duplicates kept."""


def _invalid_constant(text: str) -> Any:
    raise ValueError(f"not JSON: {text}")


_DECODER = json.JSONDecoder(object_pairs_hook=_Pairs, parse_float=Raw, parse_int=lambda s: Raw(s),
                            parse_constant=_invalid_constant)
_WS = " \t\n\r"


def parse(text: str) -> Any:
    """The first JSON value of ``text`` (Jackson reads one value and stops), numbers as
    :class:`Raw`, objects as pairs; ValueError where there is none."""
    s = text.lstrip(_WS)
    value, end = _DECODER.raw_decode(s)
    if isinstance(value, Raw) and end < len(s) and s[end] not in _WS:
        raise ValueError("a root-level number must end at a space")  # Jackson: 0x10, 007
    return value


def _java_digits(d: Decimal) -> str:
    """Java's ``Double.toString`` layout of a shortest-digits decimal."""
    sign = "-" if d.is_signed() else ""
    t = abs(d).as_tuple()
    digits = "".join(map(str, t.digits))
    e10 = len(digits) + t.exponent - 1
    digits = digits.rstrip("0") or "0"
    if -3 <= e10 < 7:
        if e10 >= 0:
            whole = digits[:e10 + 1].ljust(e10 + 1, "0")
            frac = digits[e10 + 1:] or "0"
            return f"{sign}{whole}.{frac}"
        return f"{sign}0.{'0' * (-e10 - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{e10}"


def java_double(x: float) -> str:
    """Java's ``Double.toString``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    return _java_digits(Decimal(repr(x)))


def java_float(x: float) -> str:
    """Java's ``Float.toString`` (the shortest digits of the 32-bit value)."""
    import numpy as np

    if math.isnan(x) or math.isinf(x) or x == 0:
        return java_double(x)
    return _java_digits(Decimal(np.format_float_scientific(np.float32(x), unique=True, trim="-")))


def _string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _number_text(v: Raw) -> str:
    """A number as Jackson copies it: an integer as written, a fraction through double."""
    if re.fullmatch(r"-?[0-9]+", v):
        return str(int(v))
    return java_double(float(v))


def write(v: Any) -> str:
    """A parsed value (``parse``) as Jackson writes it back: compact, numbers as Java's."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, Raw):
        return _number_text(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, _Pairs):
        return "{" + ",".join(f"{_string(k)}:{write(x)}" for k, x in v) + "}"
    return "[" + ",".join(write(x) for x in v) + "]"


# -- get_json_object ------------------------------------------------------------------------------------
_STEP = re.compile(r"\.([^.\[\]]+)|\['([^']*)'\]|\[([0-9]+)\]")


def parse_path(path: str) -> list | None:
    """Spark's JSON path (``$``, ``.name``, ``['name']``, ``[index]``) as steps; None where
    it is not one (Spark's answer is then null); ``"*"`` marks a wildcard."""
    if not path.startswith("$"):
        return None
    steps, i = [], 1
    while i < len(path):
        m = _STEP.match(path, i)
        if m is None:
            if path.startswith(("[*]", ".*"), i):
                steps.append("*")
                i += 3 if path[i] == "[" else 2
                continue
            return None
        name, quoted, index = m.groups()
        steps.append(int(index) if index is not None else (name if name is not None else quoted))
        i = m.end()
    return steps


def get_json_object(text: str | None, steps: list | None) -> str | None:
    """The value at ``steps`` of the JSON ``text``: a string's own text, any other value as
    JSON; None where the text is not JSON or nothing is there."""
    if text is None or steps is None:
        return None
    try:
        v = parse(text)
    except ValueError:
        return None
    for step in steps:
        if isinstance(step, int):
            if not isinstance(v, list) or isinstance(v, _Pairs) or step >= len(v):
                return None
            v = v[step]
        else:
            if not isinstance(v, _Pairs):
                return None
            hits = [x for k, x in v if k == step]
            if not hits:
                return None
            v = hits[0]
    if v is None:
        return None if steps else "null"  # the whole text's null is the text 'null'; a field's is null
    if isinstance(v, str) and not isinstance(v, Raw):
        return v
    return write(v)


def json_array_length(text: str | None) -> int | None:
    """The number of elements of a JSON array; None for anything else or text that is not JSON."""
    if text is None:
        return None
    try:
        v = parse(text)
    except ValueError:
        return None
    return len(v) if isinstance(v, list) and not isinstance(v, _Pairs) else None


def json_object_keys(text: str | None) -> list | None:
    """The field names of a JSON object, in order; None for anything else."""
    if text is None:
        return None
    try:
        v = parse(text)
    except ValueError:
        return None
    return [k for k, _ in v] if isinstance(v, _Pairs) else None


# -- schema_of_json -------------------------------------------------------------------------------------
_ORDER = ["NULL", "BIGINT", "DECIMAL", "DOUBLE", "STRING"]
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _infer(v: Any) -> Any:
    if v is None:
        return "NULL"
    if v is True or v is False:
        return "BOOLEAN"
    if isinstance(v, Raw):
        if re.fullmatch(r"-?[0-9]+", v):
            return "BIGINT" if -2 ** 63 <= int(v) < 2 ** 63 else ("DECIMAL", len(v.lstrip("-")), 0)
        return "DOUBLE"
    if isinstance(v, str):
        return "STRING"
    if isinstance(v, _Pairs):  # every field, a name given twice included, in the order of the names
        return ("STRUCT", tuple(sorted(((k, _infer(x)) for k, x in v), key=lambda kv: kv[0])))
    out: Any = "NULL"
    for x in v:
        out = _merge(out, _infer(x))
    return ("ARRAY", out)


def _merge(a: Any, b: Any) -> Any:
    if a == b:
        return a
    if a == "NULL":
        return b
    if b == "NULL":
        return a
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] == "STRUCT":
        fields = dict(a[1])
        for k, t in b[1]:
            fields[k] = _merge(fields[k], t) if k in fields else t
        return ("STRUCT", tuple(sorted(fields.items())))
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] == "ARRAY":
        return ("ARRAY", _merge(a[1], b[1]))
    nums = {"BIGINT", "DOUBLE"}
    if a in nums and b in nums:
        return "DOUBLE"
    return "STRING"


def _ddl(t: Any) -> str:
    if t == "NULL":
        return "STRING"
    if isinstance(t, tuple) and t[0] == "ARRAY":
        return f"ARRAY<{_ddl(t[1])}>"
    if isinstance(t, tuple) and t[0] == "STRUCT":
        return "STRUCT<" + ", ".join(f"{k if _PLAIN.fullmatch(k) else '`' + k.replace('`', '``') + '`'}: {_ddl(x)}"
                                     for k, x in t[1]) + ">"
    if isinstance(t, tuple) and t[0] == "DECIMAL":
        return f"DECIMAL({t[1]},{t[2]})"
    return t


def infer_ddl(text: str) -> str | None:
    """Spark's ``schema_of_json`` of one JSON text: its inferred type as DDL; None where
    the text is not JSON."""
    try:
        return _ddl(_infer(parse(text)))
    except ValueError:
        return None


# -- to_json ---------------------------------------------------------------------------------------------
def writer(t: Any, tz: str, ignore_null_fields: bool = True) -> Any:
    """A function writing a value of Arrow type ``t`` (as ``to_pylist`` gives it) as Spark's
    ``to_json`` does: a struct's null fields left out (``ignore_null_fields``), timestamps in the session zone ``tz``
    as ``yyyy-MM-dd'T'HH:mm:ss.SSSXXX``, binary as base64; None where ``t`` is a type this
    does not write."""
    import base64
    from zoneinfo import ZoneInfo

    import pyarrow as pa

    if pa.types.is_struct(t):
        fields = [(t.field(i).name, writer(t.field(i).type, tz, ignore_null_fields)) for i in range(t.num_fields)]
        if any(w is None for _, w in fields):
            return None
        if not ignore_null_fields:
            return lambda v: "{" + ",".join(f"{_string(k)}:{'null' if v[k] is None else w(v[k])}"
                                            for k, w in fields) + "}"
        return lambda v: "{" + ",".join(f"{_string(k)}:{w(v[k])}" for k, w in fields if v[k] is not None) + "}"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        w = writer(t.value_type, tz, ignore_null_fields)
        return None if w is None else lambda v: "[" + ",".join("null" if x is None else w(x) for x in v) + "]"
    if pa.types.is_map(t):
        kw, vw = writer(t.key_type, tz, ignore_null_fields), writer(t.item_type, tz, ignore_null_fields)
        if kw is None or vw is None:
            return None

        def key(k: Any) -> str:
            text = kw(k)
            return text if text.startswith('"') else _string(text)

        return lambda v: "{" + ",".join(f"{key(k)}:{'null' if x is None else vw(x)}" for k, x in v) + "}"
    if pa.types.is_boolean(t):
        return lambda v: "true" if v else "false"
    if pa.types.is_integer(t):
        return str
    if t == pa.float64():
        return lambda v: java_double(v) if math.isfinite(v) else f'"{java_double(v)}"'
    if t == pa.float32():
        return lambda v: java_float(v) if math.isfinite(v) else f'"{java_double(v)}"'
    if pa.types.is_decimal(t):
        return str
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _string
    if pa.types.is_binary(t):
        return lambda v: _string(base64.b64encode(v).decode())
    if pa.types.is_date32(t):
        return lambda v: f'"{v.isoformat()}"' if 1 <= v.year <= 9999 else None
    if pa.types.is_timestamp(t):
        zone = ZoneInfo(tz)

        def stamp(v: dt.datetime) -> str:
            local = v.replace(tzinfo=dt.timezone.utc).astimezone(zone)
            off = local.utcoffset()
            secs = int(off.total_seconds()) if off is not None else 0
            mark = "Z" if secs == 0 else f"{'+' if secs > 0 else '-'}{abs(secs) // 3600:02d}:{abs(secs) % 3600 // 60:02d}"
            return f'"{local.strftime("%Y-%m-%dT%H:%M:%S")}.{local.microsecond // 1000:03d}{mark}"'

        return stamp
    return None
