"""Encoding of one shuffle bucket (the part of a map output bound for one reduce task).

Batches travel as batches: an ndarray as the ``.npy`` format (dtype and shape header,
raw bytes), a pyarrow Table as an Arrow IPC stream; records as one pickle (protocol 5).
A one-byte tag says which, so the reader never guesses.
"""

from __future__ import annotations

import io
import pickle

import numpy as np
import pyarrow as pa

__all__ = ["encode", "decode"]

_RECORDS, _NUMPY, _ARROW = b"L", b"N", b"A"


def encode(value) -> bytes:
    if isinstance(value, np.ndarray):
        buf = io.BytesIO()
        buf.write(_NUMPY)
        np.lib.format.write_array(buf, value, allow_pickle=value.dtype.hasobject)
        return buf.getvalue()
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, value.schema) as writer:
            writer.write(value)
        return _ARROW + sink.getvalue().to_pybytes()
    return _RECORDS + pickle.dumps(value if isinstance(value, list) else list(value), protocol=5)


def decode(data: bytes | memoryview):
    view = memoryview(data)
    tag = bytes(view[:1])
    body = view[1:]
    if tag == _RECORDS:
        return pickle.loads(body)
    if tag == _NUMPY:
        return np.lib.format.read_array(io.BytesIO(body), allow_pickle=True)
    if tag == _ARROW:
        return pa.ipc.open_stream(pa.py_buffer(body)).read_all()
    raise ValueError(f"unknown shuffle bucket tag {tag!r}")
