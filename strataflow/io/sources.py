"""In-memory sources: collections, ranges and numpy arrays, cut into contiguous slices."""

from __future__ import annotations

from typing import Any

import numpy as np

from strataflow.lineage import ListSource, SourceNode

__all__ = ["InputError", "MalformedInputError", "slice_bounds", "collection_source", "RangeSource", "numpy_source"]


class InputError(ValueError):
    """The input itself is bad (text that is not UTF-8, a file that cannot be read or
    parsed): every attempt would fail the same way, so the task is not retried and the
    job fails at once, naming the file."""

    retryable = False


class MalformedInputError(InputError):
    """A record of the input is malformed (a CSV line with an unterminated quote or the
    wrong number of fields, a field that is not of its column's type, bytes that are not
    the text's encoding). ``path`` is the file, ``line`` the 1-based line number *in the
    file* (not in a partition's byte range: the same for every ``num_partitions``; None
    where it cannot be counted), ``reason`` what is wrong with it.

    Why its own class: it is the one input error a user can choose to tolerate
    (``csv_file(mode="DROPMALFORMED")`` or ``"PERMISSIVE"``), and catch by name."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.reason = reason


def slice_bounds(n: int, num_slices: int) -> list[tuple[int, int]]:
    """Spark's positions: slice i is ``[i*n//k, (i+1)*n//k)``, so sizes differ by <= 1."""
    return [((i * n) // num_slices, ((i + 1) * n) // num_slices) for i in range(num_slices)]


def collection_source(data: list, num_slices: int) -> ListSource:
    return ListSource([data[a:b] for a, b in slice_bounds(len(data), num_slices)])


def numpy_source(array: np.ndarray, num_slices: int) -> ListSource:
    if array.ndim == 0:
        raise ValueError("from_numpy needs an array with at least one dimension")
    return ListSource([array[a:b] for a, b in slice_bounds(array.shape[0], num_slices)])


class RangeSource(SourceNode):
    """``range(start, stop, step)`` computed per partition, never held on the driver."""

    def __init__(self, r: range, num_slices: int) -> None:
        self.range = r
        self.bounds = slice_bounds(len(r), num_slices)
        self.num_partitions = num_slices

    def compute(self, split: int, tc: Any) -> list:
        a, b = self.bounds[split]
        return list(self.range[a:b])

    def describe(self) -> str:
        return repr(self.range)
