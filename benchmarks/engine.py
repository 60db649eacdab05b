"""Engine benchmarks: per-task overhead, shuffle throughput, K-means against its floor.

Prints one JSON document. Variants that are compared run in the same process,
interleaved, ``--repeat`` times; medians and ratios are reported. All data are generated
in memory (no device reads are involved).

    python benchmarks/engine.py [--shuffle-mb 1024] [--kmeans-points 4000000] [--repeat 3]

- task_overhead: a job of N empty partitions, seconds per task (scheduling, events,
  thread hand-off), and the latency of a one-task job.
- shuffle: ``partition_by`` of (int64 key, float64 value) pairs, 16 payload bytes each,
  in batches (numpy structured arrays, vectorized hashing, .npy buckets) and in records
  (Python tuples, pickled buckets); MB/s of payload through map write + reduce read.
- kmeans: one K-means iteration (K=10, 20 dims) over ndarray partitions through the
  engine, beside the same kernel as a plain numpy loop on one thread and on two forked
  processes (the compute floor of DESIGN.md).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from strataflow import Context  # noqa: E402
from strataflow.workloads.kmeans import init_centres, kmeans_partition  # noqa: E402
from strataflow.bench.report import emit_json  # noqa: E402

PAIR = np.dtype([("k", np.int64), ("v", np.float64)])


def task_overhead(ctx: Context, tasks: int, repeat: int) -> dict:
    empty = ctx.parallelize([], tasks)
    one = ctx.parallelize([1], 1)
    per_task, one_job = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        empty.count()
        per_task.append((time.perf_counter() - t0) / tasks)
        t0 = time.perf_counter()
        for _ in range(50):
            one.count()
        one_job.append((time.perf_counter() - t0) / 50)
    return {"tasks": tasks, "per_task_ms": statistics.median(per_task) * 1e3,
            "one_task_job_ms": statistics.median(one_job) * 1e3}


def _pairs_batch(i: int, rows: int) -> np.ndarray:
    rng = np.random.default_rng(i)
    out = np.empty(rows, dtype=PAIR)
    out["k"] = rng.integers(0, 1 << 40, rows)
    out["v"] = rng.random(rows)
    return out


def shuffle_throughput(ctx: Context, total_mb: int, repeat: int, partitions: int) -> dict:
    rows_total = total_mb * (1 << 20) // PAIR.itemsize
    rows = rows_total // partitions
    payload = rows * partitions * PAIR.itemsize
    batches = ctx.range(partitions, num_partitions=partitions).map_partitions(
        lambda v: _pairs_batch(v[0], rows))
    records = batches.map_partitions(lambda a: list(zip(a["k"].tolist(), a["v"].tolist())))
    stage_s: dict[str, list] = {"batches": [], "records": []}
    seen: list[dict] = []
    ctx.events.subscribe(lambda e: seen.append(e) if e["event"] == "StageEnd" else None)
    for _ in range(repeat):
        for name, ds in (("batches", batches), ("records", records)):
            seen.clear()
            t0 = time.perf_counter()
            n = ds.partition_by(partitions).count()
            elapsed = time.perf_counter() - t0
            assert n == rows * partitions
            stage_s[name].append({"total": elapsed, "map": seen[0]["seconds"], "reduce": seen[1]["seconds"],
                                  "shuffle_bytes": seen[0]["shuffle_bytes_written"]})
    out = {"payload_mb": payload / 2**20, "partitions": partitions}
    for name, runs in stage_s.items():
        total = statistics.median(r["total"] for r in runs)
        out[name] = {"median_s": total, "mb_per_s": payload / 2**20 / total,
                     "map_s": statistics.median(r["map"] for r in runs),
                     "reduce_s": statistics.median(r["reduce"] for r in runs),
                     "shuffle_file_mb": runs[0]["shuffle_bytes"] / 2**20,
                     "note": "includes generating the partition (batches) or converting it to tuples (records)"}
    out["batches_over_records"] = out["batches"]["mb_per_s"] / out["records"]["mb_per_s"]
    return out


_SHARED: dict = {}


def _floor_worker(args):
    lo, hi = args
    return kmeans_partition(_SHARED["points"][lo:hi], _SHARED["centres"])


def kmeans_vs_floor(ctx: Context, points: int, repeat: int, partitions: int) -> dict:
    rng = np.random.default_rng(0)
    means = rng.uniform(0, 1000, (5, 20))
    data = means[np.arange(points) % 5] + rng.uniform(0.01, 100, (5, 20))[np.arange(points) % 5] * \
        rng.standard_normal((points, 20))
    centres = init_centres(data, 10, seed=0)
    ds = ctx.from_numpy(data, partitions)
    _SHARED.update(points=data, centres=centres)
    half = [(0, points // 2), (points // 2, points)]
    engine, one_thread, two_procs = [], [], []
    with mp.get_context("fork").Pool(2) as pool:
        pool.map(_floor_worker, half)  # warm the workers
        for _ in range(repeat):
            t0 = time.perf_counter()
            ds.map_partitions(lambda a: [kmeans_partition(a, centres)]).collect()
            engine.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            kmeans_partition(data, centres)
            one_thread.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            pool.map(_floor_worker, half)
            two_procs.append(time.perf_counter() - t0)
    e, o, t = (statistics.median(x) for x in (engine, one_thread, two_procs))
    return {"points": points, "dims": 20, "k": 10, "partitions": partitions, "data_mb": data.nbytes / 2**20,
            "engine_iteration_s": e, "numpy_one_thread_s": o, "numpy_two_processes_s": t,
            "engine_over_two_process_floor": e / t, "engine_over_one_thread": e / o,
            "engine_runs": engine, "one_thread_runs": one_thread, "two_process_runs": two_procs}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shuffle-mb", type=int, default=1024)
    p.add_argument("--kmeans-points", type=int, default=4_000_000)
    p.add_argument("--tasks", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--memory", default="4GB")
    p.add_argument("--out", default=None, help="also write the JSON here")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Context(memory=args.memory, parallelism=args.parallelism,
                                                       shuffle_dirs=[tmp], progress=False) as ctx:
        result = {
            "machine": {"cpus": os.cpu_count(), "parallelism": args.parallelism, "python": sys.version.split()[0],
                        "numpy": np.__version__},
            "task_overhead": task_overhead(ctx, args.tasks, args.repeat),
            "kmeans": kmeans_vs_floor(ctx, args.kmeans_points, max(args.repeat, 5), 2 * args.parallelism),
            "shuffle": shuffle_throughput(ctx, args.shuffle_mb, args.repeat, 16),
        }
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
