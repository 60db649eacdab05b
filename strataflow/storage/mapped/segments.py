"""The region store's segments as it keeps them (:class:`_Segment`), and its bookkeeping of
their files (:class:`Segments`, a part of :class:`~.region_store.RegionStore`): making a new
one, noticing a file changed behind the store, reclaiming and dropping one. The file I/O
itself is :mod:`.segment_file`'s; the reasons for this bookkeeping are in the region
store's docstring ("Checksums")."""

from __future__ import annotations

import os
import re
import weakref
from typing import Any

import pyarrow as pa

from strataflow.storage.mapped import segment_file

__all__ = ["Segments"]


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


class Segments:
    """The segment bookkeeping of :class:`~.region_store.RegionStore` (which holds the
    state these methods read: ``_lock``, ``_segments``, ``_current``, ``_entries``...).
    Every method runs under the store's lock."""

    _segments: dict
    _by_dataset: dict
    _current: dict
    _entries: dict
    _cut: dict
    _deferred: list
    _used: int

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
