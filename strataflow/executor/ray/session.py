"""The ray backend's connection: to a Ray cluster (or a local instance it starts), the
application's placement group, and the source slices it puts in Ray's object store.

Imported when the first ray executor starts, never by ``import strataflow``."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Any

from strataflow.common.checks import ConfigError

try:
    import ray
    from ray.exceptions import GetTimeoutError
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
except ImportError as _exc:  # pragma: no cover - the extra is not installed
    raise ConfigError("backend: 'ray' needs Ray, which is not installed (pip install strataflow[ray])") from _exc

from strataflow.shipping.source_slices import SliceRef
from strataflow.shipping.source_store import SourceStore
from strataflow.executor.work import ExecutorLost

__all__ = ["RaySession", "RaySourceStore", "connect_ray_client", "RAY_CLIENT_ATTEMPTS", "SOURCE_PREFIX"]

_PLACE_S = 60.0  # the placement group must be placed within this (else: not enough CPUs)
#: a source slice's "path" in the object store: ``ray-source:<uid>`` (``actor._load_source``)
SOURCE_PREFIX = "ray-source:"
log = logging.getLogger("strataflow.ray")



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
                got = self._refs[uid] = SliceRef(uid, SOURCE_PREFIX + uid)
            return got

    def forget(self, uid: str) -> None:
        with self._lock:
            self._refs.pop(uid, None)
