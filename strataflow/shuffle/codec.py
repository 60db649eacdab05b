"""Encoding of one shuffle bucket (the part of a map output bound for one reduce task).

Batches travel as batches: an ndarray as the ``.npy`` format (dtype and shape header,
raw bytes), a pyarrow Table as an Arrow IPC stream, a pandas DataFrame as its own pickle
(protocol 5: its index and dtypes come back as they were); records as one pickle. Any
other value goes as the list of its rows (``batch.rows_list``), never Python's iteration
of it (a DataFrame's would be its column names).
A one-byte tag says which, so the reader never guesses. An ndarray of Python objects is
a pickle inside the ``.npy`` format and has a tag of its own: a numeric ``.npy`` bucket is
read with ``allow_pickle=False``, so that no bucket unpickles unless its tag says so.

:func:`unpickled_prefix` says how many leading bytes of a bucket ``decode`` unpickles
(or trusts to decide whether to): the shuffle files authenticate exactly those with the
application's key, and only checksum the rest (``files.py``).
"""

from __future__ import annotations

import io
import pickle

import numpy as np
import pyarrow as pa

from strataflow.common import npy_headers, value_pickle
from strataflow.common.batch import is_dataframe, rows_list

__all__ = ["encode", "decode", "unpickled_prefix"]

_RECORDS, _NUMPY, _OBJECTS, _ARROW, _FRAME = b"L", b"N", b"O", b"A", b"P"


def encode(value) -> bytes | memoryview:
    """A bucket's bytes (a Table's: a view of Arrow's own buffer); an empty list of records
    is no bytes at all, so that the many empty buckets of a wide shuffle cost nothing to
    write and no file read (issue 41)."""
    if type(value) is list and not value:
        return b""
    if isinstance(value, np.ndarray):
        buf = io.BytesIO()
        pickled = value.dtype.hasobject
        buf.write(_OBJECTS if pickled else _NUMPY)
        np.lib.format.write_array(buf, value, allow_pickle=pickled)
        return buf.getvalue()
    if isinstance(value, (pa.Table, pa.RecordBatch)):  # the tag, then the stream, in one buffer: no copy
        sink = pa.BufferOutputStream()
        sink.write(_ARROW)
        with pa.ipc.new_stream(sink, value.schema) as writer:
            writer.write(value)
        return memoryview(sink.getvalue())
    if is_dataframe(value):
        return _FRAME + value_pickle.dumps(value)
    return _RECORDS + value_pickle.dumps(rows_list(value))


def unpickled_prefix(data: bytes | memoryview) -> int:
    """The bucket's bytes that ``decode`` unpickles or trusts: all of a pickled one (records,
    an object ndarray), only the tag byte of a numeric ``.npy`` or an Arrow one; all of a
    bucket whose tag is unknown."""
    tag = bytes(memoryview(data)[:1])
    return 1 if tag in (_NUMPY, _ARROW) else memoryview(data).nbytes


def decode(data: bytes | memoryview):
    view = memoryview(data)
    if not view.nbytes:  # an empty list of records (every other encoding has a tag byte)
        return []
    tag = bytes(view[:1])
    body = view[1:]
    if tag in (_RECORDS, _FRAME):
        return pickle.loads(body)
    if tag in (_NUMPY, _OBJECTS):
        return npy_headers.read_array(body, allow_pickle=tag == _OBJECTS)
    if tag == _ARROW:
        return pa.ipc.open_stream(pa.py_buffer(body)).read_all()
    raise ValueError(f"unknown shuffle bucket tag {tag!r}")
