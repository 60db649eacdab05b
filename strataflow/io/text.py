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
import zlib
from typing import Any, Iterator

from strataflow.lineage import SourceNode
from strataflow.io.cached_input import CachedInput
from strataflow.io.compression import codec_of_path, decompress
from strataflow.io.paths import FileRef, resolve_files, split_paths
from strataflow.io.sources import InputError, MalformedInputError

#: a split's end for a compressed file: the whole file, decompressed
WHOLE = -1

__all__ = ["TextSource"]  # CSV: delimited.py

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


def _count_newlines(view: memoryview, pos: int, stop: int) -> int:
    """The newlines in ``view[pos:stop]``, counted a window at a time (no copy of the whole)."""
    n = 0
    while pos < stop:
        hi = min(stop, pos + _CHUNK)
        n += bytes(view[pos:hi]).count(b"\n")
        pos = hi
    return n


def _line_bounds(view: memoryview, base: int, start: int, end: int, size: int) -> tuple[int, int]:
    """``(first, last)``: the lines that start in file bytes ``[start, end)`` are
    ``view[first:last]``, out of ``view``: file bytes ``[base, base + len(view))``, from the
    byte before ``start`` (the whole file when ``start`` is 0) to past the first newline at
    or after ``end - 1`` (or the file's end); ``(0, 0)`` when no line starts there."""
    end = min(end, size)
    first = start - base
    if start > 0:  # a line starts at `start` only if the byte before it is a newline
        nl = _find_newline(view, start - 1 - base, end - base)
        if nl == -1:  # no line starts in this range: the previous range's line covers it
            return 0, 0
        first = nl + 1
    if first >= end - base:  # a line starting exactly at `end` belongs to the next range
        return 0, 0
    nl = _find_newline(view, end - 1 - base, len(view))  # the last line ends at the first newline from end-1 on
    return first, (nl + 1 if nl != -1 else len(view))


def _line_span(view: memoryview, base: int, start: int, end: int, size: int) -> tuple[memoryview, int]:
    """The lines that start in file bytes ``[start, end)`` (``_line_bounds``), and the file
    offset of their first byte."""
    first, last = _line_bounds(view, base, start, end, size)
    return view[first:last], base + first


def _remote_lines(ref: FileRef, start: int, end: int) -> tuple[memoryview, int]:
    """``_line_span`` of a file on another filesystem: its range (from the byte before
    it) with one ranged request, then windows past its end until its last line ends (4 kB
    first, doubling: a line is short, but may be long); never the whole file."""
    base = max(0, start - 1)
    stop = min(end, ref.size)
    buf = bytearray(ref.read_range(base, stop))
    at = stop - 1 - base  # the last line ends at the first newline from end-1 on
    window = 1 << 12
    while at >= 0 and buf.find(b"\n", at) == -1 and base + len(buf) < ref.size:
        at = len(buf)
        more = ref.read_range(base + len(buf), base + len(buf) + window)
        if not more:
            break
        buf += more
        window = min(window * 2, _CHUNK)
    return _line_span(memoryview(buf), base, start, end, ref.size)


#: the largest byte range one partition reads: Hadoop's block size for local files and S3A
#: (``fs.local.block.size``, ``fs.s3a.block.size``: 32 MiB), which caps the splits of
#: Spark's ``textFile`` as it caps these (a 512 MB file: 16 partitions, whatever
#: ``min_partitions`` asks below that)
MAX_SPLIT = 32 << 20


