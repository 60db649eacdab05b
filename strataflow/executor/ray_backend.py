"""The ray backend: executors as Ray actors, on the nodes of a Ray cluster.

Ray is the cluster substrate only -- it places the executor processes, carries the
messages and tells us when one dies. Everything else is strataflow's, unchanged: each
actor (:class:`ExecutorActor`) builds the same :class:`ExecutorRuntime` (its own memory
manager, block manager, disk and shuffle directories under the application's directories
on its node) and :class:`ExecutorCore` as an executor process does, and the driver keeps
its scheduler, block-location master, map-output tracker and the policy's plans. Ray's
object store carries stages, task results and blocks; it caches nothing of ours.

- A :class:`RaySession` per application (opened by the fleet) connects to Ray -- a local
  instance of ``executors * cores_per_executor`` CPUs when ``address`` is None (shut
  down at the end), a running cluster for ``"auto"`` or ``"ray://host:port"``, or the
  connection the caller already made (``ray.is_initialized()``: kept) -- and reserves a
  placement group of one ``{"CPU": cores_per_executor}`` bundle per executor, spread over
  the nodes (``SPREAD``). An executor takes a free bundle; a lost one's bundle is freed
  for its replacement (Ray re-places the bundles of a lost node when resources allow).
- A task is one actor call in the ``tasks`` concurrency group (``cores_per_executor``
  threads), whose argument is the task's spec pickled by the driver (a bytes argument
  costs Ray least); tasks the driver waits for together (an iteration over cached data)
  go as one ``run_many`` call per task thread, their replies in one list. A stage's pickled work (and the policy's plan for that executor) goes
  once per executor before its first task, in a ``control`` call -- in line when small
  (up to 32 KB: a K-means iteration's is ~5 KB), else through the object store -- and a
  task that arrives first waits for it (calls of two groups are not ordered; the control
  group's threads are never all taken by waiting tasks). Results come back as pickle-5 out-of-band
  buffers (through the object store when large) and are copied into buffers of their
  own, so arrays are writable as with the processes backend.
- Questions (``call``) run in the ``control`` group, so a busy executor still answers. A
  long poll (``events``, one always pending per executor) brings the events its block
  manager and tasks post between replies, and is how an idle executor's death is seen.
- Any ``RayActorError`` (the actor was killed, its node removed or unreachable) is the
  executor's loss: the actor is killed for good (``max_restarts=0``), its running tasks
  fail with :class:`ExecutorLost`, and the fleet reports it, forgets its blocks and map
  outputs (recomputed from lineage) and starts a replacement.
- A block another executor holds in memory (or on a disk of another node) is fetched from
  that executor's actor directly (``block``, zero-copy for numpy within a node); a disk
  copy on the same node is read straight from its file, as with processes.
"""

from __future__ import annotations

import collections
import logging
import os
import pickle
import queue
import socket
import sys
import threading
import time
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

import cloudpickle
import numpy as np

from strataflow.common.checks import ConfigError

try:
    import ray
    from ray.exceptions import GetTimeoutError, RayActorError, RayError
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
except ImportError as _exc:  # pragma: no cover - the extra is not installed
    raise ConfigError("backend: 'ray' needs Ray, which is not installed (pip install strataflow[ray])") from _exc

from strataflow.metrics import EventBus
from strataflow.shuffle.files import FetchFailed, MapOutput, read_bucket
from strataflow.storage.peer_blocks import PeerBlock
from strataflow.shipping import source_store
from strataflow.shipping.source_slices import SliceRef
from strataflow.shipping.source_store import SourceStore
from strataflow.executor import wire
from strataflow.executor.backend import ExecutorHandle, LostCallback, Peers, fail_waiting
from strataflow.executor.runtime import ExecutorSpec, app_dirs
from strataflow.executor.work import ExecutorLost, StageWork, TaskCancelled, TaskOutcome, TaskSpec, portable_error
from strataflow.common.retries import infrastructure_fault

__all__ = ["RaySession", "RayExecutor", "ExecutorActor"]

