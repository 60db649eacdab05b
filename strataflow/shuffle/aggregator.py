"""Combining values by key within the execution-memory budget (Spark's
ExternalAppendOnlyMap).

Values are combined in a dict. Every so often the dict's size is estimated by sampling
(``work_memory.SizeTracker``) and the task asks the MemoryManager for the growth
(``work_memory.ExecutionGrant``); when the grant falls short, the dict is written to a
spill file as a run sorted by key hash (``spill_files.py``: authenticated chunks in the
executor's shuffle dirs), and emptied. At the end the runs and the dict are merged by
hash with ``heapq.merge`` (keys need not be orderable: equal hashes are grouped and
compared for equality), so memory holds one chunk per run and one hash group.

A spill file that fails its authentication raises :class:`SpillCorrupt`, which fails the
task, and its retry aggregates afresh.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from strataflow.shuffle.partitioner import portable_hash
from strataflow.shuffle.spill_files import CHUNK, SpillCorrupt, SpillFiles
from strataflow.shuffle.work_memory import CHECK_EVERY, ExecutionGrant, SizeTracker
from strataflow.storage.blocks.sizing import estimate_size

__all__ = ["Aggregator", "ExternalAggregator", "SpillCorrupt"]


@dataclass(frozen=True)
class Aggregator:
    create_combiner: Callable[[Any], Any]
    merge_value: Callable[[Any, Any], Any]
    merge_combiners: Callable[[Any, Any], Any]


class ExternalAggregator:
    """Combines ``(key, value)`` or ``(key, combiner)`` pairs, spilling sorted runs."""

    def __init__(self, agg: Aggregator, memory, task_id: int, spill_dir: str | None = None,
                 on_spill: Callable[[int], None] | None = None) -> None:
        import tempfile

        self.agg = agg
        self.data: dict = {}
        self.grant = ExecutionGrant(memory, task_id)
        self.files = SpillFiles(spill_dir or tempfile.gettempdir(), on_spill)
        self.spills: list[str] = []
        self._since_check = 0
        self._sampled: collections.deque = collections.deque(maxlen=16)
        self._tracker = SizeTracker(self.estimated_size)

    @property
    def spilled_bytes(self) -> int:
        return self.files.spilled_bytes

    @property
    def granted(self) -> int:
        return self.grant.granted

    # -- insertion -------------------------------------------------------------------
    def insert_values(self, pairs) -> None:
        data, create, merge = self.data, self.agg.create_combiner, self.agg.merge_value
        for k, v in pairs:
            if k in data:
                data[k] = merge(data[k], v)
            else:
                data[k] = create(v)
            self._since_check += 1
            if self._since_check >= CHECK_EVERY:
                self._maybe_spill(k)
                data = self.data

    def insert_combiners(self, pairs) -> None:
        data, merge = self.data, self.agg.merge_combiners
        for k, c in pairs:
            if k in data:
                data[k] = merge(data[k], c)
            else:
                data[k] = c
            self._since_check += 1
            if self._since_check >= CHECK_EVERY:
                self._maybe_spill(k)
                data = self.data

    def estimated_size(self) -> int:
        """The dict's size: its table plus its length times the mean deep size of a few
        sampled entries, re-measured now (combiners such as group lists grow in place)."""
        live = [k for k in self._sampled if k in self.data]
        if not live:
            return sys.getsizeof(self.data)
        per = sum(estimate_size(k, 3) + estimate_size(self.data[k], 3) for k in live) / len(live)
        return int(sys.getsizeof(self.data) + len(self.data) * per)

    def _maybe_spill(self, new_key) -> None:
        self._sampled.append(new_key)
        est = self._tracker.estimate(self._since_check)
        self._since_check = 0
        if not self.grant.cover(est):
            self._spill()

    def _spill(self) -> None:
        items = sorted(self.data.items(), key=lambda kv: portable_hash(kv[0]))
        self.spills.append(self.files.write_run(items))
        self.data = {}
        self.grant.release()
        self._tracker.reset()

    # -- output ----------------------------------------------------------------------
    def items(self) -> Iterator[tuple[Any, Any]]:
        """Every key once with its combiner; spill files are deleted once read."""
        if not self.spills:
            yield from self.data.items()
            self._release()
            return
        try:
            # the merge holds one chunk of each run besides the dict: checked out too
            size = self.estimated_size()
            per = size / len(self.data) if self.data else 64.0
            self.grant.cover(size + int(len(self.spills) * CHUNK * per))
            runs = [self.files.read(p) for p in self.spills]
            mem = sorted(self.data.items(), key=lambda kv: portable_hash(kv[0]))
            self.data = {}
            keyed = [((portable_hash(k), k, c) for k, c in run) for run in runs + [iter(mem)]]
            merged = heapq.merge(*keyed, key=lambda t: t[0])
            merge = self.agg.merge_combiners
            for _, group in itertools.groupby(merged, key=lambda t: t[0]):
                found: list[list] = []
                for _, k, c in group:
                    for slot in found:
                        if slot[0] == k:
                            slot[1] = merge(slot[1], c)
                            break
                    else:
                        found.append([k, c])
                for k, c in found:
                    yield k, c
        finally:
            self._release()

    def _release(self) -> None:
        self.files.remove_all()
        self.spills = []
        self.grant.release()
