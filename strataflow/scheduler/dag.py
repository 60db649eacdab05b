"""The DAG scheduler: lineage -> stages -> tasks.

A job's lineage is cut at shuffle dependencies. Each shuffle dependency becomes one
shuffle-map stage (kept by shuffle id, so a later job that reads the same shuffle reuses
it and skips it while its outputs are still on disk, as Spark does); the action's own
dataset is the result stage. Parent stages run before their children.

Failures: an exception in user code is retried up to ``max_task_attempts`` times, then
fails the job with :class:`TaskFailedError` naming the dataset, the partition and the
original exception (kept as ``__cause__``). A shuffle file that cannot be read raises
FetchFailed: the map output is forgotten, the map stage reruns the missing tasks, and the
reading stage runs again, up to ``max_stage_attempts`` times.
"""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, Future, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..metrics import gc_timer
from ..shuffle import FetchFailed
from ..storage.block import BlockId
from ..storage.cache_metrics import CacheMetrics
from ..storage.status import blocks_of
from ..storage.task_reads import HeldBlock
from .task import ResultTask, ShuffleMapTask, TaskContext

if TYPE_CHECKING:
    from ..context import Context
    from ..dataset import Dataset
    from ..lineage import ShuffleDependency

__all__ = ["DAGScheduler", "JobError", "TaskFailedError", "Stage", "planned_reads"]


class JobError(RuntimeError):
    """A job could not finish."""


class TaskFailedError(JobError):
    """A task failed on every attempt. ``dataset``, ``partition`` and ``__cause__`` say
    where and why."""

    def __init__(self, message: str, dataset: "Dataset", partition: int, attempts: int):
        super().__init__(message)
        self.dataset = dataset
        self.partition = partition
        self.attempts = attempts


@dataclass(eq=False)
class Stage:
    id: int
    dataset: "Dataset"
    parents: list["Stage"]
    shuffle_dep: "ShuffleDependency | None" = None
    name: str = ""
    first_job: int = 0
    attempts: int = field(default=0)

    @property
    def is_shuffle_map(self) -> bool:
        return self.shuffle_dep is not None

    @property
    def num_tasks(self) -> int:
        return self.dataset.num_partitions


def narrow_ancestors(dataset: "Dataset") -> tuple[list["Dataset"], list["ShuffleDependency"]]:
    """Datasets reached through narrow dependencies (one stage) and the shuffle
    dependencies at the stage's edge, in discovery order."""
    from ..lineage import ShuffleDependency

    seen: set[int] = set()
    members: list = []
    shuffles: list = []
    stack = [dataset]
    while stack:
        ds = stack.pop()
        if ds.id in seen:
            continue
        seen.add(ds.id)
        members.append(ds)
        for dep in ds.node.deps:
            if isinstance(dep, ShuffleDependency):
                if all(dep is not s for s in shuffles):
                    shuffles.append(dep)
            else:
                stack.append(dep.parent)
    return members, shuffles


def planned_reads(dataset: "Dataset", partitions: Sequence[int], present: Callable[[int], set]) -> list[BlockId]:
    """The persisted blocks the tasks of a stage over ``dataset`` will read, in task order:
    each task reads its partition's blocks of the persisted datasets it meets walking the
    narrow lineage down from ``dataset``; below a persisted block that is already stored
    (``present(dataset_id)`` gives the stored splits) nothing is read, below one that is
    not, its parents are (it will be computed). Shuffle dependencies end the walk (their
    map stages were planned when they ran)."""
    from ..lineage import NarrowDependency

    out: list[BlockId] = []
    stored: dict[int, set] = {}
    held = HeldBlock()  # the rule the block manager applies to the task's reads, replayed

    def visit(ds: "Dataset", split: int, depth: int) -> None:
        if depth > 200:  # a pathological lineage: a plan is advice, not worth a deep walk
            return
        bid = BlockId(ds.id, split) if ds.storage_level.is_valid else None
        if bid is not None:
            if held.serves(bid):
                return  # read again within the task: served by the task, not the cache
            out.append(bid)
            if ds.id not in stored:
                stored[ds.id] = present(ds.id)
            if split in stored[ds.id]:
                held.hold(bid)
                return
        for dep in ds.node.deps:
            if isinstance(dep, NarrowDependency):
                for s in dep.parents_of(split):
                    visit(dep.parent, s, depth + 1)
        if bid is not None:
            held.hold(bid)  # computed, then handed to the task

    for p in partitions:
        held.release()
        visit(dataset, p, 0)
    return out


