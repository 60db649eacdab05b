"""The ray backend's handle: the driver's end of one executor actor, and the backend's
entry in the registry (what it can do, and how its executors start).

Ray is imported where it is first used, not here: the registry imports this module with
strataflow, which must neither need Ray nor pay its import."""

from __future__ import annotations

import pickle
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from strataflow.shuffle.key_hash import EXECUTOR_HASH_SEED
from strataflow.config import Config
from strataflow.config.backends import SHIPS_BY_OBJECT_STORE
from strataflow.metrics import EventBus
from strataflow.storage.peer_blocks import PeerBlock
from strataflow.executor.backend import ExecutorHandle, LostCallback, Peers, SourceServer, fail_waiting
from strataflow.executor.messages import ExecutorRequest, ForgetStage, RemoveLostExecutor
from strataflow.executor.ray import short_error
from strataflow.executor.runtime import ExecutorSpec
from strataflow.executor.work import ExecutorLost, StageWork, TaskOutcome, TaskSpec
from strataflow.common.retries import infrastructure_fault

if TYPE_CHECKING:
    from strataflow.executor.ray.session import RaySession

__all__ = ["RayExecutor"]

_EVENTS_WAIT_S = 5.0  # an idle executor answers its events poll this often
_STOP_S = 10.0
_INLINE_STAGE_BYTES = 32 << 10  # a stage (and its plan) up to this size travels in line
_INLINE_REPLY_BYTES = 256 << 10  # a task result up to this size is taken on Ray's callback thread
_START_RETRIES = 5  # an actor that dies before it is ready (its bundle's node died): made again
_START_RETRY_S = 1.0


