"""Peak resident memory of this process while a block of code runs (psutil, sampled).

It counts anonymous resident memory (RSS less the file-backed and shared part, psutil's
``shared``), because pages of memory-mapped input files count in RSS when touched, though
the kernel can drop them at will.

Accounted cache sizes are what the budget bounds; this is the check that the process
itself stays near them: the figure to compare with ``memory`` plus the stated overhead
(the blocks that running tasks hold, their working memory, the interpreter).
"""

from __future__ import annotations

import threading

import psutil

__all__ = ["PeakRss"]


class PeakRss:
    """``with PeakRss() as p: ...`` then ``p.start``, ``p.peak`` and ``p.growth`` in bytes."""

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self._proc = psutil.Process()
        self._stop = threading.Event()
        self.start = self.peak = 0

    def _anon(self) -> int:
        info = self._proc.memory_info()
        return info.rss - getattr(info, "shared", 0)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._anon())

    def __enter__(self) -> "PeakRss":
        self.start = self.peak = self._anon()
        self._thread = threading.Thread(target=self._sample, name="strataflow-rss", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._anon())

    @property
    def growth(self) -> int:
        return self.peak - self.start
