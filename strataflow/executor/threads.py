"""The threads backend: one executor inside the driver's process, for debugging.

Its tasks run on a pool of threads over the driver's own objects: nothing is pickled, a
breakpoint or a monkeypatch in the driver reaches them, and the executor's runtime uses
the application's directories themselves (it is never lost, so nothing else writes there).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from strataflow.metrics import EventBus
from strataflow.executor.backend import ExecutorHandle, LostCallback, Peers, SourceServer
from strataflow.executor.core import ExecutorCore
from strataflow.executor.messages import ExecutorRequest
from strataflow.executor.runtime import ExecutorRuntime, ExecutorSpec
from strataflow.executor.work import ExecutorLost, StageWork, TaskOutcome, TaskSpec

__all__ = ["LocalExecutor"]


class LocalExecutor(ExecutorHandle):
    """The threads backend's executor: a runtime in the driver's process and a pool of
    task threads; events go straight to the driver's bus."""

    name = "threads"
    in_driver_process = True

    @classmethod
    def start(cls, spec: ExecutorSpec, events: EventBus, on_lost: LostCallback, peers: Peers | None,
              session: Any, sources: SourceServer | None) -> "LocalExecutor":
        return cls(spec, events, on_lost)

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

    def call(self, request: ExecutorRequest, timeout: float | None = 60.0) -> Any:
        return self.core.handle(request)

    def forget_stage(self, key: str) -> None:
        self.core.forget_stage(key)

    def stop(self) -> None:
        if not self._alive:
            return
        self._alive = False
        self.core.cancel_all()  # running tasks stop at their next partition read
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.runtime.close()
