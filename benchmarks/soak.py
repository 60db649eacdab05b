"""Soak: a long-lived application's memory stays flat (issue 38 §2, issue 50 §5, "Long-lived applications").

The loop a long-running service or notebook runs: each iteration persists a small dataset,
counts it (a job that caches it), shuffles it (a second job, with a map stage) and
unpersists the dataset of the iteration before, so at any time one dataset is cached and
every other one, with its stages, jobs, shuffle and source, is gone. Nothing the
application holds should then grow with the number of iterations.

The full mix (the default) also cycles the storage level through every level an executor
holds (memory, serialized, off-heap, disk, the mapped region store, AUTO), keeps each
iteration's shuffled dataset until the next (so its shuffle, and each executor's cached
indexes of it, live one iteration), reads a broadcast over 1 MB (destroyed, unpersisted or
left to the garbage collector, in turn), adds to an accumulator and sums a numpy source
over 1 MB (its slices written to files).

Every ``--every`` iterations it samples, for the driver and each executor process (psutil):
resident memory (RSS), open file descriptors and threads; and the number of directories
and files under the application's directories. After the loop it fits a line to each
process's RSS over the second half of the samples (the first half is warm-up: allocator
arenas, interned strings, the policy's first statistics) and prints the slope in KB per
iteration. It exits 1 when any process's slope exceeds ``--threshold-kb`` (default 0.1 KB
per iteration, issue 50: 200 KB over 2,000 iterations, under the noise of one glibc arena
trim), or when fds, threads or directories grew over the second half.

Where the executors answer it (``call(GetRegistrySizes())``, ``executor/core.py``), it also
prints the sizes of their per-dataset, per-stage and per-job structures at the end.

    python benchmarks/soak.py [--iterations 2000] [--every 100] [--parallelism 2] [--threshold-kb 0.1]
"""

from __future__ import annotations

import argparse
import gc
import json
import operator
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
import psutil  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from strataflow import Context, StorageLevel  # noqa: E402
from strataflow.executor.messages import GetRegistrySizes  # noqa: E402

KB = 1024
MB = 1 << 20


# the levels the full mix cycles through: memory (values, serialized, off-heap), the disk
# tier, the mapped region store (DISK_MMAP: mapped, verified, its pages accounted), AUTO
LEVELS = (StorageLevel.MEMORY_ONLY, StorageLevel.MEMORY_AND_DISK_SER, StorageLevel.DISK_ONLY,
          StorageLevel.MEMORY_AND_DISK_MMAP, StorageLevel.DISK_MMAP, StorageLevel.MEMORY_ONLY_SER,
          StorageLevel.OFF_HEAP, StorageLevel.MEMORY_AND_DISK, StorageLevel.AUTO)
BIG_ROWS = 70_000  # rows of 2 int64: 1.1 MB, over INLINE_BYTES, so its slices are files


def iteration(ctx: Context, i: int, records: int, partitions: int, mix: str = "full"):
    """One iteration's datasets: persisted, counted, shuffled; returned (the persisted
    one and the shuffled one) for the next iteration to unpersist and drop. ``full`` also
    cycles the storage level, reads a broadcast over 1 MB (written to a file; unpersisted,
    destroyed, or dropped without either and left to the garbage collector, in turn),
    adds to an accumulator, and sums a numpy source over 1 MB (its slices written to
    files)."""
    level = StorageLevel.MEMORY_ONLY if mix == "simple" else LEVELS[i % len(LEVELS)]
    if mix == "simple":
        ds = ctx.parallelize(range(i, i + records), partitions).map(lambda x: (x % 7, x))
    else:
        b = ctx.broadcast(np.full(BIG_ROWS * 2, i, dtype=np.int64))
        acc = ctx.accumulator(0)

        def pair(x, b=b, acc=acc, i=i):
            acc.add(1)
            return (x % 7, x + int(b.value[0]) - i)

        ds = ctx.parallelize(range(i, i + records), partitions).map(pair)
    ds.persist(level)
    assert ds.count() == records
    shuffled = ds.reduce_by_key(operator.add)
    assert sum(dict(shuffled.collect()).values()) == sum(range(i, i + records))
    if mix != "simple":
        assert acc.value == records
        big = ctx.from_numpy(np.arange(i, i + 2 * BIG_ROWS, dtype=np.int64).reshape(-1, 2), partitions)
        total = big.map_partitions(lambda a: [int(a.sum())]).sum()
        assert total == sum(range(i, i + 2 * BIG_ROWS))
        if i % 4 == 0:
            b.unpersist()
        elif i % 4 == 1:
            b.destroy()
    return ds, shuffled


def walk_counts(dirs: list[str]) -> tuple[int, int]:
    """Directories and files under ``dirs`` (themselves included)."""
    nd = nf = 0
    for top in dirs:
        for _, ds, fs in os.walk(top):
            nd += len(ds)
            nf += len(fs)
        nd += 1
    return nd, nf


def sample(ctx: Context, procs: dict[str, psutil.Process]) -> dict:
    gc.collect()  # the driver's cyclic garbage (datasets' lineage) is not growth
    row: dict = {}
    for name, p in procs.items():
        row[name] = {"rss": p.memory_info().rss, "fds": p.num_fds(), "threads": p.num_threads()}
    dirs = ctx.local_dirs + ctx.shuffle_dirs + ctx.source_dirs
    row["dirs"], row["files"] = walk_counts(dirs)
    return row


def slope(xs: list[int], ys: list[float]) -> float:
    """Least-squares slope of ``ys`` over ``xs``."""
    if len(xs) < 2:
        return 0.0
    return float(np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)[0])


