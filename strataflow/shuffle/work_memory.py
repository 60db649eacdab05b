"""A work structure's execution memory: what it is granted, and what it is estimated to hold.

Every structure a task builds that holds more than one record (the aggregator's combine
dict, the external sorter's buffer, the grouper's groups) checks its memory out of the
executor's :class:`~strataflow.storage.memory.unified.MemoryManager` through an
:class:`ExecutionGrant`: when its estimated size passes what it holds, it asks for twice
its size (Spark's growth rule); when the manager grants less than the size (the task's
1/N share is used, or storage keeps its protected region), the structure spills and
releases its grant. A :class:`SizeTracker` keeps the estimate cheap: it measures at
geometrically spaced update counts and extrapolates in between (Spark's SizeTracker).
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["CHECK_EVERY", "ExecutionGrant", "SizeTracker"]

#: records inserted between two memory checks: the most a structure grows beyond its grant
CHECK_EVERY = 512


class ExecutionGrant:
    """The execution memory one structure of one task holds."""

    def __init__(self, memory: Any, task_id: int) -> None:
        self.memory = memory
        self.task_id = task_id
        self.granted = 0
        #: the largest estimate that was covered (the structure's accounted peak)
        self.peak_covered = 0

    def cover(self, estimate: int) -> bool:
        """True when ``estimate`` bytes are granted, asking for ``2 * estimate`` in all when
        more is needed; False means: spill."""
        if estimate > self.granted:
            self.granted += self.memory.acquire_execution(2 * estimate - self.granted, self.task_id)
        if estimate <= self.granted:
            self.peak_covered = max(self.peak_covered, estimate)
            return True
        return False

    def release(self) -> None:
        if self.granted:
            self.memory.release_execution(self.granted, self.task_id)
            self.granted = 0


class SizeTracker:
    """Spark's SizeTracker: ``measure()`` (a full estimate) runs at update counts spaced
    by x1.1, and in between the size is extrapolated from the bytes per update of the
    last two measurements, so measuring stays a small fraction of the work however large
    the structure grows."""

    def __init__(self, measure: Callable[[], int]) -> None:
        self.measure = measure
        self.reset()

    def reset(self) -> None:
        self.updates = 0
        self._next_sample = CHECK_EVERY
        self._last_size = self.measure()
        self._last_updates = 0
        self._bytes_per_update = 0.0

    def estimate(self, new_updates: int) -> int:
        """The structure's size after ``new_updates`` more insertions."""
        self.updates += new_updates
        if self.updates < self._next_sample:
            return int(self._last_size + (self.updates - self._last_updates) * self._bytes_per_update)
        size = self.measure()
        if self.updates > self._last_updates:
            self._bytes_per_update = max(0.0, (size - self._last_size) / (self.updates - self._last_updates))
        self._last_size, self._last_updates = size, self.updates
        self._next_sample = int(self.updates * 1.1) + 1
        return size
