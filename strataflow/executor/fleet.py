"""The driver's executors: started through the backend, watched, replaced when lost.

An executor that goes away (killed, crashed, a user function that called ``os._exit``)
is reported once: an ``ExecutorLost`` event, its directories removed (its cached blocks
and shuffle outputs are gone with it; the listeners, the block-location master and the
map-output tracker, forget them so they are recomputed from lineage), and a replacement
started while the budget of replacements lasts (``2 * executors + 2``).

The fleet makes the application's secret key (``storage/frame_auth.py``: 32 random bytes,
in memory only) and gives it to every executor it starts, replacements included, in its
:class:`ExecutorSpec`: every writer and reader of the application's files shares it. While
the executors run, the fleet also registers it for the application's directories in the
driver's process (``storage/app_keys.py``), where the driver writes the source slices that
executors read (``source_store.py``)."""

from __future__ import annotations

import itertools
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from strataflow.config import Config
from strataflow.metrics import EventBus
from strataflow.storage.blocks import app_keys
from strataflow.storage.blocks.frame_auth import FrameAuth, new_key
from strataflow.executor.backend import ExecutorHandle, SourceServer
from strataflow.executor.backends import backend_class, open_session, start_executor
from strataflow.executor.messages import ExecutorRequest, ForgetBroadcasts, Preload
from strataflow.executor.runtime import ExecutorSpec, app_dirs, executor_dirs
from strataflow.executor.work import ExecutorLost

__all__ = ["Fleet"]

_READY_S = 60.0


