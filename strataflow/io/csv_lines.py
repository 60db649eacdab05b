"""CSV read a line at a time: every line of the input is one record, good or malformed on
its own, whatever ranges the input was cut into.

Why: ``csv_file``'s partitions are byte ranges cut at newlines (``text.py``), each parsed
alone. A quoted field that runs past its line's end (an unterminated quote) is read by
pyarrow into one value together with the lines after it, up to the next quote or the
range's end: which lines it swallowed, and so how many rows came back, depended on where
the ranges were cut, that is on ``num_partitions`` (12,345 rows of 20,000 with one
partition, 18,268 with four). With every line a record (Spark's ``multiLine=false``, its
default), whether a line is good is a property of the line: the same lines are read,
dropped or refused for every ``num_partitions``.

How, at full speed: pyarrow still parses a whole range at once. A quoted field that
crossed a line's end holds that newline in its value, so the range's table has a
``\\n`` in a string or binary value (pyarrow reads no unquoted newline into a value), or a
value that does not convert to its column's type (pyarrow raises). The one swallow that
leaves no newline behind is an unterminated quote on a file's last line, with no newline
after it: that line alone is checked. So a good range costs one scan of its string
columns' bytes for a newline (nothing for numbers: K-means' columns are floats).

How, for a range that fails (:func:`sort_lines`): every line that holds a quote is
checked for a quote left open by a regex (in C) and blanked out of a copy of the range;
the copy is parsed again in blocks of lines, pyarrow skipping a row of the wrong width
(``invalid_row_handler``) and naming the row of a field that does not convert, whose line
is blanked in turn. pyarrow numbers the non-blank lines it reads, so its row numbers are
line numbers here. A range of 200,000 lines (38 MB) with one malformed line reads in
about three times its clean time; each field that does not convert costs a parse of a
small block (pyarrow's reader costs ~0.4 ms a call however small its input). Each
malformed line comes back with its reason (:class:`BadLine`), in order among the tables of
the good lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pyarrow as pa

__all__ = ["BadLine", "newline_in_values", "open_quote_at_end", "quote_left_open", "sort_lines", "describe_error",
           "permissive_rows", "string_array"]

_QUOTE = 0x22  # '"': pyarrow's default quote character, the one csv_file uses
_WINDOW = 1 << 20
_FANOUT = 16
_BLOCK = 4096  # lines of a range parsed at a time on the slow path
_SMALL_BLOCK = 256  # ... after a field that did not convert
_TEXT_MAX = 200  # characters of a malformed line quoted in a message


@dataclass(frozen=True)
class BadLine:
    """A malformed line: its 0-based index among the lines parsed, its bytes (without
    the newline) and what is wrong with it."""

    index: int
    text: bytes
    reason: str

    def shown(self) -> str:
        """The line as a message quotes it: decoded, undecodable bytes escaped, cut short."""
        text = self.text.decode("utf-8", "backslashreplace")
        return repr(text if len(text) <= _TEXT_MAX else text[:_TEXT_MAX] + "...")


# -- the fast checks of a parsed range ---------------------------------------------------------------
_MEMCHR: Any = None  # libc's memchr through ctypes once looked up; False where there is none


def _memchr() -> Any:
    global _MEMCHR
    if _MEMCHR is None:
        try:
            import ctypes

            fn = ctypes.CDLL(None).memchr
            fn.restype, fn.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
            _MEMCHR = fn
        except (OSError, AttributeError, TypeError):  # no C library to ask (Windows): copy and find
            _MEMCHR = False
    return _MEMCHR


def _find_byte(buf: pa.Buffer, byte: int, lo: int, hi: int) -> bool:
    """True when ``byte`` is in ``buf[lo:hi]``. libc's ``memchr`` reads the buffer where it
    lies, a third faster than copying windows out for ``bytes.find`` (memoryview has no
    ``find``): on a one-string-column CSV, the worst case, the check costs 5% of the parse
    instead of 8%; on float columns nothing is scanned."""
    if hi <= lo:
        return False
    fn = _memchr()
    if fn:
        return bool(fn(buf.address + lo, byte, hi - lo))
    view, needle = memoryview(buf), bytes([byte])
    while lo < hi:
        top = min(hi, lo + _WINDOW)
        if bytes(view[lo:top]).find(needle) != -1:
            return True
        lo = top
    return False


def _chunk_has_newline(chunk: pa.Array) -> bool:
    t = chunk.type
    if pa.types.is_dictionary(t):
        return _chunk_has_newline(chunk.dictionary)
    if len(chunk) == 0:
        return False
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or \
            pa.types.is_large_binary(t):
        offsets_buf, data_buf = chunk.buffers()[1], chunk.buffers()[2]
        if data_buf is None:
            return False
        width = np.int64 if (pa.types.is_large_string(t) or pa.types.is_large_binary(t)) else np.int32
        offsets = np.frombuffer(offsets_buf, width, count=len(chunk) + 1, offset=chunk.offset * width().itemsize)
        return _find_byte(data_buf, 0x0A, int(offsets[0]), int(offsets[-1]))
    import pyarrow.compute as pc

    return bool(pc.any(pc.match_substring(chunk.cast(pa.large_binary()), b"\n")).as_py())


def _textual(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return _textual(t.value_type)
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or getattr(pa.types, "is_string_view", lambda _: False)(t)
            or getattr(pa.types, "is_binary_view", lambda _: False)(t))


def newline_in_values(table: pa.Table) -> bool:
    """True when a string or binary value holds a newline: a quoted field ran past its
    line's end (in line mode, a malformed line). Other columns cannot hold one: a value
    with a newline does not convert to a number, a date or a bool, so pyarrow raised."""
    for field, col in zip(table.schema, table.columns):
        if _textual(field.type) and any(_chunk_has_newline(chunk) for chunk in col.chunks):
            return True
    return False


def _last_line(data: memoryview) -> bytes:
    """The bytes after the last newline of ``data`` (its unterminated last line)."""
    pos = len(data)
    while pos > 0:
        lo = max(0, pos - _WINDOW)
        i = bytes(data[lo:pos]).rfind(b"\n")
        if i != -1:
            return bytes(data[lo + i + 1:])
        pos = lo
    return bytes(data)


def open_quote_at_end(data: memoryview | bytes, delimiter: str) -> bool:
    """True when ``data`` ends, with no newline after it, in a line whose quote is never
    closed (pyarrow reads such a field to the end without complaint, and without a
    newline in it for :func:`newline_in_values` to see)."""
    view = memoryview(data)
    if not len(view) or view[-1] == 0x0A:
        return False
    last = _last_line(view)
    return _QUOTE in last and quote_left_open(last, delimiter)


def quote_left_open(line: bytes, delimiter: str) -> bool:
    """True when a quoted field of ``line`` is not closed by its end, read as pyarrow's
    tokenizer reads it: a quote opens a field only at the field's start, ``""`` inside
    quotes is a quote, and after the closing quote the field goes on unquoted (a quote
    there is a character)."""
    delim = delimiter.encode()[0]
    inside, at_start, i, n = False, True, 0, len(line)
    while i < n:
        c = line[i]
        if inside:
            if c == _QUOTE:
                if i + 1 < n and line[i + 1] == _QUOTE:
                    i += 2
                    continue
                inside = False
        elif c == delim:
            at_start = True
            i += 1
            continue
        elif c == _QUOTE and at_start:
            inside = True
        at_start = False
        i += 1
    return inside


# -- the slow path: which lines of a failing range are malformed ------------------------------------
_COLUMNS = re.compile(r"Expected (\d+) columns, got (\d+)")
_CONVERSION = re.compile(r"In CSV column #(\d+): Row #\d+: CSV conversion error to ([^:]+): (.*)", re.S)


def describe_error(message: str, names: list[str]) -> str:
    """pyarrow's error for one line, said of that line: no ``Row #`` (pyarrow counts rows
    from the start of what it was given, a number that means nothing to the user), the
    column by name, fields counted as fields."""
    m = _COLUMNS.search(message)
    if m:
        return f"expected {m.group(1)} fields, got {m.group(2)}"
    m = _CONVERSION.search(message)
    if m:
        i, to, what = int(m.group(1)), m.group(2), m.group(3).strip()
        col = repr(names[i]) if i < len(names) else f"#{i}"
        if "UTF8" in what:
            return f"column {col}: bytes that are not UTF-8 in a {to} field"
        return f"column {col}: {what} (not a {to})"
    return re.sub(r"^(CSV parse error: )?(Row #\d+: )?", "", message.strip())


_QUOTE_REASON = "a quoted field is not closed on its line (each line is one record: a quoted field cannot hold a newline)"
_ROW = re.compile(r"Row #(\d+)")
_CLOSED: dict[str, re.Pattern] = {}


def _closed_line(delimiter: str) -> re.Pattern:
    """A regex that matches a whole line whose quotes all close (``quote_left_open``'s
    reading, run by ``re`` in C: the slow path checks every line that holds a quote)."""
    pattern = _CLOSED.get(delimiter)
    if pattern is None:
        d = re.escape(delimiter.encode())
        field = rb'(?:"(?:[^"]|"")*+"[^%s]*|[^%s"][^%s]*|)' % (d, d, d)
        pattern = _CLOSED[delimiter] = re.compile(field + rb"(?:" + d + field + rb")*")
    return pattern


def _line_starts(data: bytes) -> np.ndarray:
    """The offset of each line's first byte, and ``len(data)`` last."""
    nl = np.flatnonzero(np.frombuffer(data, np.uint8) == 0x0A) + 1
    starts = np.concatenate(([0], nl)).astype(np.int64)
    if starts[-1] != len(data):
        starts = np.concatenate((starts, [len(data)]))
    return starts


