"""Text fields as Spark's readers type and convert them: CSV's schema inference
(``CSVInferSchema``) and the converters of a field to a column's type (``UnivocityParser``'s,
which JSON's string fields share for dates and timestamps).

Why not Python's own parsing: Spark parses numbers as Java does, and the two disagree
on text users have. ``int(" 7")`` and ``int("1_000")`` are 7 and 1000 in Python, errors
in Java (a null in the column); ``float("inf")`` and ``float("nan")`` are numbers in
Python, errors in Java (which reads ``Infinity``, ``NaN`` and ``1.5d``). So each converter
matches the text against Java's grammar first, and only then lets Python compute the value.
A field that does not convert raises ValueError: the reader's ``mode`` decides what that
means (a null and the record in the corrupt-record column, a dropped row, a failed job).

Inference walks each column's fields through Spark's ladder, int, bigint, decimal (an
integer too wide for bigint), double, date, timestamp, boolean, string, and merges the
columns' types across partitions as Spark's ``compatibleType`` does (int and bigint give
bigint, numbers and double give double, date and timestamp give timestamp; anything
else string). A column of only nulls is a string column.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any, Callable

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql import types as T
from strataflow.pyspark.sql.reader_datetime_patterns import date_parser, timestamp_parser

__all__ = ["FieldInference", "merge_types", "converter", "java_int", "java_double", "java_decimal", "decimal_type_of",
           "wall_clock"]

_INT = re.compile(r"[+-]?\d+")
_DOUBLE = re.compile(r"\s*[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)\s*")
_BIG_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RANGES = {T.ByteType: 7, T.ShortType: 15, T.IntegerType: 31, T.LongType: 63}


def java_int(text: str, bits: int) -> int:
    """``Integer.parseInt`` and friends: optional sign, ASCII digits, in range."""
    if not _INT.fullmatch(text):
        raise ValueError(f"{text!r} is not an integer")
    v = int(text)
    if not -(1 << bits) <= v < (1 << bits):
        raise ValueError(f"{text!r} is out of range")
    return v


def java_double(text: str) -> float:
    """``Double.parseDouble``: NaN, Infinity, decimal and exponent forms, an ``f``/``d`` suffix."""
    if not _DOUBLE.fullmatch(text):
        raise ValueError(f"{text!r} is not a double")
    t = text.strip().rstrip("fFdD")
    return float("nan") if t.endswith("NaN") else float(t.replace("Infinity", "inf"))


def java_decimal(text: str) -> decimal.Decimal:
    """``new BigDecimal(text.replaceAll(",", ""))``: Spark's decimal parser in the en-US locale."""
    t = text.replace(",", "")
    if not _BIG_DECIMAL.fullmatch(t):
        raise ValueError(f"{text!r} is not a decimal")
    return decimal.Decimal(t)


def decimal_type_of(d: decimal.Decimal) -> tuple[int, int]:
    """(precision, scale) of a BigDecimal of the same digits (scale may be negative)."""
    _, digits, exp = d.as_tuple()
    significant = list(digits)
    while len(significant) > 1 and significant[0] == 0:
        significant.pop(0)
    return max(len(significant), 1), -int(exp)


def _java_bool(text: str) -> bool:
    low = text.lower()
    if low not in ("true", "false"):
        raise ValueError(f"{text!r} is not a boolean")
    return low == "true"


def wall_clock(instant: dt.datetime, zone: dt.tzinfo, aware: bool) -> dt.datetime:
    """An aware datetime as the Arrow column holds a TimestampType: the instant in UTC (a
    zone-less text was read in the session's ``zone``), naive unless the column has a zone."""
    utc = instant.astimezone(dt.timezone.utc)
    return utc if aware else utc.replace(tzinfo=None)


def converter(t: T.DataType, opts: Any, zone: dt.tzinfo, where: str) -> Callable[[str], Any]:
    """The function from a field's text (never the null value: the caller has taken it out)
    to the value of a column of Spark type ``t``; ValueError when it does not convert."""
    if isinstance(t, T.StringType):
        return str
    if type(t) in _RANGES:
        bits = _RANGES[type(t)]
        return lambda s: java_int(s, bits)
    if isinstance(t, (T.DoubleType, T.FloatType)):
        specials = {opts.nan_value: float("nan"), opts.positive_inf: float("inf"), opts.negative_inf: float("-inf")}

        def to_float(s: str) -> float:
            return specials[s] if s in specials else java_double(s)
        return to_float
    if isinstance(t, T.BooleanType):
        return _java_bool
    if isinstance(t, T.DecimalType):
        q = decimal.Decimal(1).scaleb(-t.scale)

        def to_decimal(s: str) -> decimal.Decimal:
            v = java_decimal(s).quantize(q, rounding=decimal.ROUND_HALF_UP)
            if len(v.as_tuple().digits) > t.precision and any(v.as_tuple().digits):
                raise ValueError(f"{s!r} does not fit decimal({t.precision},{t.scale})")
            return v
        return to_decimal
    if isinstance(t, T.DateType):
        return date_parser(opts.date_format)
    if isinstance(t, (T.TimestampType, T.TimestampNTZType)):
        parse = timestamp_parser(opts.timestamp_format, zone)
        aware = getattr(t.to_arrow(), "tz", None) is not None
        return lambda s: wall_clock(parse(s), zone, aware)
    if isinstance(t, T.BinaryType):
        return lambda s: s.encode("utf-8")
    raise AnalysisException(f"[UNSUPPORTED_DATA_TYPE_FOR_DATASOURCE] The {where} datasource doesn't support the "
                            f"column of the type \"{t.simpleString().upper()}\".", "UNSUPPORTED_DATA_TYPE_FOR_DATASOURCE")


