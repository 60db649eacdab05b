"""The unified memory budget shared by execution (shuffle and aggregation buffers) and,
from the cache issue on, storage (cached blocks), after Spark's UnifiedMemoryManager.

This module holds the execution side. A task asks for bytes before it grows a buffer; a
request is granted in part or not at all when the pool is short, and the task then
spills what it holds to disk instead of growing past the budget. As in Spark, each of N
active tasks may hold at most 1/N of the execution pool, so one greedy task cannot starve
the others, and a task waits for memory rather than spilling while it has less than
1/(2N) (the minimum share that keeps spill files from becoming tiny).
"""

from __future__ import annotations

import threading

__all__ = ["MemoryManager"]


class MemoryManager:
    def __init__(self, total: int) -> None:
        self.total = int(total)
        self._held: dict[int, int] = {}
        self._active: set[int] = set()
        self._cond = threading.Condition()
        self.peak_execution = 0

    # -- task lifecycle -------------------------------------------------------------
    def task_started(self, task_id: int) -> None:
        with self._cond:
            self._active.add(task_id)
            self._held.setdefault(task_id, 0)

    def task_finished(self, task_id: int) -> None:
        """Releases whatever the task still holds (a failed task must not leak memory)."""
        with self._cond:
            self._active.discard(task_id)
            self._held.pop(task_id, None)
            self._cond.notify_all()

    # -- execution memory -----------------------------------------------------------
    @property
    def execution_used(self) -> int:
        with self._cond:
            return sum(self._held.values())

    def held_by(self, task_id: int) -> int:
        with self._cond:
            return self._held.get(task_id, 0)

    def acquire_execution(self, num_bytes: int, task_id: int) -> int:
        """Grants up to ``num_bytes`` to the task; returns what was granted (maybe 0)."""
        if num_bytes <= 0:
            return 0
        with self._cond:
            self._active.add(task_id)
            self._held.setdefault(task_id, 0)
            while True:
                n = max(1, len(self._active))
                free = self.total - sum(self._held.values())
                held = self._held[task_id]
                max_share = self.total // n
                min_share = self.total // (2 * n)
                grant = max(0, min(num_bytes, max_share - held, free))
                if grant < num_bytes and held + grant < min_share and free < num_bytes:
                    # Too little to make progress: wait for other tasks to release memory.
                    if not self._cond.wait(timeout=0.5):
                        # Timed out: take what there is rather than wait forever.
                        grant = max(0, min(num_bytes, free))
                    else:
                        continue
                self._held[task_id] = held + grant
                self.peak_execution = max(self.peak_execution, sum(self._held.values()))
                return grant

    def release_execution(self, num_bytes: int, task_id: int) -> None:
        with self._cond:
            held = self._held.get(task_id, 0)
            self._held[task_id] = max(0, held - max(0, num_bytes))
            self._cond.notify_all()
