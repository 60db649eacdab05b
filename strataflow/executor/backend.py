"""The backend interface: how the driver starts, reaches and stops one executor.

An :class:`ExecutorHandle` is the driver's view of one executor, whatever runs it: it
accepts tasks (the stage's work goes first, once), answers requests (``call``: a record of
``messages.py``), and
reports its loss to the callback it was given. Its class is the backend: class attributes
declare what the backend can do, which the rest of the engine asks instead of testing a
backend's name, and ``start``/``open_session`` how its executors start. The built-in ones
(``threads.LocalExecutor``: one executor inside the driver's process, for debugging,
nothing pickled; ``processes.ProcessExecutor``: one process each; ``ray.handle.RayExecutor``:
a Ray actor each, on a cluster's nodes) are registered by name in ``backends.py``; each
imports only this module, never the registry.
"""

from __future__ import annotations

import abc
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from strataflow.config.backends import SHIPS_BY_FILE
from strataflow.metrics import EventBus
from strataflow.executor.messages import ExecutorRequest
from strataflow.executor.work import StageWork, TaskOutcome, TaskSpec

if TYPE_CHECKING:
    from strataflow.config import Config
    from strataflow.executor.runtime import ExecutorSpec

__all__ = ["ExecutorHandle", "fail_waiting", "LostCallback", "Peers", "SourceServer"]

#: ``on_lost(handle, reason)``: called once, from any thread, when an executor is gone
LostCallback = Callable[["ExecutorHandle", str], None]
#: ``peers(executor_id)``: another live executor of the application (None: gone), for
#: relaying the blocks one executor's task reads from another's memory
Peers = Callable[[str], "ExecutorHandle | None"]
#: ``serve(uid, split, reason, executor_id) -> (value, file_ok)``: the driver's copy of a
#: source slice an executor could not read (``source_store.SourceStore.serve``)
SourceServer = Callable[[str, int, "str | None", str], tuple]


class ExecutorHandle(abc.ABC):
    """One executor, seen from the driver; the class is its backend."""

    # -- what the backend is and can do (class attributes, read through the registry) --------
    #: the name ``backend=`` and the CLI's ``--backend`` take (lower case)
    name: ClassVar[str]
    #: one executor inside the driver's process: its task threads share the driver's objects
    #: (nothing is pickled, a monkeypatch reaches them, the driver's GC is the executor's), it
    #: uses the application's directories themselves, and it takes no ``executors`` > 1
    in_driver_process: ClassVar[bool] = False
    #: the executors run on the driver's machine and read its files: map outputs are read
    #: from their files, and the machine's memory and task-slot bounds apply
    shares_local_files: ClassVar[bool] = True
    #: how sources, broadcasts and added files reach the executors: ``"file"`` (written once
    #: under the application's directories) or ``"object_store"`` (the cluster's)
    ships_by: ClassVar[str] = SHIPS_BY_FILE
    #: ``kill()`` ends an executor as a crash would (fault tests, Ctrl-C)
    can_kill: ClassVar[bool] = False
    #: a module the backend needs that is an optional extra (``pip install strataflow[<name>]``)
    requires_module: ClassVar[str | None] = None
    #: takes ``address=`` (a cluster to connect to; None: it starts its own)
    takes_address: ClassVar[bool] = False

    executor_id: str
    cores: int
    #: the cluster node it runs on (None: the driver's machine); delay scheduling's
    #: node-local level prefers a busy holder's node
    node_id: str | None = None

    @property
    def needs_pickled_stages(self) -> bool:
        """Whether ``submit`` needs the stage's work pickled (it crosses a process boundary)."""
        return not self.in_driver_process

    # -- how it starts ---------------------------------------------------------------------
    @classmethod
    def open_session(cls, config: "Config") -> Any:
        """What the backend shares among an application's executors, made before the first
        one starts and closed (``close()``) after the last stops: a cluster's connection;
        None when nothing is shared."""
        return None

    @classmethod
    @abc.abstractmethod
    def start(cls, spec: "ExecutorSpec", events: EventBus, on_lost: LostCallback, peers: "Peers | None",
              session: Any, sources: "SourceServer | None") -> "ExecutorHandle":
        """A new executor (it may still be starting: ``wait_ready``). ``peers``: the other
        live executors; ``session``: what ``open_session`` made; ``sources``: the driver's
        source store, answering an executor that could not read a slice."""

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
    def call(self, request: ExecutorRequest, timeout: float | None = 60.0) -> Any:
        """Sends the executor ``request`` (``ExecutorCore.handle`` answers it) and waits for
        the answer."""

    def call_async(self, request: ExecutorRequest) -> "Future[Any]":
        """``call`` without waiting: a future of the answer (this default answers at once,
        for executors whose ``call`` does not wait on anything)."""
        fut: Future = Future()
        try:
            fut.set_result(self.call(request))
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


def fail_waiting(ready: Future, pending: list[Future], err: BaseException) -> None:
    """An executor gone (lost or stopped): whoever waits for it to be ready, and for its
    pending tasks and answers, gets ``err``."""
    if not ready.done():
        ready.set_exception(err)
    for fut in pending:
        if not fut.done():
            fut.set_exception(err)
