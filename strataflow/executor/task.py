"""Tasks: the work on one partition, and the context it runs in.

A ShuffleMapTask computes a partition of the map-side dataset and writes it, split into
buckets, as one map output (returned, for the driver's map-output tracker); a ResultTask
computes a partition and applies the action's function to it. Both run on an executor
(``executor/core.py``), and reach only that executor's services. Both count what the papers measure per task: time, records, bytes
shuffled, bytes spilled and GC seconds.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

from strataflow.common.batch import num_rows
from strataflow.storage.task_reads import HeldBlock
from strataflow.shuffle import (Aggregator, ExternalAggregator, ExternalGrouper, ExternalSorter, FetchFailed, Grouping,
                                MapOutput, SortOrder, read_buckets, split_nonempty)

if TYPE_CHECKING:
    from strataflow.dataset import Dataset
    from strataflow.executor.runtime import ExecutorRuntime
    from strataflow.executor.work import StageWork
    from strataflow.lineage import ShuffleDependency

__all__ = ["TaskContext", "ShuffleMapTask", "ResultTask", "TaskMetrics"]


@dataclass
class TaskMetrics:
    records_out: int = 0
    shuffle_bytes_written: int = 0
    shuffle_bytes_read: int = 0
    spill_bytes: int = 0


@dataclass
class TaskContext:
    """What a running task can reach: its identity, its stage, metrics and its
    executor's services (``runtime``)."""

    runtime: "ExecutorRuntime"
    stage: "StageWork"
    partition: int
    attempt: int
    task_id: int
    #: set when the driver cancels the stage: the task stops at its next partition read
    cancelled: threading.Event | None = None
    metrics: TaskMetrics = field(default_factory=TaskMetrics)
    #: The persisted block this task read last and the value it was handed: a second
    #: read of it is served from here (``storage/task_reads.py``).
    held: HeldBlock = field(default_factory=HeldBlock)
    #: the persisted blocks the task asked for (reported to the driver for locality)
    touched: list = field(default_factory=list)
    #: blocks it will read that other executors hold (``storage/peer_blocks.py``)
    peers: dict | None = None
    #: the spill files of the task's work structures (``shuffle/spill_files.py``)
    spills: list = field(default_factory=list)

    @property
    def stage_id(self) -> int:
        return self.stage.stage_id

    def read_shuffle(self, shuffle_id: int, reduce_id: int, num_maps: int) -> Iterator[Any]:
        """The task's bucket of every map output, read straight from the files the
        map-output tracker named (on this machine, whichever executor wrote them; on a
        cluster, an output of another node through its writer: ``runtime.read_bucket``)."""
        def count(n: int) -> None:
            self.metrics.shuffle_bytes_read += n

        outputs = self.stage.map_outputs.get(shuffle_id)
        if outputs is None or len(outputs) != num_maps:
            raise FetchFailed(shuffle_id, 0, "the stage was sent no map outputs for this shuffle")
        return read_buckets(outputs, shuffle_id, reduce_id, on_bytes=count, read=self.runtime.read_bucket)

    def _spilled(self, n: int) -> None:
        """A work structure of this task wrote ``n`` bytes of spill: counted in the task's
        metrics (its TaskEnd event and the stage's totals); with a memory split, the
        spill's round trip is a heap miss (execution was short of heap)."""
        self.metrics.spill_bytes += n
        split = self.runtime.block_manager.split
        if split is not None:
            split.miss("heap", None, n, split.spill_cost(n))

    def aggregator(self, agg: Aggregator) -> ExternalAggregator:
        """A combine-by-key structure within this task's execution memory."""
        rt = self.runtime
        return self._owned(ExternalAggregator(agg, rt.memory, self.task_id, rt.spill_dir(self.task_id),
                                              on_spill=self._spilled))

    def sorter(self, order: SortOrder) -> ExternalSorter:
        """An external sort within this task's execution memory."""
        rt = self.runtime
        return self._owned(ExternalSorter(order, rt.memory, self.task_id, rt.spill_dir(self.task_id),
                                          on_spill=self._spilled))

    def grouper(self, grouping: Grouping) -> ExternalGrouper:
        """A group-by-key (or cogroup) structure within this task's execution memory, whose
        groups may be larger than it."""
        rt = self.runtime
        return self._owned(ExternalGrouper(grouping, rt.memory, self.task_id, rt.spill_dir(self.task_id),
                                           on_spill=self._spilled))

    def _owned(self, structure: Any) -> Any:
        self.spills.append(structure.files)
        return structure

    def discard_spills(self) -> None:
        """A failed task's spill files go at once: its exception's frames may keep its
        structures and groups alive until the executor's garbage collector runs. A group's
        file stays with its group when the task touched a persisted block (a cached
        partition may hold the group)."""
        cached = bool(self.touched)
        for files in self.spills:
            if cached:
                files.remove_unkept()
            else:
                files.remove_all()
        self.spills.clear()


class ShuffleMapTask:
    kind = "shuffle-map"

    def __init__(self, dataset: "Dataset", dep: "ShuffleDependency", partition: int) -> None:
        self.dataset = dataset
        self.dep = dep
        self.partition = partition

    def run(self, tc: TaskContext) -> MapOutput:
        try:
            return self._run(tc)
        except BaseException:
            tc.discard_spills()
            raise

    def _run(self, tc: TaskContext) -> MapOutput:
        from strataflow.lineage import map_side_combine

        value = self.dataset.iterator(self.partition, tc)
        dep = self.dep
        if dep.aggregator is not None and dep.map_side_combine:
            value = map_side_combine(value, dep.aggregator, tc)
        buckets = split_nonempty(value, dep.num_partitions, dep.partitioner, self.partition)
        out = tc.runtime.shuffle.write(dep.shuffle_id, self.partition, buckets, dep.num_partitions)
        tc.metrics.shuffle_bytes_written += out.total_bytes
        tc.metrics.records_out += num_rows(value)
        return out


class ResultTask:
    kind = "result"

    def __init__(self, dataset: "Dataset", func: Callable[[TaskContext, Any], Any], partition: int) -> None:
        self.dataset = dataset
        self.func = func
        self.partition = partition

    def run(self, tc: TaskContext) -> Any:
        try:
            value = self.dataset.iterator(self.partition, tc)
            tc.metrics.records_out += num_rows(value) if hasattr(value, "__len__") or hasattr(value, "num_rows") else 0
            return self.func(tc, value)
        except BaseException:
            tc.discard_spills()
            raise