class DAGScheduler:
    def __init__(self, ctx: "Context") -> None:
        self.ctx = ctx
        self._stage_ids = itertools.count()
        self._job_ids = itertools.count()
        self._map_stages: dict[int, Stage] = {}
        self._lock = threading.RLock()

    # -- stage graph ------------------------------------------------------------------
    def _map_stage(self, dep: "ShuffleDependency", job_id: int) -> Stage:
        with self._lock:
            stage = self._map_stages.get(dep.shuffle_id)
            if stage is None:
                parents = self._parent_stages(dep.parent, job_id)
                stage = Stage(next(self._stage_ids), dep.parent, parents, dep,
                              name=f"{dep.parent.op} (shuffle {dep.shuffle_id})", first_job=job_id)
                self._map_stages[dep.shuffle_id] = stage
            return stage

    def _parent_stages(self, dataset: "Dataset", job_id: int) -> list[Stage]:
        _, shuffles = narrow_ancestors(dataset)
        return [self._map_stage(dep, job_id) for dep in shuffles]

    def build_stages(self, dataset: "Dataset", job_id: int = -1) -> Stage:
        """The result stage of a job on ``dataset``, its parents linked (for explain)."""
        parents = self._parent_stages(dataset, job_id)
        return Stage(next(self._stage_ids), dataset, parents, None, name=dataset.op, first_job=job_id)

    # -- running ------------------------------------------------------------------------
    def run_job(self, dataset: "Dataset", func: Callable[[TaskContext, Any], Any],
                partitions: Sequence[int] | None = None, description: str = "job") -> list:
        """``func(tc, value)`` on each partition; results in partition order."""
        ctx = self.ctx
        ctx._check_open()
        partitions = list(range(dataset.num_partitions)) if partitions is None else list(partitions)
        job_id = next(self._job_ids)
        final = self.build_stages(dataset, job_id)
        final.name = description
        events = ctx.events
        t0 = time.perf_counter()
        gc0 = gc_timer.snapshot()
        cache0 = ctx.block_manager.metrics.snapshot()
        events.post("JobStart", job_id=job_id, description=description, final_stage=final.id,
                    num_partitions=len(partitions))
        results: dict[int, Any] = {}
        ok = False
        try:
            for attempt in itertools.count(1):
                try:
                    self._ensure_parents(final, job_id, set())
                    todo = [p for p in partitions if p not in results]
                    results.update(self._run_stage(final, job_id, todo, func))
                    break
                except FetchFailed as ff:
                    self._handle_fetch_failed(ff, attempt)
            ok = True
        finally:
            gc1 = gc_timer.snapshot()
            events.post("JobEnd", job_id=job_id, ok=ok, seconds=time.perf_counter() - t0,
                        gc_s=gc1[0] - gc0[0], gc_collections=gc1[1] - gc0[1],
                        cache=CacheMetrics.diff(ctx.block_manager.metrics.snapshot(), cache0))
        return [results[p] for p in partitions]

    def _handle_fetch_failed(self, ff: FetchFailed, attempt: int) -> None:
        self.ctx.shuffle.unregister(ff.shuffle_id, ff.map_id)
        self.ctx.events.post("FetchFailed", shuffle_id=ff.shuffle_id, map_id=ff.map_id,
                             reason=ff.reason, attempt=attempt)
        if attempt >= self.ctx.config.max_stage_attempts:
            raise JobError(
                f"giving up after {attempt} stage attempts: shuffle {ff.shuffle_id} output of map "
                f"{ff.map_id} could not be read ({ff.reason})"
            ) from ff

    def _ensure_parents(self, stage: Stage, job_id: int, done: set[int]) -> None:
        for parent in stage.parents:
            if parent.id in done:
                continue
            self._ensure_parents(parent, job_id, done)
            dep = parent.shuffle_dep
            missing = self.ctx.shuffle.missing_maps(dep.shuffle_id, parent.num_tasks)
            if missing:
                self._run_stage(parent, job_id, missing, None)
            else:
                self.ctx.events.post("StageSkipped", stage_id=parent.id, job_id=job_id, name=parent.name)
            done.add(parent.id)

    def _run_stage(self, stage: Stage, job_id: int, partitions: list[int], func) -> dict[int, Any]:
        ctx = self.ctx
        stage.attempts += 1
        kind = "shuffle-map" if stage.is_shuffle_map else "result"
        ctx.events.post("StageStart", stage_id=stage.id, job_id=job_id, name=stage.name, kind=kind,
                        num_tasks=len(partitions), attempt=stage.attempts,
                        dataset_id=stage.dataset.id, parents=[p.id for p in stage.parents])
        self._plan(stage, partitions)
        t0 = time.perf_counter()
        gc0 = gc_timer.snapshot()
        cache0 = ctx.block_manager.metrics.snapshot()
        totals = {"shuffle_bytes_written": 0, "shuffle_bytes_read": 0, "spill_bytes": 0, "records_out": 0}
        results: dict[int, Any] = {}
        ok = False
        try:
            futures: dict[Future, int] = {}
            for p in partitions:
                task = (ShuffleMapTask(stage.dataset, stage.shuffle_dep, p) if stage.is_shuffle_map
                        else ResultTask(stage.dataset, func, p))
                futures[ctx._pool.submit(self._run_task, task, stage, job_id)] = p
            pending = set(futures)
            first_error: BaseException | None = None
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for fut in done:
                    exc = fut.exception()
                    if exc is not None:
                        if first_error is None:
                            first_error = exc
                            for other in pending:
                                other.cancel()
                        continue
                    value, metrics = fut.result()
                    results[futures[fut]] = value
                    for k in totals:
                        totals[k] += getattr(metrics, k)
                if first_error is not None:
                    wait(pending)
                    pending = set()
            if first_error is not None:
                raise first_error
            ok = True
        finally:
            gc1 = gc_timer.snapshot()
            ctx.events.post("StageEnd", stage_id=stage.id, job_id=job_id, name=stage.name, kind=kind,
                            num_tasks=len(partitions), ok=ok, seconds=time.perf_counter() - t0,
                            gc_s=gc1[0] - gc0[0], gc_collections=gc1[1] - gc0[1],
                            cache=CacheMetrics.diff(ctx.block_manager.metrics.snapshot(), cache0), **totals)
        return results

    def _plan(self, stage: Stage, partitions: list[int]) -> None:
        """Tells a future-aware policy which persisted blocks the stage will read, in task
        order (``Policy.plan``). Skipped for policies that ignore plans; a plan is advice,
        so a failure to make one never fails the job."""
        bm = self.ctx.block_manager
        if not bm.policy.plans:
            return

        def present(dataset_id: int) -> set:
            stored: set = set()
            for where in blocks_of(bm, dataset_id):
                stored.update(where)
            return stored

        try:
            bm.plan(planned_reads(stage.dataset, partitions, present))
        except Exception as exc:  # noqa: BLE001 - advice only
            self.ctx.events.post("PlanFailed", stage_id=stage.id, reason=f"{type(exc).__name__}: {exc}")

    def _run_task(self, task, stage: Stage, job_id: int):
        """One task with its retries; FetchFailed is not retried here (the stage is)."""
        ctx = self.ctx
        max_attempts = ctx.config.max_task_attempts
        for attempt in range(1, max_attempts + 1):
            if ctx._closed:
                raise JobError("the context was stopped while the job ran")
            tc = TaskContext(ctx, stage.id, task.partition, attempt)
            ctx.memory.task_started(tc.task_id)
            ctx.events.post("TaskStart", task_id=tc.task_id, stage_id=stage.id, job_id=job_id,
                            partition=task.partition, attempt=attempt)
            t0 = time.perf_counter()
            gc0 = gc_timer.snapshot()
            error: BaseException | None = None
            try:
                value = task.run(tc)
            except FetchFailed as ff:
                error = ff
                raise
            except Exception as exc:  # noqa: BLE001 - user code may raise anything
                error = exc
            finally:
                tc.held.release()  # the value held for a re-read goes with the task
                ctx.memory.task_finished(tc.task_id)
                gc1 = gc_timer.snapshot()
                ctx.events.post("TaskEnd", task_id=tc.task_id, stage_id=stage.id, job_id=job_id,
                                partition=task.partition, attempt=attempt, ok=error is None,
                                seconds=time.perf_counter() - t0, gc_s=gc1[0] - gc0[0],
                                error=None if error is None else repr(error), **vars(tc.metrics))
            if error is None:
                return value, tc.metrics
            if attempt == max_attempts:
                origin, split = getattr(error, "_strataflow_origin", (stage.dataset, task.partition))
                raise TaskFailedError(
                    f"task for partition {split} of dataset {origin.label} failed {attempt} "
                    f"time(s) (stage {stage.id}, {task.kind} task {task.partition}); last error: "
                    f"{type(error).__name__}: {error}",
                    origin, split, attempt,
                ) from error
        raise AssertionError("unreachable")
