"""``StorageLevel.STORE``: an application's cached blocks kept in the shared store, so that
they outlive the executor that computed them (Spark 1.x's ``OFF_HEAP`` on Tachyon).

Why a level of its own and not ``OFF_HEAP``: strataflow's ``OFF_HEAP`` has Spark 2+'s
meaning (serialized bytes in an anonymous mapping inside the executor, out of the garbage
collector's sight), which programs and tests rely on; Tachyon left Spark in 2.0. ``STORE``
is the Tachyon meaning, named for where the blocks go.

Both sides:

- each executor's block manager gets a :class:`StoreLevelBlocks` (``shared_blocks.py``, the
  seam in storage/): a block of a ``STORE`` dataset is written as a store block file
  (``blockfile.py``: keyed tag, checksum, the zero-copy layout) in the fastest tier with
  room, under the store dataset id ``lvl-<application id>-<dataset id>``, and read back by
  mapping it, from any executor of the application;
- the driver (:class:`LevelHolds`) holds a lease on each such id from ``persist`` to
  ``unpersist`` or the Context's end, so no sweep removes the blocks while the application
  lives; when it ends (or dies: the lease is a ``flock``) the next sweep removes them.

The blocks are not published in the catalog: they are the application's cache, not a
dataset another application opens by name (``ctx.store.save`` is that).
"""

from __future__ import annotations

import os
import shutil
import threading
from typing import Any

from strataflow.store.blockfile import SUFFIX, read_block
from strataflow.store.locks import Lease, gc_lock
from strataflow.store.root import StoreRoot, default_root
from strataflow.store.source import find_block, root_for
from strataflow.store.store import save_partition
from strataflow.store.sweep import sweep

__all__ = ["StoreLevelBlocks", "LevelHolds", "app_of", "level_id"]

_PREFIX, _SUFFIX = "strataflow-", "-cache"


def app_of(cache_dir: str) -> str:
    """The application id in the name of its cache directory (``strataflow-<app id>-cache``,
    ``storage/workdirs.py``): the driver and every executor of one application have the
    same one, and no two applications do."""
    base = os.path.basename(os.path.normpath(cache_dir))
    if base.startswith(_PREFIX) and base.endswith(_SUFFIX):
        base = base[len(_PREFIX):-len(_SUFFIX)]
    return base


def level_id(app: str, dataset_id: int) -> str:
    """The store dataset id of a ``STORE`` dataset's blocks."""
    return f"lvl-{app}-{dataset_id}"


class StoreLevelBlocks:
    """An executor's view of its application's ``STORE`` blocks (``SharedBlocks``). The
    store is opened at the first block (an application that never uses the level touches
    nothing of it)."""

    def __init__(self, root: str | None, app: str) -> None:
        self.root_path = root
        self.app = app
        #: dataset id -> split -> bytes: the blocks this executor put (``blocks``)
        self._mine: dict[int, dict[int, int]] = {}
        self._lock = threading.Lock()

    @property
    def root(self) -> StoreRoot:
        return root_for(self.root_path if self.root_path is not None else default_root())

    def get(self, bid: Any, label: str) -> tuple[Any, int] | None:
        root = self.root
        did = level_id(self.app, bid.dataset_id)
        path = find_block(root, did, bid.split)
        if path is None:
            return None
        value = read_block(path, did, bid.split, root.auth, f"cached block {bid} of {label} in the store")
        return value, os.path.getsize(path)

    def put(self, bid: Any, value: Any, label: str) -> int:
        root = self.root
        n = int(save_partition(root.path, level_id(self.app, bid.dataset_id), bid.split, value)[0]["nbytes"])
        return self._note(bid, n)

    def _note(self, bid: Any, nbytes: int) -> int:
        with self._lock:
            self._mine.setdefault(bid.dataset_id, {})[bid.split] = nbytes
        return nbytes

    def blocks(self, dataset_id: int) -> dict[int, int]:
        with self._lock:
            return dict(self._mine.get(dataset_id, {}))

    def remove_dataset(self, dataset_id: int) -> int:
        root = self.root
        did = level_id(self.app, dataset_id)
        with self._lock:
            self._mine.pop(dataset_id, None)
        n = 0
        for tier in root.tiers:
            d = tier.data_dir(did)
            n += sum(1 for f in _ls(d) if f.endswith(SUFFIX))
            shutil.rmtree(d, ignore_errors=True)
        return n


def _ls(d: str) -> list[str]:
    try:
        return os.listdir(d)
    except FileNotFoundError:
        return []


class LevelHolds:
    """The driver's leases on its ``STORE`` datasets' blocks (see the module's docstring)."""

    def __init__(self, root: StoreRoot, app: str) -> None:
        self.root = root
        self.app = app
        self._leases: dict[int, Lease] = {}

    def hold(self, dataset_id: int) -> None:
        if dataset_id not in self._leases:
            with gc_lock(self.root.path, exclusive=False):
                self._leases[dataset_id] = Lease(self.root.path, level_id(self.app, dataset_id))

    def release(self, dataset_id: int) -> None:
        """``unpersist``: the lease goes, and with it (the executors removed theirs) any block left."""
        lease = self._leases.pop(dataset_id, None)
        if lease is not None:
            lease.release()
            for tier in self.root.tiers:
                shutil.rmtree(tier.data_dir(level_id(self.app, dataset_id)), ignore_errors=True)

    def close(self) -> None:
        """The application ends: every lease goes and the sweep removes the blocks."""
        had = bool(self._leases)
        for dataset_id in list(self._leases):
            self.release(dataset_id)
        if had:
            sweep(self.root)
