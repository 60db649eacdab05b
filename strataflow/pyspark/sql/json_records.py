"""JSON records as Spark reads them: one object per line (or a whole file with
``multiLine``), Spark's schema inference (``JsonInferSchema``) and conversion to a
schema's types (``JacksonParser``) under a ``mode``.

Spark's rules, each seen against PySpark (``tests/goldens/readers``): an integer is a
bigint (a wider one a decimal, a decimal wider than 38 digits a double), a fraction a
double (a decimal of its digits with ``prefersDecimal``), a string stays a string (ISO
dates included: inference does not make timestamps), fields are ordered by name, a
field of only nulls or empty arrays is a string; values of two kinds in one field make
it a string and each value is then its JSON text (an object or array as written). An
empty string types as a null, but does not convert to a number (the record is corrupt). A line that is not JSON, or not an
object (an array of objects gives a record per object), is a corrupt record: in
``PERMISSIVE`` mode inference adds the ``_corrupt_record`` column (or
``columnNameOfCorruptRecord``) holding the line; a field that does not convert to its
type (``"three"`` for an int) is null and the line is kept there too, the other fields
read; ``DROPMALFORMED`` leaves those lines out, ``FAILFAST`` fails naming the line.
Single-quoted strings are read (``allowSingleQuotes`` is Spark's default), and so are
``NaN`` and ``Infinity`` (``allowNonNumericNumbers``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
from typing import Any, Callable

from strataflow.pyspark.sql import types as T
from strataflow.pyspark.sql.csv_records import malformed_error
from strataflow.pyspark.sql.reader_datetime_patterns import date_parser, timestamp_parser
from strataflow.pyspark.sql.reader_values import decimal_type_of, merge_types, wall_clock

__all__ = ["parse_units", "infer_type", "infer_records", "canonical", "record_converter", "JsonText"]


class JsonText(str):
    """A JSON number kept as its text (a fraction's digits matter for decimals)."""


class _Bad(Exception):
    """A value that does not convert to its field's type."""


class _NeedText(Exception):
    """An object or array read into a string: the record is decoded again, keeping text."""


def _single_to_double(text: str) -> str:
    """JSON with single-quoted strings rewritten with double quotes."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j, buf = i + 1, []
            while j < n and text[j] != c:
                if text[j] == "\\" and j + 1 < n:
                    buf.append(text[j:j + 2] if text[j + 1] != "'" else "'")
                    j += 2
                    continue
                buf.append('\\"' if text[j] == '"' else text[j])
                j += 1
            out.append('"' + "".join(buf) + '"')
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


class JsonObject(dict):
    """A JSON object that keeps its source text: Spark reads an object or array into a
    string column as the text it was written with (``{"x": 1, "y": [1, 2]}``)."""

    raw = ""


class JsonArray(list):
    """A JSON array that keeps its source text."""

    raw = ""


class DuplicateKey(ValueError):
    """An object names one key twice (Spark refuses the schema: COLUMN_ALREADY_EXISTS)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


_WS = re.compile(r"[ \t\n\r]*")


def _decode(s: str, i: int, dec: json.JSONDecoder) -> tuple[Any, int]:
    """The JSON value at ``s[i:]`` and where it ends; objects and arrays keep their text."""
    i = _WS.match(s, i).end()
    c = s[i:i + 1]
    if c not in ("{", "["):
        return dec.raw_decode(s, i)
    out: Any = JsonObject() if c == "{" else JsonArray()
    close = "}" if c == "{" else "]"
    j = _WS.match(s, i + 1).end()
    if s[j:j + 1] == close:
        out.raw = s[i:j + 1]
        return out, j + 1
    while True:
        if c == "{":
            key, j = dec.raw_decode(s, _WS.match(s, j).end())
            if not isinstance(key, str):
                raise ValueError("an object key must be a string")
            j = _WS.match(s, j).end()
            if s[j:j + 1] != ":":
                raise ValueError(f"':' expected at {j}")
            value, j = _decode(s, j + 1, dec)
            if key in out:
                raise DuplicateKey(key)
            out[key] = value
        else:
            value, j = _decode(s, j, dec)
            out.append(value)
        j = _WS.match(s, j).end()
        if s[j:j + 1] == ",":
            j += 1
            continue
        if s[j:j + 1] == close:
            out.raw = s[i:j + 1]
            return out, j + 1
        raise ValueError(f"',' or {close!r} expected at {j}")


def _pairs(pairs: list) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKey(k)
        out[k] = v
    return out


def _decoders(opts: Any) -> tuple[json.JSONDecoder, json.JSONDecoder]:
    """(fast, keeping): the C decoder (plain dicts and lists), and one for ``_decode``."""
    def constant(name: str) -> float:
        if not opts.allow_non_numeric:
            raise ValueError(f"non-numeric number {name}")
        return float(name.replace("Infinity", "inf"))

    strict = not opts.allow_control_chars
    return (json.JSONDecoder(parse_float=JsonText, parse_constant=constant, object_pairs_hook=_pairs, strict=strict),
            json.JSONDecoder(parse_float=JsonText, parse_constant=constant, strict=strict))


def _loads(text: str, opts: Any, decoders: tuple | None = None, keep_text: bool = False) -> Any:
    """The JSON value of ``text`` (ValueError if it is not JSON). Objects and arrays keep
    their source text only with ``keep_text`` (the slower decoder): a record needs it only
    when one of them is read into a string column."""
    fast, keeping = decoders or _decoders(opts)

    def whole(t: str) -> Any:
        if not keep_text:
            return fast.decode(t)
        value, end = _decode(t, 0, keeping)
        if t[end:].strip(" \t\n\r"):
            raise ValueError(f"text after the JSON value at {end}")
        return value

    try:
        return whole(text)
    except DuplicateKey:
        raise
    except (ValueError, IndexError):
        if not opts.allow_single_quotes or "'" not in text:
            raise ValueError("not JSON") from None
        return whole(_single_to_double(text))


def parse_units(text: str, opts: Any) -> list[tuple[Any, str]]:
    """(value, raw text) of each record of a file's text (value None: a corrupt record)."""
    if opts.multi_line:
        units = [text] if text.strip() else []
    elif opts.line_sep is not None:
        units = [u for u in text.split(opts.line_sep) if u.strip()]
    else:
        units = [u for u in re.split(r"\r\n|\r|\n", text) if u.strip()]
    out = []
    decoders = _decoders(opts)
    for raw in units:
        try:
            value = _loads(raw, opts, decoders)
            if isinstance(value, list):  # records of an array: each keeps its text
                value = _loads(raw, opts, decoders, keep_text=True)
        except DuplicateKey as exc:
            from strataflow.pyspark.errors import AnalysisException

            raise AnalysisException(f"[COLUMN_ALREADY_EXISTS] The column `{exc.key}` already exists (a JSON object "
                                    f"names it twice: {raw[:200]!r}). Choose another name or rename the existing "
                                    f"column.", "COLUMN_ALREADY_EXISTS") from None
        except (ValueError, RecursionError):
            out.append((None, raw))
            continue
        if isinstance(value, dict):
            out.append((value, raw))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            out.extend((v, raw) for v in value)
        elif isinstance(value, list) and not value:
            continue
        else:
            out.append((None, raw))
    return out


def infer_type(v: Any, opts: Any) -> T.DataType:
    """Spark's type of one JSON value."""
    if v is None or (type(v) is str and v == ""):  # Spark takes an empty string for a null when typing
        return T.NullType()
    if opts.primitives_as_string and not isinstance(v, (dict, list)):
        return T.StringType()
    if isinstance(v, bool):
        return T.BooleanType()
    if isinstance(v, int):
        if -(1 << 63) <= v < (1 << 63):
            return T.LongType()
        p = len(str(abs(v)))
        return T.DecimalType(p, 0) if p <= 38 else T.DoubleType()
    if isinstance(v, JsonText):
        if not opts.prefers_decimal:
            return T.DoubleType()
        p, s = decimal_type_of(decimal.Decimal(v))
        if max(p, s) > 38:
            return T.DoubleType()
        if s < 0:
            from strataflow.pyspark.errors import AnalysisException

            raise AnalysisException(f"[NEGATIVE_SCALE_DISALLOWED] Negative scale is not allowed: '{s}'. Set the "
                                    f"config \"spark.sql.legacy.allowNegativeScaleOfDecimal\" to \"true\" to allow "
                                    f"it.", "NEGATIVE_SCALE_DISALLOWED")
        return T.DecimalType(max(p, s), s)
    if isinstance(v, float):
        return T.DoubleType()
    if isinstance(v, str):
        return T.StringType()
    if isinstance(v, list):
        t: T.DataType = T.NullType()
        for x in v:
            t = merge_types(t, infer_type(x, opts))
        return T.ArrayType(t)
    return T.StructType([T.StructField(k, infer_type(v[k], opts)) for k in sorted(v)])


def shape(v: Any, prefers_decimal: bool) -> Any:
    """A hashable key of a JSON value's kind, equal for two values ``infer_type`` types
    alike: a file's records mostly share a few shapes, so each shape is typed once."""
    t = type(v)
    if t is str:
        return "s" if v else None
    if t is JsonText:
        return ("f", str.__str__(v)) if prefers_decimal else "f"
    if t is int:
        return "l" if -(1 << 63) <= v < (1 << 63) else ("D", len(str(abs(v))))
    if v is None or t is bool or t is float:
        return t
    if isinstance(v, dict):
        return tuple((k, shape(x, prefers_decimal)) for k, x in v.items())
    return frozenset(shape(x, prefers_decimal) for x in v)


def infer_records(values: Any, opts: Any, t: T.DataType) -> T.DataType:
    """``t`` merged with the types of the records ``values`` (each distinct shape typed once)."""
    seen: set = set()
    for v in values:
        key = shape(v, opts.prefers_decimal)
        if key not in seen:
            seen.add(key)
            t = merge_types(t, infer_type(v, opts))
    return t


def canonical(t: T.DataType, drop_all_null: bool) -> T.DataType | None:
    """The inferred type as Spark ends it: NullType a string (or dropped with
    ``dropFieldIfAllNull``), empty structs dropped."""
    if isinstance(t, T.NullType):
        return None if drop_all_null else T.StringType()
    if isinstance(t, T.ArrayType):
        e = canonical(t.elementType, drop_all_null)
        return None if e is None else T.ArrayType(e)
    if isinstance(t, T.StructType):
        fields = [(f.name, canonical(f.dataType, drop_all_null)) for f in t]
        kept = [T.StructField(n, x) for n, x in fields if x is not None]
        return T.StructType(kept) if kept else None
    return t


def _json_text(v: Any) -> str:
    """A value as Spark's string of a non-string token (an object or array: its source text)."""
    if isinstance(v, (JsonObject, JsonArray)) and v.raw:
        return v.raw
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, JsonText):
        return str.__str__(v)
    if isinstance(v, float):
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, (int, str)) and not isinstance(v, dict):
        return str(v)
    if isinstance(v, list):
        return "[" + ",".join("null" if x is None else json.dumps(x, ensure_ascii=False) if isinstance(x, str)
                              and not isinstance(x, JsonText) else _json_text(x) for x in v) + "]"
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + (
        "null" if x is None else json.dumps(x, ensure_ascii=False) if isinstance(x, str) and not isinstance(x, JsonText)
        else _json_text(x)) for k, x in v.items()) + "}"


