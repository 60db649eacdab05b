"""The driver's source slices: written once for the executors, and always recoverable,
because the driver keeps the data (as Spark's driver keeps a parallelized collection).

A stage's lineage is pickled for every new stage (each K-means iteration is one), and a
source made from the driver's memory holds all its partitions: pickled in line, a 300 MB
array would travel with every stage to every executor, even when all its blocks are
cached. Instead, while the driver pickles a stage (``spilling_sources``), a large
:class:`~strataflow.lineage.ListSource` (or broadcast value) writes its slices once and
travels as a :class:`~.source_slices.SliceRef`: where they are, and each slice's check;
an executor reads only the slices its tasks compute, verified (``source_slices.py``).
Small sources (under ``INLINE_BYTES``) still travel in line, which is cheaper than a file.

**Where slices live.** In a directory of their own, ``strataflow-<app>-sources`` under the
first of ``local_dirs`` (mode 0700, owned and cleaned up like the cache's and shuffle's),
not inside the cache's. The cache's directories hold what can be recomputed, and faults
there (a deleted or full cache directory, a damaged block) must cost cache blocks only;
slices are what recomputation starts from. The driver also keeps a weak reference to the
object that holds each source's data (the dataset's node, the broadcast), so that:

- a slice an executor could not use (missing, short, damaged, forged, unreadable; the
  directory deleted or made unreadable) is **sent again by the driver** from memory
  (:meth:`SourceStore.serve`, asked over the executor's private socket) and its file is
  **re-written** for the next reader: never read wrong, and no job fails while the driver
  holds the data;
- a source whose files cannot be written (a full disk, a read-only or vanished directory)
  is **served by the driver itself**: its reference carries no path, each executor asks
  for the slices its tasks need, and a warning names the disk, the path and the errno
  (never a pickling error);
- when that object is garbage-collected, its files are removed (a loop that parallelizes
  a new collection each iteration does not fill the disk).

Each loss is a ``SourceSliceLost`` event (which executor, which slice, why, and whether
the file was re-written), each write that fails a ``SourceNotWritten`` event; ``metrics()``
counts ``source_slices_lost``, ``source_slices_rewritten`` and ``source_slices_sent``.
On a cluster the ray backend's store puts the slices in Ray's object store instead
(``executor/ray/session.RaySourceStore``).
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from strataflow.common.logs import logger
from strataflow.storage.blocks import app_keys
from strataflow.storage.disk.disk_errors import describe_write_error
from strataflow.storage.blocks.frame_auth import FrameAuth
from strataflow.storage.workdirs import ensure_app_dir
from strataflow.shipping.source_slices import SliceRef, SourceSliceError, load_slice, register_loader, write_slice

__all__ = ["SourceStore", "SourceSliceError", "SliceRef", "spilling_sources", "current_store", "INLINE_BYTES",
           "load_slice", "register_loader", "new_uid"]

INLINE_BYTES = 1 << 20
_local = threading.local()
_log = logger.getChild("sources")


@dataclass
class _Source:
    """One source written (or not) for the executors: its reference, and the object
    that holds its slices (weakly: the driver's copy lives as long as the user's)."""

    ref: SliceRef
    owner: Callable[[], Any]  # the holder, or None once it is gone (a weak reference)
    slices_of: Callable[[Any], list]
    #: a re-write failed once: the driver serves this source from now on (and says so once)
    unwritable: bool = False


class SourceStore:
    """Where the driver writes source slices (a directory it owns and removes on stop), and
    the driver's answer to an executor that could not use one (:meth:`serve`)."""

    def __init__(self, directory: str, key: bytes | None = None, events: Any = None) -> None:
        """``key``: the application's secret. Without one, the key is the application's
        registered for ``directory`` when the first slices are written (the fleet
        registers it when it starts, before any stage is pickled); failing that, the
        store makes its own and registers it, so that this process can read them back.
        ``events``: the application's bus, for the ``SourceSliceLost`` and
        ``SourceNotWritten`` events."""
        self.directory = directory
        self._auth = None if key is None else FrameAuth(key)
        self._events = events
        self._sources: dict[str, _Source] = {}
        self._lock = threading.RLock()
        self.counts = {"source_slices_lost": 0, "source_slices_rewritten": 0, "source_slices_sent": 0}

    def _writer_auth(self) -> FrameAuth:
        if self._auth is None:
            auth = app_keys.auth_for(self.directory)
            if auth is None:
                auth = FrameAuth()
                app_keys.register([self.directory], auth)
            self._auth = auth
        return self._auth

    def _post(self, event: str, **fields: Any) -> None:
        if self._events is not None:
            self._events.post(event, **fields)

    # -- writing --------------------------------------------------------------------------------
    def ship(self, uid: str, owner: Any, slices_of: Callable[[Any], list]) -> SliceRef:
        """The reference executors read ``slices_of(owner)`` by, written on first use (one
        file each). A write that fails leaves no file: the driver serves that source."""
        with self._lock:
            got = self._sources.get(uid)
            if got is not None:
                return got.ref
            slices = slices_of(owner)
            path = os.path.join(self.directory, f"source-{uid}")
            try:
                self._make_dir(path)
                checks = tuple(write_slice(path, i, s, self._writer_auth()) for i, s in enumerate(slices))
                ref = SliceRef(uid, path, checks)
            except OSError as exc:
                shutil.rmtree(path, ignore_errors=True)
                ref = SliceRef(uid, None, (), self._not_written(uid, path, exc))
            try:
                held: Callable[[], Any] = weakref.ref(owner)
                weakref.finalize(owner, self.forget, uid).atexit = False
            except TypeError:  # an owner that takes no weak reference (a list): held for the store's life
                held = lambda: owner  # noqa: E731
            self._sources[uid] = _Source(ref, held, slices_of)
        return ref

    def _make_dir(self, path: str) -> None:
        ensure_app_dir(self.directory)  # re-made (and owned again) if it was removed
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)

    def _not_written(self, uid: str, path: str, exc: OSError) -> str:
        why = describe_write_error("source slices to", path, exc)
        _log.warning("%s; the driver sends them to the executors itself", why)
        self._post("SourceNotWritten", source=uid, path=path, errno=exc.errno, reason=why)
        return why

    # -- serving ----------------------------------------------------------------------------
    def serve(self, uid: str, split: int, reason: str | None, executor: str | None = None) -> tuple[Any, bool]:
        """An executor could not use slice ``split`` of ``uid`` (``reason``; None: the
        driver serves that source). Returns the driver's copy and whether its file is good
        again (re-written); :class:`SourceSliceError` if the driver no longer holds it."""
        with self._lock:
            got = self._sources.get(uid)
        owner = got.owner() if got is not None else None
        if owner is None:
            raise SourceSliceError(f"source {uid} slice {split}: {reason or 'not written'}; and the driver no longer "
                                   f"holds that source (its dataset was garbage-collected)")
        value = got.slices_of(owner)[split]
        file_ok = False
        if reason is not None:
            file_ok = self._rewrite(got, split, value)
            with self._lock:
                self.counts["source_slices_lost"] += 1
                self.counts["source_slices_rewritten"] += file_ok
            self._post("SourceSliceLost", source=uid, split=split, executor=executor, reason=reason,
                       rewritten=file_ok)
        with self._lock:
            self.counts["source_slices_sent"] += 1
        return value, file_ok

    def _rewrite(self, source: _Source, split: int, value: Any) -> bool:
        """Writes slice ``split`` again; whether its file now matches the reference."""
        ref = source.ref
        with self._lock:
            if ref.path is None or source.unwritable:
                return False
            try:
                self._make_dir(ref.path)
                check = write_slice(ref.path, split, value, self._writer_auth())
            except OSError as exc:
                source.unwritable = True
                self._not_written(ref.uid, ref.path, exc)
                return False
        if check != (ref.checks[split] if split < len(ref.checks) else None):
            _log.warning(
                "source %s slice %d changed in the driver's memory since it was first sent (an array modified after "
                "from_numpy?): executors are sent the current values", ref.uid, split)
            return False
        return True

    def forget(self, uid: str) -> None:
        """Removes what was written for ``uid`` (a destroyed broadcast, a collected
        dataset); a later ``ship`` writes it again."""
        with self._lock:
            got = self._sources.pop(uid, None)
        if got is not None and got.ref.path is not None:
            shutil.rmtree(got.ref.path, ignore_errors=True)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sources)


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
