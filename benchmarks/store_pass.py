"""Issue 42's pass: application B's first K-means-kernel pass over a numeric dataset that
application A saved in the shared store, against B recomputing it from CSV, B reading it
from Parquet (snappy, uncompressed), and A's own pass over its MEMORY_ONLY cache.

Also: the store mapped with ``MAP_POPULATE`` and with a plain map (pages at their first
touch) against today's default (``MADV_POPULATE_READ`` after the map); and, under pressure, B's pass over a store whose memory tier
holds a quarter of the dataset (the rest in a disk tier) against A's own pass over the
engine's ``DISK_MMAP`` level with memory at a quarter of the dataset, with the store's
digest checked at the first read in each process (``verify="process"``) and with the
default ``verify="store"`` (once per version of a file: ``store/verified.py``). ``--quarter-only`` runs just those.

Every run is a fresh Python process (its own Context, parallelism 2, executor processes);
only the pass is timed (open/read + the kernel + the reduce of the per-partition sums),
not the Context's start. The variants run interleaved, ``--rounds`` times (warm: the
files in the page cache after the set-up wrote them); the table gives each one's median
and its ratio to the store's. Then each variant that has files on disk runs once *cold*:
the page cache dropped (``/proc/sys/vm/drop_caches``, root) just before the timed pass
(a tmpfs store's pages are not dropped: they are its memory). Files: the store in
``/dev/shm``; the quarter store's disk tier, CSV, Parquet, ``.npy`` and ``DISK_MMAP``'s
files in the temp directory. Run under ``flock /tmp/sf-bench.lock``. Each pass's CPU
seconds (the driver's and its executors', ``psutil``) are printed too: on a machine shared
with other sessions they move less than the wall times do.

    flock /tmp/sf-bench.lock python benchmarks/store_pass.py --mb 1024 --rounds 3
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
import json, os, sys, time
import numpy as np
from strataflow import Context, StorageLevel
from strataflow.workloads.kmeans import kmeans_partition
ROOT, ROOT4, WORK, MB, COLD, K = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "cold", 10
ROOT4V = sys.argv[6]
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

def context(**kw):
    opts = dict(memory=f"{4 * MB}MB", parallelism=2, progress=False, store=ROOT)
    opts.update(kw)
    return Context(**opts)

def cpu_s():
    # CPU seconds of this driver and its executor processes (waiting for a core is not counted)
    import psutil
    total = 0.0
    for p in [psutil.Process()] + psutil.Process().children(recursive=True):
        try:
            c = p.cpu_times()
            total += c.user + c.system
        except psutil.Error:
            pass
    return total

def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as fh:
        fh.write("1")
"""

CSV = ("ds = ctx.csv_file(WORK + '/points.csv', 8, column_names=[f'c{i}' for i in range(20)], "
       "column_types={f'c{i}': __import__('pyarrow').float64() for i in range(20)})")
