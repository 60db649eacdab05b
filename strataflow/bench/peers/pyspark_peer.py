"""The PySpark peer: the same workload on the same data files, in PySpark local mode, with
a report shaped like ``strataflow.workloads.runner``'s, so ``bench --peer pyspark`` can put
Spark's rows beside ours.

Workloads: ``kmeans`` (DataFrame + ml.KMeans, and RDD + mllib.KMeans) and ``lr``
(DataFrame + ml.LogisticRegression, and RDD + mllib.LogisticRegressionWithSGD); see
:func:`run_pyspark`. Each run is a subprocess (``spark_job.py`` run with this Python) and
so a fresh JVM: no cached blocks, JIT state or heap carry over from one run to the next.

Memory: our ``memory`` budget is the whole unified pool (execution and storage; storage
may borrow all of it, and execution can evict storage down to ``storage_fraction`` 0.5 of
it). Its counterpart in Spark is the unified region of the UnifiedMemoryManager,
``(heap - 300 MiB reserved) * spark.memory.fraction``, of which
``spark.memory.storageFraction`` (0.5, as ours) is the storage execution cannot evict.
So ``storage_memory_bytes`` (= our ``memory``) is made Spark's unified region:

    heap     = max(MIN_HEAP, ceil_MiB(300 MiB + M / 0.6))
    fraction = M / (heap - 300 MiB)        (0.6 up to the MiB rounding; lower when the
                                            heap was raised to MIN_HEAP)
    Spark unified = (heap - 300 MiB) * fraction = M;  protected storage = M * 0.5

Below MIN_HEAP (1 GiB, Spark's default driver heap) the heap is raised and the fraction
lowered to keep the unified region equal; the report says so. The heap outside the
unified region is Spark's working room (its internals, task objects, the columnar
builders), not cache, and the formula's own heap leaves too little of it: at 584 MiB
(for a 178 MB budget) the DataFrame path died with ``OutOfMemoryError: Java heap space``
while building its columnar cache blocks, and below 450 MiB Spark refuses to start.
Spark's own figure (``Maximum Memory`` of its block manager, from the event log) is
reported beside ours as a check. Budgets of a few MB are below what Spark's execution
side needs (its aggregations ask for 256 KB arrays and 1 MB pages per task): at 100 KB the
fit fails with UNABLE_TO_ACQUIRE_MEMORY; 8 MB works.

Cache events: the event log with ``spark.eventLog.logBlockUpdates.enabled`` has one
``SparkListenerBlockUpdated`` per block status the block manager reports to its master:
when a block is stored, when it is dropped from memory (``dropFromMemory``: to disk, or
discarded for a memory-only level) and when a block is removed singly. Replaying them per
block (see :func:`block_metrics`) gives blocks and bytes dropped, blocks written straight
to disk, disk bytes written, and re-caching as far as Spark shows it: it re-caches a
MEMORY_AND_DISK block read from disk without a report, so a re-cache is seen when that
block is dropped again (a drop report for a block last reported on disk only).
"""

from __future__ import annotations

import glob
import json
import math
import os
import shutil
import subprocess
import sys
import time
from typing import Any

__all__ = ["available", "run_pyspark", "heap_plan", "block_metrics", "read_event_log", "PeerError",
           "RESERVED", "MIN_HEAP", "MEMORY_FRACTION", "STORAGE_FRACTION"]

MiB = 1 << 20
RESERVED = 300 * MiB  # Spark's RESERVED_SYSTEM_MEMORY_BYTES
MEMORY_FRACTION = 0.6  # spark.memory.fraction's default
STORAGE_FRACTION = 0.5  # spark.memory.storageFraction's default, and our MemoryManager's
MIN_HEAP = 1024 * MiB  # Spark's default spark.driver.memory (see heap_plan)
PATHS = ("df", "rdd")
LEVELS = ("NONE", "MEMORY_ONLY", "MEMORY_ONLY_SER", "MEMORY_AND_DISK", "MEMORY_AND_DISK_SER", "DISK_ONLY",
          "OFF_HEAP")
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