class Fleet:
    """The live executors of one application."""

    def __init__(self, config: Config, events: EventBus, cache_dirs: list[str], shuffle_dirs: list[str],
                 tier_dirs: list[list[str]], driver_pid: int, source_dirs: list[str] | None = None,
                 sources: SourceServer | None = None) -> None:
        """``source_dirs``: where the driver writes source slices (registered with the
        application's key here and in every executor); ``sources``: what answers an
        executor that could not read one (``SourceStore.serve``)."""
        self.config = config
        self.events = events
        self._dirs = (cache_dirs, shuffle_dirs, tier_dirs, driver_pid)
        self._source_dirs = list(source_dirs or [])
        self._sources = sources
        self._ids = itertools.count()
        self._live: list[ExecutorHandle] = []
        self._specs: dict[str, ExecutorSpec] = {}
        self._lock = threading.Lock()
        self.changed = threading.Condition(self._lock)
        self.replacements_left = 2 * config.executors + 2
        self.lost: list[tuple[str, str]] = []
        self._listeners: list[Callable[[str], None]] = []
        self._stopping = False
        self._key = new_key()  # the application's secret: one per fleet, never on disk
        self._registered: list[str] = []  # the directories registered with it in this process
        self._session = None  # the backend's shared part (``open_session``: Ray's connection)
        self._preloads: list[str] = []  # modules every executor imports ahead of its tasks (``preload``)

    @property
    def session(self):
        """What the backend shares among the executors (``open_session``; None but for ray)."""
        return self._session

    @property
    def stopping(self) -> bool:
        """Whether ``stop()`` has begun: no job may go on."""
        return self._stopping

    def on_lost(self, listener: Callable[[str], None]) -> None:
        """``listener(executor_id)`` runs when an executor is lost (before its replacement)."""
        self._listeners.append(listener)

    def _spec(self) -> ExecutorSpec:
        cache, shuffle, tiers, pid = self._dirs
        return ExecutorSpec(str(next(self._ids)), self.config, cache, shuffle, tiers, pid, auth_key=self._key,
                            source_dirs=self._source_dirs,
                            in_driver_process=backend_class(self.config.backend).in_driver_process)

    def _register_key(self) -> None:
        """The driver's writers (source slices) find the key by directory."""
        if not self._registered:
            cache, shuffle, tiers, _ = self._dirs
            self._registered = app_dirs(cache, shuffle, tiers) + self._source_dirs
            app_keys.register(self._registered, FrameAuth(self._key))

    def _unregister_key(self) -> None:
        if self._registered:
            app_keys.unregister(self._registered, FrameAuth(self._key))
            self._registered = []

    def _start(self, spec: ExecutorSpec) -> ExecutorHandle:
        with self._lock:
            self._specs[spec.executor_id] = spec
        return start_executor(self.config.backend, spec, self.events, self._lost, self.get, self._session,
                              self._sources)

    def _close_session(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def start(self) -> float:
        """Starts every executor and waits until all are ready; returns the seconds taken."""
        t0 = time.perf_counter()
        self._register_key()
        try:
            self._session = open_session(self.config)
            handles = [self._start(self._spec()) for _ in range(self.config.executors)]
            try:
                for h in handles:
                    h.wait_ready(_READY_S)
            except ExecutorLost:
                for h in handles:
                    h.stop()
                raise
        except BaseException:
            self._close_session()
            self._unregister_key()
            raise
        with self._lock:
            self._live = handles
        seconds = time.perf_counter() - t0
        self.events.post("ExecutorsStarted", backend=self.config.backend, executors=len(handles),
                         cores_per_executor=self.config.cores_per_executor,
                         executor_memory=self.config.executor_memory, seconds=seconds,
                         pids=[getattr(h, "pid", None) for h in handles])
        return seconds

    def live(self) -> list[ExecutorHandle]:
        with self._lock:
            return [h for h in self._live if h.alive]

    def get(self, executor_id: str) -> ExecutorHandle | None:
        with self._lock:
            return next((h for h in self._live if h.executor_id == executor_id), None)

    def wait_changed(self, timeout: float) -> None:
        with self.changed:
            self.changed.wait(timeout)

    # -- loss ------------------------------------------------------------------------------
    def _lost(self, handle: ExecutorHandle, reason: str) -> None:
        with self._lock:
            if self._stopping or handle not in self._live:
                return
            self._live.remove(handle)
            spec = self._specs.pop(handle.executor_id, None)
            replace = self.replacements_left > 0
            if replace:
                self.replacements_left -= 1
            self.lost.append((handle.executor_id, reason))
        self.events.post("ExecutorLost", executor=handle.executor_id, reason=reason, replaced=replace)
        for listener in list(self._listeners):
            listener(handle.executor_id)
        if spec is not None:
            for d in executor_dirs(spec):
                shutil.rmtree(d, ignore_errors=True)
        if replace:
            threading.Thread(target=self._replace, daemon=True, name="strataflow-replace-executor").start()
        with self.changed:
            self.changed.notify_all()

    def _replace(self) -> None:
        spec = self._spec()
        try:
            h = self._start(spec)
            h.wait_ready(_READY_S)
        except Exception as exc:  # noqa: BLE001 - a failed replacement is reported, not raised
            self.events.post("ExecutorStartFailed", executor=spec.executor_id, reason=repr(exc))
            with self.changed:
                self.changed.notify_all()
            return
        with self._lock:
            if self._stopping:
                stop = True
            else:
                stop = False
                self._live.append(h)
        if stop:
            h.stop()
            return
        self.events.post("ExecutorAdded", executor=spec.executor_id, pid=getattr(h, "pid", None))
        if self._preloads:
            h.call_async(Preload(tuple(self._preloads)))
        with self.changed:
            self.changed.notify_all()

    def can_recover(self) -> bool:
        """Whether a job waiting for executors may still get one."""
        with self._lock:
            if self._stopping:
                return False
            return bool(self._live) or self.replacements_left > 0 or self._starting()

    def _starting(self) -> bool:
        return len(self._specs) > len(self._live)

    # -- questions to every executor ---------------------------------------------------------
    def preload(self, modules: list[str]) -> None:
        """Every executor, and each one started later, imports ``modules`` on a thread of
        its own, without the caller waiting: a layer whose tasks need heavy modules (the
        DataFrame layer: DuckDB and pyarrow.dataset, about a second) asks for them when it
        is set up, so its first query does not pay for them."""
        with self._lock:
            new = [m for m in modules if m not in self._preloads]
            self._preloads.extend(new)
        if new:
            for h in self.live():
                h.call_async(Preload(tuple(new)))

    def ask_all(self, request: ExecutorRequest) -> dict[str, object]:
        """``request`` to every live executor, in parallel; executor id -> answer
        (executors lost meanwhile are left out)."""
        handles = self.live()
        if len(handles) == 1:
            h = handles[0]
            try:
                return {h.executor_id: h.call(request)}
            except ExecutorLost:
                return {}
        out: dict[str, object] = {}
        with ThreadPoolExecutor(max_workers=len(handles) or 1) as pool:
            futs = {pool.submit(h.call, request): h.executor_id for h in handles}
            for fut, eid in futs.items():
                try:
                    out[eid] = fut.result()
                except ExecutorLost:
                    pass
        return dict(sorted(out.items(), key=lambda kv: int(kv[0])))

    def forget_broadcasts(self, *broadcast_ids: str) -> None:
        """Every live executor drops its loaded copies of the broadcasts (and the caller
        waits until they have): for ``Broadcast.unpersist``, whose floor is below the
        executors' requests."""
        self.ask_all(ForgetBroadcasts(broadcast_ids))

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            handles = list(self._live)
            self._live = []
        # Plain threads, not a pool: at interpreter exit (the atexit hook that stops a
        # Context left running) concurrent.futures refuses new work.
        stoppers = [threading.Thread(target=h.stop, name="strataflow-stop-executor") for h in handles[1:]]
        for t in stoppers:
            t.start()
        for h in handles[:1]:
            h.stop()
        for t in stoppers:
            t.join()
        self._close_session()
        self._unregister_key()
