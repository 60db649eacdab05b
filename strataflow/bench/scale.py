"""``strataflow bench scale``: K-means and word count at one memory budget (default 256 MB)
over inputs of 1, 4, 16, ... times that budget, for every cache policy: time per GB and
bytes moved per GB of input at each size.

Why: the papers' regime is data far larger than the cache. Where the cost grows linearly
with the input, time per GB is flat across sizes; where it is not, the runs' own figures
(disk bytes of the cache, shuffle and spill bytes, (de)serialization and GC time) say
where the time went, and :func:`scale_notes` says it in the report.

Sizes: 1, 4 and 16x the budget, then 64x, 256x, ... (up to :data:`MAX_SIZE`) while the
disk holds them, or the ``--sizes`` given. Before anything is generated each size is
checked against the free space (:func:`plan_sizes`): its inputs not yet generated, plus
working space for the run's cache, shuffle and spill files (:data:`WORK_FACTOR` times
one input), must fit in :data:`DISK_SHARE` of what is free, less what the smaller sizes'
inputs will take (inputs are kept, as every experiment keeps its data). A size that does
not fit is a row saying so (``skipped``), with the reason in the report's notes; past
the default sizes the first that does not fit ends the list.

Every run: a fresh Context with ``memory`` = the budget, the workload's batches API at
MEMORY_AND_DISK (what spills to disk), partitions of about 1/:data:`PARTITIONS_PER_BUDGET`
of the budget each (so a partition fits in memory at every size), over a fresh working
directory; the event log gives the shuffle and spill bytes of its stages. There is no
warm-up run: a run here is long, and reading an input of many times memory leaves the
same memory behind whatever ran before. Results are checked up to :data:`CHECK_MAX_BYTES`
of input (the checks read the whole input again in one process: K-means's holds it);
larger runs have ``checked`` 0. Word count's is checked at every size
(:data:`STREAMING_CHECKS`: its check streams the file and holds only the distinct words).

A machine smaller than its data (``machine_memory``, ``--machine-memory``): every run is a
fresh Python in a fresh memory cgroup of that size (:mod:`strataflow.bench.machine`),
driver, executors and their page cache together; the input is generated outside it and
its pages dropped from the page cache first (they would be hits charged elsewhere). The
device's own sequential bandwidth (direct I/O, :mod:`strataflow.bench.device_bandwidth`)
is measured once, at planning, before any run; each row carries it, the machine's size,
the group's peak usage and its OOM kills. A run killed for memory is a row saying so.

The runs are :class:`ScaleRun` objects shaped like ``experiments.Run`` (key, call, extra,
warm): this module is imported by experiments.py to register the plan, so it cannot
import that module back (no import circles). The PySpark peer's runs are in
``scale_peer.py``.
"""

from __future__ import annotations

import math
import os
import shutil
import statistics
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable

from strataflow.bench.data import data_path, data_path_size, ensure_data
from strataflow.bench.device_bandwidth import direct_bandwidth
from strataflow.bench.machine import (MachineUnavailable, available, call_in_machine, can_leave, checks_outside,
                                      drop_page_cache)
from strataflow.config import parse_size
from strataflow.report.events import read_events
from strataflow.storage.policies import POLICIES
from strataflow.workloads.api import read_manifest
from strataflow.workloads.runner import run_workload

__all__ = ["ScaleRun", "plan_scale", "plan_sizes", "scale_row", "scale_notes", "stage_flows", "disk_free",
           "partitions_for", "run_spec", "machine_plan", "in_machine", "DEFAULT_BUDGET", "DEFAULT_SIZES",
           "WORKLOADS", "GB"]

