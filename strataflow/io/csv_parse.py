"""One byte range of delimited text -> a pyarrow Table of a given schema: pyarrow's CSV
reader, or polars where it is asked for (``STRATAFLOW_CSV_PARSER=polars``), installed, and
the columns are floats (and never where polars would not give exactly what pyarrow gives).

Why polars: text -> numbers is the load of most first jobs, and on our K-means text
polars' reader parses a partition's range (75 MB, one core) about 1.2x faster than
pyarrow's (``benchmarks/csv_parsers.py``; ``docs/lab-notes/benchmarks-history.md``). Both parse floats
exactly (correctly rounded, as Python's ``float()``). It is an extra (``pip install
strataflow[fast-csv]``); without it nothing changes.

Why only float columns, and why the fallback: the result must not depend on which parser
ran. For float columns the two agree on every value polars accepts (checked field by
field in ``tests/test_csv_parse.py``: exponents, ``inf``/``Infinity``, ``-0.0``, quoted
numbers, ``\\r\\n``, subnormals, 17-digit and longer mantissas). Where they differ polars
fails (``1 ``, ``nan(1)``, ``NA``, a field that is not a number, a row with too many
fields), fills nulls where pyarrow skips or refuses a line (a blank line, a row with too
few fields), or reads NaN where pyarrow reads a null (``NaN``, ``nan``: pyarrow's null
tokens; giving polars that list cost it 40% of its speed). So a polars table is used only
when polars succeeded and it holds no null and no NaN; otherwise the range is parsed
again by pyarrow, whose result or error (naming the row) is exactly today's. Input with
missing values or NaNs thus always takes the pyarrow path.

Why opt-in, not the default: in the engine the gain did not show (K-means end to end,
polars 2.50 s, pyarrow 2.40 s, one run), while polars' own allocator keeps parse buffers
as anonymous memory: the driver of a threads-backend K-means peaked 7 MB above the memory
ceiling the docs state (``tests/test_memory_bound.py``: 116 MB against 113 MB; pyarrow
109 MB). ``STRATAFLOW_CSV_PARSER=polars`` in the environment (read at each parse, so
executors started with it obey it too) turns the polars path on.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

__all__ = ["parse_range", "parse_with_polars", "parse_with_pyarrow", "polars_available", "PARSER_ENV"]

#: the environment variable that turns the polars path on (``polars``)
PARSER_ENV = "STRATAFLOW_CSV_PARSER"

_POLARS: Any = None  # the module once imported; False when absent


def polars_available() -> bool:
    """True when polars imports (the ``fast-csv`` extra)."""
    global _POLARS
    if _POLARS is None:
        try:
            import polars

            _POLARS = polars
        except ImportError:
            _POLARS = False
    return _POLARS is not False


def _polars_types(schema: pa.Schema) -> dict | None:
    """The polars dtype of each column, or None unless every column is a float."""
    pl = _POLARS
    out = {}
    for field in schema:
        if field.type == pa.float64():
            out[field.name] = pl.Float64
        elif field.type == pa.float32():
            out[field.name] = pl.Float32
        else:
            return None
    return out


def parse_with_polars(data: memoryview | bytes, schema: pa.Schema, delimiter: str) -> pa.Table | None:
    """``data`` parsed by polars as ``schema``, or None where polars is absent or turned
    off, a column is not a float, polars fails, or its table holds a null (see the module
    docstring: pyarrow then decides)."""
    if os.environ.get(PARSER_ENV, "").lower() != "polars" or not polars_available():
        return None
    types = _polars_types(schema) if len(schema) else None
    if types is None or len(delimiter.encode()) != 1:
        return None
    pl = _POLARS
    try:
        frame = pl.read_csv(bytes(data), has_header=False, separator=delimiter, schema=types, quote_char='"')
    except Exception:  # noqa: BLE001 - any refusal (bad field, ragged row, polars' own error): pyarrow decides
        return None
    table = frame.to_arrow()
    if table.column_names != schema.names or any(col.null_count or _has_nan(col) for col in table.columns):
        return None
    return table if table.schema.equals(schema) else table.cast(schema)


def _has_nan(col: pa.ChunkedArray) -> bool:
    """True where a value may be NaN: pyarrow reads ``NaN``, ``nan``, ``-nan`` as null, polars
    as NaN, so a table with one goes to pyarrow (one sum a chunk: NaN propagates; a sum of
    inf and -inf is NaN too, a false alarm that costs only the pyarrow parse)."""
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore"):
        return any(np.isnan(np.sum(chunk.to_numpy(zero_copy_only=True))) for chunk in col.chunks)


def parse_with_pyarrow(data: memoryview | bytes, names: list[str], types: dict | pa.Schema, delimiter: str,
                       block_size: int | None = None, invalid_row_handler: Any = None) -> pa.Table:
    """``data`` parsed by pyarrow's CSV reader (one thread; ``block_size``: its default
    1 MB blocks unless given), columns ``names`` of ``types`` (those it does not name
    inferred); raises ``pa.ArrowInvalid`` naming the row for a bad row (one of the wrong
    width goes to ``invalid_row_handler`` instead, where given: ``csv_lines.py``)."""
    import pyarrow.csv as pacsv

    read = pacsv.ReadOptions(column_names=names, use_threads=False,
                             **({"block_size": block_size} if block_size else {}))
    return pacsv.read_csv(pa.BufferReader(pa.py_buffer(data)), read_options=read,
                          parse_options=pacsv.ParseOptions(delimiter=delimiter, invalid_row_handler=invalid_row_handler),
                          convert_options=pacsv.ConvertOptions(column_types=types))


def parse_range(data: memoryview | bytes, schema: pa.Schema, delimiter: str) -> pa.Table:
    """One partition's lines as a Table of ``schema``: polars' where it gives exactly
    pyarrow's result, else pyarrow's (which raises ``pa.ArrowInvalid`` for a bad row)."""
    table = parse_with_polars(data, schema, delimiter)
    if table is not None:
        return table
    # In pyarrow's 1 MB blocks: a chunk per MB of text. One block for the whole range gave a
    # chunk per column (``to_numpy`` a view) at the same parse speed, but held the whole
    # range's parse state at once: a task's peak memory over the stated ceiling
    # (tests/test_memory_bound.py). The input cache joins the chunks as it writes, off the
    # task's path (``store/inputs.py``).
    return parse_with_pyarrow(data, schema.names, schema, delimiter)
