"""The executor's side of the protocol, shared by every backend: it keeps the stages it
was sent, registers their persisted datasets with its block manager, takes the policy's
plan, runs tasks and answers the driver's requests (``messages.py``), each with its own
handler. The threads backend calls it directly; an executor process (``worker.py``) and
a Ray actor (``ray/actor.py``) call it for each message they receive."""

from __future__ import annotations

import gc
import importlib
import threading
import time
from typing import Any, Callable, ClassVar

from strataflow.shipping.accumulators import task_updates
from strataflow.shipping.files import install as install_files
from strataflow.lineage import narrow_ancestors
from strataflow.metrics import gc_timer
from strataflow.executor.task import ResultTask, ShuffleMapTask, TaskContext
from strataflow.shuffle.index_cache import forget_removed_indexes, forget_shuffle_indexes
from strataflow.storage.blocks.block import MISS
from strataflow.storage.disk.disk_store import BlockUnavailable
from strataflow.storage.peer_blocks import locate
from strataflow.executor.messages import (REQUEST_TYPES, CancelStage, ExecutorRequest, FetchBlock, ForgetBroadcasts,
                                          ForgetShuffles, ForgetStage, GetCacheSnapshot, GetMetrics,
                                          GetRegistrySizes, GetStorageStatus, MeasureTiers, Ping, Preload,
                                          RemoveLostExecutor, RemoveMapOutputs, Unpersist)
from strataflow.executor.runtime import ExecutorRuntime
from strataflow.executor.work import StageWork, TaskCancelled, TaskOutcome, TaskSpec

__all__ = ["ExecutorCore"]