# -- availability -----------------------------------------------------------------------------
_AVAILABLE: tuple[bool, str] | None = None


def _java_version(java: str) -> tuple[int | None, str]:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"cannot run {java}: {exc}"
    text = (out.stderr or out.stdout).strip()
    first = text.splitlines()[0] if text else ""
    if out.returncode != 0 or '"' not in first:
        return None, f"{java} -version failed: {first or out.returncode}"
    ver = first.split('"')[1]
    major = ver.split(".")[1] if ver.startswith("1.") else ver.split(".")[0].split("-")[0]
    try:
        return int(major), first
    except ValueError:
        return None, f"cannot read the Java version from {first!r}"


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def available() -> tuple[bool, str]:
    """Whether pyspark (>= 3.5) and a Java it supports are usable here, and if not, why."""
    global _AVAILABLE
    if _AVAILABLE is not None:
        return _AVAILABLE
    from importlib import metadata, util

    if util.find_spec("pyspark") is None:
        _AVAILABLE = (False, "pyspark is not installed (pip install 'strataflow[peers]')")
        return _AVAILABLE
    try:
        version = metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        import pyspark

        version = pyspark.__version__
    nums = tuple(int(x) for x in version.split(".")[:2] if x.isdigit())
    if nums < (3, 5):
        _AVAILABLE = (False, f"pyspark {version} is older than 3.5")
        return _AVAILABLE
    java = _java()
    if java is None:
        _AVAILABLE = (False, "no java on PATH or in JAVA_HOME (PySpark needs Java 17)")
        return _AVAILABLE
    major, info = _java_version(java)
    if major is None:
        _AVAILABLE = (False, info)
        return _AVAILABLE
    need = 17 if nums >= (4, 0) else 8
    if major < need:
        _AVAILABLE = (False, f"pyspark {version} needs Java {need}+, found {info}")
        return _AVAILABLE
    _AVAILABLE = (True, f"pyspark {version}, {info}")
    return _AVAILABLE


# -- memory sizing ----------------------------------------------------------------------------
def heap_plan(storage_memory_bytes: int, min_heap: int = MIN_HEAP) -> dict:
    """The JVM heap and memory fraction that make Spark's unified memory region equal our
    unified budget ``storage_memory_bytes``; ``formula`` states it for the report."""
    m = int(storage_memory_bytes)
    if m <= 0:
        raise ValueError(f"storage_memory_bytes must be > 0, got {m}")
    heap = math.ceil((RESERVED + m / MEMORY_FRACTION) / MiB) * MiB
    raised = heap < min_heap
    if raised:
        heap = math.ceil(min_heap / MiB) * MiB
    # +0.5: Spark truncates (heap - reserved) * fraction to a long; land on m, not m - 1
    fraction = (m + 0.5) / (heap - RESERVED)
    unified = int((heap - RESERVED) * fraction)
    formula = (f"Spark unified memory = (heap - 300 MiB reserved) x spark.memory.fraction = "
               f"({heap // MiB} MiB - 300 MiB) x {fraction:.6f} = {unified} B = our memory budget "
               f"(storage_memory_bytes {m} B); heap = max({min_heap // MiB} MiB, ceil_MiB(300 MiB + budget / 0.6)) "
               f"= {heap // MiB} MiB; protected storage = unified x spark.memory.storageFraction 0.5 = "
               f"{int(unified * STORAGE_FRACTION)} B (ours: budget x 0.5)")
    if raised:
        formula += (f"; heap raised to the {min_heap // MiB} MiB minimum, Spark's default driver heap "
                    f"(300 MiB + budget / 0.6 = {(RESERVED + m / MEMORY_FRACTION) / MiB:.0f} MiB leaves Spark too "
                    f"little heap outside the unified region to run), spark.memory.fraction lowered from 0.6 to "
                    f"{fraction:.6f} to keep the unified region equal to the budget")
    return {"heap_bytes": heap, "driver_memory": f"{heap // MiB}m", "memory_fraction": fraction,
            "storage_fraction": STORAGE_FRACTION, "unified_bytes": unified,
            "storage_protected_bytes": int(unified * STORAGE_FRACTION), "heap_raised": raised, "formula": formula}


