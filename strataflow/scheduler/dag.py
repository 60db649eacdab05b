"""The DAG scheduler: lineage -> stages -> tasks, on the driver.

A job's lineage is cut at shuffle dependencies. Each shuffle dependency becomes one
shuffle-map stage (kept by shuffle id, so a later job that reads the same shuffle reuses
it and skips it while its outputs are still on disk, as Spark does); the action's own
dataset is the result stage. Parent stages run before their children.

Each stage attempt's tasks run on the executors (``task_set.py``: locality, retries,
lost executors); their outcomes feed the driver's block-location master, the map-output
tracker and the cache totals of every executor, from which stage and job figures are
taken. Failures: a task is retried as ``retries.py`` says (an exception in user code up to
``task_max_failures`` times, once by default in local mode), then fails the job with
:class:`TaskFailedError` naming the dataset, the partition and the original exception
(kept as ``__cause__``, with the executor's traceback, and whose type the job's error also
has: ``errors.py``). A shuffle file that cannot be read raises
FetchFailed: the map output is forgotten, the map stage reruns the missing tasks, and the
reading stage runs again; the job gives up when one map output could not be read
``max_stage_attempts`` times (counted per output, as Spark counts per stage: damage found
in several shuffles of one lineage, one after another, is not a stage failing again).
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from strataflow.executor.work import TaskOutcome
from strataflow.lineage import narrow_ancestors
from strataflow.metrics import gc_timer
from strataflow.shuffle import FetchFailed
from strataflow.storage.blocks.block import BlockId
from strataflow.storage.cache_metrics import METRIC_KEYS, CacheMetrics
from strataflow.storage.task_reads import HeldBlock
from strataflow.common.retries import is_user_error
from strataflow.config.backends import backend_class
from strataflow.scheduler.errors import (ContextStopped, JobError, TaskFailedError, add_note, dataset_title,
                                         fold_job_error, task_failed_error)
from strataflow.executor.task import TaskContext
from strataflow.scheduler.task_set import TaskFailure, TaskSetRunner

if TYPE_CHECKING:
    from strataflow.executor.backend import ExecutorHandle
    from strataflow.context import Context
    from strataflow.dataset import Dataset
    from strataflow.lineage import ShuffleDependency

__all__ = ["DAGScheduler", "JobError", "TaskFailedError", "ContextStopped", "Stage", "planned_reads", "CacheTotals"]


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


def planned_reads(dataset: "Dataset", partitions: Sequence[int], present: Callable[[int], set]) -> list[BlockId]:
    """The persisted blocks the tasks of a stage over ``dataset`` will read, in task order:
    each task reads its partition's blocks of the persisted datasets it meets walking the
    narrow lineage down from ``dataset``; below a persisted block that is already stored
    (``present(dataset_id)`` gives the stored splits) nothing is read, below one that is
    not, its parents are (it will be computed). Shuffle dependencies end the walk (their
    map stages were planned when they ran)."""
    from strataflow.lineage import NarrowDependency

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


class CacheTotals:
    """The cache counters of every executor, summed: each task outcome brings its
    executor's latest; a lost executor's last figures stay in the totals (counters of an
    application never go backwards)."""

    _KEYS = METRIC_KEYS + ("gc_s", "gc_collections")

    def __init__(self) -> None:
        self._latest: dict[str, dict] = {}
        self._retired: dict[str, float] = dict.fromkeys(self._KEYS, 0)
        self._lock = threading.Lock()

    def update(self, executor_id: str, snapshot: dict) -> None:
        """Counters only grow, so the larger of two figures is the later one: outcomes of
        one executor's concurrent tasks may arrive in another order than taken."""
        with self._lock:
            old = self._latest.get(executor_id)
            self._latest[executor_id] = (snapshot if old is None
                                         else {k: max(v, old.get(k, v)) for k, v in snapshot.items()})

    def executor_lost(self, executor_id: str) -> None:
        with self._lock:
            gone = self._latest.pop(executor_id, None)
            if gone:
                for k in self._KEYS:
                    self._retired[k] += gone.get(k, 0)

    def retired(self) -> dict[str, float]:
        """The last counters of the executors lost."""
        with self._lock:
            return dict(self._retired)

    def total(self) -> dict[str, float]:
        with self._lock:
            out = dict(self._retired)
            for snap in self._latest.values():
                for k in self._KEYS:
                    out[k] += snap.get(k, 0)
        return out


