"""The background writer: asynchronous eviction and prefetching, off the tasks' threads.

Why: with synchronous eviction (Spark's, and Zhang et al.'s) the task that puts a block
into a full memory serializes and writes its victims to disk before it can go on, so
every put under pressure pays a disk write on the critical path. Here one thread keeps
free headroom instead:

- Watermarks. When the memory in use (storage + execution) passes ``high`` x total, the
  writer asks the policy for victims and writes them to the top disk tier until use is
  under ``low`` x total. It asks *for the block put last* (``select_victims(space,
  last_put, candidates)``), so the policy's rules for a put hold: with Spark's rule no
  block is evicted for a block of its own dataset, and the writer picks exactly the
  victims a synchronous put would have dropped, only earlier. (Were it to ask as
  execution memory does, a loop over one dataset larger than memory would evict its own
  oldest blocks on every put: the thrash that rule prevents.) Only blocks of disk levels are written (never a memory-only block: it
  would be lost, not moved; never a mapped level: the region store writes those once, on
  the task's thread).
- A block being written stays in memory and readable; its memory is released only when
  its disk copy is complete, and only if it is still the same entry (an unpersist or a
  synchronous drop in between wins; a copy nobody owns is removed).
- A put that finds no room asks for the bytes it needs (``request``), and the memory
  manager waits, lock released, only for those bytes, at most ``wait_s``; then it evicts
  synchronously what is still missing, skipping the blocks being written here.
- Failure. Any exception while writing (disk full, unwritable directory, a value that
  cannot be serialized) leaves the block in memory untouched, posts ``EvictionFailed``
  with the reason, wakes the waiting puts and turns asynchronous eviction off for the
  rest of the application: the cache falls back to synchronous eviction, which has its
  own, tested, failure paths. Nothing is lost.
- Prefetch. Blocks the policy names in ``prefetch_candidates`` are read from disk into
  free memory here, never evicting (the block manager does the read). The writer also
  decides when to ask: after a scan that found nothing, the next ones wait (1, 2, 4 ...
  64 served blocks) unless free memory grows, a block is written to disk, or a stage is
  planned: a scan is linear in the blocks on disk, and a policy holding free memory for
  a stage's own puts says "nothing" on every served block of that stage.

The writer reaches the cache only through two small protocols: :class:`EvictionHandler`
(after Spark's ``BlockEvictionHandler``; ``eviction.Eviction`` implements it) and
:class:`PrefetchHandler` (the block manager), and the memory manager through its public
figures and lock. Victims are chosen and marked by the handler under the memory
lock, written with no lock held, and released by the handler with an identity check:
the same two phases as synchronous eviction, and the same marks, so the two never pick
the same block.

Lock order, to stay deadlock-free: the memory manager's lock, then this writer's lock;
the writer never takes the memory lock while holding its own, and never waits for a
block's lock (a task holding a block's lock may be waiting for the writer; a prefetch
of a block being read is skipped).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Iterable, Protocol, Sequence

from strataflow.common.checks import DEFAULT_WATERMARKS

__all__ = ["EvictionWriter", "EvictionHandler", "PrefetchHandler", "DEFAULT_WATERMARKS", "headroom"]

_IDLE_S = 0.2  # how often an idle writer looks at the watermarks without being kicked
_EXIT_S = 0.5  # an idle thread exits after this long; the next kick, request or prefetch starts another
_MAX_BACKOFF = 64  # served blocks between prefetch scans at most, while scans find nothing


def headroom(total: int, watermarks: tuple[float, float]) -> int:
    """The memory a writer evicting between ``watermarks`` keeps free: ``(1 - high) x
    total``. Free memory that is not free for promotions and prefetches (what is put
    into it is written out again at once); the simulator models the writer with it too."""
    return int(total * (1 - watermarks[1]))


class EvictionHandler(Protocol):
    """What the writer may ask of the cache's eviction (``eviction.Eviction``), and
    nothing else."""

    def select_for_writer(self, need: int, for_block: Any) -> Sequence:
        """Under the memory lock: choose and mark victims (``Victim``) worth ``need`` bytes."""

    def write_victim(self, victim: Any, strict: bool = ...) -> str:
        """No lock held: write the victim's disk copy; raises on any failure if strict."""

    def release(self, victim: Any, to: str, mode: str | None = ...) -> int:
        """Remove the written victim from memory if it is still the entry chosen."""

    def unmark(self, victims: Sequence) -> None:
        """Victims left unwritten: evictable again."""

    def eviction_failed(self, block_id: Any, reason: str) -> None:
        """Report a write that failed (the block stayed in memory)."""


