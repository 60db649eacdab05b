"""Control of the page cache for mapped extents: is an extent resident, read it ahead,
release it. The region store (:mod:`.region_store`) uses it on ``get`` (readahead) and in
``release_pages``; the block manager bounds the pages of recently read mapped blocks with
:class:`MappedPageBound` (``mmap_memory``).

Readahead. A cold block served by faulting its pages one readaround window at a time
alternates I/O and compute in the task that reads it (0.55-0.63 of the device's sequential
bandwidth on cold K-means). Instead, the region store's ``get`` of a cold extent
(``mincore`` says under 90% resident) queues it and the next ``READAHEAD_BLOCKS`` splits of
its dataset on one readahead thread (:class:`ReadAhead`), which populates the map in 32 MiB
requests (``madvise(MADV_POPULATE_READ)``, Linux 5.14+; ``pread`` otherwise); the task waits
for its own extent only, then computes on resident pages while the next ones are read (0.86
of the device's bandwidth, ``benchmarks/serdes_free.py`` part b). A warm read costs one
``mincore`` call. ``STRATAFLOW_READAHEAD=off`` (or the store's ``readahead=False``) turns it
off; ``STRATAFLOW_READAHEAD=pread`` reads with ``pread`` even where madvise could populate.

Release. :func:`release` drops an extent's pages twice over: ``madvise(MADV_DONTNEED)`` on
the map (out of this process's resident set) and ``posix_fadvise(DONTNEED)`` on the file
range (out of the page cache, if no one else maps them). Views stay valid: they fault the
pages back in from the file.

The maps are Arrow's (``pa.memory_map``), so ``mmap.mmap.madvise`` cannot reach them: libc's
``madvise`` and ``mincore`` are called through ctypes on the buffer's address; where they
are missing (not Linux) an extent is never resident and releasing only advises the file.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["PAGE", "READAHEAD_BLOCKS", "READAHEAD_MODE", "page_span", "resident", "populate", "release",
           "ReadAhead", "MappedPageBound"]

PAGE = mmap.PAGESIZE
READAHEAD_BLOCKS = 2  # the splits read ahead after a cold one
READAHEAD_MODE = os.environ.get("STRATAFLOW_READAHEAD", "populate")  # populate | pread | off
_READAHEAD_CHUNK = 32 << 20
_READAHEAD_MIN = 1 << 20  # smaller extents: the kernel's own readahead is enough
_RELEASED_KEPT = 65536  # released blocks remembered (a few MB of ids at most)
_RESIDENT = 0.9  # an extent this much in the page cache is not read ahead
_MADV_POPULATE_READ = 22  # Linux 5.14+
_CAN_FADVISE = hasattr(os, "posix_fadvise") and hasattr(os, "POSIX_FADV_DONTNEED")


def _libc(name: str, argtypes: list) -> Any:
    """A libc function through ctypes, or None where it is missing."""
    try:
        fn = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = argtypes, ctypes.c_int
    return fn


_MADVISE = _libc("madvise", [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]) if hasattr(mmap, "MADV_DONTNEED") else None
_MINCORE = _libc("mincore", [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)])


def page_span(offset: int, length: int, size: int | None = None) -> tuple[int, int]:
    """``(start, end)``: the extent rounded out to whole pages (cut at ``size``, the map's)."""
    start = offset - offset % PAGE
    end = -(-(offset + length) // PAGE) * PAGE
    return start, end if size is None else min(end, size)


def resident(buf: pa.Buffer, offset: int, length: int) -> bool:
    """Whether 90% of the extent's pages are in the page cache (``mincore``: one cheap
    syscall, so a warm read pays nothing for readahead)."""
    if _MINCORE is None:
        return False
    start, end = page_span(offset, length, buf.size)
    pages = (end - start) // PAGE
    if pages <= 0:
        return True
    vec = (ctypes.c_ubyte * pages)()
    if _MINCORE(buf.address + start, end - start, vec) != 0:
        return False
    return int((np.frombuffer(vec, dtype=np.uint8) & 1).sum()) >= _RESIDENT * pages


def populate(path: str, buf: pa.Buffer, offset: int, length: int, mode: str = READAHEAD_MODE) -> int:
    """Reads the extent into the page cache and this map's page tables, in large
    sequential requests: ``madvise(MADV_POPULATE_READ)`` on the map (no copy, and the task
    then touches no missing page), else (an older kernel, or ``mode`` "pread") ``pread``
    into a scratch buffer. Returns the bytes read (page-rounded); 0 if the file is gone."""
    start, end = page_span(offset, length, buf.size)
    if _MADVISE is not None and mode == "populate":
        for pos in range(start, end, _READAHEAD_CHUNK):
            if _MADVISE(buf.address + pos, min(_READAHEAD_CHUNK, end - pos), _MADV_POPULATE_READ) != 0:
                break  # an older kernel (EINVAL): read instead
        else:
            return end - start
    scratch = memoryview(bytearray(min(_READAHEAD_CHUNK, max(end - start, 0))))
    read = 0
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return 0  # the segment went away (unpersisted): nothing to read ahead
    try:
        pos = start
        while pos < end:
            n = os.preadv(fd, [scratch[: min(_READAHEAD_CHUNK, end - pos)]], pos)
            if n <= 0:
                break
            pos += n
            read += n
    finally:
        os.close(fd)
    return read


def release(buf: pa.Buffer | None, path: str, offset: int, length: int, drop_cached: bool = True) -> int:
    """Drops the extent's pages from the map ``buf`` (None: not mapped) and, unless
    ``drop_cached`` is False, from the page cache (see the module's docstring). Returns the
    bytes advised: the extent rounded out to pages, so pages shared with neighbouring extents
    are released too. Never raises for a file that is gone (the map alone is advised then).

    ``drop_cached=False`` is what the block manager's bound does (``memory=`` counts what the
    process holds, see docs/caching.md "What memory= counts"): the pages leave this process,
    the kernel keeps or reclaims them as it does the disk tiers' files and the sources."""
    start, end = page_span(offset, length)
    if buf is not None and _MADVISE is not None and start < buf.size:
        # a map starts on a page, so the address of ``start`` is page-aligned
        _MADVISE(buf.address + start, min(end, buf.size) - start, mmap.MADV_DONTNEED)
    if _CAN_FADVISE and drop_cached:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return end - start
        try:
            os.posix_fadvise(fd, start, end - start, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return end - start


class ReadAhead:
    """One background thread that reads extents ahead of their use, in the order asked,
    each extent once at a time (a key in flight is not queued again: its read is shared).
    ``bytes_read`` counts what it read; ``wait_idle`` tells when nothing is queued or
    running (what a test or a benchmark waits on instead of sleeping). ``close`` cancels the
    queued reads and joins the thread; thread-safe."""

    def __init__(self, enabled: bool = True, mode: str = READAHEAD_MODE) -> None:
        self.mode = mode
        self.enabled = enabled and mode != "off"
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending: dict[Hashable, Future] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False
        self._bytes = 0
        self._queued = 0

    @property
    def bytes_read(self) -> int:
        with self._lock:
            return self._bytes

    @property
    def queued(self) -> int:
        """Extents queued so far (each read once)."""
        with self._lock:
            return self._queued

    def request(self, key: Hashable, path: str, buf: pa.Buffer, offset: int, length: int) -> Future | None:
        """The read of the extent: queued now, or the one already in flight for ``key``;
        None (nothing to wait for) when it is small (the kernel's own readahead serves it),
        resident, or readahead is off or closed. The future's result is the bytes read."""
        if not self.enabled or length < _READAHEAD_MIN:
            return None
        with self._lock:
            fut = self._pending.get(key)
            if fut is not None or self._closed or resident(buf, offset, length):
                return fut
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="strataflow-readahead")
            fut = self._pool.submit(self._read, key, path, buf, offset, length)
            self._pending[key] = fut  # before _read can pop it: it needs the lock held here
            self._queued += 1
            return fut

    def _read(self, key: Hashable, path: str, buf: pa.Buffer, offset: int, length: int) -> int:
        try:
            n = populate(path, buf, offset, length, self.mode)
            with self._lock:
                self._bytes += n  # counted before the future resolves: a waiter sees it
            return n
        finally:
            with self._lock:
                self._pending.pop(key, None)
                self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Blocks until no read is queued or running; False if ``timeout`` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._pending, timeout)

    def close(self) -> None:
        """Cancels the queued reads, waits for the running one, joins the thread. Later
        requests return None."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            self._pending.clear()  # cancelled reads never ran: nothing else will drop them
            self._idle.notify_all()


class MappedPageBound:
    """Keeps the page cache held by recently read mapped blocks under ``limit`` bytes (the
    Context's ``mmap_memory``): mapped pages count in the reader's RSS once touched, and the
    kernel would only drop them under pressure. ``touched(block_id, size)`` records a read
    (the block becomes the newest of an LRU) and releases the oldest blocks' pages, through
    ``release(block_id) -> bytes``, while the total exceeds the limit; the block just read
    is never released. Returns the bytes released. ``limit`` None (or ``release`` None: no
    mapped store): no bound, nothing kept.

    ``set_limit`` moves the bound (the memory split, ``storage/memory/split.py``); the blocks whose
    pages were released are remembered (``state``), so that a read of one is known for a
    page-cache miss a larger bound would have saved.

    Thread-safe: the LRU is updated under a lock, the releases (syscalls) run outside it. A
    victim read again by another thread meanwhile may lose its pages just after that read;
    its views fault them back in, and the bound only overcounts what is held."""

    def __init__(self, release: Callable[[Any], int] | None, limit: int | None) -> None:
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0 or None, got {limit}")
        self.limit = None if release is None else limit
        self._release = release
        self._lru: OrderedDict[Any, int] = OrderedDict()  # oldest first
        self._held = 0
        self._lock = threading.Lock()
        #: blocks whose pages this bound released, not read since (oldest first): a read of
        #: one is a page-cache miss that a larger bound would have saved (the memory split's
        #: evidence for mapped pages)
        self._released: OrderedDict[Any, int] = OrderedDict()

    @property
    def held_bytes(self) -> int:
        """Bytes of the blocks tracked as holding pages."""
        with self._lock:
            return self._held

    def blocks(self) -> list:
        """The tracked blocks, oldest first."""
        with self._lock:
            return list(self._lru)

    def state(self, block_id: Any) -> str:
        """``held`` (its pages are kept: a read is a page-cache hit), ``released`` (this
        bound dropped them: a read faults them back from the device) or ``new``."""
        with self._lock:
            return "held" if block_id in self._lru else "released" if block_id in self._released else "new"

    def touched(self, block_id: Any, size: int) -> int:
        if self.limit is None:
            return 0
        with self._lock:
            self._released.pop(block_id, None)
            self._held += size - self._lru.pop(block_id, 0)
            self._lru[block_id] = size
            victims = self._over(keep=1)
        return self._drop(victims)

    def set_limit(self, limit: int) -> int:
        """A new bound (the memory split moved); releases the oldest blocks' pages until
        the held bytes fit, all of them if need be. Returns the bytes released."""
        if self.limit is None:
            return 0
        with self._lock:
            grew, self.limit = limit >= self.limit, max(0, int(limit))
            victims = self._over(keep=1 if grew else 0)  # growing never releases the block just read
        return self._drop(victims)

    def _over(self, keep: int) -> list:
        """Under the lock: pops the oldest blocks while over the limit, keeping the newest
        ``keep`` (the block just read)."""
        victims = []
        while self._held > self.limit and len(self._lru) > keep:
            old, n = self._lru.popitem(last=False)
            self._held -= n
            victims.append(old)
            self._released[old] = n
        while len(self._released) > _RELEASED_KEPT:
            self._released.popitem(last=False)
        return victims

    def _drop(self, victims: list) -> int:
        return sum(self._release(old) for old in victims)

    def forget_dataset(self, dataset_id: Any) -> None:
        """Stops tracking the dataset's blocks (unpersisted: its pages went with its files)."""
        with self._lock:
            for bid in [b for b in self._lru if b.dataset_id == dataset_id]:
                self._held -= self._lru.pop(bid)
            for bid in [b for b in self._released if b.dataset_id == dataset_id]:
                del self._released[bid]
