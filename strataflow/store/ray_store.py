"""The store on a Ray cluster, as an application uses it: the same calls as ``Store``
(``save``, ``open_source``, ``info``, ``ls``, ``rm``, ``usage``), for a Context on the
``ray`` backend (``context/store_access.py`` picks it).

Saving. Each partition's task writes its block into the store of the node it runs on
(``store.save_partition``, as on one machine) after that node's store server
(``ray_server.py``) took a lease on the dataset for this application, and returns where
it lies (the node, and its store's identity, ``ray_holds.store_ident``: the catalog names
nodes by it, so it outlives the cluster) and its extent's digest; when every block is written the entry is published in the cluster's
catalog (the head node's server) in one rename, as locally: visible when complete. A
failed save releases the dataset on every node, whose sweep then removes its blocks.

Reading (:class:`RayStoreSource`). A task reads its partition from its own node's store,
mapped zero-copy, when the block is there (written there, or fetched before). Otherwise it
asks the server of the node the entry names: that node maps the block, checks its keyed
tag and digest, and sends its header and bytes through Ray; the reader checks the bytes
against the digest the catalog entry records (the entry is authenticated by the head's
store key), writes them into its own node's store under *its* key (``import_block``), takes
a lease there, and reads them mapped like any local block. Later reads on that node are
local: a block crosses the network once per node.

Where tasks run. The source names, per partition, the live node whose store has the
identity the entry records (``RayStore._where``: every live node's server asked, started
where none runs; ``preferred_nodes``): the scheduler sends the task to an executor on that node when one is
free (``scheduler/dag.py``'s ``located_nodes``), so a read fetches only what lies on a
node with no executor of the application (or after the locality wait).

Lineage. ``save(..., lineage=True)`` pickles the lineage (``rebuild.dump_lineage``) and
the head's server keeps it tagged beside the cluster's catalog (``cluster/lineage/``).
A cluster dataset is never moved or evicted by a node's ``balance`` (its blocks are held
by their server), but its blocks can be lost: their node gone from the cluster, or its
store wiped. ``open`` asks each holding node which blocks it lacks; if any is lost, a
dataset with lineage is saved again from it (one job, under the same name, counted as a
rebuild), one without raises DatasetEvicted saying so.

Figures (``ray_figures.py``): every node's server's, merged; executors count their reads
and fetches in their node's store's figures, drivers their opens, saves and rebuilds in
the cluster catalog's.

Removing (``rm``) unpublishes the name, then releases the dataset on every node that has a
server: blocks go when no local reader holds them, and the head drops its lineage.
"""

from __future__ import annotations

import functools
import os
import time
import uuid
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import cloudpickle
import ray

from strataflow.lineage import SourceNode
from strataflow.store.blockfile import import_block, read_block
from strataflow.store.catalog import ByName, Entry, check_name
from strataflow.store.errors import BlockCorrupt, DatasetEvicted, DatasetNotFound, StoreError
from strataflow.store.ray_figures import merge_figures
from strataflow.store.ray_level import RayLevelHolds
from strataflow.store.ray_server import alive_nodes, head_node_id, holder, node_root, server, servers
from strataflow.store.rebuild import dump_lineage
from strataflow.store.root import tier_bytes
from strataflow.store.source import find_block, root_for
from strataflow.store.stats import count_app
from strataflow.store.store import app_of, may_save, save_job, save_partition

if TYPE_CHECKING:
    from strataflow.executor.task import TaskContext

__all__ = ["RayStore", "RayStoreSource", "save_on_node"]

_FETCH_S = 120.0


def _this_node() -> str:
    return ray.get_runtime_context().get_node_id()


def save_on_node(template: "str | os.PathLike | None", dataset_id: str, split: int, value: Any) -> list[dict]:
    """A save's task on the cluster: the block into this node's store, held there by the
    node's server for this application; the partition's info with the node, its store's
    identity (``ray_holds.store_ident``: what outlives the cluster) and the digest."""
    node = _this_node()
    ident = ray.get(server(template, node).hold.remote(dataset_id, holder()), timeout=_FETCH_S)
    info = save_partition(node_root(template, node), dataset_id, split, value)[0]
    info["node"], info["store"] = node, ident
    return [info]


