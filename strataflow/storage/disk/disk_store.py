"""The disk store: one file per block under the cache directories (never the shuffle
directories), used round-robin.

A block file is written to a temporary name unique to its writer and renamed into place,
so a crash never leaves a half-written block under a block's name; it is mode 0600
whatever the umask (``private_file.py``). Its size must be the one written: a short, long,
missing or corrupt file raises :class:`BlockUnavailable`, and the block manager recomputes
the partition from lineage. A full device (ENOSPC) or the store's own ``capacity`` raises
:class:`DiskFull`; the caller then does without caching the block.

Authenticated, then checksummed. A block's payload is a pickle for the ``pickle`` and
``pickle5`` serializers, and unpickling runs code: an unkeyed hash would let anyone who
can write a file of the right size with a valid hash where the store looks run code in the
job. So the bytes that ``pickle`` will parse -- the payload's *authenticated prefix*, as
long as its serializer says (``Serializer.unpickled_prefix``: all of an in-band pickle,
the header and stream of a pickle5 payload, none of an Arrow one) -- carry a keyed
BLAKE2b tag (``frame_auth.py``) made with the application's secret key, together with the
header, the serializer's name and the file's name (a block's file cannot pass for
another's). The rest of the payload, raw numeric buffers that are never unpickled, keeps
the fast 64-bit XXH3 (xxhash: about 6 GB/s here, against 2-3 GB/s for zlib's CRC32 and
about 1 GB/s for BLAKE2b; it runs on every disk hit), whose value the tag covers too. Both
are checked on every read, before the payload is handed to a serializer, and a read also
checks that the serializer would unpickle exactly the prefix the writer authenticated.

File layout (little-endian)::

    magic "SFBLK03\\0" | payload length Q | authenticated length Q | XXH3-64 of the payload
    after it Q | serializer name length B | BLAKE2b-256 tag 32s | serializer name | payload

One store is one tier's worth of files (see ``tiers.py``, which stacks several). Two puts
of the same block never write at once: the second waits for the first and returns its
entry (a synchronous eviction and the asynchronous writer may both try to write a block).
A store built without a key makes its own: it reads back what it wrote; a reader given only
an entry (another executor's file) finds the application's key by the file's path
(``app_keys.py``).
"""

from __future__ import annotations

import errno
import itertools
import os
import struct
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import pyarrow as pa
import xxhash

from strataflow.storage.blocks import app_keys
from strataflow.storage.blocks.frame_auth import TAG_BYTES, FrameAuth, same
from strataflow.common.private_file import atomic_write
from strataflow.storage.blocks.serde import unpickled_prefix
from strataflow.storage.tier_store import BlockUnavailable, Decode, DiskFull

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.storage.disk.tier_spec import TierSpec

__all__ = ["DiskStore", "DiskEntry", "DiskFull", "BlockUnavailable", "file_size"]

_MAGIC = b"SFBLK03\0"
_MAP_ABOVE = 1 << 20  # blocks of this size and more are mapped instead of read
#: magic, payload length, authenticated length, xxh3-64 of the payload after it, name length
_FIELDS = struct.Struct("<8sQQQB")
_HEAD = struct.Struct(f"<8sQQQB{TAG_BYTES}s")  # the fields, then their tag
_DOMAIN = b"sf-block-v3"
_NAME_LEN = struct.Struct("<H")


def _split(views: Sequence[memoryview], at: int) -> tuple[list[memoryview], list[memoryview]]:
    """The frames' bytes before offset ``at`` and from it, as views (no copy)."""
    head: list[memoryview] = []
    rest: list[memoryview] = []
    for v in views:
        if at <= 0:
            rest.append(v)
        elif v.nbytes <= at:
            head.append(v)
        else:
            head.append(v[:at])
            rest.append(v[at:])
        at -= v.nbytes
    return head, rest


def _xxh3(views: Sequence[memoryview]) -> int:
    h = xxhash.xxh3_64()
    for v in views:
        h.update(v)
    return h.intdigest()


