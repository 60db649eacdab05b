"""Runs one workload in a fresh Context and reports it as the JSON the issue defines:
``config, total_s, stages: [{name, seconds}], iteration_s, metrics, cached_bytes,
result_check`` (plus ``extra``, the workload's own figures)."""

from __future__ import annotations

import json
import time
from typing import Any

from strataflow.context import Context
from strataflow.metrics.rss import PeakRss
from strataflow.workloads.api import APIS, check_status, read_manifest, workload_module

__all__ = ["run_workload"]


def run_workload(name: str, data_dir: str, *, api: str = "batches", level: str = "MEMORY_ONLY",
                 policy: str | None = None, memory: int | str = "1GB", parallelism: int | None = None,
                 serializer: str | None = None, iterations: int | None = None, seed: int = 0,
                 event_log: str | None = None, local_dirs: list[str] | None = None, progress: bool | None = False,
                 check: bool = True, json_out: str | None = None, context_options: dict | None = None,
                 announce_check: Any = None, **options: Any) -> dict:
    """``context_options``: further ``Context`` arguments (``tiers``, ``async_eviction``,
    ``eviction_watermarks``, ``mmap_memory``, ...); ``options`` go to the workload.
    ``announce_check``: see :data:`.api.check_status`. Without ``check`` the report's
    ``result_check`` is ``"skipped"``, never a claim that an unchecked result is right."""
    if api not in APIS:
        raise ValueError(f"api must be one of {', '.join(APIS)}, got {api!r}")
    module = workload_module(name)
    manifest = read_manifest(data_dir)
    if manifest.get("workload") != name:
        raise ValueError(f"{data_dir!r} holds {manifest.get('workload')!r} data, not {name}")
    stages: list[dict] = []
    kwargs = dict(api=api, level=level, serializer=serializer, seed=seed, check=check, **options)
    if iterations is not None:
        kwargs["iterations"] = iterations
    with PeakRss() as rss, Context(memory=memory, parallelism=parallelism, policy=policy, event_log=event_log,
                                   local_dirs=local_dirs, progress=progress, app_name=name,
                                   **(context_options or {})) as ctx:
        ctx.events.subscribe(lambda ev: stages.append(ev) if ev["event"] == "StageEnd" else None)
        t0 = time.perf_counter()
        token = check_status.set(announce_check)
        try:
            outcome = module.run(ctx, data_dir, manifest, **kwargs)
        finally:
            check_status.reset(token)
        total = time.perf_counter() - t0 - outcome.check_s  # the independent check is not the run
        status = ctx.storage_status()
        metrics = ctx.metrics()
        config = {"workload": name, "data": data_dir, "api": api, "level": str(level), "policy": ctx.policy,
                  "memory": ctx.config.memory, "parallelism": ctx.config.parallelism,
                  "serializer": serializer or "auto", "iterations": len(outcome.iteration_s), "seed": seed,
                  "data_bytes": manifest.get("bytes")}
    report = {
        "config": config,
        "total_s": total,
        "check_s": outcome.check_s,
        "stages": [{"name": e["name"], "seconds": e["seconds"], "tasks": e["num_tasks"]} for e in stages],
        "iteration_s": outcome.iteration_s,
        "metrics": metrics,
        "cached_bytes": sum(d.memory_bytes + d.disk_bytes for d in status),
        "cached_memory_bytes": sum(d.memory_bytes for d in status),
        "cached_disk_bytes": sum(d.disk_bytes for d in status),
        "rss_growth_bytes": rss.growth,
        "result_check": outcome.result_check if check else "skipped",
        "extra": outcome.extra,
        "storage": [vars(d) for d in status],
        "memory_split": dict(status.split),
    }
    if json_out:
        with open(json_out, "w") as f:
            json.dump(report, f, indent=1, default=float)
    return report
