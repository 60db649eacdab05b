"""The ``strataflow`` command.

    strataflow gen WORKLOAD --out DIR [--size 2GB | --points N] [--format text|npy] [--seed S]
    strataflow run WORKLOAD [--data DIR] [--level L] [--policy P] [--memory M|auto] [--api records|batches]
                            [--json OUT]
    strataflow bench EXPERIMENT [--scale S] [--repeat 3] [--peer pyspark,dask] [--pool RESULTS ...] --out DIR
    strataflow probe DIR
    strataflow simulate (EVENT_LOG | --synthetic KIND --pressure X) [--memory M] [--bandwidth mem=..,disk=..]
                        [--async-eviction [LOW,HIGH]] [--json OUT]
    strataflow report EVENT_LOG [--out DIR]
    strataflow store ls|status|balance|start|stop|rm NAME... [--root DIR]   (store/cli.py)

A bad value of an option is refused by argparse with the option and the forms it takes
(``config/flag_types.py``), before anything is generated or read.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time
from typing import Any, Sequence

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from strataflow.config import flag_types as arg
from strataflow.config.flag_types import tier as parse_tier  # the --tier type (tests use this name)
from strataflow.config import ConfigError, parse_size
from strataflow.config.backends import BACKENDS, local_backends

__all__ = ["main"]

console = Console(stderr=True)
MB = 1 << 20


def _params(pairs: list[str]) -> dict:
    out = {}
    for p in pairs or []:
        if "=" not in p:
            raise ValueError(f"--set expects key=value, got {p!r}")
        k, v = p.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def _generate(workload: str, out: str, size: int, seed: int, fmt: str, params: dict) -> dict:
    from strataflow.workloads.api import workload_module

    module = workload_module(workload)
    accepted = inspect.signature(module.gen).parameters
    unknown = [k for k in params if k not in accepted]
    if unknown:
        raise ValueError(f"gen {workload}: unknown option(s) {', '.join(unknown)}; it takes "
                         f"{', '.join(k for k in accepted if k not in ('out_dir', 'progress'))}")
    with Progress(TextColumn(f"generating {workload}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("gen", total=None)
        return module.gen(out, size=size, seed=seed, fmt=fmt, progress=lambda n: bar.advance(task, n), **params)


def cmd_gen(args: argparse.Namespace) -> int:
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise ValueError(f"gen --out: {args.out!r} is an existing file, not a directory")
    t0 = time.perf_counter()
    manifest = _generate(args.workload, args.out, parse_size(args.size, "--size"), args.seed, args.format,
                         _gen_params(args))
    console.print(f"wrote {args.workload} data ({(manifest.get('bytes') or 0) / MB:,.1f} MiB, {manifest.get('format')}) "
                  f"to {args.out} in {time.perf_counter() - t0:.1f} s")
    return 0


def _gen_params(args: argparse.Namespace) -> dict:
    params = _params(args.set)
    if args.points is not None:
        params["points"] = args.points
    return params


def _data_dir(args: argparse.Namespace) -> str:
    """The data ``run`` reads: ``--data DIR`` when it holds a manifest; generated into DIR
    when DIR is absent or empty (as ``--help`` says); else generated under ``data/``
    (kept there for the next run with the same options)."""
    from strataflow.workloads.api import MANIFEST, read_manifest

    size = parse_size(args.size, "--size")
    params = _gen_params(args)
    if args.data:
        fresh = not os.path.exists(args.data) or (os.path.isdir(args.data) and not os.listdir(args.data))
        if fresh and not os.path.exists(os.path.join(args.data, MANIFEST)):
            _generate(args.workload, args.data, size, args.seed, args.format, params)
        read_manifest(args.data)  # a clear error if it is not a generated data directory
        return args.data
    suffix = "".join(f"-{k}{v}" for k, v in sorted(params.items()))
    data = os.path.join("data", f"{args.workload}-{args.format}-{size}-seed{args.seed}{suffix}")
    try:
        read_manifest(data)
    except FileNotFoundError:
        _generate(args.workload, data, size, args.seed, args.format, params)
    return data


def _check_run_options(args: argparse.Namespace):
    """Every option of ``run`` checked before any data is generated or read: a misspelt
    level found after minutes of generating input is an hour lost. The Context's own
    checks (:meth:`Config.build`) run here on the same options (``--memory auto`` stands
    in as 1GB: its real figure needs the data's size). Returns the storage level."""
    from strataflow.config import Config
    from strataflow.storage.level import StorageLevel
    from strataflow.storage.blocks.serde import get_serializer
    from strataflow.workloads.api import workload_module

    with arg.flag_errors(_flags()):
        level = StorageLevel.parse(args.level)
        get_serializer(args.serializer)
        Config.build(memory="1GB" if args.memory == "auto" else args.memory, **_context_options(args))
    module = workload_module(args.workload)
    accepted = inspect.signature(module.gen).parameters
    unknown = [k for k in _params(args.set) if k not in accepted]
    if unknown:
        raise ValueError(f"run {args.workload}: unknown --set option(s) {', '.join(unknown)}; its generator takes "
                         f"{', '.join(k for k in accepted if k not in ('out_dir', 'progress'))}")
    if args.json:
        folder = os.path.dirname(os.path.abspath(args.json))
        if not os.path.isdir(folder):
            raise ValueError(f"--json: folder {folder!r} of {args.json!r} does not exist")
    return level


def _flags() -> dict[str, str]:
    """The flag of ``run`` that sets each Context option a check may name at the start of
    its message (``mmap_memory: ...`` is ``--mmap-memory`` here)."""
    from strataflow.config.options import OPTIONS

    flags = {opt.name: opt.flag.option_string(opt.name) for opt in OPTIONS if opt.flag is not None}
    return {**flags, "memory": "--memory", "storage level": "--level", "serializer": "--serializer"}


def _cache_summary(report: dict) -> Table:
    m = report["metrics"]
    mb = lambda n: f"{n / MB:,.1f}"  # noqa: E731
    cfg = report["config"]
    t = Table(title=f"cache ({cfg['policy']} policy, memory budget {cfg['memory'] / MB:,.0f} MiB)")
    t.add_column("what")
    t.add_column("value", justify="right")
    for what, value in [
        ("memory hits / disk hits / misses", f"{m['memory_hits']:.0f} / {m['disk_hits']:.0f} / {m['misses']:.0f}"),
        ("blocks dropped (MiB)", f"{m['blocks_dropped']:.0f} ({mb(m['bytes_dropped'])})"),
        ("blocks re-cached (MiB)", f"{m['blocks_recached']:.0f} ({mb(m['bytes_recached'])})"),
        ("disk MiB written / read", f"{mb(m['disk_bytes_written'])} / {mb(m['disk_bytes_read'])}"),
        ("serialize / deserialize s", f"{m['serialize_s']:.2f} / {m['deserialize_s']:.2f}"),
        ("GC s (collections)", f"{m['gc_s']:.2f} ({m['gc_collections']:.0f})"),
        ("peak storage / execution MiB", f"{mb(m['peak_storage_memory'])} / {mb(m['peak_execution_memory'])}"),
        ("cached in memory / on disk MiB", f"{mb(report['cached_memory_bytes'])} / {mb(report['cached_disk_bytes'])}"),
        ("blocks prefetched (MiB)", f"{m.get('blocks_prefetched', 0):.0f} ({mb(m.get('bytes_prefetched', 0))})"),
    ]:
        t.add_row(what, value)
    split = report.get("memory_split")
    if split:
        t.add_row("memory split now: heap / mapped MiB", f"{mb(split['heap'])} / {mb(split['mapped'])}")
        t.add_row("split moves (MiB to heap / mapped)", f"{m.get('memory_split_moves', 0):.0f} "
                  f"({mb(m.get('memory_split_bytes_to_heap', 0))} / {mb(m.get('memory_split_bytes_to_mapped', 0))})")
    tiers = [k for k in m.get("tier_hits", {}) if k != "memory"]
    if len(tiers) > 1 or m.get("bytes_moved_between_tiers"):
        t.add_row("hits by tier", " / ".join(f"{k} {m['tier_hits'][k]:.0f}" for k in m["tier_hits"]))
        t.add_row("MiB by tier", " / ".join(f"{k} {mb(v)}" for k, v in m.get("tier_bytes", {}).items()))
        t.add_row("blocks moved down / up (MiB moved)", f"{m.get('blocks_moved_down', 0):.0f} / "
                  f"{m.get('blocks_moved_up', 0):.0f} ({mb(m.get('bytes_moved_between_tiers', 0))})")
    return t


def _context_options(args: argparse.Namespace) -> dict:
    """The Context options ``run``'s flags set: every option the table
    (``config/options.py``) gives a flag, when the flag was given (``--mmap-memory``
    defaults to auto under ``--level AUTO``)."""
    from strataflow.config.options import OPTIONS

    opts: dict = {}
    for opt in OPTIONS:
        if opt.flag is not None:
            value = getattr(args, opt.flag.dest(opt.name), None)
            if value is not None and value is not False:
                opts[opt.name] = value
    return opts


def _add_option_flags(parser: argparse.ArgumentParser) -> None:
    """A flag for each Context option the table marks (``config/options.py``), but those the
    table says this module declares itself (``--backend``, ``--tier``)."""
    from strataflow.config.options import OPTIONS

    value_types: dict[str, Any] = {"text": None, "count": arg.positive(int)}
    for opt in OPTIONS:
        flag = opt.flag
        if flag is None or flag.in_cli:
            continue
        if flag.value == "switch":
            parser.add_argument(flag.option_string(opt.name), action="store_true", help=flag.help)
        else:
            parser.add_argument(flag.option_string(opt.name), type=value_types[flag.value], default=None,
                                metavar=flag.metavar, help=flag.help)


def cmd_run(args: argparse.Namespace) -> int:
    from strataflow.storage.status import DatasetStorage, StorageStatus
    from strataflow.workloads.api import read_manifest
    from strataflow.workloads.runner import run_workload

    level = _check_run_options(args)
    options = _context_options(args)
    named = inspect.signature(run_workload).parameters  # policy, parallelism, event_log: the runner's own
    data = _data_dir(args)
    manifest = read_manifest(data)
    memory = args.memory
    if memory == "auto":
        memory = max(MB, int((manifest.get("bytes") or MB) / args.pressure))
    report = run_workload(args.workload, data, api=args.api, level=level.name, memory=memory,
                          serializer=args.serializer, iterations=args.iterations,
                          seed=args.seed, progress=False if args.quiet else None,
                          check=not args.no_check, json_out=args.json,
                          context_options={k: v for k, v in options.items() if k not in named},
                          **{k: v for k, v in options.items() if k in named},
                          announce_check=None if args.quiet else (lambda what: console.status(what)),
                          **({"num_partitions": args.partitions} if args.partitions else {}))
    out = Console()
    # the run's heading apart from the table, whose title rich wraps at the table's width
    out.print(f"{args.workload} ({args.api}, {level.name}) on {data}: {(manifest.get('bytes') or 0) / MB:,.0f} MiB",
              soft_wrap=True)
    table = Table(title="stages")
    for col in ("stage", "tasks", "seconds"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for st in report["stages"]:
        table.add_row(st["name"], str(st["tasks"]), f"{st['seconds']:.3f}")
    out.print(table)
    out.print(str(StorageStatus(DatasetStorage(**d) for d in report["storage"])))
    out.print(_cache_summary(report))
    its = report["iteration_s"]
    extra = ", ".join(f"{k} {v:.6g}" if isinstance(v, float) else f"{k} {v}" for k, v in report["extra"].items())
    check = report["result_check"]
    check_text = ("result check: skipped (--no-check)" if check == "skipped"
                  else f"result check: {check} ({report['check_s']:.1f} s, not counted in the total)")
    out.print(f"iterations (s): {', '.join(f'{s:.3f}' for s in its)}"
              f"{f'; median {float(np.median(its)):.3f} s' if its else ''}; total {report['total_s']:.2f} s; "
              f"{extra}; {check_text}", soft_wrap=True)
    return 0 if check in ("ok", "skipped") else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from strataflow.bench.command import run_bench

    return run_bench(args, console)


def cmd_probe(args: argparse.Namespace) -> int:
    from strataflow.bench.devices import probe_bandwidth

    size = parse_size(args.size, "--size")
    out = Console()
    for cold in (True, False):
        r = probe_bandwidth(args.dir, size, cold=cold)
        out.print(f"{args.dir} {r['mode']}: write {r['write_mb_per_s']:,.0f} MB/s (fsync), "
                  f"read {r['read_mb_per_s']:,.0f} MB/s ({r['bytes'] / MB:,.0f} MB)")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    from strataflow.simulate import executor_traces, parse_bandwidth, simulate_executors, synthetic, table

    if (args.event_log is None) == (args.synthetic is None):
        raise ValueError("simulate: give an EVENT_LOG or --synthetic KIND (not both)")
    if args.synthetic is not None:
        traces = [synthetic(args.synthetic, args.pressure)]
    else:  # each executor against its own share of the memory, as the run had it
        memory = parse_size(args.memory, "--memory") if args.memory else None
        traces = executor_traces(args.event_log, memory=memory)
    marks = None if args.async_eviction is None else tuple(args.async_eviction.split(","))  # checked by simulate
    report = simulate_executors(traces, args.policies.split(",") if args.policies else None,
                                parse_bandwidth(args.bandwidth), watermarks=marks)
    Console().print(table(report))
    if args.json:
        from strataflow.io.output_files import open_output

        with os.fdopen(open_output(args.json), "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from strataflow.report import render_report

    result = render_report(args.event_log, args.out)  # without matplotlib: the page, a note per chart
    console.print(f"wrote {result['html']} and {len(result['charts'])} charts"
                  + "".join(f"; {n}" for n in result["notes"]))
    return 0


def _peers(text: str) -> list[str]:
    """``bench --peer``: a comma list of the peer engines, checked as it is parsed (before
    ``bench`` makes its output folders)."""
    from strataflow.bench.command import PEERS

    asked = [p for p in text.split(",") if p]
    unknown = [p for p in asked if p not in PEERS]
    if unknown or not asked:
        raise argparse.ArgumentTypeError(f"unknown peer(s) {', '.join(map(repr, unknown)) or repr(text)}; "
                                         f"choose from {', '.join(PEERS)} (or both, as a comma list)")
    return asked


def _workload_list() -> str:
    from strataflow.workloads.api import SUMMARIES

    width = max(map(len, SUMMARIES))
    return "workloads:\n" + "\n".join(f"  {name:<{width}}  {what}" for name, what in sorted(SUMMARIES.items()))


def build_parser() -> argparse.ArgumentParser:
    from strataflow.workloads.api import APIS, WORKLOADS

    p = argparse.ArgumentParser(prog="strataflow", description="A dataflow engine with a tiered intermediate-data cache.")
    from strataflow import __version__

    p.add_argument("--version", action="version", version=f"strataflow {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def data_options(sp, default_size: str) -> None:
        sp.add_argument("--size", type=arg.size(zero_ok=False), default=default_size,
                        help="approximate data size, e.g. 300MB")
        sp.add_argument("--points", type=arg.positive(int), default=None,
                        help="number of points (workloads that have points; instead of --size)")
        sp.add_argument("--format", default="text", choices=["text", "npy", "parquet"], help="the data's file format")
        sp.add_argument("--seed", type=arg.integer, default=0,
                        help="the generator's seed (the same data for the same seed)")
        sp.add_argument("--set", action="append", metavar="KEY=VALUE", help="a workload-specific generator option")

    g = sub.add_parser("gen", help="generate a data set", description="Generate a workload's data set.",
                       epilog=_workload_list(), formatter_class=arg.HelpFormatter)
    g.add_argument("workload", choices=sorted(WORKLOADS), help="which workload's data (see the list below)")
    g.add_argument("--out", required=True)
    data_options(g, "256MB")
    g.set_defaults(func=cmd_gen)

    r = sub.add_parser("run", help="run a workload",
                       description="Run a workload in a fresh Context, check its result against an independent\n"
                                   "run, and summarize the cache's behaviour. Every option is checked before any\n"
                                   "data is generated or read.",
                       epilog=_workload_list(), formatter_class=arg.HelpFormatter)
    r.add_argument("workload", choices=sorted(WORKLOADS), help="which workload (see the list below)")
    r.add_argument("--data", help="a directory written by `strataflow gen`; generated into it when absent or empty "
                                  "(default: generated under data/ from --size/--points, --format and --seed, and kept)")
    data_options(r, "320MB")
    r.add_argument("--api", default="batches", choices=list(APIS),
                   help="batches: numpy/Arrow partitions; records: one Python object a record")
    r.add_argument("--level", default="MEMORY_AND_DISK",
                   help="storage level of the persisted datasets (a Spark level, a mapped level or AUTO)")
    r.add_argument("--serializer", default=None, help="auto, pickle, pickle5, arrow, arrow:lz4, arrow:zstd (default: auto, by the data's kind)")
    r.add_argument("--memory", type=arg.size(auto=True), default="auto",
                   help="the unified memory budget, e.g. 512MB; auto: the data size / --pressure")
    r.add_argument("--pressure", type=arg.positive(float), default=4.0,
                   help="with --memory auto: data size / memory budget")
    r.add_argument("--iterations", type=arg.positive(int), default=None, help="iterations (default: the workload's)")
    r.add_argument("--backend", choices=list(BACKENDS), default=None,
                   help="where tasks run (default: processes when parallelism > 1; ray: Ray actors, pip install strataflow[ray])")
    r.add_argument("--partitions", type=arg.positive(int), default=None,
                   help="partitions of the input (default: the workload's, 4 x parallelism for K-means)")
    r.add_argument("--json", default=None, help="write the run's report as JSON here")
    r.add_argument("--no-check", action="store_true",
                   help="skip checking the result against an independent run (it re-reads the whole input)")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    r.add_argument("--tier", action="append", type=parse_tier, default=None, metavar="TIER",
                   help="a storage tier below memory, fastest first (repeat for more): NAME:DIRS[:CAPACITY[:BW]], "
                        "e.g. shm:/dev/shm/sf:1GB, or name=NAME,kind=KIND,dir=DIR[,KEY=VALUE...] for any tier kind")
    _add_option_flags(r)  # the Context's options that have a flag (config/options.py)
    r.set_defaults(func=cmd_run)

    b = sub.add_parser("bench", help="reproduce a paper experiment: levels, serde, devices, pressure; or auto "
                                     "(AUTO beside every fixed level); or scale (inputs many times memory)")
    b.add_argument("experiment", choices=["levels", "serde", "devices", "pressure", "auto", "scale"])
    b.add_argument("--scale", type=arg.positive(float), default=None,
                   help="data size factor (default 1 = the paper-like sizes; with --repeat 0, the --pool files')")
    b.add_argument("--repeat", type=arg.positive(int, zero=True), default=3,
                   help="repeats to run (0: none, only summarize the --pool files)")
    b.add_argument("--pool", action="append", default=None, metavar="RESULTS",
                   help="add the runs of an earlier bench of the same experiment, scale and backend "
                        "(its results.json or directory; repeat for more): the repeats accumulate")
    b.add_argument("--peer", action="extend", type=_peers, default=None,
                   metavar="pyspark,dask", help="other engines to run beside ours: pyspark, dask, or both as a "
                                                "comma list (the flag may also be repeated)")
    b.add_argument("--out", required=True)
    b.add_argument("--data-dir", default=None, help="where generated data are kept (default: OUT/data)")
    b.add_argument("--parallelism", type=arg.positive(int), default=2)
    b.add_argument("--backend", choices=local_backends(), default=None,
                   help="where the runs' tasks run (default: the Context's, processes when parallelism > 1); "
                        "threads is the quieter measure on a machine with few cores")
    b.add_argument("--warmup", type=arg.positive(int, zero=True), default=None,
                   help="untimed runs of a configuration just before each of its timed runs (default 1; with "
                        "--repeat 0, the --pool files'): the timed run finds the memory its own kind of run "
                        "left, not whatever the run before it left")
    b.add_argument("--dirs", default=None, help="devices: comma-separated directories to compare")
    b.add_argument("--threads", type=arg.number_list(int, "1,4"), default=None,
                   help="devices: comma-separated thread counts")
    b.add_argument("--workloads", default=None, help="pressure, auto, scale: comma-separated workloads "
                   "(auto also takes kmeans-npy: K-means over an .npy source)")
    b.add_argument("--pressures", type=arg.number_list(float, "0.5,2,4,8"), default=None,
                   help="pressure, auto: comma-separated ratios, e.g. 0.5,2,4,8")
    b.add_argument("--levels", type=arg.levels, default=None, help="auto: comma-separated levels beside AUTO")
    b.add_argument("--policies", default=None, help="pressure, scale: comma-separated policies (default: all)")
    b.add_argument("--budget", type=arg.size(zero_ok=False), default=None,
                   help="scale: the memory budget every run gets (default 256MB); inputs are multiples of it")
    b.add_argument("--sizes", type=arg.number_list(float, "1,4,16"), default=None,
                   help="scale: comma-separated input sizes as multiples of the budget (default 1,4,16 and then "
                        "64, 256, ... while they fit in 60%% of the free disk)")
    b.add_argument("--time-limit", type=arg.positive(float), default=None,
                   help="scale: seconds a peer's run may take before it is stopped and reported (default 1200); "
                        "with --machine-memory, each of our runs too (default: no limit)")
    b.add_argument("--machine-memory", type=arg.machine_size, default=None, metavar="SIZE",
                   help="scale, auto: run each run (driver, executors, page cache) in a fresh memory cgroup of SIZE, "
                        "e.g. 2GB, or budget+768MB (each run's memory budget plus 768MB): a machine smaller than "
                        "its data (root or a writable cgroup needed)")
    b.set_defaults(func=cmd_bench)

    pr = sub.add_parser("probe", help="measure a directory's sequential bandwidth, cold and warm")
    pr.add_argument("dir")
    pr.add_argument("--size", type=arg.size(zero_ok=False), default="256MB", help="bytes to write and read")
    pr.set_defaults(func=cmd_probe)

    from strataflow.simulate import KINDS

    sm = sub.add_parser("simulate", help="replay block accesses against every policy, Belady's opt and an unbounded cache")
    sm.add_argument("event_log", nargs="?", default=None, help="a run's JSON-lines event log (run --event-log)")
    sm.add_argument("--synthetic", choices=KINDS, default=None, help="a synthetic trace instead of a log")
    sm.add_argument("--pressure", type=arg.positive(float), default=4.0, help="with --synthetic: cached data / memory")
    sm.add_argument("--memory", type=arg.size(zero_ok=False), default=None,
                    help="memory budget for a log replay, shared evenly among the run's "
                    "executors as Context(memory=...) shares it; each executor's reads are replayed against its "
                    "own share and the counts summed (default: the log's)")
    sm.add_argument("--policies", default=None, help="comma-separated policies (default: all)")
    sm.add_argument("--bandwidth", default=None,
                    help="tier bandwidths per second, e.g. mem=10GB,disk=1GB (the defaults) or disk=probe:DIR")
    sm.add_argument("--async-eviction", nargs="?", const="0.85,0.95", default=None, metavar="LOW,HIGH",
                    help="model the background eviction writer with these watermarks, the Context's "
                         "eviction_watermarks (default 0.85,0.95)")
    sm.add_argument("--json", default=None, help="write the report as JSON here")
    sm.set_defaults(func=cmd_simulate)

    rp = sub.add_parser("report", help="an event log as one self-contained HTML page (its charts need "
                                       "strataflow[plots])")
    rp.add_argument("event_log", help="a run's JSON-lines event log (run --event-log, Context(event_log=...))")
    rp.add_argument("--out", default=None, help="folder for report.html and the PNGs (default: beside the log, its name "
                                       "without the extension + '-report': events.jsonl -> events-report/)")
    rp.set_defaults(func=cmd_report)
    from strataflow.store.cli import add_parser as add_store_parser
    add_store_parser(sub)  # strataflow store start|stop|status|ls|rm|balance
    return p


def _say_error(exc: BaseException) -> None:
    """The error on stderr, as written: escaped (a path such as ``/data/[2024]/x`` is not
    markup) and soft-wrapped (the terminal wraps it; rich inserts no newline inside a long
    path, so the path can be copied from the terminal as it is)."""
    from rich.markup import escape

    console.print(f"[red]strataflow: {escape(str(exc))}[/red]", soft_wrap=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        _say_error(exc)
        return 2


if __name__ == "__main__":
    sys.exit(main())
