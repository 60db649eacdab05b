"""``StorageLevel.STORE`` on a Ray cluster: each node's blocks in that node's store, held
there by the node's store server (``ray_server.py``) for as long as the application keeps
the dataset persisted.

On one machine the driver's lease (``level_blocks.LevelHolds``) keeps an application's
``STORE`` blocks from the store's sweep. On a cluster the blocks lie in the store of the
node whose executor computed them, which the driver's lease (a ``flock`` on the driver's
machine) cannot reach: another node's sweep would take them. So:

- an executor (:class:`RayLevelBlocks`) writes into its own node's store (the path with
  ``{node}`` resolved, as a save's task does) and, before the first block of a dataset,
  asks its node's server to hold ``lvl-<application id>-<dataset id>`` there;
- the driver (:class:`RayLevelHolds`) releases that id on every node's server at
  ``unpersist`` and at the Context's end; each server then sweeps its store.

An application whose driver dies without stopping its Context leaves its holds with the
servers until the cluster ends (the servers cannot tell a driver gone from a quiet one;
the same holds for a save whose driver dies mid-way: ``docs/store.md``).
"""

from __future__ import annotations

from typing import Any

import ray

from strataflow.store.level_blocks import StoreLevelBlocks, level_id
from strataflow.store.ray_server import node_root, server, servers

__all__ = ["RayLevelBlocks", "RayLevelHolds"]

_CALL_S = 120.0


class RayLevelBlocks(StoreLevelBlocks):
    """An executor's ``STORE`` blocks on a Ray node (see the module)."""

    def __init__(self, template: str | None, app: str, node_id: str) -> None:
        super().__init__(node_root(template, node_id), app)
        self.template = template
        self.node_id = node_id
        self._held: set[str] = set()

    def put(self, bid: Any, value: Any, label: str) -> int:
        did = level_id(self.app, bid.dataset_id)
        if did not in self._held:  # held before the first block is written: no sweep sees it unheld
            ray.get(server(self.template, self.node_id).hold.remote(did), timeout=_CALL_S)
            self._held.add(did)
        return super().put(bid, value, label)

    def remove_dataset(self, dataset_id: int) -> int:
        self._held.discard(level_id(self.app, dataset_id))
        return super().remove_dataset(dataset_id)


class RayLevelHolds:
    """The driver's side: the ``STORE`` datasets it persisted, released on every node's
    server at ``unpersist`` and at the end (``LevelHolds``'s calls)."""

    def __init__(self, template: str | None, app: str) -> None:
        self.template = template
        self.app = app
        self._ids: set[int] = set()

    def hold(self, dataset_id: int) -> None:
        """Noted: the servers hold the blocks from the first one an executor writes."""
        self._ids.add(dataset_id)

    def release(self, dataset_id: int) -> None:
        self._ids.discard(dataset_id)
        if not ray.is_initialized():
            return  # the Context's own Ray instance, stopped with its executors: its servers went with it
        lid = level_id(self.app, dataset_id)
        ray.get([s.release.remote(lid) for s in servers(self.template).values()], timeout=_CALL_S)

    def close(self) -> None:
        for dataset_id in list(self._ids):
            self.release(dataset_id)
