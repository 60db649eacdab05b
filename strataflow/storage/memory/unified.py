"""The unified memory budget shared by execution (shuffle and aggregation buffers) and
storage (cached blocks), after Spark's UnifiedMemoryManager.

Rules (Spark's, stated as invariants on used bytes ``S`` storage and ``E`` execution,
with ``S + E <= total`` always):

- Storage may use any free memory, including memory execution does not use right now
  ("borrowing"); to make room for a block it may evict other *blocks* (the block
  manager's policy picks them), never execution memory.
- Execution may use any free memory, and when that is short it takes memory back by
  evicting blocks, but only while storage holds more than its protected region
  ``storage_fraction * total``.
- Each of N active tasks may hold at most 1/N of the memory execution can reach, so one
  greedy task cannot starve the others, and a task waits (rather than spills) while it
  has less than 1/(2N), so spill files do not become tiny.

One re-entrant lock guards every change of these figures; the block manager takes the
same lock for its memory store, as Spark synchronizes on its memory manager.

Eviction runs in two phases, so that no disk I/O happens under that lock (every memory
hit takes it; Spark's drop, which writes under it, makes a hit wait for a disk write):
the *evictor* (the block manager) ``select``s victims under the lock, which marks them
(they stay in memory, readable, and accounted), then this manager releases the lock and
the evictor ``drop``s them: serializes and writes each one, and takes the lock again
only to release a victim that is still the entry it chose. The bytes of a victim are
free only once it is gone, so the budget holds at every instant; a caller whose freed
bytes were taken by another thread meanwhile selects again, a bounded number of times.

The total may change while running (:meth:`MemoryManager.resize`, called by the memory
split, ``storage/memory/split.py``): shrinking evicts cached blocks down to the new total
first and only then lowers it, so used bytes never exceed the total, and it never takes
memory a task holds for execution (the shrink stops short instead).

Asynchronous eviction (a *reclaimer*, the block manager's background writer) changes one
thing: a block put that finds no room first asks the reclaimer for the missing bytes and
waits, with the lock released, only until that many bytes are free or ``reclaim_wait_s``
has passed, then evicts synchronously whatever is still missing. The wait is bounded and
abandoned as soon as the reclaimer stops helping (it failed, or has nothing to write), so
a put can be delayed but never deadlocked. Execution memory never waits for the writer:
its evictions stay synchronous, as before.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol, Sequence

__all__ = ["MemoryManager", "Reclaimer", "Evictor"]

_EVICTION_ROUNDS = 4  # select-then-drop rounds one request may make before it takes what is free


class Evictor(Protocol):
    """Frees storage memory by dropping blocks (the block manager)."""

    def select(self, space: int, for_block: Any) -> Sequence:
        """Under the lock: chooses and marks victims freeing ``space`` bytes for
        ``for_block`` (None: execution memory asks); empty when none may go."""

    def drop(self, victims: Sequence) -> int:
        """Without the lock: writes and releases the victims; returns the bytes freed."""


class Reclaimer(Protocol):
    """Frees storage memory off the caller's thread (the asynchronous eviction writer)."""

    def request(self, num_bytes: int, block_id: Any) -> bool:
        """Asks for ``num_bytes`` to be freed; False if it cannot help (then do not wait)."""

    def withdraw(self, num_bytes: int) -> None:
        """The asker stopped waiting for ``num_bytes`` (got them, or gave up)."""

    def helping(self) -> bool:
        """Still worth waiting for (alive, not failed)."""


