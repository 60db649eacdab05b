"""How many entries each per-dataset, per-block, per-stage, per-job, per-shuffle,
per-broadcast and per-source structure holds, in an executor and in the driver.

Why: a long-lived application (a service or notebook that persists, shuffles and
unpersists a new dataset each iteration for days) must not grow with the iterations
(issue 38). Memory figures are too noisy to show a leak of a few hundred bytes per
iteration quickly; entry counts are exact. ``tests/test_long_lived.py`` asserts these
counts are the same after 40 and after 160 iterations, and ``benchmarks/soak.py`` prints
them. An executor answers ``handle(GetRegistrySizes())``.

This module reads the structures' private attributes on purpose: it is the one place
that knows them all, so that a new registry added without a bound is noticed by adding
it here. Each figure is a ``len`` taken without the owner's lock (a snapshot for tests
and diagnostics, not for decisions).

Per-process caches count too, not only per-dataset tables (issue 50: the shuffle index
cache kept the indexes of every shuffle an executor had read, up to a 256 MB bound, and
no figure here showed it). :func:`process_cache_sizes` lists every module-level cache
of the engine, and each is released with what it caches: shuffle indexes with their
shuffle (``shuffle/index_cache.py``), broadcast copies with the broadcast
(``shipping/broadcast.py``), the mapped regions, their verified epochs and page
accounting with the dataset (``storage/mapped``), application keys with the
application (``storage/blocks/app_keys.py``), the objects ``gc.freeze()`` caught while a
stage ran with the next unpersist of a deserialized dataset (``executor/core.py``). The
few caches bounded by what they are keyed on rather than by what is removed (array
descriptors, 1,024; error classes by exception type, 256; the shared store's mapped
files, 1,024) are counted too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.context import Context
    from strataflow.executor.core import ExecutorCore

__all__ = ["executor_registry_sizes", "driver_registry_sizes", "process_cache_sizes"]


def _len(obj: Any, name: str) -> int:
    value = getattr(obj, name, None)
    return 0 if value is None else len(value)


def _lru(func: Any) -> int:
    """Entries of an ``functools.lru_cache``."""
    info = getattr(func, "cache_info", None)
    return 0 if info is None else info().currsize


def process_cache_sizes() -> dict[str, int]:
    """This process's module-level caches and registries, by name: entry counts (both an
    executor's and the driver's)."""
    import gc
    import sys

    from strataflow.shipping import broadcast
    from strataflow.shipping import files
    from strataflow.shipping import source_slices
    from strataflow.shuffle.index_cache import index_cache_sizes
    from strataflow.storage import workdirs
    from strataflow.storage.blocks import app_keys
    from strataflow.storage.mapped import layout

    out = {
        # objects ``gc.freeze()`` holds (``gc_free_cache``): cached records, and whatever else
        # was live at the last freeze, garbage that no collection walks once it dies
        "gc_frozen": gc.get_freeze_count(),
        **{k: v for k, v in index_cache_sizes().items() if not k.endswith("_kb")},
        "app_key_dirs": app_keys.registered_count(),
        "broadcasts_loaded": broadcast.loaded_count(),
        "sources_served": len(source_slices._served),
        "source_loaders": len(source_slices._loaders),
        "files_known": len(files._known),
        "workdirs_held": len(workdirs._held),
        # bounded by what they are keyed on: array descriptors (dtype, shape), exception types
        "layout_descriptors": _lru(layout._parse_desc),
        # the scheduler is a floor above: counted where this process has loaded it (the driver)
        "error_classes": _lru(getattr(sys.modules.get("strataflow.scheduler.errors"), "_combined", None)),
    }
    # the shared store's per-process tables, where this process has used the store
    for mod, name, key in (("strataflow.store.blockfile", "_maps", "store_maps"),
                           ("strataflow.store.stats", "_mine", "store_stat_apps"),
                           ("strataflow.store.source", "_roots", "store_roots")):
        got = sys.modules.get(mod)
        out[key] = _len(got, name) if got is not None else 0
    return out


def executor_registry_sizes(core: "ExecutorCore") -> dict[str, int]:
    """An executor's structures, by name: entry counts."""
    rt = core.runtime
    bm = rt.block_manager
    out = {
        "stages": _len(core, "_stages"),
        "failed_stages": _len(core, "_failed"),
        "datasets": _len(bm, "_datasets"),
        "block_locks": _len(bm, "_locks"),
        "memory_blocks": len(bm.memory_store),
        "disk_blocks": sum(1 for _ in bm.disk.items()),
        "disk_tier_index": _len(bm.disk, "_where"),
        "auto_datasets": _len(bm.auto, "_facts"),
        "eviction_marked": _len(bm.eviction, "_marked"),
        "writer_inflight": _len(bm.writer, "_inflight") + _len(bm.writer, "_prefetch"),
        "mapped_pages": _len(bm.mapped_pages, "_lru") + _len(bm.mapped_pages, "_released"),
        "memory_tasks": _len(rt.memory, "_held") + _len(rt.memory, "_active"),
        "disk_inflation": _len(bm.writes, "_inflation"),
        "disk_tier_moves": _len(bm.disk, "_moves") + _len(bm.disk, "_busy"),
        "readahead_pending": _len(getattr(rt.regions, "_ahead", None), "_pending"),
        **process_cache_sizes(),
    }
    for store in (t.store for t in bm.disk.tiers):
        out["disk_entries"] = out.get("disk_entries", 0) + _len(store, "_entries") + _len(store, "_writing")
    if bm.split is not None:
        out["split_left"] = _len(bm.split, "_left")
    regions = rt.regions
    for name in ("_entries", "_cut", "_verified", "_segments", "_by_dataset", "_current", "_deferred"):
        out[f"regions{name}"] = _len(regions, name)
    out.update(bm.policy.sizes())
    return out


def driver_registry_sizes(ctx: "Context") -> dict[str, int]:
    """The driver's structures, by name: entry counts (summed over executor handles)."""
    sched = ctx.scheduler
    out = {
        "persisted_datasets": len(ctx._registry),
        "sources": len(ctx.sources),
        "block_locations": _len(ctx.block_master, "_where"),
        "shuffles_tracked": _len(ctx.map_outputs, "_outputs"),
        "map_stages": _len(sched, "_map_stages"),
        "dead_shuffles_queued": len(ctx._dead_shuffles),
        "dead_broadcasts_queued": len(ctx._dead_broadcasts),
        "executor_totals": _len(sched.totals, "_latest"),
        **ctx._accumulators.sizes(),
        **{f"process_{k}": v for k, v in process_cache_sizes().items()},
    }
    for h in ctx.fleet.live():
        for name in ("_stages_sent", "_to_forget", "_tasks", "_replies"):
            key = f"handles{name}"
            out[key] = out.get(key, 0) + _len(h, name)
    return out
