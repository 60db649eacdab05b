"""An executor process: ``python -m strataflow.executor.worker FD``.

Started by the processes backend as a fresh interpreter (spawn: never a fork of a driver
that already runs threads), it receives its :class:`ExecutorSpec` on the socket ``FD``,
builds its runtime, says ``ready``, then serves the driver's messages: stages, tasks
(run on ``cores_per_executor`` task threads) and requests (``messages.py``). Replies carry the events its
block manager and tasks posted since the last one, so the driver's event log and
listeners see everything.

It never outlives the driver: the socket's end of file (the driver exited or was
killed) or a parent that is no longer the driver (checked twice a second) ends the
process at once. (Not the kernel's parent-death signal: Linux sends it when the *thread*
that started the process ends, and replacements are started from short-lived threads.) Ctrl-C reaches the whole process group; executors
ignore it and let the driver cancel their tasks.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import sys
import itertools
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from multiprocessing.connection import Connection

from strataflow.executor import wire

_FLUSH_S = 0.2  # events of a busy executor are sent at least this often
_FETCH_S = 60.0  # a block another executor holds in memory: recomputed if it takes longer
_SOURCE_S = 600.0  # a source slice from the driver: the task fails if it takes longer (a hang, not a slow disk)


class _Together:
    """Tasks the driver waits for together (it has nothing left to launch): their results
    go back in one message when the last ends, one wake-up of the driver instead of one
    per task; a failure is sent at once all the same."""

    def __init__(self, tasks: int) -> None:
        self.left = tasks
        self.results: list[tuple[int, object]] = []
        self.lock = threading.Lock()

    def finished(self, done: tuple[int, object] | None) -> list[tuple[int, object]] | None:
        """Counts one task (``done``: its id and outcome, or None: it failed); all the
        results when it was the last."""
        with self.lock:
            if done is not None:
                self.results.append(done)
            self.left -= 1
            return self.results if self.left == 0 else None


class Worker:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.lock = threading.Lock()
        self.outbox: list[dict] = []
        self.outbox_lock = threading.Lock()
        self.fetches: dict[int, Future] = {}
        self.fetch_ids = itertools.count()

    def fetch(self, holder_id: str, bid) -> object:
        """A block in another executor's memory, through the driver (``peer_blocks.py``);
        raises BlockUnavailable when the holder no longer has it or does not answer."""
        from strataflow.storage.disk.disk_store import BlockUnavailable

        req_id = next(self.fetch_ids)
        fut: Future = Future()
        self.fetches[req_id] = fut
        self.send("fetch", req_id, holder_id, bid)
        try:
            ok, value = fut.result(_FETCH_S)
        except FutureTimeout:
            raise BlockUnavailable(f"executor {holder_id} did not send block {bid} in {_FETCH_S:.0f} s") from None
        finally:
            self.fetches.pop(req_id, None)
        if not ok:
            raise BlockUnavailable(f"block {bid} from executor {holder_id}: {value}")
        return value

    def fetch_source(self, uid: str, split: int, reason: str | None) -> tuple[object, bool]:
        """The driver's copy of a source slice this executor could not read from its file
        (``source_slices.py``): ``(value, file_ok)``; SourceSliceError if the driver cannot
        send it."""
        from strataflow.shipping.source_slices import SourceSliceError

        req_id = next(self.fetch_ids)
        fut: Future = Future()
        self.fetches[req_id] = fut
        self.send("source", req_id, uid, split, reason)
        try:
            ok, value = fut.result(_SOURCE_S)
        except FutureTimeout:
            raise SourceSliceError(f"source {uid} slice {split}: the driver did not send it in {_SOURCE_S:.0f} s "
                                   f"({reason})") from None
        finally:
            self.fetches.pop(req_id, None)
        if not ok:
            raise SourceSliceError(value)
        return value

    def _queue_event(self, record: dict) -> None:
        with self.outbox_lock:
            self.outbox.append(record)

    def _take_events(self) -> list[dict]:
        with self.outbox_lock:
            out, self.outbox = self.outbox, []
        return out

    def send(self, kind: str, *fields) -> None:
        try:
            wire.send(self.conn, (kind, *fields, self._take_events()), self.lock)
        except (OSError, EOFError):
            os._exit(0)  # the driver has gone

    def _flusher(self) -> None:
        while True:
            time.sleep(_FLUSH_S)
            with self.outbox_lock:
                pending = bool(self.outbox)
            if pending:
                self.send("events")

    def _watchdog(self, driver_pid: int) -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != driver_pid:
                os._exit(0)

    def serve(self) -> None:
        from strataflow.metrics import EventBus
        from strataflow.executor.core import ExecutorCore
        from strataflow.executor.heap import keep_heap_warm
        from strataflow.executor.runtime import ExecutorRuntime
        from strataflow.shipping.source_slices import register_driver
        from strataflow.executor.work import portable_error
        from strataflow.shuffle.key_hash import refuse_salted_fallback

        refuse_salted_fallback()  # a salted interpreter refuses keys it cannot hash portably

        spec = wire.recv(self.conn)
        threading.Thread(target=self._watchdog, args=(spec.driver_pid,), daemon=True, name="watchdog").start()
        events = EventBus()
        events.subscribe(self._queue_event)
        try:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=spec.config.blas_threads, user_api="blas")
            keep_heap_warm()  # a task's temporaries stay mapped for the next task
            runtime = ExecutorRuntime(spec, events)
        except BaseException as exc:  # noqa: BLE001 - tell the driver why, then go
            self.send("failed", repr(exc))
            os._exit(1)
        runtime.block_manager.fetch_peer = self.fetch
        register_driver(self.fetch_source)
        core = ExecutorCore(runtime)
        pool = ThreadPoolExecutor(max_workers=spec.config.cores_per_executor, thread_name_prefix="strataflow-task")
        threading.Thread(target=self._flusher, daemon=True, name="event-flusher").start()
        self.send("ready", os.getpid())

        def reply(task_id: int, outcome) -> None:
            try:
                self.send("task_done", task_id, outcome)
            except Exception as exc:  # noqa: BLE001 - a result that does not pickle
                self.send("task_failed", task_id, portable_error(exc, wire.dumps))

        def run(task_spec, batch: _Together | None = None) -> None:
            try:
                done = (task_spec.task_id, core.run(task_spec))
            except BaseException as exc:  # noqa: BLE001 - every failure goes back to the driver, at once
                self.send("task_failed", task_spec.task_id, portable_error(exc, wire.dumps))
                done = None
            if batch is None:
                if done is not None:
                    reply(*done)
                return
            results = batch.finished(done)
            if results:
                try:
                    self.send("tasks_done", results)
                except Exception:  # noqa: BLE001 - one result does not pickle: each alone
                    for item in results:
                        reply(*item)

        def queue(specs: list, together: bool) -> None:
            batch = _Together(len(specs)) if together and len(specs) > 1 else None
            for task_spec in specs:
                pool.submit(run, task_spec, batch)

        while True:
            try:
                msg = wire.recv(self.conn)
            except (EOFError, OSError):
                os._exit(0)  # the driver has gone: so do we, at once
            kind = msg[0]
            if kind == "tasks":
                queue(msg[1], msg[2])
            elif kind == "stage":  # a stage, with the finished stages to drop and its first tasks
                _, key, payload, plan, forget, first, together = msg
                for old in forget:
                    core.forget_stage(old)
                try:
                    core.add_stage(pickle.loads(payload), plan)
                except BaseException as exc:  # noqa: BLE001 - e.g. a module the driver has and we lack
                    core.stage_failed(key, exc)  # its tasks fail with this error
                queue(first, together)
            elif kind == "forget":
                for old in msg[1]:
                    core.forget_stage(old)
            elif kind == "fetched":
                fut = self.fetches.get(msg[1])
                if fut is not None:
                    fut.set_result((msg[2], msg[3]))
            elif kind == "call":
                _, req_id, request = msg
                try:
                    self.send("reply", req_id, True, core.handle(request))
                except BaseException as exc:  # noqa: BLE001
                    self.send("reply", req_id, False, portable_error(exc, wire.dumps))
            elif kind == "stop":
                pool.shutdown(wait=False, cancel_futures=True)
                runtime.close()
                self.send("stopped")
                os._exit(0)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=int(argv[0]))
    Worker(Connection(os.dup(sock.fileno()))).serve()


if __name__ == "__main__":
    main()
