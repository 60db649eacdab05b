"""Delimited text (CSV) as pyarrow Table partitions with ONE schema for all of them.

Partitions are the line-aligned byte ranges of ``TextSource``, each parsed by pyarrow's
vectorized CSV reader, or by polars' where it is installed and gives the same table
(float columns; see ``csv_parse.py``). Left alone, pyarrow would infer each range's types from that
range: one range's column of ``1, 2`` is int64, another's ``1.5`` double, another's all
empty null, and a job that combines them fails (a header row read as data makes every
column string in the first range only). So the schema is settled on the driver, when
the dataset is made, and every partition is parsed with it:

- names: ``column_names``, else the header (``header=True``: the first line of every file,
  which must agree, and which is never a data row), else pyarrow's ``f0``, ``f1``...;
- types: ``column_types`` for the columns it names; the others are inferred from the
  whole input (``infer_schema=True``: one pass over the data, as Spark's ``inferSchema``,
  each range parsed in one block so every row counts, the ranges' types then widened to
  one: null gives way to anything, int64 and double give double, other mixes give
  string), or all strings (``infer_schema=False``, no pass). Name every column's type to
  skip the pass.

A field that does not fit its column's type fails the job at once (an
:class:`~strataflow.io.sources.InputError` naming the file and byte range), never a
partition of another schema. Quoted fields with newlines inside are not supported (the
ranges are cut at newlines).
"""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa

from strataflow.config import ConfigError
from strataflow.lineage import SourceNode
from strataflow.io.compression import open_read
from strataflow.io.csv_parse import parse_range, parse_with_pyarrow
from strataflow.io.paths import FileRef
from strataflow.io.sources import InputError
from strataflow.io.text import TextSource, _find_newline

__all__ = ["CsvSource", "CsvTypesSource", "widen_types"]

_MAX_BLOCK = (1 << 31) - 1  # pyarrow's block_size is an int32


def _first_line(ref: FileRef) -> bytes:
    with open_read(ref) as fh:
        return fh.readline()


def widen_types(found: Sequence[dict]) -> dict:
    """Each column's type from the types the ranges inferred (see the module docstring)."""
    out: dict = {}
    for types in found:
        for name, t in types.items():
            out[name] = t if name not in out else _widen(out[name], t)
    return {name: pa.string() if pa.types.is_null(t) else t for name, t in out.items()}


def _widen(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    numeric = (pa.types.is_integer, pa.types.is_floating)
    if any(f(a) for f in numeric) and any(f(b) for f in numeric):
        return pa.int64() if pa.types.is_integer(a) and pa.types.is_integer(b) else pa.float64()
    return pa.string()


class CsvSource(TextSource):
    """Each partition a Table of ``schema`` (settled before any partition is read:
    ``untyped`` lists the columns whose types ``set_types`` must still give)."""

    op = "csv_file"

    def __init__(self, path: str, min_partitions: int, delimiter: str = ",",
                 column_names: list[str] | None = None, column_types: dict | None = None,
                 header: bool = False, recursive: bool = False) -> None:
        super().__init__(path, min_partitions, recursive=recursive)
        self.delimiter = delimiter
        self.header = header
        files = self.files
        names = list(column_names) if column_names is not None else None
        if header or names is None:
            found = self._first_line_names(files, autogenerate=not header)
            names = names if names is not None else found
        self.column_names: list[str] = names or []
        if len(set(self.column_names)) != len(self.column_names):
            raise ConfigError(f"csv_file: column names repeat: {self.column_names}")
        self.column_types = dict(column_types or {})
        unknown = [n for n in self.column_types if n not in self.column_names]
        if unknown:
            raise ConfigError(f"csv_file: column_types names {unknown}, which are not columns of {self.path!r} "
                              f"(columns: {self.column_names})")

    def _first_line_names(self, files: list[FileRef], autogenerate: bool) -> list[str] | None:
        """The header's names (the same in every file), or ``f0``... for the first line's
        fields; None for input with no lines."""
        import pyarrow.csv as pacsv

        names, first = None, None
        for f in files:
            line = _first_line(f)
            if not line.strip():
                continue
            try:
                got = pacsv.read_csv(pa.BufferReader(line), read_options=pacsv.ReadOptions(
                    use_threads=False, autogenerate_column_names=autogenerate),
                    parse_options=pacsv.ParseOptions(delimiter=self.delimiter)).column_names
            except pa.ArrowInvalid as exc:
                raise ConfigError(f"csv_file: the first line of {f.name!r} cannot be parsed: {exc}") from None
            if names is None:
                names, first = got, f
            elif got != names:
                raise ConfigError(f"csv_file: the header of {f.name!r} is {got}, that of {first.name!r} {names}; "
                                  "the files of one input must have the same columns")
            if autogenerate:
                break
        return names

    @property
    def untyped(self) -> list[str]:
        return [n for n in self.column_names if n not in self.column_types]

    def set_types(self, types: dict) -> None:
        self.column_types.update(types)

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([(n, self.column_types.get(n, pa.string())) for n in self.column_names])

    def _data(self, split: int) -> memoryview:
        """The split's lines, less the header line where the split starts a file."""
        data = self.read_lines_bytes(split)
        if self.header and self.splits[split][1] == 0 and len(data):
            nl = _find_newline(data, 0, len(data))
            data = data[nl + 1:] if nl != -1 else memoryview(b"")
        return data

    def _parse(self, split: int, types: dict | pa.Schema, whole: bool) -> pa.Table | None:
        """The split's rows: of ``types`` (the whole schema: ``csv_parse.parse_range``,
        polars where it can), or, for the inference pass (``whole``), pyarrow's types for
        the columns ``types`` does not name, the range parsed as one block."""
        data = self._data(split)
        if not data or (len(data) < 4096 and not bytes(data).strip()):
            return None
        try:
            if whole:
                return parse_with_pyarrow(data, self.column_names, types, self.delimiter,
                                          block_size=min(_MAX_BLOCK, max(len(data), 1 << 20)))
            return parse_range(data, types, self.delimiter)
        except pa.ArrowInvalid as exc:
            ref, start, _ = self.splits[split]
            raise InputError(f"csv_file: {ref.name!r} cannot be parsed in the lines from byte {start} on: {exc}") \
                from None

    def compute(self, split: int, tc: Any) -> pa.Table:
        table = self._parse(split, self.schema, whole=False) if self.column_names else None
        return self.schema.empty_table() if table is None else table

    def infer_types(self, split: int) -> dict:
        """The types this split's rows give the untyped columns (the inference pass)."""
        table = self._parse(split, self.column_types, whole=True) if self.column_names else None
        if table is None:
            return {}
        return {n: table.schema.field(n).type for n in self.untyped}


class CsvTypesSource(SourceNode):
    """The inference pass: partition i is ``[types of split i]`` of a CsvSource."""

    def __init__(self, source: CsvSource) -> None:
        self.source = source
        self.num_partitions = source.num_partitions

    def compute(self, split: int, tc: Any) -> list:
        return [self.source.infer_types(split)]

    def describe(self) -> str:
        return f"types of {self.source.path}"
