"""Spill files: runs of records a task's work structure writes when its execution memory
runs out, read back by streaming.

Every structure that spills (the aggregator, the external sorter, the grouper and the
groups it writes) writes the same kind of file, so the format and its guarantees live
here once. A file is a sequence of pickled chunks of at most ``CHUNK`` records, and
unpickling runs code: a file put in its place by someone else must not be loaded. Each
chunk is framed by its index, its length and a keyed BLAKE2b tag
(``storage/blocks/frame_auth.py``) over the file's name, its index, its length and its
bytes, checked before it is unpickled; the key is the owner's own (the same object writes
and reads its spills, so no other process needs it), and the owner knows how many chunks
each file holds. A file that fails (forged, corrupt, truncated) raises
:class:`SpillCorrupt`, which fails the task, and its retry writes its spills afresh.

Files are created private (mode 0600) in the executor's shuffle directories, never in
``/tmp``; a write that fails (ENOSPC) leaves no file and is retried as the
infrastructure's fault. A reader holds one chunk at a time. Files are removed when their
owner says so, and in any case when the owner is garbage-collected (a task that fails
mid-merge leaves nothing behind).
"""

from __future__ import annotations

import os
import pickle
import struct
import weakref
from typing import Any, Callable, Iterable, Iterator

from strataflow.common import value_pickle
from strataflow.common.private_file import mkstemp_private
from strataflow.common.retries import infrastructure_fault
from strataflow.storage.blocks.frame_auth import TAG_BYTES, FrameAuth, same

__all__ = ["CHUNK", "RunWriter", "SpillCorrupt", "SpillFiles"]

CHUNK = 1024  # records per pickled chunk: what a reader holds of one run at a time
_DOMAIN = b"sf-spill-v1"
_CHUNK_HEAD = struct.Struct("<QQ")  # chunk index, pickle length
_FRAME = struct.Struct(f"<QQ{TAG_BYTES}s")  # the same, then the tag


class SpillCorrupt(RuntimeError):
    """A spill file fails its authentication or is truncated: it was not (or not wholly)
    written by its owner, and nothing of the failing chunk was unpickled. The
    infrastructure's fault: the task is retried and writes its spills afresh."""

    retryable = True


def _remove_all(paths: set) -> None:
    for p in list(paths):
        try:
            os.remove(p)
        except FileNotFoundError:
            pass
        paths.discard(p)


class SpillFiles:
    """The spill files of one owner, in one directory, with the key that authenticates them.

    ``on_spill(bytes)`` is told the size of each file once it is complete (the task's
    ``spill_bytes`` and the memory split's heap misses)."""

    def __init__(self, spill_dir: str, on_spill: Callable[[int], None] | None = None) -> None:
        self.spill_dir = spill_dir
        self.on_spill = on_spill
        self.spilled_bytes = 0
        self.files_written = 0
        self._auth = FrameAuth()
        self._chunks: dict[str, int] = {}
        self._live: set[str] = set()
        self._kept: set[str] = set()  # files handed to an object that outlives the structure
        self._finalizer = weakref.finalize(self, _remove_all, self._live)

    def writer(self) -> "RunWriter":
        """A new file, written chunk by chunk."""
        try:
            fd, path = mkstemp_private(self.spill_dir, "spill-", ".pkl")
        except OSError as exc:  # a full or refusing device: the task is retried (retries.py)
            raise infrastructure_fault(exc)
        self._live.add(path)
        return RunWriter(self, fd, path)

    def write_run(self, records: Iterable[Any], weight: Callable[[Any], int] | None = None) -> str:
        """One file holding ``records`` (any iterable, consumed in chunks); its path. A chunk
        holds records weighing ``CHUNK`` in all (``weight(record)``, 1 each by default:
        a record that is itself a list of values weighs its length), so that a reader
        holds about ``CHUNK`` values of each run whatever the records hold."""
        w = self.writer()
        try:
            batch: list = []
            held = 0
            for r in records:
                batch.append(r)
                held += 1 if weight is None else weight(r)
                if held >= CHUNK:
                    w.append(batch)
                    batch = []
                    held = 0
            if batch:
                w.append(batch)
        except BaseException:
            w.abort()
            raise
        return w.close()

    def read(self, path: str) -> Iterator[Any]:
        """The records of one file, each chunk authenticated before it is unpickled."""
        chunks = self._chunks.get(path)
        if chunks is None:
            raise SpillCorrupt(f"spill file {path} was not written (or was already removed) by this owner")
        with open(path, "rb") as f:
            left = os.fstat(f.fileno()).st_size
            for i in range(chunks):
                head = f.read(_FRAME.size)
                index, length, tag = _FRAME.unpack(head) if len(head) == _FRAME.size else (-1, 0, b"")
                left -= len(head)
                if index != i or length > left:  # checked before reading: no allocation on a forged length
                    raise SpillCorrupt(f"spill file {path} is truncated or out of order at chunk {i}")
                data = f.read(length)
                left -= len(data)
                if not same(tag, self._tag(path, i, data)):
                    raise SpillCorrupt(f"spill file {path} fails authentication at chunk {i}: not written by "
                                       f"this task, or corrupt")
                yield from pickle.loads(data)
            if left:
                raise SpillCorrupt(f"spill file {path} has {left} bytes after its last chunk")

    def remove(self, path: str) -> None:
        self._chunks.pop(path, None)
        self._kept.discard(path)
        _remove_all({path} & self._live)
        self._live.discard(path)

    def remove_all(self) -> None:
        self._chunks.clear()
        _remove_all(self._live)

    def keep(self, path: str) -> None:
        """``path`` now belongs to an object of its own (a group), which removes it."""
        self._kept.add(path)

    def remove_unkept(self) -> None:
        """Removes every file not handed to an object of its own (runs, half-written groups)."""
        for p in self._live - self._kept:
            self.remove(p)

    @property
    def paths(self) -> list[str]:
        return sorted(self._live)

    def _tag(self, path: str, index: int, data: bytes) -> bytes:
        name = os.path.basename(path).encode()
        return self._auth.tag(_DOMAIN, struct.pack("<H", len(name)), name, _CHUNK_HEAD.pack(index, len(data)), data)


class RunWriter:
    """Appends authenticated chunks to one spill file; :meth:`close` makes it readable."""

    def __init__(self, owner: SpillFiles, fd: int, path: str) -> None:
        self.owner = owner
        self.path = path
        self.chunks = 0
        self._f = os.fdopen(fd, "wb")

    def append(self, records: list) -> None:
        data = value_pickle.dumps(records)
        try:
            self._f.write(_FRAME.pack(self.chunks, len(data), self.owner._tag(self.path, self.chunks, data)))
            self._f.write(data)
        except OSError as exc:
            self.abort()
            raise infrastructure_fault(exc)
        self.chunks += 1

    def close(self) -> str:
        try:
            size = self._f.tell()
            self._f.close()
        except OSError as exc:
            self.abort()
            raise infrastructure_fault(exc)
        owner = self.owner
        owner._chunks[self.path] = self.chunks
        owner.spilled_bytes += size
        owner.files_written += 1
        if owner.on_spill:
            owner.on_spill(size)
        return self.path

    def abort(self) -> None:
        """Closes and removes the file (a failed write leaves nothing)."""
        try:
            self._f.close()
        except OSError:
            pass
        self.owner.remove(self.path)
