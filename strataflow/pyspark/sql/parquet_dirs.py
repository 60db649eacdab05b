"""``spark.read.parquet`` over what ``partition_discovery`` listed: a plain path keeps the
fast path (``Context.parquet_file``: its manifest, the input cache, DuckDB's direct scan,
reading only the columns a query names); ``key=value`` directories are read a group of
files per partition value with the values appended as columns; a user schema selects
and casts the files' columns (a column the files lack is null).
"""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql import types as T
from strataflow.pyspark.sql.partition_discovery import InputFiles

__all__ = ["parquet_frame"]


def _schema_of(ds: Any) -> pa.Schema:
    known = getattr(ds.node, "schema", None)
    if isinstance(known, pa.Schema):
        return known
    if ds.num_partitions == 0:
        return pa.schema([])
    return ds._run(lambda v: v.schema if isinstance(v, pa.Table) else pa.table({}).schema, [0], "schema")[0]


def _with_values(names: list[str], types: list[pa.DataType], values: tuple, table: Any) -> Any:
    if not isinstance(table, pa.Table):
        return table
    for n, t, v in zip(names, types, values):
        table = table.append_column(pa.field(n, t), pa.array([v] * table.num_rows, type=t))
    return table


def _conformed(schema: pa.Schema, table: Any) -> Any:
    if not isinstance(table, pa.Table):
        return table
    cols = [table.column(f.name).cast(f.type) if f.name in table.column_names
            else pa.nulls(table.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def _parquet_columns(ctx: Any, where: Any, columns: list[str]) -> Any:
    return ctx.parquet_file(where, columns=columns)


def parquet_frame(ctx: Any, paths: tuple, listed: InputFiles, opts: Any,
                  user_schema: T.StructType | None) -> tuple[Any, pa.Schema, Any]:
    """(Dataset, Arrow schema, rescan or None) of a Parquet read."""
    if not listed.files:
        raise AnalysisException("[UNABLE_TO_INFER_SCHEMA] Unable to infer schema for Parquet. It must be specified "
                                "manually.", "UNABLE_TO_INFER_SCHEMA")
    names = [n for n, _ in listed.columns]
    columns_of = _file_columns(listed, opts)
    kept = [i for i, c in enumerate(columns_of) if c is not None]  # files whose footer reads
    skipped = len(kept) < len(columns_of)
    if skipped:
        listed = InputFiles([listed.files[i] for i in kept], [listed.values[i] for i in kept], listed.columns)
        columns_of = [columns_of[i] for i in kept]
        if not listed.files:
            raise AnalysisException("[UNABLE_TO_INFER_SCHEMA] Unable to infer schema for Parquet: every file was "
                                    "skipped (ignoreCorruptFiles / ignoreMissingFiles)", "UNABLE_TO_INFER_SCHEMA")
    plain = (not skipped and not listed.columns and not opts.path_glob_filter and not opts.recursive
             and len(set(columns_of)) == 1 and opts.modified_before is None and opts.modified_after is None)
    if plain:  # the fast path: one source, its manifest, DuckDB's direct scan, column pruning
        where = [str(p) for p in paths] if len(paths) > 1 else str(paths[0])
        ds = ctx.parquet_file(where)
        return _as_user(ds, _schema_of(ds), functools.partial(_parquet_columns, ctx, where), user_schema)
    types = [T._nested(t) for _, t in listed.columns]
    groups: dict[tuple, list[str]] = {}  # files of one partition value and one set of columns read together
    for (url, _), values, cols in zip(listed.files, listed.values, columns_of):
        groups.setdefault((values, cols), []).append(url)
    parts = [ctx.parquet_file(files) for files in groups.values()]
    data = pa.unify_schemas([_schema_of(p) for p in parts], promote_options="permissive")
    data = pa.schema([f for f in data if f.name not in names])
    schema = pa.schema(list(data) + [pa.field(n, t) for n, t in zip(names, types)])
    ds = None
    for p, (values, _) in zip(parts, groups):
        piece = p.map_partitions(functools.partial(_conformed, data)).map_partitions(
            functools.partial(_with_values, names, types, values))
        ds = piece if ds is None else ds.union(piece)
    return _as_user(ds, schema, None, user_schema)


def _file_columns(listed: InputFiles, opts: Any) -> list[tuple[str, ...] | None]:
    """Each file's column names (its footer), so files of other columns are read apart;
    None for a file skipped by ``ignoreMissingFiles`` / ``ignoreCorruptFiles``."""
    import fsspec
    import pyarrow.parquet as pq

    out: list[tuple[str, ...] | None] = []
    for url, _ in listed.files:
        try:
            with fsspec.open(url, "rb") as fh:
                out.append(tuple(pq.read_schema(fh).names))
        except FileNotFoundError:
            if not opts.ignore_missing:
                raise
            out.append(None)
        except (OSError, pa.ArrowInvalid) as exc:
            if not opts.ignore_corrupt:
                raise AnalysisException(f"[FAILED_READ_FILE] cannot read the Parquet footer of {url}: {exc} "
                                        f"(ignoreCorruptFiles=true skips such files)", "FAILED_READ_FILE") from None
            out.append(None)
    return out


def _as_user(ds: Any, schema: pa.Schema, rescan: Any, user_schema: T.StructType | None) -> tuple[Any, pa.Schema, Any]:
    if user_schema is not None:
        wanted = pa.schema([pa.field(f.name, T._nested(f.dataType)) for f in user_schema])
        return ds.map_partitions(functools.partial(_conformed, wanted)), wanted, None
    return ds, schema, rescan
