"""Parquet files: row groups as the unit of partitioning, each partition a pyarrow Table.

A partition reads a contiguous run of row groups (never splitting one, as Spark's reader
splits on row-group boundaries), so partition counts are at most the number of row
groups; columnar, typed and already binary, Parquet needs no parsing.

The input is one file, or a directory of part files (``save_as_parquet``'s, with its
manifest, or any ``*.parquet`` files in name order): their row groups, in order, are the
units. The files' schemas are made one when the source is built (numeric types widen:
int64 and double give double) and every partition is cast to it, so no two partitions
of one dataset differ in schema; files whose schemas cannot be made one fail there,
naming them.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..config import ConfigError
from ..lineage import SourceNode
from .manifest import input_files
from .sources import slice_bounds

__all__ = ["ParquetSource"]


class ParquetSource(SourceNode):
    def __init__(self, path: str, num_partitions: int, columns: list[str] | None = None) -> None:
        import pyarrow.parquet as pq

        self.path = path
        self.columns = columns
        self.files: list[str] = []
        #: (file index, row group) of every row group, in order
        self.units: list[tuple[int, int]] = []
        schemas = []
        for name, rows in input_files(path, "parquet", ".parquet", "parquet_file"):
            try:
                meta = pq.ParquetFile(name).metadata
                schema = meta.schema.to_arrow_schema()
            except (OSError, pa.ArrowInvalid) as exc:
                raise ConfigError(f"parquet_file: {name!r} is not a readable Parquet file: {exc}") from None
            if rows is not None and meta.num_rows != rows:
                raise ConfigError(f"parquet_file: {name!r} holds {meta.num_rows} rows, its manifest says {rows}")
            self.units.extend((len(self.files), g) for g in range(meta.num_row_groups))
            self.files.append(name)
            schemas.append(schema)
        try:
            schema = pa.unify_schemas(schemas, promote_options="permissive") if len(schemas) > 1 else schemas[0]
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise ConfigError(f"parquet_file: the files of {path!r} have schemas that cannot be made one: {exc}") \
                from None
        if columns is not None:
            missing = [c for c in columns if c not in schema.names]
            if missing:
                raise ConfigError(f"parquet_file: {path!r} has no column(s) {missing}; it has {schema.names}")
            schema = pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)
        self.schema = schema
        self.bounds = slice_bounds(len(self.units), min(num_partitions, max(1, len(self.units))))
        self.num_partitions = len(self.bounds)

    def compute(self, split: int, tc: Any) -> pa.Table:
        import pyarrow.parquet as pq

        a, b = self.bounds[split]
        tables = []
        by_file: dict[int, list[int]] = {}
        for f, g in self.units[a:b]:
            by_file.setdefault(f, []).append(g)
        for f, groups in by_file.items():
            with pq.ParquetFile(self.files[f]) as pf:
                tables.append(pf.read_row_groups(groups, columns=self.columns, use_threads=False))
        if not tables:
            return self.schema.empty_table()
        if len(self.files) > 1:  # one file's schema is the schema; several: cast to their union
            tables = [t if t.schema.equals(self.schema) else t.cast(self.schema) for t in tables]
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def describe(self) -> str:
        return self.path
