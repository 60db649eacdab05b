"""Files that only their owner can read or write, and that appear whole.

Every file the engine writes for itself to read back (block files, shuffle outputs, source
slices; segment files and spills are created the same way where they are made) is mode
0600 whatever the umask: no other user of the machine reads the application's data, or
writes into a file of it. It is written under a temporary name unique to its writer
(``mkstemp``: a random name, created exclusively, so two threads or processes writing the
same file never share a half-written one, and no file prepared in advance is reused),
and renamed into place only when complete; a failed write (ENOSPC included) removes the
temporary file and raises. A directory removed under the writer is made again (0700).
"""

from __future__ import annotations

import errno
import os
import tempfile
from contextlib import contextmanager
from typing import BinaryIO, Iterator

__all__ = ["atomic_write", "make_dirs", "make_private_dirs", "mkstemp_private", "open_private", "PRIVATE"]

PRIVATE = 0o600
PRIVATE_DIR = 0o700


def make_dirs(path: str, mode: int, exist_ok: bool = True) -> list[str]:
    """Makes ``path`` and its missing parents, each at ``mode`` whatever the umask (mkdir's
    mode is filtered by it; each one made is chmod-ed to ``mode``); returns those made.
    One walk for the engine's private directories (0700), the user's outputs (at most
    0755, ``io/output_files.py``) and the configured bases (``options.py``). Without
    ``exist_ok`` an existing ``path`` is a FileExistsError. An OSError names the directory
    that could not be made (``exc.filename``)."""
    missing = []
    p = os.path.abspath(path)
    while not os.path.lexists(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    if not missing and not exist_ok:
        raise FileExistsError(errno.EEXIST, "exists", path)
    made = []
    for d in reversed(missing):
        try:
            os.mkdir(d, mode)
        except FileExistsError:
            if d == missing[0] and not exist_ok:
                raise
            continue  # made meanwhile by another writer
        os.chmod(d, mode)
        made.append(d)
    return made


def make_private_dirs(path: str) -> None:
    """Makes ``path`` and its missing parents, each 0700 whatever the umask (nothing if it
    exists). Writers call it when their directory was removed under them (a user deleting
    the application's cache directory mid-job): the cache then heals instead of refusing
    every block from then on."""
    make_dirs(path, PRIVATE_DIR)


def mkstemp_private(directory: str, prefix: str, suffix: str) -> tuple[int, str]:
    """``tempfile.mkstemp`` in ``directory``, mode 0600 whatever the umask; a directory
    removed under the writer is made again (0700) for one more try."""
    try:
        fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    except FileNotFoundError:
        make_private_dirs(directory)
        fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    try:
        os.fchmod(fd, PRIVATE)  # mkstemp asks for 0600, but a umask may remove bits of it
    except BaseException:
        os.close(fd)
        os.remove(path)
        raise
    return fd, path


def open_private(path: str, flags: int) -> int:
    """``os.open(path, flags | O_CREAT, 0600)``, 0600 whatever the umask; a directory
    removed under the writer is made again (0700) for one more try."""
    try:
        fd = os.open(path, flags | os.O_CREAT, PRIVATE)
    except FileNotFoundError:
        make_private_dirs(os.path.dirname(path))
        fd = os.open(path, flags | os.O_CREAT, PRIVATE)
    os.fchmod(fd, PRIVATE)
    return fd


@contextmanager
def atomic_write(path: str, sync: bool = False, prefix: str | None = None) -> Iterator[BinaryIO]:
    """A binary file object whose bytes appear at ``path`` (mode 0600) when the block
    ends without error; ``sync`` flushes them to the device before the rename. The
    temporary file is ``<prefix>XXXX.tmp`` beside ``path`` (default prefix ``<name>.``;
    a store gives a hidden one its sweep recognizes)."""
    directory, name = os.path.split(path)
    fd, tmp = mkstemp_private(directory or ".", f"{name}." if prefix is None else prefix, ".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fd = -1  # closed with fh from now on
            yield fh
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
