"""Driver data for executors, written once: the slices of ``parallelize`` and
``from_numpy``.

A stage's lineage is pickled for every new stage (each K-means iteration is one), and a
source made from the driver's memory holds all its partitions: pickled in line, a 300 MB
array would travel with every stage to every executor, even when all its blocks are
cached. Instead, while the driver pickles a stage (``spilling_sources``), a large
:class:`~strataflow.lineage.ListSource` writes its slices once under the application's
directory and travels as their path; an executor reads only the slices its tasks
compute: ndarrays read with ``np.load``, records unpickled. Small sources
(under ``INLINE_BYTES``) still travel in line, which is cheaper than a file.
"""

from __future__ import annotations

import os
import pickle
import threading
import uuid
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

__all__ = ["SourceStore", "spilling_sources", "current_store", "INLINE_BYTES", "load_slice"]

INLINE_BYTES = 1 << 20
_local = threading.local()


class SourceStore:
    """Where the driver writes source slices (a directory it owns and removes on stop)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._written: dict[str, str] = {}
        self._lock = threading.Lock()

    def path_for(self, uid: str, slices: list) -> str:
        """The directory holding ``slices`` (written on first use, one file each)."""
        with self._lock:
            got = self._written.get(uid)
            if got is not None:
                return got
            path = os.path.join(self.directory, f"source-{uid}")
            os.makedirs(path, mode=0o700, exist_ok=True)
            for i, s in enumerate(slices):
                if isinstance(s, np.ndarray) and s.dtype != object:
                    np.save(os.path.join(path, f"{i}.npy"), s, allow_pickle=False)
                else:
                    with open(os.path.join(path, f"{i}.pkl"), "wb") as f:
                        pickle.dump(s, f, protocol=5)
            self._written[uid] = path
            return path


def load_slice(path: str, split: int) -> Any:
    npy = os.path.join(path, f"{split}.npy")
    if os.path.exists(npy):
        # read into the executor's memory, not mapped: a cached partition is then an
        # ordinary array that its memory budget accounts for (a map's pages would be the
        # page cache's, and every op on an np.memmap pays for the subclass)
        return np.load(npy)
    with open(os.path.join(path, f"{split}.pkl"), "rb") as f:
        return pickle.load(f)


def new_uid() -> str:
    return uuid.uuid4().hex


@contextmanager
def spilling_sources(store: SourceStore | None) -> Iterator[None]:
    """While pickling a stage on the driver: large sources go to ``store``."""
    prev = getattr(_local, "store", None)
    _local.store = store
    try:
        yield
    finally:
        _local.store = prev


def current_store() -> SourceStore | None:
    return getattr(_local, "store", None)
