"""The ``strataflow`` command: ``gen`` writes a data set, ``run`` runs a workload on it.

    strataflow gen kmeans --out data/kmeans --points 2000000
    strataflow run kmeans [--data DIR] [--points N] [--memory 1GB] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Sequence

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from .config import ConfigError, parse_size

__all__ = ["main"]

console = Console(stderr=True)


def _gen_kmeans(out: str, points: int, dims: int, seed: int) -> str:
    from .workloads.generators import gen_kmeans

    with Progress(TextColumn("generating k-means points"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,}"),
                  TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task("gen", total=points)
        return gen_kmeans(out, points, dims, seed=seed, progress=lambda n: bar.advance(task, n))


def cmd_gen(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    path = _gen_kmeans(args.out, args.points, args.dims, args.seed)
    size = os.path.getsize(path)
    console.print(f"wrote {args.points:,} x {args.dims} points ({size / 2**20:,.0f} MiB) to {path} "
                  f"in {time.perf_counter() - t0:.1f} s")
    return 0


def _kmeans_data(args: argparse.Namespace) -> tuple[str, dict]:
    from .workloads.generators import read_manifest

    data = args.data or os.path.join("data", f"kmeans-{args.points}x{args.dims}-seed{args.seed}")
    try:
        manifest = read_manifest(data)
    except FileNotFoundError:
        if args.data:
            raise
        _gen_kmeans(data, args.points, args.dims, args.seed)
        manifest = read_manifest(data)
    if manifest.get("workload") != "kmeans":
        raise ValueError(f"{data!r} holds {manifest.get('workload')!r} data, not kmeans")
    return os.path.join(data, manifest["files"][0]), manifest


def _cache_summary(ctx, metrics: dict) -> Table:
    mb = lambda n: f"{n / 2**20:,.1f}"  # noqa: E731
    t = Table(title=f"cache ({ctx.policy} policy, memory budget {ctx.config.memory / 2**20:,.0f} MiB)")
    t.add_column("what")
    t.add_column("value", justify="right")
    rows = [
        ("memory hits / disk hits / misses",
         f"{metrics['memory_hits']:.0f} / {metrics['disk_hits']:.0f} / {metrics['misses']:.0f}"),
        ("blocks dropped (MB)", f"{metrics['blocks_dropped']:.0f} ({mb(metrics['bytes_dropped'])})"),
        ("blocks re-cached (MB)", f"{metrics['blocks_recached']:.0f} ({mb(metrics['bytes_recached'])})"),
        ("disk MB written / read", f"{mb(metrics['disk_bytes_written'])} / {mb(metrics['disk_bytes_read'])}"),
        ("serialize / deserialize s", f"{metrics['serialize_s']:.2f} / {metrics['deserialize_s']:.2f}"),
        ("GC s (collections)", f"{metrics['gc_s']:.2f} ({metrics['gc_collections']:.0f})"),
        ("peak storage / execution MB", f"{mb(metrics['peak_storage_memory'])} / {mb(metrics['peak_execution_memory'])}"),
    ]
    for r in rows:
        t.add_row(*r)
    return t


def cmd_run(args: argparse.Namespace) -> int:
    from .context import Context
    from .storage.level import StorageLevel
    from .workloads.kmeans import init_centres, kmeans, kmeans_numpy, load_points

    path, manifest = _kmeans_data(args)
    level = StorageLevel.parse(args.level)
    memory = args.memory if args.memory != "auto" else max(1 << 20, int(manifest["bytes"] * 1.05 / args.pressure))
    stages: list[dict] = []
    t0 = time.perf_counter()
    with Context(memory=memory, parallelism=args.parallelism, event_log=args.event_log, policy=args.policy,
                 progress=False if args.quiet else None) as ctx:
        ctx.events.subscribe(lambda ev: stages.append(ev) if ev["event"] == "StageEnd" else None)
        partitions = args.partitions or 8 * ctx.default_parallelism
        points, norms = load_points(ctx, path, "batches", level, partitions)
        data = np.load(path, mmap_mode="r")
        init = init_centres(data, args.k, args.seed)
        res = kmeans(points, k=args.k, iterations=args.iterations, init=init, norms=norms)
        total = time.perf_counter() - t0
        status = ctx.storage_status()
        metrics = ctx.metrics()
        cache_table = _cache_summary(ctx, metrics)
        check = "skipped"
        if not args.no_check:
            ref = kmeans_numpy(data, init, args.iterations, points.num_partitions)
            same = np.allclose(ref.centres, res.centres, rtol=1e-9, atol=1e-9) and np.isclose(ref.cost, res.cost)
            check = "ok" if same else f"centres differ from numpy by {np.abs(ref.centres - res.centres).max():.3g}"
    table = Table(title=f"k-means: {manifest['points']:,} x {manifest['dims']} points "
                        f"({manifest['bytes'] / 2**20:,.0f} MiB), K={args.k}, {args.iterations} iterations, "
                        f"{level.name}")
    for col in ("stage", "name", "tasks", "seconds"):
        table.add_column(col, justify="right" if col in ("stage", "tasks", "seconds") else "left")
    for ev in stages:
        table.add_row(str(ev["stage_id"]), ev["name"], str(ev["num_tasks"]), f"{ev['seconds']:.3f}")
    out = Console()
    out.print(table)
    out.print(str(status))
    out.print(cache_table)
    out.print(f"iterations (s): {', '.join(f'{s:.3f}' for s in res.iteration_s)}; "
              f"median {float(np.median(res.iteration_s)):.3f} s; total {total:.2f} s; "
              f"cost {res.cost:.6g}; result check: {check}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"config": {"workload": "kmeans", "data": path, "k": args.k, "iterations": args.iterations,
                                  "memory": memory, "level": level.name, "policy": args.policy,
                                  "parallelism": args.parallelism},
                       "total_s": total, "stages": [{"name": e["name"], "seconds": e["seconds"]} for e in stages],
                       "iteration_s": res.iteration_s, "metrics": metrics,
                       "cached_bytes": sum(d.memory_bytes + d.disk_bytes for d in status),
                       "cost": res.cost, "result_check": check}, f, indent=1, default=float)
    return 0 if check in ("ok", "skipped") else 1


def _size(text: str) -> str:
    if text != "auto":
        parse_size(text, "--memory")
    return text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="strataflow", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    g = sub.add_parser("gen", help="generate a data set")
    g.add_argument("workload", choices=["kmeans"])
    g.add_argument("--out", required=True)
    g.add_argument("--points", type=int, default=2_000_000)
    g.add_argument("--dims", type=int, default=20)
    g.add_argument("--seed", type=int, default=0)
    g.set_defaults(func=cmd_gen)

    r = sub.add_parser("run", help="run a workload")
    r.add_argument("workload", choices=["kmeans"])
    r.add_argument("--data", help="a directory written by `strataflow gen` (generated if absent)")
    r.add_argument("--points", type=int, default=2_000_000, help="points to generate when --data is absent")
    r.add_argument("--dims", type=int, default=20)
    r.add_argument("--k", type=int, default=10)
    r.add_argument("--iterations", type=int, default=5)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--memory", type=_size, default="auto",
                   help="the unified memory budget, e.g. 512MB; auto: the data size / --pressure")
    r.add_argument("--pressure", type=float, default=4.0, help="with --memory auto: data size / memory budget")
    r.add_argument("--level", default="MEMORY_AND_DISK", help="storage level of the points and norms")
    r.add_argument("--policy", default=None, help="cache policy (default: the best, no-recache)")
    r.add_argument("--parallelism", type=int, default=None)
    r.add_argument("--partitions", type=int, default=None)
    r.add_argument("--event-log", default=None)
    r.add_argument("--json", default=None, help="write the run's figures as JSON here")
    r.add_argument("--no-check", action="store_true", help="skip comparing with a plain numpy run")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    r.set_defaults(func=cmd_run)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        console.print(f"[red]strataflow: {exc}[/red]")
        return 2


if __name__ == "__main__":
    sys.exit(main())