_PLACE_S = 60.0  # the placement group must be placed within this (else: not enough CPUs)
_EVENTS_WAIT_S = 5.0  # an idle executor answers its events poll this often
_FLUSH_S = 0.2  # events of a busy executor come at most this often
_FETCH_S = 60.0  # a block of another executor: recomputed if it takes longer
_STOP_S = 10.0
_CONTROL_THREADS = 4
_INLINE_STAGE_BYTES = 32 << 10  # a stage (and its plan) up to this size travels in line
_INLINE_REPLY_BYTES = 256 << 10  # a task result up to this size is taken on Ray's callback thread
_DEAD_KEPT = 4096  # stage keys an executor remembers as finished
_START_RETRIES = 5  # an actor that dies before it is ready (its bundle's node died): made again
_START_RETRY_S = 1.0
_SOURCE_PREFIX = "ray-source:"
log = logging.getLogger("strataflow.ray")


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:limit]}{'...' if len(text) > limit else ''}"


# -- the application's connection ------------------------------------------------------------------
#: attempts at a Ray Client connection: its server's proxier starts a process per client
#: by fork(), and that process dies at birth now and then (ray-project/ray#63202, about 7%
#: of connections; the client sees ConnectionAbortedError "Initialization failure from server")
RAY_CLIENT_ATTEMPTS = 3


def connect_ray_client(address: str, attempts: int = RAY_CLIENT_ATTEMPTS, init=None) -> None:
    """``ray.init(address)`` for a ``ray://`` address, tried again when the server fails to
    start this client's session (a failed attempt leaves no connection behind: Ray Client
    disconnects before raising). Any other error, and the last failure, go to the caller."""
    init = init or ray.init
    for attempt in range(1, attempts + 1):
        try:
            init(address=address)
            return
        except ConnectionAbortedError as err:
            if attempt == attempts:
                raise ConnectionAbortedError(f"Ray Client at {address}: its server failed to start a session "
                                             f"{attempts} times; last: {err}") from err
            log.warning("Ray Client at %s: the server failed to start a session (attempt %d of %d), "
                        "trying again", address, attempt, attempts)
            time.sleep(0.5 * attempt)


class RaySession:
    """The application's connection to Ray and its placement group (one per fleet)."""

    def __init__(self, config) -> None:
        self.config = config
        self.owned = False
        n, cores = config.executors, config.cores_per_executor
        self._lock = threading.Lock()
        self._free = list(range(n))
        self.pg = None
        #: the executors' directory: id -> (node id, actor), and the source slices put in
        #: the object store (uid -> one reference per slice); ``version`` counts changes
        self._members: dict[str, tuple[str, Any]] = {}
        self._sources: dict[str, list] = {}
        self.version = 0
        try:
            if not ray.is_initialized():
                self._connect(config)
            need, have = n * cores, ray.cluster_resources().get("CPU", 0)
            if have < need:
                raise ExecutorLost("*", f"the Ray cluster has {have:g} CPUs, {n} executors of {cores} need {need}")
            self.pg = placement_group([{"CPU": cores}] * n, strategy="SPREAD")
            ray.get(self.pg.ready(), timeout=_PLACE_S)
        except GetTimeoutError:
            cpus = ray.cluster_resources().get("CPU", 0)
            self.close()
            raise ExecutorLost("*", f"the Ray cluster could not place {n} executors of {cores} CPUs in "
                                    f"{_PLACE_S:.0f} s (it has {cpus:g} CPUs in all)") from None
        except BaseException:
            self.close()
            raise

    def _connect(self, config) -> None:
        n, cores = config.executors, config.cores_per_executor
        opts: dict[str, Any] = dict(include_dashboard=False, logging_level=logging.WARNING)
        if config.address is None:  # a new local instance, even where `ray start` made one
            path = os.pathsep.join(p for p in [os.getcwd(), *sys.path, os.environ.get("PYTHONPATH", "")] if p)
            ray.init(address="local", num_cpus=n * cores, runtime_env={"env_vars": {"PYTHONPATH": path}}, **opts)
        elif config.address.startswith("ray://"):  # Ray Client: the server's init, not ours
            connect_ray_client(config.address)
        else:
            ray.init(address=config.address, **opts)
        self.owned = True

    def acquire(self) -> int | None:
        """A free bundle of the placement group (None: every bundle is taken)."""
        with self._lock:
            return self._free.pop(0) if self._free else None

    def release(self, bundle: int | None) -> None:
        if bundle is not None:
            with self._lock:
                if bundle not in self._free:
                    self._free.append(bundle)

    def join(self, executor_id: str, node_id: str, actor: Any) -> None:
        with self._lock:
            self._members[executor_id] = (node_id, actor)
            self.version += 1

    def leave(self, executor_id: str) -> None:
        with self._lock:
            if self._members.pop(executor_id, None) is not None:
                self.version += 1

    def add_source(self, uid: str, refs: list) -> None:
        with self._lock:
            self._sources[uid] = refs
            self.version += 1

    def directory(self) -> tuple[int, dict, dict]:
        """(version, members, sources): what every executor is sent when it changes."""
        with self._lock:
            return self.version, dict(self._members), dict(self._sources)

    def source_store(self) -> "RaySourceStore":
        return RaySourceStore(self)

    def strategy(self, bundle: int | None):
        if bundle is None or self.pg is None:
            return "DEFAULT"
        return PlacementGroupSchedulingStrategy(self.pg, placement_group_bundle_index=bundle)

    def close(self) -> None:
        """Removes the placement group; disconnects (and so stops a local instance) if
        this session connected."""
        if self.pg is not None:
            try:
                remove_placement_group(self.pg)
            except Exception:  # noqa: BLE001 - Ray may be shutting down already (atexit)
                pass
            self.pg = None
        with self._lock:
            self._members.clear()
            self._sources.clear()  # the driver's references: Ray frees the slices
        if self.owned:
            self.owned = False
            try:
                ray.shutdown()
            except Exception:  # noqa: BLE001
                pass