class MemoryManager:
    def __init__(self, total: int, storage_fraction: float = 0.5) -> None:
        self.total = int(total)
        self.storage_fraction = float(storage_fraction)
        self.storage_region = int(total * storage_fraction)
        self.lock = threading.RLock()
        self._cond = threading.Condition(self.lock)
        self._held: dict[int, int] = {}
        self._active: set[int] = set()
        self.storage_used = 0
        self.peak_execution = 0
        self.peak_storage = 0
        self._window_peak = 0  # the most used (storage + execution) since take_window_peak()
        self._evictor: Evictor | None = None
        self._reclaimer: Reclaimer | None = None
        self.reclaim_wait_s = 1.0
        self.reclaim_waited_s = 0.0  # total time puts waited for the reclaimer

    def set_reclaimer(self, reclaimer: "Reclaimer | None", wait_s: float = 1.0) -> None:
        """The asynchronous writer that a put short of room waits for (at most ``wait_s``)."""
        with self.lock:
            self._reclaimer = reclaimer
            self.reclaim_wait_s = float(wait_s)

    def wake(self) -> None:
        """Wakes every waiter to look again (the reclaimer freed bytes or gave up)."""
        with self.lock:
            self._cond.notify_all()

    def set_evictor(self, evictor: Evictor) -> None:
        """The block manager, which drops blocks to free storage memory."""
        self._evictor = evictor

    # -- task lifecycle -------------------------------------------------------------
    def task_started(self, task_id: int) -> None:
        with self.lock:
            self._active.add(task_id)
            self._held.setdefault(task_id, 0)

    def task_finished(self, task_id: int) -> None:
        """Releases whatever the task still holds (a failed task must not leak memory)."""
        with self.lock:
            self._active.discard(task_id)
            self._held.pop(task_id, None)
            self._cond.notify_all()

    # -- figures ------------------------------------------------------------------------
    @property
    def execution_used(self) -> int:
        with self.lock:
            return sum(self._held.values())

    @property
    def free(self) -> int:
        with self.lock:
            return self.total - self.storage_used - sum(self._held.values())

    def held_by(self, task_id: int) -> int:
        with self.lock:
            return self._held.get(task_id, 0)

    def _note_use(self) -> None:
        """Under the lock: keeps the window's peak use current."""
        used = self.storage_used + sum(self._held.values())
        if used > self._window_peak:
            self._window_peak = used

    def take_window_peak(self) -> int:
        """The most memory used at once (storage + execution) since the last call; the
        window starts over from what is used now."""
        with self.lock:
            peak = self._window_peak
            self._window_peak = self.storage_used + sum(self._held.values())
            return max(peak, self._window_peak)

    def resize(self, new_total: int) -> int:
        """Sets the total to ``new_total`` or as near as it can get; returns the total now.
        Growing is immediate. Shrinking first evicts blocks (the evictor's policy picks
        them, as for execution memory) until storage and execution fit in the new total,
        then lowers it: used bytes never exceed the total. Memory a task holds for
        execution is never taken: the total stops at what is used after evicting all that
        may go. Must be called without the lock held (victims are written with it
        released)."""
        new_total = max(0, int(new_total))
        for _ in range(_EVICTION_ROUNDS + 1):
            victims: Sequence = ()
            with self.lock:
                used = self.storage_used + sum(self._held.values())
                if new_total >= self.total or used <= new_total:
                    self._set_total(new_total)
                    return self.total
                if self._evictor is not None and self.storage_used > 0:
                    victims = self._evictor.select(used - new_total, None)
                if not victims:
                    self._set_total(max(new_total, used))
                    return self.total
            self._evictor.drop(victims)
        with self.lock:
            self._set_total(max(new_total, self.storage_used + sum(self._held.values())))
            return self.total

    def _set_total(self, total: int) -> None:
        """Under the lock; Spark's protected storage region keeps its fraction."""
        self.total = total
        self.storage_region = int(total * self.storage_fraction)
        self._cond.notify_all()

    # -- storage memory -------------------------------------------------------------------
    def acquire_storage(self, num_bytes: int, block_id: Any = None, evict: bool = True) -> bool:
        """Reserves ``num_bytes`` for a block, evicting other blocks if needed and allowed
        (never execution memory). False when it cannot fit; then nothing was evicted by
        Spark's rule (the policy returns no victims unless they free enough). Must be
        called without this manager's lock held: victims are written with it released."""
        num_bytes = max(0, int(num_bytes))
        for _ in range(_EVICTION_ROUNDS):
            with self.lock:
                if num_bytes > self.total - sum(self._held.values()):
                    return False
                short = num_bytes - self.free
                if short > 0 and evict and block_id is not None and self._reclaimer is not None:
                    short = self._wait_for_reclaimer(num_bytes, short, block_id)
                if short <= 0 and num_bytes <= self.free:
                    self.storage_used += num_bytes
                    self.peak_storage = max(self.peak_storage, self.storage_used)
                    self._note_use()
                    return True
                if not evict or self._evictor is None:
                    return False
                victims = self._evictor.select(short, block_id)
                if not victims:
                    return False
            self._evictor.drop(victims)  # lock released: memory hits go on meanwhile
        return False

    def _wait_for_reclaimer(self, num_bytes: int, short: int, block_id: Any) -> int:
        """Waits (lock released) until ``num_bytes`` are free, the reclaimer stops helping or
        the bound passes; returns the bytes still missing. Called with the lock held."""
        reclaimer = self._reclaimer
        if reclaimer is None or not reclaimer.request(short, block_id):
            return short
        t0 = time.monotonic()
        deadline = t0 + self.reclaim_wait_s
        try:
            while True:
                missing = num_bytes - (self.total - self.storage_used - sum(self._held.values()))
                left = deadline - time.monotonic()
                if missing <= 0 or left <= 0 or not reclaimer.helping():
                    return missing
                self._cond.wait(left)
        finally:
            reclaimer.withdraw(short)
            self.reclaim_waited_s += time.monotonic() - t0

    def release_storage(self, num_bytes: int) -> None:
        with self.lock:
            self.storage_used = max(0, self.storage_used - max(0, int(num_bytes)))
            self._cond.notify_all()

    # -- execution memory -----------------------------------------------------------------
    def acquire_execution(self, num_bytes: int, task_id: int) -> int:
        """Grants up to ``num_bytes`` to the task; returns what was granted (maybe 0)."""
        if num_bytes <= 0:
            return 0
        rounds = 0
        while True:
            victims: Sequence = ()
            with self.lock:
                self._active.add(task_id)
                self._held.setdefault(task_id, 0)
                execution = sum(self._held.values())
                free = self.total - self.storage_used - execution
                reclaimable = self.storage_used - self.storage_region
                if (free < num_bytes and reclaimable > 0 and self._evictor is not None
                        and rounds < _EVICTION_ROUNDS):
                    rounds += 1
                    victims = self._evictor.select(min(num_bytes - free, reclaimable), None)
                if not victims:
                    grant = self._grant(num_bytes, task_id, execution, free)
                    if grant is not None:
                        return grant
                    continue  # someone released memory: try again
            self._evictor.drop(victims)  # lock released: memory hits go on meanwhile

    def _grant(self, num_bytes: int, task_id: int, execution: int, free: int) -> int | None:
        """Spark's fair share (under the lock): at most 1/N of the reachable memory each,
        and a task under 1/(2N) waits for a release rather than take a sliver (None: it
        was woken by one, look again)."""
        n = max(1, len(self._active))
        reachable = self.total - min(self.storage_used, self.storage_region)
        held = self._held[task_id]
        max_share = reachable // n
        min_share = reachable // (2 * n)
        grant = max(0, min(num_bytes, max_share - held, free))
        if grant < num_bytes and held + grant < min_share and free < num_bytes:
            if self._cond.wait(timeout=0.5):
                return None
            grant = max(0, min(num_bytes, free))  # waited long enough: take what there is
        self._held[task_id] = held + grant
        self.peak_execution = max(self.peak_execution, execution + grant)
        self._note_use()
        return grant

    def release_execution(self, num_bytes: int, task_id: int) -> None:
        with self.lock:
            held = self._held.get(task_id, 0)
            self._held[task_id] = max(0, held - max(0, num_bytes))
            self._cond.notify_all()
