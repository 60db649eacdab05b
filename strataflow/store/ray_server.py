"""The store on a Ray cluster, per node: one store-server actor on every node that holds
(or reads) a cluster dataset, over that node's own store.

Each node has a store of its own (the path a Context gives, ``store=``, default the
user's ``/dev/shm`` store, read *on that node*; ``{node}`` in the path is replaced by the
node's id, for nodes that share a file system, or the simulated nodes of one machine).
Executors write and read their node's store files directly (mapped, as on one machine);
the server is what the rest of the cluster talks to:

- ``block``: a block of this node's store, read and verified here (its keyed tag and
  digest: ``blockfile.export_block``), returned as its header and its extent's bytes
  (an ndarray: zero-copy into Ray's object store) to an executor of another node;
- ``hold``/``release``: the leases that keep a cluster dataset's blocks in this node's
  store while the dataset is published (the node's own catalog does not name it, so its
  sweep would otherwise take them): a save's task takes one before it writes, a fetch
  before it caches a copy, and ``rm`` (or a failed save) releases them on every node;
- the *catalog* of the cluster: the head node's server keeps the published entries in
  ``<its store>/cluster/catalog/`` (``catalog.py``'s files and keyed tags, with the head
  store's key): one place every driver of the cluster asks, apart from the names of
  the head's own local catalog, which local applications see; with them the lineage of
  datasets saved with it (``cluster/lineage/``, tagged with the head store's key; dropped
  at ``release``) and the figures drivers count (``cluster/stats/``);
- ``missing``: which blocks of a dataset this node's store lacks (``open``'s check for
  lost blocks); ``figures``: the node's store's figures and what it served.

Servers are named detached actors in the ``strataflow`` namespace (``server``): the first
user on a node makes its server, later ones (other applications) find it; they live as
long as the cluster. Ray is the transport and trusted as its messages are everywhere in
the ray backend; the store's own checks stay at both ends (``ray_store.py``).
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import asdict
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from strataflow.store.blockfile import export_block
from strataflow.store.catalog import Entry, list_entries, publish, read_entry, unpublish
from strataflow.store.errors import StoreError
from strataflow.store.locks import Lease
from strataflow.store.rebuild import drop_lineage, read_lineage_bytes, write_lineage
from strataflow.store.root import default_root, prepare_dir, tier_bytes
from strataflow.store.source import find_block
from strataflow.store.stats import apps, bump, count_app, counters
from strataflow.store.store import Store
from strataflow.store.sweep import sweep

__all__ = ["NAMESPACE", "node_root", "server", "servers", "alive_nodes", "head_node_id", "StoreServer"]

NAMESPACE = "strataflow"
_PREFIX = "strataflow-store:"
_HEAD = "node:__internal_head__"


def node_root(template: "str | os.PathLike | None", node_id: str) -> str:
    """The path of ``node_id``'s store: ``template`` (default: the user's store), with
    ``{node}`` replaced by the node's id (its first 12 hex digits)."""
    path = os.fspath(template) if template is not None else default_root()
    return path.replace("{node}", node_id[:12])


def _key(template: "str | os.PathLike | None") -> str:
    return hashlib.blake2b(str(template).encode(), digest_size=6).hexdigest()


def head_node_id() -> str:
    """The id of the cluster's head node (where the catalog's server runs)."""
    for n in ray.nodes():
        if n.get("Alive") and _HEAD in n.get("Resources", {}):
            return n["NodeID"]
    raise StoreError("store on Ray: the cluster has no live head node (no node has the resource "
                     f"{_HEAD!r})")


_handles: dict[tuple[str, str], Any] = {}
_handles_lock = threading.Lock()
_actor_class: Any = None