def _tag(auth: FrameAuth, fields: bytes, path: str, name: bytes, prefix: Sequence[memoryview]) -> bytes:
    """The tag of a block file: its header fields, its file name, its serializer's name and
    the payload's authenticated prefix (lengths first: the concatenation is unambiguous)."""
    file_name = os.path.basename(path).encode()
    h = auth.hasher(_DOMAIN)
    h.update(fields)
    h.update(_NAME_LEN.pack(len(file_name)))
    h.update(file_name)
    h.update(name)
    for v in prefix:
        h.update(v)
    return h.digest()


def file_size(payload_size: int, serializer: str) -> int:
    """Bytes a block file takes (header and serializer name included): what capacity counts."""
    return _HEAD.size + len(serializer.encode()) + payload_size


@dataclass(frozen=True)
class DiskEntry:
    path: str
    size: int  # bytes on disk, header included
    serializer: str


class DiskStore:
    """The ``disk`` tier kind (:class:`~strataflow.storage.tier_store.StackedStore`)."""

    #: no options beyond the common tier keys
    spec_options: dict[str, Callable[[Any, str], Any]] = {}
    entry_type = DiskEntry

    def __init__(self, dirs: list[str], capacity: int | None = None, sync: bool = False,
                 key: bytes | None = None) -> None:
        """``key``: the application's secret (``frame_auth.py``); without one the store
        makes its own, so authentication is never off."""
        if not dirs:
            raise ValueError("the disk store needs at least one directory")
        self.dirs = dirs
        self.capacity = capacity
        self.sync = sync
        self._auth = FrameAuth(key)
        self._entries: dict[Any, DiskEntry] = {}
        self._lock = threading.Lock()
        self._written = threading.Condition(self._lock)
        self._writing: set = set()  # blocks being written now
        self._next = itertools.count()
        self.used = 0

    @classmethod
    def from_spec(cls, spec: "TierSpec", dirs: Sequence[str], capacity: int | None,
                  key: bytes | None) -> "DiskStore":
        """One executor's store of the tier ``spec`` (see ``StackedStore.from_spec``)."""
        return cls(list(dirs), capacity, key=key)

    def footprint(self, payload_size: int, serializer: str) -> int:
        """Bytes the block's file would take (header included): what capacity counts."""
        return file_size(payload_size, serializer)

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
        views = [memoryview(f).cast("B") for f in frames]
        auth_len = unpickled_prefix(name.decode(), views)
        prefix, rest = _split(views, auth_len)
        fields = _FIELDS.pack(_MAGIC, payload_size, auth_len, _xxh3(rest), len(name))
        tag = _tag(self._auth, fields, path, name, prefix)
        try:
            with atomic_write(path, sync=self.sync) as fh:
                fh.write(fields + tag + name)
                for v in views:
                    fh.write(v)
        except OSError as exc:
            with self._lock:
                self.used -= total
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
        return self.read_entry(entry, self._auth)

    @classmethod
    def read_entry(cls, entry: DiskEntry, auth: FrameAuth | None = None) -> tuple[memoryview, str]:
        """The verified payload of the block file ``entry`` describes, and its serializer's
        name: for this store's blocks, and for another executor's on this machine (whose
        file may have gone or changed since: BlockUnavailable then). Without ``auth`` the
        key is the application's that registered the file's directory (``app_keys.py``);
        a file under no such directory is refused."""
        auth = auth or app_keys.auth_for(entry.path)
        if auth is None:
            raise BlockUnavailable(f"block file {entry.path} is not under a directory of this application: "
                                   f"no key to authenticate it")
        try:
            # Large blocks are mapped, not read: a read() into a fresh buffer pays for
            # zero-filling new pages and then copying (measured 0.8 GB/s for a K-means
            # iteration's 600 MB here); a map of the page cache costs neither, and pickle5
            # loads its out-of-band buffers as views of it. The map is pyarrow's, whose
            # descriptor is closed at once; it lives as long as the values viewing it, and
            # stays valid after the file is removed (unpersist) or replaced. (The bytes
            # authenticated are the ones unpickled: the map is of the inode opened, which
            # a rename over the file does not change, and only its owner may write it.)
            if entry.size >= _MAP_ABOVE:
                head, raw_name, payload = cls._read_mapped(entry)
            else:
                head, raw_name, payload = cls._read(entry)
        except FileNotFoundError:
            raise BlockUnavailable(f"block file {entry.path} is missing") from None
        except OSError as exc:
            raise BlockUnavailable(f"block file {entry.path} cannot be read: {exc}") from None
        return cls._verified(entry, auth, head, raw_name, payload)

    @classmethod
    def load_entry(cls, entry: DiskEntry, decode: Decode) -> tuple[Any, int]:
        """``(value, bytes read)`` of another executor's block file (a peer read)."""
        payload, ser_name = cls.read_entry(entry)
        return decode(payload, ser_name), payload.nbytes

    @staticmethod
    def _read(entry: DiskEntry) -> tuple[bytes, bytes, memoryview]:
        """The header, serializer name and payload of a small block file, read."""
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
            _check_sizes(entry, head)
            _, length, _, _, name_len, _ = _HEAD.unpack(head)
            raw_name = fh.read(name_len)
            payload = bytearray(length)
            got = fh.readinto(payload)
        if got != length:
            raise BlockUnavailable(f"block file {entry.path} is truncated")
        return head, raw_name, memoryview(payload)

    @staticmethod
    def _read_mapped(entry: DiskEntry) -> tuple[bytes, bytes, memoryview]:
        """The header, serializer name and payload of a large block file, mapped."""
        actual = os.path.getsize(entry.path)  # checked first: touching a page past EOF is SIGBUS
        if actual != entry.size:
            raise BlockUnavailable(f"block file {entry.path} has {actual} bytes, {entry.size} were written")
        f = pa.memory_map(entry.path, "r")
        try:
            buf = f.read_buffer()
        finally:
            f.close()
        view = memoryview(buf)
        head = bytes(view[: _HEAD.size])
        _check_sizes(entry, head)
        name_len = _HEAD.unpack(head)[4]
        raw_name = bytes(view[_HEAD.size : _HEAD.size + name_len])
        return head, raw_name, view[_HEAD.size + name_len :]

    @staticmethod
    def _verified(entry: DiskEntry, auth: FrameAuth, head: bytes, raw_name: bytes,
                  payload: memoryview) -> tuple[memoryview, str]:
        """The payload and serializer name once the tag (header, name, authenticated
        prefix) and the checksum (the rest) both hold; BlockUnavailable otherwise. A
        file that fails the tag is treated exactly as a corrupt one: nothing of it is
        unpickled, and the block manager recomputes the partition from lineage."""
        _, _, auth_len, digest, _, tag = _HEAD.unpack(head)
        prefix, rest = payload[:auth_len], payload[auth_len:]
        if not same(tag, _tag(auth, head[: _FIELDS.size], entry.path, raw_name, [prefix])):
            raise BlockUnavailable(f"block file {entry.path} fails authentication: not written by this "
                                   f"application, or corrupt")
        name = raw_name.decode(errors="replace")
        if unpickled_prefix(name, [payload]) != auth_len:  # a writer's bug, never a forgery (tagged)
            raise BlockUnavailable(f"block file {entry.path}: its serializer {name!r} would unpickle other "
                                   f"bytes than the {auth_len} authenticated")
        if xxhash.xxh3_64_intdigest(rest) != digest:
            raise BlockUnavailable(f"block file {entry.path} fails its checksum")
        return payload, name

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


def _check_sizes(entry: DiskEntry, head: bytes) -> None:
    """The header's magic and lengths agree with the file's size (before any is trusted)."""
    magic, length, auth_len, _, name_len, _ = _HEAD.unpack(head)
    if magic != _MAGIC or _HEAD.size + name_len + length != entry.size or auth_len > length:
        raise BlockUnavailable(f"block file {entry.path} has a bad header")
