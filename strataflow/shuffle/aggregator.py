"""Combining values by key within the execution-memory budget (Spark's
ExternalAppendOnlyMap).

Values are combined in a dict. Every so often the dict's size is estimated by sampling
and the task asks the MemoryManager for the growth; when the grant falls short, the dict
is written to a spill file as a run sorted by key hash, and emptied. At the end the runs
and the dict are merged by hash with ``heapq.merge`` (keys need not be orderable: equal
hashes are grouped and compared for equality), so memory holds one hash group per run.

A spill file is a sequence of pickled chunks, and unpickling runs code: a file put in
its place by someone else must not be loaded. Each chunk is framed by its index, its
length and a keyed BLAKE2b tag (``storage/frame_auth.py``) over the file's name, its index,
its length and its bytes, checked before it is unpickled; the key is the aggregator's
own (the same object writes and reads its spills, so no other process needs it), and the
aggregator knows how many chunks each file holds. A file that fails (forged, corrupt,
truncated) raises :class:`SpillCorrupt`, which fails the task, and its retry aggregates
afresh. Spill files are ``mkstemp``'s: unique names, mode 0600; a spill that fails to
write (ENOSPC) leaves no file.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import os
import pickle
import struct
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from strataflow.common import value_pickle
from strataflow.shuffle.partitioner import portable_hash
from strataflow.common.retries import infrastructure_fault
from strataflow.storage.blocks.frame_auth import TAG_BYTES, FrameAuth, same
from strataflow.common.private_file import mkstemp_private
from strataflow.storage.blocks.sizing import estimate_size

__all__ = ["Aggregator", "ExternalAggregator", "SpillCorrupt"]

_CHECK_EVERY = 512
_SPILL_CHUNK = 1024
_DOMAIN = b"sf-spill-v1"
_CHUNK = struct.Struct("<QQ")  # chunk index, pickle length
_FRAME = struct.Struct(f"<QQ{TAG_BYTES}s")  # the same, then the tag


class SpillCorrupt(RuntimeError):
    """A spill file fails its authentication or is truncated: it was not (or not wholly)
    written by this aggregator, and nothing of the failing chunk was unpickled. The
    infrastructure's fault: the task is retried and writes its spills afresh."""

    retryable = True


@dataclass(frozen=True)
class Aggregator:
    create_combiner: Callable[[Any], Any]
    merge_value: Callable[[Any, Any], Any]
    merge_combiners: Callable[[Any, Any], Any]