Parse = Callable[..., pa.Table]  # parse(piece, invalid_row_handler=None) -> Table; raises pa.ArrowInvalid


def sort_lines(data: bytes, parse: Parse, delimiter: str, names: list[str],
               ordered: bool = True, first: bool = False) -> list[pa.Table | BadLine]:
    """``data`` (whole lines of a range that failed as a whole) as the tables of its good
    lines and its malformed lines, in line order (``ordered``; else the tables, then the
    malformed lines: all the schema pass needs); with ``first``, only up to the first
    malformed line (all FAILFAST needs). ``parse(piece, invalid_row_handler)`` is the
    range's parser.

    Linear, with few pyarrow calls (each costs ~0.4 ms however small its input): every
    line that holds a quote is checked for a quote left open (a regex, in C) and, if so,
    blanked out of a copy of ``data``; the copy is parsed in blocks of ``_BLOCK`` lines,
    pyarrow skipping a row of the wrong width through ``invalid_row_handler`` (which
    numbers it) and naming the row of a field that does not convert (``Row #``), whose
    line is then blanked too and the block parsed again in blocks of ``_SMALL_BLOCK``
    lines. pyarrow numbers the non-blank lines it reads, so a row number is a line; where
    that is not so (a carriage return inside a line, which pyarrow reads as a line
    break), or a block's rows do not match its lines, the range goes to :func:`_bisect`."""
    view = np.frombuffer(data, np.uint8)
    starts = _line_starts(data)
    n = len(starts) - 1
    ends = starts[1:].copy()
    ends -= (ends > starts[:-1]) & (view[np.maximum(ends - 1, 0)] == 0x0A)  # less the newline
    ends -= (ends > starts[:-1]) & (view[np.maximum(ends - 1, 0)] == 0x0D)  # and a \r before it
    blank = ends == starts[:-1]
    line_of = np.searchsorted(starts, np.flatnonzero(view == 0x0D), side="right") - 1
    if np.any(np.flatnonzero(view == 0x0D) != ends[line_of]):  # a \r that does not end its line
        return _bisect(data, parse, delimiter, names)
    bad: dict[int, BadLine] = {}
    closed = _closed_line(delimiter)
    buf = memoryview(bytearray(data))  # the quote-malformed lines blanked out: pyarrow skips them
    for i in np.unique(np.searchsorted(starts, np.flatnonzero(view == _QUOTE), side="right") - 1):
        body = data[starts[i]:ends[i]]
        if not closed.fullmatch(body):
            bad[int(i)] = BadLine(int(i), body, _QUOTE_REASON)
            buf[starts[i]:ends[i]] = b"\n" * (ends[i] - starts[i])
            blank[i] = True
    tables: list[tuple[pa.Table, np.ndarray]] = []
    todo = [(a, min(n, a + _BLOCK)) for a in reversed(range(0, n, _BLOCK))]
    while todo:
        lo, hi = todo.pop()
        if first and bad and min(bad) < lo:  # every line before `lo` is settled
            break
        lines = np.flatnonzero(~blank[lo:hi]) + lo
        if not len(lines):
            continue
        skipped: list[Any] = []

        def skip(row: Any) -> str:
            skipped.append(row)
            return "skip"

        try:
            table = parse(buf[starts[lo]:starts[hi]], skip)
        except pa.ArrowInvalid as exc:
            m = _ROW.search(str(exc))
            k = int(m.group(1)) - 1 if m else -1
            if not 0 <= k < len(lines):
                return _bisect(data, parse, delimiter, names)
            i = int(lines[k])
            bad[i] = BadLine(i, data[starts[i]:ends[i]], describe_error(str(exc), names))
            buf[starts[i]:ends[i]] = b"\n" * (ends[i] - starts[i])
            blank[i] = True
            # where one field did not convert others may not: the rest in small blocks
            todo.extend((a, min(hi, a + _SMALL_BLOCK)) for a in reversed(range(lo, hi, _SMALL_BLOCK)))
            continue
        gone = {row.number - 1 for row in skipped}
        for row in skipped:
            i = int(lines[row.number - 1]) if row.number and row.number <= len(lines) else -1
            if i < 0:
                return _bisect(data, parse, delimiter, names)
            bad[i] = BadLine(i, data[starts[i]:ends[i]],
                             f"expected {row.expected_columns} fields, got {row.actual_columns}")
        good = np.delete(lines, sorted(gone)) if gone else lines
        if table.num_rows != len(good) or newline_in_values(table):
            return _bisect(data, parse, delimiter, names)
        if len(good):
            tables.append((table, good))
    found = sorted(bad.values(), key=lambda b: b.index)
    if not ordered:
        return [t for t, _ in tables] + found  # type: ignore[operator]
    out: list[pa.Table | BadLine] = []
    at = 0
    for table, good in tables:
        cut = 0
        while at < len(found) and found[at].index < good[-1]:
            p = int(np.searchsorted(good, found[at].index))
            if p > cut:
                out.append(table.slice(cut, p - cut))
                cut = p
            out.append(found[at])
            at += 1
        out.append(table.slice(cut) if cut else table)
    out.extend(found[at:])
    return out


