"""The vectorized path of ``spark.read.csv``: pyarrow cuts and converts a file where that
gives exactly what the exact path (``csv_records``, ``reader_values``) gives, and says
None otherwise, so the caller reads that file the exact way.

Why both: the exact path runs Spark's rules field by field in Python (about 1.5 MB/s);
most files never meet the cases where those rules matter. When a file has no quote
character, no comment or custom line separator is asked and the delimiter is one
character, Spark's tokenizer and pyarrow's cut the same fields (blank lines skipped, each
line a record). Then a column converts here only if every value has the plain form both
agree on (``-12``, ``1.5e3``, ``2024-01-31``, ``2024-01-31 10:00:00.5``, ``true``) and the
whole file's rows have the schema's width; any other value (``1.5d``, ``2024-1-5``, a
zone, a custom ``dateFormat``, a malformed row) sends the file to the exact path.
Inference is vectorized the same way: a column of only ints, only numbers, only dates
(and timestamps), or only booleans gets its type here; any other column is typed by the
exact rules over its distinct values.
"""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from strataflow.pyspark.sql import types as T
from strataflow.pyspark.sql.reader_values import FieldInference, merge_types

__all__ = ["fast_columns", "fast_types"]

_INT = r"^[+-]?[0-9]+$"
_NUMBER = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?$"


def _table(text: str, opts: Any) -> pa.Table | None:
    """The file's fields as strings (header row included), or None where pyarrow's cut may
    differ from Spark's."""
    import pyarrow.csv as pcsv

    if text.startswith("\ufeff"):
        text = text[1:]
    if (len(opts.sep) != 1 or opts.sep in "\r\n" or opts.line_sep is not None or opts.ignore_leading
            or opts.ignore_trailing or opts.max_chars >= 0 or (opts.quote is not None and opts.quote in text)
            or (opts.comment is not None and opts.comment in text) or not text.strip()):
        return None
    try:
        return pcsv.read_csv(io.BytesIO(text.encode("utf-8")),
                             read_options=pcsv.ReadOptions(autogenerate_column_names=True, use_threads=False),
                             parse_options=pcsv.ParseOptions(delimiter=opts.sep, quote_char=False,
                                                             ignore_empty_lines=True),
                             convert_options=pcsv.ConvertOptions(check_utf8=False, strings_can_be_null=False,
                                                                 quoted_strings_can_be_null=False,
                                                                 column_types=_all_strings(text, opts)))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def _all_strings(text: str, opts: Any) -> dict:
    first = next((line for line in text.splitlines() if line), "")
    return {f"f{i}": pa.string() for i in range(first.count(opts.sep) + 1)}


def _nulls(col: pa.ChunkedArray, opts: Any) -> pa.ChunkedArray:
    """The column with Spark's nulls: an empty field, or one equal to ``nullValue``."""
    null = pc.or_(pc.equal(col, ""), pc.equal(col, opts.null_value))
    return pc.if_else(null, pa.scalar(None, pa.string()), col)


def _all(col: pa.ChunkedArray, pattern: str) -> bool:
    return bool(pc.all(pc.match_substring_regex(col, pattern), skip_nulls=True).as_py() is not False)


