"""The store's figures, kept in its files so that every user of the store sees them: what
each application did with it (opens, block reads, saves, rebuilds: ``apps``) and what the
store did by itself (moves between tiers, evictions, rebuilds: ``counters``).

- Per application and process, one small file ``stats/apps/<app>.<pid>.json``, replaced
  whole (temporary name, rename) by the one process that writes it: an executor reading
  blocks of a dataset another application saved, the driver opening it. No lock, no
  read-modify-write across processes; readers sum the files of an application.
- Store-wide counters, ``stats/counters.json``, added to under ``stats/counters.lock``
  (``flock``) by ``balance`` and rebuilds: rare events.

Figures are counts, never timings; a process killed between two updates loses at most its
last count (the file is replaced whole, never half written).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections import Counter

from strataflow.common.private_file import atomic_write, make_private_dirs, open_private

__all__ = ["count_app", "bump", "counters", "apps", "COUNTERS"]

COUNTERS = ("moves_down", "moves_up", "bytes_moved_down", "bytes_moved_up", "evictions", "bytes_evicted", "rebuilds")
_KEEP_APPS = 256  # files of the most recent applications kept

_lock = threading.Lock()
#: (root, app) -> this process's counts and per-dataset reads
_mine: dict[tuple[str, str], dict] = {}


def _dir(root: str, *parts: str) -> str:
    return os.path.join(root, "stats", *parts)


def _replace(path: str, data: bytes) -> None:
    d = os.path.dirname(path)
    make_private_dirs(d)
    with atomic_write(path, prefix=".stats-") as fh:
        fh.write(data)


def count_app(root: str, app: str, dataset: str | None = None, **deltas: int) -> None:
    """Adds ``deltas`` (``opens``, ``block_reads``, ``bytes_read``, ``saves``, ``rebuilds``)
    to what application ``app`` did in this process, and to its reads of ``dataset``."""
    if not app:
        return
    with _lock:
        mine = _mine.setdefault((root, app), {"counts": Counter(), "datasets": Counter()})
        mine["counts"].update(deltas)
        if dataset is not None and deltas.get("block_reads"):
            mine["datasets"][dataset] += deltas["block_reads"]
        data = json.dumps({"app": app, "pid": os.getpid(), "updated": time.time(), "counts": mine["counts"],
                           "datasets": mine["datasets"]}).encode()
        try:
            _replace(_dir(root, "apps", f"{app}.{os.getpid()}.json"), data)
        except OSError:
            pass  # figures never fail a read


def apps(root: str) -> dict[str, dict]:
    """Per application id: its counts summed over its processes, and its reads by dataset."""
    out: dict[str, dict] = {}
    d = _dir(root, "apps")
    try:
        files = [f for f in os.listdir(d) if f.endswith(".json") and not f.startswith(".")]
    except FileNotFoundError:
        return out
    for f in files:
        try:
            with open(os.path.join(d, f), "rb") as fh:
                raw = json.loads(fh.read())
        except (OSError, ValueError):
            continue
        got = out.setdefault(str(raw.get("app")), {"counts": Counter(), "datasets": Counter(), "updated": 0.0})
        got["counts"].update(raw.get("counts") or {})
        got["datasets"].update(raw.get("datasets") or {})
        got["updated"] = max(got["updated"], float(raw.get("updated") or 0))
    return {a: {"updated": v["updated"], **dict(v["counts"]), "datasets": dict(v["datasets"])} for a, v in out.items()}


def prune(root: str, keep: int = _KEEP_APPS) -> int:
    """Removes the files of all but the ``keep`` most recently updated ones (the sweep)."""
    d = _dir(root, "apps")
    try:
        files = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".json")]
    except FileNotFoundError:
        return 0
    files.sort(key=lambda p: os.stat(p).st_mtime if os.path.exists(p) else 0, reverse=True)
    n = 0
    for p in files[keep:]:
        try:
            os.unlink(p)
            n += 1
        except FileNotFoundError:
            pass
    return n


def bump(root: str, **deltas: int) -> None:
    """Adds ``deltas`` (names of :data:`COUNTERS`) to the store-wide counters."""
    if not any(deltas.values()):
        return
    make_private_dirs(_dir(root))
    fd = open_private(_dir(root, "counters.lock"), os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        now = counters(root)
        for k, v in deltas.items():
            now[k] = now.get(k, 0) + v
        _replace(_dir(root, "counters.json"), json.dumps(now).encode())
    finally:
        os.close(fd)


def counters(root: str) -> dict[str, int]:
    """The store-wide counters (every name of :data:`COUNTERS`, 0 if never counted)."""
    out = dict.fromkeys(COUNTERS, 0)
    try:
        with open(_dir(root, "counters.json"), "rb") as fh:
            out.update(json.loads(fh.read()))
    except (FileNotFoundError, ValueError):
        pass
    return out
