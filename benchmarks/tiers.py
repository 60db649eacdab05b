"""Storage tiers on real runs (issue 6): do hot blocks end up in the faster tier?

    python benchmarks/tiers.py [--mb 256] [--passes 5] [--repeat 3] [--shm /dev/shm] [--disk DIR] [--out FILE]

A hot dataset (``--mb``/4, 8 partitions of float64 rows, MEMORY_AND_DISK) is cached first;
a scan dataset twice as large then fills memory and the fast tier and pushes the hot
blocks down to the disk tier (tier LRU); the scan is unpersisted, leaving room in the fast
tier; then ``--passes`` passes read the hot dataset, each followed by a small write of new
data (which goes to the top tier and moves that tier's LRU blocks down). Memory is
``--mb``/16 (most of the hot set is on a disk tier); the fast tier is a tmpfs on ``--shm``
with ``--mb``/2 capacity above an unbounded tier on ``--disk``.

Reported per configuration (``tiered``: shm above disk; ``disk``: one disk tier), medians
of interleaved repeats: the hot dataset's bytes per tier at the end, hits per tier in the
hot passes, blocks moved up and down, and the median hot-pass time. On this machine the
disk tier's files are served from the page cache when warm, so the time difference is
small; the placement is the point.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from strataflow import Context, StorageLevel  # noqa: E402
from strataflow.bench.report import emit_json  # noqa: E402

MB = 1 << 20


def one_run(tiered: bool, args, base: str) -> dict:
    disk = tempfile.mkdtemp(prefix="sf-tier-disk-", dir=args.disk)
    tiers = [{"name": "disk", "dirs": [disk]}]
    if tiered:
        tiers.insert(0, {"name": "shm", "dirs": [args.shm], "capacity": f"{args.mb // 2}MB"})
    rows = lambda mb: int(mb * MB / 8 / 20)  # noqa: E731
    with Context(memory=f"{max(1, args.mb // 16)}MB", parallelism=2, progress=False, local_dirs=[base],
                 shuffle_dirs=[base], tiers=tiers) as ctx:
        total = lambda d: d.map_partitions(lambda b: b.sum(keepdims=True)).collect()  # noqa: E731

        def data(mb: int, parts: int, v: float):
            return ctx.range(0, parts, 1, parts).map_partitions(
                lambda it, n=rows(mb) // parts, v=v: np.full((n, 20), v + next(iter(it)))).persist(
                StorageLevel.MEMORY_AND_DISK)

        hot = data(args.mb // 4, 8, 1.0)
        hot.name = "hot"
        total(hot)
        scan = data(args.mb * 2, 16, 100.0)
        total(scan)
        scan.unpersist()
        before = ctx.metrics()
        times = []
        for i in range(args.passes):
            t0 = time.perf_counter()
            total(hot)
            times.append(time.perf_counter() - t0)
            total(data(max(1, args.mb // 32), 2, 1000.0 + i))
        after = ctx.metrics()
        st = next(d for d in ctx.storage_status() if d.name.startswith("hot"))
        hits = {k: after["tier_hits"].get(k, 0) - before["tier_hits"].get(k, 0) for k in after["tier_hits"]}
        return {"hot_tier_mb": {k: v / MB for k, v in st.tier_bytes.items()}, "hot_memory_mb": st.memory_bytes / MB,
                "hits_in_hot_passes": hits, "blocks_moved_up": after["blocks_moved_up"],
                "blocks_moved_down": after["blocks_moved_down"], "pass_s": statistics.median(times)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=int, default=256)
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--shm", default="/dev/shm")
    p.add_argument("--disk", default=None, help="directory of the disk tier (default: the temp dir)")
    p.add_argument("--out")
    args = p.parse_args()
    if not os.access(args.shm, os.W_OK):
        raise SystemExit(f"--shm {args.shm}: not a writable directory")
    runs: dict[str, list] = {"tiered": [], "disk": []}
    for rep in range(args.repeat):
        for name in (("tiered", "disk") if rep % 2 == 0 else ("disk", "tiered")):
            with tempfile.TemporaryDirectory(prefix="sf-tiers-") as base:
                r = one_run(name == "tiered", args, base)
            runs[name].append(r)
            print(f"rep {rep} {name}: hot MB by tier {r['hot_tier_mb']}, hits {r['hits_in_hot_passes']}, "
                  f"pass {r['pass_s']:.3f} s", file=sys.stderr, flush=True)
    med = {k: statistics.median(r["pass_s"] for r in v) for k, v in runs.items()}
    last = runs["tiered"][-1]
    on_disk_tiers = sum(last["hot_tier_mb"].values())
    result = {"mb": args.mb, "median_pass_s": med, "tiered_over_disk": med["tiered"] / med["disk"],
              "hot_fraction_in_shm": (last["hot_tier_mb"].get("shm", 0) / on_disk_tiers) if on_disk_tiers else None,
              "runs": runs}
    emit_json(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
