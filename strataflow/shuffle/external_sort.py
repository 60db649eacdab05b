"""Sorting a task's records within its execution memory (Spark's ExternalSorter).

Records are appended to a buffer whose size a ``SizeTracker`` estimates from a few
sampled records; the buffer's memory is checked out of the task's share of execution
memory (``work_memory.ExecutionGrant``). When the grant falls short, the buffer is sorted
(stably) and written as a run to a spill file in the executor's shuffle dirs, and the
grant is released. The sorted output is ``heapq.merge`` of the runs and the last buffer,
streamed: memory holds one chunk of each run. ``heapq.merge`` breaks ties by the order of
its inputs, and the runs are given in the order they were written, so the sort is
stable (equal keys keep their input order) in either direction, as ``sorted`` is.
"""

from __future__ import annotations

import collections
import heapq
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from strataflow.shuffle.spill_files import CHUNK, SpillFiles
from strataflow.shuffle.work_memory import CHECK_EVERY, ExecutionGrant, SizeTracker
from strataflow.storage.blocks.sizing import estimate_size

__all__ = ["ExternalSorter", "SortOrder"]


@dataclass(frozen=True)
class SortOrder:
    """How a shuffle's reduce side orders its records: by ``key(record)``, descending
    when ``reverse`` (``sort_by_key``, ``repartition_and_sort_within_partitions``)."""

    key: Callable[[Any], Any]
    reverse: bool = False


class ExternalSorter:
    """Sorts the records inserted, spilling sorted runs when execution memory is short."""

    def __init__(self, order: SortOrder, memory: Any, task_id: int, spill_dir: str,
                 on_spill: Callable[[int], None] | None = None) -> None:
        self.order = order
        self.buffer: list = []
        self.grant = ExecutionGrant(memory, task_id)
        self.files = SpillFiles(spill_dir, on_spill)
        self.runs: list[str] = []
        self._sampled: collections.deque = collections.deque(maxlen=16)
        self._tracker = SizeTracker(self.estimated_size)

    @property
    def spilled_bytes(self) -> int:
        return self.files.spilled_bytes

    def estimated_size(self) -> int:
        """The buffer's table plus its length times the mean deep size of the records
        sampled at the last checks."""
        if not self._sampled:
            return sys.getsizeof(self.buffer)
        per = sum(estimate_size(r, 3) for r in self._sampled) / len(self._sampled)
        return int(sys.getsizeof(self.buffer) + len(self.buffer) * per)

    def insert_all(self, records: Iterable[Any]) -> None:
        buf = self.buffer
        since = 0
        for r in records:
            buf.append(r)
            since += 1
            if since >= CHECK_EVERY:
                self._sampled.append(r)
                if not self.grant.cover(self._tracker.estimate(since)):
                    self._spill()
                    buf = self.buffer
                since = 0
        if since:
            self._tracker.estimate(since)

    def _spill(self) -> None:
        self.buffer.sort(key=self.order.key, reverse=self.order.reverse)
        self.runs.append(self.files.write_run(self.buffer))
        self.buffer = []
        self.grant.release()
        self._tracker.reset()

    def sorted_records(self) -> Iterator[Any]:
        """Every record inserted, in order; the spill files are removed once read (or
        when the iteration is abandoned)."""
        try:
            self.buffer.sort(key=self.order.key, reverse=self.order.reverse)
            if not self.runs:
                yield from self.buffer
                return
            # the merge holds one chunk of each run besides the buffer: checked out too
            per = self.estimated_size() / max(1, len(self.buffer)) if self.buffer else 64.0
            self.grant.cover(self.estimated_size() + int(len(self.runs) * CHUNK * per))
            runs = [self.files.read(p) for p in self.runs] + [iter(self.buffer)]
            yield from heapq.merge(*runs, key=self.order.key, reverse=self.order.reverse)
        finally:
            self.buffer = []
            self.files.remove_all()
            self.runs = []
            self.grant.release()
