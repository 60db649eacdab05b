"""``to_csv`` as Spark's Univocity writer writes one struct as a CSV line with the default
options: fields separated by ``,``, a null as nothing, an empty string as ``""``, spaces
round a value dropped, a value holding the separator, a quote or a line break quoted
(a quote inside escaped by a backslash); numbers as Java writes them, timestamps in the
session zone as ``yyyy-MM-dd'T'HH:mm:ss.SSSXXX``.
"""

from __future__ import annotations

from typing import Any

from strataflow.pyspark.sql.semantics.json_values import java_double, java_float, writer

__all__ = ["csv_writer"]


def _field(t: Any, tz: str) -> Any:
    """The text of one atomic field of Arrow type ``t`` (None where it is not one)."""
    import pyarrow as pa

    if pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_map(t) or pa.types.is_binary(t):
        return None
    if t == pa.float64():
        return java_double
    if t == pa.float32():
        return java_float
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return lambda v: v
    w = writer(t, tz)
    if w is None:
        return None
    return lambda v: w(v).strip('"')


def _trimmed(text: str) -> str:
    """Univocity's writer drops a value's leading and trailing whitespace (Spark's
    ``ignoreLeadingWhiteSpace``/``ignoreTrailingWhiteSpace`` are true for writing)."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def _quoted(text: str) -> str:
    if text == "":
        return '""'
    text = _trimmed(text)
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def csv_writer(t: Any, tz: str) -> Any:
    """The function writing a struct of Arrow type ``t`` as Spark's ``to_csv``; None where a
    field is not of an atomic type it writes."""
    fields = [(t.field(i).name, _field(t.field(i).type, tz)) for i in range(t.num_fields)]
    if any(f is None for _, f in fields):
        return None
    return lambda v: ",".join("" if v[k] is None else _quoted(f(v[k])) for k, f in fields)
