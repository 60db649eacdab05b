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
  id or generation, with the size and the modification time. A store that gives none of
  the first (``memory://``: a creation time only; a web server with ``Last-Modified`` alone,
  stamped to the second) cannot be versioned: a rewrite within a second would go unseen.

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
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from strataflow.io.paths import FileRef

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
#: fields of an fsspec ``info`` that name a remote file's content or version, in the order
#: the key lists them (S3: ETag, VersionId, LastModified; GCS: generation, updated;
#: Azure: etag, last_modified; HTTP: ETag, Last-Modified)
_REMOTE_VERSION = ("ETag", "etag", "e_tag", "VersionId", "version_id", "generation", "md5Hash", "crc32c")
_REMOTE_TIME = ("LastModified", "last_modified", "Last-Modified", "updated", "mtime")


@dataclass(frozen=True)
class Version:
    """A file's version as a reader saw it: ``key`` (None when it cannot be versioned, then
    ``reason`` says why)."""

    key: tuple | None
    reason: str = ""

    @property
    def cacheable(self) -> bool:
        return self.key is not None


def version_of(ref: FileRef, now: Callable[[], float] = time.time) -> Version:
    """The version of the file ``ref`` names, asked of its file system now (never a listing
    kept from before). ``now``: the clock a local file's times are compared with (seconds
    since the epoch)."""
    if ref.fs is None:
        return _local(ref.path, now)
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
    versions = tuple((k, str(info[k])) for k in _REMOTE_VERSION if info.get(k) not in (None, ""))
    times = tuple((k, str(info[k])) for k in _REMOTE_TIME if info.get(k) not in (None, ""))
    if not versions:
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        has = "only a modification time, which a rewrite within its granularity shares" if times else \
            "no ETag, version or modification time"
        return Version(None, f"{name}: the {protocol} file system gives {has}, so a change could go unseen")
    return Version(("remote", name, int(info.get("size") or 0), versions, times))
