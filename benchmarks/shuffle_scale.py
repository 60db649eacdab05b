"""Shuffle cost against the number of partitions (issue 41 §1).

Why: a ``reduce_by_key`` without ``num_partitions`` keeps its input's count, so a job of
P partitions is P map tasks and P reduce tasks, P^2 (map, reduce) pairs. A shuffle whose
cost per pair is a few microseconds and whose cost per task is constant stays near-linear
over the range users run; one that pays a file open and an index read per pair does not.
The table prints the time and the time per pair, so both costs show.

The job (the issue's): ``ctx.range(0, 100_000, num_partitions=P).map(lambda x: (x % 100, 1))
.reduce_by_key(add).count()`` on the default backend (processes), parallelism 2, one
Context per P (started before the clock), median of ``--repeat`` runs after one warm-up.

    python benchmarks/shuffle_scale.py [--parts 100 1000 2000] [--big] [--repeat 3]

``--big`` adds P = 4,000. Targets: P = 1,000 <= 2 s; time(1,000) / time(100) <= 15.
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", type=int, nargs="+", default=[100, 1000, 2000])
    ap.add_argument("--big", action="store_true", help="also P = 4,000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args(argv)
    parts = list(args.parts) + ([4000] if args.big and 4000 not in args.parts else [])
    rows = []
    for p in parts:
        with Context(parallelism=2) as ctx:
            for _ in range(args.warmup):
                job(ctx, min(p, 100))
            times = [job(ctx, p) for _ in range(args.repeat)]
        t = statistics.median(times)
        rows.append((p, t, times))
        print(f"P={p}: {', '.join(f'{x:.3f}' for x in times)} s", file=sys.stderr, flush=True)
    print("| P | pairs | median s | µs / pair | runs |")
    print("|---:|---:|---:|---:|---|")
    for p, t, times in rows:
        print(f"| {p} | {p * p:,} | {t:.3f} | {t / (p * p) * 1e6:.2f} | {' '.join(f'{x:.2f}' for x in times)} |")
    by = {p: t for p, t, _ in rows}
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
