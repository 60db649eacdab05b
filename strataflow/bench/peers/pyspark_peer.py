"""The PySpark peer: the same workload on the same data files, in PySpark local mode, with
a report shaped like ``strataflow.workloads.runner``'s, so ``bench --peer pyspark`` can put
Spark's rows beside ours.

Workloads: ``kmeans`` (DataFrame + ml.KMeans, and RDD + mllib.KMeans) and ``lr``
(DataFrame + ml.LogisticRegression, and RDD + mllib.LogisticRegressionWithSGD); see
:func:`run_pyspark`. Each run is a subprocess (``spark_job.py`` run with this Python) and
so a fresh JVM: no cached blocks, JIT state or heap carry over from one run to the next.

How Spark is sized and configured for a run (its heap and memory fraction, our storage
levels as its flags) is in ``spark_settings.py``; how the event log is read back into
block metrics and job times, in ``spark_event_log.py``; whether pyspark and Java are
usable, in ``pyspark_available.py``; the result checks, in ``result_checks.py``. Their
public names are importable from here as before.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

from strataflow.bench.machine import leave_machine
from strataflow.bench.peers.pyspark_available import available
from strataflow.bench.peers.result_checks import kmeans_check, lr_check
from strataflow.bench.peers.spark_event_log import block_metrics, event_summary, read_event_log
from strataflow.bench.peers.spark_settings import (LEVELS, MEMORY_FRACTION, MIN_HEAP, RESERVED, STORAGE_FRACTION, MiB, heap_plan,
                             level_flags, spark_conf)  # noqa: F401 (LEVELS, MiB: re-exported)

__all__ = ["available", "run_pyspark", "heap_plan", "block_metrics", "read_event_log", "PeerError",
           "RESERVED", "MIN_HEAP", "MEMORY_FRACTION", "STORAGE_FRACTION"]

PATHS = ("df", "rdd")
_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark_job.py")
WORKLOADS = ("kmeans", "lr")
# (workload, path) -> the iteration jobs' name (their last stage's call site) and what one is
_ITERATION_JOBS = {
    ("kmeans", "df"): ("collectAsMap at KMeans.scala", "one per Lloyd step"),
    ("kmeans", "rdd"): ("collectAsMap at KMeans.scala", "one per Lloyd step"),
    ("lr", "df"): ("treeAggregate at RDDLossFunction.scala",
                   "one per loss evaluation; L-BFGS evaluates once per iteration plus its line search's extra steps "
                   "and the initial point"),
    ("lr", "rdd"): ("treeAggregate at GradientDescent.scala",
                    "one per gradient step; the loop's extra last pass (Spark 4's GradientDescent runs iterations + 1 "
                    "passes, the last for the loss at the final weights only) is extra.final_loss_pass_s"),
}


class PeerError(RuntimeError):
    """The PySpark run failed (the message ends with the tail of its log)."""


def run_pyspark(workload: str, data_dir: str, *, path: str, level: str, storage_memory_bytes: int,
                iterations: int = 5, parallelism: int = 2, seed: int = 0, work_dir: str, k: int = 10,
                check: bool = True, num_partitions: int | None = None, ml_solver: str = "auto",
                min_heap: int = MIN_HEAP, timeout_s: float | None = 4 * 3600, keep_work: bool = False) -> dict:
    """Runs ``workload`` on the data in ``data_dir`` in PySpark local mode
    (``local[parallelism]``), in a subprocess with a fresh JVM, and returns a report like
    our runner's (``config, total_s, load_s, iteration_s, stages, metrics, result_check,
    extra, peer, heap_formula``). ``storage_memory_bytes`` is our unified ``memory``
    budget; see :func:`heap_plan`.

    ``kmeans``, ``path`` ``df``: spark.read.csv -> VectorAssembler -> persist -> count ->
    ml.KMeans (the JVM loop). ``ml_solver`` is ml.KMeans's ``solver``: ``row`` is mllib's
    loop, which caches the points' norms at MEMORY_AND_DISK beside the persisted
    DataFrame; ``block`` blockifies the vectors for GEMM and caches those blocks at
    MEMORY_AND_DISK; the default ``auto`` lets Spark choose (``config.ml_solver_used``
    says which ran). ``rdd``: sc.textFile -> parse to DenseVector in Python -> persist ->
    count -> mllib.KMeans.train, whose Python stub caches the JVM copy of the vectors at
    MEMORY_AND_DISK (whatever the level: ours applies to the Python RDD, read once by that
    copy), and KMeans caches their norms.

    ``lr``, ``df``: the same reader on ``label f1 ... fd`` lines, ml.LogisticRegression
    (L-BFGS: the DataFrame API has no gradient descent; ``maxIter`` = iterations, no
    intercept, penalty or standardization, tol 0). ``rdd``: LabeledPoints parsed in Python,
    mllib's LogisticRegressionWithSGD, deprecated but exactly our algorithm (full batch,
    step 1/sqrt(i), no penalty), so its weights are checked against ours.

    ``num_partitions`` None keeps Spark's input splits (128 MB for the DataFrame reader,
    32 MB local-file blocks for textFile). ``total_s`` = load + fit (what our ``total_s``
    covers: reading, caching, iterating), without the JVM's start (``jvm_start_s``,
    reported apart). ``iteration_s``: the durations (submission to completion) of the
    iteration jobs in the event log (``iteration_source`` says which jobs)."""
    from strataflow.workloads.api import read_manifest

    if workload not in WORKLOADS:
        raise ValueError(f"the PySpark peer runs {', '.join(WORKLOADS)}, not {workload!r}")
    if path not in PATHS:
        raise ValueError(f"path must be one of {', '.join(PATHS)}, got {path!r}")
    ok, why = available()
    if not ok:
        raise PeerError(f"PySpark is not usable here: {why}")
    manifest = read_manifest(data_dir)
    if manifest.get("workload") != workload:
        raise ValueError(f"{data_dir!r} holds {manifest.get('workload')!r} data, not {workload}")
    if manifest.get("format") != "text":
        raise ValueError(f"the PySpark peer reads text data (one point a line); {data_dir!r} is {manifest.get('format')}")
    data_file = os.path.abspath(os.path.join(data_dir, manifest["files"][0]))
    flags = level_flags(level)
    plan = heap_plan(storage_memory_bytes, min_heap)

    os.makedirs(work_dir, exist_ok=True)
    run_dir = os.path.abspath(os.path.join(work_dir, f"{workload}-{path}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
                                                     f"-{time.monotonic_ns() % 10**6}"))
    for sub in ("eventlog", "local"):
        os.makedirs(os.path.join(run_dir, sub), exist_ok=True)
    data_bytes = manifest.get("bytes") or os.path.getsize(data_file)
    conf = spark_conf(plan, run_dir, parallelism, flags, storage_memory_bytes, num_partitions, data_bytes)
    cfg = {"workload": workload, "path": path, "data_file": data_file, "dims": manifest["dims"], "k": k,
           "iterations": iterations, "seed": seed, "parallelism": parallelism, "level": flags,
           "num_partitions": num_partitions, "ml_solver": ml_solver, "conf": conf,
           "app_name": f"strataflow-peer-{workload}-{path}"}
    cfg_path, out_path, log_path = (os.path.join(run_dir, n) for n in ("config.json", "result.json", "spark.log"))
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=1)
    env = {key: v for key, v in os.environ.items() if key not in ("SPARK_LOCAL_DIRS", "PYSPARK_SUBMIT_ARGS")}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        try:
            proc = subprocess.run([sys.executable, _SCRIPT, cfg_path, out_path], stdout=log, stderr=subprocess.STDOUT,
                                  env=env, cwd=run_dir, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise PeerError(f"PySpark {workload}/{path} timed out after {timeout_s} s; log: {log_path}") from exc
    wall = time.perf_counter() - t0
    res = {}
    if os.path.exists(out_path):
        with open(out_path) as f:
            res = json.load(f)
    if proc.returncode != 0 or not res.get("ok"):
        shutil.rmtree(os.path.join(run_dir, "local"), ignore_errors=True)  # keep the logs, not the blocks
        with open(log_path) as f:
            tail = f.read()[-3000:]
        raise PeerError(f"PySpark {workload}/{path} failed (exit {proc.returncode}): "
                        f"{(res.get('error') or '').strip()[-2000:]}\n--- log tail ({log_path}) ---\n{tail}")

    logs = [p for p in glob.glob(os.path.join(run_dir, "eventlog", "*")) if not p.endswith(".crc")]
    events = read_event_log(logs[0]) if logs else []
    iteration_job, per_job = _ITERATION_JOBS[(workload, path)]
    summary = event_summary(events, res["marks"], iteration_job)
    blocks = block_metrics(events)
    iter_jobs = summary["iteration_jobs"]
    final_pass = None
    if (workload, path) == ("lr", "rdd") and len(iter_jobs) == iterations + 1:
        final_pass = iter_jobs[-1]["seconds"]
        iter_jobs = iter_jobs[:-1]
    if iter_jobs:
        iteration_s = [j["seconds"] for j in iter_jobs]
        iter_source = f"event log: durations of the '{iteration_job}' jobs ({per_job})"
    else:
        n = res.get("num_iter") or iterations
        iteration_s = [res["fit_s"] / n] * n
        iter_source = "no iteration jobs in the event log: fit time divided by the iteration count"
    fit_jobs = [j for j in summary["jobs"] if j["phase"] == "fit"]
    first_iter = iter_jobs[0]["submitted_ms"] if iter_jobs else None
    init_s = sum(j.get("seconds", 0) for j in fit_jobs if first_iter and j["submitted_ms"] < first_iter)
    after_iter_s = sum(j.get("seconds", 0) for j in fit_jobs if iter_jobs and j["submitted_ms"] > iter_jobs[-1]["submitted_ms"])

    def points_storage(entries):
        mem = sum(e["memory_bytes"] for e in entries)
        disk = sum(e["disk_bytes"] for e in entries)
        return mem, disk

    load_mem, load_disk = points_storage(res.get("storage_after_load", []))
    end_mem, end_disk = points_storage(res.get("storage_end", []))
    metrics = {key: v for key, v in blocks.items() if key != "per_rdd"}
    metrics.update({"gc_s": summary["tasks"]["gc_s"], "executor_run_s": summary["tasks"]["executor_run_s"],
                    "disk_bytes_spilled": summary["tasks"]["disk_bytes_spilled"],
                    "memory_bytes_spilled": summary["tasks"]["memory_bytes_spilled"],
                    "shuffle_bytes_written": summary["tasks"]["shuffle_bytes_written"],
                    "input_bytes": summary["tasks"]["input_bytes"], "tasks": summary["tasks"]["tasks"],
                    "jobs": len(summary["jobs"])})
    per_rdd = blocks["per_rdd"]
    for r in per_rdd:
        r["name"] = summary["rdd_names"].get(r["rdd"], "")

    extra: dict[str, Any] = {"num_iter": res.get("num_iter", len(iter_jobs) or None), "points": res.get("points"),
                             "init_s": init_s, "after_iterations_s": after_iter_s}
    if workload == "kmeans":
        extra.update(cost=res.get("training_cost"), k=k)
    if final_pass is not None:
        extra["final_loss_pass_s"] = final_pass
    result_check = "ok"
    if check:
        leave_machine()  # in bench's machine: the check holds the whole input and is not the run
        try:
            if workload == "kmeans":
                result_check, more = kmeans_check(data_dir, manifest, res["centres"], res.get("training_cost"), k,
                                                   iterations, seed)
            else:
                result_check, more = lr_check(data_dir, manifest, path, res, iterations)
            extra.update(more)
        except Exception as exc:  # the check must not lose Spark's timings
            result_check = f"check failed: {type(exc).__name__}: {exc}"
    if workload == "kmeans" and iter_jobs and len(iter_jobs) < iterations:
        extra["note"] = (f"Spark stopped after {len(iter_jobs)} of {iterations} iterations: with tol/epsilon 0 it "
                         f"still stops when no centre moves at all")
    bm = summary["block_manager"] or {}
    config = {"workload": workload, "data": data_dir, "peer": "pyspark", "path": path,
              "api": "dataframe" if path == "df" else "rdd", "level": str(level).upper(), "policy": "spark",
              "memory": int(storage_memory_bytes), "parallelism": parallelism, "iterations": iterations, "seed": seed,
              "k": k if workload == "kmeans" else None, "data_bytes": manifest.get("bytes"), "spark_version": res.get("spark_version"),
              "driver_memory": plan["driver_memory"], "spark.memory.fraction": plan["memory_fraction"],
              "spark.memory.storageFraction": plan["storage_fraction"], "heap_raised": plan["heap_raised"],
              "spark_unified_bytes_planned": plan["unified_bytes"],
              "spark_unified_bytes_observed": bm.get("max_memory"), "jvm_max_memory": res.get("jvm_max_memory"),
              "ml_solver": ml_solver if path == "df" else None,
              "ml_solver_used": (("block" if any("training blocks" in n for n in summary["rdd_names"].values())
                                  else "row") if path == "df" else None),
              "num_partitions": num_partitions,
              "partitions": max((e["partitions"] for e in res.get("storage_after_load", [])), default=None)}
    load_s, fit_s = res["load_s"], res["fit_s"]
    report = {
        "config": config,
        "peer": "pyspark",
        "total_s": load_s + fit_s,
        "load_s": load_s,
        "fit_s": fit_s,
        "jvm_start_s": res.get("jvm_start_s"),
        "wall_s": wall,
        "iteration_s": iteration_s,
        "iteration_source": iter_source,
        "phases": [{"name": "load (read, parse, persist, count)", "seconds": load_s},
                   {"name": "fit", "seconds": fit_s}],
        "stages": [{"name": s["name"], "seconds": s["seconds"], "tasks": s["tasks"]} for s in summary["stages"]],
        "jobs": [{k2: j.get(k2) for k2 in ("job_id", "name", "phase", "seconds")} for j in summary["jobs"]],
        "metrics": metrics,
        "metrics_per_rdd": per_rdd,
        "cached_bytes": load_mem + load_disk,
        "cached_memory_bytes": load_mem,
        "cached_disk_bytes": load_disk,
        "cached_bytes_end": end_mem + end_disk,
        "storage": res.get("storage_after_load", []),
        "storage_end": res.get("storage_end", []),
        "result_check": result_check,
        "extra": extra,
        "heap_formula": plan["formula"],
        "blocks_derivation": ("SparkListenerBlockUpdated events (spark.eventLog.logBlockUpdates.enabled) replayed per "
                              "rdd block: in memory -> not in memory = dropped (bytes: the reported dropped memory "
                              "size); none -> disk only = stored straight to disk; disk only -> a drop report = "
                              "re-cached from disk (unreported by Spark) and dropped again; re-caches are a lower "
                              "bound"),
        "event_log": logs[0] if logs and keep_work else None,
        "work_dir": run_dir if keep_work else None,
    }
    # the local dirs (spilled blocks, shuffle files) always go; the logs unless kept
    shutil.rmtree(os.path.join(run_dir, "local"), ignore_errors=True)
    if not keep_work:
        shutil.rmtree(run_dir, ignore_errors=True)
    return report
