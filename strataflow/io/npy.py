"""``.npy`` files read through a memory map, one row range per partition.

The input is one file, or a directory of part files (``save_as_npy``'s, with its
manifest, or any ``*.npy`` files in name order) read as the one array of their rows
concatenated: every part must hold the same dtype and row shape. A partition inside one
file is a read-only view of it (no copy); one that spans files is their rows copied
together.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..config import ConfigError
from ..lineage import SourceNode
from .manifest import input_files
from .sources import InputError, slice_bounds

__all__ = ["NpySource"]


def _open(path: str, error: type[Exception]) -> np.ndarray:
    """The file's array, mapped; ``error`` naming the file if it is not a whole ``.npy``
    file of plain numbers (numpy's own messages name neither the file nor the fault:
    "mmap length is greater than file size" for a truncated one)."""
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        size = os.path.getsize(path) if os.path.exists(path) else 0
        raise error(f"npy_file: {path!r} ({size} bytes) is not a readable .npy file of numbers "
                    f"(truncated, or not written by numpy.save): {exc}") from None
    if not isinstance(arr, np.ndarray):  # an .npz archive
        raise error(f"npy_file: {path!r} is an .npz archive, not an .npy file")
    return arr


class NpySource(SourceNode):
    """Each partition is a read-only view of rows of the mapped file(s): no copy is made
    until a transformation makes one; the page cache serves repeated reads."""

    def __init__(self, path: str, num_partitions: int) -> None:
        self.path = path
        self.files: list[str] = []
        starts = [0]
        arrays = []
        for name, rows in input_files(path, "npy", ".npy", "npy_file"):
            arr = _open(name, ConfigError)
            if arr.ndim == 0:
                raise ValueError(f"npy_file: {name!r} holds a 0-d array, not rows")
            if arrays and (arr.dtype != arrays[0].dtype or arr.shape[1:] != arrays[0].shape[1:]):
                raise ConfigError(f"npy_file: {name!r} holds {arr.dtype.str} rows of shape {arr.shape[1:]}, "
                                  f"{self.files[0]!r} {arrays[0].dtype.str} rows of shape {arrays[0].shape[1:]}; "
                                  "the parts of one input must agree")
            if rows is not None and arr.shape[0] != rows:
                raise ConfigError(f"npy_file: {name!r} holds {arr.shape[0]} rows, its manifest says {rows}")
            self.files.append(name)
            arrays.append(arr)
            starts.append(starts[-1] + arr.shape[0])
        self.starts = starts
        self.shape = (starts[-1], *arrays[0].shape[1:])
        self.dtype = arrays[0].dtype
        self.bounds = slice_bounds(self.shape[0], num_partitions)
        self.num_partitions = num_partitions
        self._arrays: list[np.ndarray | None] = arrays

    def __getstate__(self) -> dict:
        """Travels to executors as its paths: each maps the files itself (pickling the
        maps would copy the whole files into every stage)."""
        state = self.__dict__.copy()
        state["_arrays"] = [None] * len(self.files)
        return state

    def _array(self, i: int) -> np.ndarray:
        if self._arrays[i] is None:
            self._arrays[i] = _open(self.files[i], InputError)
        return self._arrays[i]

    def compute(self, split: int, tc: Any) -> np.ndarray:
        a, b = self.bounds[split]
        pieces = []
        for i, (lo, hi) in enumerate(zip(self.starts, self.starts[1:])):
            if lo < b and a < hi:
                pieces.append(self._array(i)[max(a, lo) - lo:min(b, hi) - lo])
        if not pieces:
            return self._array(0)[:0]
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    def describe(self) -> str:
        return f"{self.path} {self.shape}"
