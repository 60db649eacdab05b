"""The first query over a Parquet file, run by DuckDB's own Parquet reader.

A DataFrame read from Parquet first ran each partition as two steps: pyarrow decoded the
partition's row groups (every value of every column the query names) into a Table, then
DuckDB ran the query over it. DuckDB's reader (``read_parquet``) does better on the same
row groups: it skips row groups whose statistics rule the filter out, compares strings
through the column's dictionary, and decodes the other columns only for the rows that
pass. TPC-H q19 over lineitem at SF1, one core: pyarrow's read of the six columns 2.0 s
then the query 0.3 s, against 0.3 s for both (``docs/dataframes.md``).

So a partition of the first query over a plain Parquet source (local files of one
schema, no Python UDF, the input cache not asked to keep it) is that query over a view of
its own row groups: ``read_parquet(file, file_row_number=true)`` limited to the
partition's rows, which DuckDB turns into a range of row groups. Each column is cast to
the type the Arrow path would have given DuckDB (a no-op where they agree, which DuckDB
drops), so the answer, its types and its row order are the Arrow path's.

A file DuckDB cannot read falls back to that path: pyarrow reads it (or fails naming the
row groups, as before), so nothing is lost and errors read as they did.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from strataflow.lineage import SourceNode
from strataflow.pyspark.sql.engine import run_on_view
from strataflow.pyspark.sql.task_memory import within_task_memory
from strataflow.pyspark.sql.tasks import T, run_partition

__all__ = ["ParquetQuery", "direct_views"]

_SIMPLE = {pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INTEGER", pa.int64(): "BIGINT",
           pa.float32(): "FLOAT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN", pa.string(): "VARCHAR",
           pa.binary(): "BLOB", pa.date32(): "DATE"}


def _duck_type(t: pa.DataType) -> str | None:
    """The DuckDB type an Arrow column of type ``t`` is scanned as; None for a type left to
    the Arrow path (nested, unsigned, nanosecond...)."""
    if t in _SIMPLE:
        return _SIMPLE[t]
    if pa.types.is_decimal128(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_timestamp(t) and t.unit == "us":
        return "TIMESTAMPTZ" if t.tz is not None else "TIMESTAMP"
    return None


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def direct_views(node: Any, schema: pa.Schema) -> list[str | None] | None:
    """Per partition of ``node`` (a ParquetSource), the SQL of the view of its rows that
    DuckDB reads directly, or None where a partition has no rows; None altogether when
    the source does not qualify (remote files, files of differing schemas, a column type
    or name DuckDB would read otherwise)."""
    types = [_duck_type(f.type) for f in schema]
    names = [f.name.lower() for f in schema]
    if (not getattr(node, "uniform", False) or not all(f.local for f in node.files) or None in types
            or len(set(names)) < len(names) or "file_row_number" in names):
        return None
    columns = ", ".join(f"CAST({_quoted(f.name)} AS {t}) AS {_quoted(f.name)}" for f, t in zip(schema, types))
    starts, at = [], 0  # each unit's first row in its file
    for i, (f, _) in enumerate(node.units):
        at = 0 if i == 0 or node.units[i - 1][0] != f else at
        starts.append(at)
        at += node.unit_rows[i]
    views: list[str | None] = []
    for a, b in node.bounds:
        parts, i = [], a
        while i < b:
            f, j = node.units[i][0], i
            while j < b and node.units[j][0] == f:
                j += 1
            lo, hi = starts[i], starts[j - 1] + node.unit_rows[j - 1]
            path = node.files[f].path.replace("'", "''")
            parts.append(f"SELECT {columns} FROM read_parquet('{path}', file_row_number=true) "
                         f"WHERE file_row_number >= {lo} AND file_row_number < {hi}")
            i = j
        views.append(" UNION ALL ".join(parts) if parts else None)
    return views


class ParquetQuery(SourceNode):
    """The partitions of ``sql`` over a Parquet source, each read by DuckDB from its own
    row groups (``views``), or through the source (pyarrow, the input cache) where that
    partition's view is None, the input cache keeps this source, or DuckDB cannot read it."""

    op = "parquet_query"

    def __init__(self, source: Any, views: list[str | None], sql: str, schema: pa.Schema) -> None:
        self.source, self.views, self.sql, self.schema = source, views, sql, schema
        self.num_partitions = source.num_partitions

    def compute(self, split: int, tc: Any) -> pa.Table:
        view = self.views[split]
        inputs = getattr(getattr(tc, "runtime", None), "inputs", None)
        if view is not None and (inputs is None or not self.source.wanted(inputs.mode)):
            import duckdb

            try:
                return within_task_memory(tc, [], lambda: run_on_view(self.sql, T, view))
            except duckdb.Error:  # a file DuckDB cannot read: pyarrow's reader reads it or says why
                pass
        value = self.source.compute(split, tc)
        return within_task_memory(tc, [value], lambda: run_partition(self.sql, self.schema, (), value))

    def describe(self) -> str:
        return self.source.describe()