def partition_blocks(dataset: "Dataset", split: int, stored: Callable[[BlockId], bool]) -> list[BlockId]:
    """The persisted blocks the task for ``split`` will read (its locality candidates):
    walking the narrow lineage down from ``dataset``, each persisted block met; below one
    that is ``stored`` nothing is read, below one that is not, its parents are (a norms
    block computed for the first time is best computed where its points are)."""
    from strataflow.lineage import NarrowDependency

    out: list[BlockId] = []
    stack = [(dataset, split, 0)]
    while stack and len(out) < 64:
        ds, s, depth = stack.pop()
        if ds.storage_level.is_valid:
            bid = BlockId(ds.id, s)
            out.append(bid)
            if stored(bid):
                continue
        if depth < 200:
            for dep in ds.node.deps:
                if isinstance(dep, NarrowDependency):
                    stack.extend((dep.parent, ps, depth + 1) for ps in dep.parents_of(s))
    return out


def located_nodes(dataset: "Dataset", split: int, stored: Callable[[BlockId], bool]) -> list[str]:
    """The nodes where the task for ``split`` finds its input in place: those the sources
    it reads through narrow lineage name for their partitions (``Node.preferred_nodes``:
    a block in a node's store), unless it reads a stored persisted block above them."""
    from strataflow.lineage import NarrowDependency

    out: list[str] = []
    stack = [(dataset, split, 0)]
    while stack:
        ds, s, depth = stack.pop()
        if ds.storage_level.is_valid and stored(BlockId(ds.id, s)):
            continue  # read from the cache: the block master's locations hold for it
        if ds.node.located:
            out.extend(n for n in ds.node.preferred_nodes(s) if n not in out)
        if depth < 200:
            for dep in ds.node.deps:
                if isinstance(dep, NarrowDependency):
                    stack.extend((dep.parent, ps, depth + 1) for ps in dep.parents_of(s))
    return out


