"""The Dask peer: K-means on the same data files with ``dask.distributed``, a
``LocalCluster`` of as many workers and threads as strataflow's executors and cores,
``persist()`` under the same memory budget with Dask's spill to disk on, and a report
shaped like ``strataflow.workloads.runner``'s so that ``bench --peer dask`` puts its rows
beside ours and PySpark's.

Each run is a subprocess (``dask_job.py``) in a session of its own: no worker, cache or
spilled file carries over from one run to the next, and a run that stalls (workers paused
for memory that never frees) is killed, with its whole process group, after its time
limit and reported as a failed run instead of hanging the bench. A run that fails
(``KilledWorker``: a task's workers died too often, as when the nanny kills a worker
past its memory limit) is reported the same way, with how far it got.

Memory (:func:`memory_plan`): strataflow's budget is the unified memory of each
executor (``memory / executors``), not its process size; Spark's peer raises the heap so
that its unified region is that budget. Dask's ``memory_limit`` is a whole worker
process's, so the budget becomes the worker's *managed* memory, where ``persist()``ed
blocks spill (``distributed.worker.memory.target``), and the process gets the interpreter
and the tasks' working memory on top, in Spark's proportions (see :func:`memory_plan`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Sequence

from strataflow.bench.machine import leave_machine

__all__ = ["available", "memory_plan", "run_dask", "DaskPeerError", "RESERVED", "TASK_SHARE"]

MiB = 1 << 20
#: a worker process's own memory, beside the budget: here an idle Dask worker with numpy,
#: pyarrow and the K-means kernel imported is 92 MiB (RSS), and one that parsed and cached
#: 3.4 MB of points peaked at 157 MiB, 16 MB at 191 MiB; with 128 MiB its nanny killed
#: every worker parsing its first 1 MB block. Rounded up, as Spark reserves 300 MB of heap.
RESERVED = 256 * MiB
#: the part of the rest of the process left to the tasks' working memory, as Spark's
#: ``1 - spark.memory.fraction`` (0.4): managed memory is 60% of what is above RESERVED
TASK_SHARE = 0.4
WORKLOADS = ("kmeans",)
_AVAILABLE: tuple[bool, str] | None = None


class DaskPeerError(RuntimeError):
    """The Dask peer could not run (not installed, bad data); a run that fails inside
    Dask is a report with ``failure`` set, not this."""


def available() -> tuple[bool, str]:
    """Whether ``dask`` and ``dask.distributed`` are installed, and if not, why."""
    global _AVAILABLE
    if _AVAILABLE is None:
        from importlib import metadata, util

        missing = [m for m in ("dask", "distributed") if util.find_spec(m) is None]
        if missing:
            _AVAILABLE = (False, f"{' and '.join(missing)} not installed (pip install 'strataflow[peers]', "
                                 f"which brings dask[distributed])")
        else:
            _AVAILABLE = (True, f"dask {metadata.version('dask')}, distributed {metadata.version('distributed')}")
    return _AVAILABLE


def memory_plan(budget_per_worker: int) -> dict:
    """A worker's ``memory_limit`` and spill target for strataflow's per-executor budget:
    ``memory_limit = RESERVED + budget / (1 - TASK_SHARE)`` and ``target = budget /
    memory_limit``, so a worker spills ``persist()``ed blocks to disk once they exceed the
    budget (Dask's ``target`` weighs the blocks it manages). Dask's other thresholds stay
    at their defaults and weigh the whole process against ``memory_limit``: spill at 0.7,
    pause the worker's tasks at 0.8, and its nanny kills it at 0.95."""
    if budget_per_worker < 1:
        raise ValueError(f"the Dask peer needs a memory budget of at least 1 byte per worker, got {budget_per_worker}")
    limit = int(RESERVED + budget_per_worker / (1 - TASK_SHARE))
    return {"memory_limit": limit, "target": budget_per_worker / limit, "budget_per_worker": int(budget_per_worker),
            "formula": f"memory_limit = {RESERVED // MiB} MiB + budget / {1 - TASK_SHARE:g} = {limit / MiB:,.1f} MiB; "
                       f"target = budget / memory_limit = {budget_per_worker / limit:.3f}"}


def _failure(proc_rc: int | None, res: dict, timed_out: bool, timeout_s: float, last: dict | None) -> str | None:
    """What went wrong in a run, in a few words (None: nothing did)."""
    where = f" ({last['phase']}{' ' + str(last['iteration']) if 'iteration' in last else ''})" if last else ""
    if timed_out:
        return f"stalled: no result in {timeout_s:g} s, killed{where}"
    if not res:
        return f"the Dask process exited with {proc_rc} and no result{where}"
    if not res.get("ok"):
        return f"{res.get('error_type', 'error')}{where}"
    return None


def _last_mark(path: str) -> dict | None:
    try:
        with open(path) as f:
            lines = [ln for ln in f.read().splitlines() if ln.strip()]
    except FileNotFoundError:
        return None
    return json.loads(lines[-1]) if lines else None


def _dir_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def _end_group(proc: subprocess.Popen, started: float) -> None:
    """Ends the run's process, if still running, and every process left in its group
    (its session: the workers and nannies it started), each by its id: only processes
    of that group created since the run ``started`` (epoch seconds), so a recycled id is
    never hit."""
    import psutil

    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)  # the leader is alive: the group is ours
        proc.wait()
    for p in psutil.process_iter(["pid", "create_time"]):
        try:
            if os.getpgid(p.pid) == proc.pid and p.info["create_time"] >= started - 1:
                p.kill()
        except (ProcessLookupError, psutil.Error, OSError):
            pass


