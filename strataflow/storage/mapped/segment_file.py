"""Segment files, the on-disk part of the region store (:mod:`.region_store`): create one,
write an extent into it, seal it, map it. The store decides which segment and which offset
(under its lock); these functions only do the file's I/O, and may run outside that lock.

Layout on disk. A new segment file is sized to its capacity at once (sparse: unwritten
space costs no disk), so that the one map made while it is still being filled also covers
the blocks appended later (writes and the map share the page cache). When the next block
does not fit, the segment is sealed: truncated to the bytes written. Writes are
``os.pwrite`` at an offset the store reserved, so concurrent puts write in parallel; the
frames of a small block are joined into one write.

Maps. A segment is mapped once, lazily at its first read, read-only and shared by every
read of it. The map is made by pyarrow (``pa.memory_map``, then ``close()``, which closes
the descriptor at once; the map stays until the last buffer referencing it is gone):
Python 3.11's ``mmap.mmap`` keeps a dup of the descriptor for the map's whole life
(``trackfd=False`` came in 3.13), one open descriptor per mapped segment.

A segment file is created mode 0600 whatever the umask: other users may neither read the
cache nor write into it (the region store also authenticates the pickled bytes it reads).

Failures: a full device or quota (and, when sizing, a file too large) raises
:class:`DiskFull`, and ``create`` then leaves no file behind; other errors are the OSError
the system gave. No function leaves a descriptor open.
"""

from __future__ import annotations

import errno
import os

import pyarrow as pa

from strataflow.storage.disk.disk_store import DiskFull
from strataflow.common.private_file import open_private

__all__ = ["create", "write", "seal", "map_file"]

_JOIN_BELOW = 1 << 20  # frames of a smaller block are joined into one pwrite
_FULL = (errno.ENOSPC, errno.EDQUOT)


def create(path: str, size: int) -> None:
    """A new sparse file of ``size`` bytes at ``path``; FileExistsError if the name is
    taken (the caller picks another)."""
    try:
        fd = open_private(path, os.O_WRONLY | os.O_EXCL)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno in _FULL:
            raise DiskFull(exc.errno, f"cannot create segment {path}: {exc}") from exc
        raise
    try:
        os.ftruncate(fd, size)  # sparse: only what is written takes disk space
    except OSError as exc:
        os.unlink(path)
        if exc.errno in _FULL + (errno.EFBIG,):
            raise DiskFull(exc.errno, f"cannot size segment {path}: {exc}") from exc
        raise
    finally:
        os.close(fd)


def write(path: str, views: list[memoryview], offset: int) -> None:
    """Writes the frames back to back from ``offset`` (raises OSError: ENOSPC included,
    for the caller to undo its reservation)."""
    if len(views) > 1 and sum(v.nbytes for v in views) < _JOIN_BELOW:
        views = [memoryview(b"".join(views))]
    fd = os.open(path, os.O_WRONLY)
    try:
        for v in views:
            while v.nbytes:
                n = os.pwrite(fd, v, offset)
                offset += n
                v = v[n:]
    finally:
        os.close(fd)


def seal(path: str, end: int) -> None:
    """No more appends: the file is cut to ``end``, the bytes reserved (a map made before
    still covers them; nothing reads past them). Best effort: a failure leaves the sparse
    tail, which costs no disk."""
    try:
        os.truncate(path, end)
    except OSError:
        pass


def map_file(path: str) -> pa.Buffer:
    """The whole file, mapped read-only; no descriptor is left open (the map keeps the
    file's data, even once the file is unlinked)."""
    mapped = pa.memory_map(path, "r")
    try:
        return mapped.read_buffer()
    finally:
        mapped.close()
