"""Issue 42's pass: application B's first K-means-kernel pass over a numeric dataset that
application A saved in the shared store, against B recomputing it from CSV, B reading it
from Parquet (snappy, uncompressed), and A's own pass over its MEMORY_ONLY cache.

Every B is a fresh Python process (its own Context, parallelism 2); only the pass is timed
(open/read + the kernel + the reduce of the per-partition sums), not the Context's start.
The variants run interleaved, ``--rounds`` times; the table gives each one's median and
its ratio to the store's. Files: the store in ``/dev/shm``; CSV and Parquet in the temp
directory (warm in the page cache after the first round: the warm case). Run under
``flock /tmp/sf-bench.lock``.

    flock /tmp/sf-bench.lock python benchmarks/store_pass.py --mb 256 --rounds 3
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
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PRELUDE = """
import json, sys, time
import numpy as np
from strataflow import Context, StorageLevel
from strataflow.workloads.kmeans import kmeans_partition
ROOT, WORK, K = sys.argv[1], sys.argv[2], 10
CENTRES = np.random.default_rng(1).random((K, 20))

def as_array(v):
    if isinstance(v, np.ndarray):
        return v
    return np.column_stack([c.to_numpy() for c in v.columns])

def kernel(v):
    s, n, cost = kmeans_partition(as_array(v), CENTRES)
    return [(s, n, cost)]

def one_pass(ds):
    parts = ds.map_partitions(kernel).collect()
    return sum(p[2] for p in parts)

ctx = Context(memory="2GB", parallelism=2, progress=False, store=ROOT)
"""

VARIANTS = {
    "store": "ds = ctx.store.open('points')",
    "csv": "ds = ctx.csv_file(WORK + '/points.csv', 8, column_names=[f'c{i}' for i in range(20)], "
           "column_types={f'c{i}': __import__('pyarrow').float64() for i in range(20)})",
    "parquet-snappy": "ds = ctx.parquet_file(WORK + '/snappy.parquet', 8)",
    "parquet-none": "ds = ctx.parquet_file(WORK + '/none.parquet', 8)",
    "memory-only (A)": "ds = ctx.npy_file(WORK + '/points.npy', 8).map_partitions(np.array)"
                       ".persist(StorageLevel.MEMORY_ONLY); one_pass(ds)",
}


def run(code: str, root: str, work: str) -> dict:
    src = PRELUDE + textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", src, root, work], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": REPO}, timeout=1200)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="sf-store-bench-")
    root = f"/dev/shm/sf-store-bench-{os.getpid()}"
    try:
        run(f"""
            import pyarrow as pa, pyarrow.csv as pcsv, pyarrow.parquet as pq
            rows = {args.mb} * (1 << 20) // (20 * 8)
            pts = np.random.default_rng(0).random((rows, 20))
            np.save(WORK + '/points.npy', pts)
            table = pa.table({{f'c{{i}}': pts[:, i] for i in range(20)}})
            pcsv.write_csv(table, WORK + '/points.csv', pcsv.WriteOptions(include_header=False))
            rg = rows // 8 + 1
            pq.write_table(table, WORK + '/snappy.parquet', compression='snappy', row_group_size=rg)
            pq.write_table(table, WORK + '/none.parquet', compression='none', row_group_size=rg)
            ctx.store.save(ctx.npy_file(WORK + '/points.npy', 8).map_partitions(np.array), 'points')
            ctx.stop()
            print(json.dumps({{"rows": rows}}))
            """, root, work)
        times: dict[str, list[float]] = {v: [] for v in VARIANTS}
        cost = {}
        for _ in range(args.rounds):
            for name, setup in VARIANTS.items():
                out = run(setup + "\nt0 = time.perf_counter(); c = one_pass(ds); dt = time.perf_counter() - t0\n"
                          "ctx.stop(); print(json.dumps({'s': dt, 'cost': c}))", root, work)
                times[name].append(out["s"])
                cost[name] = out["cost"]
        base = statistics.median(times["store"])
        print(f"| variant ({args.mb} MB float64, 20 dims, K=10; median of {args.rounds}) | pass s | x store |")
        print("|---|---|---|")
        for name, ts in times.items():
            m = statistics.median(ts)
            print(f"| {name} | {m:.3f} | {m / base:.2f} |")
        ref = cost["store"]
        assert all(abs(c - ref) <= 1e-6 * abs(ref) for c in cost.values()), cost
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
