"""The disk store: one file per block under the cache directories (never the shuffle
directories), used round-robin.

A block file is written to a temporary name and renamed into place, so a crash never
leaves a half-written block under a block's name. Its header holds the serializer's
name, the payload length and a 64-bit XXH3 hash of the name and the payload (xxhash:
about 6 GB/s here, against 2-3 GB/s for zlib's CRC32; it runs on every disk hit), verified
on every read, and the file's size must be the one written: a short, long, missing or corrupt
file raises :class:`BlockUnavailable`, and the block manager
recomputes the partition from lineage. A full device (ENOSPC) or the store's own
``capacity`` raises :class:`DiskFull`; the caller then does without caching the block.

One store is one tier's worth of files (see ``tiers.py``, which stacks several). Two puts
of the same block never write at once: the second waits for the first and returns its
entry (a synchronous eviction and the asynchronous writer may both try to write a block),
and temporary names are unique per writer, so no two writers share a half-written file.
"""

from __future__ import annotations

import errno
import itertools
import os
import struct
import threading
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import xxhash

__all__ = ["DiskStore", "DiskEntry", "DiskFull", "BlockUnavailable", "file_size"]

_MAGIC = b"SFBLK02\0"
_MAP_ABOVE = 1 << 20  # blocks of this size and more are mapped instead of read
_HEAD = struct.Struct("<8sQQB")  # magic, xxh3-64 of name + payload, payload length, name length


def _digest(name: bytes, payload) -> int:
    h = xxhash.xxh3_64(name)
    h.update(payload)
    return h.intdigest()


def file_size(payload_size: int, serializer: str) -> int:
    """Bytes a block file takes (header and serializer name included): what capacity counts."""
    return _HEAD.size + len(serializer.encode()) + payload_size


class DiskFull(OSError):
    """No room for a block (device full or the store's capacity reached)."""


class BlockUnavailable(Exception):
    """A block file is missing, short or fails its checksum."""


@dataclass(frozen=True)
class DiskEntry:
    path: str
    size: int  # bytes on disk, header included
    serializer: str


