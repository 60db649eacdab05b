"""The Datasets behind ``spark.read.csv/json/text``: the listed files (``partition_discovery``)
cut into partitions of whole files, each parsed into an Arrow table of the frame's schema
by Spark's rules (``csv_records``, ``json_records``), partition columns appended.

Why whole files per task rather than byte ranges: Spark's options decide where a record
ends (``multiLine`` quotes across lines, ``lineSep``, a multi-byte ``encoding``), so a
file is decoded and cut in one piece; the price is that one large file is one task.
A schema is inferred by a job over every file (each task returns its files' types; the
driver merges them as Spark's ``compatibleType``), never from a sample, so no row read
later can fall outside it.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
from typing import Any

import pyarrow as pa

from strataflow.pyspark.errors import AnalysisException, UnsupportedOperation
from strataflow.pyspark.sql import types as T
from strataflow.pyspark.sql.csv_fast import fast_columns, fast_types
from strataflow.pyspark.sql.csv_records import field_datum, malformed_error, records
from strataflow.pyspark.sql.json_fast import fast_json_table, fast_json_type
from strataflow.pyspark.sql.json_records import canonical, infer_records, parse_units, record_converter
from strataflow.pyspark.sql.file_splits import plan_splits, read_split
from strataflow.pyspark.sql.partition_discovery import InputFiles
from strataflow.pyspark.sql.reader_values import FieldInference, converter, merge_types

__all__ = ["csv_frame", "json_frame", "text_frame", "json_lines_frame", "FAST_PATH"]

#: whether a CSV file may take the vectorized path (``csv_fast``) when it gives the same answer;
#: the tests turn it off to compare the two
FAST_PATH = True


def _arrow_schema(schema: T.StructType) -> pa.Schema:
    return pa.schema([pa.field(f.name, T._nested(f.dataType)) for f in schema])


def _table(columns: list[list], schema: T.StructType, parts: list[tuple[str, T.DataType]], values: list[tuple]) -> pa.Table:
    """The table of data columns plus each row's partition values."""
    arrow = _arrow_schema(schema)
    arrays = [pa.array(c, type=f.type) for c, f in zip(columns, arrow)]
    fields = list(arrow)
    for i, (name, t) in enumerate(parts):
        arrays.append(pa.array([v[i] for v in values], type=T._nested(t)))
        fields.append(pa.field(name, T._nested(t)))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _dataset(session: Any, files: InputFiles, fn: Any, opts: Any, line_records: bool) -> Any:
    """A Dataset whose partitions are groups of splits (``file_splits``), mapped by ``fn``."""
    ctx = session.sparkContext.ctx
    parallelism = session.sparkContext.defaultParallelism
    items = plan_splits(files.files, files.values, parallelism,
                        line_records and opts.line_sep in (None, "\n"), opts.encoding)
    n = max(1, min(len(items), parallelism))
    return ctx.parallelize(items, n).map_partitions(fn)


def _session_zone(session: Any) -> dt.tzinfo:
    from zoneinfo import ZoneInfo

    name = session.conf.get("spark.sql.session.timeZone", None) or "UTC"
    return dt.timezone.utc if name.upper() in ("UTC", "Z", "GMT") else ZoneInfo(name)


def _full_schema(data: T.StructType, files: InputFiles) -> tuple[T.StructType, pa.Schema]:
    schema = T.StructType(list(data.fields) + [T.StructField(n, t) for n, t in files.columns
                                               if n not in data.names])
    return schema, pa.schema(list(_arrow_schema(data)) + [pa.field(n, T._nested(t)) for n, t in files.columns
                                                          if n not in data.names])


# -- CSV -----------------------------------------------------------------------------------------------
def _csv_infer(opts: Any, zone: dt.tzinfo, items: list) -> list:
    """Per task: the first record's fields (for the header) and each position's type."""
    inference = FieldInference(opts, zone)
    first, types = None, []
    for url, _, start, end in items:
        text = read_split(url, opts, start, end)
        o = opts if start == 0 else _no_header(opts)  # a split after a file's first holds no header
        fast = fast_types(text, o, zone) if FAST_PATH else None
        if fast is not None:
            first = fast[0] if first is None else first
            types = [merge_types(a, b) for a, b in itertools.zip_longest(types, fast[1], fillvalue=T.NullType())]
            continue
        for k, (fields, _) in enumerate(records(text, o)):
            if first is None:
                first = [f[0] for f in fields]
            if k == 0 and o.header:
                continue
            if not opts.infer_schema:
                break
            for i, f in enumerate(fields):
                if i >= len(types):
                    types.append(T.NullType())
                datum = field_datum(f, opts)
                if datum is not None:
                    types[i] = inference.infer(types[i], datum)
    return [(first, types)]


def _no_header(opts: Any) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(**{**vars(opts), "header": False})


