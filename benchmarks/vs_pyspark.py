"""K-means end to end against PySpark under memory pressure (issue 4's performance target).

    python benchmarks/vs_pyspark.py --data DIR [--pressure 4] [--repeat 3] [--paths df,rdd]
        [--out FILE]

``DIR`` holds K-means text points (``strataflow gen kmeans --points 4000000 --format text``:
4M 20-d points, ~700 MB). Every configuration runs at MEMORY_AND_DISK with the same storage
memory: a quarter (``--pressure``) of our cached float64 points. Ours: the batches API
(pyarrow's CSV reader per partition), policy ``no-recache``, each run in a fresh process
(``strataflow run``). PySpark: the DataFrame + ml.KMeans path and the RDD + mllib path, in
local[2] mode with a fresh JVM each, the heap sized so that Spark's unified memory equals
our budget (``heap_plan``; the formula is in the JSON). Times are load + 5 iterations
(the JVM's start excluded). The variants are interleaved (the order reversed on every other
repeat); medians and the ratios PySpark/ours go to stdout as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from strataflow.bench.peers.pyspark_peer import run_pyspark  # noqa: E402
from strataflow.workloads.api import read_manifest  # noqa: E402
from strataflow.bench.report import emit_json  # noqa: E402


def ours(data: str, memory: int, policy: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="sf-vs-") as tmp:
        out = os.path.join(tmp, "report.json")
        subprocess.run([sys.executable, "-m", "strataflow.cli", "run", "kmeans", "--data", data, "--level",
                        "MEMORY_AND_DISK", "--policy", policy, "--memory", str(memory), "--api", "batches",
                        "--json", out, "--quiet"], check=True, stdout=subprocess.DEVNULL, cwd=tmp)
        with open(out) as fh:
            rep = json.load(fh)
    load = rep["stages"][0]["seconds"] if rep["stages"] else None
    return {"total_s": rep["total_s"], "load_s": load, "iteration_s": rep["iteration_s"],
            "result_check": rep["result_check"], "mb_dropped": rep["metrics"]["bytes_dropped"] / 2**20}


def spark(data: str, memory: int, path: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="sf-vs-spark-") as tmp:
        rep = run_pyspark("kmeans", data, path=path, level="MEMORY_AND_DISK", storage_memory_bytes=memory,
                          iterations=5, parallelism=2, seed=0, work_dir=tmp)
    return {"total_s": rep["total_s"], "load_s": rep.get("load_s"), "iteration_s": rep["iteration_s"],
            "result_check": rep["result_check"], "heap_formula": rep.get("heap_formula"),
            "blocks_dropped": rep.get("metrics", {}).get("blocks_dropped")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--pressure", type=float, default=4.0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--paths", default="df,rdd")
    p.add_argument("--policy", default="no-recache")
    p.add_argument("--out")
    args = p.parse_args()
    args.data = os.path.abspath(args.data)
    m = read_manifest(args.data)
    memory = int(m["points"] * m["dims"] * 8 / args.pressure)
    variants = ["ours"] + [f"pyspark-{x}" for x in args.paths.split(",") if x]
    runs: dict[str, list] = {v: [] for v in variants}
    for rep in range(args.repeat):
        for v in (variants if rep % 2 == 0 else variants[::-1]):
            r = ours(args.data, memory, args.policy) if v == "ours" else spark(args.data, memory, v.split("-", 1)[1])
            runs[v].append(r)
            print(f"rep {rep} {v}: total {r['total_s']:.2f} s, load {r['load_s'] or 0:.2f} s, "
                  f"check {r['result_check']}", file=sys.stderr, flush=True)
    med = {v: statistics.median(r["total_s"] for r in rs) for v, rs in runs.items()}
    result = {"data": args.data, "points": m["points"], "memory_bytes": memory, "pressure": args.pressure,
              "median_total_s": med,
              "ratio_vs_ours": {v: med[v] / med["ours"] for v in variants if v != "ours"},
              "per_repeat_ratio": {v: [s["total_s"] / o["total_s"] for s, o in zip(runs[v], runs["ours"])]
                                   for v in variants if v != "ours"},
              "runs": runs}
    emit_json(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