def registry_sizes(ctx: Context) -> dict:
    """Each executor's (and the driver's) per-dataset/stage/job structure sizes, where
    this version of the engine answers the question."""
    out: dict = {}
    try:
        from strataflow.executor.introspect import driver_registry_sizes

        out["driver"] = driver_registry_sizes(ctx)
    except ImportError:
        pass
    for h in ctx.fleet.live():
        try:
            out[f"exec {h.executor_id}"] = h.call(GetRegistrySizes())
        except Exception as exc:  # noqa: BLE001 - an engine without the question
            out[f"exec {h.executor_id}"] = {"n/a": f"{type(exc).__name__}"}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--every", type=int, default=100,
                    help="sample every K iterations (a multiple of 4: each sample sees its broadcasts alike)")
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--records", type=int, default=200)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--mix", choices=("full", "simple"), default="full",
                    help="simple: the issue's loop (MEMORY_ONLY, a shuffle); full: also every level, broadcasts "
                         "(destroyed, unpersisted, collected), accumulators and large sources")
    ap.add_argument("--threshold-kb", type=float, default=0.1, help="largest RSS slope allowed, KB per iteration")
    ap.add_argument("--json", help="write the samples and slopes here")
    args = ap.parse_args(argv)
    console = Console(width=max(Console().width, 120))

    t0 = time.perf_counter()
    with Context(parallelism=args.parallelism, backend="processes", memory="256MB") as ctx:
        procs = {"driver": psutil.Process()}
        for h in ctx.fleet.live():
            procs[f"exec {h.executor_id}"] = psutil.Process(h.pid)
        samples: list[tuple[int, dict]] = []
        prev = None
        for i in range(args.iterations + 1):
            if i % args.every == 0:
                if prev is not None:  # sampled with no dataset of the loop cached: its level's files
                    prev.unpersist()  # would make the count depend on the level at the sample
                    prev = None
                samples.append((i, sample(ctx, procs)))
            if i == args.iterations:
                break
            # the shuffled dataset is held one iteration, so its shuffle (and indexes) live that long
            ds, shuffled = iteration(ctx, i, args.records, args.partitions, args.mix)  # noqa: F841
            if prev is not None:
                prev.unpersist()
            prev = ds
        sizes = registry_sizes(ctx)
        if [h.pid for h in ctx.fleet.live()] != [procs[n].pid for n in procs if n != "driver"]:
            console.print("[red]an executor was replaced during the soak: its figures are not one process's[/red]")
            return 2
    elapsed = time.perf_counter() - t0

    table = Table(title=f"soak: {args.iterations} iterations ({(2 if args.mix == 'simple' else 3) * args.iterations} jobs), "
                        f"{args.parallelism} executors, mix {args.mix}, {elapsed:.0f} s")
    table.add_column("iteration", justify="right")
    for name in procs:
        table.add_column(f"{name} RSS MB", justify="right")
        table.add_column("fds/thr", justify="right")
    table.add_column("dirs/files", justify="right")
    for i, row in samples:
        cells = [str(i)]
        for name in procs:
            cells += [f"{row[name]['rss'] / MB:.2f}", f"{row[name]['fds']}/{row[name]['threads']}"]
        cells.append(f"{row['dirs']}/{row['files']}")
        table.add_row(*cells)
    console.print(table)

    half = samples[len(samples) // 2:]
    xs = [i for i, _ in half]
    result: dict = {"iterations": args.iterations, "mix": args.mix, "seconds": elapsed, "threshold_kb": args.threshold_kb,
                    "slopes_kb": {}, "samples": samples, "registry_sizes": sizes}
    failed = []
    st = Table(title="second half: slope per iteration (linear fit)")
    for col in ("process", "RSS first -> last MB", "RSS KB/iteration", "fds", "threads"):
        st.add_column(col, justify="right")
    for name in procs:
        rss = [r[name]["rss"] for _, r in half]
        s = slope(xs, rss) / KB
        result["slopes_kb"][name] = s
        fds = [r[name]["fds"] for _, r in half]
        thr = [r[name]["threads"] for _, r in half]
        bad = s > args.threshold_kb
        grew = fds[-1] > fds[0] or thr[-1] > thr[0]
        if bad or grew:
            failed.append(name)
        st.add_row(name, f"{samples[0][1][name]['rss'] / MB:.1f} -> {samples[-1][1][name]['rss'] / MB:.1f}",
                   f"[{'red' if bad else 'green'}]{s:.3f}[/]", f"{fds[0]} -> {fds[-1]}", f"{thr[0]} -> {thr[-1]}")
    console.print(st)
    dirs = [r["dirs"] for _, r in half]
    files = [r["files"] for _, r in half]
    console.print(f"directories {dirs[0]} -> {dirs[-1]}, files {files[0]} -> {files[-1]} over the second half")
    if dirs[-1] > dirs[0] or files[-1] > files[0]:
        failed.append("directories")
    if sizes:
        rt = Table(title="registry sizes at the end")
        rt.add_column("process")
        rt.add_column("structure sizes")
        for name, d in sizes.items():
            rt.add_row(name, ", ".join(f"{k}={v}" for k, v in sorted(d.items())))
        console.print(rt)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=str)
    if failed:
        console.print(f"[red]FAIL: grew beyond {args.threshold_kb} KB/iteration or in fds/threads/dirs: "
                      f"{', '.join(failed)}[/red]")
        return 1
    console.print(f"[green]OK: every process within {args.threshold_kb} KB/iteration[/green]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
