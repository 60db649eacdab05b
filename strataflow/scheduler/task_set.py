"""Running one stage attempt's tasks on the executors: locality, retries, lost executors.

The stage's work (lineage, the action's function, the map outputs it reads) is pickled
once and sent to each executor once; a task is then its stage key and partition. Each
task prefers the executors that hold its partition's persisted blocks (memory before
disk, from the block-location master); it waits for one of them to have a free slot,
as Spark's delay scheduling does, for at most ``locality_wait`` seconds since the stage
last launched a task where its data was, then for as long again on another executor of
the holder's node (on a cluster: it reads the disk copy from the file), then runs
wherever a slot is free, told where the blocks it reads are (``peers``: it reads them
from there instead of recomputing).
Partitions no executor holds go to the free executor with the fewest running tasks. An
executor takes ``_TASKS_PER_SLOT`` tasks per slot at once: the next one waits there, so a
slot never idles for a round trip to the driver between tasks.

With a locality wait, a holder takes its own partitions' tasks up to its fair share of
the stage (its slots' share of all slots) at once, since they would wait for it anyway:
an iteration over cached data is then one message per executor, and the driver, with
nothing left to launch, sleeps until the last task ends or one fails instead of waking
for every task (issue 13: the driver's CPU competes with the executors' on a machine with
as many cores as executors). The price: a holder so slow that its tasks would have moved
after the wait keeps that share (the rest still moves); with ``locality_wait=0`` every
task is placed as a slot frees.

A task that failed for the infrastructure's sake (its executor lost, a full shuffle
device) is retried (on any executor) up to ``max_task_attempts`` times; one whose user
code raised, up to ``task_max_failures`` times (once, by default, in local mode);
``retries.py`` says which is which. The first failure that ends the stage cancels its
other tasks on every executor and waits for those already running to stop.
"""

from __future__ import annotations

import itertools
import time
from concurrent.futures import FIRST_COMPLETED, FIRST_EXCEPTION, Future, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from strataflow.executor.messages import CancelStage
from strataflow.executor.work import ExecutorLost, StageWork, TaskCancelled, TaskOutcome, TaskSpec
from strataflow.shuffle import FetchFailed
from strataflow.shipping.source_store import spilling_sources
from strataflow.common.retries import attempts_allowed
from strataflow.scheduler.pickling import pickle_stage

if TYPE_CHECKING:
    from strataflow.executor.backend import ExecutorHandle
    from strataflow.scheduler.dag import DAGScheduler, Stage

__all__ = ["TaskSetRunner", "TaskFailure"]

_task_ids = itertools.count()
_STOP_WAIT_S = 30.0  # at most this long for running tasks to stop after the stage failed
_POLL_S = 0.5
_TASKS_PER_SLOT = 2  # tasks sent ahead per slot: the next one waits on the executor, not on a round trip


@dataclass
class TaskFailure:
    """The last failure of a partition's task, for the job's error."""

    partition: int
    attempts: int
    error: BaseException
    #: the executor the last attempt ran on
    executor: str | None = None