def run_dask(workload: str, data_dir: str, *, memory_bytes: int, workers: int, threads: int, work_dir: str,
             iterations: int = 5, k: int = 10, seed: int = 0, num_partitions: int | None = None,
             processes: bool = True, timeout_s: float = 600.0, check: bool = True,
             launcher: Sequence[str] = (), fault: str | None = None, dask_config: dict | None = None) -> dict:
    """Runs ``workload`` (``kmeans``) on the text data in ``data_dir`` on a Dask
    ``LocalCluster`` of ``workers`` x ``threads`` (each worker's share of
    ``memory_bytes`` planned by :func:`memory_plan`; spill files under ``work_dir``), in
    a subprocess killed after ``timeout_s``; returns a report like our runner's (``config,
    total_s, load_s, iteration_s, stages, metrics, cached_bytes, result_check, extra``)
    plus ``peer``, ``failure`` (None, or what failed: ``KilledWorker``, ``stalled``...)
    and ``memory_formula``. A failed run's report has no ``total_s`` but
    ``failed_after_s`` (the wall time until it failed or was killed).

    ``total_s`` is load + fit (reading, parsing, persisting, counting, choosing the
    centres, iterating), without the cluster's start (``cluster_start_s``). Spilled
    bytes: the workers' ``SpillBuffer`` counters (``disk-write``, ``disk-read``), as
    ``metrics.disk_bytes_written`` / ``disk_bytes_read``. ``processes`` False runs the
    workers in the job's process on the in-process transport (nothing listens on a
    port; the tests' mode): the process-memory thresholds are then off, since they would
    weigh the whole process, and only the spill target applies. ``launcher`` prefixes
    the job's command (a test runs it in a private network namespace); ``fault`` and
    ``dask_config`` are for tests (see ``dask_job.py``)."""
    from strataflow.workloads.api import read_manifest

    if workload not in WORKLOADS:
        raise ValueError(f"the Dask peer runs {', '.join(WORKLOADS)}, not {workload!r}")
    ok, why = available()
    if not ok:
        raise DaskPeerError(f"Dask is not usable here: {why}")
    manifest = read_manifest(data_dir)
    if manifest.get("workload") != workload:
        raise ValueError(f"{data_dir!r} holds {manifest.get('workload')!r} data, not {workload}")
    if manifest.get("format") != "text":
        raise ValueError(f"the Dask peer reads text data (one point a line); {data_dir!r} is {manifest.get('format')}")
    data_file = os.path.abspath(os.path.join(data_dir, manifest["files"][0]))
    data_bytes = os.path.getsize(data_file)
    parts = num_partitions or 4 * workers * threads  # strataflow's K-means: 4 partitions a task slot
    plan = memory_plan(max(1, memory_bytes // workers))
    run_dir = os.path.abspath(os.path.join(work_dir, f"{workload}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
                                                     f"-{time.monotonic_ns() % 10**6}"))
    spill_dir = os.path.join(run_dir, "spill")
    os.makedirs(spill_dir, exist_ok=True)
    config = {"memory.target": plan["target"]}
    if not processes:
        config.update({"memory.spill": False, "memory.pause": False, "memory.terminate": False})
    cfg = {"workload": workload, "data_file": data_file, "dims": manifest["dims"], "k": k, "iterations": iterations,
           "seed": seed, "workers": workers, "threads": threads, "processes": processes,
           "memory_limit": plan["memory_limit"], "spill_dir": spill_dir, "blocksize": max(1, -(-data_bytes // parts)),
           "fault": fault, "progress_file": os.path.join(run_dir, "progress.jsonl"),
           "dask_config": {**{f"distributed.worker.{k2}": v for k2, v in config.items()}, **(dask_config or {})}}
    cfg_path, out_path, log_path = (os.path.join(run_dir, n) for n in ("config.json", "result.json", "dask.log"))
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=1)
    # the directory holding this strataflow package, first on the job's and its workers' path
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, os.pardir))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    argv = [*launcher, sys.executable, "-m", "strataflow.bench.peers.dask_job", cfg_path, out_path]
    t0, started = time.perf_counter(), time.time()
    timed_out = False
    with open(log_path, "w") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=run_dir,
                                start_new_session=True)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        _end_group(proc, started)  # a stalled run, and a dead run's stragglers (workers it left behind)
    wall = time.perf_counter() - t0
    res: dict = {}
    if os.path.exists(out_path):
        with open(out_path) as f:
            res = json.load(f)
    failure = _failure(proc.returncode, res, timed_out, timeout_s, _last_mark(cfg["progress_file"]))
    spill = res.get("spill") or {}
    held = res.get("cached_after_load") or {}  # the workers' blocks after the load (memory: sizeof; disk: pickled)
    metrics = {"disk_bytes_written": int(spill.get("disk-write/bytes", 0)),
               "disk_bytes_read": int(spill.get("disk-read/bytes", 0)),
               "blocks_spilled": int(spill.get("disk-write/count", 0)),
               "blocks_unspilled": int(spill.get("disk-read/count", 0)),
               "spill_write_s": spill.get("disk-write/seconds"), "spill_read_s": spill.get("disk-read/seconds"),
               "spill_dir_bytes_at_end": _dir_bytes(spill_dir), "spill_metrics_workers": spill.get("workers_answering"),
               "worker_peak_rss_bytes": spill.get("peak_rss_bytes")}
    extra: dict[str, Any] = {"points": res.get("points"), "blocks": res.get("blocks"), "init_s": res.get("init_s"),
                             "cluster_start_s": res.get("cluster_start_s"), "workers": res.get("workers"),
                             "versions": res.get("versions"), "k": k}
    result_check = "skipped"
    if failure:
        with open(log_path) as f:
            extra["log_tail"] = f.read()[-3000:]
        extra["error"] = res.get("error")
        result_check = f"failed: {failure}"
    elif check:
        leave_machine()  # in bench's machine: the check holds the whole input and is not the run
        result_check, more = _check(data_dir, manifest, res, k, iterations, seed)
        extra.update(more)
    report = {
        "config": {"workload": workload, "data": data_dir, "peer": "dask", "api": "delayed", "level": "MEMORY_AND_DISK",
                   "memory": int(memory_bytes), "workers": workers, "threads": threads, "processes": processes,
                   "memory_limit": plan["memory_limit"], "target": plan["target"], "num_partitions": parts,
                   "iterations": iterations, "seed": seed, "data_bytes": manifest.get("bytes")},
        "peer": "dask",
        "failure": failure,
        "total_s": None if failure else res["load_s"] + res["fit_s"],
        "failed_after_s": wall if failure else None,
        "load_s": res.get("load_s"),
        "fit_s": res.get("fit_s"),
        "wall_s": wall,
        "iteration_s": res.get("iteration_s") or [],
        "stages": [],
        "metrics": metrics,
        "cached_bytes": held.get("memory_bytes", 0) + held.get("disk_bytes", 0),
        "cached_memory_bytes": held.get("memory_bytes", 0),
        "cached_disk_bytes": held.get("disk_bytes", 0),
        "result_check": result_check,
        "extra": extra,
        "memory_formula": plan["formula"],
        "work_dir": run_dir if failure else None,
    }
    shutil.rmtree(spill_dir, ignore_errors=True)  # the spilled blocks always go; a failed run's logs stay
    if not failure:
        shutil.rmtree(run_dir, ignore_errors=True)
    return report


def _check(data_dir: str, manifest: dict, res: dict, k: int, iterations: int, seed: int) -> tuple[str, dict]:
    """The PySpark peer's checks (:func:`kmeans_check`: k finite centres in the data's
    bounding box, the final centres' cost not above the training cost) and, since the run
    started from our numpy reference's centres, its training cost equal to the
    reference's to a relative 1e-6."""
    from strataflow.bench.peers.result_checks import kmeans_check

    try:
        verdict, extra = kmeans_check(data_dir, manifest, res["centres"], res.get("training_cost"), k, iterations, seed)
    except Exception as exc:  # noqa: BLE001 - the check must not lose the timings
        return f"check failed: {type(exc).__name__}: {exc}", {}
    ref, cost = extra.get("numpy_reference_cost"), res.get("training_cost")
    if verdict == "ok" and ref is not None and cost is not None and abs(cost - ref) > 1e-6 * abs(ref) + 1e-9:
        verdict = f"the training cost ({cost:.9g}) differs from numpy's from the same centres ({ref:.9g})"
    return verdict.replace("Spark", "Dask"), extra
