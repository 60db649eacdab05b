"""``.npy`` files read through a memory map, one row range per partition.

The input is files (any path ``paths.py`` takes: globs, lists, URLs) or directories of
part files (``save_as_npy``'s, with its manifest, or any ``*.npy`` files in name order),
read as the one array of their rows concatenated: every part must hold the same dtype
and row shape. A partition inside one local file is a read-only view of it (no copy);
one that spans files is their rows copied together. A remote file (an fsspec URL) is not
mapped: its header is read once, and each partition reads its rows as one byte range.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from strataflow.common import npy_headers
from strataflow.config import ConfigError
from strataflow.lineage import SourceNode
from strataflow.io.cached_input import CachedInput
from strataflow.io.manifest import input_files
from strataflow.io.paths import FileRef, split_paths
from strataflow.io.sources import InputError, slice_bounds

__all__ = ["NpySource"]


def _open(path: str, error: type[Exception]) -> np.ndarray:
    """The file's array, mapped; ``error`` naming the file if it is not a whole ``.npy``
    file of plain numbers (numpy's own messages name neither the file nor the fault:
    "mmap length is greater than file size" for a truncated one)."""
    try:
        arr = npy_headers.load(path, mmap_mode="r")
    except (ValueError, OSError, EOFError) as exc:
        size = os.path.getsize(path) if os.path.exists(path) else 0
        raise error(f"npy_file: {path!r} ({size} bytes) is not a readable .npy file of numbers "
                    f"(truncated, or not written by numpy.save): {exc}") from None
    if not isinstance(arr, np.ndarray):  # an .npz archive
        raise error(f"npy_file: {path!r} is an .npz archive, not an .npy file")
    return arr


_HEADER_MAX = 1 << 16


@dataclass(frozen=True)
class _Header:
    """What a remote ``.npy`` file's header says: enough to read any run of its rows as
    one byte range."""

    shape: tuple
    dtype: np.dtype
    fortran: bool
    offset: int

    @property
    def row_bytes(self) -> int:
        return self.dtype.itemsize * int(np.prod(self.shape[1:], dtype=np.int64))


def _header(ref: FileRef, error: type[Exception]) -> _Header:
    """A remote file's header, read with one small ranged request."""
    try:
        with io.BytesIO(ref.read_range(0, _HEADER_MAX)) as fh:  # numpy's headers are at most 10 kB
            shape, fortran, dtype = npy_headers.read_header(fh)
            offset = fh.tell()
    except (ValueError, OSError, EOFError) as exc:
        raise error(f"npy_file: {ref.name!r} ({ref.size} bytes) is not a readable .npy file of numbers: {exc}") \
            from None
    head = _Header(tuple(shape), np.dtype(dtype), bool(fortran), offset)
    if head.dtype.hasobject:
        raise error(f"npy_file: {ref.name!r} holds Python objects; .npy files here are read without unpickling")
    need = offset + head.row_bytes * (shape[0] if shape else 1)
    if ref.size < need:
        raise error(f"npy_file: {ref.name!r} ({ref.size} bytes) is truncated: its header says {need} bytes")
    return head