class TextSource(CachedInput, SourceNode):
    """Lines of the files a path names (``paths.py``: globs, lists, directories, URLs),
    cut into line-aligned byte ranges. Its partitions go through the input cache
    (``cached_input.py``), keyed by their file's version and byte range."""

    op = "text_file"
    parses = True

    def __init__(self, path: Any, min_partitions: int, encoding: str = "utf-8", recursive: bool = False) -> None:
        self.path = ",".join(split_paths(path))
        self.encoding = encoding
        files = resolve_files(path, self.op, recursive)
        self.files = files
        total = sum(f.size for f in files)
        # Floor, as Hadoop's goal size: a ceiling would give fewer than min_partitions
        # ranges (10 bytes, 9 wanted: 2-byte ranges, only 5 of them). At most MAX_SPLIT
        # bytes, as Hadoop's block size caps a split: min_partitions is a minimum, and a
        # file larger than memory must not become a partition larger than memory.
        goal = max(1, min(MAX_SPLIT, total // max(1, min_partitions)))
        self.splits: list[tuple[FileRef, int, int]] = []
        for f in files:
            if codec_of_path(f.path) is not None:  # compressed: not splittable, read whole
                self.splits.append((f, 0, WHOLE))
                continue
            size = f.size
            start = 0
            while start < size:
                length = min(goal, size - start)
                if size - (start + length) < goal * 0.1:  # no tiny tail split (Hadoop's slop)
                    length = size - start
                self.splits.append((f, start, start + length))
                start += length
        if not self.splits:
            self.splits.append((files[0] if files else FileRef(self.path, 0), 0, 0))
        self.num_partitions = len(self.splits)

    def read_lines_bytes(self, split: int) -> memoryview:
        """The bytes of the whole lines that start in this split (``read_lines``)."""
        return self.read_lines(split)[0]

    def read_lines(self, split: int) -> tuple[memoryview, int]:
        """The bytes of the whole lines that start in this split (newlines included), and
        the offset of their first byte in the file (in the decompressed text for a
        compressed file), from which a line's number in the file is counted. A
        local file's are a view of its memory map: no buffer is allocated, zero-filled or
        copied into (a ``readinto`` of the range cost a quarter of the CSV parse); the
        pages come from the page cache, and the map goes with the last view of it. A
        remote file's are its range, read through its filesystem."""
        ref, start, end = self.splits[split]
        if end == WHOLE:
            try:
                return memoryview(decompress(ref, codec_of_path(ref.path))), 0
            except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as exc:
                raise InputError(f"cannot read compressed input file {ref.name!r}: {exc}") from exc
        if end <= start:
            return memoryview(b""), start
        if not ref.local:
            try:
                return _remote_lines(ref, start, end)
            except OSError as exc:
                raise InputError(f"cannot read input file {ref.name!r}: {exc}") from exc
        view = self._mapped(ref)
        return _line_span(view, 0, start, end, len(view))

    @staticmethod
    def _mapped(ref: FileRef) -> memoryview:
        import pyarrow as pa

        try:
            mapped = pa.memory_map(ref.path, "r")
        except OSError as exc:
            raise InputError(f"cannot read input file {ref.name!r}: {exc}") from exc
        try:
            return memoryview(mapped.read_buffer())  # no descriptor stays open (see region_store)
        finally:
            mapped.close()

    def line_number(self, split: int, offset: int, data: memoryview | bytes = b"", at: int = 0) -> int:
        """The 1-based number, in its file, of the line holding byte ``at`` of ``data``,
        the split's bytes from file offset ``offset`` on: the newlines before ``offset``
        counted in the file (read again: this is for error messages and warnings, off
        the fast path), then those of ``data[:at]``. A range's own numbering (pyarrow's
        ``Row #``) would change with ``num_partitions``; this does not."""
        ref, _, end = self.splits[split]
        before = 0
        if offset > 0:
            if end == WHOLE:
                before = _count_newlines(memoryview(decompress(ref, codec_of_path(ref.path))), 0, offset)
            elif ref.local:
                before = _count_newlines(self._mapped(ref), 0, offset)
            else:
                pos = 0
                while pos < offset:
                    chunk = ref.read_range(pos, min(offset, pos + _CHUNK))
                    if not chunk:
                        break
                    before += chunk.count(b"\n")
                    pos += len(chunk)
        return 1 + before + _count_newlines(memoryview(data), 0, at)

    def input_files(self, split: int) -> list[FileRef]:
        ref = self.splits[split][0]
        return [ref] if ref.size or self.files else []

    def input_part(self, split: int) -> str:
        _, start, end = self.splits[split]
        return "whole file" if end == WHOLE else f"bytes {start}-{end}"

    def input_options(self) -> dict:
        return {"encoding": self.encoding}

    def decode(self, split: int, tc: Any) -> tuple[list[str], dict]:
        return self.lines_of(split), {}

    def lines_of(self, split: int) -> list[str]:
        """The split's lines, decoded a chunk (about 1 MB, cut at a newline) at a time, so
        that the whole split is never held as one string beside its list of lines (that
        cost a task the size of its text again). An encoding in which a newline byte may
        sit inside a character (UTF-16, UTF-32) is decoded whole."""
        data, offset = self.read_lines(split)
        return list(self._lines(data, split, offset)) if data else []

    def _lines(self, data: memoryview, split: int, offset: int) -> Iterator[str]:
        wide = _wide(self.encoding)
        step = len(data) if wide else _CHUNK
        at, n = 0, len(data)
        while at < n:
            end = n if at + step >= n else _find_newline(data, at + step - 1, n)
            end = n if end == -1 else end + 1
            try:
                text = str(data[at:end], self.encoding)
            except UnicodeDecodeError as exc:
                ref = self.splits[split][0]
                pos = at + exc.start
                line = None if wide else self.line_number(split, offset, data, pos)
                where = f"byte {offset + pos} of the file" if line is None else \
                    f"line {line} (byte {offset + pos} of the file)"
                raise MalformedInputError(f"text_file: {ref.name!r} is not {self.encoding} text: {exc.reason} at "
                                          f"{where}", path=ref.name, line=line, reason=exc.reason) from None
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            for ln in lines:
                yield ln[:-1] if ln.endswith("\r") else ln
            at = end

    def describe(self) -> str:
        return self.path
