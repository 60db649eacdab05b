"""Which application key authenticates the files under a directory.

Most readers of the engine's files hold their store, and the store holds its key. A few
are handed only a file's description, by the driver: a task reading another executor's
block file or mapped extent (``peer_blocks.py``), a reduce task reading the map outputs
the map-output tracker named, an executor reading a source slice the driver wrote. Those
find the key here, by the file's path: the driver's fleet and each executor register the
application's directories (every executor's files and the driver's slices live below
them) with the application's key for as long as they run. A path under no registered
directory has no key, and its file is refused, never read unauthenticated.

The registry lives in the process's memory only. Registrations are counted: the threads
backend's driver and its executor register the same directories with the same key, and
the directories stay known until both are gone. Registering a directory with a second,
different key is a bug, and raises.

Nothing is kept by file: a lookup walks up from the path (a dictionary probe a level, a
few microseconds). A memo by path, kept until 65,536 entries, grew with every shuffle
output and source slice a long-lived executor ever read (issue 50); the one reader that
asks per file many times over (a reduce task, per map output) keeps the answer with the
map output's cached index instead, valid while :func:`generation` is unchanged.
"""

from __future__ import annotations

import os
import threading
from typing import Iterable

from strataflow.storage.blocks.frame_auth import FrameAuth

__all__ = ["register", "unregister", "auth_for", "generation", "registered_count"]

_lock = threading.Lock()
_known: dict[str, tuple[FrameAuth, int]] = {}  # directory -> (its key, registrations)
_generation = [0]  # bumped by every registration change: what a kept answer is valid for


def _norm(path: str) -> str:
    return os.path.abspath(os.fspath(path))


def register(dirs: Iterable[str], auth: FrameAuth) -> None:
    """Files under ``dirs`` are authenticated with ``auth`` (until :func:`unregister`)."""
    with _lock:
        _generation[0] += 1
        for d in {_norm(d) for d in dirs}:
            got = _known.get(d)
            if got is not None and got[0] != auth:
                raise ValueError(f"directory {d} is already registered with another application's key")
            _known[d] = (auth, 1 if got is None else got[1] + 1)


def unregister(dirs: Iterable[str], auth: FrameAuth) -> None:
    """Undoes one :func:`register` of ``dirs`` with ``auth``."""
    with _lock:
        _generation[0] += 1
        for d in {_norm(d) for d in dirs}:
            got = _known.get(d)
            if got is None or got[0] != auth:
                continue
            if got[1] <= 1:
                del _known[d]
            else:
                _known[d] = (auth, got[1] - 1)


def auth_for(path: str) -> FrameAuth | None:
    """The key of ``path``'s nearest registered directory (itself, or the nearest above
    it); None if there is none."""
    p = _norm(path)
    with _lock:
        return _lookup(p)


def generation() -> int:
    """A number that changes whenever a registration does: an answer of :func:`auth_for`
    kept by a caller holds while it is the same."""
    return _generation[0]


def registered_count() -> int:
    """Directories registered in this process (``registry_sizes``)."""
    with _lock:
        return len(_known)


def _lookup(p: str) -> FrameAuth | None:
    while True:
        got = _known.get(p)
        if got is not None:
            return got[0]
        parent = os.path.dirname(p)
        if parent == p:
            return None
        p = parent
