"""Issue 43's case: K-means (batches) on an ``.npy`` source at 4x memory pressure, AUTO
against the fixed levels, for two checkouts of the code in one run (e.g. main and a
branch), interleaved: every repeat runs each (checkout, level) once, in turn, each a fresh
``strataflow run`` process. Reported per (checkout, level): the median over repeats of each
run's median iteration of 2-5 (the first iteration, which computes and spills, excluded),
its range, misses, MiB mapped, and the ratio to the best fixed level of the same checkout.

Run it under the shared machine's lock: ``flock /tmp/sf-bench.lock python
benchmarks/auto_kmeans_npy.py --code main=/work/main --code branch=. --repeats 3``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

LEVELS = ("AUTO", "DISK_MMAP", "MEMORY_AND_DISK")


def one_run(root: str, level: str, data: str, points: int, pressure: float, extra: list[str]) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    args = ["run", "kmeans", "--api", "batches", "--format", "npy", "--points", str(points), "--data", data,
            "--level", level, "--pressure", str(pressure), "--no-check", "--quiet", "--json", out, *extra]
    code = f"import sys; from strataflow.cli import main; sys.argv = ['strataflow'] + {args!r}; main()"
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        report = json.load(f)
    os.unlink(out)
    m = report["metrics"]
    return {"iteration_s": statistics.median(report["iteration_s"][1:5]), "misses": m["misses"],
            "late_s": statistics.median(report["iteration_s"][3:5]),
            "mapped_mb": m.get("mmap_bytes_mapped", 0) / 2**20, "disk_hits": m["disk_hits"],
            "memory_hits": m["memory_hits"], "split": report.get("memory_split") or {}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--code", action="append", required=True, help="NAME=CHECKOUT (repeat)")
    p.add_argument("--points", type=int, default=2_000_000)
    p.add_argument("--pressure", type=float, default=4.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--data", default="/tmp/sf-auto43-kmeans-npy")
    p.add_argument("--levels", default=",".join(LEVELS))
    args = p.parse_args()
    codes = [c.split("=", 1) for c in args.code]
    levels = args.levels.split(",")
    runs: dict[tuple, list] = {}
    for r in range(args.repeats):
        for name, root in codes:
            for level in levels:
                runs.setdefault((name, level), []).append(
                    one_run(os.path.abspath(root), level, args.data, args.points, args.pressure, []))
    print(f"K-means batches, {args.points:,} x 20 points from .npy, pressure {args.pressure:g}, "
          f"{args.repeats} repeats interleaved; median of iterations 2-5 per run, median (range) over runs")
    print("| code | level | median iteration s | range | / best fixed | iterations 4-5 s | misses | disk hits | "
          "mapped MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, _ in codes:
        med = {lv: statistics.median(x["iteration_s"] for x in runs[(name, lv)]) for lv in levels}
        best = min(v for lv, v in med.items() if lv != "AUTO")
        for lv in levels:
            xs = runs[(name, lv)]
            its = [x["iteration_s"] for x in xs]
            late = statistics.median(x["late_s"] for x in xs)
            print(f"| {name} | {lv} | {med[lv]:.3f} | {min(its):.3f}-{max(its):.3f} | {med[lv] / best:.2f}x | "
                  f"{late:.3f} | "
                  f"{statistics.median(x['misses'] for x in xs):.0f} | "
                  f"{statistics.median(x['disk_hits'] for x in xs):.0f} | "
                  f"{statistics.median(x['mapped_mb'] for x in xs):.0f} |")


if __name__ == "__main__":
    main()