class RayExecutor(ExecutorHandle):
    """The driver's end of one executor actor."""

    name = "ray"
    shares_local_files = False  # executors on other nodes: map outputs, sources and files go through Ray
    ships_by = SHIPS_BY_OBJECT_STORE
    can_kill = True
    requires_module = "ray"
    takes_address = True

    @classmethod
    def open_session(cls, config: Config) -> "RaySession":
        from strataflow.executor.ray.session import RaySession

        return RaySession(config)

    @classmethod
    def start(cls, spec: ExecutorSpec, events: EventBus, on_lost: LostCallback, peers: Peers | None,
              session: Any, sources: SourceServer | None) -> "RayExecutor":
        return cls(spec, events, on_lost, peers, session)

    def __init__(self, spec: ExecutorSpec, events: EventBus, on_lost: LostCallback, peers: Peers | None,
                 session: RaySession) -> None:
        self.executor_id = spec.executor_id
        self.cores = spec.config.cores_per_executor
        self._events = events
        self._on_lost = on_lost
        self._peers = peers
        self.session = session
        self._lock = threading.Lock()
        self._pending: dict[int, Future] = {}
        self._stage_refs: dict[str, Any] = {}
        self._ready: Future = Future()
        self._lost_reason: str | None = None
        self._stopped = False
        self.pid: int | None = None
        self._acked = -1  # the version of the session's directory the actor has
        self.node_id: str | None = None
        self.host: str | None = None
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._dispatcher = threading.Thread(target=self._dispatch, daemon=True,
                                            name=f"strataflow-executor-{self.executor_id}")
        self._dispatcher.start()
        self._spec = spec
        self._restarts_left = _START_RETRIES
        self.bundle = session.acquire()
        try:
            self._create()
        except BaseException:
            session.release(self.bundle)
            self._inbox.put(None)
            raise

    def _create(self) -> None:
        from strataflow.executor.ray.actor import actor_class

        self.actor = actor_class(self.cores).options(
            num_cpus=self.cores, scheduling_strategy=self.session.strategy(self.bundle),
            # a worker started for the actor starts with the executors' hash seed, even where the
            # user's own ray.init came first (Ray merges env_vars with the job's: key_hash.py)
            runtime_env={"env_vars": {"PYTHONHASHSEED": EXECUTOR_HASH_SEED}}).remote(self._spec)
        self._watch(self.actor.ready.remote(), "ready", None)

    def _restart(self, exc: BaseException) -> bool:
        """An actor that died before it was ready, not of its constructor (the node of its
        bundle died before Ray moved the bundle): made again, a few times. True if so."""
        if self._ready.done() or self._stopped or self._restarts_left <= 0 or getattr(exc, "actor_init_failed", False):
            return False
        self._restarts_left -= 1
        import ray

        try:
            ray.kill(self.actor, no_restart=True)
        except Exception:  # noqa: BLE001
            pass
        time.sleep(_START_RETRY_S)  # nothing else waits on the dispatcher before ``ready``
        try:
            self._create()
        except Exception:  # noqa: BLE001
            return False
        return True

    # -- state ---------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._lost_reason is None and not self._stopped

    def wait_ready(self, timeout: float) -> None:
        try:
            self._ready.result(timeout)
        except TimeoutError:
            self.kill()
            raise ExecutorLost(self.executor_id, f"not ready after {timeout:.0f} s (not enough free CPUs "
                                                 f"in the Ray cluster?)") from None

    # -- replies --------------------------------------------------------------------------------
    def _watch(self, ref, kind: str, fut: "Future | list[Future] | None") -> None:
        if fut is not None:
            with self._lock:
                for f in (fut if isinstance(fut, list) else [fut]):
                    self._pending[id(f)] = f
        ref.future().add_done_callback(lambda rf: self._reply(kind, rf, fut))

    def _settle(self, fut: "Future | list[Future] | None", exc: BaseException) -> None:
        """Fails what waits on a reply that will not come."""
        for f in (fut if isinstance(fut, list) else [fut] if fut is not None else []):
            if not f.done():
                f.set_exception(exc)

    def _reply(self, kind: str, rf: Future, fut: Future | None) -> None:
        """Runs on Ray's thread: a task's or a question's answer that came back whole and
        small is handed over here (a thread hop less per task); anything else -- errors,
        large results to copy, events, readiness -- goes to the dispatcher thread, so Ray's
        thread never calls Ray or copies much."""
        if kind in ("task", "tasks", "call") and fut is not None and rf.exception() is None:
            result = rf.result()
            replies = result[0] if kind == "tasks" else [result]
            if all(r[0] == "ok" for r in replies) and (
                    kind == "call" or sum(a.nbytes for r in replies for a in r[2]) <= _INLINE_REPLY_BYTES):
                self._unwatch(fut)
                try:
                    self._handle(kind, result, fut)
                except BaseException as exc:  # noqa: BLE001 - a reply that does not unpickle here
                    self._settle(fut, exc)
                return
        self._inbox.put((kind, rf, fut))

    def _unwatch(self, fut: "Future | list[Future] | None") -> None:
        if fut is not None:
            with self._lock:
                for f in (fut if isinstance(fut, list) else [fut]):
                    self._pending.pop(id(f), None)

    def _forward(self, records: list[dict]) -> None:
        for r in records:
            r.setdefault("executor", self.executor_id)
            self._events.forward(r)

    def _poll_events(self) -> None:
        if self.alive:
            try:
                self._watch(self.actor.events.remote(_EVENTS_WAIT_S), "events", None)
            except Exception as exc:  # noqa: BLE001 - Ray is gone
                self._lost(short_error(exc))

    def _dispatch(self) -> None:
        from ray.exceptions import RayActorError

        while True:
            item = self._inbox.get()
            if item is None:
                return
            kind, rf, fut = item
            self._unwatch(fut)
            try:
                result = rf.result()
            except RayActorError as exc:
                if kind == "ready" and self._restart(exc):
                    continue
                if not self._stopped:
                    self._lost(f"its Ray actor died ({short_error(exc)})")
                self._settle(fut, ExecutorLost(self.executor_id, self._lost_reason or "stopped"))
                continue
            except BaseException as exc:  # noqa: BLE001 - another Ray error (an object lost, Ray stopping)
                if kind in ("events", "ready") and not self._stopped:
                    self._lost(f"its Ray actor does not answer ({short_error(exc)})")
                # Ray's machinery failed, not the task's code (that comes back as a reply):
                # retried as an infrastructure fault (retries.py)
                self._settle(fut, infrastructure_fault(exc) if isinstance(exc, Exception) else exc)
                continue
            try:
                self._handle(kind, result, fut)
            except BaseException as exc:  # noqa: BLE001 - a reply that does not unpickle here
                self._settle(fut, exc)

    def _handle(self, kind: str, result: Any, fut: Future | None) -> None:
        if kind == "ready":
            self.pid, self.node_id, self.host = result
            self.session.join(self.executor_id, self.node_id, self.actor)
            if not self._ready.done():
                self._ready.set_result(True)
            self._poll_events()
        elif kind == "events":
            records, stopped = result
            self._forward(records)
            if not stopped:
                self._poll_events()
        elif kind == "task" or kind == "tasks":
            self._acked = max(self._acked, result[-1])
            if result[-2]:
                self._forward(result[-2])
            replies, futs = (result[0], fut) if kind == "tasks" else ([result[:-2]], [fut])
            for reply, f in zip(replies, futs):
                try:
                    if reply[0] == "ok":
                        _, head, arrays = reply
                        f.set_result(pickle.loads(head, buffers=[bytearray(a) for a in arrays]))  # writable, as processes'
                    else:
                        f.set_exception(pickle.loads(reply[1]))
                except BaseException as exc:  # noqa: BLE001 - one reply that does not unpickle here
                    if not f.done():
                        f.set_exception(exc)
        elif kind == "call":
            status, value, records = result
            if records:
                self._forward(records)
            if fut is not None:
                if status == "ok":
                    fut.set_result(value)
                else:
                    fut.set_exception(pickle.loads(value))

    def _lost(self, reason: str) -> None:
        with self._lock:
            if self._lost_reason is not None or self._stopped:
                return
            self._lost_reason = reason
            pending = list(self._pending.values())
            self._pending.clear()
            self._stage_refs.clear()
        import ray

        try:
            ray.kill(self.actor, no_restart=True)  # an unreachable actor must not come back
        except Exception:  # noqa: BLE001
            pass
        self.session.leave(self.executor_id)
        self._clean_up_after()
        self.session.release(self.bundle)  # first: the replacement takes this bundle
        self.bundle = None
        self._on_lost(self, reason)  # then: the driver forgets its blocks before tasks retry
        fail_waiting(self._ready, pending, ExecutorLost(self.executor_id, reason))
        self._inbox.put(None)

    def _clean_up_after(self) -> None:
        """A lost executor's directories are on its node, which the driver may not reach:
        an executor of that node (if it still has one) removes them."""
        _, members, _ = self.session.directory()
        sibling = next((actor for eid, (node, actor) in members.items()
                        if node == self.node_id and eid != self.executor_id), None)
        if sibling is not None:
            try:
                sibling.call.remote(RemoveLostExecutor(self.executor_id))
            except Exception:  # noqa: BLE001 - Ray is going; the node's dirs go with the app
                pass

    # -- requests ----------------------------------------------------------------------------------
    def _failed(self) -> Future:
        fut: Future = Future()
        fut.set_exception(ExecutorLost(self.executor_id, self._lost_reason or "stopped"))
        return fut

    def _localize(self, spec: TaskSpec) -> TaskSpec:
        """The task's peer blocks as this executor can read them: a disk copy on its own
        node from the file, anything else from the holder's actor (``_fetch``)."""
        if not spec.peers or self._peers is None:
            return spec
        out: dict = {}
        for bid, pb in spec.peers.items():
            holder = self._peers(pb.executor_id)
            same_node = isinstance(holder, RayExecutor) and holder.node_id == self.node_id
            out[bid] = pb if pb.source is None or same_node else PeerBlock(pb.executor_id, pb.where, None)
        return replace(spec, peers=out)

    def submit(self, work: StageWork, payload: bytes | None, plan: list | None, spec: TaskSpec) -> "Future[TaskOutcome]":
        return self.submit_many(work, payload, plan, [spec])[0]

    def submit_many(self, work: StageWork, payload: bytes | None, plan: list | None,
                    specs: list[TaskSpec], together: bool = False) -> "list[Future[TaskOutcome]]":
        """One ``run`` call per task; tasks sent ``together`` go as ``run_many`` calls, one
        per task thread of the executor (each a share of them, in order)."""
        if not self.alive:
            return [self._failed() for _ in specs]
        futs: list[Future] = [Future() for _ in specs]
        try:
            with self._lock:
                first = work.key not in self._stage_refs
                if first:
                    self._stage_refs[work.key] = None
            if first:
                size = len(payload or b"") + (0 if plan is None else 64 * len(plan))
                # a small stage goes in line; a large one through the object store (the
                # reference kept here until the stage is forgotten)
                ref = (payload, plan) if size <= _INLINE_STAGE_BYTES else _put((payload, plan))
                with self._lock:
                    self._stage_refs[work.key] = ref
                self._watch(self.actor.add_stage.remote(work.key, [ref]), "call", None)
            # the session's directory goes with every task until the actor has it
            directory = self.session.directory() if self._acked < self.session.version else None
            tasks = [pickle.dumps(self._localize(spec), protocol=5) for spec in specs]
            if together and len(specs) > 1:
                threads = min(self.cores, len(specs))
                for t in range(threads):
                    self._watch(self.actor.run_many.remote(tasks[t::threads], directory), "tasks", futs[t::threads])
            else:
                for task, fut in zip(tasks, futs):
                    self._watch(self.actor.run.remote(task, directory), "task", fut)
        except Exception as exc:  # noqa: BLE001 - Ray is gone
            self._lost(short_error(exc))
            self._settle(futs, ExecutorLost(self.executor_id, self._lost_reason or "stopped"))
        return futs

    def forget_stage(self, key: str) -> None:
        with self._lock:
            had = key in self._stage_refs
            self._stage_refs.pop(key, None)
        if had and self.alive:
            try:
                self._watch(self.actor.call.remote(ForgetStage(key)), "call", None)
            except Exception:  # noqa: BLE001
                pass

    def call(self, request: ExecutorRequest, timeout: float | None = 60.0) -> Any:
        return self.call_async(request).result(timeout)

    def call_async(self, request: ExecutorRequest) -> "Future[Any]":
        if not self.alive:
            return self._failed()
        fut: Future = Future()
        try:
            self._watch(self.actor.call.remote(request), "call", fut)
        except Exception as exc:  # noqa: BLE001
            self._lost(short_error(exc))
            if not fut.done():
                fut.set_exception(ExecutorLost(self.executor_id, self._lost_reason or "stopped"))
        return fut

    # -- the end ---------------------------------------------------------------------------------------
    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            was_alive = self._lost_reason is None
            self._stopped = True
            pending = list(self._pending.values())
            self._pending.clear()
            self._stage_refs.clear()
        self.session.leave(self.executor_id)
        if was_alive:
            import ray

            try:
                self._forward(ray.get(self.actor.stop.remote(), timeout=_STOP_S))
            except Exception:  # noqa: BLE001 - dead already, or Ray is shutting down
                pass
            try:
                ray.kill(self.actor, no_restart=True)
            except Exception:  # noqa: BLE001
                pass
            self.session.release(self.bundle)
            self.bundle = None
        fail_waiting(self._ready, pending, ExecutorLost(self.executor_id, "stopped"))
        self._inbox.put(None)
        if threading.current_thread() is not self._dispatcher:
            self._dispatcher.join(5.0)

    def kill(self) -> None:
        """Kills the actor (as a crash would): its loss is seen by its pending calls."""
        import ray

        try:
            ray.kill(self.actor, no_restart=True)
        except Exception:  # noqa: BLE001
            pass


def _put(value: Any) -> Any:
    """``ray.put``: a large stage's reference in the object store."""
    import ray

    return ray.put(value)