class ExecutorCore:
    """Stages by key, and the requests the driver may send (``handle``)."""

    def __init__(self, runtime: ExecutorRuntime) -> None:
        self.runtime = runtime
        self._stages: dict[str, tuple[StageWork, threading.Event]] = {}
        self._failed: dict[str, BaseException] = {}
        self._lock = threading.Lock()

    # -- stages ---------------------------------------------------------------------------
    def add_stage(self, work: StageWork, plan: list | None) -> None:
        """Keeps the stage, registers the persisted datasets it computes (idempotent: the
        first stage that meets a dataset registers it here) and hands the policy its plan.

        First it drops the cached indexes of shuffles the driver has removed since this
        executor's last stage (the driver removes unreachable shuffles' files before a
        job's stages are sent: ``Context._clean_shuffles``), so a long-lived executor keeps
        the indexes of live shuffles only (issue 50)."""
        forget_removed_indexes()
        if work.files:
            install_files(work.files)
        bm = self.runtime.block_manager
        for ds in narrow_ancestors(work.dataset)[0]:
            if ds.storage_level.is_valid and bm.info(ds.id) is None:
                bm.register(ds.id, (lambda d=ds: d.label), ds.storage_level, ds.serializer_name, ds.num_partitions)
        with self._lock:
            self._stages[work.key] = (work, threading.Event())
        bm.stage_started()
        if plan is not None and bm.policy.plans:
            try:
                bm.plan(plan)
            except Exception as exc:  # noqa: BLE001 - a plan is advice
                self.runtime.events.post("PlanFailed", stage_id=work.stage_id, reason=f"{type(exc).__name__}: {exc}")

    def stage_failed(self, key: str, exc: BaseException) -> None:
        """The stage could not be read here (e.g. its functions need a module this
        executor cannot import): its tasks fail with ``exc``."""
        with self._lock:
            self._failed[key] = exc

    def has_stage(self, key: str) -> bool:
        with self._lock:
            return key in self._stages

    def forget_stage(self, key: str) -> None:
        with self._lock:
            self._stages.pop(key, None)
            self._failed.pop(key, None)

    def cancel_all(self) -> None:
        """Every stage's tasks stop at their next partition read (the executor stops)."""
        with self._lock:
            events = [ev for _, ev in self._stages.values()]
        for ev in events:
            ev.set()

    def cancel_stage(self, key: str) -> None:
        with self._lock:
            got = self._stages.get(key)
        if got is not None:
            got[1].set()

    # -- tasks ----------------------------------------------------------------------------
    def run(self, spec: TaskSpec) -> TaskOutcome:
        """Runs one task attempt; raises what the task raised (the driver retries)."""
        with self._lock:
            got = self._stages.get(spec.stage_key)
            failed = self._failed.get(spec.stage_key)
        if failed is not None:
            raise failed
        if got is None:
            raise TaskCancelled(f"stage {spec.stage_key} is not known here (cancelled or forgotten)")
        work, cancelled = got
        if cancelled.is_set():
            raise TaskCancelled(f"stage {work.stage_id} was cancelled")
        rt = self.runtime
        tc = TaskContext(rt, work, spec.partition, spec.attempt, spec.task_id, cancelled=cancelled, peers=spec.peers)
        task = (ShuffleMapTask(work.dataset, work.shuffle_dep, spec.partition) if work.shuffle_dep is not None
                else ResultTask(work.dataset, work.func, spec.partition))
        rt.memory.task_started(tc.task_id)
        rt.events.post("TaskStart", task_id=tc.task_id, stage_id=work.stage_id, job_id=work.job_id,
                       partition=spec.partition, attempt=spec.attempt, executor=rt.executor_id)
        t0 = time.perf_counter()
        gc0 = gc_timer.snapshot()
        error: BaseException | None = None
        try:
            with task_updates() as updates:
                value = task.run(tc)
        except BaseException as exc:
            error = exc
            raise
        finally:
            tc.held.release()  # the value held for a re-read goes with the task
            rt.memory.task_finished(tc.task_id)
            gc1 = gc_timer.snapshot()
            seconds = time.perf_counter() - t0
            rt.events.post("TaskEnd", task_id=tc.task_id, stage_id=work.stage_id, job_id=work.job_id,
                           partition=spec.partition, attempt=spec.attempt, ok=error is None, seconds=seconds,
                           gc_s=gc1[0] - gc0[0], error=None if error is None else repr(error),
                           executor=rt.executor_id, **vars(tc.metrics))
        bm = rt.block_manager
        blocks = [(bid, *got) for bid in tc.touched if (got := locate(bm, bid)) is not None]
        map_output = value if work.shuffle_dep is not None else None
        return TaskOutcome(None if map_output is not None else value, tc.metrics, map_output, blocks,
                           rt.cache_snapshot(), seconds, updates)

    # -- requests (``messages.py``) --------------------------------------------------------------
    def handle(self, request: ExecutorRequest) -> Any:
        """Answers one request of the driver (or of another executor, relayed) with its
        handler, found by the request's type; a TypeError for anything that is not one."""
        handler = self._HANDLERS.get(type(request))
        if handler is None:
            known = ", ".join(t.__name__ for t in REQUEST_TYPES)
            raise TypeError(f"executor: {request!r} is not an executor request (one of {known}, from "
                            f"strataflow.executor.messages)")
        return handler(self, request)

    def _on_metrics(self, req: GetMetrics) -> dict:
        return self.runtime.metrics()

    def _on_snapshot(self, req: GetCacheSnapshot) -> dict:
        return self.runtime.cache_snapshot()

    def _on_storage_status(self, req: GetStorageStatus) -> Any:
        return self.runtime.storage_status()

    def _on_measure_tiers(self, req: MeasureTiers) -> dict[str, dict]:
        return self.runtime.measure_tiers(req.size)

    def _on_registry_sizes(self, req: GetRegistrySizes) -> dict:
        from strataflow.executor.introspect import executor_registry_sizes

        return executor_registry_sizes(self)

    def _on_ping(self, req: Ping) -> str:
        return self.runtime.executor_id

    def _on_fetch_block(self, req: FetchBlock) -> Any:
        rt = self.runtime
        value = rt.block_manager.serve_peer(req.block_id)
        if value is MISS:
            raise BlockUnavailable(f"executor {rt.executor_id} no longer holds block {req.block_id}")
        return value

    def _on_unpersist(self, req: Unpersist) -> int:
        rt = self.runtime
        info = rt.block_manager.info(req.dataset_id)
        removed = rt.unpersist(req.dataset_id)
        _forget_dataset_estimates(rt, req.dataset_id)
        if info is not None and info.level.deserialized and rt.block_manager.gc_free:
            _collect_unfrozen()
        return removed

    def _on_forget_stage(self, req: ForgetStage) -> None:
        self.forget_stage(req.stage_key)

    def _on_cancel_stage(self, req: CancelStage) -> None:
        self.cancel_stage(req.stage_key)

    def _on_remove_lost_executor(self, req: RemoveLostExecutor) -> int:
        return self.runtime.remove_lost_executor(req.executor_id)

    def _on_remove_map_outputs(self, req: RemoveMapOutputs) -> int:
        return self.runtime.remove_map_outputs(list(req.outputs))

    def _on_forget_shuffles(self, req: ForgetShuffles) -> int:
        return forget_shuffle_indexes(req.shuffle_ids, self.runtime.spec.shuffle_dirs)

    def _on_forget_broadcasts(self, req: ForgetBroadcasts) -> int:
        from strataflow.shipping.broadcast import forget_loaded

        return forget_loaded(*req.broadcast_ids)

    def _on_preload(self, req: Preload) -> None:
        threading.Thread(target=_import_all, args=(req.modules,), daemon=True, name="strataflow-preload").start()

    #: request type -> its handler: one each (``tests/test_executor_messages.py`` checks)
    _HANDLERS: ClassVar[dict[type, Callable[["ExecutorCore", Any], Any]]] = {
        GetMetrics: _on_metrics, GetCacheSnapshot: _on_snapshot, GetStorageStatus: _on_storage_status,
        MeasureTiers: _on_measure_tiers, GetRegistrySizes: _on_registry_sizes, Ping: _on_ping,
        FetchBlock: _on_fetch_block, Unpersist: _on_unpersist, ForgetStage: _on_forget_stage,
        CancelStage: _on_cancel_stage, RemoveLostExecutor: _on_remove_lost_executor,
        RemoveMapOutputs: _on_remove_map_outputs, ForgetShuffles: _on_forget_shuffles,
        ForgetBroadcasts: _on_forget_broadcasts, Preload: _on_preload,
    }