def _csv_file(opts: Any, convs: list, schema: T.StructType, corrupt: str | None, text: str,
              where: str) -> list[list]:
    """One file's rows by the exact rules, as columns of ``schema`` (the mode applied)."""
    data = [f for f in schema if f.name != corrupt]
    at = {f.name: i for i, f in enumerate(schema)}
    data_at = [at[f.name] for f in data]
    columns: list[list] = [[] for _ in schema]
    for k, (fields, raw) in enumerate(records(text, opts)):
        if k == 0 and opts.header:
            continue
        row, bad = [None] * len(data), len(fields) != len(data)
        for i, f in enumerate(fields[:len(data)]):
            datum = field_datum(f, opts)
            if datum is None:
                continue
            try:
                row[i] = convs[i](datum)
            except (ValueError, ArithmeticError):
                bad = True
        if bad:
            if opts.mode == "FAILFAST":
                raise malformed_error(raw, where, f"{len(fields)} fields for {len(data)} columns, or a field "
                                                  f"not of its column's type")
            if opts.mode == "DROPMALFORMED":
                continue
        for i, v in zip(data_at, row):
            columns[i].append(v)
        if corrupt is not None:
            columns[at[corrupt]].append(raw if bad else None)
    return columns


def _csv_part(opts: Any, zone: dt.tzinfo, schema: T.StructType, parts: list, items: list) -> pa.Table:
    corrupt = opts.corrupt_column if opts.corrupt_column in schema.names else None
    data = [f for f in schema if f.name != corrupt]
    convs = [converter(f.dataType, opts, zone, "CSV") for f in data]
    arrow = _arrow_schema(schema)
    pieces = []
    for url, pvalues, start, end in items:
        text = read_split(url, opts, start, end)
        o = opts if start == 0 else _no_header(opts)
        fast = fast_columns(text, o, data, zone) if FAST_PATH else None
        if fast is not None:
            n = len(fast[0]) if fast else 0
            by_name = dict(zip([f.name for f in data], fast))
            cols = [by_name[f.name] if f.name in by_name else pa.nulls(n, pa.string()) for f in schema]
            table = pa.Table.from_arrays([c.cast(f.type) for c, f in zip(cols, arrow)], schema=arrow)
        else:
            columns = _csv_file(o, convs, schema, corrupt, text, url)
            table = pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, arrow)], schema=arrow)
        pieces.append(_table_with_values(table, parts, pvalues))
    if not pieces:
        return _table([[] for _ in schema], schema, parts, [])
    return pa.concat_tables(pieces)


def _table_with_values(table: pa.Table, parts: list, pvalues: tuple) -> pa.Table:
    for (name, t), v in zip(parts, pvalues):
        table = table.append_column(pa.field(name, T._nested(t)), pa.array([v] * table.num_rows, T._nested(t)))
    return table


def _header_names(first: list[str]) -> list[str]:
    names, seen = [], {}
    for i, n in enumerate(first):
        names.append(n if n else f"_c{i}")
    lowered = [n.lower() for n in names]
    for n in lowered:
        seen[n] = seen.get(n, 0) + 1
    return [f"{n}{i}" if seen[n.lower()] > 1 else n for i, n in enumerate(names)]


def csv_frame(session: Any, files: InputFiles, opts: Any, schema: T.StructType | None) -> tuple[Any, pa.Schema]:
    """The Dataset and Arrow schema of a CSV read."""
    zone = _session_zone(session)
    if schema is None:
        if not files.files:
            raise AnalysisException("[UNABLE_TO_INFER_SCHEMA] Unable to infer schema for CSV. It must be specified "
                                    "manually.", "UNABLE_TO_INFER_SCHEMA")
        found = _dataset(session, files, functools.partial(_csv_infer, opts, zone), opts, not opts.multi_line).collect()
        first = next((f for f, _ in found if f is not None), None) or []
        names = _header_names(first) if opts.header else [f"_c{i}" for i in range(len(first))]
        types: list[T.DataType] = [T.NullType()] * len(names)
        for _, ts in found:
            types = [merge_types(a, b) for a, b in zip(types, list(ts) + [T.NullType()] * (len(types) - len(ts)))]
        schema = T.StructType([T.StructField(n, T.StringType() if isinstance(t, T.NullType) else t)
                               for n, t in zip(names, types)])
    else:
        for f in schema:
            converter(f.dataType, opts, zone, "CSV")  # an unsupported type is refused now, not in a task
        if opts.corrupt_column in schema.names and not isinstance(schema[opts.corrupt_column].dataType, T.StringType):
            raise AnalysisException(f"[INVALID_CORRUPT_RECORD_TYPE] The column `{opts.corrupt_column}` for corrupt "
                                    f"records must have the nullable STRING type", "INVALID_CORRUPT_RECORD_TYPE")
    full, arrow = _full_schema(schema, files)
    return _dataset(session, files, functools.partial(_csv_part, opts, zone, schema, files.columns), opts,
                    not opts.multi_line), arrow


# -- JSON ----------------------------------------------------------------------------------------------
def _json_infer(opts: Any, items: list) -> list:
    t: T.DataType = T.StructType([])
    corrupt = False
    for url, _, start, end in items:
        text = read_split(url, opts, start, end)
        fast = fast_json_type(text, opts) if FAST_PATH else None
        if fast is not None:
            t = merge_types(t, fast)
            continue
        units = parse_units(text, opts)
        bad = next((raw for value, raw in units if value is None), None)
        if bad is not None:
            if opts.mode == "FAILFAST":
                raise malformed_error(bad, url, "not a JSON object")
            corrupt = True
        t = infer_records((value for value, _ in units if value is not None), opts, t)
    return [(t, corrupt)]


