"""``strataflow bench``: plan an experiment, run it under one progress bar, add the PySpark
peer's rows and earlier invocations' runs (``--pool``) when asked, and write the report.

Warm-up (``--warmup``, default 1). Each timed run of a workload follows an untimed,
unchecked run of the same configuration. Why: a run's cost depends on the memory the run
before it left. On a VM that hands freed memory back to its host (virtio-balloon free
page reporting), a page touched again after it was reported costs a fault on the host,
so a run that follows a long one (MEMORY_ONLY recomputing under pressure, 2.4 s) meets
cold memory: in ``bench auto`` (the levels' order reversed every other repeat) AUTO
followed MEMORY_ONLY in half the repeats, and there its mapped writes of K-means at 8x
took 0.43 s instead of 0.06 s (40 repeats; the levels that never follow it: 0.05-0.10 s).
After a warm-up of its own configuration a run meets the memory its own kind of run left,
whatever ran before: the same sequence, MEMORY_ONLY then AUTO, gave medians of 0.90 s
(mapped writes 0.45 s) without a warm-up and 0.71 s (0.07 s) with one.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import re
import time
import traceback

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from strataflow.bench.experiments import Run, auto_verdict, plan, summarize
from strataflow.bench.pool import load_results, meta_backend, pool_rows
from strataflow.bench.report import write_report

__all__ = ["run_bench"]

MB = 1 << 20


def _split(text: str | None, cast=str) -> list | None:
    return [cast(x) for x in text.split(",") if x] if text else None


PEERS = ("pyspark", "dask")
#: a Dask run with no result after this long, plus DASK_TIMEOUT_PER_MB for each MB of
#: data, is a stall (its workers paused for memory that never frees): it is killed and
#: reported as failed. Healthy runs here take a few seconds per 100 MB.
DASK_TIMEOUT_S = 120.0
DASK_TIMEOUT_PER_MB = 0.5


def peers_asked(args: argparse.Namespace) -> list[str]:
    """The peers ``--peer`` names (a comma list, or the flag repeated), each once, in
    the order given; an unknown name is an error naming the known ones."""
    asked = list(dict.fromkeys(getattr(args, "peer", None) or []))
    unknown = [p for p in asked if p not in PEERS]
    if unknown:
        raise ValueError(f"--peer: unknown peer(s) {', '.join(map(repr, unknown))}; choose from {', '.join(PEERS)}")
    return asked


def _peer_points(experiment: str, runs: list[Run], per_level: bool) -> list[tuple[Run, dict]]:
    """The K-means runs of ``levels`` and ``pressure`` a peer runs beside, one per
    configuration and repeat (``pressure``: the ``spark`` policy's; ``levels``: the
    batches api's, every level when ``per_level``, else the first), each with the key
    fields a peer's row shares with it."""
    out, seen = [], set()
    for run in runs:
        k = run.key
        if k.get("workload") != "kmeans":
            continue
        if experiment == "levels" and k.get("api") == "batches":
            conf = ("levels", k["level"] if per_level else None, k["repeat"])
        elif experiment == "pressure" and k.get("policy") == "spark":
            conf = ("pressure", k["pressure"], k["repeat"])
        else:
            continue
        if conf in seen:
            continue
        seen.add(conf)
        key = {x: k[x] for x in ("experiment", "workload", "level", "repeat") if x in k}
        if experiment == "pressure":
            key["pressure"] = k["pressure"]
        out.append((run, key))
    return out


def _as_row(rep: dict, key: dict, **more) -> dict:
    from strataflow.bench.experiments import _row

    rep.setdefault("metrics", {})
    rep.setdefault("cached_bytes", 0)
    rep.setdefault("stages", [])
    rep.setdefault("config", {"memory": 0})
    return {**_row(rep, key), **more}


def _spark_failure(message: str) -> str:
    """A failed Spark run in a few words: its innermost ``Caused by:`` exception (class
    name and message), else its first line."""
    causes = re.findall(r"Caused by: ([\w.$]+(?:Error|Exception)[^\n]*)", message)
    text = causes[-1] if causes else message.strip().splitlines()[0] if message.strip() else "failed"
    name, _, rest = text.partition(":")
    return (name.rsplit(".", 1)[-1] + (":" + rest if rest else ""))[:200]


def _pyspark_runs(args: argparse.Namespace, experiment: str, runs: list[Run], data_root: str,
                  scale: float) -> tuple[list[Run], str]:
    """PySpark's runs for the K-means rows of ``levels`` and ``pressure``."""
    if experiment == "scale":  # its sizes, time limit and rows: bench/scale_peer.py
        from strataflow.bench.scale_peer import peer_runs

        return peer_runs(args, runs)
    from strataflow.bench.peers.pyspark_peer import PeerError, available, run_pyspark

    ok, why = available()
    if not ok:
        return [], f"PySpark peer skipped: {why}"
    from strataflow.bench.data import ensure_data

    data = ensure_data("kmeans", data_root, scale)
    out: list[Run] = []
    for run, base in _peer_points(experiment, runs, per_level=True):
        for path in ("df", "rdd"):
            key = {**base, "peer": f"pyspark-{path}", "api": "dataframe" if path == "df" else "rdd"}

            def call(key=key, path=path, run=run):
                memory = run.extra["memory_fn"]()
                try:
                    rep = run_pyspark("kmeans", data, path=path, level=key.get("level", "MEMORY_AND_DISK"),
                                      storage_memory_bytes=memory, iterations=5, parallelism=args.parallelism,
                                      work_dir=os.path.join(args.out, "pyspark-work"))
                except PeerError as exc:  # Spark failed (out of memory, timed out): a failure row
                    failure = _spark_failure(str(exc))
                    return {**key, "failure": failure, "result_check": f"failed: {failure}", "error": str(exc)}
                return _as_row(rep, key, heap_formula=rep.get("heap_formula"))

            out.append(Run(key, call))
    return out, "PySpark peer: local mode, same data; " + "heap sizing in each row's heap_formula"


def _dask_runs(args: argparse.Namespace, experiment: str, runs: list[Run], data_root: str,
               scale: float) -> tuple[list[Run], str]:
    """Dask's runs for the K-means rows of ``levels`` (one per repeat: Dask has no
    storage levels; persist() keeps blocks in memory and spills them) and ``pressure``,
    on a LocalCluster of strataflow's executors and cores, spilling under the data
    directory; a run that fails or stalls is a row with ``failure`` set."""
    if experiment == "scale":  # its sizes, time limit and rows: bench/scale_peer.py
        from strataflow.bench.scale_peer import peer_runs

        return peer_runs(args, runs, "dask")
    if experiment not in ("levels", "pressure"):
        return [], f"Dask peer: not run beside {experiment} (it runs beside the K-means of levels, pressure and scale)"
    from strataflow.bench.peers.dask_peer import available, run_dask

    ok, why = available()
    if not ok:
        return [], f"Dask peer skipped: {why}"
    from strataflow.bench.data import ensure_data
    from strataflow.config import Config

    data = ensure_data("kmeans", data_root, scale)
    from strataflow.workloads.api import read_manifest

    timeout = DASK_TIMEOUT_S + DASK_TIMEOUT_PER_MB * int(read_manifest(data).get("bytes") or 0) / MB
    out: list[Run] = []
    for run, base in _peer_points(experiment, runs, per_level=False):
        key = {**base, "peer": "dask", "api": "delayed", "level": "MEMORY_AND_DISK"}

        def call(key=key, run=run):
            memory = run.extra["memory_fn"]()
            conf = Config.build(memory=memory, parallelism=args.parallelism, backend=getattr(args, "backend", None))
            rep = run_dask("kmeans", data, memory_bytes=memory, workers=conf.executors,
                           threads=conf.cores_per_executor, work_dir=os.path.join(data_root, "dask-work"),
                           iterations=5, timeout_s=timeout)
            return _as_row(rep, key, failure=rep["failure"], failed_after_s=rep["failed_after_s"],
                           memory_formula=rep["memory_formula"], work_dir=rep["work_dir"])

        out.append(Run(key, call))
    return out, (f"Dask peer ({why}): LocalCluster of strataflow's executors x cores, bound to 127.0.0.1, spilling "
                 f"under {os.path.join(data_root, 'dask-work')}; each worker's memory_limit and spill target in each "
                 f"row's memory_formula; a run with no result in {DASK_TIMEOUT_S:g} s + {DASK_TIMEOUT_PER_MB:g} s/MB "
                 f"of data ({timeout:,.0f} s) is killed and reported as stalled")


def _peer_runs(args: argparse.Namespace, experiment: str, runs: list[Run], data_root: str,
               scale: float) -> tuple[list[Run], list[str]]:
    """The runs of every peer ``--peer`` asks for, and a note for each."""
    makers = {"pyspark": _pyspark_runs, "dask": _dask_runs}
    out, notes = [], []
    for peer in peers_asked(args):
        peer_runs, note = makers[peer](args, experiment, runs, data_root, scale)
        out += peer_runs
        notes.append(note)
    if out:
        notes.append("disk_written_mb / disk_read_mb: what each engine's cache spilled to disk and read back "
                     "(strataflow: blocks written to and read from its disk tier; PySpark: cached blocks dropped or "
                     "stored to disk, from its event log; Dask: its workers' SpillBuffer disk-write / disk-read "
                     "bytes); failed: runs that did not finish (KilledWorker, stalled past the time limit)")
    return out, notes


def run_bench(args: argparse.Namespace, console: Console) -> int:
    pooled_docs = [load_results(p) for p in getattr(args, "pool", None) or []]
    if not args.repeat and not pooled_docs:
        raise ValueError("bench: --repeat 0 runs nothing; it needs --pool FILE to summarize earlier runs")
    only_pooled = bool(pooled_docs) and not args.repeat
    scale = args.scale or (only_pooled and pooled_docs[0]["meta"].get("scale")) or 1.0
    backend = getattr(args, "backend", None) or (meta_backend(pooled_docs[0]["meta"]) if only_pooled else "default")
    warmup = getattr(args, "warmup", None)
    warmup = (int(pooled_docs[0]["meta"].get("warmup", 0)) if only_pooled else 1) if warmup is None else warmup
    pooled, pool_notes = pool_rows(pooled_docs, args.experiment, scale, backend, warmup)
    data_root = args.data_dir or os.path.join(args.out, "data")
    os.makedirs(data_root, exist_ok=True)
    kw = dict(root=data_root, scale=scale, repeat=args.repeat, parallelism=args.parallelism,
              dirs=_split(args.dirs), threads=_split(args.threads, int), workloads=_split(args.workloads),
              pressures=_split(args.pressures, float), policies=_split(args.policies),
              levels=_split(getattr(args, "levels", None)), backend=getattr(args, "backend", None),
              budget=getattr(args, "budget", None), sizes=_split(getattr(args, "sizes", None), float),
              machine_memory=getattr(args, "machine_memory", None), time_limit=getattr(args, "time_limit", None))
    if kw["machine_memory"] and args.experiment not in ("scale", "auto"):
        raise ValueError(f"bench {args.experiment}: --machine-memory applies to bench scale and auto only")
    console.print(f"planning bench {args.experiment} at scale {scale} (data in {data_root})")
    runs = plan(args.experiment, **kw) if args.repeat else []
    notes = [f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
             f"scale {scale}, {args.repeat} repeat(s) run here, variants interleaved; medians over repeats",
             "data read warm (page cache) unless the experiment says cold",
             f"backend: {'the Context default' if backend == 'default' else backend}, parallelism {args.parallelism}",
             f"warm-up: {warmup} untimed, unchecked run(s) of the same configuration just before each timed "
             "run (--warmup)" if warmup else "warm-up: none (--warmup 0)",
             *pool_notes]
    if args.experiment == "auto":
        from strataflow.storage.memory.split import MEMORY_COUNTS

        notes.append("what a comparison at one memory compares: " + MEMORY_COUNTS)
        notes.append("ratios (vs_best_fixed, vs_memory_and_disk) are paired: the median over repeats of the "
                      "ratio of two runs of one repeat, which ran back to back; the best fixed level is the one AUTO fares "
                      "worst against")
    peers = peers_asked(args)  # an unknown peer fails here, before any run
    if peers:
        peer_runs, peer_notes = _peer_runs(args, args.experiment, runs, data_root, scale)
        runs += peer_runs
        notes += peer_notes
    rows: list[dict] = []
    t0 = time.perf_counter()
    # auto_refresh off: the bar is drawn between runs only, so no thread of the harness
    # takes the GIL or a core while a run is timed (the threads backend shares the process)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, auto_refresh=False) as bar:
        task = bar.add_task(f"bench {args.experiment}", total=len(runs))
        for run in runs:
            bar.update(task, description=f"{args.experiment}: " + " ".join(
                f"{v}" for k, v in run.key.items() if k not in ("experiment", "repeat")))
            bar.refresh()
            try:
                for _ in range(warmup if run.warm else 0):
                    gc.collect()
                    run.warm()
                gc.collect()  # the last run's garbage is collected now, not inside this run's time
                rows.append(run.call())
            except Exception as exc:  # a failed run is a row with its error, not a lost report
                rows.append({**run.key, "result_check": f"error: {type(exc).__name__}: {exc}",
                             "traceback": traceback.format_exc(limit=5)})
            bar.advance(task)
        bar.refresh()
    rows = pooled + rows
    summary = summarize(rows)
    if args.experiment == "auto" and (verdict := auto_verdict(rows, summary)):
        notes.append(verdict)
    if args.experiment == "scale":
        from strataflow.bench.scale import scale_notes

        notes += scale_notes(rows, summary)
    elif kw["machine_memory"]:  # the machine each run had, as scale_notes says it for scale
        notes += sorted({r["machine_note"] for r in rows if r.get("machine_note")})
    meta = {"experiment": args.experiment, "scale": scale, "repeat": args.repeat, "backend": backend, "warmup": warmup,
            "seconds": time.perf_counter() - t0, "pooled": [d["path"] for d in pooled_docs], "notes": notes}
    paths = write_report(args.out, args.experiment, rows, summary, meta)
    Console().print(paths["markdown"])
    console.print(f"wrote {paths['results']}, {paths['table']}, {', '.join(paths['charts'])}")
    # a peer's run that died or stalled is a measurement (the table's failed column), not
    # a failure of the bench; a wrong result or an error of ours is
    for r in rows:
        if r.get("failure"):
            console.print(f"[yellow]{r.get('peer')} run failed: {r['failure']}[/yellow] (logs: {r.get('work_dir')})")
    failed = [r for r in rows if r.get("result_check", "ok") != "ok" and not r.get("failure")]
    for r in failed:
        console.print(f"[red]{r.get('result_check')}[/red] in {r}")
    return 1 if failed else 0