MB = 1 << 20
GB = 1 << 30  # "GB" in this experiment's figures: 2**30 bytes
DEFAULT_BUDGET = 256 * MB
DEFAULT_SIZES = (1.0, 4.0, 16.0)
#: the largest default size tried past DEFAULT_SIZES (powers of 4 while they fit on disk)
MAX_SIZE = 1024.0
WORKLOADS = ("kmeans", "wordcount")
LEVEL = "MEMORY_AND_DISK"
API = "batches"
ITERATIONS = 5  # K-means's Lloyd steps, as in the other experiments
#: the share of the free disk space the experiment may use
DISK_SHARE = 0.6
#: working space per byte of input: the cache on disk (K-means's float64 points and norms
#: are ~1.07x the text, word count's Arrow words ~1.1x) plus shuffle and spill files
WORK_FACTOR = 2.0
#: inputs above this are not checked (the check re-reads the whole input in one process)
CHECK_MAX_BYTES = 1 * GB
#: workloads whose check streams the input and holds only the answer (word count's Counter
#: of the distinct words, ~55 MB/s here): checked at every size, whatever CHECK_MAX_BYTES
STREAMING_CHECKS = frozenset({"wordcount"})
#: partitions per budget's worth of input
PARTITIONS_PER_BUDGET = 8
#: time per GB within this factor of the smallest size's counts as flat
FLAT = 1.25
#: bytes written and read back to measure the device's bandwidth (with --machine-memory)
BANDWIDTH_BYTES = 1 * GB
#: in a machine, inputs up to 1/MACHINE_CHECK_SHARE of it are checked: the check holds the
#: whole input in the driver (K-means at 512 MB: 1.4 GB of anonymous memory, OOM-killed in a
#: 2 GB machine beside the run's own executors)
MACHINE_CHECK_SHARE = 8
BUDGET_PLUS = "budget+"  # --machine-memory budget+SIZE: each run's memory budget plus SIZE


def disk_free(path: str) -> int:
    """Free bytes on ``path``'s file system (tests replace it: the free-space figure is injected)."""
    return shutil.disk_usage(path).free


@dataclass
class ScaleRun:
    """One run of the plan, as ``bench`` runs it: ``call()`` returns its row; ``extra``
    carries what the peer's runs need (``data``: workload, size -> input directory)."""

    key: dict[str, Any]
    call: Callable[[], dict]
    repeat: int = 0
    extra: dict = field(default_factory=dict)
    warm: Callable[[], Any] | None = None


