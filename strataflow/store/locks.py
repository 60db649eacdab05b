"""The store's locks, all ``flock``: the kernel releases a lock when its holder dies however
it dies (kill -9 included), so a lock held means a live holder, with no pid to reuse and no
clock to trust.

- ``gc.lock``: a sweep (:mod:`.sweep`) holds it exclusive; every change a writer or reader
  makes to what a sweep looks at (taking a writer lock, publishing, taking a lease) happens
  under it shared. A sweep therefore sees each save either not started, in progress (its
  writer lock held) or published, never between two of these.
- ``writing/<id>.lock``: held exclusive by the process saving dataset ``<id>`` until it is
  published or abandoned; it also says who (pid, process start time, name) for ``status``.
  It appears at its name already locked (made under a temporary name, locked, then linked
  into place), so a lock file nobody holds is a dead writer's (``kill -9``: its file stays,
  its flock went with it) and the next writer takes it over at once, rather than finding
  the name taken until a sweep removes the file (:class:`WriterLock`).
- ``leases/<id>/<pid>-<n>.lease``: held shared by a process that opened dataset ``<id>``,
  until it closes it; a removed dataset's blocks stay on disk while any lease is held, so
  a reader that has not yet mapped a block still finds it. The last reader to close frees
  them (``sweep.free_unheld``).
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import time
from contextlib import contextmanager
from typing import Iterator

import psutil

from strataflow.common.private_file import make_private_dirs, mkstemp_private, open_private

__all__ = ["gc_lock", "WriterLock", "Lease", "is_held", "holder"]

_counter = itertools.count()
#: rounds of create-or-take-over a writer lock makes while other writers release it meanwhile
_TAKEOVER_TRIES = 8


@contextmanager
def gc_lock(root: str, exclusive: bool) -> Iterator[None]:
    """The store's sweep lock, held for the block (blocking)."""
    fd = open_private(os.path.join(root, "gc.lock"), os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # releases the lock


def is_held(path: str) -> bool:
    """Whether some process holds a lock on ``path`` (a file that is gone holds none)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def holder(path: str) -> dict:
    """What a writer lock says of its writer (empty if unreadable)."""
    try:
        with open(path, "rb") as fh:
            return json.loads(fh.read() or b"{}")
    except (OSError, ValueError):
        return {}


def _start_time() -> float:
    try:
        return psutil.Process().create_time()
    except psutil.Error:
        return 0.0


class WriterLock:
    """A save in progress: ``writing/<id>.lock``, locked exclusive from the moment it has its
    name (made under the gc lock shared, so a sweep never sees it unlocked), released by
    :meth:`release` or by the writer's death. FileExistsError when a live writer holds it;
    a dead writer's lock is taken over (``took_over``: what that writer's file said of it)."""

    def __init__(self, root: str, dataset_id: str, name: str) -> None:
        self.path = os.path.join(root, "writing", f"{dataset_id}.lock")
        self.took_over: dict | None = None
        info = json.dumps({"pid": os.getpid(), "start_time": _start_time(), "name": name,
                           "since": time.time()}).encode()
        for _ in range(_TAKEOVER_TRIES):
            fd = self._create(info)
            if fd >= 0:
                self._fd = fd
                return
            fd = self._take_over(info)
            if fd >= 0:
                self._fd = fd
                return
        raise FileExistsError(f"{self.path}: held by a live writer")

    def _create(self, info: bytes) -> int:
        """The lock made whole under a temporary name, locked, then linked to its name (-1:
        the name is taken)."""
        fd, tmp = mkstemp_private(os.path.dirname(self.path), f".{os.path.basename(self.path)}.", ".tmp")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, info)
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                os.close(fd)
                return -1
            return fd
        except BaseException:
            os.close(fd)
            raise
        finally:
            os.unlink(tmp)

    def _take_over(self, info: bytes) -> int:
        """The lock at the name, if nobody holds it (its writer died): locked and rewritten
        with this writer's details. FileExistsError when a live writer holds it; -1 when the
        file went or changed meanwhile (try again)."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return -1
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise FileExistsError(f"{self.path}: held by a live writer") from None
            try:
                now = os.stat(self.path)
            except FileNotFoundError:
                now = None
            mine = os.fstat(fd)
            if now is None or (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
                os.close(fd)  # released (unlinked) by its writer between our open and lock
                return -1
            self.took_over = holder(self.path)
            os.ftruncate(fd, 0)
            os.pwrite(fd, info, 0)
            return fd
        except BaseException:
            os.close(fd)
            raise

    def release(self) -> None:
        """Removes the lock file, then unlocks (call under the gc lock)."""
        self._fd = _unlink_and_unlock(self.path, self._fd)


class Lease:
    """A reader's hold on a dataset's blocks (see the module's docstring)."""

    def __init__(self, root: str, dataset_id: str) -> None:
        self.dataset_id = dataset_id
        d = os.path.join(root, "leases", dataset_id)
        make_private_dirs(d)
        self.path = os.path.join(d, f"{os.getpid()}-{next(_counter)}.lease")
        self._fd = open_private(self.path, os.O_RDWR | os.O_CLOEXEC)
        fcntl.flock(self._fd, fcntl.LOCK_SH)

    def release(self) -> None:
        if self._fd < 0:
            return
        self._fd = _unlink_and_unlock(self.path, self._fd)
        try:
            os.rmdir(os.path.dirname(self.path))  # the last lease of the dataset (a new one remakes it)
        except OSError:
            pass

    def __del__(self) -> None:  # a reader that forgot to close: its lease goes with it
        try:
            self.release()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _unlink_and_unlock(path: str, fd: int) -> int:
    """Removes a held lock file, then closes (unlocks) it: in that order, so no one takes
    the lock of a file about to go. Returns -1, the closed descriptor (nothing if ``fd``
    is -1 already)."""
    if fd < 0:
        return -1
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    os.close(fd)
    return -1
