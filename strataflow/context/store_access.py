"""``ctx.store``: the shared store (``strataflow/store/``) as an application sees it.

The store lives below the datasets, so it cannot make one: this thin view turns what it
opens into a ``Dataset`` of this Context, and releases the Context's hold on the datasets
it opened when the Context stops. The store is made at the first use of ``ctx.store``
(nothing to start; a Context that never uses it touches no file of it), or at the first
``persist(StorageLevel.STORE)`` (``store/level_blocks.py``: the driver holds the level's
blocks in the store until ``unpersist`` or its end).

What the application does with the store is in its event log (``StoreSave``, ``StoreOpen``,
``StoreRebuild``; at its end ``StoreFigures``, the store's figures) and in
``ctx.metrics()["store"]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strataflow.dataset import Dataset
from strataflow.store import Store
from strataflow.store.catalog import Entry
from strataflow.store.level_blocks import LevelHolds
from strataflow.store.rebuild import bind

if TYPE_CHECKING:
    from strataflow.config import Config

__all__ = ["StoreAccess", "ContextStore"]


class ContextStore:
    """The store at ``ctx.config.store`` (default: the user's own), for one Context."""

    def __init__(self, ctx: Any, store: Any) -> None:
        self._ctx = ctx
        #: this machine's ``Store``, or on the ray backend the cluster's ``RayStore``
        self.backing = store
        self._levels: Any = None  # LevelHolds, or on the ray backend RayLevelHolds

    @property
    def levels(self) -> Any:
        """The holds of the datasets this application persisted at ``StorageLevel.STORE``:
        leases in this machine's store (``LevelHolds``), or on the ray backend each node's
        store server's (``store/ray_level.py``: the executors' blocks lie in their nodes'
        stores)."""
        if self._levels is None:
            cluster_holds = getattr(self.backing, "level_holds", None)
            if cluster_holds is not None:  # the ray backend's: held by each node's store server
                self._levels = cluster_holds(self._ctx.app_id)
            else:
                self._levels = LevelHolds(self.backing.root, self._ctx.app_id)
        return self._levels

    def close(self) -> None:
        """Releases this application's holds and leases (the Context's end)."""
        try:
            if self._levels is not None:
                self._levels.close()
        finally:
            self.backing.close()

    @property
    def path(self) -> str:
        return self.backing.path

    def save(self, dataset: Dataset, name: str, mode: str = "error", lineage: bool = False) -> Entry | None:
        """Saves every partition of ``dataset`` under ``name`` (one job), visible to other
        applications once complete. ``mode``: ``error`` (default), ``overwrite``, ``ignore``.
        ``lineage=True`` keeps its lineage too: evicted from every tier, it is rebuilt by
        the next application that opens it."""
        if dataset.ctx is not self._ctx:
            raise ValueError("store.save: the dataset belongs to another Context")
        entry = self.backing.save(dataset, name, mode, lineage=lineage)
        if entry is not None:
            self._ctx.events.post("StoreSave", name=name, id=entry.id, partitions=entry.num_partitions,
                                  bytes=entry.nbytes, lineage=lineage)
        return entry

    def open(self, name: str) -> Dataset:
        """The dataset published as ``name``, read from the store (numeric and Arrow
        partitions are read-only views of the mapped block files). Evicted, it is rebuilt
        from its lineage if it was saved with it; DatasetEvicted says so if not."""
        rebuilt = []

        def bind_here(lineage: Any) -> Any:
            rebuilt.append(True)
            self._ctx.events.post("StoreRebuild", name=name)
            return bind(lineage, self._ctx)

        source, entry = self.backing.open_source(name, bind_here)
        self._ctx.events.post("StoreOpen", name=name, id=entry.id, partitions=entry.num_partitions,
                              bytes=entry.nbytes, rebuilt=bool(rebuilt))
        return Dataset(self._ctx, source, f"store.open({name!r})").set_name(name)

    def balance(self) -> list[dict]:
        return self.backing.balance()

    def figures(self) -> dict:
        """The store's figures (``Store.figures``), with this application's own (``app``)."""
        out = self.backing.figures()
        out["app"] = out["apps"].get(self._ctx.app_id, {})
        return out

    def info(self, name: str) -> Entry:
        return self.backing.info(name)

    def exists(self, name: str) -> bool:
        return self.backing.exists(name)

    __contains__ = exists

    def ls(self) -> list[Entry]:
        return self.backing.ls()

    def rm(self, name: str) -> None:
        self.backing.rm(name)

    def usage(self) -> list[dict]:
        return self.backing.usage()

    list, remove = ls, rm

    def __repr__(self) -> str:
        return f"<store {self.path}>"


class StoreAccess:
    """``Context``'s ``store`` property (needs ``config``)."""

    config: "Config"
    _store_view: ContextStore | None = None

    @property
    def store(self) -> ContextStore:
        """The shared store (made at first use, at ``store=``, default the user's own):
        ``save`` a dataset under a name, ``open`` it from this or a later application,
        ``ls``, ``rm`` (``docs/store.md``).

        >>> import numpy as np
        >>> _ = ctx.store.save(ctx.from_numpy(np.arange(6.0).reshape(3, 2), 2), "doctest-points", mode="overwrite")
        >>> ctx.store.open("doctest-points").collect_partitions()[1]
        array([[2., 3.],
               [4., 5.]])
        >>> ctx.store.rm("doctest-points")
        """
        self._check_open()  # type: ignore[attr-defined]
        if self._store_view is None:
            self._store_view = ContextStore(self, _open_store(self.config, self.app_id))  # type: ignore[attr-defined]
        return self._store_view

    def _hold_store_level(self, dataset_id: int) -> None:
        """A dataset persisted at ``StorageLevel.STORE``: its blocks are held in the store."""
        self.store.levels.hold(dataset_id)

    def _release_store_level(self, dataset_id: int) -> None:
        if self._store_view is not None:
            if self._store_view._levels is not None:
                self._store_view._levels.release(dataset_id)

    def _store_metrics(self) -> dict:
        """``ctx.metrics()``'s ``store`` entry, once this application used the store."""
        return {} if self._store_view is None else {"store": self._store_view.figures()}

    def _close_store(self) -> None:
        if self._store_view is not None:
            view, self._store_view = self._store_view, None
            try:
                self.events.post("StoreFigures", **view.figures())  # type: ignore[attr-defined]
            finally:
                view.close()


def _open_store(config: "Config", app: str) -> Any:
    """The store of this machine; on a backend whose nodes share no files (ray), the
    cluster's: a store per node, one catalog (``store/ray_store.py``)."""
    from strataflow.config.backends import SHIPS_BY_OBJECT_STORE, backend_class

    if backend_class(config.backend).ships_by == SHIPS_BY_OBJECT_STORE:
        from strataflow.store.ray_store import RayStore

        return RayStore(config.store, app=app)
    return Store(config.store, app=app)
