"""What a reduce stage reads of one shuffle: its map outputs in map order, and, built once
per executor and stage from their sparse sizes, each reducer's non-empty buckets.

A reduce task then visits only the map outputs that hold data for it (issue 41): with P
maps and P reducers, a reducer's cost is its data plus a constant, not P file reads, and
the many empty (map, reduce) pairs of a wide shuffle cost nothing at all on the reduce
side. The sizes come from the map tasks' outcomes, through the driver (a trusted path),
so a bucket they say is empty holds no record this reducer needs; one they say holds data
is read from the files and authenticated there (``files.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from strataflow.shuffle.files import MapOutput

__all__ = ["ShuffleReads"]


class ShuffleReads(Sequence):
    """A shuffle's map outputs (None where one is missing), in map order, with each
    reducer's non-empty buckets: ``for_reducer(r)`` -> (map ids, sizes), in map order."""

    def __init__(self, outputs: Sequence[MapOutput | None]) -> None:
        self._outputs = list(outputs)
        self._csr: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._missing: list[int] | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._outputs)

    def __getitem__(self, i):
        return self._outputs[i]

    def __reduce__(self):  # the outputs only: the index by reducer is rebuilt where it is used
        return (ShuffleReads, (self._outputs,))

    def missing(self) -> list[int]:
        """The maps with no output registered (found once: every reduce task asks)."""
        if self._missing is None:
            self._missing = [m for m, out in enumerate(self._outputs) if out is None]
        return self._missing

    def for_reducer(self, reduce_id: int) -> tuple[np.ndarray, np.ndarray]:
        """The maps whose bucket ``reduce_id`` holds data, and those buckets' sizes."""
        indptr, maps, sizes = self._index()
        if not 0 <= reduce_id < len(indptr) - 1:
            return maps[:0], sizes[:0]
        a, b = indptr[reduce_id], indptr[reduce_id + 1]
        return maps[a:b], sizes[a:b]

    def _index(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr by reducer, map ids, sizes): every non-empty bucket, grouped by reducer,
        maps in order within a reducer; built once (numpy: O(non-empty buckets))."""
        with self._lock:
            if self._csr is None:
                present = [(m, out) for m, out in enumerate(self._outputs) if out is not None]
                reducers = max((out.num_buckets for _, out in present), default=0)
                if present:
                    ids = np.concatenate([out.reduce_ids for _, out in present])
                    sizes = np.concatenate([out.sizes for _, out in present])
                    maps = np.repeat(np.fromiter((m for m, _ in present), dtype=np.int64, count=len(present)),
                                     [len(out.reduce_ids) for _, out in present])
                else:
                    ids = sizes = maps = np.zeros(0, dtype=np.int64)
                order = np.argsort(ids, kind="stable")  # stable: maps stay in order within a reducer
                indptr = np.zeros(reducers + 1, dtype=np.int64)
                np.cumsum(np.bincount(ids, minlength=reducers)[:reducers], out=indptr[1:])
                self._csr = (indptr, maps[order], sizes[order])
            return self._csr
