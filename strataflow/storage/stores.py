"""The one place an executor's stores below memory are built: its tier stack, each tier by
its kind's class (``disk/kinds.py``), and the region store of the mapped levels.

Capacities the configuration gives for the whole application (``disk_capacity``, each
tier's ``capacity``) are divided evenly among the executors, as ``memory`` is. Without
tier specs the stack is one ``disk`` tier on the executor's cache directories with
``disk_capacity``: the cache before tiers existed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from strataflow.storage.disk.kinds import kind_of_entry, tier_kind
from strataflow.storage.disk.tier_spec import TierSpec
from strataflow.storage.disk.tiers import Tier, TieredStore
from strataflow.storage.mapped.region_store import RegionStore

__all__ = ["ExecutorStores", "build_stores", "share", "store_class_of"]


def share(value: int | None, n: int) -> int | None:
    """One executor's share of an application-wide bound (None: unbounded)."""
    return None if value is None else max(1, value // n)


@dataclass
class ExecutorStores:
    """An executor's stores below memory."""

    tiers: TieredStore
    regions: RegionStore


def build_stores(specs: Sequence[TierSpec] | None, tier_dirs: Sequence[Sequence[str]], local_dirs: list[str],
                 disk_capacity: int | None, executors: int, key: bytes | None) -> ExecutorStores:
    """The stores of one of ``executors`` executors. ``tier_dirs``: per spec, this
    executor's directories of that tier (made already); ``local_dirs``: its cache
    directories, which hold the region store, and the ``disk`` tier when ``specs`` is None."""
    if specs is None:
        specs, tier_dirs = [TierSpec("disk", local_dirs, disk_capacity)], [local_dirs]
    if len(specs) != len(tier_dirs):
        raise ValueError(f"{len(specs)} tier specs but directories for {len(tier_dirs)}")
    made = []
    for spec, dirs in zip(specs, tier_dirs):
        store = tier_kind(spec.kind).from_spec(spec, list(dirs), share(spec.capacity, executors), key)
        made.append(Tier(spec.name, store, spec.bandwidth, spec.write_parallelism))
    regions = RegionStore(local_dirs, capacity=share(disk_capacity, executors), key=key)
    return ExecutorStores(TieredStore(made), regions)


def store_class_of(entry: Any) -> type | None:
    """The store class whose ``load_entry`` reads ``entry`` (a tier kind's, or the region
    store's), or None for an entry no store here knows."""
    cls = kind_of_entry(entry)
    if cls is None and isinstance(entry, RegionStore.entry_type):
        cls = RegionStore
    return cls
