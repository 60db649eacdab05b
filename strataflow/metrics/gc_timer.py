"""Garbage-collection time, measured with ``gc.callbacks``.

The papers blame cached objects for inflated GC time; to show it we need the seconds the
collector ran, not only how often. The timer is process-wide (the collector stops every
thread), so a task's GC seconds are the collector's seconds while the task ran.
"""

from __future__ import annotations

import gc
import threading
import time

__all__ = ["GcTimer", "gc_timer"]


class GcTimer:
    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0
        self._start: float | None = None
        self._users = 0
        self._lock = threading.Lock()

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        elif phase == "stop" and self._start is not None:
            self.seconds += time.perf_counter() - self._start
            self.collections += 1
            self._start = None

    def acquire(self) -> None:
        """Start timing (reference-counted: one Context after another shares one timer)."""
        with self._lock:
            if self._users == 0 and self._callback not in gc.callbacks:
                gc.callbacks.append(self._callback)
            self._users += 1

    def release(self) -> None:
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users == 0 and self._callback in gc.callbacks:
                gc.callbacks.remove(self._callback)

    def snapshot(self) -> tuple[float, int]:
        return self.seconds, self.collections


gc_timer = GcTimer()
