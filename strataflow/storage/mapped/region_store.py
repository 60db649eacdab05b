"""The region store: TeraCache-like regions of memory-mapped segment files, holding blocks in
the zero-copy layout (:mod:`.layout`), for the levels DISK_MMAP and MEMORY_AND_DISK_MMAP.

Why regions. One file (and one map) per block would hit the kernel's limit of about 65,530
memory maps per process with a job of 100,000 blocks. Instead each dataset appends its
blocks to a few large segment files of its own (``segment_bytes``, 256 MiB by default: a
100 GB cache is 400 maps, and a segment is small enough that a freed one returns its space
soon). A block larger than a segment gets a segment of its own. ``unpersist`` frees a whole
region: ``remove_dataset`` deletes the dataset's files at once.

Readahead. ``get`` of a cold extent has it and the next splits of its dataset read into the
page cache in large requests on a background thread, and waits for its own extent only
(:mod:`.page_cache`, which also holds the why and the figures). A warm read costs one
``mincore`` call. ``STRATAFLOW_READAHEAD=off`` (or ``readahead=False``) turns it off.

Segments (their file I/O and its reasons: :mod:`.segment_file`). A new segment file is
sized to its capacity at once (sparse), so that the one map made while it is still being
filled also covers the blocks appended later; when the next block does not fit, the segment
is sealed (truncated to the bytes written). It is mapped once, lazily at its first read,
read-only and shared by every read of it, with no descriptor left open. An extent starts
64-byte aligned, page-aligned when it is a page or more, so the data inside it is aligned in
memory too. Writes go to an offset reserved under the lock, so concurrent puts write in
parallel. The index (block -> extent) lives in memory only: the files are useless without
it, so ``close()`` deletes them.

Checksums: one XXH3-64 per extent, verified on the first read of that extent in this
process, and again at the first read after its segment's file changed behind the store. Every
``get`` stats the segment (first of all so that no page past the end is touched: SIGBUS) and
compares its size, mtime, ctime and inode with those recorded after the store's own last
change to the file (its create, each write, the seal; under the lock). Unchanged: a verified
extent is served with no hashing (a warm read costs the stat and a ``mincore``). Changed: the
segment's epoch is bumped, so each of its extents is hashed again at its next read; a
replaced file (another inode) is mapped again; the extents now past the file's end are
forgotten at once; and the segment is never appended to again (a put also stats the current
segment first, and goes to a new one if its file changed). A change seen while the store's
own writes into the segment are under way may be theirs: the read hashes its extent and
trusts nothing, and the epoch is bumped once the writes are done. Limit: a change within the
file system's timestamp granularity of the store's own last write, keeping the size and
inode, is not seen. A failed checksum, a missing segment file or a file too short for the
extent raises :class:`BlockUnavailable` (and forgets the block), and the block manager
recomputes the partition.

Authentication, for the bytes that are unpickled. An unkeyed hash guards against accidents,
not against a forger: a ``pickle`` or ``pickle5`` extent rewritten in place (after its one
verified read, or with a colliding XXH3, which is not a cryptographic hash) would run code
when unpickled. So the bytes of an extent that ``layout.decode`` unpickles or trusts to
locate them (``meta["pickled"]``: the stream, and a pickle5 extent's buffer table and
trailer; never the out-of-band buffers, nor anything of an ``ndarray`` or ``arrow``
extent) carry a keyed BLAKE2b tag (``frame_auth.py``, the application's key), kept in the
entry, and checked before EVERY decode of the extent: it costs less than the unpickling
it guards. A failed tag is treated as a failed checksum. A store built without a key
makes its own; ``read_extent`` of another executor's extent finds the application's key
by the segment's path (``app_keys.py``). Segment files are created mode 0600.

Lifetimes. ``get`` returns read-only views of the mapping (numpy raises its usual
"assignment destination is read-only" on a write: copy to modify). A view stays valid after
``remove``, ``remove_dataset`` and ``close``: the store never unmaps a segment itself, it
only drops its reference to the map's buffer, which every view references too, so the map
goes (munmap) with the last view; and on Linux an unlinked file stays readable through an
existing map. A segment's space is reclaimed when all its blocks are removed. Do not
truncate segment files behind the store's back: touching a mapped page past the end of the
file raises SIGBUS (``get`` checks the size first and forgets the blocks cut off, but held
views cannot).

Thread-safe: one lock guards the index; hashing, writing and decoding run outside it.
"""

