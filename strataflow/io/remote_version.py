"""A remote file's version from what its file system says of it (an fsspec ``info`` dict,
from a listing or a ``HEAD``): the key part of ``file_version.py`` that the listing itself
can give, so a reader lists a remote file once and its executors need not ask again.

Why content versions only, no times: an ETag (S3: derived from the content; a multipart
upload's from its parts' digests), a version id or a generation moves whenever the content
does, within the same second too, where a modification time stamped to the second would
not. Times are left out of the key because a listing and a ``HEAD`` format them
differently; a weak HTTP ETag (``W/"..."``), which a server may keep across changes it
deems equivalent, does not version a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["Version", "remote_version", "same_version"]

#: fields of an fsspec ``info`` that name a remote file's content or version (S3: ETag,
#: VersionId; GCS: generation, md5Hash, crc32c; Azure: etag; HTTP: ETag)
REMOTE_VERSION = ("ETag", "etag", "e_tag", "VersionId", "version_id", "generation", "md5Hash", "crc32c")
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


def remote_version(fs: Any, path: str, info: Mapping[str, Any]) -> Version:
    """The version of ``path`` on ``fs`` from ``info`` (its listing's or ``HEAD``'s)."""
    name = fs.unstrip_protocol(path)
    versions = tuple((k, str(info[k])) for k in REMOTE_VERSION
                     if info.get(k) not in (None, "") and not str(info[k]).startswith("W/"))
    if not versions:
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        times = any(info.get(k) not in (None, "") for k in _REMOTE_TIME)
        weak = any(str(info.get(k, "")).startswith("W/") for k in REMOTE_VERSION)
        has = "only a weak ETag, which a server may keep across a change" if weak else \
            "only a modification time, which a rewrite within its granularity shares" if times else \
            "no ETag, version or modification time"
        return Version(None, f"{name}: the {protocol} file system gives {has}, so a change could go unseen")
    return Version(("remote", name, int(info.get("size") or 0), versions))


def same_version(listed: tuple | None, fresh: tuple | None) -> bool:
    """Whether ``fresh`` (asked now) is the version ``listed`` was: equal local keys; for a
    remote file the same name and size, and every content field both give agrees (a
    ``HEAD`` may give a version id a listing does not), at least one of them shared."""
    if listed is None or fresh is None:
        return False
    if listed[0] != "remote" or fresh[0] != "remote":
        return listed == fresh
    if listed[1:3] != fresh[1:3]:
        return False
    a, b = dict(listed[3]), dict(fresh[3])
    common = set(a) & set(b)
    return bool(common) and all(a[k] == b[k] for k in common)