def _bisect(data: bytes, parse: Parse, delimiter: str, names: list[str]) -> list[pa.Table | BadLine]:
    """``sort_lines`` for input whose rows are not its lines (a carriage return inside a
    line): pieces of whole lines parsed, a failing piece split in 16 while it fails, down
    to single lines. Correct for any input; a malformed line costs about a hundred small
    parses (pyarrow's reader costs ~0.4 ms a call however small its input)."""
    starts = _line_starts(data)
    out: list[pa.Table | BadLine] = []
    todo: list[tuple[int, int]] = [(0, len(starts) - 1)]
    while todo:
        lo, hi = todo.pop()
        piece = data[starts[lo]:starts[hi]]
        if not piece.strip():  # blank lines: no rows (pyarrow skips them)
            continue
        error = None
        try:
            table = parse(piece)
            if not newline_in_values(table) and not open_quote_at_end(piece, delimiter):
                out.append(table)
                continue
        except pa.ArrowInvalid as exc:
            error = str(exc)
        if hi - lo == 1:
            out.append(_bad_line(lo, piece, delimiter, names, error))
            continue
        step = -(-(hi - lo) // _FANOUT)
        todo.extend((a, min(hi, a + step)) for a in reversed(range(lo, hi, step)))
    return out


def _bad_line(index: int, piece: bytes, delimiter: str, names: list[str], error: str | None) -> BadLine:
    """The malformed line ``piece``, with its reason: a quote left open first (whatever
    pyarrow then made of the fields it swallowed), else pyarrow's error."""
    text = piece[:-1] if piece.endswith(b"\n") else piece
    text = text[:-1] if text.endswith(b"\r") else text
    if quote_left_open(text, delimiter):
        reason = _QUOTE_REASON
    elif error is not None:
        reason = describe_error(error, names)
    else:
        reason = "a quoted field runs past the line's end"
    return BadLine(index, text, reason)


# -- PERMISSIVE: a malformed line as a row ----------------------------------------------------------
def permissive_rows(bad: list[BadLine], schema: pa.Schema, delimiter: str) -> pa.Table:
    """A row of ``schema`` for each malformed line, as Spark's ``PERMISSIVE`` makes one: the
    line's fields as far as they go (a missing one null, extra ones dropped), each field
    that is not of its column's type null; a line that cannot be split into fields at
    all, every field null. Fields are split by Python's ``csv`` (which splits as pyarrow
    does) and converted by pyarrow's CSV reader, so a field converts here exactly as it
    would on a good line."""
    import csv

    fields: list[list[bytes]] = []
    for b in bad:
        try:
            row = next(csv.reader([b.text.decode("utf-8", "surrogateescape")], delimiter=delimiter,
                                  quotechar='"', doublequote=True, strict=False), [])
        except csv.Error:
            row = []
        fields.append([f.encode("utf-8", "surrogateescape") for f in row])
    columns = [_convert([row[j] if j < len(row) else None for row in fields], field.type, delimiter)
               for j, field in enumerate(schema)]
    return pa.Table.from_arrays(columns, schema=schema)


def _convert(values: list[bytes | None], type_: pa.DataType, delimiter: str) -> pa.Array:
    """``values`` as an array of ``type_``: None, and a value pyarrow does not convert, null."""
    present = [v for v in values if v is not None]
    try:
        got = _parse_fields(present, type_, delimiter)
    except pa.ArrowInvalid:  # one of them does not convert: each alone
        parts = []
        for v in present:
            try:
                parts.append(_parse_fields([v], type_, delimiter))
            except pa.ArrowInvalid:
                parts.append(pa.nulls(1, type_))
        got = pa.concat_arrays(parts) if parts else pa.nulls(0, type_)
    present_mask = np.array([v is not None for v in values], dtype=bool)
    take = np.cumsum(present_mask, dtype=np.int64) - 1
    validity = pa.py_buffer(np.packbits(present_mask, bitorder="little").tobytes())
    return got.take(pa.Array.from_buffers(pa.int64(), len(values), [validity, pa.py_buffer(take.tobytes())]))


def string_array(texts: list[str]) -> pa.Array:
    """``texts`` as a pyarrow string array, built from its buffers: ``pa.array`` of Python
    objects imports pandas (where installed) the first time in a process, 0.7 s that a
    read of a few malformed lines should not cost an executor."""
    data = [t.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode() for t in texts]
    offsets = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    return pa.Array.from_buffers(pa.large_string(), len(data), [None, pa.py_buffer(offsets.tobytes()),
                                                                pa.py_buffer(b"".join(data))]).cast(pa.string())


def _parse_fields(values: list[bytes], type_: pa.DataType, delimiter: str) -> pa.Array:
    import pyarrow.csv as pacsv

    if not values:
        return pa.nulls(0, type_)
    text = b"".join(b'"' + v.replace(b'"', b'""') + b'"\n' for v in values)
    table = pacsv.read_csv(pa.BufferReader(text), read_options=pacsv.ReadOptions(column_names=["v"], use_threads=False),
                           parse_options=pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True),
                           convert_options=pacsv.ConvertOptions(column_types={"v": type_}))
    col = table.column(0)
    return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