def _level_flags(level: str) -> dict | None:
    """Our level's flags as a Spark StorageLevel (None: do not persist). OFF_HEAP is Spark's
    own OFF_HEAP (memory off-heap, then disk, serialized)."""
    name = str(level).upper().replace("-", "_")
    if name not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if name == "NONE":
        return None
    if name == "OFF_HEAP":
        return {"use_disk": True, "use_memory": True, "off_heap": True, "deserialized": False}
    return {"use_disk": "DISK" in name, "use_memory": "MEMORY" in name, "off_heap": False,
            "deserialized": "MEMORY" in name and not name.endswith("_SER")}


# -- event log --------------------------------------------------------------------------------
def read_event_log(path: str) -> list[dict]:
    events = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                events.append(json.loads(line))
    return events


def _rdd_id(block_id: str) -> int | None:
    parts = block_id.split("_")
    return int(parts[1]) if len(parts) == 3 and parts[0] == "rdd" else None


def block_metrics(events: list[dict]) -> dict:
    """Cache activity replayed from ``SparkListenerBlockUpdated`` events, per rdd block.

    Each event is a status the block manager reported: ``Use Memory`` / ``Use Disk`` say
    where the block is now; ``Memory Size`` is its memory size, or, on a drop from memory,
    the size dropped (Spark reports ``max(memSize, droppedMemorySize)``, so a drop shows
    ``Use Memory: false`` with a memory size). Against the block's previous state:

    - none -> in memory: stored in memory (``blocks_stored_memory``);
    - none -> on disk only: stored straight to disk (``blocks_stored_disk``: a
      MEMORY_AND_DISK block with no room in memory, or any DISK_ONLY block);
    - in memory -> not in memory: dropped from memory (``blocks_dropped``,
      ``bytes_dropped``), to disk (``blocks_dropped_to_disk``) or, for a memory-only level,
      discarded (``blocks_discarded``);
    - on disk only -> on disk only with a dropped memory size: the block had been read from
      disk and re-cached in memory, which Spark does not report, and is now dropped again:
      one re-cache (``blocks_recached``, ``bytes_recached``) and one drop;
    - on disk only -> in memory: a reported re-cache (``blocks_recached``).

    ``disk_bytes_written`` adds a block's disk size whenever it goes from not on disk to on
    disk. Blocks of an unpersisted RDD are forgotten (``removeRdd`` removes them without
    reports). ``blocks_recached`` is a lower bound: a re-cached block that is never dropped
    again leaves no trace in the log."""
    state: dict[str, dict] = {}
    m = dict(blocks_stored_memory=0, blocks_stored_disk=0, blocks_dropped=0, bytes_dropped=0,
             blocks_dropped_to_disk=0, blocks_discarded=0, blocks_recached=0, bytes_recached=0,
             disk_bytes_written=0, block_updates=0)
    per_rdd: dict[int, dict] = {}
    empty = {"mem": False, "disk": False, "mem_size": 0, "disk_size": 0}
    for ev in events:
        kind = ev.get("Event")
        if kind == "SparkListenerUnpersistRDD":
            rid = ev.get("RDD ID")
            for bid in [b for b in state if _rdd_id(b) == rid]:
                del state[bid]
            continue
        if kind != "SparkListenerBlockUpdated":
            continue
        info = ev["Block Updated Info"]
        bid = info["Block ID"]
        rid = _rdd_id(bid)
        if rid is None:
            continue
        m["block_updates"] += 1
        lvl = info.get("Storage Level", {})
        mem, disk = int(info.get("Memory Size", 0)), int(info.get("Disk Size", 0))
        new = {"mem": bool(lvl.get("Use Memory")), "disk": bool(lvl.get("Use Disk")), "mem_size": mem,
               "disk_size": disk}
        prev = state.get(bid, empty)
        r = per_rdd.setdefault(rid, {"rdd": rid, "blocks_stored_memory": 0, "blocks_stored_disk": 0,
                                     "blocks_dropped": 0, "bytes_dropped": 0, "blocks_recached": 0})

        def dropped(size: int) -> None:
            m["blocks_dropped"] += 1
            m["bytes_dropped"] += size
            r["blocks_dropped"] += 1
            r["bytes_dropped"] += size
            m["blocks_dropped_to_disk" if new["disk"] else "blocks_discarded"] += 1

        if new["disk"] and not prev["disk"]:
            m["disk_bytes_written"] += disk
        if not prev["mem"] and not prev["disk"]:
            if new["mem"]:
                m["blocks_stored_memory"] += 1
                r["blocks_stored_memory"] += 1
            elif new["disk"]:
                m["blocks_stored_disk"] += 1
                r["blocks_stored_disk"] += 1
        elif prev["mem"] and not new["mem"]:
            dropped(mem or prev["mem_size"])
        elif not prev["mem"] and not new["mem"] and mem > 0:
            m["blocks_recached"] += 1
            m["bytes_recached"] += mem
            r["blocks_recached"] += 1
            dropped(mem)
        elif not prev["mem"] and new["mem"]:
            m["blocks_recached"] += 1
            m["bytes_recached"] += mem
            r["blocks_recached"] += 1
        state[bid] = new if new["mem"] or new["disk"] else empty
    m["per_rdd"] = sorted(per_rdd.values(), key=lambda r: r["rdd"])
    return m


