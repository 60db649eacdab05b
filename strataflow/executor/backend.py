"""The backend interface: how the driver starts, reaches and stops one executor.

An :class:`ExecutorHandle` is the driver's view of one executor, whatever runs it: it
accepts tasks (the stage's work goes first, once), answers questions (``call``), and
reports its loss to the callback it was given. Three implementations: :class:`LocalExecutor`
(the ``threads`` backend: one executor inside the driver's process, today's engine, for
debugging: nothing is pickled), ``processes.ProcessExecutor`` (one process each) and
``ray_backend.RayExecutor`` (a Ray actor each, on a cluster's nodes): a third handle,
not a new scheduler.
"""

from __future__ import annotations

import abc
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from strataflow.metrics import EventBus
from strataflow.executor.core import ExecutorCore
from strataflow.executor.runtime import ExecutorRuntime, ExecutorSpec
from strataflow.executor.work import ExecutorLost, StageWork, TaskOutcome, TaskSpec

__all__ = ["ExecutorHandle", "LocalExecutor", "fail_waiting", "LostCallback", "Peers", "SourceServer", "open_session",
           "start_executor"]

#: ``on_lost(handle, reason)``: called once, from any thread, when an executor is gone
LostCallback = Callable[["ExecutorHandle", str], None]
#: ``peers(executor_id)``: another live executor of the application (None: gone), for
#: relaying the blocks one executor's task reads from another's memory
Peers = Callable[[str], "ExecutorHandle | None"]
#: ``serve(uid, split, reason, executor_id) -> (value, file_ok)``: the driver's copy of a
#: source slice an executor could not read (``source_store.SourceStore.serve``)
SourceServer = Callable[[str, int, "str | None", str], tuple]


class ExecutorHandle(abc.ABC):
    """One executor, seen from the driver."""

    executor_id: str
    cores: int
    #: whether ``submit`` needs the stage's work pickled (it crosses a process boundary)
    needs_pickled_stages: bool = True
    #: the cluster node it runs on (None: the driver's machine); delay scheduling's
    #: node-local level prefers a busy holder's node
    node_id: str | None = None

    @property
    @abc.abstractmethod
    def alive(self) -> bool: ...

    @abc.abstractmethod
    def wait_ready(self, timeout: float) -> None:
        """Returns when the executor can take tasks; raises ExecutorLost if it cannot."""

    @abc.abstractmethod
    def submit(self, work: StageWork, payload: bytes | None, plan: list | None, spec: TaskSpec) -> "Future[TaskOutcome]":
        """Runs one task; the future fails with the task's exception, or ExecutorLost."""

    def submit_many(self, work: StageWork, payload: bytes | None, plan: list | None,
                    specs: list[TaskSpec], together: bool = False) -> "list[Future[TaskOutcome]]":
        """Runs several tasks of one stage, queued in this order (a backend that crosses a
        process boundary sends them as one message); a future each, as ``submit``'s.
        ``together``: the driver waits for all of them, so their results may come back
        in one message when the last ends (a failure still comes at once)."""
        return [self.submit(work, payload, plan, spec) for spec in specs]

    @abc.abstractmethod
    def call(self, op: str, *args: Any, timeout: float | None = 60.0) -> Any:
        """Asks the executor (``ExecutorCore.call``) and waits for the answer."""

    def call_async(self, op: str, *args: Any) -> "Future[Any]":
        """``call`` without waiting: a future of the answer (this default answers at once,
        for executors whose ``call`` does not wait on anything)."""
        fut: Future = Future()
        try:
            fut.set_result(self.call(op, *args))
        except Exception as exc:  # noqa: BLE001 - the caller reads it from the future
            fut.set_exception(exc)
        return fut

    @abc.abstractmethod
    def forget_stage(self, key: str) -> None:
        """The stage is over: the executor may drop its work."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stops the executor and removes its directories (it is not 'lost')."""

    def kill(self) -> None:
        """Ends the executor abruptly, as a crash would (for tests and Ctrl-C)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be killed")


class LocalExecutor(ExecutorHandle):
    """The threads backend's executor: a runtime in the driver's process and a pool of
    task threads; events go straight to the driver's bus."""

    needs_pickled_stages = False

    def __init__(self, spec: ExecutorSpec, events: EventBus, on_lost: LostCallback | None = None) -> None:
        self.executor_id = spec.executor_id
        self.cores = spec.config.cores_per_executor
        self.runtime = ExecutorRuntime(spec, events)
        self.core = ExecutorCore(self.runtime)
        self.pool = ThreadPoolExecutor(max_workers=self.cores, thread_name_prefix="strataflow-task")
        self._alive = True

    @property
    def alive(self) -> bool:
        return self._alive

    def wait_ready(self, timeout: float) -> None:
        return None

    def submit(self, work: StageWork, payload: bytes | None, plan: list | None, spec: TaskSpec) -> "Future[TaskOutcome]":
        if not self._alive:
            fut: Future = Future()
            fut.set_exception(ExecutorLost(self.executor_id, "stopped"))
            return fut
        if not self.core.has_stage(work.key):
            self.core.add_stage(work, plan)
        return self.pool.submit(self.core.run, spec)

    def call(self, op: str, *args: Any, timeout: float | None = 60.0) -> Any:
        return self.core.call(op, *args)

    def forget_stage(self, key: str) -> None:
        self.core.forget_stage(key)

    def stop(self) -> None:
        if not self._alive:
            return
        self._alive = False
        self.core.cancel_all()  # running tasks stop at their next partition read
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.runtime.close()


def fail_waiting(ready: Future, pending: list[Future], err: BaseException) -> None:
    """An executor gone (lost or stopped): whoever waits for it to be ready, and for its
    pending tasks and answers, gets ``err``."""
    if not ready.done():
        ready.set_exception(err)
    for fut in pending:
        if not fut.done():
            fut.set_exception(err)


def open_session(config: Any) -> Any:
    """What a backend shares among an application's executors, made before the first one
    starts and closed after the last stops (``close()``): the ray backend's connection and
    placement group; None for the others."""
    if config.backend == "ray":
        from strataflow.executor.ray_backend import RaySession

        return RaySession(config)
    return None


def start_executor(kind: str, spec: ExecutorSpec, events: EventBus, on_lost: LostCallback,
                   peers: Peers | None = None, session: Any = None,
                   sources: SourceServer | None = None) -> ExecutorHandle:
    """A new executor of the backend ``kind`` (it may still be starting: ``wait_ready``);
    ``session``: what ``open_session`` made for the application; ``sources``: the driver's
    source store, answering an executor process that could not read a slice."""
    if kind == "threads":
        return LocalExecutor(spec, events, on_lost)
    if kind == "processes":
        from strataflow.executor.processes import ProcessExecutor

        return ProcessExecutor(spec, events, on_lost, peers, sources)
    if kind == "ray":
        from strataflow.executor.ray_backend import RayExecutor

        return RayExecutor(spec, events, on_lost, peers, session)
    raise ValueError(f"unknown backend {kind!r}")
