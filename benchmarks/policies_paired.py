"""The policies that avoid re-caching, paired: ``no-recache``, ``adaptive`` and ``lineage``
on every ``bench pressure`` workload and pressure, in one process, the order rotated on
every repeat, without the result checks (``bench pressure`` runs them). Issue 6 asks
for ``adaptive`` and ``lineage`` to be at least as fast as ``no-recache``; at about a
second per run the differences are within noise, so the ratios of medians and their
geometric mean over all points are what to read, with each repeat's paired ratio (the
same repeat's ``no-recache`` time over the policy's; median and range), of the whole run
and of its iterations alone (where the policies' decisions differ; the load stage is
the same for all).

    python benchmarks/policies_paired.py --data-dir DIR [--repeat 5] [--out FILE]

``DIR`` is a ``bench pressure --data-dir`` (one generated dataset per workload, e.g. from
``strataflow bench pressure --scale 0.5 --data-dir DIR``). Prints one line per point and
the JSON summary.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from strataflow.bench.report import emit_json  # noqa: E402
from strataflow.workloads.runner import run_workload  # noqa: E402

POLICIES = ["no-recache", "adaptive", "lineage"]
MB = 1 << 20


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--workloads", default="kmeans,lr,bayes,als")
    p.add_argument("--pressures", default="2,4,8")
    p.add_argument("--out")
    args = p.parse_args()
    if not os.path.isdir(args.data_dir):
        p.error(f"--data-dir {args.data_dir!r} is not a directory")
    found = {d.split("-")[0]: os.path.join(args.data_dir, d) for d in sorted(os.listdir(args.data_dir))}
    points: dict = {}
    for w in args.workloads.split(","):
        if w not in found:
            p.error(f"no {w} data in {args.data_dir} (generate it with bench pressure --data-dir)")
        with tempfile.TemporaryDirectory() as tmp:
            rep = run_workload(w, found[w], api="batches", level="MEMORY_ONLY", memory="4GB", parallelism=2,
                               local_dirs=[tmp], check=False, iterations=1)
        cached = rep["cached_memory_bytes"]
        for pressure in (float(x) for x in args.pressures.split(",")):
            times: dict = {x: [] for x in POLICIES}
            iters: dict = {x: [] for x in POLICIES}
            moved: dict = {x: [] for x in POLICIES}
            for r in range(args.repeat):
                for policy in POLICIES[r % 3:] + POLICIES[:r % 3]:
                    with tempfile.TemporaryDirectory() as tmp:
                        rep = run_workload(w, found[w], api="batches", level="MEMORY_AND_DISK", policy=policy,
                                           memory=int(cached / pressure), parallelism=2, local_dirs=[tmp],
                                           check=False)
                    m = rep["metrics"]
                    times[policy].append(rep["total_s"])
                    iters[policy].append(sum(rep["iteration_s"]))
                    moved[policy].append((m["bytes_dropped"] + m["bytes_recached"] + m["bytes_prefetched"]) / MB)
            med = {x: statistics.median(v) for x, v in times.items()}
            key = f"{w} {pressure:g}x"
            paired = {x: sorted(b / t for b, t in zip(times["no-recache"], times[x])) for x in POLICIES}
            paired_iters = {x: sorted(b / t for b, t in zip(iters["no-recache"], iters[x]) if t > 0) for x in POLICIES}
            points[key] = {"median_s": med, "speed_vs_no_recache": {x: med["no-recache"] / med[x] for x in POLICIES},
                           # the same repeat's no-recache time over this policy's: median, min, max
                           "paired_speed": {x: [statistics.median(v), v[0], v[-1]] for x, v in paired.items()},
                           "paired_iteration_speed": {x: [statistics.median(v), v[0], v[-1]]
                                                      for x, v in paired_iters.items() if v},
                           "mb_moved": {x: statistics.median(v) for x, v in moved.items()}}
            print(key, {x: round(v, 3) for x, v in points[key]["speed_vs_no_recache"].items()}, file=sys.stderr,
                  flush=True)
    geo = {x: math.exp(statistics.mean(math.log(v["speed_vs_no_recache"][x]) for v in points.values()))
           for x in POLICIES}
    emit_json({"repeat": args.repeat, "points": points, "geomean_speed_vs_no_recache": geo}, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
