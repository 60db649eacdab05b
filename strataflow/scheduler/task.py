"""Tasks: the work on one partition, and the context it runs in.

A ShuffleMapTask computes a partition of the map-side dataset and writes it, split into
buckets, as one map output; a ResultTask computes a partition and applies the action's
function to it. Both count what the papers measure per task: time, records, bytes
shuffled, bytes spilled and GC seconds.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..batch import num_rows
from ..storage.task_reads import HeldBlock
from ..shuffle import Aggregator, ExternalAggregator, split_into_buckets

if TYPE_CHECKING:
    from ..dataset import Dataset
    from ..lineage import ShuffleDependency
    from ..context import Context

__all__ = ["TaskContext", "ShuffleMapTask", "ResultTask", "TaskMetrics"]

_task_ids = itertools.count()


@dataclass
class TaskMetrics:
    records_out: int = 0
    shuffle_bytes_written: int = 0
    shuffle_bytes_read: int = 0
    spill_bytes: int = 0


@dataclass
class TaskContext:
    """What a running task can reach: its identity, metrics and the shared services."""

    runtime: "Context"
    stage_id: int
    partition: int
    attempt: int
    task_id: int = field(default_factory=lambda: next(_task_ids))
    metrics: TaskMetrics = field(default_factory=TaskMetrics)
    #: The persisted block this task read last and the value it was handed: a second
    #: read of it is served from here (``storage/task_reads.py``).
    held: HeldBlock = field(default_factory=HeldBlock)

    def read_shuffle(self, shuffle_id: int, reduce_id: int, num_maps: int) -> Iterator[Any]:
        def count(n: int) -> None:
            self.metrics.shuffle_bytes_read += n

        return self.runtime.shuffle.read(shuffle_id, reduce_id, num_maps, on_bytes=count)

    def aggregator(self, agg: Aggregator) -> ExternalAggregator:
        def spilled(n: int) -> None:
            self.metrics.spill_bytes += n

        return ExternalAggregator(
            agg, self.runtime.memory, self.task_id, self.runtime.spill_dir(self.task_id), on_spill=spilled
        )


class ShuffleMapTask:
    kind = "shuffle-map"

    def __init__(self, dataset: "Dataset", dep: "ShuffleDependency", partition: int) -> None:
        self.dataset = dataset
        self.dep = dep
        self.partition = partition

    def run(self, tc: TaskContext) -> Any:
        from ..lineage import map_side_combine

        value = self.dataset.iterator(self.partition, tc)
        dep = self.dep
        if dep.aggregator is not None and dep.map_side_combine:
            value = map_side_combine(value, dep.aggregator, tc)
        buckets = split_into_buckets(value, dep.num_partitions, dep.partitioner, self.partition)
        out = tc.runtime.shuffle.write(dep.shuffle_id, self.partition, buckets)
        tc.metrics.shuffle_bytes_written += out.total_bytes
        tc.metrics.records_out += num_rows(value)
        return None


class ResultTask:
    kind = "result"

    def __init__(self, dataset: "Dataset", func: Callable[[TaskContext, Any], Any], partition: int) -> None:
        self.dataset = dataset
        self.func = func
        self.partition = partition

    def run(self, tc: TaskContext) -> Any:
        value = self.dataset.iterator(self.partition, tc)
        tc.metrics.records_out += num_rows(value) if hasattr(value, "__len__") or hasattr(value, "num_rows") else 0
        return self.func(tc, value)