class NpySource(CachedInput, SourceNode):
    """Each partition is a read-only view of rows of the mapped file(s): no copy is made
    until a transformation makes one; the page cache serves repeated reads. A remote file's
    rows go through the input cache (``cached_input.py``); a local file's never do (they
    are mapped already)."""

    op = "npy_file"
    zero_copy_local = True

    def __init__(self, path: Any, num_partitions: int, recursive: bool = False) -> None:
        self.path = ",".join(split_paths(path))
        self.files: list[FileRef] = []
        starts = [0]
        arrays: list[Any] = []  # a local file's map, a remote file's header
        for ref, rows in input_files(path, "npy", ".npy", "npy_file", recursive):
            arr = _open(ref.path, ConfigError) if ref.local else _header(ref, ConfigError)
            if len(arr.shape) == 0:
                raise ValueError(f"npy_file: {ref.name!r} holds a 0-d array, not rows")
            if arrays and (arr.dtype != arrays[0].dtype or arr.shape[1:] != arrays[0].shape[1:]):
                raise ConfigError(f"npy_file: {ref.name!r} holds {arr.dtype.str} rows of shape {arr.shape[1:]}, "
                                  f"{self.files[0].name!r} {arrays[0].dtype.str} rows of shape "
                                  f"{arrays[0].shape[1:]}; the parts of one input must agree")
            if rows is not None and arr.shape[0] != rows:
                raise ConfigError(f"npy_file: {ref.name!r} holds {arr.shape[0]} rows, its manifest says {rows}")
            self.files.append(ref)
            arrays.append(arr)
            starts.append(starts[-1] + arr.shape[0])
        self.starts = starts
        self.shape = (starts[-1], *arrays[0].shape[1:])
        self.dtype = arrays[0].dtype
        self.bounds = slice_bounds(self.shape[0], num_partitions)
        self.num_partitions = num_partitions
        self._headers = [None if ref.local else arr for ref, arr in zip(self.files, arrays)]
        self._arrays: list[np.ndarray | None] = [arr if ref.local else None for ref, arr in zip(self.files, arrays)]

    def __getstate__(self) -> dict:
        """Travels to executors as its paths: each maps the files itself (pickling the
        maps would copy the whole files into every stage)."""
        state = self.__dict__.copy()
        state["_arrays"] = [None] * len(self.files)
        return state

    def _array(self, i: int) -> np.ndarray:
        if self._arrays[i] is None:
            self._arrays[i] = _open(self.files[i].path, InputError)
        return self._arrays[i]

    def _rows(self, i: int, lo: int, hi: int) -> np.ndarray:
        """Rows ``[lo, hi)`` of file ``i``: a view of a local file's map; a remote file's
        rows read as their one byte range (a Fortran-ordered file, whose rows are not
        contiguous, is read whole)."""
        head = self._headers[i]
        if head is None:
            return self._array(i)[lo:hi]
        ref = self.files[i]
        try:
            if head.fortran:
                data = ref.read_range(head.offset, ref.size)
                count = int(np.prod(head.shape, dtype=np.int64))
                whole = np.frombuffer(data, head.dtype, count).reshape(head.shape, order="F")
                return whole[lo:hi]
            start = head.offset + lo * head.row_bytes
            data = ref.read_range(start, start + (hi - lo) * head.row_bytes)
            if len(data) != (hi - lo) * head.row_bytes:
                raise EOFError(f"{len(data)} bytes where {(hi - lo) * head.row_bytes} were expected")
            return np.frombuffer(data, head.dtype).reshape((hi - lo, *head.shape[1:]))
        except (OSError, EOFError, ValueError) as exc:
            raise InputError(f"npy_file: cannot read rows {lo}..{hi} of {ref.name!r}: {exc}") from exc

    def _overlapping(self, split: int) -> list[int]:
        a, b = self.bounds[split]
        return [i for i, (lo, hi) in enumerate(zip(self.starts, self.starts[1:])) if lo < b and a < hi]

    def input_files(self, split: int) -> list[FileRef]:
        return [self.files[i] for i in self._overlapping(split)]

    def input_part(self, split: int) -> str:
        a, b = self.bounds[split]
        return f"rows {a}-{b}"

    def input_options(self) -> dict:
        return {"dtype": self.dtype.str, "shape": list(self.shape), "starts": list(self.starts)}

    def decode(self, split: int, tc: Any) -> tuple[np.ndarray, dict]:
        return self._read(split), {}

    def _read(self, split: int) -> np.ndarray:
        a, b = self.bounds[split]
        pieces = []
        for i, (lo, hi) in enumerate(zip(self.starts, self.starts[1:])):
            if lo < b and a < hi:
                pieces.append(self._rows(i, max(a, lo) - lo, min(b, hi) - lo))
        if not pieces:
            return self._rows(0, 0, 0)
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    def describe(self) -> str:
        return f"{self.path} {self.shape}"