def _value(t: T.DataType, opts: Any, zone: dt.tzinfo) -> Callable[[Any], Any]:
    """The converter of a JSON value to Spark type ``t`` (raises _Bad when it does not)."""
    if isinstance(t, T.StringType):
        def text(v: Any) -> str:
            if type(v) is str:
                return v
            if isinstance(v, (dict, list)) and not getattr(v, "raw", ""):
                raise _NeedText
            return _json_text(v)
        return text
    bits = {T.ByteType: 7, T.ShortType: 15, T.IntegerType: 31, T.LongType: 63}.get(type(t))
    if bits is not None:
        def integral(v: Any) -> int:
            if isinstance(v, bool) or not isinstance(v, int) or not -(1 << bits) <= v < (1 << bits):
                raise _Bad
            return v
        return integral
    if isinstance(t, (T.DoubleType, T.FloatType)):
        names = {"NaN": float("nan"), "Infinity": float("inf"), "+INF": float("inf"), "+Infinity": float("inf"),
                 "-INF": float("-inf"), "-Infinity": float("-inf"), "INF": float("inf")}

        def real(v: Any) -> float:
            if isinstance(v, str) and not isinstance(v, JsonText):
                if v in names:
                    return names[v]
                raise _Bad
            if isinstance(v, bool) or not isinstance(v, (int, float, JsonText)):
                raise _Bad
            return float(v)
        return real
    if isinstance(t, T.DecimalType):
        q = decimal.Decimal(1).scaleb(-t.scale)

        def dec(v: Any) -> decimal.Decimal:
            if isinstance(v, bool) or not isinstance(v, (int, JsonText)):
                raise _Bad
            d = decimal.Decimal(v).quantize(q, rounding=decimal.ROUND_HALF_UP)
            if len(d.as_tuple().digits) > t.precision and any(d.as_tuple().digits):
                raise _Bad
            return d
        return dec
    if isinstance(t, T.BooleanType):
        def boolean(v: Any) -> bool:
            if not isinstance(v, bool):
                raise _Bad
            return v
        return boolean
    if isinstance(t, T.DateType):
        parse = date_parser(opts.date_format)
        return lambda v: _parsed(parse, v)
    if isinstance(t, (T.TimestampType, T.TimestampNTZType)):
        parse = timestamp_parser(opts.timestamp_format, zone)
        aware = getattr(t.to_arrow(), "tz", None) is not None

        def ts(v: Any) -> dt.datetime:
            if isinstance(v, int) and not isinstance(v, bool):
                return wall_clock(dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=v), zone,
                                  aware)
            return wall_clock(_parsed(parse, v), zone, aware)
        return ts
    if isinstance(t, T.ArrayType):
        elem = _value(t.elementType, opts, zone)
        return lambda v: [None if x is None else elem(x) for x in _of(v, list)]
    if isinstance(t, T.MapType):
        item = _value(t.valueType, opts, zone)
        return lambda v: [(k, None if x is None else item(x)) for k, x in _of(v, dict).items()]
    if isinstance(t, T.StructType):
        convs = [(f.name, _value(f.dataType, opts, zone)) for f in t]
        return lambda v: {n: (None if _of(v, dict).get(n) is None else c(v[n])) for n, c in convs}
    raise _Bad


