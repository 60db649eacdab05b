"""Shuffle cost against the number of partitions (issue 41 §1).

Why: a ``reduce_by_key`` without ``num_partitions`` keeps its input's count, so a job of
P partitions is P map tasks and P reduce tasks, P^2 (map, reduce) pairs. A shuffle whose
cost per pair is a few microseconds and whose cost per task is constant stays near-linear
over the range users run; one that pays a file open and an index read per pair does not.
The table prints the time and the time per pair, so both costs show.

The job (the issue's): ``ctx.range(0, 100_000, num_partitions=P).map(lambda x: (x % 100, 1))
.reduce_by_key(add).count()`` on the default backend (processes), parallelism 2, one
Context per P (started before the clock), median of ``--repeat`` runs after one warm-up.
``--parallelism 2 4 8 16`` runs every P at each number of executors (a many-core machine's
question: does the pair cost fall with more executors); the targets read the first.

    python benchmarks/shuffle_scale.py [--parts 100 1000 2000] [--big] [--repeat 3]
        [--peer pyspark [--peer-parts 100 1000]]

``--big`` adds P = 4,000. Targets: P = 1,000 <= 2 s; time(1,000) / time(100) <= 15.
``--peer pyspark`` runs the same job beside ours in PySpark, local[2] (one session for
the whole run, its JVM's start and one warm-up job excluded): ``sc.range(0, 100_000,
numSlices=P).map(...).reduceByKey(add, P).count()``; ours and its runs alternate for
each P (``--peer-parts``: the P it runs at, since it takes tens of seconds at P = 1,000).
"""

from __future__ import annotations

import argparse
import operator
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from strataflow import Context  # noqa: E402


def job(ctx: Context, parts: int) -> float:
    t0 = time.perf_counter()
    n = ctx.range(0, 100_000, num_partitions=parts).map(lambda x: (x % 100, 1)).reduce_by_key(operator.add).count()
    dt = time.perf_counter() - t0
    if n != 100:
        raise AssertionError(f"expected 100 keys, got {n}")
    return dt


def spark_job(sc, parts: int) -> float:
    t0 = time.perf_counter()
    n = sc.range(0, 100_000, numSlices=parts).map(lambda x: (x % 100, 1)).reduceByKey(operator.add, parts).count()
    dt = time.perf_counter() - t0
    if n != 100:
        raise AssertionError(f"PySpark: expected 100 keys, got {n}")
    return dt


def spark_context():
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("shuffle_scale")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", type=int, nargs="+", default=[100, 1000, 2000])
    ap.add_argument("--big", action="store_true", help="also P = 4,000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--peer", choices=["pyspark"], default=None)
    ap.add_argument("--peer-parts", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--parallelism", type=int, nargs="+", default=[2],
                    help="executors (ours only; the peer stays local[2]); several: a row per P and parallelism")
    args = ap.parse_args(argv)
    parts = list(args.parts) + ([4000] if args.big and 4000 not in args.parts else [])
    spark = spark_context() if args.peer else None
    if spark is not None:
        spark_job(spark.sparkContext, 10)  # warm-up: the JVM's first job
    rows = []
    try:
        for p, par in [(p, par) for par in args.parallelism for p in parts]:
            peer = spark is not None and p in args.peer_parts
            times: list[float] = []
            peer_times: list[float] = []
            with Context(parallelism=par) as ctx:
                for _ in range(args.warmup):
                    job(ctx, min(p, 100))
                for _ in range(args.repeat):  # alternating: both see the same machine
                    times.append(job(ctx, p))
                    if peer:
                        peer_times.append(spark_job(spark.sparkContext, p))
            t = statistics.median(times)
            rows.append((p, par, t, times, statistics.median(peer_times) if peer_times else None))
            print(f"P={p}, parallelism {par}: {', '.join(f'{x:.3f}' for x in times)} s"
                  + (f"; PySpark {', '.join(f'{x:.3f}' for x in peer_times)} s" if peer_times else ""),
                  file=sys.stderr, flush=True)
    finally:
        if spark is not None:
            spark.stop()
    print("| P | parallelism | pairs | median s | µs / pair | runs | PySpark local[2] median s | PySpark / ours |")
    print("|---:|---:|---:|---:|---:|---|---:|---:|")
    for p, par, t, times, ps in rows:
        peer_cols = f"{ps:.2f} | {ps / t:.1f}x" if ps is not None else "- | -"
        print(f"| {p} | {par} | {p * p:,} | {t:.3f} | {t / (p * p) * 1e6:.2f} | {' '.join(f'{x:.2f}' for x in times)} "
              f"| {peer_cols} |")
    by = {p: t for p, par, t, _, _ in rows if par == args.parallelism[0]}
    if 1000 in by:
        print(f"P=1000 <= 2 s: {'PASS' if by[1000] <= 2 else 'FAIL'} ({by[1000]:.2f} s)")
        if 100 in by:
            r = by[1000] / by[100]
            print(f"time(1000)/time(100) <= 15: {'PASS' if r <= 15 else 'FAIL'} ({r:.1f})")
    if 4000 in by:
        print(f"P=4000 <= 15 s: {'PASS' if by[4000] <= 15 else 'FAIL'} ({by[4000]:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
