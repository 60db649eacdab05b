"""numpy ``.npy`` headers parsed one thread at a time, by one lock for the whole process.

Why: numpy parses a header's dictionary with ``ast.literal_eval``, and CPython 3.11's AST
constructor keeps its recursion depth in state its threads share; two threads parsing at
once can fail with ``SystemError: AST constructor recursion depth mismatch``
(python/cpython#106905). On the threads backend several tasks decode shuffle buckets and
open ``.npy`` sources at once: a shuffle of numpy buckets failed that way in the test
suite. One lock for every parse in the process (each module holding its own would not
stop a parse in another); it covers the header only, the data is read outside it.
"""

from __future__ import annotations

import ast
import io
import threading
from typing import Any

import numpy as np

__all__ = ["LOCK", "literal_eval", "read_header", "read_array", "load"]

LOCK = threading.Lock()
_fmt = np.lib.format


def literal_eval(text: str) -> Any:
    """``ast.literal_eval`` under the lock."""
    with LOCK:
        return ast.literal_eval(text)


def read_header(fh: Any) -> tuple[tuple, bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` header at ``fh``'s position (after
    it on return). Versions 1.0, 2.0 and 3.0 (2.0's layout with a UTF-8 header)."""
    with LOCK:
        version = _fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = _fmt.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = _fmt.read_array_header_2_0(fh)
        else:
            raise ValueError(f"unknown .npy format version {version}")
    return tuple(shape), bool(fortran), np.dtype(dtype)


def read_array(data: bytes | memoryview, allow_pickle: bool = False) -> np.ndarray:
    """The array a ``.npy`` image in memory holds, writable and its own (as
    ``np.lib.format.read_array`` gives it); only the header is parsed under the lock. An
    array of Python objects is unpickled, where ``allow_pickle``, by numpy itself."""
    view = memoryview(data).cast("B")
    fh = io.BytesIO(view)
    shape, fortran, dtype = read_header(fh)
    if dtype.hasobject:
        if not allow_pickle:
            raise ValueError("Object arrays cannot be loaded when allow_pickle=False")
        with LOCK:
            return _fmt.read_array(io.BytesIO(view), allow_pickle=True)
    count = int(np.prod(shape, dtype=np.int64))
    flat = np.frombuffer(view, dtype=dtype, count=count, offset=fh.tell()).copy()
    return _shaped(flat, shape, fortran)


def load(path: str, mmap_mode: str | None = None) -> np.ndarray:
    """``np.load(path, mmap_mode=...)`` of an ``.npy`` file of plain values (no pickles):
    mapped (the whole call is cheap and under the lock), or read, its header under the
    lock and its data outside it."""
    if mmap_mode is not None:
        with LOCK:
            return np.load(path, mmap_mode=mmap_mode, allow_pickle=False)
    with open(path, "rb") as fh:
        shape, fortran, dtype = read_header(fh)
        if dtype.hasobject:
            raise ValueError(f"{path}: object arrays cannot be loaded when allow_pickle=False")
        count = int(np.prod(shape, dtype=np.int64))
        flat = np.fromfile(fh, dtype=dtype, count=count)
    if flat.size != count:
        raise ValueError(f"{path}: the file holds {flat.size} of the header's {count} values (truncated)")
    return _shaped(flat, shape, fortran)


def _shaped(flat: np.ndarray, shape: tuple, fortran: bool) -> np.ndarray:
    """The header's shape on the flat data, in its order (numpy's reader does the same)."""
    return flat.reshape(shape[::-1]).transpose() if fortran else flat.reshape(shape)
