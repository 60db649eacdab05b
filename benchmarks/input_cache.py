"""The input cache (issue 53), measured: a user's K-means over a CSV run as separate
applications, the program unchanged (``user_kmeans.py``), and ``csv_file`` over ``s3://`` on
moto's server, in one run on this machine.

    flock /tmp/sf-bench.lock python benchmarks/input_cache.py --data DIR [--repeat 3]
        [--spark] [--s3-mb 128] [--store DIR]

``DIR``: ``strataflow gen kmeans --points 4000000 --format text``. Each repeat runs, order
rotated: ``off`` (``STRATAFLOW_INPUT_CACHE=off``: the reader without the cache, today's
cold run), ``cold`` (the cache on, its inputs removed first: a first application) and
``warm`` (the same program again: a second application); ``--repeat 0`` runs the S3 part only. The store is ``--store`` (default:
a fresh one in ``/dev/shm``, where the user's default store lives), named through
``STRATAFLOW_STORE``. ``--spark``: PySpark DataFrame + ``ml.KMeans`` on the same data and
memory (``vs_pyspark.py``; JVM start excluded there), once. ``--s3-mb``: a CSV of that
size put on a moto server, read by two applications (``count``), cache cleared before the
first; the read is timed from ``csv_file`` to the count, with the driver's S3 client up
(its session setup, ~0.2 s here, paid by both, is in each application's total). Medians
and ratios go to stdout as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]


def _env(store: str, mode: str) -> dict:
    env = dict(os.environ, STRATAFLOW_STORE=store, STRATAFLOW_INPUT_CACHE=mode)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def clear_inputs(store: str) -> None:
    from strataflow.store.inputs import remove_inputs
    from strataflow.store.root import StoreRoot

    if os.path.isdir(store):
        remove_inputs(StoreRoot(store))


def user_run(points: str, store: str, mode: str) -> dict:
    out = subprocess.run([sys.executable, os.path.join(HERE, "user_kmeans.py"), points], env=_env(store, mode),
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


_S3_READ = """
import json, sys, time
import fsspec
fsspec.config.conf["s3"] = json.loads(sys.argv[2])
t0 = time.perf_counter()
import s3fs  # the driver's S3 client, loaded before the read (as an application's imports load it)
from strataflow import Context
with Context(parallelism=2) as ctx:
    tc = time.perf_counter()
    fsspec.filesystem("s3").ls("bench")  # its session up (credentials, endpoint): both runs pay it
    t1 = time.perf_counter()
    n = ctx.csv_file(sys.argv[1], delimiter=" ").count()
    read = time.perf_counter() - t1
    m = ctx.metrics()
print(json.dumps({"read_s": read, "client_s": t1 - tc, "total_s": time.perf_counter() - t0, "rows": n,
                  "hits": m["input_hits"], "misses": m["input_misses"]}))
"""


def s3_runs(points: str, store: str, mb: int, repeat: int) -> dict:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from moto_s3 import moto_s3

    with open(points, "rb") as fh:
        body = fh.read(mb << 20)
    body = body[:body.rfind(b"\n") + 1]
    runs: dict[str, list] = {"first": [], "second": []}
    with moto_s3("bench") as options:
        import fsspec

        fs = fsspec.filesystem("s3", **options)
        fs.pipe("bench/points.txt", body)
        time.sleep(0)  # an ETag versions an object: no racy window to wait out
        for _ in range(repeat):
            clear_inputs(store)
            for which in ("first", "second"):
                out = subprocess.run([sys.executable, "-c", _S3_READ, "s3://bench/points.txt", json.dumps(options)],
                                     env=_env(store, "auto"), check=True, capture_output=True, text=True)
                runs[which].append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(f"s3 {which}: {runs[which][-1]}", file=sys.stderr, flush=True)
    med = {w: statistics.median(r["read_s"] for r in rs) for w, rs in runs.items()}
    tot = {w: statistics.median(r["total_s"] for r in rs) for w, rs in runs.items()}
    return {"bytes": len(body), "median_read_s": med, "second_read_faster": med["first"] / med["second"],
            "median_total_s": tot, "second_app_faster": tot["first"] / tot["second"], "runs": runs}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--spark", action="store_true")
    p.add_argument("--s3-mb", type=int, default=128)
    p.add_argument("--store")
    args = p.parse_args()
    points = os.path.join(os.path.abspath(args.data), "points.txt")
    tmp = tempfile.mkdtemp(prefix="sf-input-cache-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    store = os.path.abspath(args.store) if args.store else os.path.join(tmp, "store")
    runs: dict[str, list] = {"off": [], "cold": [], "warm": []}
    out: dict = {"points": points}
    try:
        for rep in range(args.repeat):
            order = [["off", "cold", "warm"], ["cold", "warm", "off"], ["cold", "off", "warm"]][rep % 3]
            for v in order:
                if v == "cold":
                    clear_inputs(store)
                r = user_run(points, store, "off" if v == "off" else "auto")
                runs[v].append(r)
                print(f"rep {rep} {v}: total {r['total_s']:.2f} s, load {r['load_s']:.2f} s, passes "
                      f"{[round(x, 3) for x in r['pass_s']]}, hits {r['input'].get('input_hits')}, "
                      f"check {r['check']}", file=sys.stderr, flush=True)
        if args.repeat:
            med = {v: statistics.median(r["total_s"] for r in rs) for v, rs in runs.items()}
            load = {v: statistics.median(r["load_s"] for r in rs) for v, rs in runs.items()}
            out.update(median_total_s=med, median_load_s=load, warm_load_faster=load["cold"] / load["warm"],
                       warm_total_faster=med["cold"] / med["warm"], cold_over_off=med["cold"] / med["off"], runs=runs)
        if args.spark and args.repeat:
            import vs_pyspark

            from strataflow.common.checks import parse_size

            sp = vs_pyspark.spark(os.path.dirname(points), parse_size("128MB"), "df")
            print(f"pyspark-df: total {sp['total_s']:.2f} s", file=sys.stderr, flush=True)
            out["pyspark_df"] = sp
            out["spark_over_warm"] = sp["total_s"] / med["warm"]
            out["spark_over_off"] = sp["total_s"] / med["off"]
        if args.s3_mb:
            out["s3"] = s3_runs(points, store, args.s3_mb, max(3, args.repeat))
        print(json.dumps(out, indent=1, default=str))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