class RaySourceStore(SourceStore):
    """Source slices (``parallelize``, ``from_numpy``) in Ray's object store, for executors
    on nodes that cannot read the driver's files: each slice is put once (an ndarray
    zero-copy, records pickled by Ray), the session's directory carries the references to
    every executor, and a slice's "path" is ``ray-source:<uid>``, which the executor's
    loader (:meth:`ExecutorActor._load_source`) resolves. The object store is Ray's and
    trusted as Ray's messages are, so these slices are not authenticated again."""

    def __init__(self, session: RaySession) -> None:
        super().__init__(directory="")
        self.session = session
        self._refs: dict[str, SliceRef] = {}

    def ship(self, uid: str, owner: Any, slices_of: Any) -> SliceRef:
        with self._lock:
            got = self._refs.get(uid)
            if got is None:
                self.session.add_source(uid, [ray.put(s) for s in slices_of(owner)])
                got = self._refs[uid] = SliceRef(uid, _SOURCE_PREFIX + uid)
            return got

    def forget(self, uid: str) -> None:
        with self._lock:
            self._refs.pop(uid, None)


# -- the executor, inside its actor ------------------------------------------------------------------
class ExecutorActor:
    """One executor in a Ray actor: what ``worker.py`` builds before it says ``ready``,
    and its message handlers as actor methods."""

    def __init__(self, spec: ExecutorSpec) -> None:
        from threadpoolctl import threadpool_limits

        from strataflow.executor.core import ExecutorCore
        from strataflow.executor.heap import keep_heap_warm
        from strataflow.executor.runtime import ExecutorRuntime

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
        source_store.register_loader(_SOURCE_PREFIX, self._load_source)
        self.core = ExecutorCore(self.runtime)
        self.node_id = ray.get_runtime_context().get_node_id()
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
    def call(self, op: str, args: tuple) -> tuple:
        if op in ("forget_stage", "cancel_stage") and args:
            with self._stage_cond:
                self._dead[args[0]] = None
                if len(self._dead) > _DEAD_KEPT:
                    self._dead.popitem(last=False)
                if op == "forget_stage":
                    self._known.discard(args[0])
                self._stage_cond.notify_all()
        try:
            return "ok", self.core.call(op, *args), self._take_events()
        except BaseException as exc:  # noqa: BLE001
            return "err", wire.dumps(portable_error(exc, wire.dumps)), self._take_events()

    @ray.method(concurrency_group="control")
    def block(self, bid) -> tuple[bool, Any]:
        """A block another executor's task reads (``ExecutorCore.call("block")``)."""
        try:
            return True, self.core.call("block", bid)
        except Exception as exc:  # noqa: BLE001
            return False, _short(exc)

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
            raise FetchFailed(shuffle_id, map_id, f"executor {writer} on node {member[0][:8]}: {_short(exc)}") from None
        if not ok:
            raise FetchFailed(shuffle_id, map_id, f"(read by executor {writer}) {value}")
        self.runtime.count_remote_bucket(value.nbytes)
        return value

    def _load_source(self, path: str, split: int) -> Any:
        """A source slice from the object store (``RaySourceStore``); an ndarray is copied
        into this executor's memory (the store's copy is read-only, and not in our budget)."""
        uid = path[len(_SOURCE_PREFIX):]
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
            raise BlockUnavailable(f"block {bid} from executor {holder_id}: {_short(exc)}") from None
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
        source_store.register_loader(_SOURCE_PREFIX, None)
        s = self.spec
        for d in app_dirs(s.cache_dirs, s.shuffle_dirs, s.tier_dirs):
            try:
                os.rmdir(d)  # only where it is empty: another node's copy (the driver removes its own)
            except OSError:
                pass
        return self._take_events()


