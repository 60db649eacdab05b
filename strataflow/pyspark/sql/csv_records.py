"""CSV text as Spark reads it: records and fields the way Spark's parser (univocity, with
the settings ``CSVOptions`` gives it) cuts them, then typed by a schema under a ``mode``.

Why a parser of its own rather than pyarrow's or Python's ``csv``: Spark's rules differ
from both on inputs users have. Its escape character is ``\\`` by default (``"a\\"b"`` is
``a"b``, ``"a\\\\b"`` is ``a\\b``) and ``""`` inside quotes is then *not* an escape; a quote met inside a quoted
field and not followed by the delimiter or the end of the line makes the whole field its
raw text up to the next delimiter (``STOP_AT_DELIMITER``), opening quote included; an
unquoted empty field is null while a quoted one (``""``) is ``emptyValue``; lines are
ended by ``\\n``, ``\\r\\n`` or ``\\r`` unless ``lineSep`` says otherwise; blank lines are
skipped; a quoted field holds line breaks only with ``multiLine``. Each of these was seen
to differ against PySpark (``tests/goldens/readers``).

A record is malformed when it has another number of fields than the schema has data
columns or a field does not convert to its column's type: ``PERMISSIVE`` keeps the fields
that convert (the others null) and puts the record's text in the corrupt-record column
when the schema has one; ``DROPMALFORMED`` leaves the row out; ``FAILFAST`` fails the job
naming the record and the file.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from strataflow.pyspark.errors import Py4JJavaError, SparkRuntimeException

__all__ = ["records", "Field", "malformed_error", "field_datum"]

_UNIVERSAL = re.compile(r"\r\n|\r|\n")

#: a field: (text, quoted)
Field = tuple[str, bool]


def _lines(text: str, line_sep: str | None) -> list[tuple[str, int]]:
    """(line, offset) of ``text`` cut at ``line_sep`` (None: ``\\n``, ``\\r\\n`` or ``\\r``)."""
    out, at = [], 0
    if line_sep is None:
        for m in _UNIVERSAL.finditer(text):
            out.append((text[at:m.start()], at))
            at = m.end()
    else:
        while True:
            j = text.find(line_sep, at)
            if j < 0:
                break
            out.append((text[at:j], at))
            at = j + len(line_sep)
    if at < len(text):
        out.append((text[at:], at))
    return out


class _Cursor:
    """Cuts the text of one file (or one line) into records of fields."""

    def __init__(self, text: str, opts: Any) -> None:
        self.s, self.n, self.o = text, len(text), opts
        self.sep, self.quote, self.escape = opts.sep, opts.quote, opts.escape
        self.line_sep = opts.line_sep
        self.newline = None  # multiLine: the file's line break, written \n inside quoted values (univocity's)
        if opts.multi_line and opts.line_sep is None:
            m = _UNIVERSAL.search(text)
            self.newline = m.group() if m and m.group() != "\n" else None

    def _normalized(self, value: str) -> str:
        return value.replace(self.newline, "\n") if self.newline else value

    def _at_line_end(self, i: int) -> int:
        """The length of the line break at ``i`` (0 if none)."""
        s = self.s
        if self.line_sep is not None:
            return len(self.line_sep) if s.startswith(self.line_sep, i) else 0
        if s.startswith("\r\n", i):
            return 2
        return 1 if i < self.n and s[i] in "\r\n" else 0

    def _unquoted(self, i: int) -> tuple[str, int]:
        s, sep = self.s, self.sep
        j = i
        while j < self.n and not s.startswith(sep, j) and not self._at_line_end(j):
            j += 1
        return s[i:j], j

    def _quoted(self, i: int) -> tuple[str, bool, int]:
        """The field opened by the quote at ``i``: (value, quoted, end)."""
        s, q, esc = self.s, self.quote, self.escape
        buf, j = [], i + 1
        while j < self.n:
            c = s[j]
            if esc is not None and esc != q and c == esc and j + 1 < self.n and s[j + 1] in (q, esc):
                buf.append(s[j + 1])  # an escaped quote, or the escape escaped (``\\``: one backslash)
                j += 2
                continue
            if c == q:
                if esc == q and j + 1 < self.n and s[j + 1] == q:
                    buf.append(q)
                    j += 2
                    continue
                k = j + 1
                while k < self.n and s[k] in " \t" and not s.startswith(self.sep, k):
                    k += 1  # blanks after the closing quote are skipped
                if k >= self.n or s.startswith(self.sep, k) or self._at_line_end(k):
                    return self._normalized("".join(buf)), True, k
                raw, end = self._unquoted(k)  # an unescaped quote: the field is its raw text to the delimiter
                return s[i:end], False, end
            buf.append(c)
            j += 1
        return self._normalized("".join(buf)), True, j  # an unclosed quote runs to the end of the input

    def record(self, i: int) -> tuple[list[Field], int]:
        """The fields of the record starting at ``i`` and where the next one starts."""
        o, fields = self.o, []
        while True:
            if o.ignore_leading:
                while i < self.n and self.s[i] in " \t" and not self.s.startswith(self.sep, i):
                    i += 1
            if self.quote is not None and i < self.n and self.s[i] == self.quote:
                value, quoted, i = self._quoted(i)
            else:
                value, i = self._unquoted(i)
                quoted = False
            if not quoted:
                if o.ignore_leading:
                    value = value.lstrip(" \t")
                if o.ignore_trailing:
                    value = value.rstrip(" \t")
            if o.max_chars >= 0 and len(value) > o.max_chars:
                raise Py4JJavaError(f"[MALFORMED_CSV_RECORD] a field of {len(value)} characters is longer than "
                                    f"maxCharsPerColumn={o.max_chars}")
            fields.append((value, quoted))
            if i < self.n and self.s.startswith(self.sep, i):
                i += len(self.sep)
                continue
            brk = self._at_line_end(i)
            return fields, i + brk


def records(text: str, opts: Any) -> Iterator[tuple[list[Field], str]]:
    """(fields, raw text) of every record of a file's text: blank lines and comment lines
    skipped, as Spark does."""
    if text.startswith("\ufeff"):
        text = text[1:]
    comment = opts.comment
    if not opts.multi_line:
        for line, _ in _lines(text, opts.line_sep):
            if not line or (comment is not None and line.startswith(comment)):
                continue
            cur = _Cursor(line, opts)
            fields, _ = cur.record(0)
            yield _checked(fields, opts), line
        return
    cur = _Cursor(text, opts)
    i = 0
    while i < len(text):
        brk = cur._at_line_end(i)
        if brk:
            i += brk
            continue
        if comment is not None and text.startswith(comment, i):
            j = i
            while j < len(text) and not cur._at_line_end(j):
                j += 1
            i = j
            continue
        fields, j = cur.record(i)
        raw = text[i:j]
        yield _checked(fields, opts), raw.rstrip("\r\n") if opts.line_sep is None else raw.removesuffix(opts.line_sep)
        i = j


def _checked(fields: list[Field], opts: Any) -> list[Field]:
    if len(fields) > opts.max_columns:
        raise SparkRuntimeException(f"[MALFORMED_CSV_RECORD] Malformed CSV record: a record of {len(fields)} columns "
                                    f"is over maxColumns={opts.max_columns}", "MALFORMED_CSV_RECORD")
    return fields


def field_datum(f: Field, opts: Any) -> str | None:
    """A field as Spark's converters see it: None for the null value (an unquoted empty
    field, or text equal to ``nullValue``), ``emptyValue`` for a quoted empty one."""
    value, quoted = f
    if value == "":
        value = (opts.empty_value or "") if quoted else opts.null_value
    return None if value == opts.null_value else value


def malformed_error(raw: str, where: str, why: str) -> Py4JJavaError:
    """FAILFAST's error: the record, the file and what was wrong (Spark's error class)."""
    return Py4JJavaError(f"[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected in record "
                         f"parsing: {raw[:200]!r} in {where} ({why}). Parse Mode: FAILFAST. To process malformed "
                         f"records as null result, try setting the option 'mode' as 'PERMISSIVE'.")
