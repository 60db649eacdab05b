"""Parquet files: row groups as the unit of partitioning, each partition a pyarrow Table.

A partition reads a contiguous run of row groups (never splitting one, as Spark's reader
splits on row-group boundaries), so partition counts are at most the number of row
groups; columnar, typed and already binary, Parquet needs no parsing.

The input is files (any path ``paths.py`` takes: globs, lists, URLs) or directories of
part files (``save_as_parquet``'s, with its manifest, or any ``*.parquet`` files in name
order): their row groups, in order, are the units. The files' schemas are made one when the source is built (numeric types widen:
int64 and double give double) and every partition is cast to it, so no two partitions
of one dataset differ in schema; files whose schemas cannot be made one fail there,
naming them.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import pyarrow as pa

from strataflow.config import ConfigError
from strataflow.lineage import SourceNode
from strataflow.io.cached_input import CachedInput
from strataflow.io.manifest import input_files
from strataflow.io.paths import FileRef, split_paths
from strataflow.io.sources import slice_bounds

__all__ = ["ParquetSource"]


@contextmanager
def _open(ref: FileRef) -> Iterator[Any]:
    """The file as a ``pq.ParquetFile``: a local one by its path (pyarrow maps it); a
    remote one through its fsspec file object, which pyarrow reads by seeks and ranged
    reads (the footer, then only the row groups and columns asked for)."""
    import pyarrow.parquet as pq

    if ref.local:
        with pq.ParquetFile(ref.path) as pf:
            yield pf
        return
    with ref.open() as fh, pq.ParquetFile(fh) as pf:
        yield pf


def _string_widths(meta: Any) -> dict[str, float]:
    """About how many bytes a value of each string column takes in memory (its offset and
    characters), from the first row group's min and max statistics: a planner's estimate,
    since dictionary-encoded columns say nothing of it by their sizes."""
    out: dict[str, float] = {}
    if meta.num_row_groups == 0:
        return out
    rg = meta.row_group(0)
    for i in range(rg.num_columns):
        col = rg.column(i)
        stats = col.statistics
        if col.physical_type == "BYTE_ARRAY" and "." not in col.path_in_schema and stats is not None \
                and stats.has_min_max and isinstance(stats.min, (str, bytes)):
            out[col.path_in_schema] = (len(stats.min) + len(stats.max)) / 2 + 4
    return out


class ParquetSource(CachedInput, SourceNode):
    """Whole row groups of Parquet files as Table partitions; through the input cache
    (``cached_input.py``) for remote files (``input_cache="auto"``), local ones with ``"on"``."""

    op = "parquet_file"

    def __init__(self, path: Any, num_partitions: int, columns: list[str] | None = None,
                 recursive: bool = False) -> None:
        self.path = ",".join(split_paths(path))
        self.columns = columns
        self.files: list[FileRef] = []
        #: (file index, row group) of every row group, in order
        self.units: list[tuple[int, int]] = []
        self.unit_rows: list[int] = []  # the rows of each unit, from the footers
        self.num_rows = 0  # from the footers: what a planner may know before reading a row
        self.value_bytes: dict[str, float] = {}  # a string column's bytes per value in memory, about
        schemas = []
        for ref, rows in input_files(path, "parquet", ".parquet", "parquet_file", recursive):
            try:
                with _open(ref) as pf:
                    meta = pf.metadata
                schema = meta.schema.to_arrow_schema()
            except (OSError, pa.ArrowInvalid) as exc:
                raise ConfigError(f"parquet_file: {ref.name!r} is not a readable Parquet file: {exc}") from None
            if rows is not None and meta.num_rows != rows:
                raise ConfigError(f"parquet_file: {ref.name!r} holds {meta.num_rows} rows, its manifest says {rows}")
            self.units.extend((len(self.files), g) for g in range(meta.num_row_groups))
            self.unit_rows.extend(meta.row_group(g).num_rows for g in range(meta.num_row_groups))
            self.num_rows += meta.num_rows
            if not self.files:
                self.value_bytes = _string_widths(meta)
            self.files.append(ref)
            schemas.append(schema)
        try:
            schema = pa.unify_schemas(schemas, promote_options="permissive") if len(schemas) > 1 else schemas[0]
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise ConfigError(f"parquet_file: the files of {self.path!r} have schemas that cannot be made one: {exc}") \
                from None
        #: every file has the unified schema: a partition is its row groups as they are, uncast
        self.uniform = all(s.remove_metadata().equals(schema.remove_metadata()) for s in schemas)
        if columns is not None:
            missing = [c for c in columns if c not in schema.names]
            if missing:
                raise ConfigError(f"parquet_file: {self.path!r} has no column(s) {missing}; it has {schema.names}")
            schema = pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)
        self.schema = schema
        self.bounds = slice_bounds(len(self.units), min(num_partitions, max(1, len(self.units))))
        self.num_partitions = len(self.bounds)

    def input_files(self, split: int) -> list[FileRef]:
        a, b = self.bounds[split]
        return [self.files[f] for f in dict.fromkeys(f for f, _ in self.units[a:b])]

    def input_part(self, split: int) -> str:
        a, b = self.bounds[split]
        return "row groups " + " ".join(f"{self.files[f].name}:{g}" for f, g in self.units[a:b])

    def input_options(self) -> dict:
        return {"columns": self.columns, "schema": str(self.schema)}

    def decode(self, split: int, tc: Any) -> tuple[pa.Table, dict]:
        return self._read(split), {}

    def _read(self, split: int) -> pa.Table:
        a, b = self.bounds[split]
        tables = []
        by_file: dict[int, list[int]] = {}
        for f, g in self.units[a:b]:
            by_file.setdefault(f, []).append(g)
        for f, groups in by_file.items():
            try:
                with _open(self.files[f]) as pf:
                    tables.append(pf.read_row_groups(groups, columns=self.columns, use_threads=False))
            except (OSError, pa.ArrowException) as exc:  # a corrupt page: say which file and row groups
                raise OSError(f"parquet_file: {self.files[f].name!r}, row groups {groups[0]}..{groups[-1]}, "
                              f"cannot be read: {exc}") from exc
        if not tables:
            return self.schema.empty_table()
        if len(self.files) > 1:  # one file's schema is the schema; several: cast to their union
            tables = [t if t.schema.equals(self.schema) else t.cast(self.schema) for t in tables]
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def describe(self) -> str:
        return self.path
