"""A DataFrame task's share of its executor's execution memory, given to DuckDB.

Why: each partition's query runs in DuckDB (``engine.py``), whose hash aggregates, joins,
windows and sorts hold their state in memory unless given a ``memory_limit`` and a
``temp_directory``; without them a partition larger than memory takes the process down.
The memory is the executor's: its unified memory manager (``storage/memory/unified.py``)
divides the execution side among running tasks by Spark's rule (at most 1/N each while N
run), and evicts cached blocks beyond the storage region to make room. So a task checks
out its query's memory there, as Spark's ``UnsafeExternalSorter`` checks out pages from
its ``TaskMemoryManager``, DuckDB is limited to what was granted, and the grant is
released when the query ends.

How much to ask: DuckDB allocates as it goes and cannot ask for more half-way, so the
request is made up front, from what the task knows: ``INPUT_FACTOR`` times the bytes of
the partition's tables (a hash table or a sort holds about twice its input; the rest
is the output), at least ``FLOOR`` -- below 64 MiB DuckDB's operators cannot work at
all (a sort or a join's partitions need a few blocks each). The manager grants at most
the task's fair share; DuckDB spills beyond that. When the grant is below ``FLOOR``
(a small executor, or busy) DuckDB is still given ``FLOOR``: that much beyond its share
is what the executor's memory must allow (docs/caching.md).

A query that runs out even so -- a plan that pins several operators' state at once,
e.g. two joins' build sides under a sort -- runs again with twice the limit, checked out
the same way, up to the executor's whole memory; past that it fails with
``QueryOutOfMemory``, naming the sizes. A partition's query runs in the task's thread,
with one DuckDB thread (``engine.py``), so the task's share is the query's.

The spill files lie in the executor's spill directory of the application
(``ExecutorRuntime.spill_dir``: the shuffle dirs, apart from the cache's), so they go with
the application. The bytes DuckDB spilled are the task's ``spill_bytes``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Iterable

import pyarrow as pa

from strataflow.common.batch import materialize
from strataflow.lineage import MapPartitionsNode, ZippedPartitionsNode
from strataflow.pyspark.sql.engine import under_budget

if TYPE_CHECKING:
    from strataflow.dataset import Dataset
    from strataflow.executor.task import TaskContext

__all__ = ["TaskMemory", "FLOOR", "INPUT_FACTOR", "QueryPartitionsNode", "QueryZippedNode", "map_queries",
           "zip_queries", "within_task_memory"]

#: the least ``memory_limit`` DuckDB is given (its operators need a few blocks each)
FLOOR = 64 * 2**20
#: the memory asked for, per byte of the partition's input tables
INPUT_FACTOR = 3


def _nbytes(values: Iterable[Any]) -> int:
    n = 0
    for v in values:
        if isinstance(v, (pa.Table, pa.RecordBatch)):
            n += v.nbytes
    return n


class TaskMemory:
    """The execution memory one task's queries hold (a ``engine.QueryBudget``): checked
    out of ``memory`` (the executor's ``MemoryManager``) on entry, given back on exit."""

    def __init__(self, memory: Any, task_id: int, spill_dirs: list[str], spill_dir: str, input_bytes: int) -> None:
        self.memory = memory
        self.task_id = task_id
        self.spill_dir = spill_dir
        self._roots = [os.path.join(os.path.realpath(d), "") for d in spill_dirs]
        self.want = max(FLOOR, INPUT_FACTOR * max(0, int(input_bytes)))
        self.held = 0
        self.limit = FLOOR
        self.spilled = 0
        self.peak = 0
        self.grown = 0

    def __enter__(self) -> "TaskMemory":
        self.held = self.memory.acquire_execution(self.want, self.task_id)
        self.limit = max(FLOOR, self.held)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.held:
            self.memory.release_execution(self.held, self.task_id)
            self.held = 0

    def owns(self, directory: str) -> bool:
        return any(os.path.join(os.path.realpath(directory), "").startswith(r) for r in self._roots)

    def grow(self) -> bool:
        """Twice the limit, checked out of the manager as far as it grants, up to the
        executor's whole memory (never below ``2 * FLOOR``): False once there."""
        cap = max(2 * FLOOR, int(self.memory.total))
        if self.limit >= cap:
            return False
        new = min(cap, 2 * self.limit)
        if new > self.held:
            self.held += self.memory.acquire_execution(new - self.held, self.task_id)
        self.limit = new
        self.grown += 1
        return True


def within_task_memory(tc: "TaskContext | None", values: list[Any], f: Callable[[], Any]) -> Any:
    """``f()`` with the task's queries under its share of execution memory (as is, where
    there is no executor: a task run outside one)."""
    runtime = getattr(tc, "runtime", None)
    if getattr(runtime, "memory", None) is None:
        return f()
    budget = TaskMemory(runtime.memory, tc.task_id, runtime.shuffle_dirs, runtime.spill_dir(tc.task_id),
                        _nbytes(values))
    try:
        with budget, under_budget(budget):
            return f()
    finally:
        tc.metrics.spill_bytes += budget.spilled


class QueryPartitionsNode(MapPartitionsNode):
    """``f(value)`` on each partition, a function that runs DuckDB queries: under the
    task's share of execution memory."""

    def compute(self, split: int, tc: "TaskContext") -> Any:
        value = self.deps[0].parent.iterator(split, tc)
        return within_task_memory(tc, [value], lambda: materialize(self.f(split, value)))


class QueryZippedNode(ZippedPartitionsNode):
    """``f(a, b, ...)`` on the same partition of several datasets (a join, a set
    operation): its queries under the task's share of execution memory."""

    def compute(self, split: int, tc: "TaskContext") -> Any:
        values = [d.parent.iterator(split, tc) for d in self.deps]
        return within_task_memory(tc, values, lambda: materialize(self.f(*values)))


def map_queries(dataset: "Dataset", f: Callable[[Any], Any]) -> "Dataset":
    """``dataset.map_partitions(f)`` for an ``f`` that runs DuckDB queries."""
    from strataflow.dataset import Dataset

    return Dataset(dataset.ctx, QueryPartitionsNode(dataset, lambda _, v: f(v)), "map_partitions")


def zip_queries(a: "Dataset", b: "Dataset", f: Callable[[Any, Any], Any]) -> "Dataset":
    """``a.zip_partitions(b, f=f)`` for an ``f`` that runs DuckDB queries."""
    from strataflow.dataset import Dataset

    return Dataset(a.ctx, QueryZippedNode([a, b], f), "zip_partitions")