_actor_classes: dict[int, Any] = {}


def _actor_class(cores: int):
    """The actor class with ``cores`` task threads (Ray takes concurrency groups only
    where the class is made, not in ``.options()``)."""
    cls = _actor_classes.get(cores)
    if cls is None:
        cls = _actor_classes[cores] = ray.remote(
            max_restarts=0, max_task_retries=0,
            concurrency_groups={"tasks": cores, "control": _CONTROL_THREADS, "events": 1})(ExecutorActor)
    return cls


# -- the driver's handle -------------------------------------------------------------------------------
class RayExecutor(ExecutorHandle):
    """The driver's end of one executor actor."""

    needs_pickled_stages = True

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
        self.actor = _actor_class(self.cores).options(
            num_cpus=self.cores, scheduling_strategy=self.session.strategy(self.bundle)).remote(self._spec)
        self._watch(self.actor.ready.remote(), "ready", None)

    def _restart(self, exc: BaseException) -> bool:
        """An actor that died before it was ready, not of its constructor (the node of its
        bundle died before Ray moved the bundle): made again, a few times. True if so."""
        if self._ready.done() or self._stopped or self._restarts_left <= 0 or getattr(exc, "actor_init_failed", False):
            return False
        self._restarts_left -= 1
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
                self._lost(_short(exc))

    def _dispatch(self) -> None:
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
                    self._lost(f"its Ray actor died ({_short(exc)})")
                self._settle(fut, ExecutorLost(self.executor_id, self._lost_reason or "stopped"))
                continue
            except BaseException as exc:  # noqa: BLE001 - another Ray error (an object lost, Ray stopping)
                if kind in ("events", "ready") and not self._stopped:
                    self._lost(f"its Ray actor does not answer ({_short(exc)})")
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
                sibling.call.remote("remove_lost_executor", (self.executor_id,))
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
                ref = (payload, plan) if size <= _INLINE_STAGE_BYTES else ray.put((payload, plan))
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
            self._lost(_short(exc))
            self._settle(futs, ExecutorLost(self.executor_id, self._lost_reason or "stopped"))
        return futs

    def forget_stage(self, key: str) -> None:
        with self._lock:
            had = key in self._stage_refs
            self._stage_refs.pop(key, None)
        if had and self.alive:
            try:
                self._watch(self.actor.call.remote("forget_stage", (key,)), "call", None)
            except Exception:  # noqa: BLE001
                pass

    def call(self, op: str, *args: Any, timeout: float | None = 60.0) -> Any:
        return self.call_async(op, *args).result(timeout)

    def call_async(self, op: str, *args: Any) -> "Future[Any]":
        if not self.alive:
            return self._failed()
        fut: Future = Future()
        try:
            self._watch(self.actor.call.remote(op, args), "call", fut)
        except Exception as exc:  # noqa: BLE001
            self._lost(_short(exc))
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
        try:
            ray.kill(self.actor, no_restart=True)
        except Exception:  # noqa: BLE001
            pass