NPY = "ctx.npy_file(WORK + '/points.npy', 8).map_partitions(np.array)"
#: name -> (setup code, env, measured cold too)
VARIANTS = {
    "store (B opens it, mapped)": ("ctx = context(); ds = ctx.store.open('points')", {}, True),
    "store, mapped with MAP_POPULATE": ("ctx = context(); ds = ctx.store.open('points')",
                                        {"STRATAFLOW_STORE_MAP": "populate"}, False),
    "store, plain map (before issue 42's quarter fix)": ("ctx = context(); ds = ctx.store.open('points')",
                                                         {"STRATAFLOW_STORE_MAP": "plain"}, False),
    "B recomputes from CSV": ("ctx = context(); " + CSV, {}, True),
    "B reads Parquet, snappy": ("ctx = context(); ds = ctx.parquet_file(WORK + '/snappy.parquet', 8)", {}, True),
    "B reads Parquet, uncompressed": ("ctx = context(); ds = ctx.parquet_file(WORK + '/none.parquet', 8)", {}, True),
    "A's MEMORY_ONLY pass": (f"ctx = context(); ds = {NPY}.persist(StorageLevel.MEMORY_ONLY); one_pass(ds)", {},
                             False),
    "store, mem tier 1/4 (rest on disk), verify=process": ("ctx = context(store=ROOT4); ds = ctx.store.open('points')", {}, True),
    "A's DISK_MMAP pass, memory 1/4": (f"ctx = context(memory=f'{{MB // 4}}MB'); ds = {NPY}"
                                       ".persist(StorageLevel.DISK_MMAP); one_pass(ds)", {}, True),
    "store, mem tier 1/4, verify=store (default)": ("ctx = context(store=ROOT4V); ds = ctx.store.open('points')", {}, True),
    "store, mem tier 1/4, plain map (before)": ("ctx = context(store=ROOT4); ds = ctx.store.open('points')",
                                                {"STRATAFLOW_STORE_MAP": "plain"}, True),
}
STORE, CSVV, SNAPPY, NONE, MEM, QUARTER, DMMAP, QUARTERV, QUARTER0 = (
    list(VARIANTS)[i] for i in (0, 3, 4, 5, 6, 7, 8, 9, 10))
#: ``--quarter-only``: the store and the pressure comparison, without CSV, Parquet and MEMORY_ONLY
QUARTER_ONLY = (STORE, QUARTER0, QUARTER, QUARTERV, DMMAP)


