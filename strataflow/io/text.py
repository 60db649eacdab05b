"""Text files: byte ranges cut at line boundaries, as Hadoop's TextInputFormat.

Each file is cut into byte ranges of ``total // min_partitions`` bytes (so there are at
least ``min_partitions`` of them when the files hold that many bytes). A range
owns the lines that *start* inside it: it skips a partial first line (unless it starts
the file or follows a newline) and reads past its end to finish its last line. Because
UTF-8 never uses byte 0x0A inside a multi-byte character, byte cuts are safe for unicode.
Lines come without their ``\\n`` (and without a ``\\r`` before it).
"""

from __future__ import annotations

import lzma
import os
import zlib
from typing import Any, Iterator

from ..config import ConfigError
from ..lineage import SourceNode
from .compression import codec_of_path, decompress
from .sources import InputError

#: a split's end for a compressed file: the whole file, decompressed
WHOLE = -1

__all__ = ["TextSource", "list_input_files"]  # CSV: delimited.py

_READ_AHEAD = 1 << 16
_CHUNK = 1 << 20  # bytes of text decoded at a time


def _wide(encoding: str) -> bool:
    """True for encodings whose characters may contain a 0x0A byte (cut at a newline byte
    only at the split's ends, as before, and decode the rest whole)."""
    import codecs

    name = codecs.lookup(encoding).name
    return name.startswith(("utf-16", "utf-32"))


def _find_newline(view: memoryview, pos: int, stop: int) -> int:
    """The index of the first newline in ``view[pos:stop]``, or -1; scans in windows, so a
    search near a range's edge copies a few kB, not the range."""
    while pos < stop:
        hi = min(stop, pos + _READ_AHEAD)
        i = bytes(view[pos:hi]).find(b"\n")
        if i != -1:
            return pos + i
        pos = hi
    return -1


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
            if codec_of_path(f) is not None:  # compressed: not splittable, read whole
                self.splits.append((f, 0, WHOLE))
                continue
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

    def read_lines_bytes(self, split: int) -> memoryview:
        """The bytes of the whole lines that start in this split (newlines included), as a
        view of the file's memory map: no buffer is allocated, zero-filled or copied into
        (a ``readinto`` of the range cost a quarter of the CSV parse); the pages come from
        the page cache. The map goes with the last view of it."""
        path, start, end = self.splits[split]
        if end == WHOLE:
            try:
                return memoryview(decompress(path, codec_of_path(path)))
            except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as exc:
                raise InputError(f"cannot read compressed input file {path!r}: {exc}") from exc
        if end <= start:
            return memoryview(b"")
        import pyarrow as pa

        try:
            mapped = pa.memory_map(path, "r")
        except OSError as exc:
            raise InputError(f"cannot read input file {path!r}: {exc}") from exc
        try:
            view = memoryview(mapped.read_buffer())  # no descriptor stays open (see region_store)
        finally:
            mapped.close()
        size = len(view)
        end = min(end, size)
        first = 0
        if start > 0:  # a line starts at `start` only if the byte before it is a newline
            nl = _find_newline(view, start - 1, end)
            if nl == -1:  # no line starts in this range: the previous range's line covers it
                return memoryview(b"")
            first = nl + 1
        if first >= end:  # a line starting exactly at `end` belongs to the next range
            return memoryview(b"")
        nl = _find_newline(view, end - 1, size)  # the last line ends at the first newline from end-1 on
        last = nl + 1 if nl != -1 else size
        return view[first:last]

    def compute(self, split: int, tc: Any) -> list[str]:
        """The split's lines, decoded a chunk (about 1 MB, cut at a newline) at a time, so
        that the whole split is never held as one string beside its list of lines (that
        cost a task the size of its text again). An encoding in which a newline byte may
        sit inside a character (UTF-16, UTF-32) is decoded whole."""
        data = self.read_lines_bytes(split)
        return list(self._lines(data, split)) if data else []

    def _lines(self, data: memoryview, split: int) -> Iterator[str]:
        step = len(data) if _wide(self.encoding) else _CHUNK
        at, n = 0, len(data)
        while at < n:
            end = n if at + step >= n else _find_newline(data, at + step - 1, n)
            end = n if end == -1 else end + 1
            try:
                text = str(data[at:end], self.encoding)
            except UnicodeDecodeError as exc:
                path, start, _ = self.splits[split]
                raise InputError(f"text_file: {path!r} is not {self.encoding} text: {exc.reason} in the lines "
                                 f"from byte {start} on (byte {at + exc.start} of them)") from None
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            for ln in lines:
                yield ln[:-1] if ln.endswith("\r") else ln
            at = end

    def describe(self) -> str:
        return self.path
