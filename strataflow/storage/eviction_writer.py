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
  free memory here, never evicting (the block manager does the read; see ``_prefetch``).

Lock order, to stay deadlock-free: the memory manager's lock, then this writer's lock;
the writer never takes the memory lock while holding its own, and never a block's lock
(a task holding a block's lock may be waiting for the writer).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from .manager import BlockManager

__all__ = ["EvictionWriter", "DEFAULT_WATERMARKS"]

DEFAULT_WATERMARKS = (0.85, 0.95)
_IDLE_S = 0.2  # how often an idle writer looks at the watermarks without being kicked
_EXIT_S = 0.5  # an idle thread exits after this long; the next kick, request or prefetch starts another


class EvictionWriter:
    """One background thread per block manager, started when there is work (a put past
    the high watermark, a put waiting for room, a prefetch), ended after half a second
    with none, and joined by ``stop``: an application that never comes near its memory
    limit never has the thread, and none lingers between bursts of work.

    ``evicting`` says whether it evicts (asynchronous eviction on); with it off the
    thread only prefetches.
    """

    def __init__(self, bm: "BlockManager", evicting: bool = False,
                 watermarks: tuple[float, float] = DEFAULT_WATERMARKS) -> None:
        low, high = (float(w) for w in watermarks)
        if not 0.0 < low <= high <= 1.0:
            raise ValueError(f"eviction_watermarks: need 0 < low <= high <= 1, got {watermarks!r}")
        self.bm = bm
        self.memory = bm.memory
        self.evicting = evicting
        self.low, self.high = low, high
        self.failed: str | None = None  # why asynchronous eviction was turned off
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._kicked = False
        self._waiting = False  # the thread sleeps with nothing to do
        self._stopping = False
        self._draining = False
        self._demand = 0  # bytes puts are waiting for
        self._inflight: dict[Any, int] = {}  # blocks being written now -> bytes
        self._for_block: Any = None  # the block put (or waiting to be put) last
        self._prefetch: deque = deque()
        self._thread: threading.Thread | None = None

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
            busy = dict(self._inflight)
        inflight = sum(busy.values())
        if inflight < num_bytes:
            cands = self.bm._async_candidates(exclude=busy)
            # A dry run of the policy's choice (it only reads its state): if it would name no
            # victims for this put, waiting for the writer is waiting for nothing.
            if not cands or not self.bm.policy.select_victims(num_bytes - inflight, block_id, cands):
                return False
        with self._lock:
            self._for_block = block_id
            self._demand += num_bytes
            self._kicked = True
            self._ensure_started()
            self._wake.notify_all()
        return True

    def withdraw(self, num_bytes: int) -> None:
        with self._lock:
            self._demand = max(0, self._demand - num_bytes)

    def helping(self, started: bool = True) -> bool:
        if not self.evicting or self.failed is not None or self._stopping:
            return False
        return self.running if started else True

    def idle(self) -> bool:
        """Nothing written, queued or asked for right now (tests wait for this before
        looking at files: a write in progress has a temporary file)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                return True
            return (self._waiting and not self._kicked and not self._prefetch and not self._inflight
                    and not self._demand)

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

    def prefetch(self, blocks: Iterable[Any]) -> None:
        with self._lock:
            if self._stopping:
                return
            queued = set(self._prefetch)
            self._prefetch.extend(b for b in blocks if b not in queued)
            self._ensure_started()
            self._wake.notify_all()

    # -- the thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        last_work = time.monotonic()
        while True:
            with self._lock:
                if self._stopping:
                    return
                job = self._prefetch.popleft() if self._prefetch else None
            if job is not None:
                self.bm._prefetch(job)
                last_work = time.monotonic()
                continue
            if self.helping(started=False) and self._evict_some(self._needed()):
                last_work = time.monotonic()
                continue
            with self._lock:
                if self._stopping:
                    return
                if not self._kicked and not self._prefetch:
                    if time.monotonic() - last_work > _EXIT_S and not self._demand and not self._inflight:
                        self._thread = None  # nothing to do for a while: end; work starts a new thread
                        return
                    self._waiting = True
                    self._wake.wait(_IDLE_S)
                    self._waiting = False
                self._kicked = False

    def _needed(self) -> int:
        """Bytes to write now: down to the low watermark once past the high one, and at
        least what waiting puts asked for."""
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
        bm = self.bm
        with self.memory.lock:
            with self._lock:
                busy = set(self._inflight)
            cands = bm._async_candidates(exclude=busy)
            if not cands:
                return False
            for_block = self._for_block
            victims = bm.policy.select_victims(min(need, sum(cands.values())), for_block, cands)
            if not victims:  # all or nothing could not free that much: at least one block
                victims = bm.policy.select_victims(min(cands.values()), for_block, cands) or []
            batch = [(v, bm.memory_store.get(v)) for v in victims if v in cands]
            batch = [(v, e) for v, e in batch if e is not None]
            with self._lock:
                self._inflight.update((v, e.size) for v, e in batch)
        if not batch:
            return False
        try:
            for bid, entry in batch:
                if self._stopping or self.failed is not None:
                    break
                try:
                    bm._write_for_eviction(bid, entry)
                except Exception as exc:  # noqa: BLE001 - any failure: keep the block, go synchronous
                    self._fail(bid, exc)
                    break
                bm._finish_async_drop(bid, entry)
                with self._lock:
                    self._inflight.pop(bid, None)
        finally:
            with self._lock:
                for bid, _ in batch:
                    self._inflight.pop(bid, None)
        return True

    def _fail(self, bid: Any, exc: BaseException) -> None:
        self.failed = f"{type(exc).__name__}: {exc}"
        self.bm.metrics.add(eviction_failures=1)
        self.bm.events.post("EvictionFailed", block=str(bid), dataset_id=getattr(bid, "dataset_id", None),
                            reason=self.failed, kept="in memory", fallback="synchronous eviction")
        self.memory.wake()  # waiting puts stop waiting and evict synchronously
