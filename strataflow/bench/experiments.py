"""The experiments, each an analogue of one of Zhang et al.'s (2017):

- ``levels`` (Fig. 3-4, Table II): K-means at each storage level with ample memory, records
  and batches: time per stage, total, cached size.
- ``serde`` (Sec. III-C): rddtest with strings and with float vectors, each serializer:
  time to cache and cached size.
- ``devices`` (Fig. 5-6): rddtest DISK_ONLY on each directory with 1..N threads and
  several sizes, beside the directory's raw sequential bandwidth, cold and warm.
- ``pressure`` (Fig. 7, Tables III-VI): MEMORY_AND_DISK with the cached data at 1/2, 2, 4
  and 8 times the memory budget, every policy, for kmeans, lr, bayes and als: blocks and
  MB dropped and re-cached, time, speed-up over ``spark``.
- ``auto`` (ours): every workload at pressures 1, 2, 4 and 8 (the mixed pipeline: 2, 4
  and 8), at AUTO and at each fixed level beside it, the default policy: AUTO's time over
  the best fixed level's at the same point (target <= 1.05x; on the mixed pipeline, whose
  datasets want different levels, <= 0.9x) and over MEMORY_AND_DISK's (never above 1),
  each the median of ratios of runs paired within a repeat, with a 95% interval and a
  verdict per point (met, missed, or open where the noise cannot tell). ``kmeans-npy``
  is K-means over an ``.npy`` source (issue 43's case); ``kmeans`` reads text.

Each experiment is a plan (a list of runs) so the command can show one progress bar for
all of it; every run yields one row (a flat dict) for the report. Runs of variants that
are compared are interleaved: the repeat loop is outermost.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable

from strataflow.storage.policies import POLICIES
from strataflow.workloads.runner import run_workload
from strataflow.bench.data import ensure_data
from strataflow.bench.devices import probe_bandwidth
from strataflow.bench.machine import checks_outside
from strataflow.bench.scale import in_machine, machine_plan, plan_scale

__all__ = ["Run", "plan", "EXPERIMENTS", "summarize", "paired_ratio", "paired_ratios", "median_ci",
           "target_verdict", "auto_verdict", "auto_target", "AUTO_WORKLOADS", "VARIANTS"]

MB = 1 << 20
LEVELS = ["NONE", "MEMORY_ONLY", "MEMORY_ONLY_SER", "OFF_HEAP", "DISK_ONLY", "MEMORY_AND_DISK"]
PRESSURES = [0.5, 2, 4, 8]
PRESSURE_WORKLOADS = ["kmeans", "lr", "bayes", "als"]
AUTO_LEVELS = ["AUTO", "MEMORY_ONLY", "MEMORY_AND_DISK", "MEMORY_AND_DISK_SER", "DISK_ONLY", "DISK_MMAP",
               "MEMORY_AND_DISK_MMAP"]
AUTO_PRESSURES = [1, 2, 4, 8]
AUTO_WORKLOADS = [*PRESSURE_WORKLOADS, "kmeans-npy", "mixed"]
#: a bench workload's name -> (the workload, its data's format), for a second form of one
#: workload's data beside the first (rows keep the bench name, so the two are two points)
VARIANTS = {"kmeans-npy": ("kmeans", "npy")}
#: ``bench auto``'s pressures for a workload where ``--pressures`` is not given
AUTO_PRESSURES_OF = {"mixed": [2, 4, 8]}
# (api, serializer): records with the generic serializers (the paper's RDD path), batches
# with pickle5 and the Arrow encoders (the counterpart of DataFrame encoding).
SERDE_VARIANTS = [("records", "pickle"), ("records", "pickle5"), ("batches", "pickle5"), ("batches", "arrow"),
                  ("batches", "arrow:lz4")]


@dataclass
class Run:
    """One run: what to call and the row fields that name it; ``warm``, when given, runs
    the same configuration untimed and unchecked (``bench --warmup``: see command.py)."""

    key: dict[str, Any]
    call: Callable[[], dict]
    repeat: int = 0
    extra: dict = field(default_factory=dict)
    warm: Callable[[], Any] | None = None


def _row(report: dict, key: dict) -> dict:
    m = report["metrics"]
    its = report["iteration_s"]
    return {
        **key,
        "total_s": report["total_s"],
        "iteration_s": statistics.median(its) if its else None,
        "stages": report["stages"],
        "cached_mb": report["cached_bytes"] / MB,
        "cached_memory_mb": report.get("cached_memory_bytes", 0) / MB,
        "memory_mb": report["config"]["memory"] / MB if isinstance(report["config"].get("memory"), (int, float)) else None,
        "blocks_dropped": m.get("blocks_dropped"),
        "mb_dropped": m.get("bytes_dropped", 0) / MB,
        "blocks_recached": m.get("blocks_recached"),
        "mb_recached": m.get("bytes_recached", 0) / MB,
        "mb_prefetched": m.get("bytes_prefetched", 0) / MB,
        # between memory and disk: drops down, re-caching and prefetching up (a block put
        # straight to disk because it never fit is written, not moved)
        "mb_moved": (m.get("bytes_dropped", 0) + m.get("bytes_recached", 0) + m.get("bytes_prefetched", 0)) / MB,
        "disk_read_mb": m.get("disk_bytes_read", 0) / MB,
        "disk_written_mb": m.get("disk_bytes_written", 0) / MB,
        "serialize_s": m.get("serialize_s"),
        "deserialize_s": m.get("deserialize_s"),
        "gc_s": m.get("gc_s"),
        "result_check": report["result_check"],
        "extra": report.get("extra", {}),
    }


def _ample(data_dir: str) -> str:
    """A memory budget no run of this data fills: four times its size plus 256 MB."""
    from strataflow.workloads.api import read_manifest

    size = int(read_manifest(data_dir).get("bytes") or 0)
    return f"{(4 * size + 256 * MB) // MB}MB"


def _backend(backend: str | None) -> dict | None:
    """The Context options that pick ``backend`` (None: the Context's default)."""
    return {"backend": backend} if backend else None


def _in_tmp(workload: str, data: str, parallelism: int, backend: str | None, check: bool = True, **kw) -> dict:
    """One run of ``workload`` in a fresh Context over a fresh working directory: its report."""
    with tempfile.TemporaryDirectory(prefix="sf-bench-") as tmp:
        return run_workload(workload, data, parallelism=parallelism, local_dirs=[tmp], check=check,
                            context_options=_backend(backend), **kw)


def _workload_run(workload: str, data: str, key: dict, parallelism: int, backend: str | None = None, **kw) -> Run:
    from strataflow.config import parse_size

    return Run(key, lambda: _row(_in_tmp(workload, data, parallelism, backend, **kw), key),
               extra={"memory_fn": lambda: parse_size(kw.get("memory", "1GB"))},
               warm=lambda: _in_tmp(workload, data, parallelism, backend, check=False, **kw))


def plan_levels(root: str, scale: float, repeat: int, parallelism: int, backend: str | None = None,
                **_) -> list[Run]:
    data = ensure_data("kmeans", root, scale)
    runs = []
    for r in range(repeat):
        for api in ("records", "batches"):
            for level in LEVELS:
                key = {"experiment": "levels", "workload": "kmeans", "api": api, "level": level, "repeat": r}
                runs.append(_workload_run("kmeans", data, key, parallelism, backend, api=api, level=level,
                                          memory=_ample(data), iterations=5))
    return runs


def plan_serde(root: str, scale: float, repeat: int, parallelism: int, backend: str | None = None,
               **_) -> list[Run]:
    runs = []
    for kind in ("strings", "vectors"):
        data = ensure_data("rddtest", root, scale, kind=kind)
        for r in range(repeat):
            for api, ser in SERDE_VARIANTS:
                key = {"experiment": "serde", "workload": "rddtest", "kind": kind, "api": api, "serializer": ser,
                       "level": "MEMORY_ONLY_SER", "repeat": r}
                runs.append(_workload_run("rddtest", data, key, parallelism, backend, api=api, level="MEMORY_ONLY_SER",
                                          serializer=ser, memory=_ample(data)))
    return runs


def plan_devices(root: str, scale: float, repeat: int, parallelism: int, dirs: list[str] | None = None,
                 threads: list[int] | None = None, backend: str | None = None, **_) -> list[Run]:
    dirs = dirs or [tempfile.gettempdir()]
    threads = threads or sorted({1, parallelism})
    runs = []
    for d in dirs:
        if not os.path.isdir(d):
            raise FileNotFoundError(f"bench devices: directory {d!r} does not exist")
        for mode in ("cold", "warm"):
            def call(d=d, mode=mode):
                bw = probe_bandwidth(d, size=max(16 * MB, int(256 * MB * scale)), cold=(mode == "cold"))
                return {"experiment": "devices", "dir": d, "kind": f"raw {mode}", **bw}

            runs.append(Run({"experiment": "devices", "dir": d, "kind": f"raw {mode}"}, call))
        for size_scale in (0.5, 1.0):
            data = ensure_data("rddtest", root, scale * size_scale, kind="vectors")
            for r in range(repeat):
                for n in threads:
                    key = {"experiment": "devices", "workload": "rddtest", "dir": d, "threads": n,
                           "size_scale": size_scale, "level": "DISK_ONLY", "repeat": r}

                    def call(d=d, n=n, data=data, key=key):
                        report = run_workload("rddtest", data, api="batches", level="DISK_ONLY", parallelism=n,
                                              local_dirs=[d], memory=_ample(data), context_options=_backend(backend))
                        row = _row(report, key)
                        cache_s = report["extra"].get("cache_s") or report["total_s"]
                        row["mb_per_s"] = row["cached_mb"] / cache_s if cache_s else None
                        return row

                    runs.append(Run(key, call))
    return runs


def _cached_size(w: str, data: str, api: str, parallelism: int, backend: str | None = None) -> Callable[[], int]:
    """The bytes the workload caches (one MEMORY_ONLY iteration with ample memory),
    measured once, when a run first needs them: the base of every pressure ratio."""
    sized: dict = {}

    def measure() -> int:
        if "bytes" not in sized:
            rep = _in_tmp(w, data, parallelism, backend, check=False, api=api, level="MEMORY_ONLY",
                          memory=_ample(data), iterations=1)
            sized["bytes"] = max(1, rep["cached_memory_bytes"])
        return sized["bytes"]

    return measure


def plan_pressure(root: str, scale: float, repeat: int, parallelism: int, workloads: list[str] | None = None,
                  pressures: list[float] | None = None, policies: list[str] | None = None, backend: str | None = None,
                  **_) -> list[Run]:
    from strataflow.workloads.api import WORKLOADS

    workloads = [w for w in (workloads or PRESSURE_WORKLOADS) if w in WORKLOADS]
    pressures = pressures or PRESSURES
    policies = policies or list(POLICIES)
    runs = []
    for w in workloads:
        data = ensure_data(w, root, scale)
        api = "batches"
        measure = _cached_size(w, data, api, parallelism, backend)
        for r in range(repeat):
            for pressure in pressures:
                order = policies if r % 2 == 0 else list(reversed(policies))
                for policy in order:
                    key = {"experiment": "pressure", "workload": w, "api": api, "level": "MEMORY_AND_DISK",
                           "policy": policy, "pressure": pressure, "repeat": r}

                    memory_fn = (lambda measure=measure, pressure=pressure: max(1 * MB, int(measure() / pressure)))

                    def execute(check=True, w=w, data=data, key=key, policy=policy, memory_fn=memory_fn):
                        return _in_tmp(w, data, parallelism, backend, check, api=key["api"], level="MEMORY_AND_DISK",
                                       policy=policy, memory=memory_fn())

                    def call(key=key, measure=measure, execute=execute):
                        return {**_row(execute(), key), "cached_for_pressure_mb": measure() / MB}

                    runs.append(Run(key, call, extra={"memory_fn": memory_fn},
                                    warm=lambda execute=execute: execute(check=False)))
    return runs


def auto_run(workload: str, data: str, key: dict, parallelism: int, backend: str | None, level: str, memory: int,
             check: bool = True) -> dict:
    """One run of ``bench auto`` from plain values (JSON): what a run inside a machine
    calls in its own Python. Its row; the result is checked outside the machine
    (:func:`~strataflow.bench.machine.checks_outside`: the check is not the run)."""
    return _row(_in_tmp(workload, data, parallelism, backend, check, api="batches", level=level, memory=memory,
                        announce_check=checks_outside()), key)


def plan_auto(root: str, scale: float, repeat: int, parallelism: int, workloads: list[str] | None = None,
              pressures: list[float] | None = None, levels: list[str] | None = None, backend: str | None = None,
              machine_memory: int | str | None = None, time_limit: float | None = None, **_) -> list[Run]:
    """AUTO beside every fixed level, per workload and pressure; the levels' order is
    reversed every other repeat (paired runs: drift in the machine hits all alike).
    ``machine_memory``: each run in a fresh machine of that size (``budget+SIZE``: the
    run's budget plus SIZE), where spills and mapped writes reach the device
    (:func:`strataflow.bench.scale.machine_plan`); no warm-up runs then: every run starts
    in a fresh machine with its input's pages dropped, the regime measured."""
    from strataflow.workloads.api import WORKLOADS

    workloads = [w for w in (workloads or AUTO_WORKLOADS) if VARIANTS.get(w, (w,))[0] in WORKLOADS]
    levels = [lv.upper() for lv in levels or AUTO_LEVELS]
    levels = levels if "AUTO" in levels else ["AUTO", *levels]
    work_dir = tempfile.gettempdir()
    machine = machine_plan(machine_memory, work_dir, root, time_limit) if machine_memory else None
    runs = []
    for w in workloads:
        name, fmt = VARIANTS.get(w, (w, "text"))
        data = ensure_data(name, root, scale, fmt=fmt)
        measure = _cached_size(name, data, "batches", parallelism, backend)
        for r in range(repeat):
            for pressure in pressures or AUTO_PRESSURES_OF.get(w, AUTO_PRESSURES):
                for level in (levels if r % 2 == 0 else list(reversed(levels))):
                    key = {"experiment": "auto", "workload": w, "api": "batches", "level": level,
                           "pressure": pressure, "repeat": r}
                    memory_fn = (lambda measure=measure, pressure=pressure: max(1 * MB, int(measure() / pressure)))

                    def execute(check=True, name=name, data=data, level=level, memory_fn=memory_fn):
                        return _in_tmp(name, data, parallelism, backend, check, api="batches", level=level,
                                       memory=memory_fn())

                    def call(execute=execute, key=key, name=name, data=data, level=level, memory_fn=memory_fn):
                        if machine is None:
                            return _row(execute(), key)
                        memory = memory_fn()
                        spec = dict(workload=name, data=data, key=key, parallelism=parallelism, backend=backend,
                                    level=level, memory=memory)
                        return in_machine(machine, "strataflow.bench.experiments:auto_run", spec,
                                          {**key, "memory_mb": memory / MB}, data, work_dir, budget=memory)

                    runs.append(Run(key, call, extra={"memory_fn": memory_fn},
                                    warm=None if machine else (lambda execute=execute: execute(check=False))))
    return runs


EXPERIMENTS = {"levels": plan_levels, "serde": plan_serde, "devices": plan_devices, "pressure": plan_pressure,
               "auto": plan_auto, "scale": plan_scale}


def plan(experiment: str, **kw) -> list[Run]:
    if experiment not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r}; choose one of {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[experiment](**kw)


CONFIG_KEYS = ("experiment", "workload", "peer", "api", "kind", "level", "serializer", "policy", "pressure", "dir",
               "threads", "size_scale")


def summarize(rows: list[dict]) -> list[dict]:
    """Medians over repeats of every numeric field, one row per configuration; for the
    pressure experiment, each policy's speed-up over ``spark`` at the same point."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        key = tuple((k, row[k]) for k in CONFIG_KEYS if k in row)
        groups.setdefault(key, []).append(row)
    out = []
    for key, members in groups.items():
        merged = dict(key)
        for k in members[0]:
            vals = [m[k] for m in members if _numeric(m.get(k))]
            if vals and k not in ("repeat", *CONFIG_KEYS):
                merged[k] = statistics.median(vals)
        merged["runs"] = len(members)
        merged["result_check"] = "ok" if all(m.get("result_check", "ok") == "ok" for m in members) else \
            next(m["result_check"] for m in members if m.get("result_check", "ok") != "ok")
        merged["stages"] = members[0].get("stages")
        out.append(merged)
    for row in out:
        if row.get("experiment") == "pressure":
            base = next((o for o in out if o.get("experiment") == "pressure" and o.get("policy") == "spark"
                         and o.get("workload") == row.get("workload") and o.get("pressure") == row.get("pressure")
                         and o.get("peer") == row.get("peer")), None)
            if base and row.get("total_s"):
                row["speedup_vs_spark"] = base["total_s"] / row["total_s"]
            peers = [o for o in out if o.get("experiment") == "pressure" and o.get("workload") == row.get("workload")
                     and o.get("pressure") == row.get("pressure") and o.get("peer") == row.get("peer")]
            least = min((o.get("mb_moved", 0) for o in peers), default=0)
            row["moved_vs_min"] = (row.get("mb_moved", 0) + 1) / (least + 1)  # +1 MB: a ratio of zeros is 1
    _auto_ratios(rows, out)
    return out


def paired_ratios(runs: list[dict], a: str, b: str) -> list[float]:
    """Level ``a``'s time over level ``b``'s, one ratio per repeat that ran both."""
    times = {(r["level"], r.get("repeat")): r["total_s"] for r in runs if r.get("total_s")}
    return [t / times[(b, k)] for (lv, k), t in times.items() if lv == a and (b, k) in times]


def paired_ratio(runs: list[dict], a: str, b: str) -> float | None:
    """The median over repeats of level ``a``'s time over level ``b``'s in the same
    repeat (None: no repeat ran both). Runs of one repeat ran back to back, so a drift of
    the machine (another process, the VM's page reporting, a journal commit) that slows
    a stretch of runs divides out, and an outlier moves one ratio, not a median."""
    ratios = paired_ratios(runs, a, b)
    return statistics.median(ratios) if ratios else None


def median_ci(values: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """A distribution-free confidence interval for the median: the order statistics
    ``(k, n + 1 - k)`` with the largest ``k`` whose binomial tail, P(B(n, 1/2) < k), is at
    most ``(1 - confidence) / 2`` (coverage at least ``confidence``; no assumption on the
    timings' distribution, which on a shared machine is skewed). None when ``values`` are
    too few for any such interval (fewer than 6 at 95%)."""
    xs = sorted(values)
    n, tail, k, cum = len(xs), (1 - confidence) / 2, 0, 0.0
    while k < n and (cum := cum + math.comb(n, k) / 2 ** n) <= tail:
        k += 1
    return (xs[k - 1], xs[n - k]) if k else None


#: AUTO's target (issue 16): its time within this factor of every fixed level's ...
TARGET_VS_FIXED = 1.05
#: ... and not above MEMORY_AND_DISK's
TARGET_VS_MEMORY_AND_DISK = 1.0
#: a workload's own bound in place of TARGET_VS_FIXED (issue 43): the mixed pipeline's
#: datasets want different levels, so choosing per dataset must beat every single level
TARGET_OF = {"mixed": 0.9}


def auto_target(workload: str | None) -> float:
    """AUTO's bound against every fixed level on ``workload``."""
    return TARGET_OF.get(workload or "", TARGET_VS_FIXED)


def target_verdict(against: dict[str, list[float]], bound: float = TARGET_VS_FIXED) -> tuple[str, str]:
    """Whether paired ratios (AUTO over each fixed level, per repeat) show AUTO's target
    ``met``, ``missed`` or ``open`` at one point, with why. Each ratio's median gets a 95%
    interval (:func:`median_ci`): the target is *missed* where an interval lies wholly
    above its bound (``bound``, 1.05 unless the workload has its own, for every level;
    also 1.0 for MEMORY_AND_DISK), *met* where every interval against a fixed level lies
    at or below ``bound`` and MEMORY_AND_DISK's does not lie above 1.0, and *open*
    otherwise: the timings are too noisy to tell."""
    missed, unsure, short = [], [], []
    for level, ratios in sorted(against.items()):
        ci = median_ci(ratios)
        if ci is None:
            short.append(level)
            continue
        lo, hi = ci
        if lo > bound:
            missed.append(f"{level} [{lo:.3f}, {hi:.3f}] > {bound}")
        elif level == "MEMORY_AND_DISK" and lo > TARGET_VS_MEMORY_AND_DISK:
            missed.append(f"{level} [{lo:.3f}, {hi:.3f}] > {TARGET_VS_MEMORY_AND_DISK}")
        elif hi > bound:
            unsure.append(f"{level} [{lo:.3f}, {hi:.3f}]")
    if missed:
        return "missed", "; ".join(missed)
    if short:
        return "open", f"too few paired repeats for a 95% interval against {', '.join(short)}"
    if unsure:
        return "open", f"interval reaches over {bound}: " + "; ".join(unsure)
    return "met", f"every 95% interval at or below {bound}"


def _auto_points(rows: list[dict]) -> dict[tuple, list[dict]]:
    """The ``auto`` experiment's timed runs by point: (workload, pressure) -> runs."""
    points: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("experiment") == "auto" and r.get("total_s"):
            points.setdefault((r.get("workload"), r.get("pressure")), []).append(r)
    return points


def _auto_ratios(rows: list[dict], out: list[dict]) -> None:
    """The ``auto`` experiment's comparisons, per workload and pressure, from paired runs:
    AUTO is compared with each fixed level (:func:`paired_ratio`); the *best fixed level*
    is the one AUTO fares worst against, so ``vs_best_fixed`` of AUTO (target <= 1.05)
    holds against every fixed level at once. Every row gets its own ``vs_best_fixed`` and
    ``vs_memory_and_disk``, paired the same way; AUTO's row also gets the 95% interval of
    ``vs_best_fixed`` (``vs_best_fixed_ci``) and the ``target`` verdict
    (:func:`target_verdict`) with its ``target_why``."""
    points = _auto_points(rows)
    best: dict[tuple, str | None] = {}
    ratios: dict[tuple, dict[str, list[float]]] = {}
    for point, runs in points.items():  # once per point, not once per row
        ratios[point] = {lv: paired_ratios(runs, "AUTO", lv) for lv in {r["level"] for r in runs} - {"AUTO"}}
        against = {lv: statistics.median(v) for lv, v in ratios[point].items() if v}
        best[point] = max(sorted(against), key=against.__getitem__) if against else None
    for row in out:
        point = (row.get("workload"), row.get("pressure"))
        if row.get("experiment") != "auto" or not row.get("total_s") or point not in points:
            continue
        for key, level in (("vs_best_fixed", best[point]), ("vs_memory_and_disk", "MEMORY_AND_DISK")):
            if level is not None and any(r["level"] == level for r in points[point]):
                row[key] = 1.0 if row["level"] == level else paired_ratio(points[point], row["level"], level)
        if best[point] is not None:
            row["best_fixed"] = best[point]
        if row["level"] == "AUTO" and best[point] is not None:
            ci = median_ci(ratios[point][best[point]])
            row["vs_best_fixed_ci"] = None if ci is None else list(ci)
            row["target_bound"] = auto_target(point[0])
            row["target"], row["target_why"] = target_verdict({lv: v for lv, v in ratios[point].items() if v},
                                                              row["target_bound"])


def auto_verdict(rows: list[dict], summary: list[dict]) -> str | None:
    """One line for the ``auto`` report: at how many points AUTO's target is met, missed
    and open (``summary``'s verdicts), and AUTO over MEMORY_AND_DISK pooled over every
    paired repeat of every point (``rows``: a 95% interval narrower than one point's)."""
    autos = [r for r in summary if r.get("experiment") == "auto" and r.get("level") == "AUTO" and "target" in r]
    if not autos:
        return None
    counts = {v: sum(r["target"] == v for r in autos) for v in ("met", "missed", "open")}
    own = sorted({r["workload"] for r in autos if r.get("workload") in TARGET_OF})
    line = (f"target (AUTO <= {TARGET_VS_FIXED}x every fixed level"
            + "".join(f", {w}: <= {TARGET_OF[w]}x the best single fixed level" for w in own)
            + f", not above MEMORY_AND_DISK; 95% intervals of paired medians): met at {counts['met']}, missed at "
            f"{counts['missed']}, open at {counts['open']} of {len(autos)} points")
    for w in own:  # the workloads with their own bound, point by point
        line += f"; {w}: " + ", ".join(
            f"{r['pressure']:g}x AUTO / {r.get('best_fixed')} {r['vs_best_fixed']:.3f} {r['target']}"
            for r in sorted((r for r in autos if r["workload"] == w), key=lambda r: r["pressure"]))
    points = _auto_points(rows)
    pooled = [x for runs in points.values() for x in paired_ratios(runs, "AUTO", "MEMORY_AND_DISK")]
    ci = median_ci(pooled)
    if ci is not None:
        line += (f"; AUTO / MEMORY_AND_DISK over all {len(pooled)} paired repeats: median "
                 f"{statistics.median(pooled):.3f}, 95% interval [{ci[0]:.3f}, {ci[1]:.3f}]")
    return line


def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