from __future__ import annotations

import errno
import itertools
import os
import re
import secrets
import struct
import threading
import weakref
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Sequence

import pyarrow as pa
import xxhash

from strataflow.storage.blocks import app_keys
from strataflow.storage.mapped import layout
from strataflow.storage.mapped import page_cache
from strataflow.storage.mapped import segment_file
from strataflow.storage.disk.disk_store import BlockUnavailable, DiskFull
from strataflow.storage.blocks.frame_auth import FrameAuth, same
from strataflow.storage.mapped.page_cache import PAGE as _PAGE

__all__ = ["RegionStore", "RegionEntry", "DiskFull", "BlockUnavailable", "SEGMENT_BYTES"]

SEGMENT_BYTES = 256 << 20
_DOMAIN = b"sf-region-v1"
_SPANS = struct.Struct("<QQQB")  # extent length, pickled head, pickled tail, kind's length


def _round_up(n: int, align: int) -> int:
    return -(-n // align) * align


def _slice(views: Sequence[memoryview], start: int, stop: int) -> list[memoryview]:
    """Bytes ``start:stop`` of the views written back to back, as views (no copy)."""
    out = []
    pos = 0
    for v in views:
        lo, hi = max(start - pos, 0), min(stop - pos, v.nbytes)
        if lo < hi:
            out.append(v[lo:hi])
        pos += v.nbytes
    return out


def _tag(auth: FrameAuth, kind: str, length: int, spans: tuple[int, int], views: Sequence[memoryview]) -> bytes:
    """The tag of an extent's pickled bytes (its first ``head`` and last ``tail`` bytes)."""
    head, tail = spans
    name = kind.encode()
    parts = [_SPANS.pack(length, head, tail, len(name)), name]
    return auth.tag(_DOMAIN, *parts, *_slice(views, 0, head), *_slice(views, length - tail, length))


@dataclass(frozen=True)
class RegionEntry:
    segment: str  # the segment file's path
    offset: int
    length: int
    kind: str  # a layout kind: ndarray, arrow, pickle5, pickle
    meta: dict
    digest: int  # xxh3-64 of the extent
    zero_copy: bool
    #: keyed tag of the bytes that decoding unpickles (``meta["pickled"]``); empty when none is
    tag: bytes = field(default=b"", repr=False)

    @property
    def pickled(self) -> tuple[int, int]:
        """``(head, tail)``: the bytes at the extent's ends that decoding unpickles."""
        return tuple(self.meta.get("pickled", (self.length, 0)))  # type: ignore[return-value]


def _sig(st: os.stat_result) -> tuple[int, int, int, int]:
    """What a read compares to tell whether a segment file changed: size, mtime, ctime (which
    ``os.utime`` cannot set back) and inode (a file replaced under the same name)."""
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


class _Segment:
    """One segment file of one dataset; mutated only under the store's lock."""

    __slots__ = ("path", "dataset_id", "capacity", "end", "live", "pending", "buf", "dropped",
                 "sig", "epoch", "suspect")

    def __init__(self, path: str, dataset_id: Any, capacity: int) -> None:
        self.path, self.dataset_id, self.capacity = path, dataset_id, capacity
        self.end = 0  # bytes reserved so far (the next extent starts at or after it)
        self.live = 0  # extents registered and not removed
        self.pending = 0  # extents reserved and being written
        self.buf: pa.Buffer | None = None  # the whole map, once mapped
        self.dropped = False
        #: the file's ``_sig`` as of the store's own last change to it (create, write, seal);
        #: a read that stats anything else re-verifies the extent it serves
        self.sig: tuple | None = None
        #: bumped when the file changed behind the store: extents verified before are hashed again
        self.epoch = 0
        #: a change was seen while the store's own writes were under way (ambiguous): the
        #: epoch is bumped when they are done
        self.suspect = False


class RegionStore:
    def __init__(self, dirs: list[str], segment_bytes: int = SEGMENT_BYTES, capacity: int | None = None,
                 readahead: bool = True, key: bytes | None = None) -> None:
        """``key``: the application's secret (``frame_auth.py``); without one the store
        makes its own, so authentication is never off."""
        if not dirs:
            raise ValueError("the region store needs at least one directory")
        if segment_bytes < _PAGE:
            raise ValueError(f"segment_bytes must be at least a page ({_PAGE}), got {segment_bytes}")
        self.dirs = list(dirs)
        self.segment_bytes = _round_up(segment_bytes, _PAGE)
        self.capacity = capacity
        self._lock = threading.Lock()
        self._entries: dict[Any, RegionEntry] = {}
        # Blocks cut off by a truncated segment: still "here" until their next read, which
        # raises BlockUnavailable naming the cut, so that each is reported lost, not missed.
        self._cut: dict[Any, str] = {}
        self._verified: dict[Any, int] = {}  # block -> its segment's epoch when last verified
        self._segments: dict[str, _Segment] = {}
        self._by_dataset: dict[Any, list[_Segment]] = {}
        self._current: dict[Any, _Segment] = {}
        self._deferred: list[tuple[weakref.ref, int]] = []  # maps dropped while views held them
        self._names = itertools.count()
        self._token = secrets.token_hex(3)  # two stores sharing a directory never share a name
        self._used = 0
        self._closed = False
        self._stats = {"checksum_s": 0.0, "checksum_bytes": 0, "auth_s": 0.0, "auth_bytes": 0, "decode_s": 0.0}
        self._auth = FrameAuth(key)
        self._ahead = page_cache.ReadAhead(readahead)
        self.readahead = self._ahead.enabled

    # -- queries ---------------------------------------------------------------------------------
    def __contains__(self, block_id: Any) -> bool:
        with self._lock:
            return block_id in self._entries or block_id in self._cut

    contains = __contains__

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def entry(self, block_id: Any) -> RegionEntry | None:
        with self._lock:
            return self._entries.get(block_id)

    def entries(self) -> list[tuple[Any, RegionEntry]]:
        with self._lock:
            return list(self._entries.items())

    def segments(self) -> list[str]:
        """The paths of the live segment files."""
        with self._lock:
            return list(self._segments)

    def stats(self) -> dict:
        """Seconds spent in checksums (first reads, reads after a change), in authenticating pickled bytes (every
        read of a pickled extent: ``auth_s``, ``auth_bytes``) and in decoding, apart:
        ``get`` does them all, and only the decoding is the deserialization the block
        manager reports. Sums over all threads: one call's own decode time is
        :meth:`get_timed`'s. ``readahead_bytes``: bytes read ahead (:meth:`wait_readahead`
        waits for the reads under way)."""
        with self._lock:
            return {**self._stats, "readahead_bytes": self._ahead.bytes_read}

    def wait_readahead(self, timeout: float | None = None) -> bool:
        """Blocks until no readahead is queued or running; False if ``timeout`` passed first."""
        return self._ahead.wait_idle(timeout)

    @property
    def bytes_on_disk(self) -> int:
        """Bytes of the live segments, alignment padding and removed extents included (a
        segment's space comes back only when all its blocks are gone)."""
        with self._lock:
            return self._used

    @property
    def mapped_bytes(self) -> int:
        """Bytes of segment data reachable through live maps, the store's and those that
        only readers' views keep alive. (The map of a segment still being filled reserves
        its whole capacity of address space, which costs no memory.)"""
        with self._lock:
            self._deferred = [(r, n) for r, n in self._deferred if r() is not None]
            held = sum(min(s.end, s.buf.size) for s in self._segments.values() if s.buf is not None)
            return held + sum(n for _, n in self._deferred)

    # -- put -------------------------------------------------------------------------------------
    def put(self, block_id: Any, value: Any) -> RegionEntry:
        """Appends ``value`` in the zero-copy layout to its dataset's region. Raises DiskFull
        (device full or ``capacity`` reached) and SerializationError (value pickle refuses).
        If the dataset is removed while the block is written, the entry returned is not
        registered (a later ``get`` raises BlockUnavailable)."""
        with self._lock:
            if block_id in self._entries:
                return self._entries[block_id]
        kind, frames, meta = layout.encode(value)
        views = [memoryview(f).cast("B") for f in frames]
        length = sum(v.nbytes for v in views)
        h = xxhash.xxh3_64()
        for v in views:
            h.update(v)
        spans = tuple(meta["pickled"])
        tag = _tag(self._auth, kind, length, spans, views) if spans != (0, 0) else b""
        with self._lock:
            if self._closed:
                raise ValueError("the region store is closed")
            if block_id in self._entries:
                return self._entries[block_id]
            seg, offset, before = self._reserve(block_id.dataset_id, length, meta["align"])
            seg.pending += 1
        entry = RegionEntry(seg.path, offset, length, kind, meta, h.intdigest(), meta["zero_copy"], tag)
        try:
            segment_file.write(seg.path, views, offset)
        except OSError as exc:
            with self._lock:
                seg.pending -= 1
                if seg.dropped:  # the region was removed under the write: nothing to cache
                    return entry
                self._after_own_change(seg)
                if seg.end == offset + length:  # the last reservation: undo it
                    self._used -= seg.end - before
                    seg.end = before
                self._maybe_reclaim(seg)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFull(exc.errno, f"no space left for block {block_id} in {seg.path}") from exc
            raise
        with self._lock:
            seg.pending -= 1
            if seg.dropped:
                return entry
            size = self._after_own_change(seg)
            if seg.dropped:
                return entry
            if size < offset + length:  # cut off behind the store's back already: not cached
                self._maybe_reclaim(seg)
                return entry
            if block_id in self._entries:  # a concurrent put of the same block won
                self._maybe_reclaim(seg)
                return self._entries[block_id]
            self._entries[block_id] = entry
            self._cut.pop(block_id, None)
            seg.live += 1
        return entry

    def _reserve(self, dataset_id: Any, length: int, align: int) -> tuple[_Segment, int, int]:
        """A segment and an offset for an extent (under the lock); creates a segment if needed."""
        seg = self._current.get(dataset_id)
        if seg is not None and seg.pending == 0:
            # Never append past a map that no longer matches the file: a current segment
            # whose file changed behind the store is retired (by _changed) for a new one.
            try:
                st = os.stat(seg.path)
            except OSError:
                st = None
            if st is None or _sig(st) != seg.sig:
                if st is not None:
                    self._changed(seg, st)
                if self._current.get(dataset_id) is seg:
                    del self._current[dataset_id]
                seg = None
        if length > self.segment_bytes:
            seg, offset = None, 0
        elif seg is not None and _round_up(seg.end, align) + length <= seg.capacity:
            offset = _round_up(seg.end, align)
        else:
            seg, offset = None, 0
        need = length if seg is None else offset + length - seg.end
        if self.capacity is not None and self._used + need > self.capacity:
            raise DiskFull(errno.ENOSPC, f"region capacity {self.capacity} bytes reached "
                                         f"({self._used} used, block needs {need})")
        if seg is None:
            if length <= self.segment_bytes and dataset_id in self._current:
                old = self._current.pop(dataset_id)
                segment_file.seal(old.path, old.end)
                self._after_own_change(old)
            seg = self._new_segment(dataset_id, length)
        before = seg.end
        seg.end = offset + length
        self._used += seg.end - before
        return seg, offset, before

    # -- segment files changed behind the store ---------------------------------------------------
    def _after_own_change(self, seg: _Segment) -> int:
        """Under the lock, after the store's own write into or seal of ``seg``: the file's
        stat now is the one reads compare with (a truncation seen here is handled first).
        Returns the file's size (-1: gone)."""
        try:
            st = os.stat(seg.path)
        except OSError:
            return -1
        if st.st_size < self._expected_size(seg) or (seg.sig is not None and st.st_ino != seg.sig[3]):
            self._changed(seg, st)
        seg.sig = _sig(st)
        if seg.pending == 0 and seg.suspect:
            seg.epoch += 1
            seg.suspect = False
        return st.st_size

    def _expected_size(self, seg: _Segment) -> int:
        """The size the store left the file at: its capacity while filled, then its end."""
        return seg.capacity if self._current.get(seg.dataset_id) is seg else seg.end

    def _changed(self, seg: _Segment, st: os.stat_result) -> None:
        """Under the lock: ``seg``'s file is not as the store left it (``st``: its stat now).
        The extents now past its end are forgotten (their blocks raise BlockUnavailable and
        are recomputed), the segment is never appended to again, a replaced file's map is
        dropped (mapped again at the next read), and every extent of it is hashed again at
        its next read (the epoch). While the store's own writes into it are under way the
        change may be theirs: then the epoch is bumped once they are done."""
        size = st.st_size
        truncated = size < self._expected_size(seg)
        if size < seg.end:
            for bid, e in list(self._entries.items()):
                if e.segment == seg.path and e.offset + e.length > size:
                    self._remove_locked(bid)
                    self._cut[bid] = (f"its extent was cut off: segment {seg.path} was truncated to {size} bytes "
                                      f"(the extent ends at {e.offset + e.length})")
            if seg.dropped:  # none of its blocks left: deleted
                return
        if (truncated or seg.pending == 0) and self._current.get(seg.dataset_id) is seg:
            del self._current[seg.dataset_id]  # sealed for good: never appended to again
        if seg.buf is not None and seg.sig is not None and st.st_ino != seg.sig[3]:
            self._unmap(seg)  # another file under the same name
        if seg.pending == 0:
            seg.sig = _sig(st)
            seg.epoch += 1
        else:
            seg.suspect = True

    def _unmap(self, seg: _Segment) -> None:
        """Drops the store's reference to ``seg``'s map (views keep it alive, counted in
        ``mapped_bytes`` while they do)."""
        buf, seg.buf = seg.buf, None
        if buf is not None:
            ref = weakref.ref(buf)
            nbytes = min(seg.end, buf.size)
            del buf
            if ref() is not None:
                self._deferred.append((ref, nbytes))

    def _new_segment(self, dataset_id: Any, length: int) -> _Segment:
        own = length > self.segment_bytes
        size = length if own else self.segment_bytes
        tag = re.sub(r"[^\w.-]", "_", str(dataset_id))
        while True:
            n = next(self._names)
            path = os.path.join(self.dirs[n % len(self.dirs)], f"region-{tag}-{self._token}-{n}.seg")
            try:
                segment_file.create(path, size)
                break
            except FileExistsError:
                continue
        seg = _Segment(path, dataset_id, size)
        try:
            seg.sig = _sig(os.stat(path))
        except OSError:
            pass  # gone already: its first read finds so
        self._segments[path] = seg
        self._by_dataset.setdefault(dataset_id, []).append(seg)
        if not own:
            self._current[dataset_id] = seg
        return seg

    # -- get -------------------------------------------------------------------------------------
    def get(self, block_id: Any) -> Any:
        """The block's value, mapped: arrays are read-only views of the segment's map. The
        extent's checksum is verified on its first read in this process, and again after its
        segment's file changed (module docstring). Raises
        BlockUnavailable (and forgets the block) if the extent is missing, short or corrupt."""
        return self.get_timed(block_id)[0]

    def get_timed(self, block_id: Any) -> tuple[Any, float]:
        """``(value, seconds)``: :meth:`get`, and the seconds this call spent decoding (the
        deserialization the block manager reports). The store-wide ``decode_s`` sums every
        thread's decodes: a difference of it around one call would count the others' too."""
        with self._lock:
            cut = self._cut.pop(block_id, None)
        if cut is not None:
            raise BlockUnavailable(f"block {block_id}: {cut}")
        try:
            entry, view, verify, ahead, epoch = self._view(block_id)
        except BlockUnavailable:
            with self._lock:  # this read found its own extent cut: reported by this raise
                self._cut.pop(block_id, None)
            raise
        if ahead is not None:
            try:
                ahead.result()  # its pages, read in large requests, instead of page by page
            except (CancelledError, OSError):
                pass  # the store closed, or the read failed: the view faults its pages itself
        # The tag first: a forged pickle reports as such, whatever else changed in the file.
        self._authenticate(block_id, entry, view)
        if verify:
            self._verify(block_id, entry, view, epoch)
        t0 = perf_counter()
        try:
            value = layout.decode(entry.kind, view, entry.meta)
        except Exception as exc:  # a corruption after the first (verified) read
            with self._lock:
                if self._entries.get(block_id) is entry:
                    self._remove_locked(block_id)
            raise BlockUnavailable(f"block {block_id} cannot be decoded: {exc}") from exc
        dt = perf_counter() - t0
        with self._lock:
            self._stats["decode_s"] += dt
        return value, dt

    @staticmethod
    def read_extent(entry: RegionEntry, auth: FrameAuth | None = None) -> Any:
        """The value of an extent of another store's segment (another executor's, on this
        machine), mapped zero-copy like ``get``. Its checksum is verified at every such
        read: this store does not know when the owner removed, reclaimed or rewrote the
        segment. Raises BlockUnavailable if it is gone, short, corrupt, unauthenticated or
        undecodable. Without ``auth`` the key is the application's that registered the
        segment's directory (``app_keys.py``)."""
        auth = auth or app_keys.auth_for(entry.segment)
        if auth is None:
            raise BlockUnavailable(f"segment {entry.segment} is not under a directory of this application: "
                                   f"no key to authenticate it")
        try:
            size = os.stat(entry.segment).st_size  # first: touching a page past EOF is SIGBUS
            if size < entry.offset + entry.length:
                raise BlockUnavailable(f"segment {entry.segment} has {size} bytes, the block ends at "
                                       f"{entry.offset + entry.length}")
            buf = segment_file.map_file(entry.segment)
        except (OSError, pa.ArrowException) as exc:
            raise BlockUnavailable(f"segment {entry.segment} cannot be read: {exc}") from None
        view = memoryview(buf)[entry.offset : entry.offset + entry.length]
        if xxhash.xxh3_64_intdigest(view) != entry.digest:
            raise BlockUnavailable(f"an extent of {entry.segment} fails its checksum")
        if not _authentic(auth, entry, view):
            raise BlockUnavailable(f"an extent of {entry.segment} fails authentication: not written by this "
                                   f"application, or corrupt")
        try:
            return layout.decode(entry.kind, view, entry.meta)
        except Exception as exc:  # noqa: BLE001 - changed under us after the check
            raise BlockUnavailable(f"an extent of {entry.segment} cannot be decoded: {exc}") from exc

    def _view(self, block_id: Any) -> tuple[RegionEntry, memoryview, bool, Future | None, int | None]:
        """The entry, a view of its extent in the segment's map (mapped now if need be),
        whether its checksum is still to verify, its readahead to wait for, and the epoch
        of the segment a verification holds for (None: for this read only)."""
        with self._lock:
            entry = self._entries.get(block_id)
            if entry is None:
                raise BlockUnavailable(f"block {block_id} is not in the region store")
            seg = self._segments[entry.segment]
            end = entry.offset + entry.length
            try:
                st = os.stat(seg.path)  # first: touching a page past EOF is SIGBUS
                size = st.st_size
                if _sig(st) != seg.sig:  # changed behind the store (or by its writes under way)
                    self._changed(seg, st)
                if size < end:
                    raise BlockUnavailable(f"segment {seg.path} has {size} bytes, block {block_id} "
                                           f"ends at {end}")
                if seg.buf is None or seg.buf.size < end:  # a map of a shorter file: map it again
                    self._unmap(seg)
                    seg.buf = segment_file.map_file(seg.path)
                    if seg.buf.size < end:
                        raise BlockUnavailable(f"segment {seg.path} is mapped with {seg.buf.size} bytes, "
                                               f"block {block_id} ends at {end}")
            except (BlockUnavailable, OSError, pa.ArrowException) as exc:
                self._remove_locked(block_id)
                if isinstance(exc, BlockUnavailable):
                    raise
                raise BlockUnavailable(f"segment {seg.path} of block {block_id} cannot be read: {exc}") from None
            # The view references the map's buffer: the map lives as long as the view does.
            view = memoryview(seg.buf)[entry.offset : end]
            # The epoch the extent is verified for; None while the file's change may be the
            # store's own writes under way: then it is hashed and nothing is trusted after.
            epoch = seg.epoch if _sig(st) == seg.sig else None
            verify = epoch is None or self._verified.get(block_id) != epoch
            ahead = None if verify or self._closed else self._read_ahead(block_id)
        return entry, view, verify, ahead, epoch

    def _verify(self, block_id: Any, entry: RegionEntry, view: memoryview, epoch: int | None) -> None:
        """The checksum, at the first read and after the segment's file changed; a mismatch
        forgets the block and raises BlockUnavailable. A match is trusted while the
        segment's epoch stays ``epoch`` (None: trusted for this read only)."""
        t0 = perf_counter()
        ok = xxhash.xxh3_64_intdigest(view) == entry.digest
        dt = perf_counter() - t0
        with self._lock:
            self._stats["checksum_s"] += dt
            self._stats["checksum_bytes"] += entry.length
            if self._entries.get(block_id) is entry:
                if ok:
                    if epoch is not None:
                        self._verified[block_id] = epoch
                else:
                    self._remove_locked(block_id)
        if not ok:
            raise BlockUnavailable(f"block {block_id} fails its checksum in {entry.segment}")

    def _authenticate(self, block_id: Any, entry: RegionEntry, view: memoryview) -> None:
        """Before every decode of a pickled extent: its tag; a mismatch forgets the block
        and raises BlockUnavailable (nothing of it is unpickled)."""
        head, tail = entry.pickled
        if head == tail == 0:
            return
        t0 = perf_counter()
        ok = _authentic(self._auth, entry, view)
        dt = perf_counter() - t0
        with self._lock:
            self._stats["auth_s"] += dt
            self._stats["auth_bytes"] += head + tail
            if not ok and self._entries.get(block_id) is entry:
                self._remove_locked(block_id)
        if not ok:
            raise BlockUnavailable(f"block {block_id} fails authentication in {entry.segment}: not written by "
                                   f"this application, or corrupt")

    def _read_ahead(self, block_id: Any) -> Future | None:
        """Under the lock: queues the block and the next ``READAHEAD_BLOCKS`` splits of its
        dataset (the scheduler hands splits out in order) for reading ahead, each once, in
        order, unless resident; returns the block's own read (None if it needs none)."""
        split = getattr(block_id, "split", None)
        ids = [block_id] if split is None else [
            type(block_id)(block_id.dataset_id, split + i) for i in range(page_cache.READAHEAD_BLOCKS + 1)]
        own = None
        for bid in ids:
            entry = self._entries.get(bid)
            seg = None if entry is None else self._segments[entry.segment]
            if seg is not None and seg.buf is not None:
                fut = self._ahead.request(bid, seg.path, seg.buf, entry.offset, entry.length)
                own = fut if bid == block_id else own
        return own

    # -- page cache ------------------------------------------------------------------------------
    def release_pages(self, block_id: Any) -> int:
        """Drops the extent's pages from this process's resident set and from the page cache
        (:func:`.page_cache.release`). Views stay valid: they fault the pages back in from
        the file. Returns the bytes advised (the extent rounded out to pages; pages shared
        with neighbouring extents are released too); 0 for a block not in the store."""
        with self._lock:
            entry = self._entries.get(block_id)
            if entry is None:
                return 0
            seg = self._segments[entry.segment]
            buf, path = seg.buf, seg.path  # our reference keeps the map alive outside the lock
        return page_cache.release(buf, path, entry.offset, entry.length)

    # -- removal ---------------------------------------------------------------------------------
    def remove(self, block_id: Any) -> RegionEntry | None:
        """Forgets a block; its segment is deleted when its last block goes."""
        with self._lock:
            self._cut.pop(block_id, None)
            return self._remove_locked(block_id)

    def remove_dataset(self, dataset_id: Any) -> int:
        """Deletes the dataset's region (all its segment files) at once; returns how many
        blocks it held. Views handed out before stay valid."""
        with self._lock:
            for b in [b for b in self._cut if b.dataset_id == dataset_id]:
                del self._cut[b]
            gone = [b for b in self._entries if b.dataset_id == dataset_id]
            for b in gone:
                del self._entries[b]
                self._verified.pop(b, None)
            for seg in list(self._by_dataset.get(dataset_id, ())):
                self._drop_segment(seg)
            return len(gone)

    def close(self) -> None:
        """Forgets every block and deletes every segment file (the index dies with the store,
        so the files could not be read again). Views handed out before stay valid."""
        with self._lock:
            self._closed = True
        self._ahead.close()  # queued reads cancelled, the thread joined
        with self._lock:
            self._entries.clear()
            self._cut.clear()
            self._verified.clear()
            for seg in list(self._segments.values()):
                self._drop_segment(seg)

    def _remove_locked(self, block_id: Any) -> RegionEntry | None:
        entry = self._entries.pop(block_id, None)
        if entry is None:
            return None
        self._verified.pop(block_id, None)
        seg = self._segments.get(entry.segment)
        if seg is not None:
            seg.live -= 1
            self._maybe_reclaim(seg)
        return entry

    def _maybe_reclaim(self, seg: _Segment) -> None:
        if seg.live == 0 and seg.pending == 0 and not seg.dropped:
            self._drop_segment(seg)

    def _drop_segment(self, seg: _Segment) -> None:
        seg.dropped = True
        self._segments.pop(seg.path, None)
        segs = self._by_dataset.get(seg.dataset_id, [])
        if seg in segs:
            segs.remove(seg)
        if not segs:
            self._by_dataset.pop(seg.dataset_id, None)
        if self._current.get(seg.dataset_id) is seg:
            del self._current[seg.dataset_id]
        self._used -= seg.end
        try:
            os.unlink(seg.path)
        except FileNotFoundError:
            pass
        self._unmap(seg)  # unmapped now, unless views hold it: then with the last of them


def _authentic(auth: FrameAuth, entry: RegionEntry, view: memoryview) -> bool:
    """Whether the extent's pickled bytes are the ones its entry's tag was made for, and
    the only ones ``layout.decode`` would unpickle. True for an extent with none."""
    spans = entry.pickled
    if spans == (0, 0):
        return entry.kind not in ("pickle", "pickle5")  # a pickled kind always has a span
    if layout.pickled_spans(entry.kind, view) != spans:
        return False
    return same(entry.tag, _tag(auth, entry.kind, entry.length, spans, [view]))
