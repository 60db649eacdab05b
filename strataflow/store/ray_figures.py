"""The store's figures on a Ray cluster: every node's server's (``StoreServer.figures``)
made into the shape a machine's store gives (``Store.figures``), so that
``ctx.metrics()["store"]``, the ``StoreFigures`` event and the report read them alike,
with what only a cluster has beside them.

- ``tiers``, ``capacity``: bytes per tier name summed over the nodes' stores (capacities
  too: each node's tier holds its own); ``nodes``: per node (its first 12 hex digits)
  its store's path, bytes per tier, blocks it served to other nodes, datasets it holds.
- ``fetches``, ``bytes_fetched``: blocks (and bytes) sent from one node's store to
  another's, counted by the sending servers.
- The counters (``moves_down``, ..., ``rebuilds``): summed over the nodes' stores and the
  cluster catalog's (the head's ``cluster/stats``: rebuilds of cluster datasets).
- ``apps``: per application, summed over where its processes counted: its executors'
  block reads and fetches in their nodes' stores, its drivers' opens, saves and rebuilds
  in the cluster catalog's.
- ``datasets``: per name of the cluster's catalog, its bytes, lineage, rebuilds and how
  many of its blocks each node holds (by the entry).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from strataflow.store.stats import COUNTERS

__all__ = ["merge_figures"]


def _add_apps(into: dict[str, dict], apps: dict[str, dict]) -> None:
    for app, got in apps.items():
        mine = into.setdefault(app, {"updated": 0.0, "datasets": Counter()})
        for k, v in got.items():
            if k == "datasets":
                mine["datasets"].update(v)
            elif k == "updated":
                mine["updated"] = max(mine["updated"], float(v or 0))
            else:
                mine[k] = mine.get(k, 0) + v


def merge_figures(per_node: list[dict], entries: list[Any], head_path: str) -> dict:
    """One figure for the cluster from its nodes' (see the module)."""
    tiers: Counter = Counter()
    capacity: dict[str, int | None] = {}
    totals = dict.fromkeys(COUNTERS, 0)
    apps: dict[str, dict] = {}
    nodes = {}
    for f in per_node:
        tiers.update(f["tiers"])
        for name, cap in f["capacity"].items():
            capacity[name] = None if cap is None or capacity.get(name, 0) is None else capacity.get(name, 0) + cap
        for scope in (f, f["cluster"]):
            for k in COUNTERS:
                totals[k] += scope.get(k, 0)
        _add_apps(apps, f["apps"])
        _add_apps(apps, f["cluster"]["apps"])
        nodes[f["node"][:12]] = {"path": f["path"], "tiers": f["tiers"], "served": f["served"],
                                 "served_bytes": f["served_bytes"], "held": f["held"]}
    datasets = {e.name: {"bytes": e.nbytes, "lineage": e.lineage, "rebuilds": e.rebuilds, "evicted": False,
                         "nodes": dict(Counter(str(p.get("node"))[:12] for p in e.partitions))} for e in entries}
    return {"root": head_path, "backend": "ray", "tiers": dict(tiers), "capacity": capacity, **totals,
            "fetches": sum(f["served"] for f in per_node), "bytes_fetched": sum(f["served_bytes"] for f in per_node),
            "nodes": nodes, "apps": {a: {**v, "datasets": dict(v["datasets"])} for a, v in apps.items()},
            "datasets": datasets}