def _of(v: Any, kind: type) -> Any:
    if not isinstance(v, kind):
        raise _Bad
    return v


def _parsed(parse: Callable[[str], Any], v: Any) -> Any:
    if not isinstance(v, str) or isinstance(v, JsonText):
        raise _Bad
    try:
        return parse(v)
    except ValueError:
        raise _Bad from None


def record_converter(schema: T.StructType, corrupt: str | None, opts: Any, zone: dt.tzinfo,
                     where: str) -> Callable[[Any, str], list | None]:
    """The function from a parsed record (None if corrupt) and its text to the row's
    values in ``schema``'s order, by the mode (None: the row is left out)."""
    convs = [(f.name, _value(f.dataType, opts, zone) if f.name != corrupt else None) for f in schema]

    def row(value: Any, raw: str) -> list | None:
        try:
            return converted(value, raw)
        except _NeedText:
            return converted(_loads(raw, opts, keep_text=True), raw)

    def converted(value: Any, raw: str) -> list | None:
        bad = value is None
        out = []
        for name, conv in convs:
            if conv is None:
                out.append(None)
                continue
            v = None if value is None else value.get(name)
            if v is None:
                out.append(None)
                continue
            try:
                out.append(conv(v))
            except _Bad:
                bad = True
                out.append(None)
        if bad:
            if opts.mode == "FAILFAST":
                raise malformed_error(raw, where, "not JSON of the schema's types")
            if opts.mode == "DROPMALFORMED":
                return None
            if corrupt is not None and corrupt in schema.names:
                out[schema.names.index(corrupt)] = raw
        return out

    return row
