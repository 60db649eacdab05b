"""How far can *any* per-dataset choice beat the best single fixed level on the mixed
pipeline? The issue-43 target asks AUTO for 0.9x the best fixed level there; this prices the
hand-made choices (the workload's ``level_of``: each dataset at a level of its own) beside
AUTO and the fixed levels, paired, so that the best of them bounds what a chooser could gain
on this machine.

Each dataset's candidates: ``signals`` (cheap) dropped or mapped; ``features`` (dear) mapped
(dropping it costs the network every K-means iteration: 3-5x slower runs, see
docs/lab-notes/benchmarks-history.md); ``records`` dropped, serialized to the tiers or serialized once to the
region store; ``events`` dropped, mapped, or serialized to the tiers. 18 combinations, plus
AUTO, MEMORY_AND_DISK and MEMORY_AND_DISK_MMAP, at each pressure, and a bound no level can
beat at any pressure: MEMORY_ONLY with memory for everything (``ample``: nothing leaves
memory, nothing is written); every repeat runs all of
them, in an order reversed every other repeat, each after one untimed warm-up run of its own,
the memory budget the cached bytes / pressure as in ``bench auto``.

    python benchmarks/mixed_oracle.py [--scale 0.25] [--pressures 2,4,8] [--repeat 3] [--out FILE]

Prints, per pressure, the configurations by median whole-run seconds, each with its paired
median ratio to MEMORY_AND_DISK_MMAP (the best fixed level there in ``bench auto``) and its
stage medians (load, K-means, assignment, records rounds, events rounds).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from strataflow.bench.data import ensure_data  # noqa: E402
from strataflow.bench.experiments import _ample, _cached_size  # noqa: E402
from strataflow.bench.report import emit_json  # noqa: E402
from strataflow.workloads.runner import run_workload  # noqa: E402

CHOICES = {"signals": ("MEMORY_ONLY", "MEMORY_AND_DISK_MMAP"), "features": ("MEMORY_AND_DISK_MMAP",),
           "records": ("MEMORY_ONLY", "MEMORY_AND_DISK", "MEMORY_AND_DISK_MMAP"),
           "events": ("MEMORY_ONLY", "MEMORY_AND_DISK_MMAP", "MEMORY_AND_DISK")}
SHORT = {"MEMORY_ONLY": "drop", "MEMORY_AND_DISK": "tiers", "MEMORY_AND_DISK_MMAP": "mapped"}
BASE = "MEMORY_AND_DISK_MMAP"
AMPLE = "bound: MEMORY_ONLY, ample memory"
STAGES = ("load", "kmeans", "assign", "records", "events")


def configs() -> list[tuple[str, dict | None, str]]:
    """(name, level_of or None, level) for every configuration."""
    out = [(lv, None, lv) for lv in ("AUTO", "MEMORY_AND_DISK", BASE)] + [(AMPLE, None, "MEMORY_ONLY")]
    names = list(CHOICES)
    for combo in itertools.product(*(CHOICES[n] for n in names)):
        level_of = dict(zip(names, combo))
        out.append((" ".join(f"{n[:3]}={SHORT[lv]}" for n, lv in level_of.items()), level_of, BASE))
    return out


def stages(report: dict) -> dict:
    """A run's seconds per part of the pipeline, from its stages' names."""
    out = dict.fromkeys(STAGES, 0.0)
    for s in report["stages"]:
        n = s["name"]
        key = ("load" if "init" in n or n.startswith("count") else "kmeans" if "kmeans iteration" in n
               else "assign" if "assign" in n else "records" if "records round" in n
               else "events" if "events round" in n else None)
        if key:
            out[key] += s["seconds"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=0.25)
    ap.add_argument("--pressures", default="2,4,8")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--root", default=None, help="where the generated data are kept (default: a temp dir)")
    ap.add_argument("--out", default=None, help="write the JSON summary here")
    args = ap.parse_args()
    root = args.root or tempfile.mkdtemp(prefix="sf-oracle-")
    data = ensure_data("mixed", root, args.scale)
    measure = _cached_size("mixed", data, "batches", 2, "threads")
    cfgs = configs()
    summary = []
    for pressure in (float(p) for p in args.pressures.split(",")):
        memory = max(1 << 20, int(measure() / pressure))
        runs: dict[str, list[dict]] = {name: [] for name, _, _ in cfgs}

        def run(name, level_of, level, check=False):
            with tempfile.TemporaryDirectory(prefix="sf-oracle-") as tmp:
                budget = _ample(data) if name == AMPLE else memory
                return run_workload("mixed", data, level=level, memory=budget, parallelism=2, local_dirs=[tmp],
                                    check=check, context_options={"backend": "threads"}, level_of=level_of)

        for r in range(args.repeat):
            for name, level_of, level in (cfgs if r % 2 == 0 else list(reversed(cfgs))):
                run(name, level_of, level)  # warm-up: the timed run meets the memory its own kind of run left
                rep = run(name, level_of, level, check=(r == 0))
                if r == 0 and rep["result_check"] != "ok":
                    raise SystemExit(f"{name} at {pressure}x: result check {rep['result_check']}")
                runs[name].append({"total": rep["total_s"], **stages(rep)})
        rows = []
        for name, _, _ in cfgs:
            rs = runs[name]
            ratio = statistics.median(a["total"] / b["total"] for a, b in zip(rs, runs[BASE]))
            rows.append({"pressure": pressure, "config": name, "total_s": statistics.median(x["total"] for x in rs),
                         "vs_" + BASE: ratio, **{k + "_s": statistics.median(x[k] for x in rs) for k in STAGES}})
        rows.sort(key=lambda row: row["vs_" + BASE])
        print(f"\npressure {pressure:g}x (memory {memory / 2**20:.1f} MiB), {args.repeat} paired repeats")
        print(f"{'configuration':44} {'total':>6} {'/M&D_MMAP':>9}  " + " ".join(f"{s:>7}" for s in STAGES))
        for row in rows:
            print(f"{row['config']:44} {row['total_s']:6.3f} {row['vs_' + BASE]:9.3f}  "
                  + " ".join(f"{row[s + '_s']:7.3f}" for s in STAGES))
        summary.extend(rows)
    emit_json({"scale": args.scale, "repeat": args.repeat, "rows": summary}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
