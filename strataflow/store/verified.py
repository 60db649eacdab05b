"""A block file's digest checked once per store, not once per process (``verify="store"``).

Why. With ``verify="process"`` every process that reads a block file hashes its
whole extent at its first read of the file (``blockfile.py``). A later application is a
fresh set of processes: its first pass over a dataset hashes every byte before its kernel
touches one, a pass over the data that the engine's own ``DISK_MMAP`` level pays only once
per application (profiled: the digest is most of the gap between a store's first pass and
``DISK_MMAP``'s next one, ``docs/lab-notes/benchmarks-history.md``). With ``verify="store"`` a block file is
hashed once per *version of the file*: by its writer, which reads the file it wrote back
through a mapping, and again by the first reader after any change; the process that hashed
it leaves a record, and later readers that find the file as recorded map it and serve it
without hashing (HDFS's centralized cache makes the same trade: a cached block is
checksummed when cached, then read zero-copy without checksums).

What a record holds and why it is enough. ``<root>/verified/<dataset id>/part-NNNNN.ok``:
the file's device, inode, size, mtime and **ctime** (nanoseconds) as they were *before* it
was hashed, and the digest the hash matched, behind a keyed tag made with the store's key
(a copied or hand-made record is ignored). Every change made through the file system to a
block file — a write, a truncate, a replacement, a ``utime`` that puts the mtime back, a
``chmod`` — sets its ctime to now, which no user can set back: the record then no longer
matches, and the next reader hashes the file again. What a record does not catch: damage
that bypasses the file system (the disk's media, a flipped bit in the page cache), which the
default catches at the next process's first read if the page was read from the device again.
The keyed tag of the header (and of pickled bytes) is still checked at every read, in both
modes. A record that cannot be read, does not verify or does not match only costs a hash.
"""

from __future__ import annotations

import json
import os

from strataflow.common.private_file import atomic_write, make_private_dirs
from strataflow.storage.blocks.frame_auth import TAG_BYTES, FrameAuth, same

__all__ = ["MODES", "DEFAULT", "file_key", "trusted", "record"]

#: the store's choices: the digest at the first read in each process, or once per file version in the store
MODES = ("process", "store")
#: the default: once per file version, so a later application's first pass costs what ``DISK_MMAP``'s does
DEFAULT = "store"
_DOMAIN = b"sf-store-ok-v1"  # at most 16 bytes (blake2b person)
_MAX = 4096


def file_key(st: os.stat_result) -> list[int]:
    """What a record must match: the file's identity, size, and last change (ctime: no user can set it)."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _path(records: str, partition: int) -> str:
    return os.path.join(records, f"part-{partition:05d}.ok")


def trusted(records: str, partition: int, st: os.stat_result, digest: int, auth: FrameAuth) -> bool:
    """Whether a record says the file whose stat is ``st`` was hashed and matched ``digest``."""
    try:
        with open(_path(records, partition), "rb") as fh:
            raw = fh.read(_MAX + 1)
    except OSError:
        return False
    if len(raw) <= TAG_BYTES or len(raw) > _MAX:
        return False
    body, tag = raw[:-TAG_BYTES], raw[-TAG_BYTES:]
    if not same(tag, auth.tag(_DOMAIN, body)):
        return False
    try:
        rec = json.loads(body)
    except ValueError:
        return False
    return isinstance(rec, dict) and rec.get("file") == file_key(st) and rec.get("digest") == digest


def record(records: str, partition: int, st: os.stat_result, digest: int, auth: FrameAuth) -> None:
    """Records that the file whose stat was ``st`` *before* it was hashed matched ``digest``.
    Best effort: a record not written only costs the next reader a hash."""
    body = json.dumps({"file": file_key(st), "digest": digest}, sort_keys=True).encode()
    try:
        make_private_dirs(records)
        with atomic_write(_path(records, partition), prefix=".ok-") as fh:
            fh.write(body + auth.tag(_DOMAIN, body))
    except OSError:
        pass
