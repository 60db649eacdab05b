"""Zhang et al. 2017, Table III/IV on strataflow: Spark's re-caching thrash and its fix.

K-means (K=10, 20 dimensions, 5 iterations) persists the parsed points and, as MLlib
does, their norms as a second dataset, both at MEMORY_AND_DISK, with the cached data 4x
and 8x the memory budget. Each configuration runs under the ``spark`` policy (Spark's
re-caching, reproduced) and ``no-recache`` (the paper's fix), interleaved (the order
alternates between repeats), ``--repeat`` times; the table gives medians.

    python benchmarks/recache.py [--batch-points 2000000] [--record-points 300000]
                                 [--pressures 4,8] [--repeat 3] [--out DIR]

Data are generated once (npy for batches, text for records) under ``--data`` (default: a
temporary directory); reads of them and of the cache files are from the page cache
(warm), since the point is the cache's policy, not the device. "cached" is the size of
points + norms measured with ample memory (MEMORY_ONLY accounted bytes); the memory
budget is cached / pressure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from strataflow import Context  # noqa: E402
from strataflow.metrics.rss import PeakRss  # noqa: E402
from strataflow.storage.level import StorageLevel  # noqa: E402
from strataflow.workloads.generators import gen_kmeans  # noqa: E402
from strataflow.workloads.kmeans import init_centres, kmeans, kmeans_numpy, load_points  # noqa: E402

MB = 2**20
KEYS = ("blocks_dropped", "bytes_dropped", "blocks_recached", "bytes_recached", "disk_bytes_read",
        "disk_bytes_written", "memory_hits", "disk_hits", "misses", "serialize_s", "deserialize_s", "gc_s")


def cached_size(path: str, api: str, partitions: int) -> int:
    with Context(memory="16GB", parallelism=2, progress=False) as ctx:
        points, norms = load_points(ctx, path, api, StorageLevel.MEMORY_ONLY, partitions)
        norms.count()
        return sum(d.memory_bytes for d in ctx.storage_status())


def run_once(path: str, api: str, policy: str, memory: int, partitions: int, init: np.ndarray,
             iterations: int) -> dict:
    jobs: list[dict] = []
    import gc

    gc.collect()
    with tempfile.TemporaryDirectory(prefix="sf-recache-") as cache_dir, PeakRss() as rss, \
            Context(memory=memory, parallelism=2, policy=policy, local_dirs=[cache_dir], progress=False) as ctx:
        ctx.events.subscribe(lambda e: jobs.append(e) if e["event"] == "JobEnd" else None)
        t0 = time.perf_counter()
        points, norms = load_points(ctx, path, api, StorageLevel.MEMORY_AND_DISK, partitions)
        res = kmeans(points, 10, iterations, init=init, norms=norms)
        total = time.perf_counter() - t0
        m = ctx.metrics()
    per_iter = [j["cache"]["bytes_dropped"] / MB for j in jobs[-iterations:]]
    return {"total_s": total, "iteration_s": res.iteration_s, "mb_dropped_per_iteration": per_iter,
            "rss_growth_mb": rss.growth / MB,
            "centres": res.centres, "cost": res.cost, **{k: m[k] for k in KEYS}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-points", type=int, default=2_000_000)
    p.add_argument("--record-points", type=int, default=300_000)
    p.add_argument("--partitions", type=int, default=32)
    p.add_argument("--pressures", default="4,8")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--apis", default="records,batches")
    p.add_argument("--policies", default="spark,no-recache", help="comma-separated; spark must be among them")
    p.add_argument("--data", default=None, help="directory for the generated data (kept)")
    p.add_argument("--out", default=None, help="directory for results.json and table.md")
    args = p.parse_args()
    console = Console(width=200)
    data_dir = args.data or tempfile.mkdtemp(prefix="sf-recache-data-")
    pressures = [float(x) for x in args.pressures.split(",")]
    results: list[dict] = []
    for api in args.apis.split(","):
        n = args.record_points if api == "records" else args.batch_points
        fmt = "text" if api == "records" else "npy"
        sub = os.path.join(data_dir, f"kmeans-{n}-{fmt}")
        name = "points.txt" if fmt == "text" else "points.npy"
        path = os.path.join(sub, name)
        if not os.path.exists(path):
            gen_kmeans(sub, n, 20, seed=42, fmt=fmt)
        from strataflow.workloads.generators import _kmeans_chunks

        data = np.concatenate([c for _, c in _kmeans_chunks(n, 20, 5, 42, 1 << 16)])
        init = init_centres(data, 10, seed=0)
        ref = kmeans_numpy(data, init, args.iterations, args.partitions)
        cached = cached_size(path, api, args.partitions)
        console.print(f"[bold]{api}[/]: {n:,} points, cached points+norms {cached / MB:,.1f} MB")
        for pressure in pressures:
            memory = max(1 << 20, int(cached / pressure))
            policies = args.policies.split(",")
            runs: dict[str, list] = {p: [] for p in policies}
            for rep in range(args.repeat):
                order = policies if rep % 2 == 0 else list(reversed(policies))
                for policy in order:
                    r = run_once(path, api, policy, memory, args.partitions, init, args.iterations)
                    ok = np.allclose(r.pop("centres"), ref.centres, rtol=1e-9, atol=1e-6)
                    if not ok:
                        raise SystemExit(f"{api} {policy}: centres differ from numpy")
                    runs[policy].append(r)
                    console.print(f"  x{pressure:g} {policy:<10} rep {rep}: {r['total_s']:.2f} s, "
                                  f"{r['bytes_dropped'] / MB:,.0f} MB dropped")
            for policy, rs in runs.items():
                med = {k: statistics.median(r[k] for r in rs) for k in ("total_s", "rss_growth_mb", *KEYS)}
                med["iteration_s"] = statistics.median(statistics.median(r["iteration_s"]) for r in rs)
                results.append({"api": api, "points": n, "pressure": pressure, "policy": policy,
                                "cached_mb": cached / MB, "memory_mb": memory / MB, **med,
                                "mb_dropped_per_iteration": rs[0]["mb_dropped_per_iteration"],
                                "runs_total_s": [r["total_s"] for r in rs]})
    table = Table(title="K-means, MEMORY_AND_DISK, points + norms persisted (medians)")
    cols = ["api", "pressure", "policy", "time s", "iter s", "blocks dropped", "MB dropped", "MB dropped/iter",
            "blocks recached", "MB recached", "disk MB read", "disk MB written", "budget MB", "RSS growth MB"]
    for c in cols:
        table.add_column(c, justify="left" if c in ("api", "policy") else "right")
    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in results:
        row = [r["api"], f"{r['pressure']:g}x", r["policy"], f"{r['total_s']:.2f}", f"{r['iteration_s']:.2f}",
               f"{r['blocks_dropped']:.0f}", f"{r['bytes_dropped'] / MB:,.0f}",
               " ".join(f"{x:.0f}" for x in r["mb_dropped_per_iteration"]),
               f"{r['blocks_recached']:.0f}", f"{r['bytes_recached'] / MB:,.0f}",
               f"{r['disk_bytes_read'] / MB:,.0f}", f"{r['disk_bytes_written'] / MB:,.0f}",
               f"{r['memory_mb']:,.0f}", f"{r['rss_growth_mb']:,.0f}"]
        table.add_row(*row)
        md.append("| " + " | ".join(row) + " |")
    console.print(table)
    ratios = []
    for api in args.apis.split(","):
        for pressure in pressures:
            s = next(r for r in results if r["api"] == api and r["pressure"] == pressure and r["policy"] == "spark")
            n = next(r for r in results if r["api"] == api and r["pressure"] == pressure and r["policy"] == "no-recache")
            line = (f"{api} x{pressure:g}: MB dropped spark/no-recache = "
                    f"{s['bytes_dropped'] / max(n['bytes_dropped'], 1):.1f}x, time no-recache/spark = "
                    f"{n['total_s'] / s['total_s']:.2f}")
            ratios.append(line)
            console.print(line)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
        with open(os.path.join(args.out, "table.md"), "w") as f:
            f.write("\n".join(md + [""] + ratios) + "\n")


if __name__ == "__main__":
    main()
