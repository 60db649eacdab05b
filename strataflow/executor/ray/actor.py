"""The ray backend's executor, inside its Ray actor on a node: what ``worker.py`` builds
for an executor process (its runtime and core), with its message handlers as actor
methods in three concurrency groups (``tasks``, ``control``, ``events``)."""

from __future__ import annotations

import collections
import os
import pickle
import socket
import threading
import time
from typing import Any

import cloudpickle
import numpy as np
import ray
from ray.exceptions import GetTimeoutError, RayError

from strataflow.metrics import EventBus
from strataflow.shuffle.files import FetchFailed, MapOutput, read_bucket
from strataflow.shipping import source_store
from strataflow.executor import wire
from strataflow.executor.ray import short_error
from strataflow.executor.messages import CancelStage, ExecutorRequest, FetchBlock, ForgetStage
from strataflow.executor.ray.session import SOURCE_PREFIX
from strataflow.executor.runtime import ExecutorSpec, app_dirs
from strataflow.executor.work import ExecutorLost, TaskCancelled, TaskSpec, portable_error

__all__ = ["ExecutorActor", "actor_class"]

_FLUSH_S = 0.2  # events of a busy executor come at most this often
_FETCH_S = 60.0  # a block of another executor: recomputed if it takes longer
_CONTROL_THREADS = 4
_DEAD_KEPT = 4096  # stage keys an executor remembers as finished