def _import_all(modules: tuple[str, ...]) -> None:
    """Imports ``modules`` in turn; one that fails is left for the task that needs it to
    report (a preload is a head start, never a new way to fail)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the task's own import raises it where it matters
            pass


def _forget_dataset_estimates(rt: ExecutorRuntime, dataset_id: int) -> None:
    """Drops what this executor measured of an unpersisted dataset beyond its blocks (the
    block manager's ``unregister`` drops those, and the policy's, AUTO's and the region
    store's tables): the disk writer's bytes-in-memory per byte-on-disk estimate, one
    entry per dataset that ever spilled deserialized blocks, which grew with every such
    dataset a long-lived executor saw (issue 50; ``registry_sizes``' ``disk_inflation``).

    It belongs in ``BlockManager.unregister`` (``storage/manager.py``) with a
    ``DiskWriter.forget_dataset``; it is here, reading the writer's table, until those
    files' owners move it."""
    inflation = getattr(rt.block_manager.writes, "_inflation", None)
    if inflation is not None:
        inflation.pop(dataset_id, None)


def _collect_unfrozen() -> None:
    """Collects the cyclic garbage an unpersist has just unfrozen.

    With ``gc_free_cache`` every records block put in memory calls ``gc.freeze()``, which
    moves every live object to the permanent generation: the stage running then, its
    lineage and closures among them. Once that stage is forgotten those objects are
    cyclic garbage no collection walks; the unpersist of a deserialized dataset unfreezes
    them (``BlockManager.unregister``), but the next block put froze them again before
    any full collection ran, so each such put kept a stage's garbage for good: ~1.2 KB an
    iteration of the soak's loop (issue 50). One full collection here releases them: it
    walks every object, the cached records of other datasets too (the unfreeze released
    them all until the next put), once per unpersist of a deserialized dataset, where the
    collector's own gen-2 runs are what ``gc_free_cache`` keeps off the cache."""
    gc.collect()