class RayStore(ByName):
    """The cluster's store for one application (driver side): see the module."""

    def __init__(self, template: "str | os.PathLike | None", app: str = "") -> None:
        self.template = None if template is None else os.fspath(template)
        #: the id of the application using it (its figures: opens, reads, fetches, saves, rebuilds)
        self.app = app
        self.head = server(self.template, head_node_id())
        self.path = ray.get(self.head.path.remote(), timeout=_FETCH_S)
        self._where_seen: tuple[set[str], dict[str, list[str]]] = (set(), {})

    # -- saving ---------------------------------------------------------------------------------
    def save(self, dataset: Any, name: str, mode: str = "error", lineage: bool = False,
             rebuilds: int = 0) -> Entry | None:
        """As ``Store.save``, into the nodes' stores; ``lineage=True`` keeps the lineage
        beside the cluster's catalog (the head's server), to rebuild the dataset when its
        blocks are lost (``open_source``)."""
        check_name(name)
        pickled = dump_lineage(dataset, name) if lineage else None
        if not may_save(self.exists, name, mode, " in the cluster's catalog"):
            return None
        did = uuid.uuid4().hex
        try:
            if pickled is not None:
                ray.get(self.head.put_lineage.remote(did, pickled), timeout=_FETCH_S)
            t0 = time.perf_counter()
            infos = save_job(dataset, functools.partial(save_on_node, self.template, did), name)
            app = app_of(dataset)
            entry = Entry(name=name, id=did, partitions=infos, compute_s=time.perf_counter() - t0, app=app,
                          lineage=pickled is not None, rebuilds=rebuilds)
            old = ray.get(self.head.publish.remote(asdict(entry), mode == "overwrite"), timeout=_FETCH_S)
        except BaseException:
            self._release(did)
            raise
        if old is not None:
            self._release(old)
        self._count(None, saves=1)
        return entry

    def _count(self, name: str | None, **deltas: int) -> None:
        if self.app:
            ray.get(self.head.count.remote(self.app, name, **deltas), timeout=_FETCH_S)

    def _release(self, dataset_id: str) -> None:
        ray.get([s.release.remote(dataset_id) for s in servers(self.template).values()], timeout=_FETCH_S)

    # -- reading ----------------------------------------------------------------------------------
    def open_source(self, name: str, bind: Any = None) -> tuple["RayStoreSource", Entry]:
        """``name``'s source and entry. A dataset whose blocks are not all where its entry
        says (their node gone, or its store wiped: lost on every node that held them) is
        rebuilt first from its lineage, with ``bind`` (which gives the unpickled lineage a
        Context), if it was saved with it; DatasetEvicted says why not if not."""
        entry = self.info(name)
        nodes = self._nodes_of(entry)
        lost = self._lost(entry, nodes)
        if lost:
            entry = self._rebuild(entry, lost, bind)
            nodes = self._nodes_of(entry)
        self._count(name, opens=1)
        return RayStoreSource(self.template, entry, self.app, nodes), entry

    def _where(self) -> dict[str, list[str]]:
        """store identity -> the live Ray nodes whose store it is (several where nodes
        share one store's directory, as the simulated nodes of one machine may): asked of
        every live node's server (started where there is none: a cluster started again has
        none yet, and a server's start holds what the catalog names in its store)."""
        alive = alive_nodes()
        if self._where_seen[0] != alive:
            got = ray.get([server(self.template, n).ident_of.remote() for n in sorted(alive)], timeout=_FETCH_S)
            where: dict[str, list[str]] = {}
            for node, ident in got:
                where.setdefault(ident, []).append(node)
            self._where_seen = (alive, where)
        return self._where_seen[1]

    def _nodes_of(self, entry: Entry) -> list[str | None]:
        """Per partition, the live Ray node holding its block by the entry (None: none
        does). An entry names the node's store by its identity, which outlives the cluster;
        of several nodes over one store, the one that wrote the block if it is alive."""
        where = self._where()
        alive = {n for nodes in where.values() for n in nodes}
        out: list[str | None] = []
        for p in entry.partitions:
            nodes = where.get(p["store"], []) if p.get("store") else [n for n in [p.get("node")] if n in alive]
            out.append(p.get("node") if p.get("node") in nodes else (nodes[0] if nodes else None))
        return out

    def _lost(self, entry: Entry, nodes: list[str | None]) -> dict[str, list[int]]:
        """node -> the partitions of ``entry`` whose block is not in that node's store (all
        of them for a node no longer in the cluster, named by the id it had at the save):
        one call per live node that holds some."""
        want: dict[str, list[int]] = {}
        lost: dict[str, list[int]] = {}
        for p, node in zip(entry.partitions, nodes):
            (want if node else lost).setdefault(node or str(p.get("node")), []).append(int(p["partition"]))
        asked = {node: server(self.template, node).missing.remote(entry.id, parts) for node, parts in want.items()}
        for node, ref in asked.items():
            missing = ray.get(ref, timeout=_FETCH_S)
            if missing:
                lost[node] = missing
        return lost

    def _rebuild(self, entry: Entry, lost: dict[str, list[int]], bind: Any) -> Entry:
        """Saves ``entry``'s dataset again from its lineage (one job), under its name."""
        parts = sorted(p for ps in lost.values() for p in ps)
        why = (f"store on Ray: dataset {entry.name!r} of the cluster's catalog lost the blocks of partitions {parts} "
               f"(held by node(s) {', '.join(n[:12] for n in sorted(lost))}: gone from the cluster, or their store "
               f"wiped)")
        if not entry.lineage:
            raise DatasetEvicted(f"{why}, and it was saved without lineage, so it cannot be rebuilt; save it again "
                                 f"(with lineage=True the store rebuilds it)")
        if bind is None:
            raise DatasetEvicted(f"{why}; it has its lineage, and an application's ctx.store.open rebuilds it")
        try:
            data = ray.get(self.head.lineage.remote(entry.id, entry.name), timeout=_FETCH_S)
        except ray.exceptions.RayTaskError as exc:
            raise (exc.cause if isinstance(exc.cause, StoreError) else exc) from None
        new = self.save(bind(cloudpickle.loads(data)), entry.name, mode="overwrite", lineage=True,
                        rebuilds=entry.rebuilds + 1)
        self._count(entry.name, rebuilds=1)
        return new  # type: ignore[return-value]

    def info(self, name: str) -> Entry:
        check_name(name)
        try:
            return Entry(**ray.get(self.head.entry.remote(name), timeout=_FETCH_S))
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, DatasetNotFound):
                raise exc.cause from None
            raise

    def ls(self) -> list[Entry]:
        return [Entry(**e) for e in ray.get(self.head.entries.remote(), timeout=_FETCH_S)]

    def rm(self, name: str) -> None:
        """Unpublishes ``name`` from the cluster's catalog; every node lets its blocks go."""
        check_name(name)
        try:
            did = ray.get(self.head.unpublish.remote(name), timeout=_FETCH_S)
        except ray.exceptions.RayTaskError as exc:
            raise (exc.cause if isinstance(exc.cause, StoreError) else exc) from None
        self._release(did)

    remove = rm

    def usage(self) -> list[dict]:
        """Bytes per tier of every node's store."""
        got = ray.get([s.usage.remote() for s in servers(self.template).values()], timeout=_FETCH_S)
        return [u for per_node in got for u in per_node]

    def level_holds(self, app: str) -> Any:
        """The driver's holds of ``app``'s ``StorageLevel.STORE`` blocks (``ray_level.py``)."""
        return RayLevelHolds(self.template, app)

    def balance(self) -> list[dict]:
        """Every node's ``balance`` of its own store (the datasets of its own catalog: a
        cluster dataset's blocks are held by their server, not moved)."""
        got = ray.get([s.balance.remote() for s in servers(self.template).values()], timeout=_FETCH_S)
        return [m for per_node in got for m in per_node]

    def figures(self) -> dict:
        """The cluster's store figures (``ray_figures.py``): bytes per tier and per node,
        fetches between nodes, per application its opens, reads, fetches, saves, rebuilds.
        Empty but for a note once the Ray connection is closed (a Context that started its
        own Ray instance closes it with its executors)."""
        if not ray.is_initialized():
            return {"apps": {}, "backend": "ray", "note": "the Ray connection was closed with the executors"}
        per_node = ray.get([s.figures.remote() for s in servers(self.template).values()], timeout=_FETCH_S)
        return merge_figures(per_node, self.ls(), self.path)

    def stats(self) -> list[dict]:
        """Per node: blocks served to other nodes, datasets held."""
        return ray.get([s.stats.remote() for s in servers(self.template).values()], timeout=_FETCH_S)

    def close(self) -> None:
        """Nothing to release: the nodes' servers hold a published dataset's blocks."""

    def __repr__(self) -> str:
        return f"RayStore({self.template!r}, catalog at {self.path!r})"