def _event_summary(events: list[dict], marks: dict, iteration_job: str = "collectAsMap at KMeans.scala") -> dict:
    """Stages, jobs, task totals, and the iteration jobs' times from the event log."""
    stages, jobs, names = [], {}, {}
    tasks = dict(gc_s=0.0, executor_run_s=0.0, disk_bytes_spilled=0, memory_bytes_spilled=0,
                 shuffle_bytes_written=0, input_bytes=0, tasks=0)
    block_manager_max = None
    rdd_names: dict[int, str] = {}
    for ev in events:
        kind = ev.get("Event")
        if kind == "SparkListenerBlockManagerAdded" and block_manager_max is None:
            block_manager_max = {"max_memory": ev.get("Maximum Memory"), "max_onheap": ev.get("Maximum Onheap Memory"),
                                 "max_offheap": ev.get("Maximum Offheap Memory")}
        elif kind == "SparkListenerStageCompleted":
            si = ev["Stage Info"]
            sub, done = si.get("Submission Time"), si.get("Completion Time")
            for rdd in si.get("RDD Info", []):
                rdd_names[rdd["RDD ID"]] = " ".join(rdd.get("Name", "").split())[:100]
            stages.append({"name": si.get("Stage Name", ""), "seconds": (done - sub) / 1000 if sub and done else None,
                           "tasks": si.get("Number of Tasks"), "stage_id": si.get("Stage ID"),
                           "submitted_ms": sub, "completed_ms": done})
        elif kind == "SparkListenerJobStart":
            infos = ev.get("Stage Infos", [])
            last = max(infos, key=lambda s: s.get("Stage ID", -1)) if infos else {}
            names[ev["Job ID"]] = last.get("Stage Name", "")
            jobs[ev["Job ID"]] = {"job_id": ev["Job ID"], "name": last.get("Stage Name", ""),
                                  "submitted_ms": ev.get("Submission Time")}
        elif kind == "SparkListenerJobEnd" and ev.get("Job ID") in jobs:
            j = jobs[ev["Job ID"]]
            j["completed_ms"] = ev.get("Completion Time")
            j["result"] = ev.get("Job Result", {}).get("Result")
            if j.get("submitted_ms") and j["completed_ms"]:
                j["seconds"] = (j["completed_ms"] - j["submitted_ms"]) / 1000
        elif kind == "SparkListenerTaskEnd":
            tm = ev.get("Task Metrics") or {}
            tasks["tasks"] += 1
            tasks["gc_s"] += tm.get("JVM GC Time", 0) / 1000
            tasks["executor_run_s"] += tm.get("Executor Run Time", 0) / 1000
            tasks["disk_bytes_spilled"] += tm.get("Disk Bytes Spilled", 0)
            tasks["memory_bytes_spilled"] += tm.get("Memory Bytes Spilled", 0)
            tasks["shuffle_bytes_written"] += (tm.get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written", 0)
            tasks["input_bytes"] += (tm.get("Input Metrics") or {}).get("Bytes Read", 0)
    job_list = sorted(jobs.values(), key=lambda j: j["job_id"])
    for j in job_list:
        s = j.get("submitted_ms") or 0
        j["phase"] = ("load" if s < marks.get("load_end", 0) else
                      "fit" if s < marks.get("fit_end", float("inf")) else "after")
    iters = [j for j in job_list if j["phase"] == "fit" and j["name"].startswith(iteration_job) and "seconds" in j]
    return {"stages": stages, "jobs": job_list, "iteration_jobs": iters, "tasks": tasks,
            "block_manager": block_manager_max, "rdd_names": rdd_names}


# -- the run ----------------------------------------------------------------------------------
def _spark_conf(plan: dict, work_dir: str, parallelism: int, level_flags: dict | None, off_heap_bytes: int,
                num_partitions: int | None, data_bytes: int) -> dict:
    conf = {
        "spark.driver.memory": plan["driver_memory"],
        "spark.memory.fraction": repr(plan["memory_fraction"]),
        "spark.memory.storageFraction": repr(plan["storage_fraction"]),
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": "file://" + os.path.join(work_dir, "eventlog"),
        "spark.eventLog.logBlockUpdates.enabled": "true",
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
        "spark.local.dir": os.path.join(work_dir, "local"),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.default.parallelism": str(parallelism),
        "spark.sql.shuffle.partitions": str(parallelism),
        "spark.driver.extraJavaOptions": "-Djava.io.tmpdir=" + os.path.join(work_dir, "local"),
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.python.worker.reuse": "true",
    }
    if level_flags and level_flags["off_heap"]:
        conf["spark.memory.offHeap.enabled"] = "true"
        conf["spark.memory.offHeap.size"] = str(int(off_heap_bytes))
    if num_partitions:
        conf["spark.sql.files.maxPartitionBytes"] = str(max(1 << 20, -(-data_bytes // num_partitions)))
    return conf


def _kmeans_check(data_dir: str, manifest: dict, centres, training_cost: float | None, k: int, iterations: int,
                 seed: int) -> tuple[str, dict]:
    """What can be checked without Spark's random init (an XORShift sample we cannot
    replay): ``k`` finite centres inside the data's bounding box, and the cost of Spark's
    final centres, computed with numpy on the same data, not above Spark's training cost
    (the cost of the centres before the last update: a Lloyd step never raises it), to a
    relative 1e-6. The cost of our numpy K-means (our init, same k and iterations) is
    reported beside it, not compared: different inits reach different local optima."""
    import numpy as np

    from strataflow.workloads.kmeans import init_centres, kmeans_numpy, kmeans_partition
    from strataflow.workloads.kmeans_job import read_all_points

    data = read_all_points(data_dir, manifest)
    c = np.asarray(centres, dtype=np.float64)
    _, _, final_cost = kmeans_partition(data, c)
    ref = kmeans_numpy(data, init_centres(data, k, seed), iterations)
    extra = {"final_cost_numpy": float(final_cost), "numpy_reference_cost": float(ref.cost),
             "cost_ratio_vs_numpy_reference": float(final_cost / ref.cost) if ref.cost else None}
    lo, hi = data.min(axis=0), data.max(axis=0)
    if c.shape != (k, data.shape[1]):
        return f"Spark returned centres of shape {c.shape}, expected {(k, data.shape[1])}", extra
    if not np.isfinite(c).all():
        return "Spark's centres are not all finite", extra
    if ((c < lo - 1e-9 * np.abs(lo)) | (c > hi + 1e-9 * np.abs(hi))).any():
        return "a Spark centre lies outside the data's bounding box", extra
    if training_cost is not None and final_cost > training_cost * (1 + 1e-6) + 1e-9:
        return (f"the cost of Spark's final centres ({final_cost:.6g}) exceeds its training cost "
                f"({training_cost:.6g})"), extra
    return "ok", extra


def _lr_check(data_dir: str, manifest: dict, path: str, res: dict, iterations: int) -> tuple[str, dict]:
    """``rdd`` (LogisticRegressionWithSGD: our algorithm, full-batch gradient descent from
    zero with step 1/sqrt(i)): the weights equal our numpy loop's to a relative 1e-6.
    ``df`` (ml.LogisticRegression, L-BFGS: another algorithm): the mean logistic loss at
    Spark's weights, computed with numpy, equals the last value of Spark's objective
    history (relative 1e-6) and is below the loss at the zero start, log 2. Our numpy
    gradient descent's loss is reported beside it."""
    import numpy as np

    from strataflow.workloads.glm import read_all_points, train_numpy

    x, y = read_all_points(data_dir, manifest)
    w = np.asarray(res["weights"], dtype=np.float64)
    z = x @ w
    loss = float(np.mean(np.logaddexp(0.0, -z) + (1.0 - y) * z))
    ref = train_numpy(x, y, "lr", iterations, step=1.0, reg=0.0)
    extra = {"loss": loss, "accuracy": float(np.mean((z > 0) == (y > 0.5))), "numpy_gd_loss": ref.loss,
             "weights_norm": float(np.linalg.norm(w))}
    if res.get("objective_history"):
        extra["objective_history"] = res["objective_history"]
    if w.shape != ref.weights.shape or not np.isfinite(w).all():
        return f"Spark returned weights of shape {w.shape} (finite: {bool(np.isfinite(w).all())})", extra
    if path == "rdd":
        if not np.allclose(w, ref.weights, rtol=1e-6, atol=1e-9):
            return f"weights differ from our numpy gradient descent by up to {float(np.abs(w - ref.weights).max()):.3g}", extra
        return "ok", extra
    hist = res.get("objective_history") or []
    if hist and not np.isclose(loss, hist[-1], rtol=1e-6):
        return f"the numpy loss at Spark's weights ({loss:.9g}) differs from Spark's final objective ({hist[-1]:.9g})", extra
    if not loss < math.log(2.0):
        return f"the loss at Spark's weights ({loss:.6g}) is not below the loss at zero (log 2)", extra
    return "ok", extra


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
    flags = _level_flags(level)
    plan = heap_plan(storage_memory_bytes, min_heap)

    os.makedirs(work_dir, exist_ok=True)
    run_dir = os.path.abspath(os.path.join(work_dir, f"{workload}-{path}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
                                                     f"-{time.monotonic_ns() % 10**6}"))
    for sub in ("eventlog", "local"):
        os.makedirs(os.path.join(run_dir, sub), exist_ok=True)
    data_bytes = manifest.get("bytes") or os.path.getsize(data_file)
    conf = _spark_conf(plan, run_dir, parallelism, flags, storage_memory_bytes, num_partitions, data_bytes)
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
    summary = _event_summary(events, res["marks"], iteration_job)
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
        try:
            if workload == "kmeans":
                result_check, more = _kmeans_check(data_dir, manifest, res["centres"], res.get("training_cost"), k,
                                                    iterations, seed)
            else:
                result_check, more = _lr_check(data_dir, manifest, path, res, iterations)
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
