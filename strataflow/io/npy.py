"""``.npy`` files read through a memory map, one row range per partition."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..config import ConfigError
from ..lineage import SourceNode
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
    """Each partition is a read-only view of rows of the mapped file: no copy is made
    until a transformation makes one; the page cache serves repeated reads."""

    def __init__(self, path: str, num_partitions: int) -> None:
        if not os.path.isfile(path):
            raise ConfigError(f"npy_file: file {path!r} does not exist")
        self.path = path
        arr = _open(path, ConfigError)
        if arr.ndim == 0:
            raise ValueError(f"npy_file: {path!r} holds a 0-d array, not rows")
        self.shape = arr.shape
        self.bounds = slice_bounds(arr.shape[0], num_partitions)
        self.num_partitions = num_partitions
        self._array = arr

    def __getstate__(self) -> dict:
        """Travels to executors as its path: each maps the file itself (pickling the map
        would copy the whole file into every stage)."""
        state = self.__dict__.copy()
        state["_array"] = None
        return state

    def compute(self, split: int, tc: Any) -> np.ndarray:
        if self._array is None:
            self._array = _open(self.path, InputError)
        a, b = self.bounds[split]
        return self._array[a:b]

    def describe(self) -> str:
        return f"{self.path} {self.shape}"