def _json_schema(found: list, opts: Any) -> T.StructType:
    t: T.DataType = T.StructType([])
    corrupt = False
    for x, bad in found:
        t = merge_types(t, x)
        corrupt = corrupt or bad
    out = canonical(t, opts.drop_all_null) or T.StructType([])
    fields = list(out.fields) if isinstance(out, T.StructType) else []
    if corrupt and opts.mode == "PERMISSIVE" and opts.corrupt_column not in [f.name for f in fields]:
        fields.append(T.StructField(opts.corrupt_column, T.StringType()))
    return T.StructType(sorted(fields, key=lambda f: f.name))


def _json_part(opts: Any, zone: dt.tzinfo, schema: T.StructType, parts: list, items: list) -> pa.Table:
    pieces = []
    for url, pvalues, start, end in items:
        text = read_split(url, opts, start, end)
        fast = fast_json_table(text, opts, schema) if FAST_PATH else None
        if fast is not None:
            pieces.append(_table_with_values(fast, parts, pvalues))
            continue
        columns: list[list] = [[] for _ in schema]
        row_of = record_converter(schema, opts.corrupt_column, opts, zone, url)
        for value, raw in parse_units(text, opts):
            row = row_of(value, raw)
            if row is not None:
                for c, v in zip(columns, row):
                    c.append(v)
        pieces.append(_table(columns, schema, parts, [pvalues] * (len(columns[0]) if columns else 0)))
    if not pieces:
        return _table([[] for _ in schema], schema, parts, [])
    return pa.concat_tables(pieces)


def json_frame(session: Any, files: InputFiles, opts: Any, schema: T.StructType | None) -> tuple[Any, pa.Schema]:
    """The Dataset and Arrow schema of a JSON read."""
    zone = _session_zone(session)
    if schema is None:
        if not files.files:
            raise AnalysisException("[UNABLE_TO_INFER_SCHEMA] Unable to infer schema for JSON. It must be specified "
                                    "manually.", "UNABLE_TO_INFER_SCHEMA")
        schema = _json_schema(_dataset(session, files, functools.partial(_json_infer, opts), opts, not opts.multi_line).collect(), opts)
    full, arrow = _full_schema(schema, files)
    return _dataset(session, files, functools.partial(_json_part, opts, zone, schema, files.columns), opts,
                    not opts.multi_line), arrow


def _json_lines_infer(opts: Any, lines: list) -> list:
    return _json_infer_units(opts, [u for line in lines if line is not None for u in parse_units(line, opts)])


def _json_infer_units(opts: Any, units: list) -> list:
    bad = next((raw for value, raw in units if value is None), None)
    if bad is not None and opts.mode == "FAILFAST":
        raise malformed_error(bad, "the RDD", "not a JSON object")
    t = infer_records((value for value, _ in units if value is not None), opts, T.StructType([]))
    return [(t, bad is not None)]


def _json_lines_part(opts: Any, zone: dt.tzinfo, schema: T.StructType, lines: list) -> pa.Table:
    columns: list[list] = [[] for _ in schema]
    row_of = record_converter(schema, opts.corrupt_column, opts, zone, "the RDD")
    for line in lines:
        for value, raw in parse_units(line, opts) if line is not None else []:
            row = row_of(value, raw)
            if row is not None:
                for c, v in zip(columns, row):
                    c.append(v)
    return _table(columns, schema, [], [])


def json_lines_frame(session: Any, ds: Any, opts: Any, schema: T.StructType | None) -> tuple[Any, pa.Schema]:
    """``spark.read.json(rdd)``: each string of the Dataset ``ds`` a JSON record."""
    zone = _session_zone(session)
    if schema is None:
        schema = _json_schema(ds.map_partitions(functools.partial(_json_lines_infer, opts)).collect(), opts)
    return ds.map_partitions(functools.partial(_json_lines_part, opts, zone, schema)), _arrow_schema(schema)


# -- text ----------------------------------------------------------------------------------------------
def _text_part(opts: Any, parts: list, items: list) -> pa.Table:
    from strataflow.pyspark.sql.csv_records import _lines

    rows, values = [], []
    for url, pvalues, start, end in items:
        text = read_split(url, opts, start, end)
        lines = [text] if opts.whole_text else [line for line, _ in _lines(text, opts.line_sep)]
        rows.extend(lines)
        values.extend([pvalues] * len(lines))
    return _table([rows], T.StructType([T.StructField("value", T.StringType())]), parts, values)


def text_frame(session: Any, files: InputFiles, opts: Any) -> tuple[Any, pa.Schema]:
    """The Dataset and Arrow schema of a text read: a ``value`` line (or file) per row."""
    _, arrow = _full_schema(T.StructType([T.StructField("value", T.StringType())]), files)
    return _dataset(session, files, functools.partial(_text_part, opts, files.columns), opts,
                    not opts.whole_text), arrow