class PrefetchHandler(Protocol):
    """What the writer may ask of the block manager to prefetch, and nothing else."""

    def prefetch_offer(self) -> tuple[list, int | None]:
        """The policy's prefetch candidates now, and the size in memory of the smallest disk block."""

    def prefetch(self, block_id: Any) -> bool:
        """Load one disk block into free memory, never evicting."""


class EvictionWriter:
    """One background thread per block manager, started when there is work (a put past
    the high watermark, a put waiting for room, a prefetch), ended after half a second
    with none, and joined by ``stop``: an application that never comes near its memory
    limit never has the thread, and none lingers between bursts of work.

    ``evicting`` says whether it evicts (asynchronous eviction on); with it off the
    thread only prefetches. ``watermarks`` are validated by the configuration.
    """

    def __init__(self, evictions: EvictionHandler, loader: PrefetchHandler, memory: Any, evicting: bool = False,
                 watermarks: tuple[float, float] = DEFAULT_WATERMARKS) -> None:
        self.evictions = evictions
        self.loader = loader
        self.memory = memory
        self.evicting = evicting
        self.low, self.high = (float(w) for w in watermarks)
        self.failed: str | None = None  # why asynchronous eviction was turned off
        self.passes = 0  # times the thread looked at the watermarks (a test's proof that it looked)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)  # notified whenever the writer has nothing to do
        self._kicked = False
        self._waiting = False  # the thread sleeps with nothing to do
        self._stopping = False
        self._draining = False
        self._demand = 0  # bytes puts are waiting for
        self._inflight: dict[Any, int] = {}  # blocks being written now -> bytes
        self._for_block: Any = None  # the block put (or waiting to be put) last
        self._prefetch: deque = deque()
        self._thread: threading.Thread | None = None
        # prefetch scheduling (see the module docstring)
        self._scan_lock = threading.Lock()
        self._smallest_on_disk = 0  # the smallest disk block at the last scan
        self._scan_skip = 0
        self._scan_backoff = 1
        self._scan_free = 0

    def headroom(self) -> int:
        """Bytes kept free while evicting asynchronously; 0 when not (or no longer)."""
        return headroom(self.memory.total, (self.low, self.high)) if self.helping(started=False) else 0

    # -- lifecycle ------------------------------------------------------------------------
    def _ensure_started(self) -> None:
        """Starts the thread if needed; called with ``_lock`` held."""
        if self._thread is None and not self._stopping:
            self._thread = threading.Thread(target=self._run, name="strataflow-evictor", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stops the thread after the write in progress (its block stays in memory if not
        finished: nothing half-done is lost) and joins it."""
        with self._lock:
            self._stopping = True
            self._prefetch.clear()
            self._wake.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self.memory.wake()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the memory manager's side (called with the memory lock held) ----------------------
    def request(self, num_bytes: int, block_id: Any) -> bool:
        if not self.helping(started=False):
            return False
        with self._lock:
            inflight = sum(self._inflight.values())
        if inflight < num_bytes and not self._worth_waiting(num_bytes - inflight, block_id):
            return False
        with self._lock:
            self._for_block = block_id
            self._demand += num_bytes
            self._kicked = True
            self._ensure_started()
            self._wake.notify_all()
        return True

    def _worth_waiting(self, num_bytes: int, block_id: Any) -> bool:
        """A dry run of the policy's choice (under the memory lock, undone at once): if it
        would name no victims for this put, waiting for the writer is waiting for nothing."""
        victims = self.evictions.select_for_writer(num_bytes, block_id)
        self.evictions.unmark(victims)
        return bool(victims)

    def withdraw(self, num_bytes: int) -> None:
        with self._lock:
            self._demand = max(0, self._demand - num_bytes)

    def helping(self, started: bool = True) -> bool:
        if not self.evicting or self.failed is not None or self._stopping:
            return False
        return self.running if started else True

    def _is_idle(self) -> bool:
        if self._thread is None or not self._thread.is_alive():
            return True
        return (self._waiting and not self._kicked and not self._prefetch and not self._inflight
                and not self._demand)

    def idle(self) -> bool:
        """Nothing written, queued or asked for right now (tests wait for this before
        looking at files: a write in progress has a temporary file)."""
        with self._lock:
            return self._is_idle()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Blocks until the writer is idle (True) or ``timeout`` passes (False): the signal
        to wait on, rather than sleeping and hoping the thread was quick."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not self._is_idle():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(min(left, _IDLE_S))
            return True

    def inflight(self) -> set:
        with self._lock:
            return set(self._inflight)

    def kick(self, block_id: Any = None) -> None:
        """After a memory put: wakes the writer if use passed the high watermark."""
        if not self.evicting or self.failed is not None:
            return
        self._for_block = block_id
        mm = self.memory
        if mm.storage_used + mm.execution_used <= self.high * mm.total:
            return
        with self._lock:
            self._kicked = True
            self._ensure_started()
            self._wake.notify_all()

    # -- prefetch ------------------------------------------------------------------------------
    def prefetch(self, blocks: Iterable[Any]) -> None:
        """Queues blocks to load into free memory (the handler reads them, never evicting)."""
        with self._lock:
            if self._stopping:
                return
            queued = set(self._prefetch)
            self._prefetch.extend(b for b in blocks if b not in queued)
            self._ensure_started()
            self._wake.notify_all()

    def rescan(self) -> None:
        """A new stage is planned: the next served block may scan again at once."""
        with self._scan_lock:
            self._scan_skip, self._scan_backoff, self._scan_free = 0, 1, 0

    def disk_grew(self) -> None:
        """A block was written to disk: a smaller one than the last scan saw may be there."""
        self._smallest_on_disk = 0

    def maybe_prefetch(self) -> None:
        """After a served block: asks the handler for prefetch candidates unless no disk
        block fits in free memory or the back-off says wait, and queues them (the task
        goes on at once). One scan at a time: a scan already running answers for all."""
        free = self.memory.free
        if free <= 0 or free < self._smallest_on_disk:
            return  # no disk block fits: skip the scan (one per served block otherwise)
        if not self._scan_lock.acquire(blocking=False):
            return
        try:
            if self._scan_skip > 0 and free <= self._scan_free:
                self._scan_skip -= 1  # the last scan found nothing and no memory was freed since
                return
            wanted, smallest = self.loader.prefetch_offer()
            if smallest is None:
                return
            self._smallest_on_disk = smallest
            if wanted:
                self._scan_skip, self._scan_backoff, self._scan_free = 0, 1, 0
            else:
                self._scan_skip, self._scan_free = self._scan_backoff, free
                self._scan_backoff = min(_MAX_BACKOFF, self._scan_backoff * 2)
        finally:
            self._scan_lock.release()
        if wanted:
            self.prefetch(wanted)

    # -- the thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        last_work = time.monotonic()
        while True:
            with self._lock:
                if self._stopping:
                    self._idle.notify_all()
                    return
                job = self._prefetch.popleft() if self._prefetch else None
            if job is not None:
                self.loader.prefetch(job)
                last_work = time.monotonic()
                continue
            if self.helping(started=False) and self._evict_some(self._needed()):
                last_work = time.monotonic()
                continue
            with self._lock:
                if self._stopping:
                    self._idle.notify_all()
                    return
                if not self._kicked and not self._prefetch:
                    if time.monotonic() - last_work > _EXIT_S and not self._demand and not self._inflight:
                        self._thread = None  # nothing to do for a while: end; work starts a new thread
                        self._idle.notify_all()
                        return
                    self._waiting = True
                    if self._is_idle():
                        self._idle.notify_all()
                    self._wake.wait(_IDLE_S)
                    self._waiting = False
                self._kicked = False

    def _needed(self) -> int:
        """Bytes to write now: down to the low watermark once past the high one, and at
        least what waiting puts asked for."""
        self.passes += 1
        mm = self.memory
        with mm.lock:
            used = mm.storage_used + mm.execution_used
            if used > self.high * mm.total:
                self._draining = True
            over = int(used - self.low * mm.total) if self._draining else 0
            if over <= 0:
                self._draining = False
        with self._lock:
            return max(over, self._demand - sum(self._inflight.values()))

    def _evict_some(self, need: int) -> bool:
        """Writes one batch of victims; False if there was nothing to do."""
        if need <= 0:
            return False
        with self.memory.lock:
            batch = list(self.evictions.select_for_writer(need, self._for_block))
            with self._lock:
                self._inflight.update((v.block_id, v.entry.size) for v in batch)
        if not batch:
            return False
        done = 0
        try:
            for victim in batch:
                if self._stopping or self.failed is not None:
                    break
                try:
                    to = self.evictions.write_victim(victim, strict=True)
                except Exception as exc:  # noqa: BLE001 - any failure: keep the block, go synchronous
                    self._fail(victim.block_id, exc)
                    break
                self.evictions.release(victim, to, "async")
                done += 1
                with self._lock:
                    self._inflight.pop(victim.block_id, None)
        finally:
            self.evictions.unmark(batch[done:])
            with self._lock:
                for victim in batch:
                    self._inflight.pop(victim.block_id, None)
        return True

    def _fail(self, bid: Any, exc: BaseException) -> None:
        self.failed = f"{type(exc).__name__}: {exc}"
        self.evictions.eviction_failed(bid, self.failed)
        self.memory.wake()  # waiting puts stop waiting and evict synchronously