def server(template: "str | os.PathLike | None", node_id: str) -> Any:
    """The store server of ``node_id`` for the stores at ``template``: found, or started
    (pinned to that node, no CPU, detached)."""
    global _actor_class
    k = (str(template), node_id)
    with _handles_lock:
        got = _handles.get(k)
        if got is None:
            if _actor_class is None:
                _actor_class = ray.remote(max_restarts=-1, max_concurrency=8)(StoreServer)
            got = _handles[k] = _actor_class.options(
                name=f"{_PREFIX}{_key(template)}:{node_id}", namespace=NAMESPACE, lifetime="detached",
                get_if_exists=True, num_cpus=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote(template, node_id)
        return got


def alive_nodes() -> set[str]:
    """The ids of the cluster's live nodes."""
    return {n["NodeID"] for n in ray.nodes() if n.get("Alive")}


def servers(template: "str | os.PathLike | None") -> dict[str, Any]:
    """node id -> server, for every live node that has one for ``template`` (the server
    of a node gone is pinned to it: a call to it would wait for the node, and its store
    went with it)."""
    prefix = f"{_PREFIX}{_key(template)}:"
    alive = alive_nodes()
    out = {}
    for a in ray.util.list_named_actors(all_namespaces=True):
        node = a["name"][len(prefix):]
        if a.get("namespace") == NAMESPACE and a["name"].startswith(prefix) and node in alive:
            out[node] = server(template, node)
    return out


class StoreServer:
    """A node's store, for the cluster (an actor; see the module)."""

    def __init__(self, template: "str | os.PathLike | None", node_id: str) -> None:
        self.node_id = node_id
        self.store = Store(node_root(template, node_id))
        self.cluster_root = prepare_dir(os.path.join(self.store.path, "cluster"), "store cluster catalog")
        prepare_dir(os.path.join(self.cluster_root, "catalog"), "store cluster catalog")
        self._lock = threading.Lock()
        self._held: dict[str, Lease] = {}
        self.served = 0
        self.served_bytes = 0

    def path(self) -> str:
        return self.store.path

    # -- leases ---------------------------------------------------------------------------------
    def hold(self, dataset_id: str) -> str:
        """Keeps ``dataset_id``'s blocks in this node's store (until ``release``); this
        node's store path."""
        with self._lock:
            if dataset_id not in self._held:
                self._held[dataset_id] = Lease(self.store.path, dataset_id)
        return self.store.path

    def release(self, dataset_id: str) -> None:
        """Lets ``dataset_id``'s blocks go (now, unless a local reader holds them)."""
        with self._lock:
            lease = self._held.pop(dataset_id, None)
        drop_lineage(self.cluster_root, dataset_id)  # the head's copy, if it keeps one
        if lease is not None:
            lease.release()
            sweep(self.store.root)

    def missing(self, dataset_id: str, partitions: list[int]) -> list[int]:
        """Which of ``partitions`` of ``dataset_id`` have no block file in this node's store."""
        return [p for p in partitions if find_block(self.store.root, dataset_id, p) is None]

    # -- blocks -----------------------------------------------------------------------------------
    def block(self, dataset_id: str, partition: int, what: str) -> tuple[bool, Any, Any]:
        """``(True, header, extent)`` of a block of this node's store, verified here; or
        ``(False, why, None)``."""
        path = find_block(self.store.root, dataset_id, partition)
        if path is None:
            return False, f"its block file is in no tier of node {self.node_id[:12]}'s store {self.store.path!r}", None
        try:
            header, extent = export_block(path, dataset_id, partition, self.store.root.auth, what)
        except StoreError as exc:
            return False, str(exc), None
        import numpy as np

        with self._lock:
            self.served += 1
            self.served_bytes += len(extent)
        return True, header, np.frombuffer(extent, dtype=np.uint8)

    def figures(self) -> dict:
        """This node's store's figures (``Store.figures`` without its local catalog's
        datasets), what it served to other nodes, and (the head's) the cluster's own:
        opens, saves and rebuilds counted by drivers (``cluster``)."""
        with self._lock:
            served, served_bytes, held = self.served, self.served_bytes, len(self._held)
        tiers = self.store.root.tiers
        cluster = {**counters(self.cluster_root), "apps": apps(self.cluster_root)}
        return {"node": self.node_id, "path": self.store.path, "tiers": {t.name: tier_bytes(t) for t in tiers},
                "capacity": {t.name: t.capacity for t in tiers}, **counters(self.store.path),
                "apps": apps(self.store.path), "served": served, "served_bytes": served_bytes, "held": held,
                "cluster": cluster}

    def count(self, app: str, name: str | None, **deltas: int) -> None:
        """Counts what a driver did with the cluster's catalog (``opens``, ``saves``,
        ``rebuilds``) for application ``app``, and the rebuilds store-wide."""
        count_app(self.cluster_root, app, name, **deltas)
        if deltas.get("rebuilds"):
            bump(self.cluster_root, rebuilds=deltas["rebuilds"])

    def balance(self) -> list[dict]:
        """``Store.balance`` of this node's store (its own catalog's datasets)."""
        return [{**m, "node": self.node_id} for m in self.store.balance()]

    def stats(self) -> dict:
        with self._lock:
            return {"node": self.node_id, "path": self.store.path, "served": self.served,
                    "served_bytes": self.served_bytes, "held": sorted(self._held)}

    def usage(self) -> list[dict]:
        return [{**u, "node": self.node_id} for u in self.store.usage()]

    # -- the cluster's catalog (the head's server) -----------------------------------------------
    def publish(self, entry: dict, overwrite: bool) -> str | None:
        return publish(self.cluster_root, Entry(**entry), self.store.root.auth, overwrite)

    def entry(self, name: str) -> dict:
        return asdict(read_entry(self.cluster_root, name, self.store.root.auth))

    def entries(self) -> list[dict]:
        return [asdict(e) for e in list_entries(self.cluster_root, self.store.root.auth)]

    def unpublish(self, name: str) -> str:
        return unpublish(self.cluster_root, name, self.store.root.auth)

    def put_lineage(self, dataset_id: str, data: bytes) -> None:
        """Keeps a cluster dataset's pickled lineage beside the cluster's catalog, tagged
        with the head store's key (``rebuild.write_lineage``); ``release`` removes it."""
        write_lineage(self.cluster_root, dataset_id, data, self.store.root.auth)

    def lineage(self, dataset_id: str, name: str) -> bytes:
        """A cluster dataset's pickled lineage, its keyed tag checked here (the driver
        unpickles it)."""
        return read_lineage_bytes(self.cluster_root, dataset_id, name, self.store.root.auth)
