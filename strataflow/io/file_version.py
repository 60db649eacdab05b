"""What version of an input file a reader sees: the key under which the input cache (issue
53) may keep a file's decoded partitions, and the promise that a file changed in any way is
never served from it.

Why these fields. A cache keyed by a file's path serves stale data the moment the file
changes; one keyed by its bytes must read them all, which is the parse it means to save. So
a file is keyed by what its file system says of it, and a change must move at least one of
those fields:

- a local file: ``(device, inode, size, mtime_ns, ctime_ns)`` from ``os.stat``. A rewrite
  in place moves ``mtime`` (and ``ctime``); an append or a truncation moves ``size``; a
  replacement by rename (how editors, ``mv`` and atomic writers work) is another inode; a
  rewrite that puts the old ``mtime`` back (``os.utime``, ``touch -d``, ``cp -p``) still
  moves ``ctime``, which no user can set.
- a remote file (fsspec): the object store's ETag (derived from the content on S3), version
  id or generation, with the size (``remote_version.py``, which a listing gives too). A
  store that gives none of these (``memory://``: a creation time only; a web server with
  ``Last-Modified`` alone, stamped to the second) cannot be versioned: a rewrite within a
  second would go unseen.

Racy timestamps (git's "racily clean" problem). A file system stamps times at a
granularity (the kernel's coarse clock: a few milliseconds on Linux; a second or two on
others), so two writes of the same size within one tick can leave every field equal. A file
whose ``mtime`` or ``ctime`` is within :data:`RACY_S` of the moment it is versioned may
still be written within that tick: it is not versioned (the reader parses it and caches
nothing); once it is older, any later write stamps a later time. The clock is the caller's
(``now``), so a test never depends on the wall clock.

A file that cannot be versioned is read as if there were no cache, and the reason says why
(the report shows it): never a guess.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Mapping

from strataflow.io.paths import FileRef
from strataflow.io.remote_version import Version, remote_version

__all__ = ["RACY_S", "Version", "version_of"]

#: a file stamped within this many seconds of being versioned may still change unseen
RACY_S = 2.0


def racy_s() -> float:
    """:data:`RACY_S`, or ``STRATAFLOW_RACY_S`` from the environment (which executor
    processes inherit): the tests set 0 to cache files they have just written, where a
    change within the file system's tick cannot happen because nothing changes them."""
    got = os.environ.get("STRATAFLOW_RACY_S")
    try:
        return RACY_S if got is None else max(0.0, float(got))
    except ValueError:
        return RACY_S
def version_of(ref: FileRef, now: Callable[[], float] = time.time, listed: bool = False) -> Version:
    """The version of the file ``ref`` names, asked of its file system now. ``listed``: a
    remote file's version as its listing gave it (``FileRef.version``, taken when the
    dataset was made: its executors then need no request, nor the file system's client),
    where the listing gave one. ``now``: the clock a local file's times are compared with
    (seconds since the epoch)."""
    if ref.fs is None:
        return _local(ref.path, now)
    if listed and ref.version is not None:
        return ref.version
    return _remote(ref.fs, ref.path)


def _local(path: str, now: Callable[[], float]) -> Version:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return Version(None, f"{path} does not exist")
    except OSError as exc:
        return Version(None, f"{path} cannot be read: {exc.strerror or exc}")
    latest = max(st.st_mtime_ns, st.st_ctime_ns) / 1e9
    age = now() - latest
    racy = racy_s()
    if age < racy:
        return Version(None, f"{path} changed {max(age, 0.0):.2f} s ago: a change within the file system's "
                             f"timestamp granularity could go unseen (versioned once {racy:g} s old)")
    return Version(("local", st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))


def _remote(fs: Any, path: str) -> Version:
    name = fs.unstrip_protocol(path)
    try:
        fs.invalidate_cache(path)
        info: Mapping[str, Any] = fs.info(path)
    except FileNotFoundError:
        return Version(None, f"{name} does not exist")
    except OSError as exc:
        return Version(None, f"{name} cannot be read: {exc}")
    return remote_version(fs, path, info)