class ExecutorActor:
    """One executor in a Ray actor: what ``worker.py`` builds before it says ``ready``,
    and its message handlers as actor methods."""

    def __init__(self, spec: ExecutorSpec) -> None:
        from threadpoolctl import threadpool_limits

        from strataflow.executor.core import ExecutorCore
        from strataflow.executor.heap import keep_heap_warm
        from strataflow.executor.runtime import ExecutorRuntime
        from strataflow.shuffle.key_hash import refuse_salted_fallback
        from strataflow.store.ray_level import RayLevelBlocks

        refuse_salted_fallback()  # a worker Ray started without PYTHONHASHSEED=0 refuses unportable keys
        threadpool_limits(limits=spec.config.blas_threads, user_api="blas")
        keep_heap_warm()
        self.spec = spec
        self._cond = threading.Condition()
        self._outbox: list[dict] = []
        self._stopped = False
        self.events = EventBus()
        self.events.subscribe(self._queue_event)
        self.runtime = ExecutorRuntime(spec, self.events)
        self.runtime.block_manager.fetch_peer = self._fetch
        self.runtime.read_bucket = self._read_bucket
        source_store.register_loader(SOURCE_PREFIX, self._load_source)
        self.core = ExecutorCore(self.runtime)
        self.node_id = ray.get_runtime_context().get_node_id()
        # StorageLevel.STORE: this node's own store, its blocks held by the node's server
        self.runtime.block_manager.shared = RayLevelBlocks(self.runtime.config.store,
                                                           self.runtime.block_manager.shared.app, self.node_id)
        self._stage_lock = threading.Lock()
        self._stage_cond = threading.Condition(self._stage_lock)
        self._known: set[str] = set()  # stages loaded (or failed to load) here
        #: stages cancelled or forgotten (the latest ``_DEAD_KEPT``): a late task is cancelled
        self._dead: collections.OrderedDict[str, None] = collections.OrderedDict()
        #: the session's directory as last sent (``RaySession.directory``)
        self._version = -1
        self._members: dict[str, tuple[str, Any]] = {}
        self._sources: dict[str, list] = {}

    # -- events ------------------------------------------------------------------------------
    def _queue_event(self, record: dict) -> None:
        with self._cond:
            self._outbox.append(record)
            self._cond.notify_all()

    def _take_events(self) -> list[dict]:
        with self._cond:
            out, self._outbox = self._outbox, []
        return out

    @ray.method(concurrency_group="events")
    def events(self, timeout: float) -> tuple[list[dict], bool]:
        """The events posted since the last reply (waits up to ``timeout`` for one), and
        whether the executor has stopped."""
        with self._cond:
            if not self._outbox and not self._stopped:
                self._cond.wait(timeout)
        if not self._stopped:
            time.sleep(_FLUSH_S)  # a busy executor's events, a few batches a second
        return self._take_events(), self._stopped

    # -- state ---------------------------------------------------------------------------------
    @ray.method(concurrency_group="control")
    def ready(self) -> tuple[int, str, str]:
        return os.getpid(), self.node_id, socket.gethostname()

    def _learn(self, directory: tuple[int, dict, dict] | None) -> None:
        if directory is not None and directory[0] > self._version:
            with self._stage_lock:
                if directory[0] > self._version:
                    self._version, self._members, self._sources = directory

    # -- tasks -----------------------------------------------------------------------------------
    @ray.method(concurrency_group="control")
    def add_stage(self, key: str, stage_ref: list) -> tuple:
        """A stage's work (and the policy's plan for this executor), sent once before its
        first task: in the control group, so that it never waits behind the tasks that
        wait for it."""
        with self._stage_cond:
            if key not in self._dead and key not in self._known:
                self._known.add(key)
                try:
                    got = stage_ref[0]
                    payload, plan = got if isinstance(got, tuple) else ray.get(got)
                    self.core.add_stage(pickle.loads(payload), plan)
                except BaseException as exc:  # noqa: BLE001 - e.g. a module the driver has and we lack
                    self.core.stage_failed(key, exc)  # its tasks fail with this error
                self._stage_cond.notify_all()
        return "ok", None, self._take_events()

    def _wait_stage(self, key: str) -> None:
        """Until the stage's work is here (calls of two concurrency groups are not ordered)."""
        with self._stage_cond:
            here = self._stage_cond.wait_for(lambda: key in self._known or key in self._dead, timeout=_FETCH_S)
            if key in self._dead:
                raise TaskCancelled(f"stage {key} was cancelled")
            if not here:
                raise ExecutorLost(self.spec.executor_id, f"the work of stage {key} did not arrive in {_FETCH_S:.0f} s")

    def _run_one(self, task: bytes) -> tuple:
        """``("ok", head, buffers)`` (the outcome pickled with its buffers out of band) or
        ``("err", pickled exception)``."""
        try:
            spec: TaskSpec = pickle.loads(task)
            self._wait_stage(spec.stage_key)
            outcome = self.core.run(spec)
            buffers: list[pickle.PickleBuffer] = []
            head = cloudpickle.dumps(outcome, protocol=5, buffer_callback=buffers.append)
            return "ok", head, [np.frombuffer(b.raw(), dtype=np.uint8) for b in buffers]
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the driver
            return "err", wire.dumps(portable_error(exc, wire.dumps))

    @ray.method(concurrency_group="tasks")
    def run(self, task: bytes, directory: tuple | None) -> tuple:
        """Runs one task (its :class:`TaskSpec`, pickled by the driver: a bytes argument
        costs Ray least): ``_run_one``'s reply, then the events and ``version``: the
        directory this executor has (it comes with every task until then)."""
        self._learn(directory)
        return (*self._run_one(task), self._take_events(), self._version)

    @ray.method(concurrency_group="tasks")
    def run_many(self, tasks: list[bytes], directory: tuple | None) -> tuple:
        """Tasks the driver waits for together, one after another on one task thread:
        ``(replies, events, version)``, a ``_run_one`` reply each -- one actor call for
        them all (a call costs about 1.5 ms of Ray's machinery), at the price of a
        failure being seen when the last ends."""
        self._learn(directory)
        return [self._run_one(t) for t in tasks], self._take_events(), self._version

    # -- questions ---------------------------------------------------------------------------------
    @ray.method(concurrency_group="control")
    def call(self, request: ExecutorRequest) -> tuple:
        """Answers a request (``ExecutorCore.handle``): ``("ok", answer, events)`` or
        ``("err", pickled exception, events)``. A stage forgotten or cancelled is also
        marked dead here, so a task of it that arrives later is cancelled."""
        if isinstance(request, (ForgetStage, CancelStage)):
            with self._stage_cond:
                self._dead[request.stage_key] = None
                if len(self._dead) > _DEAD_KEPT:
                    self._dead.popitem(last=False)
                if isinstance(request, ForgetStage):
                    self._known.discard(request.stage_key)
                self._stage_cond.notify_all()
        try:
            return "ok", self.core.handle(request), self._take_events()
        except BaseException as exc:  # noqa: BLE001
            return "err", wire.dumps(portable_error(exc, wire.dumps)), self._take_events()

    @ray.method(concurrency_group="control")
    def block(self, bid) -> tuple[bool, Any]:
        """A block another executor's task reads (``ExecutorCore.handle(FetchBlock)``)."""
        try:
            return True, self.core.handle(FetchBlock(bid))
        except Exception as exc:  # noqa: BLE001
            return False, short_error(exc)

    @ray.method(concurrency_group="control")
    def bucket(self, out: MapOutput, reduce_id: int, shuffle_id: int, map_id: int) -> tuple[bool, Any]:
        """A bucket of a map output written here, for a reduce task on another node:
        verified here, sent as bytes (zero-copy into the object store)."""
        try:
            return True, np.frombuffer(read_bucket(out, reduce_id, shuffle_id, map_id), dtype=np.uint8)
        except FetchFailed as ff:
            return False, ff.reason

    def _read_bucket(self, out: MapOutput, reduce_id: int, shuffle_id: int, map_id: int):
        """The runtime's ``read_bucket``: an output written on this node is read from its
        files; one of another node is fetched from the executor that wrote it."""
        writer = out.executor_id
        member = self._members.get(writer) if writer is not None else None
        if writer is None or writer == self.spec.executor_id or (member is not None and member[0] == self.node_id):
            return read_bucket(out, reduce_id, shuffle_id, map_id)
        if member is None:
            raise FetchFailed(shuffle_id, map_id, f"executor {writer}, which wrote it on another node, is gone")
        try:
            ok, value = ray.get(member[1].bucket.remote(out, reduce_id, shuffle_id, map_id), timeout=_FETCH_S)
        except (GetTimeoutError, RayError) as exc:
            raise FetchFailed(shuffle_id, map_id, f"executor {writer} on node {member[0][:8]}: {short_error(exc)}") from None
        if not ok:
            raise FetchFailed(shuffle_id, map_id, f"(read by executor {writer}) {value}")
        self.runtime.count_remote_bucket(value.nbytes)
        return value

    def _load_source(self, path: str, split: int) -> Any:
        """A source slice from the object store (``RaySourceStore``); an ndarray is copied
        into this executor's memory (the store's copy is read-only, and not in our budget)."""
        uid = path[len(SOURCE_PREFIX):]
        refs = self._sources.get(uid)
        if refs is None or not 0 <= split < len(refs):
            raise source_store.SourceSliceError(f"source {uid} split {split}: not in this executor's directory")
        value = ray.get(refs[split], timeout=_FETCH_S)
        return np.array(value, copy=True) if isinstance(value, np.ndarray) else value

    def _fetch(self, holder_id: str, bid) -> Any:
        """The block manager's ``fetch_peer``: a block in another executor's memory (or on
        another node's disk), straight from that executor's actor."""
        from strataflow.storage.disk.disk_store import BlockUnavailable

        member = self._members.get(holder_id)
        if member is None:
            raise BlockUnavailable(f"executor {holder_id} is not known here")
        actor = member[1]
        try:
            ok, value = ray.get(actor.block.remote(bid), timeout=_FETCH_S)
        except GetTimeoutError:
            raise BlockUnavailable(f"executor {holder_id} did not send block {bid} in {_FETCH_S:.0f} s") from None
        except RayError as exc:
            raise BlockUnavailable(f"block {bid} from executor {holder_id}: {short_error(exc)}") from None
        if not ok:
            raise BlockUnavailable(f"block {bid} from executor {holder_id}: {value}")
        return value

    # -- the end -------------------------------------------------------------------------------------
    @ray.method(concurrency_group="control")
    def stop(self) -> list[dict]:
        """Cancels running tasks, closes the runtime (removing this executor's directories)
        and the application's directories on this node once empty; the last events."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self.core.cancel_all()
        self.runtime.close()
        source_store.register_loader(SOURCE_PREFIX, None)
        s = self.spec
        for d in app_dirs(s.cache_dirs, s.shuffle_dirs, s.tier_dirs):
            try:
                os.rmdir(d)  # only where it is empty: another node's copy (the driver removes its own)
            except OSError:
                pass
        return self._take_events()


_actor_classes: dict[int, Any] = {}


def actor_class(cores: int):
    """The actor class with ``cores`` task threads (Ray takes concurrency groups only
    where the class is made, not in ``.options()``)."""
    cls = _actor_classes.get(cores)
    if cls is None:
        cls = _actor_classes[cores] = ray.remote(
            max_restarts=0, max_task_retries=0,
            concurrency_groups={"tasks": cores, "control": _CONTROL_THREADS, "events": 1})(ExecutorActor)
    return cls
