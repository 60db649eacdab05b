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

Every line is one record (Spark's ``multiLine=false``): a quoted field cannot hold a
newline, as the ranges are cut at newlines. A malformed line (an unterminated quote, the
wrong number of fields, a field not of its column's type, bytes that are not UTF-8 in a
string column) is found on its own, whatever the cut (``csv_lines.py``), and ``mode``
says what becomes of it, as Spark's reader option of that name:

- ``FAILFAST`` (the default here; Spark's is ``PERMISSIVE``): the job fails at once with a
  :class:`~strataflow.io.sources.MalformedInputError` naming the file, the line's number
  in the file and what is wrong, never a partition of another schema or fewer rows. The
  default because a wrong answer that looks right costs more than an error: a user who
  wants bad lines tolerated says so.
- ``DROPMALFORMED``: the line is left out, and counted (``Context.malformed_rows()``).
- ``PERMISSIVE``: the line is a row: its fields as far as they go and convert, the others
  null, and the line itself in a last string column, ``corrupt_record_column``
  (``_corrupt_record``, Spark's name; null on good rows; None: no such column). Counted too.

The schema pass reads the good lines only in the last two modes (and fails in the first).
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

import pyarrow as pa

from strataflow.config import ConfigError
from strataflow.lineage import SourceNode
from strataflow.io.cached_input import CachedInput
from strataflow.io.compression import codec_of_path, open_read
from strataflow.io.csv_lines import (BadLine, newline_in_values, open_quote_at_end, permissive_rows, sort_lines,
                                      string_array)
from strataflow.io.csv_parse import parse_range, parse_with_pyarrow
from strataflow.io.paths import FileRef
from strataflow.io.sources import MalformedInputError
from strataflow.io.text import TextSource, _find_newline
from strataflow.shipping.accumulators import AccumulatorParam

__all__ = ["CsvSource", "CsvTypesSource", "widen_types", "MODES", "PerSplitCounts"]

_MAX_BLOCK = (1 << 31) - 1  # pyarrow's block_size is an int32

_log = logging.getLogger(__name__)

#: ``csv_file``'s modes (Spark's names; any case), the first the default
MODES = ("FAILFAST", "DROPMALFORMED", "PERMISSIVE")



def _first_line(ref: FileRef) -> bytes:
    """The file's first line. A plain remote file's is read in ranges from 4 kB, doubling,
    until it ends: the buffered reader's first request would be a whole MiB, the cost of
    a header read that a second application's cached read otherwise does not pay."""
    if not ref.local and codec_of_path(ref.path) is None:
        end = 1 << 12
        while True:
            head = ref.read_range(0, end)
            nl = head.find(b"\n")
            if nl != -1 or len(head) < end:
                return head[:nl + 1] if nl != -1 else head
            end *= 2
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


class PerSplitCounts(AccumulatorParam):
    """An accumulator of ``{split: malformed lines}``: a split read again (a recomputed
    partition, a second job) sets its count again instead of adding to it, so the total is
    the malformed lines of the input read so far, each counted once."""

    def zero(self, value: dict) -> dict:
        return {}

    def add_in_place(self, value1: dict, value2: dict) -> dict:
        value1.update(value2)
        return value1


def parse_mode(mode: str) -> str:
    """``mode`` as one of :data:`MODES` (Spark's are case-insensitive), else ConfigError."""
    name = str(mode).upper()
    if name not in MODES:
        raise ConfigError(f"csv_file: mode must be one of {', '.join(MODES)}, got {mode!r}")
    return name


class CsvSource(TextSource):
    """Each partition a Table of ``schema`` (settled before any partition is read:
    ``untyped`` lists the columns whose types ``set_types`` must still give)."""

    op = "csv_file"

    def __init__(self, path: str, min_partitions: int, delimiter: str = ",",
                 column_names: list[str] | None = None, column_types: dict | None = None,
                 header: bool = False, recursive: bool = False, mode: str = "FAILFAST",
                 corrupt_record_column: str | None = "_corrupt_record") -> None:
        super().__init__(path, min_partitions, recursive=recursive)
        if not isinstance(delimiter, str) or len(delimiter.encode()) != 1 or delimiter in '"\r\n':
            raise ConfigError(f"csv_file: delimiter must be one single-byte character other than a quote or a "
                              f"newline, got {delimiter!r}")
        self.delimiter = delimiter
        self.header = header
        self.mode = parse_mode(mode)
        self.corrupt_column = corrupt_record_column if self.mode == "PERMISSIVE" else None
        #: the driver's accumulator of malformed lines (``PerSplitCounts``), set by the reader
        self.malformed: Any = None
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
        if self.corrupt_column is not None and self.corrupt_column in self.column_names:
            raise ConfigError(f"csv_file: corrupt_record_column {self.corrupt_column!r} is the name of a column of "
                              f"{self.path!r}; name another (or None for no such column)")

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
    def data_schema(self) -> pa.Schema:
        """The columns of the file."""
        return pa.schema([(n, self.column_types.get(n, pa.string())) for n in self.column_names])

    @property
    def schema(self) -> pa.Schema:
        """The partitions' schema: the file's columns, and in PERMISSIVE mode the corrupt
        record column last."""
        schema = self.data_schema
        return schema.append(pa.field(self.corrupt_column, pa.string())) if self.corrupt_column else schema

    def _data(self, split: int) -> tuple[memoryview, int]:
        """The split's lines, less the header line where the split starts a file, and the
        file offset of their first byte."""
        data, offset = self.read_lines(split)
        if self.header and self.splits[split][1] == 0 and len(data):
            nl = _find_newline(data, 0, len(data))
            cut = nl + 1 if nl != -1 else len(data)
            data, offset = data[cut:], offset + cut
        return data, offset

    def _parse(self, split: int, types: dict | pa.Schema, whole: bool) -> list[pa.Table | BadLine]:
        """The split's rows: of ``types`` (the whole schema: ``csv_parse.parse_range``,
        polars where it can), or, for the inference pass (``whole``), pyarrow's types for
        the columns ``types`` does not name, the range parsed as one block. One table
        where every line is good (checked as ``csv_lines.py`` says); else the tables of
        the good lines and the malformed lines, in order, in DROPMALFORMED and PERMISSIVE
        mode; in FAILFAST mode the first malformed line fails the task."""
        data, offset = self._data(split)
        if not data or (len(data) < 4096 and not bytes(data).strip()):
            return []
        if whole:
            def parse(piece: Any, invalid_row_handler: Any = None) -> pa.Table:
                return parse_with_pyarrow(piece, self.column_names, types, self.delimiter,
                                          block_size=min(_MAX_BLOCK, max(len(piece), 1 << 20)),
                                          invalid_row_handler=invalid_row_handler)
        else:
            def parse(piece: Any, invalid_row_handler: Any = None) -> pa.Table:
                if invalid_row_handler is None:
                    return parse_range(piece, types, self.delimiter)
                return parse_with_pyarrow(piece, self.column_names, types, self.delimiter,
                                          invalid_row_handler=invalid_row_handler)
        try:
            table = parse(data)
            if not newline_in_values(table) and not open_quote_at_end(data, self.delimiter):
                return [table]
        except pa.ArrowInvalid:
            pass
        pieces = sort_lines(bytes(data), parse, self.delimiter, self.column_names, ordered=not whole,
                            first=self.mode == "FAILFAST")
        bad = [p for p in pieces if isinstance(p, BadLine)]
        if bad and self.mode == "FAILFAST":
            raise self._failure(split, data, offset, bad[0])
        if bad and not whole:
            self._report(split, data, offset, bad)
        return pieces

    def _line_of(self, split: int, data: memoryview, offset: int, bad: BadLine) -> int:
        """``bad``'s line number in its file (counted from the file's start: see ``line_number``)."""
        starts = bytes(data).split(b"\n", bad.index)
        at = len(data) - len(starts[-1]) if len(starts) > bad.index else len(data)
        return self.line_number(split, offset, data, at)

    def _failure(self, split: int, data: memoryview, offset: int, bad: BadLine) -> MalformedInputError:
        ref = self.splits[split][0]
        line = self._line_of(split, data, offset, bad)
        return MalformedInputError(f"csv_file: {ref.name!r} cannot be parsed at line {line}: {bad.reason}: "
                                   f"{bad.shown()} (mode='DROPMALFORMED' leaves such lines out, "
                                   f"mode='PERMISSIVE' reads them as nulls)", path=ref.name, line=line,
                                   reason=bad.reason)

    def _report(self, split: int, data: memoryview, offset: int, bad: list[BadLine]) -> None:
        """Counts the split's malformed lines (once per split: ``PerSplitCounts``) and logs
        the first, with its line number where that costs no read of a remote file."""
        if self.malformed is not None:
            self.malformed.add({split: len(bad)})
        ref = self.splits[split][0]
        where = f"line {self._line_of(split, data, offset, bad[0])}" if ref.local else \
            f"the lines from byte {offset}"
        _log.warning("csv_file: %d malformed line(s) of %r %s; the first, at %s: %s: %s", len(bad), ref.name,
                     "left out (DROPMALFORMED)" if self.mode == "DROPMALFORMED" else "read as rows with nulls "
                     "(PERMISSIVE)", where, bad[0].reason, bad[0].shown())

    def input_options(self) -> dict:
        return {"delimiter": self.delimiter, "header": self.header, "mode": self.mode,
                "corrupt": self.corrupt_column, "schema": [(f.name, str(f.type)) for f in self.schema]}

    def replay(self, split: int, meta: dict) -> None:
        """A partition served from the input cache counts its malformed lines again."""
        n = int(meta.get("malformed", 0))
        if n and self.malformed is not None:
            self.malformed.add({split: n})
        if n:
            _log.warning("csv_file: %d malformed line(s) of %r %s (partition %d, served from the input cache)", n,
                         self.splits[split][0].name, "left out (DROPMALFORMED)" if self.mode == "DROPMALFORMED"
                         else "read as rows with nulls (PERMISSIVE)", split)

    def decode(self, split: int, tc: Any) -> tuple[pa.Table, dict]:
        pieces = self._parse(split, self.data_schema, whole=False) if self.column_names else []
        bad = [p for p in pieces if isinstance(p, BadLine)]
        return self._table(pieces, bad), {"malformed": len(bad)} if bad else {}

    def _table(self, pieces: list, bad: list[BadLine]) -> pa.Table:
        rows = texts = None
        if bad and self.mode == "PERMISSIVE":
            rows = permissive_rows(bad, self.data_schema, self.delimiter)
            texts = string_array([b.text.decode("utf-8", "replace") for b in bad])
        corrupt, tables, j = self.corrupt_column, [], 0
        for piece in pieces:
            if isinstance(piece, BadLine):
                if rows is None:
                    continue
                table, text = rows.slice(j, 1), texts.slice(j, 1)
                j += 1
            else:
                table, text = piece, pa.nulls(piece.num_rows, pa.string())
            tables.append(table.append_column(pa.field(corrupt, pa.string()), text) if corrupt else table)
        if not tables:
            return self.schema.empty_table()
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def infer_types(self, split: int) -> dict:
        """The types this split's rows give the untyped columns (the inference pass): its
        good lines' (where some are malformed the good ones are parsed in pieces, each
        inferring its own types: combined as the splits' are, a null giving way)."""
        pieces = self._parse(split, self.column_types, whole=True) if self.column_names else []
        out: dict = {}
        for t in pieces:
            if isinstance(t, pa.Table):
                for n in self.untyped:
                    got = t.schema.field(n).type
                    out[n] = got if n not in out else _widen(out[n], got)
        return out


class CsvTypesSource(CachedInput, SourceNode):
    """The inference pass: partition i is ``[types of split i]`` of a CsvSource. Through
    the input cache too: a second application reading the same files infers from the cache
    instead of parsing them all once more before its first job."""

    op = "csv_file infer_schema"
    parses = True

    def __init__(self, source: CsvSource) -> None:
        self.source = source
        self.num_partitions = source.num_partitions
        self.files = source.files

    def input_files(self, split: int) -> list[FileRef]:
        return self.source.input_files(split)

    def input_part(self, split: int) -> str:
        return self.source.input_part(split)

    def input_options(self) -> dict:
        s = self.source
        return {"delimiter": s.delimiter, "header": s.header, "mode": s.mode, "names": s.column_names,
                "given": sorted((n, str(t)) for n, t in s.column_types.items()), "untyped": s.untyped}

    def decode(self, split: int, tc: Any) -> tuple[list, dict]:
        return [self.source.infer_types(split)], {}

    def describe(self) -> str:
        return f"types of {self.source.path}"
