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


def _peer_runs(args: argparse.Namespace, experiment: str, runs: list[Run], data_root: str,
               scale: float) -> tuple[list[Run], str]:
    """PySpark's runs for the K-means rows of ``levels`` and ``pressure``."""
    if experiment == "scale":  # its sizes, time limit and rows: bench/scale_peer.py
        from strataflow.bench.scale_peer import peer_runs

        return peer_runs(args, runs)
    from strataflow.bench.peers.pyspark_peer import available, run_pyspark

    ok, why = available()
    if not ok:
        return [], f"PySpark peer skipped: {why}"
    from strataflow.bench.data import ensure_data

    data = ensure_data("kmeans", data_root, scale)
    out: list[Run] = []
    seen = set()
    for run in runs:
        k = run.key
        if k.get("workload") != "kmeans":
            continue
        if experiment == "levels" and k.get("api") == "batches":
            conf = ("levels", k["level"], k["repeat"])
        elif experiment == "pressure" and k.get("policy") == "spark":
            conf = ("pressure", k["pressure"], k["repeat"])
        else:
            continue
        if conf in seen:
            continue
        seen.add(conf)
        for path in ("df", "rdd"):
            key = {**{x: k[x] for x in ("experiment", "workload", "level", "repeat") if x in k},
                   "peer": f"pyspark-{path}", "api": "dataframe" if path == "df" else "rdd"}
            if experiment == "pressure":
                key["pressure"] = k["pressure"]

            def call(key=key, path=path, run=run):
                memory = run.extra["memory_fn"]()
                rep = run_pyspark("kmeans", data, path=path, level=key.get("level", "MEMORY_AND_DISK"),
                                  storage_memory_bytes=memory, iterations=5, parallelism=args.parallelism,
                                  work_dir=os.path.join(args.out, "pyspark-work"))
                from strataflow.bench.experiments import _row

                rep.setdefault("metrics", {})
                rep.setdefault("cached_bytes", 0)
                rep.setdefault("stages", [])
                rep.setdefault("config", {"memory": memory})
                return {**_row(rep, key), "heap_formula": rep.get("heap_formula")}

            out.append(Run(key, call))
    return out, "PySpark peer: local mode, same data; " + "heap sizing in each row's heap_formula"


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
              budget=getattr(args, "budget", None), sizes=_split(getattr(args, "sizes", None), float))
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
        notes.append("ratios (vs_best_fixed, vs_memory_and_disk) are paired: the median over repeats of the "
                      "ratio of two runs of one repeat, which ran back to back; the best fixed level is the one AUTO fares "
                      "worst against")
    if args.peer == "pyspark":
        peer_runs, note = _peer_runs(args, args.experiment, runs, data_root, scale)
        runs += peer_runs
        notes.append(note)
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
    meta = {"experiment": args.experiment, "scale": scale, "repeat": args.repeat, "backend": backend, "warmup": warmup,
            "seconds": time.perf_counter() - t0, "pooled": [d["path"] for d in pooled_docs], "notes": notes}
    paths = write_report(args.out, args.experiment, rows, summary, meta)
    Console().print(paths["markdown"])
    console.print(f"wrote {paths['results']}, {paths['table']}, {', '.join(paths['charts'])}")
    failed = [r for r in rows if r.get("result_check", "ok") != "ok"]
    for r in failed:
        console.print(f"[red]{r.get('result_check')}[/red] in {r}")
    return 1 if failed else 0