class ExternalAggregator:
    """Combines ``(key, value)`` or ``(key, combiner)`` pairs, spilling sorted runs."""

    def __init__(self, agg: Aggregator, memory, task_id: int, spill_dir: str | None = None,
                 on_spill: Callable[[int], None] | None = None) -> None:
        self.agg = agg
        self.memory = memory
        self.task_id = task_id
        self.spill_dir = spill_dir or tempfile.gettempdir()
        self.on_spill = on_spill
        self.data: dict = {}
        self.granted = 0
        self.spills: list[str] = []
        self.spilled_bytes = 0
        self._auth = FrameAuth()  # this aggregator's own key: it alone reads its spills
        self._chunks: dict[str, int] = {}  # spill file -> chunks written
        self._since_check = 0
        self._sampled: collections.deque = collections.deque(maxlen=16)
        self._reset_tracker()

    def _reset_tracker(self) -> None:
        """Spark's SizeTracker: measure at geometrically spaced update counts (x1.1) and
        extrapolate in between from the bytes per update of the last two measurements,
        so the cost of measuring stays a small fraction however large the groups grow."""
        self._updates = 0
        self._next_sample = _CHECK_EVERY
        self._last_size = sys.getsizeof(self.data)
        self._last_updates = 0
        self._bytes_per_update = 0.0

    # -- insertion -------------------------------------------------------------------
    def insert_values(self, pairs) -> None:
        data, create, merge = self.data, self.agg.create_combiner, self.agg.merge_value
        for k, v in pairs:
            if k in data:
                data[k] = merge(data[k], v)
            else:
                data[k] = create(v)
            self._since_check += 1
            if self._since_check >= _CHECK_EVERY:
                self._maybe_spill(k)
                data = self.data

    def insert_combiners(self, pairs) -> None:
        data, merge = self.data, self.agg.merge_combiners
        for k, c in pairs:
            if k in data:
                data[k] = merge(data[k], c)
            else:
                data[k] = c
            self._since_check += 1
            if self._since_check >= _CHECK_EVERY:
                self._maybe_spill(k)
                data = self.data

    def estimated_size(self) -> int:
        """The dict's size: its table plus its length times the mean deep size of a few
        sampled entries, re-measured now (combiners such as group lists grow in place)."""
        live = [k for k in self._sampled if k in self.data]
        if not live:
            return sys.getsizeof(self.data)
        per = sum(estimate_size(k, 3) + estimate_size(self.data[k], 3) for k in live) / len(live)
        return int(sys.getsizeof(self.data) + len(self.data) * per)

    def _maybe_spill(self, new_key) -> None:
        self._updates += self._since_check
        self._since_check = 0
        self._sampled.append(new_key)
        if self._updates >= self._next_sample:
            size = self.estimated_size()
            if self._updates > self._last_updates:
                self._bytes_per_update = max(0.0, (size - self._last_size) / (self._updates - self._last_updates))
            self._last_size, self._last_updates = size, self._updates
            self._next_sample = int(self._updates * 1.1) + 1
            est = size
        else:
            est = int(self._last_size + (self._updates - self._last_updates) * self._bytes_per_update)
        if est <= self.granted:
            return
        want = 2 * est - self.granted
        got = self.memory.acquire_execution(want, self.task_id)
        self.granted += got
        if self.granted < est:
            self._spill()

    def _spill(self) -> None:
        items = sorted(self.data.items(), key=lambda kv: portable_hash(kv[0]))
        try:
            fd, path = mkstemp_private(self.spill_dir, "spill-", ".pkl")
        except OSError as exc:  # a full or refusing device: the task is retried (retries.py)
            raise infrastructure_fault(exc)
        try:
            with os.fdopen(fd, "wb") as f:
                chunks = 0
                for i in range(0, len(items), _SPILL_CHUNK):
                    data = value_pickle.dumps(items[i : i + _SPILL_CHUNK])
                    f.write(_FRAME.pack(chunks, len(data), self._tag(path, chunks, data)))
                    f.write(data)
                    chunks += 1
                size = f.tell()
        except BaseException as exc:
            os.remove(path)
            if isinstance(exc, OSError):
                raise infrastructure_fault(exc)
            raise
        self._chunks[path] = chunks
        self.spills.append(path)
        self.spilled_bytes += size
        if self.on_spill:
            self.on_spill(size)
        self.data = {}
        self.memory.release_execution(self.granted, self.task_id)
        self.granted = 0
        self._reset_tracker()

    # -- output ----------------------------------------------------------------------
    def items(self) -> Iterator[tuple[Any, Any]]:
        """Every key once with its combiner; spill files are deleted once read."""
        if not self.spills:
            yield from self.data.items()
            self._release()
            return
        runs = [self._read_run(p) for p in self.spills]
        mem = sorted(self.data.items(), key=lambda kv: portable_hash(kv[0]))
        self.data = {}
        keyed = [((portable_hash(k), k, c) for k, c in run) for run in runs + [iter(mem)]]
        merged = heapq.merge(*keyed, key=lambda t: t[0])
        merge = self.agg.merge_combiners
        try:
            for _, group in itertools.groupby(merged, key=lambda t: t[0]):
                found: list[list] = []
                for _, k, c in group:
                    for slot in found:
                        if slot[0] == k:
                            slot[1] = merge(slot[1], c)
                            break
                    else:
                        found.append([k, c])
                for k, c in found:
                    yield k, c
        finally:
            self._release()

    def _tag(self, path: str, index: int, data: bytes) -> bytes:
        """A chunk's tag: the file's name, the chunk's index and length, its bytes."""
        name = os.path.basename(path).encode()
        return self._auth.tag(_DOMAIN, struct.pack("<H", len(name)), name, _CHUNK.pack(index, len(data)), data)

    def _read_run(self, path: str) -> Iterator[tuple[Any, Any]]:
        """The pairs of one spill file, each chunk authenticated before it is unpickled."""
        chunks = self._chunks.get(path, 0)
        with open(path, "rb") as f:
            left = os.fstat(f.fileno()).st_size
            for i in range(chunks):
                head = f.read(_FRAME.size)
                index, length, tag = _FRAME.unpack(head) if len(head) == _FRAME.size else (-1, 0, b"")
                left -= len(head)
                if index != i or length > left:  # checked before reading: no allocation on a forged length
                    raise SpillCorrupt(f"spill file {path} is truncated or out of order at chunk {i}")
                data = f.read(length)
                left -= len(data)
                if not same(tag, self._tag(path, i, data)):
                    raise SpillCorrupt(f"spill file {path} fails authentication at chunk {i}: not written by "
                                       f"this aggregator, or corrupt")
                yield from pickle.loads(data)
            if left:
                raise SpillCorrupt(f"spill file {path} has {left} bytes after its last chunk")

    def _release(self) -> None:
        for p in self.spills:
            try:
                os.remove(p)
            except FileNotFoundError:
                pass
        self.spills = []
        self._chunks.clear()
        if self.granted:
            self.memory.release_execution(self.granted, self.task_id)
            self.granted = 0
