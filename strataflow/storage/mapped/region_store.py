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

Authentication, for the bytes that are unpickled: a keyed tag in the entry, checked before
EVERY decode (why and of which bytes: :mod:`.extents`). Segment files are created mode 0600.

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
import secrets
import threading
from concurrent.futures import CancelledError, Future
from time import perf_counter
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import xxhash

from strataflow.storage.blocks.frame_auth import FrameAuth
from strataflow.storage.mapped import layout
from strataflow.storage.mapped import page_cache
from strataflow.storage.mapped import segment_file
from strataflow.storage.mapped.extents import RegionEntry, _authentic, _tag, read_extent
from strataflow.storage.mapped.page_cache import PAGE as _PAGE
from strataflow.storage.mapped.segments import Segments, _Segment, _sig
from strataflow.storage.tier_store import BlockUnavailable, Decode, DiskFull

if TYPE_CHECKING:
    import weakref

__all__ = ["RegionStore", "RegionEntry", "DiskFull", "BlockUnavailable", "SEGMENT_BYTES"]

SEGMENT_BYTES = 256 << 20


def _round_up(n: int, align: int) -> int:
    return -(-n // align) * align


class RegionStore(Segments):
    """The mapped levels' store; a :class:`~strataflow.storage.tier_store.TierStore`
    (not a tier kind: it stores values in its own layout, outside the tier stack)."""

    entry_type = RegionEntry

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

    items = entries  # TierStore's name

    @property
    def used(self) -> int:
        """TierStore's ``used``: :attr:`bytes_on_disk`, what ``capacity`` counts."""
        return self.bytes_on_disk

    @property
    def free(self) -> int | None:
        with self._lock:
            return None if self.capacity is None else self.capacity - self._used

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

    read_extent = staticmethod(read_extent)

    @staticmethod
    def load_entry(entry: RegionEntry, decode: Decode) -> tuple[Any, int]:
        """TierStore's peer read: the extent's value (mapped, not ``decode``d) and its bytes."""
        return read_extent(entry), entry.length


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
    def release_pages(self, block_id: Any, drop_cached: bool = True) -> int:
        """Drops the extent's pages from this process's resident set and (``drop_cached``)
        from the page cache (:func:`.page_cache.release`). Views stay valid: they fault the
        pages back in from the file. Returns the bytes advised (the extent rounded out to
        pages; pages shared with neighbouring extents are released too); 0 for a block not
        in the store."""
        with self._lock:
            entry = self._entries.get(block_id)
            if entry is None:
                return 0
            seg = self._segments[entry.segment]
            buf, path = seg.buf, seg.path  # our reference keeps the map alive outside the lock
        return page_cache.release(buf, path, entry.offset, entry.length, drop_cached)

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
