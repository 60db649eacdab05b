"""The processes backend: one executor per process, on this machine.

Each executor is a fresh interpreter (``python -m strataflow.executor.worker``: a spawn,
so the driver's threads and locks are never forked, and the user's script is not
re-imported) connected to the driver by a socket pair. A receiver thread per executor
reads its messages: task outcomes complete their futures, replies answer ``call``, the
events the executor posted are re-posted on the driver's bus with its id, and a request
for a block another executor holds in memory is relayed to that one (``fetch``: its
answer goes back when it comes, so no receiver ever waits on another). An end of
file on the socket means the executor is gone: every task it had fails with
:class:`ExecutorLost` and the fleet is told (``on_lost``).
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import threading
from concurrent.futures import Future
from multiprocessing.connection import Connection
from typing import Any

from strataflow.shuffle.key_hash import EXECUTOR_HASH_SEED
from strataflow.metrics import EventBus
from strataflow.executor import wire
from strataflow.executor.backend import ExecutorHandle, LostCallback, Peers, SourceServer, fail_waiting
from strataflow.executor.messages import ExecutorRequest, FetchBlock
from strataflow.executor.runtime import ExecutorSpec
from strataflow.executor.work import ExecutorLost, StageWork, TaskOutcome, TaskSpec

__all__ = ["ProcessExecutor"]

_FORGET_BATCH = 16  # finished stages an executor may keep before it is told to drop them

_BLAS_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


class ProcessExecutor(ExecutorHandle):
    """The driver's end of one executor process."""

    name = "processes"
    can_kill = True

    @classmethod
    def start(cls, spec: ExecutorSpec, events: EventBus, on_lost: LostCallback, peers: Peers | None,
              session: Any, sources: SourceServer | None) -> "ProcessExecutor":
        return cls(spec, events, on_lost, peers, sources)

    def __init__(self, spec: ExecutorSpec, events: EventBus, on_lost: LostCallback,
                 peers: Peers | None = None, sources: SourceServer | None = None) -> None:
        self.executor_id = spec.executor_id
        self.cores = spec.config.cores_per_executor
        self._events = events
        self._on_lost = on_lost
        self._peers = peers
        self._sources = sources
        self._lock = threading.Lock()  # the futures tables and the stages sent
        self._send_lock = threading.Lock()
        self._tasks: dict[int, Future] = {}
        self._replies: dict[int, Future] = {}
        self._req_ids = itertools.count()
        self._stages_sent: set[str] = set()
        self._to_forget: list[str] = []  # finished stages, forgotten with the next stage message
        self._ready: Future = Future()
        self._stopped = threading.Event()
        self._lost_reason: str | None = None
        self.pid: int | None = None
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        for name in _BLAS_ENV:  # before numpy is imported there: BLAS reads them at load
            env[name] = str(spec.config.blas_threads)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [os.getcwd(), *sys.path, env.get("PYTHONPATH", "")] if p)
        env["PYTHONHASHSEED"] = EXECUTOR_HASH_SEED  # every executor hashes a user's key class alike (key_hash.py)
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "strataflow.executor.worker", str(theirs.fileno())],
                                         pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        wire.send(self.conn, spec, self._send_lock)
        self._receiver = threading.Thread(target=self._receive, daemon=True,
                                          name=f"strataflow-executor-{self.executor_id}")
        self._receiver.start()

    # -- state ------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._lost_reason is None and not self._stopped.is_set()

    def wait_ready(self, timeout: float) -> None:
        try:
            self._ready.result(timeout)
        except TimeoutError:
            self.kill()
            raise ExecutorLost(self.executor_id, f"not ready after {timeout:.0f} s") from None

    # -- the receiver ---------------------------------------------------------------------------
    def _forward(self, records: list[dict]) -> None:
        for r in records:
            r.setdefault("executor", self.executor_id)
            self._events.forward(r)

    def _receive(self) -> None:
        try:
            while True:
                msg = wire.recv(self.conn)
                kind, events = msg[0], msg[-1]
                if events:
                    self._forward(events)
                if kind == "task_done" or kind == "task_failed":
                    with self._lock:
                        fut = self._tasks.pop(msg[1], None)
                    if fut is not None:
                        (fut.set_result if kind == "task_done" else fut.set_exception)(msg[2])
                elif kind == "tasks_done":  # the results of tasks sent together
                    with self._lock:
                        futs = [(self._tasks.pop(task_id, None), outcome) for task_id, outcome in msg[1]]
                    for fut, outcome in futs:
                        if fut is not None:
                            fut.set_result(outcome)
                elif kind == "reply":
                    _, req_id, ok, value, _ = msg
                    with self._lock:
                        fut = self._replies.pop(req_id, None)
                    if fut is not None:
                        (fut.set_result if ok else fut.set_exception)(value)
                elif kind == "fetch":
                    self._relay(*msg[1:-1])
                elif kind == "source":
                    self._send_source(*msg[1:-1])
                elif kind == "ready":
                    self.pid = msg[1]
                    self._ready.set_result(True)
                elif kind == "failed":
                    raise ExecutorLost(self.executor_id, f"could not start: {msg[1]}")
                elif kind == "stopped":
                    self._stopped.set()
                    return
        except BaseException as exc:  # noqa: BLE001 - EOF, a broken socket, a bad message
            if self._stopped.is_set():
                return
            self._lost(self._why(exc))

    def _relay(self, req_id: int, holder_id: str, bid: Any) -> None:
        """Asks ``holder_id`` for a block this executor's task reads; answers when it does."""
        holder = self._peers(holder_id) if self._peers is not None else None
        if holder is None or holder is self:
            self._answer_fetch(req_id, False, f"executor {holder_id} is gone")
            return

        def done(fut: Future) -> None:
            exc = fut.exception()
            self._answer_fetch(req_id, exc is None, fut.result() if exc is None else f"{type(exc).__name__}: {exc}")

        holder.call_async(FetchBlock(bid)).add_done_callback(done)

    def _send_source(self, req_id: int, uid: str, split: int, reason: str | None) -> None:
        """The driver's copy of a source slice the executor could not read (the store also
        re-writes its file): on a thread of its own, so the receiver goes on reading."""

        def answer() -> None:
            try:
                value = self._sources(uid, split, reason, self.executor_id)
            except Exception as exc:  # noqa: BLE001 - the task fails, naming why
                self._answer_fetch(req_id, False, f"{type(exc).__name__}: {exc}")
                return
            self._answer_fetch(req_id, True, value)

        if self._sources is None:
            self._answer_fetch(req_id, False, f"source {uid} slice {split}: {reason}; the driver keeps no sources")
            return
        threading.Thread(target=answer, daemon=True, name=f"strataflow-source-{self.executor_id}").start()

    def _answer_fetch(self, req_id: int, ok: bool, value: Any) -> None:
        try:
            self._send(("fetched", req_id, ok, value))
        except ExecutorLost:
            pass  # the asking executor is gone: nobody waits for the answer

    def _why(self, exc: BaseException) -> str:
        if isinstance(exc, ExecutorLost):
            return exc.reason
        try:
            code = self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return f"its connection failed ({type(exc).__name__}: {exc})"
        if code < 0:
            return f"the process was killed by signal {-code}"
        return f"the process exited with code {code}"

    def _lost(self, reason: str) -> None:
        with self._lock:
            if self._lost_reason is not None:
                return
            self._lost_reason = reason
            pending = list(self._tasks.values()) + list(self._replies.values())
            self._tasks.clear()
            self._replies.clear()
        try:
            self.conn.close()
        except OSError:
            pass
        self._on_lost(self, reason)  # first: the driver forgets its blocks before tasks retry
        fail_waiting(self._ready, pending, ExecutorLost(self.executor_id, reason))

    # -- requests ---------------------------------------------------------------------------------
    def _send(self, msg: Any) -> None:
        try:
            wire.send(self.conn, msg, self._send_lock)
        except (OSError, EOFError, ValueError, TypeError) as exc:
            # TypeError: the connection was closed by the loss of the executor while this
            # send was writing (Connection's handle is None then); anything else re-raised
            if isinstance(exc, TypeError) and not self.conn.closed:
                raise
            self._lost(self._why(exc))
            raise ExecutorLost(self.executor_id, self._lost_reason or "gone") from exc

    def submit(self, work: StageWork, payload: bytes | None, plan: list | None, spec: TaskSpec) -> "Future[TaskOutcome]":
        return self.submit_many(work, payload, plan, [spec])[0]

    def submit_many(self, work: StageWork, payload: bytes | None, plan: list | None,
                    specs: list[TaskSpec], together: bool = False) -> "list[Future[TaskOutcome]]":
        futs: list[Future] = [Future() for _ in specs]
        with self._lock:
            if self._lost_reason is not None:
                for fut in futs:
                    fut.set_exception(ExecutorLost(self.executor_id, self._lost_reason))
                return futs
            for spec, fut in zip(specs, futs):
                self._tasks[spec.task_id] = fut
            first = work.key not in self._stages_sent
            self._stages_sent.add(work.key)
            forget, self._to_forget = (self._to_forget, []) if first else ([], self._to_forget)
        try:
            if first:  # the stage, its first tasks and the stages to forget: one message
                self._send(("stage", work.key, payload, plan, forget, specs, together))
            else:
                self._send(("tasks", specs, together))
        except ExecutorLost as exc:
            for fut in futs:
                if not fut.done():
                    fut.set_exception(exc)
        return futs

    def forget_stage(self, key: str) -> None:
        """The executor drops the stage with the next stage message it gets (an iteration's
        job sends no message of its own for it, and gets no reply), or at once when
        ``_FORGET_BATCH`` are waiting."""
        with self._lock:
            if key not in self._stages_sent or self._lost_reason is not None:
                return
            self._stages_sent.discard(key)
            self._to_forget.append(key)
            if len(self._to_forget) < _FORGET_BATCH:
                return
            forget, self._to_forget = self._to_forget, []
        try:
            self._send(("forget", forget))
        except ExecutorLost:
            pass

    def call(self, request: ExecutorRequest, timeout: float | None = 60.0) -> Any:
        return self.call_async(request).result(timeout)

    def call_async(self, request: ExecutorRequest) -> "Future[Any]":
        fut: Future = Future()
        with self._lock:
            if self._lost_reason is not None:
                fut.set_exception(ExecutorLost(self.executor_id, self._lost_reason))
                return fut
            req_id = next(self._req_ids)
            self._replies[req_id] = fut
        try:
            self._send(("call", req_id, request))
        except ExecutorLost as exc:
            if not fut.done():
                fut.set_exception(exc)
        return fut

    # -- the end ------------------------------------------------------------------------------------
    def stop(self) -> None:
        if self._stopped.is_set():
            return
        if self._lost_reason is None:
            try:
                wire.send(self.conn, ("stop",), self._send_lock)
                self._stopped.wait(10.0)
            except (OSError, EOFError, ValueError):
                pass
        self._stopped.set()
        try:
            self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        try:
            self.conn.close()
        except OSError:
            pass

    def kill(self) -> None:
        self.proc.kill()
