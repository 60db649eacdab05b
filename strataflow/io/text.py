"""Text files: byte ranges cut at line boundaries, as Hadoop's TextInputFormat.

Each file is cut into byte ranges of ``total // min_partitions`` bytes (so there are at
least ``min_partitions`` of them when the files hold that many bytes). A range
owns the lines that *start* inside it: it skips a partial first line (unless it starts
the file or follows a newline) and reads past its end to finish its last line. Because
UTF-8 never uses byte 0x0A inside a multi-byte character, byte cuts are safe for unicode.
Lines come without their ``\\n`` (and without a ``\\r`` before it).
"""

from __future__ import annotations

import os
from typing import Any

from ..config import ConfigError
from ..lineage import SourceNode

__all__ = ["TextSource", "CsvSource", "list_input_files"]

_READ_AHEAD = 1 << 16


def list_input_files(path: str) -> list[str]:
    """The files a path names: itself, or a directory's visible files (not ``_``/``.``)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        files = sorted(
            os.path.join(path, n) for n in os.listdir(path)
            if not n.startswith(("_", ".")) and os.path.isfile(os.path.join(path, n))
        )
        return files
    if os.path.isfile(path):
        return [path]
    raise ConfigError(f"text_file: path {path!r} does not exist")


class TextSource(SourceNode):
    def __init__(self, path: str, min_partitions: int, encoding: str = "utf-8") -> None:
        self.path = path
        self.encoding = encoding
        files = list_input_files(path)
        total = sum(os.path.getsize(f) for f in files)
        # Floor, as Hadoop's goal size: a ceiling would give fewer than min_partitions
        # ranges (10 bytes, 9 wanted: 2-byte ranges, only 5 of them).
        goal = max(1, total // max(1, min_partitions))
        self.splits: list[tuple[str, int, int]] = []
        for f in files:
            size = os.path.getsize(f)
            start = 0
            while start < size:
                length = min(goal, size - start)
                if size - (start + length) < goal * 0.1:  # no tiny tail split (Hadoop's slop)
                    length = size - start
                self.splits.append((f, start, start + length))
                start += length
        if not self.splits:
            self.splits.append((files[0] if files else path, 0, 0))
        self.num_partitions = len(self.splits)

    def read_lines_bytes(self, split: int) -> bytes:
        """The bytes of the whole lines that start in this split (newlines included)."""
        path, start, end = self.splits[split]
        if end <= start:
            return b""
        with open(path, "rb") as f:
            if start > 0:
                f.seek(start - 1)
                data = f.read(end - start + 1)
                nl = data.find(b"\n")
                if nl == -1:
                    # No line starts in this range (the previous range's line covers it);
                    # but a line may still start exactly at `end`: that belongs to the next.
                    return b""
                data = data[nl + 1 :]
            else:
                data = f.read(end - start)
            if not data:
                return b""
            if data.endswith(b"\n"):
                pass  # the last line owned by this range ends exactly at `end`
            else:
                tail = bytearray()
                while True:
                    chunk = f.read(_READ_AHEAD)
                    if not chunk:
                        break
                    nl = chunk.find(b"\n")
                    if nl != -1:
                        tail += chunk[: nl + 1]
                        break
                    tail += chunk
                data += bytes(tail)
        return data

    def compute(self, split: int, tc: Any) -> list[str]:
        data = self.read_lines_bytes(split)
        if not data:
            return []
        lines = data.decode(self.encoding).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]

    def describe(self) -> str:
        return self.path



class CsvSource(TextSource):
    """Delimited text parsed per partition by pyarrow's vectorized CSV reader: the same
    line-aligned byte ranges as ``TextSource``, each a pyarrow Table (a batch)."""

    def __init__(self, path: str, min_partitions: int, delimiter: str = ",",
                 column_names: list[str] | None = None, column_types: dict | None = None) -> None:
        super().__init__(path, min_partitions)
        self.delimiter = delimiter
        self.column_names = column_names
        self.column_types = column_types

    def compute(self, split: int, tc: Any):
        import pyarrow as pa
        import pyarrow.csv as pacsv

        data = self.read_lines_bytes(split)
        read = pacsv.ReadOptions(column_names=self.column_names, autogenerate_column_names=self.column_names is None,
                                 use_threads=False)
        parse = pacsv.ParseOptions(delimiter=self.delimiter)
        convert = pacsv.ConvertOptions(column_types=self.column_types or {})
        if not data.strip():
            if self.column_names and self.column_types:
                return pa.table({n: pa.array([], type=self.column_types.get(n, pa.string()))
                                 for n in self.column_names})
            return pa.table({})
        return pacsv.read_csv(pa.BufferReader(data), read_options=read, parse_options=parse, convert_options=convert)