class DiskStore:
    def __init__(self, dirs: list[str], capacity: int | None = None, sync: bool = False) -> None:
        if not dirs:
            raise ValueError("the disk store needs at least one directory")
        self.dirs = dirs
        self.capacity = capacity
        self.sync = sync
        self._entries: dict[Any, DiskEntry] = {}
        self._lock = threading.Lock()
        self._written = threading.Condition(self._lock)
        self._writing: set = set()  # blocks being written now
        self._next = itertools.count()
        self.used = 0

    @property
    def free(self) -> int | None:
        """Bytes left under ``capacity`` (None: no capacity but the device's)."""
        with self._lock:
            return None if self.capacity is None else self.capacity - self.used

    def __contains__(self, block_id: Any) -> bool:
        with self._lock:
            return block_id in self._entries

    def entry(self, block_id: Any) -> DiskEntry | None:
        with self._lock:
            return self._entries.get(block_id)

    def items(self) -> list[tuple[Any, DiskEntry]]:
        with self._lock:
            return list(self._entries.items())

    def put(self, block_id: Any, frames: list, payload_size: int, serializer: str) -> DiskEntry:
        """Writes the frames as one block file; returns its entry. Raises DiskFull."""
        name = serializer.encode()
        total = _HEAD.size + len(name) + payload_size
        with self._lock:
            while block_id in self._writing:  # another thread writes this block: use its file
                self._written.wait()
            if block_id in self._entries:
                return self._entries[block_id]
            if self.capacity is not None and self.used + total > self.capacity:
                raise DiskFull(errno.ENOSPC, f"cache capacity {self.capacity} bytes reached "
                                             f"({self.used} used, block needs {total})")
            self.used += total  # reserve before writing, so concurrent puts cannot overshoot
            self._writing.add(block_id)
            d = self.dirs[next(self._next) % len(self.dirs)]
        try:
            return self._write(block_id, frames, payload_size, name, total, d)
        finally:
            with self._lock:
                self._writing.discard(block_id)
                self._written.notify_all()

    def _write(self, block_id: Any, frames: list, payload_size: int, name: bytes, total: int, d: str) -> DiskEntry:
        path = os.path.join(d, f"{block_id}.blk")
        tmp = f"{path}.{threading.get_ident()}.tmp"
        digest = xxhash.xxh3_64(name)  # the name too: a flipped name byte must not pass as another serializer
        for f in frames:
            digest.update(f)
        crc = digest.intdigest()
        try:
            with open(tmp, "wb") as fh:
                fh.write(_HEAD.pack(_MAGIC, crc, payload_size, len(name)) + name)
                for f in frames:
                    fh.write(f)
                if self.sync:
                    fh.flush()
                    os.fsync(fh.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            with self._lock:
                self.used -= total
            try:
                os.remove(tmp)
            except OSError:
                pass
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFull(exc.errno, f"no space left for block {block_id} in {d}") from exc
            raise
        entry = DiskEntry(path, total, name.decode())
        with self._lock:
            self._entries[block_id] = entry
        return entry

    def get(self, block_id: Any) -> tuple[memoryview, str]:
        """The verified payload of a block and its serializer's name."""
        entry = self.entry(block_id)
        if entry is None:
            raise BlockUnavailable(f"block {block_id} is not on disk")
        return self.read_entry(entry)

    @classmethod
    def read_entry(cls, entry: DiskEntry) -> tuple[memoryview, str]:
        """The verified payload of the block file ``entry`` describes, and its serializer's
        name: for this store's blocks, and for another executor's on this machine (whose
        file may have gone or changed since: BlockUnavailable then)."""
        try:
            # Large blocks are mapped, not read: a read() into a fresh buffer pays for
            # zero-filling new pages and then copying (measured 0.8 GB/s for a K-means
            # iteration's 600 MB here); a map of the page cache costs neither, and pickle5
            # loads its out-of-band buffers as views of it. The map is pyarrow's, whose
            # descriptor is closed at once; it lives as long as the values viewing it, and
            # stays valid after the file is removed (unpersist) or replaced.
            if entry.size >= _MAP_ABOVE:
                return cls._get_mapped(entry)
            with open(entry.path, "rb") as fh:
                # The size written is checked before the header is trusted: a corrupt
                # length field would otherwise allocate up to 2**64 bytes (MemoryError).
                actual = os.fstat(fh.fileno()).st_size
                if actual != entry.size:
                    raise BlockUnavailable(f"block file {entry.path} has {actual} bytes, "
                                           f"{entry.size} were written")
                head = fh.read(_HEAD.size)
                if len(head) < _HEAD.size:
                    raise BlockUnavailable(f"block file {entry.path} is truncated")
                magic, crc, length, name_len = _HEAD.unpack(head)
                if magic != _MAGIC or _HEAD.size + name_len + length != entry.size:
                    raise BlockUnavailable(f"block file {entry.path} has a bad header")
                raw_name = fh.read(name_len)
                name = raw_name.decode(errors="replace")
                payload = bytearray(length)
                got = fh.readinto(payload)
        except FileNotFoundError:
            raise BlockUnavailable(f"block file {entry.path} is missing") from None
        except OSError as exc:
            raise BlockUnavailable(f"block file {entry.path} cannot be read: {exc}") from None
        if got != length or _digest(raw_name, payload) != crc:
            raise BlockUnavailable(f"block file {entry.path} fails its checksum")
        return memoryview(payload), name

    @staticmethod
    def _get_mapped(entry: DiskEntry) -> tuple[memoryview, str]:
        actual = os.path.getsize(entry.path)  # checked first: touching a page past EOF is SIGBUS
        if actual != entry.size:
            raise BlockUnavailable(f"block file {entry.path} has {actual} bytes, {entry.size} were written")
        f = pa.memory_map(entry.path, "r")
        try:
            buf = f.read_buffer()
        finally:
            f.close()
        view = memoryview(buf)
        magic, crc, length, name_len = _HEAD.unpack_from(view, 0)
        if magic != _MAGIC or _HEAD.size + name_len + length != entry.size:
            raise BlockUnavailable(f"block file {entry.path} has a bad header")
        raw_name = bytes(view[_HEAD.size : _HEAD.size + name_len])
        payload = view[_HEAD.size + name_len :]
        if _digest(raw_name, payload) != crc:
            raise BlockUnavailable(f"block file {entry.path} fails its checksum")
        return payload, raw_name.decode(errors="replace")

    def remove(self, block_id: Any) -> DiskEntry | None:
        with self._lock:
            entry = self._entries.pop(block_id, None)
            if entry is not None:
                self.used -= entry.size
        if entry is not None:
            try:
                os.remove(entry.path)
            except FileNotFoundError:
                pass
        return entry
