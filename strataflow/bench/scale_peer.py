"""The peers' series for ``bench scale --peer pyspark,dask``: K-means on the same inputs at
the same budget, smallest size first, each run under a time limit (``--time-limit``,
default :data:`PEER_TIME_LIMIT` seconds: the peer's subprocess is killed, so a run never
hangs). PySpark runs DataFrame + ml.KMeans (the peer's ``df`` path); Dask its delayed
K-means on a LocalCluster of ``--parallelism`` one-thread workers sharing the budget
(``peers/dask_peer.py``). A run that fails (Spark's OutOfMemoryError, Dask's
KilledWorker) or passes the limit is a row saying so (``finished`` 0, ``outcome``), and
the engine's larger sizes are not tried: they would not finish either. The peers have no
word count, so that series is ours alone.

With ``--machine-memory`` each run is a fresh Python in a fresh machine of that size (the
JVM, or Dask's scheduler and workers, inherit it), as ours are
(:func:`strataflow.bench.scale.in_machine`); an OOM kill is a failure like a time limit.

Spark's event log reports the cache's disk writes, shuffle writes and spills, not the
cache's disk reads: its bytes moved are a lower bound beside ours. Dask's workers count
their spill writes and reads (``SpillBuffer``): both are in its bytes moved.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess

from strataflow.bench.scale import GB, ITERATIONS, LEVEL, MB, ScaleRun, in_machine
from strataflow.workloads.api import read_manifest

__all__ = ["peer_runs", "peer_row", "attempt_row", "failure_cause", "PEER_TIME_LIMIT", "ENGINES"]

PEER_TIME_LIMIT = 1200.0
#: each engine's row key (``peer``, ``api``) and how its series is described
ENGINES = {"pyspark": ("pyspark-df", "dataframe", "PySpark"), "dask": ("dask", "delayed", "Dask")}


def peer_row(report: dict, key: dict, parallelism: int, checked: bool) -> dict:
    """The peer's run as a scale row (the same fields where Spark reports them)."""
    m = report.get("metrics", {})
    size = int(report["config"].get("data_bytes") or 0)
    gb = size / GB
    written = int(m.get("disk_bytes_written") or 0)
    read = int(m.get("disk_bytes_read") or 0)  # Dask's spill reads; Spark logs none
    shuffle = int(m.get("shuffle_bytes_written") or 0)
    spill = int(m.get("disk_bytes_spilled") or 0)
    moved = written + read + shuffle + spill
    total = report["total_s"]
    row = {**key, "finished": 1, "input_gb": gb, "memory_mb": report["config"]["memory"] / MB, "total_s": total,
           "s_per_gb": total / gb if gb else None, "iteration_s": None, "cache_written_gb": written / GB,
           "cache_read_gb": read / GB if read else None,
           "shuffle_gb": shuffle / GB, "spill_gb": spill / GB, "moved_gb": moved / GB,
           "moved_per_gb": moved / size if size else None, "blocks_dropped": m.get("blocks_dropped"),
           "gc_share": (m.get("gc_s") or 0) / (total * parallelism) if total else None, "checked": int(checked),
           "jvm_start_s": report.get("jvm_start_s"), "heap_formula": report.get("heap_formula") or report.get("memory_formula")}
    its = report.get("iteration_s") or []
    if its:
        row["iteration_s"] = sorted(its)[len(its) // 2]
    if checked:
        row["result_check"] = report["result_check"]
    return row


def failure_cause(message: str) -> str:
    """The first JVM error or exception in the failed run's log (named in ``message``, the
    PeerError's text), e.g. ``java.lang.OutOfMemoryError: Java heap space``; else the
    message's first line. The Python traceback at the log's end only says the JVM went."""
    found = re.search(r"--- log tail \((.+?)\) ---", message)
    if found and os.path.isfile(found.group(1)):
        with open(found.group(1), errors="replace") as fh:
            for line in fh:
                m = re.search(r"\b((?:java|org\.apache)\.[\w.$]+(?:Error|Exception)\b.*)", line)
                if m:
                    return m.group(1).strip()[:300]
    return message.splitlines()[0][:300] if message else "no message"


def peer_runs(args: argparse.Namespace, runs: list[ScaleRun], engine: str = "pyspark") -> tuple[list[ScaleRun], str]:
    """``engine``'s runs beside the K-means runs of ``runs`` (one per size and repeat)."""
    peer, api, title = ENGINES[engine]
    if engine == "pyspark":
        from strataflow.bench.peers.pyspark_peer import available
    else:
        from strataflow.bench.peers.dask_peer import available
    ok, why = available()
    if not ok:
        return [], f"{title} peer skipped: {why}"
    limit = float(getattr(args, "time_limit", None) or PEER_TIME_LIMIT)
    stopped: dict = {}  # the smallest size the peer did not finish, and why
    confs = sorted({(r.key["repeat"], r.key["size_scale"]): r for r in runs
                    if r.key.get("workload") == "kmeans" and "data" in r.extra}.items())
    out = []
    for (rep, x), run in confs:
        key = {"experiment": "scale", "workload": "kmeans", "peer": peer, "api": api, "level": LEVEL,
               "size_scale": x, "repeat": rep}

        def call(key=key, x=x, extra=run.extra):
            return _execute(engine, key, x, extra, args, limit, stopped)

        out.append(ScaleRun(key, call, repeat=rep))
    how = (f"DataFrame + ml.KMeans, local[{args.parallelism}], Spark's own input splits, heap per each row's "
           f"heap_formula; its bytes moved count writes only (Spark logs no cache disk reads)" if engine == "pyspark"
           else f"delayed K-means on a LocalCluster of {args.parallelism} one-thread workers bound to 127.0.0.1, "
                f"each worker's memory_limit and spill target per each row's heap_formula; bytes moved: its spill "
                f"writes and reads")
    return out, f"{title} peer: K-means only ({how}), each run limited to {limit:g} s"


def attempt_row(key: dict, data: str, budget: int, parallelism: int, check_max: int, limit: float,
                work_dir: str, engine: str = "pyspark") -> dict:
    """One peer run from plain values (JSON; what a run inside a machine calls): its row,
    or a row saying why it did not finish (``finished`` 0, ``outcome``)."""
    size = int(read_manifest(data).get("bytes") or 0)
    checked = size <= check_max
    if engine == "dask":
        from strataflow.bench.peers.dask_peer import run_dask

        report = run_dask("kmeans", data, memory_bytes=budget, workers=parallelism, threads=1, work_dir=work_dir,
                          iterations=ITERATIONS, timeout_s=limit, check=checked)
        if report["failure"]:
            return {**key, "finished": 0, "input_gb": size / GB, "outcome": f"failed: {report['failure']}",
                    "failed_after_s": report["failed_after_s"]}
        return peer_row(report, key, parallelism, checked)
    from strataflow.bench.peers.pyspark_peer import PeerError, run_pyspark

    try:
        report = run_pyspark("kmeans", data, path="df", level=LEVEL, storage_memory_bytes=budget,
                             iterations=ITERATIONS, parallelism=parallelism, check=checked, timeout_s=limit,
                             work_dir=work_dir)
    except PeerError as exc:
        timed_out = isinstance(exc.__cause__, subprocess.TimeoutExpired)
        why = f"time limit: over {limit:g} s" if timed_out else f"failed: {failure_cause(str(exc))}"
        return {**key, "finished": 0, "input_gb": size / GB, "outcome": why}
    return peer_row(report, key, parallelism, checked)


def _execute(engine: str, key: dict, x: float, extra: dict, args: argparse.Namespace, limit: float,
             stopped: dict) -> dict:
    title = ENGINES[engine][2]
    if stopped and x > stopped["x"]:
        return {**key, "finished": 0, "outcome": f"not run: {title} did not finish {stopped['x']:g}x "
                                                 f"({stopped['why']})"}
    data = extra["data"]("kmeans", x)
    work_dir = os.path.join(args.out, f"{engine}-work")
    spec = dict(key=key, data=data, budget=extra["budget"], parallelism=args.parallelism,
                check_max=extra["check_max"], limit=limit, work_dir=work_dir, engine=engine)
    if extra.get("machine"):  # the peer in the machine too; the machine's own limit a minute past the peer's
        lost = {**key, "input_gb": x * extra["budget"] / GB, "memory_mb": extra["budget"] / MB}
        row = in_machine(extra["machine"], "strataflow.bench.scale_peer:attempt_row", spec, lost, data,
                         work_dir, timeout_s=limit + 60)
    else:
        row = attempt_row(**spec)
    if not row.get("finished") and (not stopped or x < stopped["x"]):
        stopped.update(x=x, why=row.get("outcome") or row.get("result_check") or "did not finish")
    return row
