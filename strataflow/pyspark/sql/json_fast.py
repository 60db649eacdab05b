"""The vectorized path of ``spark.read.json``: pyarrow's JSON reader, for the files where
it gives exactly what the exact path (``json_records``) gives; None otherwise, and the
caller reads that file the exact way.

pyarrow agrees with Spark on plain JSON lines of objects whose fields each hold one kind
of value: integers that fit a bigint, numbers (parsed to the same doubles), booleans,
strings, nulls, arrays and objects of those, fields left out. Everywhere else it fails
instead of answering differently, which is what lets it go first: a malformed line, a
field of two kinds (Spark makes it a string of each value's text), a key twice, a number
too big for a double, a non-object line, single quotes, ``NaN``. Two of its answers
differ from Spark's and are kept from it: an integer wider than a bigint (pyarrow infers
a double, Spark a decimal: a file holding a run of 19 or more digits goes the exact way),
and a string that looks like a time (pyarrow infers a timestamp, Spark keeps a string:
such a type is read back as the string it was). Schemas with dates, timestamps, decimals,
maps or narrower integers are left to the exact path, as are the options that change
parsing (``multiLine``, ``lineSep``, ``primitivesAsString``, ``prefersDecimal``...).
"""

from __future__ import annotations

import io
import re
from typing import Any

import pyarrow as pa

from strataflow.pyspark.sql import types as T

__all__ = ["fast_json_table", "fast_json_type"]

_WIDE_INT = re.compile(rb"(?<![\d.eE+-])-?\d{19,}(?![\d.eE])")


def _usable(text: bytes, opts: Any) -> bool:
    return not (opts.multi_line or opts.line_sep is not None or opts.primitives_as_string or opts.prefers_decimal
                or opts.allow_control_chars or not opts.allow_non_numeric or opts.drop_all_null
                or not text.strip() or _WIDE_INT.search(text))


def _spark_type(t: pa.DataType) -> T.DataType | None:
    """Spark's inferred type for pyarrow's, or None where they may differ."""
    if pa.types.is_null(t):
        return T.NullType()
    if pa.types.is_int64(t):
        return T.LongType()
    if pa.types.is_float64(t):
        return T.DoubleType()
    if pa.types.is_boolean(t):
        return T.BooleanType()
    if pa.types.is_string(t) or pa.types.is_timestamp(t):  # a time-like string: Spark keeps the string
        return T.StringType()
    if pa.types.is_list(t):
        inner = _spark_type(t.value_type)
        return None if inner is None else T.ArrayType(inner)
    if pa.types.is_struct(t):
        fields = [(f.name, _spark_type(f.type)) for f in t]
        if any(x is None for _, x in fields):
            return None
        return T.StructType([T.StructField(n, x) for n, x in sorted(fields, key=lambda nf: nf[0])])
    return None


def _readable(t: T.DataType) -> bool:
    """Whether pyarrow converts JSON to ``t`` as Spark does."""
    if isinstance(t, (T.LongType, T.DoubleType, T.BooleanType, T.StringType)):
        return True
    if isinstance(t, T.ArrayType):
        return _readable(t.elementType)
    if isinstance(t, T.StructType):
        return all(_readable(f.dataType) for f in t)
    return False


def fast_json_type(text: str, opts: Any) -> T.DataType | None:
    """The inferred record type of one split's JSON lines, or None."""
    import pyarrow.json as pj

    data = text.encode("utf-8")
    if not _usable(data, opts):
        return None
    try:
        table = pj.read_json(io.BytesIO(data), read_options=pj.ReadOptions(use_threads=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return _spark_type(pa.struct(list(table.schema)))


def fast_json_table(text: str, opts: Any, schema: T.StructType) -> pa.Table | None:
    """One split's rows in ``schema`` (its corrupt-record column null), or None."""
    import pyarrow.json as pj

    corrupt = opts.corrupt_column if opts.corrupt_column in schema.names else None
    data_fields = [f for f in schema if f.name != corrupt]
    if not all(_readable(f.dataType) for f in data_fields):
        return None
    data = text.encode("utf-8")
    if not _usable(data, opts):
        return None
    wanted = pa.schema([pa.field(f.name, T._nested(f.dataType)) for f in data_fields])
    try:
        table = pj.read_json(io.BytesIO(data), read_options=pj.ReadOptions(use_threads=False),
                             parse_options=pj.ParseOptions(explicit_schema=wanted, unexpected_field_behavior="ignore"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    cols = [table.column(f.name) if f.name != corrupt else pa.nulls(table.num_rows, pa.string()) for f in schema]
    return pa.Table.from_arrays(cols, schema=pa.schema([pa.field(f.name, T._nested(f.dataType)) for f in schema]))