def partitions_for(size: int, budget: int, parallelism: int) -> int:
    """Partitions for ``size`` bytes of input: about budget / PARTITIONS_PER_BUDGET each, at
    least four per task slot (as the workloads' own default)."""
    return max(4 * parallelism, math.ceil(size / max(1, budget // PARTITIONS_PER_BUDGET)))


def _generated(workload: str, root: str, size: int) -> bool:
    try:
        return read_manifest(data_path(workload, root, data_path_size(workload, 1.0, size))).get("workload") == workload
    except (FileNotFoundError, ValueError):
        return False


def _bytes(n: float) -> str:
    return f"{n / GB:,.1f} GB" if abs(n) >= GB else f"{n / MB:,.0f} MB"


def _same_disk(a: str, b: str) -> bool:
    return os.stat(a).st_dev == os.stat(b).st_dev


def plan_sizes(root: str, work_dir: str, budget: int, workloads: list[str], sizes: list[float] | None = None,
               free: Callable[[str], int] = disk_free) -> tuple[list[float], dict[float, str]]:
    """The sizes (multiples of ``budget``) that fit on disk, and the reason for each that
    does not. ``root`` holds the inputs, ``work_dir`` the runs' working files (on one
    file system: one allowance for both). Without ``sizes``: DEFAULT_SIZES, then powers of
    4 up to MAX_SIZE until one does not fit (that one is reported, the rest not tried)."""
    chosen = sorted(set(sizes)) if sizes else list(DEFAULT_SIZES)
    if not sizes:
        x = DEFAULT_SIZES[-1] * 4
        while x <= MAX_SIZE:
            chosen.append(x)
            x *= 4
    for x in chosen:
        if x <= 0:
            raise ValueError(f"bench scale: sizes are multiples of the memory budget > 0, got {x:g}")
    in_free = free(root)
    shared = _same_disk(root, work_dir)
    work_free = in_free if shared else free(work_dir)
    in_allow, work_allow = DISK_SHARE * in_free, DISK_SHARE * work_free
    kept = 0.0  # inputs the smaller sizes will generate
    fits: list[float] = []
    skipped: dict[float, str] = {}
    for x in chosen:
        size = int(x * budget)
        missing = sum(size for w in workloads if not _generated(w, root, size))
        work = WORK_FACTOR * size
        if shared:
            ok = kept + missing + work <= in_allow
            room = (f"{DISK_SHARE:.0%} of the {_bytes(in_free)} free on {root}, less {_bytes(kept)} for the "
                    f"smaller sizes' inputs, leaves {_bytes(in_allow - kept)}")
        else:
            ok = kept + missing <= in_allow and work <= work_allow
            room = (f"{DISK_SHARE:.0%} of the free space: {_bytes(in_allow - kept)} for inputs on {root} (after "
                    f"the smaller sizes'), {_bytes(work_allow)} of working space on {work_dir}")
        if ok:
            fits.append(x)
            kept += missing
            continue
        skipped[x] = (f"{x:g}x ({_bytes(size)} a workload) needs {_bytes(missing + work)} of disk: "
                      f"{_bytes(missing)} of inputs not yet generated and {_bytes(work)} of working space "
                      f"(cache, shuffle and spill files: {WORK_FACTOR:g}x one input); {room}")
        if not sizes:
            break
    return fits, skipped


def stage_flows(event_log: str) -> dict[str, int]:
    """Shuffle bytes written and read, and aggregation spill bytes, summed over the
    finished stages of a run's event log."""
    events, _ = read_events(event_log)
    out = dict.fromkeys(("shuffle_bytes_written", "shuffle_bytes_read", "spill_bytes"), 0)
    for ev in events:
        if ev["event"] == "StageEnd":
            for k in out:
                out[k] += int(ev.get(k) or 0)
    return out


def scale_row(report: dict, key: dict, flows: dict[str, int], parallelism: int, checked: bool) -> dict:
    """A run's row: its time and bytes moved, each also per GB of input. Bytes moved: the
    cache's disk reads and writes, shuffle bytes written and read, and spill bytes.
    ``serde_share`` and ``gc_share``: (de)serialization and GC seconds, summed over the
    executors, over the task time (total seconds x parallelism)."""
    m = report["metrics"]
    size = int(report["config"].get("data_bytes") or 0)
    gb = size / GB
    read, written = int(m.get("disk_bytes_read", 0)), int(m.get("disk_bytes_written", 0))
    shuffle = flows["shuffle_bytes_written"] + flows["shuffle_bytes_read"]
    moved = read + written + shuffle + flows["spill_bytes"]
    total = report["total_s"]
    task_s = total * parallelism
    its = report.get("iteration_s") or []
    memory = report["config"].get("memory")
    row = {**key, "finished": 1, "input_gb": gb, "memory_mb": memory / MB if memory else None,
           "total_s": total, "s_per_gb": total / gb if gb else None,
           "iteration_s": statistics.median(its) if its else None,
           "cache_read_gb": read / GB, "cache_written_gb": written / GB, "shuffle_gb": shuffle / GB,
           "spill_gb": flows["spill_bytes"] / GB, "moved_gb": moved / GB, "moved_per_gb": moved / size if size else None,
           "cached_disk_gb": report.get("cached_disk_bytes", 0) / GB, "blocks_dropped": m.get("blocks_dropped"),
           "blocks_recached": m.get("blocks_recached"),
           "serde_share": (m.get("serialize_s", 0) + m.get("deserialize_s", 0)) / task_s if task_s else None,
           "gc_share": m.get("gc_s", 0) / task_s if task_s else None, "checked": int(checked),
           **cache_rates(m, its)}
    if checked:  # an unchecked run claims nothing ("checked" 0), so bench does not count it failed
        row["result_check"] = report["result_check"]
    return row


def cache_rates(metrics: dict, iteration_s: list[float]) -> dict:
    """How fast the cache met its device. ``iteration_read_mb_s``: the disk tiers' bytes
    read per iteration over the median iteration's seconds (K-means: every iteration reads
    the same blocks; the issue's measure). ``cache_write_mb_s``: bytes written over the
    seconds the writes took, summed over the tasks that made them: the rate one writer saw,
    a lower bound on the device's when several write at once. None where nothing was
    read or written, or no time was measured."""
    read, written = metrics.get("disk_bytes_read", 0), metrics.get("disk_bytes_written", 0)
    write_s = metrics.get("disk_write_s", 0)
    its = statistics.median(iteration_s) if iteration_s else 0
    return {"iteration_read_mb_s": read / len(iteration_s) / its / MB if read and its else None,
            "cache_write_mb_s": written / write_s / MB if written and write_s else None}


def device_shares(row: dict) -> dict:
    """The row's cache rates as shares of the device's own bandwidth measured in the same
    invocation (``machine_plan``): the ≥ 70% targets of issue 52."""
    out = {}
    for rate, device, share in (("iteration_read_mb_s", "device_read_mb_s", "read_share"),
                                ("cache_write_mb_s", "device_write_mb_s", "write_share")):
        if row.get(rate) and row.get(device):
            out[share] = row[rate] / row[device]
    return out


class _Inputs:
    """Each (workload, size)'s input directory, generated when a run first needs it (not
    at planning: the skipped sizes are never generated, and the bar shows the work)."""

    def __init__(self, root: str, budget: int) -> None:
        self.root, self.budget = root, budget

    def __call__(self, workload: str, x: float) -> str:
        return ensure_data(workload, self.root, 1.0, size=int(x * self.budget))


def _execute(workload: str, x: float, policy: str, key: dict, inputs: _Inputs, parallelism: int,
             backend: str | None, work_dir: str, check_max: int) -> dict:
    data = inputs(workload, x)
    size = int(read_manifest(data).get("bytes") or 0)
    check = size <= check_max or workload in STREAMING_CHECKS
    extra = {"iterations": ITERATIONS} if workload == "kmeans" else {}
    with tempfile.TemporaryDirectory(prefix="sf-scale-", dir=work_dir) as tmp:
        log = os.path.join(tmp, "events.jsonl")
        report = run_workload(workload, data, api=API, level=LEVEL, policy=policy, memory=inputs.budget,
                              announce_check=checks_outside(),
                              parallelism=parallelism, local_dirs=[os.path.join(tmp, "cache")], check=check,
                              event_log=log, context_options={"backend": backend} if backend else None,
                              num_partitions=partitions_for(size, inputs.budget, parallelism), **extra)
        flows = stage_flows(log)
    row = scale_row(report, key, flows, parallelism, check)
    row["partitions"] = partitions_for(size, inputs.budget, parallelism)
    return row


def run_spec(workload: str, x: float, policy: str, key: dict, root: str, budget: int, parallelism: int,
             backend: str | None, work_dir: str, check_max: int) -> dict:
    """One run from plain values (JSON): what a run inside a machine calls in its own Python."""
    return _execute(workload, x, policy, key, _Inputs(root, budget), parallelism, backend, work_dir, check_max)


def machine_plan(machine_memory: int | str, work_dir: str, root: str, time_limit: float | None = None) -> dict:
    """The machine every run gets: its size (``limit``; or ``headroom``, for
    ``budget+SIZE``: each run's budget plus SIZE, see :func:`machine_limit`), a run's time
    limit, and the device's bandwidth where the runs' working files go (and where the
    inputs are, if another device), measured now, before any run. Refuses
    (MachineUnavailable) where no cgroup can be made."""
    text = str(machine_memory)
    headroom = parse_size(text[len(BUDGET_PLUS):], "--machine-memory") if text.startswith(BUDGET_PLUS) else None
    limit = None if headroom is not None else parse_size(machine_memory, "--machine-memory")
    if limit is not None and limit <= 0:
        raise ValueError("bench: --machine-memory must be > 0")
    ok, why = available()
    if not ok:
        raise MachineUnavailable(why)
    os.makedirs(work_dir, exist_ok=True)
    device = direct_bandwidth(work_dir, BANDWIDTH_BYTES)
    note = f"{device['write_mb_per_s']:,.0f} MB/s write, {device['read_mb_per_s']:,.0f} MB/s read at {work_dir} " \
           f"({device['fs']}; {device['note']})"
    if not _same_disk(root, work_dir):
        other = direct_bandwidth(root, BANDWIDTH_BYTES)
        note += f"; inputs at {root}: {other['write_mb_per_s']:,.0f} MB/s write, {other['read_mb_per_s']:,.0f} MB/s " \
                f"read ({other['fs']}, {other['mode']})"
    size = f"{limit / MB:,.0f} MB" if limit is not None else f"its memory budget + {headroom / MB:,.0f} MB"
    return {"limit": limit, "headroom": headroom, "time_limit": time_limit, "why": why,
            "checks_outside": can_leave(), "columns": {
        "device_write_mb_s": device["write_mb_per_s"], "device_read_mb_s": device["read_mb_per_s"]},
        "note": f"machine: every run in a fresh memory cgroup of {size} ({why}): driver, executors and "
                f"their page cache; inputs' pages dropped before each run; device, measured in this invocation: {note}"}


def machine_limit(machine: dict, budget: int) -> int:
    """The bytes of the machine a run of memory ``budget`` gets."""
    return machine["limit"] if machine.get("headroom") is None else budget + machine["headroom"]


def in_machine(machine: dict, target: str, spec: dict, lost: dict, data: str, work_dir: str,
               timeout_s: float | None = None, budget: int | None = None) -> dict:
    """``target(**spec)`` (a function returning a row) run inside a fresh machine after
    ``data``'s pages are dropped; the row gains the machine's columns. No row back: ``lost``
    (the key and what is known before the run) saying why (OOM and time limits are
    findings, ``finished`` 0; another failure is an error, ``result_check``)."""
    drop_page_cache(data)
    limit = machine_limit(machine, budget if budget is not None else int(spec.get("budget") or 0))
    result, info = call_in_machine(limit, target, spec, work_dir, timeout_s or machine.get("time_limit"))
    row = dict(result) if result is not None else {**lost, "finished": 0}
    row.update({k: v for k, v in info.items() if k != "outcome"}, **machine["columns"], machine_note=machine["note"])
    row.update(device_shares(row))
    if "outcome" in info:
        row["outcome"] = info["outcome"]
        if result is None and not info["oom_kills"] and not info["outcome"].startswith("time limit"):
            row["result_check"] = f"error: {info['outcome']}"
    return row


def _choose(given: list[str] | None, known: list[str], what: str) -> list[str]:
    if not given:
        return list(known)
    unknown = [g for g in given if g not in known]
    if unknown:
        raise ValueError(f"bench scale: unknown {what} {', '.join(unknown)}; choose from {', '.join(known)}")
    return list(given)


def plan_scale(root: str, repeat: int, parallelism: int, workloads: list[str] | None = None,
               policies: list[str] | None = None, backend: str | None = None, budget: int | str | None = None,
               sizes: list[float] | None = None, free: Callable[[str], int] | None = None,
               work_dir: str | None = None, check_max: int = CHECK_MAX_BYTES, machine_memory: int | str | None = None,
               time_limit: float | None = None, **_) -> list[ScaleRun]:
    """The plan: per repeat, workload and size, every policy (their order reversed every
    other repeat); first, one row per workload for each size that does not fit on disk.
    ``free`` (path -> free bytes) defaults to :func:`disk_free`; ``work_dir`` (the runs'
    working files) to the temporary directory. ``--scale`` does not apply: the budget
    sets the sizes. ``machine_memory``: each run in a machine of that size
    (:func:`machine_plan`; ``time_limit`` then bounds each run, default none)."""
    budget = parse_size(budget if budget is not None else DEFAULT_BUDGET, "--budget")
    if budget <= 0:
        raise ValueError("bench scale: --budget must be > 0")
    workloads = _choose(workloads, list(WORKLOADS), "workload")
    policies = _choose(policies, list(POLICIES), "policy")
    work_dir = work_dir or tempfile.gettempdir()
    os.makedirs(root, exist_ok=True)
    fits, skipped = plan_sizes(root, work_dir, budget, workloads, sizes, free or disk_free)
    inputs = _Inputs(root, budget)
    machine = machine_plan(machine_memory, work_dir, root, time_limit) if machine_memory else None
    if machine and machine["checks_outside"]:
        machine["note"] += (f"; results checked (up to {_bytes(check_max)} of input) after the driver leaves its "
                            "machine: the check holds the whole input in the driver and is not the run (word "
                            "count's, which streams, at every size)")
    elif machine:
        check_max = min(check_max, machine_limit(machine, budget) // MACHINE_CHECK_SHARE)
        machine["note"] += (f"; results checked up to {_bytes(check_max)} of input, word count's at every size "
                            f"(1/{MACHINE_CHECK_SHARE} of the "
                            "machine: the check holds the whole input in the driver, which cannot leave the machine "
                            "here)")
    runs = []
    for x, why in skipped.items():
        for w in workloads:
            key = {"experiment": "scale", "workload": w, "size_scale": x, "repeat": 0}
            row = {**key, "finished": 0, "skipped": 1, "input_gb": x * budget / GB, "memory_mb": budget / MB,
                   "outcome": f"skipped: {why}"}
            runs.append(ScaleRun(key, lambda row=row: dict(row), extra={"skipped": why}))
    for r in range(repeat):
        for w in workloads:
            for x in fits:
                for policy in (policies if r % 2 == 0 else list(reversed(policies))):
                    key = {"experiment": "scale", "workload": w, "api": API, "level": LEVEL, "policy": policy,
                           "size_scale": x, "repeat": r}

                    def call(w=w, x=x, policy=policy, key=key):
                        if machine:  # the input is made outside the machine: its generation is not the run
                            spec = dict(workload=w, x=x, policy=policy, key=key, root=root, budget=budget,
                                        parallelism=parallelism, backend=backend, work_dir=work_dir,
                                        check_max=check_max)
                            lost = {**key, "input_gb": x * budget / GB, "memory_mb": budget / MB}
                            return in_machine(machine, "strataflow.bench.scale:run_spec", spec, lost, inputs(w, x),
                                              work_dir)
                        return _execute(w, x, policy, key, inputs, parallelism, backend, work_dir, check_max)

                    runs.append(ScaleRun(key, call, repeat=r, extra={"data": inputs, "budget": budget,
                                                                    "check_max": check_max, "machine": machine}))
    return runs


def _series(row: dict) -> str:
    return str(row.get("peer") or row.get("policy"))


def _share(v: Any) -> str:
    return f"{100 * v:.0f}%" if isinstance(v, (int, float)) else "n/a"


def flatness(points: list[dict]) -> str:
    """Whether time per GB is flat over one series' sizes (``points``: its summary rows
    with a time, by size) and, where it is not, what changed with it: bytes moved per GB,
    the share of task time in (de)serialization and in GC, and blocks re-read."""
    points = sorted((p for p in points if p.get("s_per_gb")), key=lambda p: p["size_scale"])
    if len(points) < 2:
        return "one size only: nothing to compare"
    base = points[0]
    ratios = [p["s_per_gb"] / base["s_per_gb"] for p in points]
    trail = " -> ".join(f"{p['s_per_gb']:.2f}" for p in points)
    sizes = f"{base['size_scale']:g}x to {points[-1]['size_scale']:g}x"
    if all(1 / FLAT <= r <= FLAT for r in ratios):
        return f"flat: s/GB {trail} from {sizes} (within {FLAT:g}x of the smallest size's): linear growth"
    worst = max(range(len(points)), key=lambda i: abs(math.log(ratios[i])))
    p = points[worst]
    first = next(i for i, r in enumerate(ratios) if not 1 / FLAT <= r <= FLAT)
    trend = "rises" if ratios[worst] > 1 else "falls"
    why = [f"bytes moved {base.get('moved_per_gb') or 0:.2f} -> {p.get('moved_per_gb') or 0:.2f} GB per GB of input"]
    if base.get("serde_share") is not None:
        why.append(f"(de)serialization {_share(base.get('serde_share'))} -> {_share(p.get('serde_share'))} of task time")
    if base.get("gc_share") is not None:
        why.append(f"GC {_share(base.get('gc_share'))} -> {_share(p.get('gc_share'))}")
    if p.get("cache_read_gb") is not None:
        why.append(f"cache read from disk {base.get('cache_read_gb') or 0:.2f} -> {p.get('cache_read_gb') or 0:.2f} GB")
    cause = ""
    if trend == "falls":
        cause = "; fixed costs (task and stage set-up, the first parse's start) spread over more data"
    elif (p.get("moved_per_gb") or 0) > (base.get("moved_per_gb") or 0) + 0.25:
        cause = "; the cache no longer fits the budget: blocks go to disk and are read back (per GB of input more I/O)"
    elif (p.get("serde_share") or 0) > (base.get("serde_share") or 0) + 0.05:
        cause = "; more of the time goes to encoding and decoding blocks for the disk"
    return (f"not flat: s/GB {trail} from {sizes}; {trend} {ratios[worst]:.2f}x by {p['size_scale']:g}x "
            f"(first outside {FLAT:g}x at {points[first]['size_scale']:g}x); " + ", ".join(why) + cause)


def scale_notes(rows: list[dict], summary: list[dict]) -> list[str]:
    """The report's lines for ``bench scale``: the setting, each skipped size and each run
    that did not finish with its reason, the unchecked sizes, and per workload and series
    whether time per GB is flat (:func:`flatness`)."""
    mine = [r for r in rows if r.get("experiment") == "scale"]
    budgets = sorted({r["memory_mb"] for r in mine if r.get("memory_mb")})
    notes = [f"bench scale: memory budget {', '.join(f'{b:g}' for b in budgets)} MB; level {LEVEL}, api {API}, "
             f"partitions of ~1/{PARTITIONS_PER_BUDGET} of the budget; GB = 2^30 bytes; no warm-up runs (whatever --warmup says); "
             f"bytes moved = the cache's disk reads + writes, shuffle written + read, spills"]
    machine = next((r["machine_note"] for r in mine if r.get("machine_note")), None)
    if machine:
        notes.append(machine)
    seen = set()
    for r in mine:
        outcome = r.get("outcome")
        who = (f"{r.get('size_scale'):g}x" if r.get("skipped") else
               f"{r.get('workload')} {_series(r)} at {r.get('size_scale'):g}x")
        if outcome and (who, outcome) not in seen:
            seen.add((who, outcome))
            notes.append(f"{who}: {outcome}")
        elif r.get("result_check", "ok") != "ok":
            notes.append(f"{r.get('workload')} {_series(r)} at {r.get('size_scale'):g}x: {r['result_check']}")
    unchecked = sorted({r["size_scale"] for r in mine if r.get("checked") == 0 and r.get("finished")})
    if unchecked:
        limit = "the limit the machine line states" if machine else f"{CHECK_MAX_BYTES / GB:g} GB"
        notes.append(f"not checked (input over {limit}: the check re-reads the whole input): "
                     f"sizes {', '.join(f'{x:g}x' for x in unchecked)}")
    done = [s for s in summary if s.get("experiment") == "scale" and s.get("s_per_gb")]
    for w in dict.fromkeys(s["workload"] for s in done):
        for series in dict.fromkeys(_series(s) for s in done if s["workload"] == w):
            notes.append(f"{w}, {series}: " + flatness([s for s in done if s["workload"] == w and _series(s) == series]))
    return notes