class TaskSetRunner:
    """One stage attempt: ``run()`` returns partition -> outcome, or raises."""

    def __init__(self, dag: "DAGScheduler", stage: "Stage", job_id: int, partitions: list[int],
                 func: Callable | None, preferred: dict[int, list[str]], plans: dict[str | None, list] | None,
                 on_outcome: Callable[[ExecutorHandle, int, TaskOutcome], None],
                 reads: dict[int, list] | None = None) -> None:
        self.dag = dag
        self.fleet = dag.fleet
        cfg = dag.config
        self.max_attempts = cfg.max_task_attempts
        self.max_user_attempts = cfg.task_max_failures
        self.locality_wait = cfg.locality_wait
        self.stage = stage
        self.job_id = job_id
        self.partitions = partitions
        self.preferred = preferred
        self.reads = reads or {}  # partition -> the persisted blocks its task reads
        self.plans = plans
        self.on_outcome = on_outcome
        self.work = StageWork(f"{job_id}.{stage.id}.{stage.attempts}", stage.id, job_id, stage.dataset,
                              stage.shuffle_dep, func, dag.map_outputs_for(stage.dataset),
                              dag.shipped_files())
        self._payload: bytes | None = None
        self._sent_to: set[str] = set()

    def _payload_for(self, handle: ExecutorHandle) -> bytes | None:
        if not handle.needs_pickled_stages:
            return None
        if self._payload is None:
            with spilling_sources(self.dag.ctx.sources):
                self._payload = pickle_stage(self.work)  # raises a clear error before any task runs
        return self._payload

    def _plan_for(self, executor_id: str) -> list | None:
        if self.plans is None:
            return None
        return self.plans.get(executor_id, self.plans.get(None))

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> dict[int, TaskOutcome]:
        queue: list[tuple[int, int]] = [(p, 1) for p in self.partitions]
        running: dict[Future, tuple[int, int, str]] = {}
        results: dict[int, TaskOutcome] = {}
        last_local = time.monotonic()
        stop_error: BaseException | None = None
        failure: TaskFailure | None = None
        try:
            while (queue and stop_error is None) or running:
                self.dag.check_running(self.stage, self.job_id)
                live = self.fleet.live()
                if stop_error is None and queue:
                    if not live and not running:
                        if not self.fleet.can_recover():
                            raise ExecutorLost("*", f"no executor left to run stage {self.stage.id} "
                                                    f"({len(self.fleet.lost)} lost: {self.fleet.lost[-1][1] if self.fleet.lost else '?'})")
                        self.fleet.wait_changed(0.5)
                        continue
                    queue, launched_local = self._launch(queue, running, live, time.monotonic() - last_local)
                    if launched_local:
                        last_local = time.monotonic()
                if not running:
                    if queue and stop_error is None:
                        self.fleet.wait_changed(0.05)
                    continue
                timeout = _POLL_S  # at most this long before noticing a stop from another thread
                if queue and stop_error is None:
                    waited = time.monotonic() - last_local
                    level_ends = self.locality_wait * (1 if waited < self.locality_wait else 2)
                    if waited < level_ends:  # past both levels, a task ending wakes us
                        timeout = max(0.01, min(_POLL_S, level_ends - waited))
                # with nothing left to launch, the driver sleeps until the last task or the
                # first failure: no wake-up per task while the executors compute
                until = FIRST_COMPLETED if queue and stop_error is None else FIRST_EXCEPTION
                done, _ = wait(list(running), timeout=timeout, return_when=until)
                for fut in done:
                    if fut not in running:  # drained after the stage failed
                        continue
                    p, attempt, eid = running.pop(fut)
                    exc = fut.exception()
                    if exc is None:
                        outcome = fut.result()
                        results[p] = outcome
                        handle = self.fleet.get(eid)
                        if handle is not None:
                            self.on_outcome(handle, p, outcome)
                        continue
                    if stop_error is not None or isinstance(exc, TaskCancelled):
                        continue
                    if isinstance(exc, FetchFailed):
                        stop_error = exc
                    else:
                        if isinstance(exc, ExecutorLost):
                            self.dag.task_lost(self.stage, p, attempt, exc)
                        if attempt < attempts_allowed(exc, self.max_attempts, self.max_user_attempts):
                            queue.append((p, attempt + 1))
                        else:
                            failure = TaskFailure(p, attempt, exc, eid)
                            stop_error = exc
                    if stop_error is not None:
                        self._cancel()
                        running = self._drain(running)
        except BaseException:
            self._cancel()  # Ctrl-C, or no executors: stop what runs, return at once
            raise
        finally:
            self._forget()
        if stop_error is not None:
            if failure is not None:
                raise self.dag.task_failed(self.stage, failure)
            raise stop_error
        return results

    def _launch(self, queue: list[tuple[int, int]], running: dict, live: list[ExecutorHandle],
                since_local: float) -> tuple[list[tuple[int, int]], bool]:
        load: dict[str, int] = {h.executor_id: 0 for h in live}
        for _, _, eid in running.values():
            if eid in load:
                load[eid] += 1
        by_id = {h.executor_id: h for h in live}
        free = lambda eid: load[eid] < by_id[eid].cores * _TASKS_PER_SLOT  # noqa: E731
        # a holder takes its own partitions' tasks up to its fair share of the stage at
        # once: they would wait for it anyway, and one message carries them all
        # (with no locality wait, nothing waits for a holder: two per slot, as any task)
        share = -(-len(self.partitions) // max(1, sum(h.cores for h in live))) if self.locality_wait > 0 else 0
        free_local = lambda eid: load[eid] < by_id[eid].cores * max(_TASKS_PER_SLOT, share)  # noqa: E731
        # delay scheduling's levels (Spark's PROCESS_LOCAL, NODE_LOCAL, ANY): the holder's
        # executor; after one wait, an executor on the holder's node (it reads the disk
        # copy from the file); after two, any. Executors without a node (threads,
        # processes: all on the driver's machine) are one node.
        node_local = since_local >= self.locality_wait
        anywhere = since_local >= 2 * self.locality_wait
        left: list[tuple[int, int]] = []
        batches: dict[str, list[tuple[TaskSpec, int]]] = {}
        launched_local = False
        any_free = any(free(e) for e in load)
        for i, (p, attempt) in enumerate(queue):
            # nothing more can start (every executor full, or full but for its own partitions'
            # tasks and there are none): the rest waits without a look, so that a stage's
            # launches cost O(P) in all, not O(P) each (issue 41)
            if not any_free and (not self.preferred or not any(free_local(e) for e in load)):
                left.extend(queue[i:])
                break
            pref = [e for e in self.preferred.get(p, ()) if e in load]
            target = next((e for e in pref if free_local(e)), None)
            if target is None and pref and node_local:
                nodes = {by_id[e].node_id for e in pref}
                target = min((e for e in load if free(e) and by_id[e].node_id in nodes), key=lambda e: load[e],
                             default=None)
            if target is None and (not pref or anywhere):
                target = min((e for e in load if free(e)), key=lambda e: load[e], default=None)
            if target is None:
                left.append((p, attempt))
                continue
            peers = self.dag.master.peers(self.reads[p], target) if self.reads.get(p) else None
            batches.setdefault(target, []).append((TaskSpec(self.work.key, p, attempt, next(_task_ids), peers), attempt))
            load[target] += 1
            any_free = any_free and any(free(e) for e in load)
            launched_local |= target in pref
        for target, items in batches.items():
            handle = by_id[target]
            specs = [spec for spec, _ in items]
            # nothing left to launch: the driver waits for them all, so they may answer together
            futs = handle.submit_many(self.work, self._payload_for(handle), self._plan_for(target), specs,
                                      together=not left)
            self._sent_to.add(target)
            for fut, (spec, attempt) in zip(futs, items):
                running[fut] = (spec.partition, attempt, target)
        return left, launched_local

    def _cancel(self) -> None:
        for h in self.fleet.live():
            if h.executor_id in self._sent_to:
                try:
                    h.call(CancelStage(self.work.key), timeout=2.0)
                except Exception:  # noqa: BLE001 - a lost executor has nothing to cancel
                    pass

    def _drain(self, running: dict) -> dict:
        if running:
            wait(list(running), timeout=_STOP_WAIT_S)
        return {}

    def _forget(self) -> None:
        for h in self.fleet.live():
            if h.executor_id in self._sent_to:
                try:
                    h.forget_stage(self.work.key)
                except Exception:  # noqa: BLE001
                    pass
