"""Driver data for executors, written once: the slices of ``parallelize`` and
``from_numpy``.

A stage's lineage is pickled for every new stage (each K-means iteration is one), and a
source made from the driver's memory holds all its partitions: pickled in line, a 300 MB
array would travel with every stage to every executor, even when all its blocks are
cached. Instead, while the driver pickles a stage (``spilling_sources``), a large
:class:`~strataflow.lineage.ListSource` writes its slices once under the application's
directory and travels as their path; an executor reads only the slices its tasks
compute: ndarrays read with ``np.load`` (``allow_pickle=False``: never unpickled), records
unpickled. Small sources (under ``INLINE_BYTES``) still travel in line, which is cheaper
than a file.

A pickled slice (``.pkl``) is authenticated: unpickling runs code, so a file put in its
place by someone else must never be loaded. It holds a magic, a keyed BLAKE2b tag
(``storage/frame_auth.py``) over its place (``source-<uid>/<split>.pkl``) and its pickle,
then the pickle; the tag is checked before anything is unpickled, and a slice that fails
raises :class:`SourceSliceError`, loudly. The key is the application's: the driver's fleet
and every executor register it for the application's directories (``storage/app_keys.py``),
and the driver writes and the executors read by path. Slice files are mode 0600, written
under a unique temporary name and renamed into place (``storage/private_file.py``).

On a cluster the driver's files are not on the executors' nodes: the ray backend's store
(``ray_backend.RaySourceStore``) puts each slice in Ray's object store instead, and its
"path" names a loader the executor registered (:func:`register_loader`).
"""

from __future__ import annotations

import os
import pickle
import shutil
import struct
import threading
import uuid
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from ..storage import app_keys
from ..storage.frame_auth import TAG_BYTES, FrameAuth, same
from ..storage.private_file import atomic_write

__all__ = ["SourceStore", "SourceSliceError", "spilling_sources", "current_store", "INLINE_BYTES", "load_slice",
           "register_loader"]

INLINE_BYTES = 1 << 20
_local = threading.local()
#: path prefix -> ``load(path, split)``: slices that are not files (``register_loader``)
_loaders: dict[str, Callable[[str, int], Any]] = {}
_MAGIC = b"SFSRC01\0"
_HEAD = struct.Struct(f"<8s{TAG_BYTES}s")  # magic, tag
_DOMAIN = b"sf-source-v1"


class SourceSliceError(RuntimeError):
    """A pickled source slice that may not be loaded: it fails authentication (it was not
    written by this application's driver: forged, or corrupt), or no key is known for it."""


class SourceStore:
    """Where the driver writes source slices (a directory it owns and removes on stop)."""

    def __init__(self, directory: str, key: bytes | None = None) -> None:
        """``key``: the application's secret. Without one, the key is the application's
        registered for ``directory`` when the first slices are written (the fleet
        registers it when it starts, before any stage is pickled); failing that, the
        store makes its own and registers it, so that this process can read them back."""
        self.directory = directory
        self._auth = None if key is None else FrameAuth(key)
        self._written: dict[str, str] = {}
        self._lock = threading.Lock()

    def _writer_auth(self) -> FrameAuth:
        if self._auth is None:
            auth = app_keys.auth_for(self.directory)
            if auth is None:
                auth = FrameAuth()
                app_keys.register([self.directory], auth)
            self._auth = auth
        return self._auth

    def path_for(self, uid: str, slices: list) -> str:
        """The directory holding ``slices`` (written on first use, one file each)."""
        with self._lock:
            got = self._written.get(uid)
            if got is not None:
                return got
            auth = self._writer_auth()
            path = os.path.join(self.directory, f"source-{uid}")
            os.makedirs(path, mode=0o700, exist_ok=True)
            for i, s in enumerate(slices):
                if isinstance(s, np.ndarray) and s.dtype != object:
                    with atomic_write(os.path.join(path, f"{i}.npy")) as f:
                        np.save(f, s, allow_pickle=False)
                else:
                    _write_pickled(os.path.join(path, f"{i}.pkl"), s, auth)
            self._written[uid] = path
            return path


    def forget(self, uid: str) -> None:
        """Removes what was written for ``uid`` (a destroyed broadcast); a later
        ``path_for`` writes it again."""
        with self._lock:
            path = self._written.pop(uid, None)
        if path is not None and os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)


def _place(path: str) -> bytes:
    """What a slice's tag binds it to: ``source-<uid>/<split>.pkl``, length first."""
    place = f"{os.path.basename(os.path.dirname(path))}/{os.path.basename(path)}".encode()
    return struct.pack("<H", len(place)) + place


def _write_pickled(path: str, value: Any, auth: FrameAuth) -> None:
    data = pickle.dumps(value, protocol=5)
    with atomic_write(path) as f:
        f.write(_HEAD.pack(_MAGIC, auth.tag(_DOMAIN, _place(path), data)))
        f.write(data)


def register_loader(prefix: str, load: Callable[[str, int], Any] | None) -> None:
    """Slices whose path starts with ``prefix`` are ``load(path, split)`` (None: no more)."""
    if load is None:
        _loaders.pop(prefix, None)
    else:
        _loaders[prefix] = load


def load_slice(path: str, split: int, key: bytes | None = None) -> Any:
    """Slice ``split`` of the source written under ``path``. A pickled slice is
    authenticated first, with ``key`` or else the application's key registered for its
    directory; SourceSliceError if it fails or no key is known."""
    for prefix, load in _loaders.items():
        if path.startswith(prefix):
            return load(path, split)
    npy = os.path.join(path, f"{split}.npy")
    if os.path.exists(npy):
        # read into the executor's memory, not mapped: a cached partition is then an
        # ordinary array that its memory budget accounts for (a map's pages would be the
        # page cache's, and every op on an np.memmap pays for the subclass)
        return np.load(npy, allow_pickle=False)
    pkl = os.path.join(path, f"{split}.pkl")
    auth = FrameAuth(key) if key is not None else app_keys.auth_for(pkl)
    if auth is None:
        raise SourceSliceError(f"source slice {pkl} is not under a directory of this application: no key to "
                               f"authenticate it, so it is not unpickled")
    with open(pkl, "rb") as f:
        raw = f.read()
    body = memoryview(raw)[_HEAD.size :]
    magic, tag = _HEAD.unpack_from(raw) if len(raw) >= _HEAD.size else (b"", b"")
    if magic != _MAGIC or not same(tag, auth.tag(_DOMAIN, _place(pkl), body)):
        raise SourceSliceError(f"source slice {pkl} fails authentication: it was not written by this "
                               f"application's driver (forged, or corrupt), so it is not unpickled")
    return pickle.loads(body)


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