class DAGScheduler:
    def __init__(self, ctx: "Context") -> None:
        self.ctx = ctx
        self.config = ctx.config
        self.fleet = ctx.fleet
        self.master = ctx.block_master
        self.tracker = ctx.map_outputs
        self.totals = CacheTotals()
        self.fleet.on_lost(self.totals.executor_lost)
        self._plans = bool(getattr(ctx.policy_flags, "plans", False))
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

    def forget_shuffle(self, shuffle_id: int) -> None:
        """No dataset reads the shuffle any more: its map stage goes too, with the
        accumulator updates it merged (no task of it can run again)."""
        with self._lock:
            stage = self._map_stages.pop(shuffle_id, None)
        if stage is not None:
            self.ctx._accumulators.forget_stage(stage.id)

    def map_outputs_for(self, dataset: "Dataset") -> dict[int, list]:
        """The map outputs a stage over ``dataset`` reads, by shuffle id, in map order."""
        _, shuffles = narrow_ancestors(dataset)
        return {dep.shuffle_id: self.tracker.outputs(dep.shuffle_id, dep.parent.num_partitions) for dep in shuffles}

    def shipped_files(self) -> dict:
        """The files added to the application (``Context.add_file``), for a stage's work."""
        return self.ctx._files.entries()

    # -- figures ----------------------------------------------------------------------------
    def _figures(self) -> tuple[dict, float, int]:
        """(cache totals, GC seconds, GC collections): the executors' and, where they are
        other processes, the driver's own."""
        cache = self.totals.total()
        gc_s, gc_n = cache.pop("gc_s"), cache.pop("gc_collections")
        if not backend_class(self.config.backend).in_driver_process:
            d_s, d_n = gc_timer.snapshot()
            gc_s, gc_n = gc_s + d_s, gc_n + d_n
        return cache, gc_s, gc_n

    # -- running ------------------------------------------------------------------------
    def run_job(self, dataset: "Dataset", func: Callable[[TaskContext, Any], Any],
                partitions: Sequence[int] | None = None, description: str = "job") -> list:
        """``func(tc, value)`` on each partition; results in partition order."""
        ctx = self.ctx
        ctx._check_open()
        ctx._clean_shuffles()
        ctx._clean_broadcasts()
        ctx._own_dirs()
        partitions = list(range(dataset.num_partitions)) if partitions is None else list(partitions)
        job_id = next(self._job_ids)
        final = self.build_stages(dataset, job_id)
        final.name = description
        events = ctx.events
        t0 = time.perf_counter()
        cache0, gc0, gcn0 = self._figures()
        events.post("JobStart", job_id=job_id, description=description, final_stage=final.id,
                    num_partitions=len(partitions))
        results: dict[int, Any] = {}
        failures: dict[tuple[int, int], int] = {}  # (shuffle, map) -> times it could not be read
        ok = False
        try:
            while True:
                try:
                    self._ensure_parents(final, job_id, set())
                    todo = [p for p in partitions if p not in results]
                    results.update(self._run_stage(final, job_id, todo, func))
                    break
                except FetchFailed as ff:
                    self._handle_fetch_failed(ff, failures)
            ok = True
        except TaskFailedError as err:
            fold_job_error(err)  # the scheduler's frames out of what the user reads (errors.py)
            raise  # as folded (3.11+: a bare raise takes err.__traceback__, and adds no frame)
        finally:
            ctx._accumulators.forget_stage(final.id)  # a result stage runs in its job only
            cache1, gc1, gcn1 = self._figures()
            events.post("JobEnd", job_id=job_id, ok=ok, seconds=time.perf_counter() - t0,
                        gc_s=gc1 - gc0, gc_collections=gcn1 - gcn0, cache=CacheMetrics.diff(cache1, cache0))
        return [results[p] for p in partitions]

    def _handle_fetch_failed(self, ff: FetchFailed, failures: dict[tuple[int, int], int]) -> None:
        for m in ff.map_ids:  # every bad output the reader found: rerun together
            self.tracker.unregister(ff.shuffle_id, m)
            failures[ff.shuffle_id, m] = failures.get((ff.shuffle_id, m), 0) + 1
        attempt = max(failures[ff.shuffle_id, m] for m in ff.map_ids)
        self.ctx.events.post("FetchFailed", shuffle_id=ff.shuffle_id, map_id=ff.map_id, map_ids=list(ff.map_ids),
                             reason=ff.reason, attempt=attempt)
        if attempt >= self.config.max_stage_attempts:
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
            missing = self.tracker.missing_maps(dep.shuffle_id, parent.num_tasks)
            if missing:
                self._run_stage(parent, job_id, missing, None)
            else:
                self.ctx.events.post("StageSkipped", stage_id=parent.id, job_id=job_id, name=parent.name)
            done.add(parent.id)

    def _run_stage(self, stage: Stage, job_id: int, partitions: list[int], func) -> dict[int, Any]:
        ctx = self.ctx
        stage.attempts += 1
        kind = "shuffle-map" if stage.is_shuffle_map else "result"
        members = narrow_ancestors(stage.dataset)[0]
        cached = [ds for ds in members if ds.storage_level.is_valid]
        ctx.events.post("StageStart", stage_id=stage.id, job_id=job_id, name=stage.name, kind=kind,
                        num_tasks=len(partitions), attempt=stage.attempts,
                        dataset_id=stage.dataset.id, parents=[p.id for p in stage.parents],
                        persisted=[{"dataset_id": ds.id, "name": ds.label, "level": ds.storage_level.name}
                                   for ds in cached])
        persisted = bool(cached)
        stored = lambda bid: bool(self.master.executor_of(bid))  # noqa: E731
        reads = {p: partition_blocks(stage.dataset, p, stored) for p in partitions} if persisted else {}
        preferred = {p: self.master.preferred(blocks) for p, blocks in reads.items()}
        if any(ds.node.located for ds in members):
            self._prefer_nodes(stage.dataset, partitions, preferred, stored)
        plans = self._plan(stage, partitions, preferred)
        t0 = time.perf_counter()
        cache0, gc0, gcn0 = self._figures()
        totals = {"shuffle_bytes_written": 0, "shuffle_bytes_read": 0, "spill_bytes": 0, "records_out": 0}

        def on_outcome(handle: ExecutorHandle, p: int, outcome: TaskOutcome) -> None:
            eid = handle.executor_id
            self.totals.update(eid, outcome.snapshot)
            self.master.update(eid, outcome.blocks)
            if outcome.map_output is not None:
                self.tracker.register(stage.shuffle_dep.shuffle_id, p, eid, outcome.map_output)
            if outcome.accumulators:  # once per stage and partition: a recomputed task is not counted again
                ctx._accumulators.merge(stage.id, p, outcome.accumulators)
            for k in totals:
                totals[k] += getattr(outcome.metrics, k)

        ok = False
        try:
            runner = TaskSetRunner(self, stage, job_id, partitions, func, preferred, plans, on_outcome, reads)
            outcomes = runner.run()
            ok = True
        finally:
            cache1, gc1, gcn1 = self._figures()
            ctx.events.post("StageEnd", stage_id=stage.id, job_id=job_id, name=stage.name, kind=kind,
                            num_tasks=len(partitions), ok=ok, seconds=time.perf_counter() - t0,
                            gc_s=gc1 - gc0, gc_collections=gcn1 - gcn0,
                            cache=CacheMetrics.diff(cache1, cache0), **totals)
        return {p: o.value for p, o in outcomes.items()}

    def _prefer_nodes(self, dataset: "Dataset", partitions: list[int], preferred: dict[int, list[str]],
                      stored: Callable[[BlockId], bool]) -> None:
        """Adds to each partition's preferred executors (after those caching its blocks)
        the live executors on the nodes where its input lies (``located_nodes``): a task
        over a dataset of a Ray cluster's store runs where its block is, not fetched."""
        on_node: dict[str, list[str]] = {}
        for h in self.fleet.live():
            if h.node_id is not None:
                on_node.setdefault(h.node_id, []).append(h.executor_id)
        if not on_node:
            return  # executors without nodes (threads, processes): one machine, nothing to prefer
        for p in partitions:
            there = [e for n in located_nodes(dataset, p, stored) for e in on_node.get(n, ())]
            if there:
                have = preferred.get(p, [])
                preferred[p] = have + [e for e in there if e not in have]

    def _plan(self, stage: Stage, partitions: list[int], preferred: dict[int, list[str]]) -> dict | None:
        """What each executor's tasks of the stage will read, in task order, for a
        future-aware policy (``Policy.plan``): a partition's reads go to the executor it
        prefers, those of partitions no executor holds to every executor. None for
        policies that ignore plans; a plan is advice, so a failure never fails the job."""
        if not self._plans:
            return None
        try:
            stored: dict[int, set] = {}

            def present(dataset_id: int) -> set:
                if dataset_id not in stored:
                    stored[dataset_id] = self.master.splits(dataset_id)
                return stored[dataset_id]

            plans: dict[str | None, list] = {None: []}
            for h in self.fleet.live():
                plans[h.executor_id] = []
            for p in partitions:
                reads = planned_reads(stage.dataset, [p], present)
                target = preferred.get(p, [None])[0] if preferred.get(p) else None
                for eid, plan in plans.items():
                    if target is None or eid == target:
                        plan.extend(reads)
            return plans
        except Exception as exc:  # noqa: BLE001 - advice only
            self.ctx.events.post("PlanFailed", stage_id=stage.id, reason=f"{type(exc).__name__}: {exc}")
            return None

    # -- failures ----------------------------------------------------------------------------
    def check_running(self, stage: Stage, job_id: int) -> None:
        """Raises ContextStopped once the Context is stopping (its executors are going)."""
        if self.fleet.stopping:
            raise ContextStopped(f"job {job_id} failed: the Context was stopped while stage {stage.id} "
                                 f"({stage.name}) ran (stop() was called from another thread)")

    def task_lost(self, stage: Stage, partition: int, attempt: int, exc: BaseException) -> None:
        """A task's executor went away: its TaskEnd, which the executor could not post."""
        self.ctx.events.post("TaskEnd", task_id=-1, stage_id=stage.id, partition=partition, attempt=attempt,
                             ok=False, seconds=0.0, gc_s=0.0, error=repr(exc),
                             executor=getattr(exc, "executor_id", None))

    def task_failed(self, stage: Stage, failure: TaskFailure) -> TaskFailedError:
        """The job's error for a task that failed on every attempt, naming the innermost
        dataset that failed and keeping the task's exception (with the executor's
        traceback) as the cause, whose type the error also has (``errors.py``)."""
        error = failure.error
        ds_id, label, split = getattr(error, "_strataflow_origin", (stage.dataset.id, stage.dataset.label,
                                                                     failure.partition))
        origin = next((d for d in narrow_ancestors(stage.dataset)[0] if d.id == ds_id), stage.dataset)
        title = dataset_title(origin) if origin.id == ds_id else label  # as the report names its stage
        remote = getattr(error, "remote_traceback", None)
        kind = "shuffle-map" if stage.is_shuffle_map else "result"
        where = (f"stage {stage.id}, {kind} task {failure.partition}, "
                 f"executor {failure.executor if failure.executor is not None else '?'}")
        not_retried = ("; not retried: task_max_failures=1 (an error of the task's own code)"
                       if failure.attempts == 1 and self.config.task_max_failures == 1 and is_user_error(error)
                       else "")
        try:
            what = f"{type(error).__name__}: {error}"
        except Exception:  # noqa: BLE001 - an exception whose __str__ fails
            what = type(error).__name__
        add_note(error, f"strataflow: raised by the task for partition {split} of dataset {title} ({where}, "
                        f"attempt {failure.attempts})" + ("" if remote is None else
                                                          "; the traceback above is the executor's"))
        err = task_failed_error(
            f"task for partition {split} of dataset {title} failed {failure.attempts} time(s) ({where}"
            f"{not_retried}); last error: {what}",
            origin, split, failure.attempts, error, failure.executor,
        )
        if remote and not backend_class(self.config.backend).in_driver_process:
            err.remote_traceback = remote
        return err