class RayStoreSource(SourceNode):
    """The partitions of a dataset of the cluster's catalog: read from the executor's own
    node's store, fetched from the node that holds it when not there (see the module).
    Travels as the stores' path, the dataset's id, and per partition its node and digest."""

    def __init__(self, template: str | None, entry: Entry, app: str = "",
                 nodes: "list[str | None] | None" = None) -> None:
        self.template = template
        self.app = app
        self.name = entry.name
        self.dataset_id = entry.id
        self.num_partitions = entry.num_partitions
        self.kinds = entry.kinds
        #: per partition, the live Ray node whose store holds its block (``RayStore._nodes_of``)
        self.nodes = nodes if nodes is not None else [p.get("node") for p in entry.partitions]
        self.digests = [p.get("digest") for p in entry.partitions]

    #: each partition prefers the node the catalog names for its block (the scheduler's
    #: ``located_nodes``): read there, mapped, nothing fetched
    located = True

    def preferred_nodes(self, split: int) -> list[str]:
        return [self.nodes[split]] if self.nodes[split] else []

    def compute(self, split: int, tc: "TaskContext | None") -> Any:
        node = _this_node()
        root = root_for(node_root(self.template, node))
        what = f"store dataset {self.name!r} (id {self.dataset_id}) partition {split}"
        path = find_block(root, self.dataset_id, split)
        fetched: dict[str, int] = {}
        if path is None:
            path = self._fetch(root, node, split, what)
            fetched = {"fetches": 1, "bytes_fetched": os.path.getsize(path)}
        value = read_block(path, self.dataset_id, split, root.auth, what)
        n = getattr(value, "nbytes", None)
        count_app(root.path, self.app, self.name, block_reads=1, bytes_read=n if isinstance(n, int) else 0,
                  **fetched)
        return value

    def _fetch(self, root: Any, node: str, split: int, what: str) -> str:
        """The block from the node that holds it, verified, written into this node's store."""
        owner = self.nodes[split]
        if owner is None or owner == node:
            raise BlockCorrupt(f"{what}: its block file is in no tier of this node's store {root.path!r} (the "
                               f"files were deleted behind the store)")
        ok, header, extent = ray.get(server(self.template, owner).block.remote(self.dataset_id, split, what),
                                     timeout=_FETCH_S)
        if not ok:
            raise BlockCorrupt(f"{what}, fetched from node {owner[:12]}: {header}")
        if header.get("digest") != self.digests[split] or header.get("dataset") != self.dataset_id or \
                header.get("partition") != split:
            raise BlockCorrupt(f"{what}: node {owner[:12]} sent a block whose header does not match the "
                               f"catalog's entry; not used")
        ray.get(server(self.template, node).hold.remote(self.dataset_id, holder()), timeout=_FETCH_S)
        return import_block(_tier_with_room(root, len(extent)).data_dir(self.dataset_id), header, extent, root.auth)

    def describe(self) -> str:
        return f"store:{self.name} ({self.num_partitions} partitions on Ray, {'/'.join(self.kinds)})"


def _tier_with_room(root: Any, need: int) -> Any:
    for tier in root.tiers:
        if tier.capacity is None or tier_bytes(tier) + need <= tier.capacity:
            return tier
    return root.tiers[-1]