def _convert(col: pa.ChunkedArray, t: T.DataType, opts: Any, zone: dt.tzinfo) -> pa.ChunkedArray | None:
    """``col`` (strings, Spark's nulls already null) as Spark type ``t``, or None."""
    if isinstance(t, T.StringType):
        return col
    try:
        if type(t) in (T.ByteType, T.ShortType, T.IntegerType, T.LongType):
            if not _all(col, _INT):
                return None
            return pc.cast(pc.replace_substring_regex(col, r"^\+", ""), pa.int64()).cast(t.to_arrow())
        if isinstance(t, (T.DoubleType, T.FloatType)):
            plain = pc.match_substring_regex(col, _NUMBER)
            special = [(pc.equal(col, name), value) for name, value in
                       ((opts.nan_value, float("nan")), (opts.positive_inf, float("inf")),
                        (opts.negative_inf, float("-inf")))]
            known = plain
            for mask, _ in special:
                known = pc.or_(known, mask)
            if pc.all(known, skip_nulls=True).as_py() is False:
                return None
            out = pc.cast(pc.if_else(plain, col, pa.scalar(None, pa.string())), pa.float64())
            for mask, value in special:
                out = pc.if_else(mask, value, out)  # nanValue and the infinities come first, as Spark's
            return out.cast(t.to_arrow())
        if isinstance(t, T.BooleanType):
            low = pc.utf8_lower(col)
            if not _all(low, r"^(?:true|false)$"):
                return None
            return pc.equal(low, "true")
        if isinstance(t, T.DateType) and opts.date_format in (None, "yyyy-MM-dd") and _all(col, _DATE):
            return pc.cast(col, pa.date32())
        if (isinstance(t, (T.TimestampType, T.TimestampNTZType)) and opts.timestamp_format is None
                and _all(col, _TIMESTAMP)):
            if zone is not dt.timezone.utc:  # zone-less text is the session's wall clock: the exact path converts
                return None
            wall = pc.cast(col, pa.timestamp("us"))  # in a UTC session, the instant itself
            target = t.to_arrow()
            return wall if target.tz is None else pc.assume_timezone(wall, "UTC").cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return None


def fast_columns(text: str, opts: Any, data: list[T.StructField], zone: dt.tzinfo) -> list | None:
    """The data columns of one file's text, or None if this file must take the exact path."""
    table = _table(text, opts)
    if table is None or table.num_columns != len(data):
        return None
    if opts.header:
        table = table.slice(1)
    out = []
    for col, f in zip(table.columns, data):
        converted = _convert(_nulls(col, opts), f.dataType, opts, zone)
        if converted is None:
            return None
        out.append(converted)
    return out


def _column_type(col: pa.ChunkedArray, opts: Any, inference: FieldInference) -> T.DataType:
    vals = pc.drop_null(col)
    if len(vals) == 0:
        return T.NullType()
    if _all(vals, _INT):
        try:
            ints = pc.cast(pc.replace_substring_regex(vals, r"^\+", ""), pa.int64())
            lo, hi = pc.min(ints).as_py(), pc.max(ints).as_py()
            return T.IntegerType() if -(1 << 31) <= lo and hi < (1 << 31) else T.LongType()
        except pa.ArrowInvalid:
            pass
    elif _all(vals, _NUMBER) and not _all(vals, r"^[+-]?[0-9]+\.?$"):
        return T.DoubleType()  # numbers, one with a fraction or an exponent (``1.`` alone is a decimal in Spark)
    elif opts.date_format in (None, "yyyy-MM-dd") and _all(vals, _DATE):
        try:
            pc.cast(vals, pa.date32())
            return T.DateType()
        except pa.ArrowInvalid:
            pass
    elif _all(pc.utf8_lower(vals), r"^(?:true|false)$"):
        return T.BooleanType()
    t: T.DataType = T.NullType()  # anything else: the exact rules over the distinct values
    for v in pc.unique(vals).to_pylist():
        t = inference.infer(t, v)
        if isinstance(t, T.StringType):
            break
    return t


def fast_types(text: str, opts: Any, zone: dt.tzinfo) -> tuple[list[str], list[T.DataType]] | None:
    """(first record's fields, each column's inferred type) of one file, or None."""
    table = _table(text, opts)
    if table is None:
        return None
    first = [c[0].as_py() for c in table.columns]
    if opts.header:
        table = table.slice(1)
    if not opts.infer_schema:
        return first, []
    inference = FieldInference(opts, zone)
    types = [_column_type(_nulls(c, opts), opts, inference) for c in table.columns]
    return first, [merge_types(T.NullType(), t) for t in types]
