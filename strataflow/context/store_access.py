"""``ctx.store``: the shared store (``strataflow/store/``) as an application sees it.

The store lives below the datasets, so it cannot make one: this thin view turns what it
opens into a ``Dataset`` of this Context, and releases the Context's hold on the datasets
it opened when the Context stops. The store is made at the first use of ``ctx.store``
(nothing to start; a Context that never uses it touches no file of it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strataflow.dataset import Dataset
from strataflow.store import Store
from strataflow.store.catalog import Entry

if TYPE_CHECKING:
    from strataflow.config import Config

__all__ = ["StoreAccess", "ContextStore"]


class ContextStore:
    """The store at ``ctx.config.store`` (default: the user's own), for one Context."""

    def __init__(self, ctx: Any, store: Store) -> None:
        self._ctx = ctx
        self.backing = store

    @property
    def path(self) -> str:
        return self.backing.path

    def save(self, dataset: Dataset, name: str, mode: str = "error") -> Entry | None:
        """Saves every partition of ``dataset`` under ``name`` (one job), visible to other
        applications once complete. ``mode``: ``error`` (default), ``overwrite``, ``ignore``."""
        if dataset.ctx is not self._ctx:
            raise ValueError("store.save: the dataset belongs to another Context")
        return self.backing.save(dataset, name, mode)

    def open(self, name: str) -> Dataset:
        """The dataset published as ``name``, read from the store (numeric and Arrow
        partitions are read-only views of the mapped block files)."""
        source, entry = self.backing.open_source(name)
        return Dataset(self._ctx, source, f"store.open({name!r})").set_name(name)

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
            self._store_view = ContextStore(self, _open_store(self.config))
        return self._store_view

    def _close_store(self) -> None:
        if self._store_view is not None:
            self._store_view.backing.close()
            self._store_view = None


def _open_store(config: "Config") -> Any:
    """The store of this machine; on the ray backend, the cluster's (a store per node,
    one catalog: ``store/ray_store.py``)."""
    from strataflow.config.backends import SHIPS_BY_OBJECT_STORE, backend_class

    if backend_class(config.backend).ships_by == SHIPS_BY_OBJECT_STORE:
        from strataflow.store.ray_store import RayStore

        return RayStore(config.store)
    return Store(config.store)