def run(code: str, args: list[str], env: dict | None = None) -> dict:
    src = PRELUDE + textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", src, *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": REPO, **(env or {})}, timeout=1800)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def timed(setup: str) -> str:
    return (setup + "\nif COLD: drop_caches()\nc0 = cpu_s(); t0 = time.perf_counter(); c = one_pass(ds); "
            "dt = time.perf_counter() - t0; cpu = cpu_s() - c0\nctx.stop(); "
            "print(json.dumps({'s': dt, 'cpu': cpu, 'cost': c}))")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-cold", action="store_true", help="skip the cold runs (they drop the page cache: root)")
    ap.add_argument("--quarter-only", action="store_true",
                    help="only the store, the quarter-tier stores (both verify modes) and DISK_MMAP")
    args = ap.parse_args()
    variants = {n: v for n, v in VARIANTS.items() if not args.quarter_only or n in QUARTER_ONLY}
    work = tempfile.mkdtemp(prefix="sf-store-bench-")
    root = f"/dev/shm/sf-store-bench-{os.getpid()}"
    root4 = f"/dev/shm/sf-store-bench4-{os.getpid()}"
    root4v = f"/dev/shm/sf-store-bench4v-{os.getpid()}"
    base_args = [root, root4, work, str(args.mb)]
    try:
        tiers = [{"name": "mem", "dir": root4, "capacity": f"{args.mb // 4}MB"},
                 {"name": "disk", "dir": work + "/disk-tier"}]
        tiers_v = [{"name": "mem", "dir": root4v, "capacity": f"{args.mb // 4}MB"},
                   {"name": "disk", "dir": work + "/disk-tier-v"}]
        run(f"""
            import pyarrow as pa, pyarrow.csv as pcsv, pyarrow.parquet as pq
            from strataflow.store import Store
            rows = MB * (1 << 20) // (20 * 8)
            pts = np.random.default_rng(0).random((rows, 20))
            np.save(WORK + '/points.npy', pts)
            table = pa.table({{f'c{{i}}': pts[:, i] for i in range(20)}})
            del pts
            pcsv.write_csv(table, WORK + '/points.csv', pcsv.WriteOptions(include_header=False))
            rg = rows // 8 + 1
            pq.write_table(table, WORK + '/snappy.parquet', compression='snappy', row_group_size=rg)
            pq.write_table(table, WORK + '/none.parquet', compression='none', row_group_size=rg)
            del table
            Store(ROOT4, tiers={tiers!r}, verify="process")
            Store(ROOT4V, tiers={tiers_v!r}, verify="store")
            for where in (ROOT, ROOT4, ROOT4V):
                ctx = context(store=where)
                ctx.store.save({NPY}, 'points')
                print(where, ctx.store.usage(), file=sys.stderr)
                ctx.stop()
            print(json.dumps({{"rows": rows}}))
            """, base_args + ["warm", root4v])
        times: dict[str, list[float]] = {v: [] for v in variants}
        cpus: dict[str, list[float]] = {v: [] for v in variants}
        cold: dict[str, float] = {}
        cost = {}
        for _ in range(args.rounds):
            for name, (setup, env, _) in variants.items():
                out = run(timed(setup), base_args + ["warm", root4v], env)
                times[name].append(out["s"])
                cpus[name].append(out["cpu"])
                cost[name] = out["cost"]
        if not args.no_cold:
            for name, (setup, env, is_cold) in variants.items():
                if is_cold:
                    cold[name] = run(timed(setup), base_args + ["cold", root4v], env)["s"]
        med = {n: statistics.median(ts) for n, ts in times.items()}
        base = med[STORE]
        print(f"| variant ({args.mb} MB float64, 20 dims, K=10; warm: median of {args.rounds}) | warm pass s "
              f"| x store | cold pass s | x store cold |")
        print("|---|---|---|---|---|")
        for name in variants:
            c = f"{cold[name]:.3f} | {cold[name] / cold[STORE]:.2f}" if name in cold else "- | -"
            print(f"| {name} | {med[name]:.3f} | {med[name] / base:.2f} | {c} |")
        if not args.quarter_only:
            print(f"\ntargets (warm): CSV / store = {med[CSVV] / base:.2f} (>= 5); Parquet snappy / store = "
                  f"{med[SNAPPY] / base:.2f}, uncompressed / store = {med[NONE] / base:.2f} (> 1); store / A's "
                  f"MEMORY_ONLY = {base / med[MEM]:.2f} (<= 1.5)")
        # the pressure target, per round too: a round's variants ran one after another, so a
        # round's ratio shares its load (other sessions on the machine) more than the medians do
        for q in (QUARTER0, QUARTER, QUARTERV):
            paired = [x / y for x, y in zip(times[q], times[DMMAP])]
            print(f"target (warm): {q} / DISK_MMAP = {med[q] / med[DMMAP]:.2f} (<= 1); per round "
                  f"{' '.join(f'{r:.2f}' for r in paired)}, median {statistics.median(paired):.2f}")
        cpu = {n: statistics.median(ts) for n, ts in cpus.items()}
        print("CPU seconds of the pass (driver and executors; median): " + "; ".join(
            f"{n}: {cpu[n]:.3f}" for n in variants))
        for q in (QUARTER0, QUARTER, QUARTERV):
            print(f"target (warm, CPU s): {q} / DISK_MMAP = {cpu[q] / cpu[DMMAP]:.2f}")
        print("rounds (s): " + "; ".join(f"{n}: {' '.join(f'{t:.3f}' for t in ts)}" for n, ts in times.items()))
        if cold:
            if not args.quarter_only:
                print(f"targets (cold): CSV / store = {cold[CSVV] / cold[STORE]:.2f}; Parquet snappy / store = "
                      f"{cold[SNAPPY] / cold[STORE]:.2f}, uncompressed / store = {cold[NONE] / cold[STORE]:.2f}")
            print(f"targets (cold): quarter-tier store / DISK_MMAP = {cold[QUARTER] / cold[DMMAP]:.2f}, with "
                  f"verify=store {cold[QUARTERV] / cold[DMMAP]:.2f}, plain map {cold[QUARTER0] / cold[DMMAP]:.2f}")
        ref = cost[STORE]
        assert all(abs(c - ref) <= 1e-6 * abs(ref) for c in cost.values()), cost
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(root4, ignore_errors=True)
        shutil.rmtree(root4v, ignore_errors=True)


if __name__ == "__main__":
    main()
