"""Peak anonymous resident memory of this process and its executor processes while a block
of code runs (psutil, sampled).

It counts anonymous resident memory (RSS less the file-backed and shared part, psutil's
``shared``), because pages of memory-mapped input files and mapped cache segments count in
RSS when touched, though the kernel can drop them at will. With executor processes the
figure is the sum over the driver and every process below it, taken at the same instant:
what the application as a whole holds.

Accounted cache sizes are what the budget bounds; this is the check that the application
itself stays near them: ``peak`` is compared with ``memory`` plus the stated overhead (the
interpreters' fixed footprint, and per task slot the block a running task holds and its
working memory; see ``benchmarks/memory_bound.py`` and the README's memory section).
"""

from __future__ import annotations

import threading

import psutil

__all__ = ["PeakRss", "anon_bytes"]


def _anon(proc: psutil.Process) -> int:
    info = proc.memory_info()
    return info.rss - getattr(info, "shared", 0)


def anon_bytes(proc: psutil.Process | None = None, *, children: bool = True) -> int:
    """Anonymous resident bytes of ``proc`` (this process by default) and, with
    ``children``, of every process below it; a process that exits meanwhile counts 0."""
    proc = proc or psutil.Process()
    total = _anon(proc)
    if children:
        for child in proc.children(recursive=True):
            try:
                total += _anon(child)
            except psutil.Error:  # exited between the listing and the read
                pass
    return total


class PeakRss:
    """``with PeakRss() as p: ...`` then ``p.start``, ``p.peak`` and ``p.growth`` in bytes.

    ``children=False`` watches this process alone (the threads backend's whole application)."""

    def __init__(self, interval: float = 0.02, *, children: bool = True) -> None:
        self.interval = interval
        self.children = children
        self._proc = psutil.Process()
        self._stop = threading.Event()
        self.start = self.peak = 0

    def _anon(self) -> int:
        return anon_bytes(self._proc, children=self.children)

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