class FieldInference:
    """CSV's inference of one field's type given the column's type so far (Spark's
    ``CSVInferSchema.inferField``), with the session's options."""

    def __init__(self, opts: Any, zone: dt.tzinfo) -> None:
        self.opts = opts
        self.date = date_parser(opts.date_format or "yyyy-MM-dd")
        self.ts = timestamp_parser(opts.timestamp_format, zone)
        self.specials = {opts.nan_value, opts.positive_inf, opts.negative_inf}

    def infer(self, so_far: T.DataType, field: str) -> T.DataType:
        if field == "" or field == self.opts.null_value:
            return so_far
        start = {T.NullType: self._int, T.IntegerType: self._int, T.LongType: self._long,
                 T.DecimalType: self._decimal, T.DoubleType: self._double, T.DateType: self._date,
                 T.TimestampType: self._timestamp, T.BooleanType: self._boolean}.get(type(so_far))
        found = start(field) if start is not None else T.StringType()
        return merge_types(so_far, found)

    def _int(self, f: str) -> T.DataType:
        try:
            java_int(f, 31)
            return T.IntegerType()
        except ValueError:
            return self._long(f)

    def _long(self, f: str) -> T.DataType:
        try:
            java_int(f, 63)
            return T.LongType()
        except ValueError:
            return self._decimal(f)

    def _decimal(self, f: str) -> T.DataType:
        try:
            p, s = decimal_type_of(java_decimal(f))
        except (ValueError, decimal.InvalidOperation):
            return self._double(f)
        if s == 0 and p <= 38:  # a negative scale is no DecimalType in Spark: it goes on to double
            return T.DecimalType(p, 0)
        return self._double(f)

    def _double(self, f: str) -> T.DataType:
        try:
            java_double(f)
            return T.DoubleType()
        except ValueError:
            if f in self.specials:
                return T.DoubleType()
            return self._date(f)

    def _date(self, f: str) -> T.DataType:
        try:
            self.date(f)
            return T.DateType()
        except ValueError:
            return self._timestamp(f)

    def _timestamp(self, f: str) -> T.DataType:
        try:
            self.ts(f)
            return T.TimestampType()
        except ValueError:
            return self._boolean(f)

    def _boolean(self, f: str) -> T.DataType:
        return T.BooleanType() if f.lower() in ("true", "false") else T.StringType()


_NUMERIC_ORDER = [T.ByteType, T.ShortType, T.IntegerType, T.LongType]


def merge_types(a: T.DataType, b: T.DataType) -> T.DataType:
    """Spark's ``compatibleType`` for text sources: the type of a column holding both."""
    if a == b:
        return a
    if isinstance(a, T.NullType):
        return b
    if isinstance(b, T.NullType):
        return a
    ta, tb = type(a), type(b)
    if ta in _NUMERIC_ORDER and tb in _NUMERIC_ORDER:
        return a if _NUMERIC_ORDER.index(ta) > _NUMERIC_ORDER.index(tb) else b
    numeric = tuple(_NUMERIC_ORDER) + (T.DecimalType, T.DoubleType, T.FloatType)
    if isinstance(a, numeric) and isinstance(b, numeric):
        if isinstance(a, (T.DoubleType, T.FloatType)) or isinstance(b, (T.DoubleType, T.FloatType)):
            return T.DoubleType()
        da, db = _as_decimal(a), _as_decimal(b)
        scale = max(da.scale, db.scale)
        whole = max(da.precision - da.scale, db.precision - db.scale)
        return T.DecimalType(min(38, whole + scale), scale) if whole + scale <= 38 else T.DoubleType()
    if {ta, tb} == {T.DateType, T.TimestampType}:
        return T.TimestampType()
    if isinstance(a, T.StructType) and isinstance(b, T.StructType):
        fields = {f.name: f.dataType for f in a}
        for f in b:
            fields[f.name] = merge_types(fields[f.name], f.dataType) if f.name in fields else f.dataType
        return T.StructType([T.StructField(n, fields[n]) for n in sorted(fields)])
    if isinstance(a, T.ArrayType) and isinstance(b, T.ArrayType):
        return T.ArrayType(merge_types(a.elementType, b.elementType))
    return T.StringType()


def _as_decimal(t: T.DataType) -> T.DecimalType:
    if isinstance(t, T.DecimalType):
        return t
    return T.DecimalType({T.ByteType: 3, T.ShortType: 5, T.IntegerType: 10, T.LongType: 20}[type(t)], 0)
