"""Scaling with parallelism: the threads and processes backends, 1..nproc workers.

What it measures, and why: executors in processes should let numpy and Python-record
code use every core, at a cost (start-up, per-task messages, pickling) small enough that
an iteration is close to what the same code costs without the engine. So, at parallelism
P = 1..``--max-parallelism`` (default ``os.cpu_count()``), for ``threads`` (one in-process
executor, P task threads) and ``processes`` (P executors of one core each):

- K-means on numpy batches (``ctx.from_numpy(points, 4P).persist(level)``; each
  iteration ``map_partitions(lambda a: [kernel(a, centres)]).collect()`` and the driver
  combines the partial sums): the median iteration time, the first iteration (which
  computes and caches the partitions) left out. MEMORY_ONLY with ample memory (3x the
  data), and MEMORY_AND_DISK with the memory budget a quarter of the data (4x pressure).
- Beside it, the compute floor: the very same kernel (``--kernel``) in P processes forked
  (``multiprocessing`` "fork" context) after the data were generated, so they share them
  copy-on-write, each with the same 4 partitions per worker and BLAS threads as an
  executor; per iteration the parent sends the centres through a pipe, each process
  returns its partitions' partial sums, the parent combines them. processes / forked is
  then the engine's overhead alone.
- Also beside it (``processes, gen. source``): the same K-means with processes, the
  partitions generated inside the tasks (``ctx.range(4P).map_partitions(gen_points)``,
  identical numbers), a source that carries no data; it shows what ``from_numpy``'s
  source costs the processes backend (its slices are written once to the application's
  directory and loaded by the executors).
- Word count on Python records: ``text_file -> flat_map(str.split) -> map((w, 1)) ->
  reduce_by_key(add)`` collected, 4P partitions, over text from
  ``wordcount_job.gen_text`` (Zipf words, deterministic), total seconds and speed-up
  over P=1.
- Context start-up (``ctx.startup_s``: until every executor is ready) and per-task
  overhead (``ctx.parallelize(range(200P), 200P).count()`` / 200P tasks; median of 3
  after one warm-up job), for each backend and P.

Variants are interleaved: for each repeat, for each P, threads then processes (then the
forked loop). Every variant records the 1-minute load average when it starts, and a
calibration (a pure-Python loop in 1 and in nproc forked processes, at the start and at
the end) gives the cores actually available, as the machine may be shared. A variant that
raises is recorded with its traceback and the run goes on.

    python benchmarks/scaling.py [--scale 1] [--repeat 1] [--max-parallelism N | --parallelisms 1,2,4,8,16] [--out DIR]
        [--points 2000000] [--k 8] [--iterations 6] [--wc-mb 512] [--parts-per-worker 4]

Output in ``--out``: ``scaling.json`` (every raw timing, medians, nproc, sizes),
``scaling.md`` (the tables) and ``scaling.png``; the table and PASS/FAIL lines for the
targets go to stdout, progress to stderr. Targets (2-core machine): K-means MEMORY_ONLY
processes iteration <= 1.1x the forked loop at P = nproc; word count with 2 executors >=
1.7x faster than with 1 (processes); a 2-executor Context ready in <= 1.5 s; <= 2 ms per
task.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import operator
import os
import signal
import statistics
import sys
import tempfile
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from strataflow import Context  # noqa: E402
from strataflow.storage.level import StorageLevel  # noqa: E402
from strataflow.workloads.kmeans import kmeans_partition  # noqa: E402
from strataflow.workloads.wordcount_job import gen_text  # noqa: E402

MB = 1 << 20
BACKENDS = ("threads", "processes")
med = statistics.median


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- data and the kernel (one definition for the engine and the forked loop) ----------------------
GEN_BLOCK = 1 << 16
GEN_CENTRES = 5


def gen_points(lo: int, hi: int, n: int, dims: int, seed: int) -> np.ndarray:
    """Rows ``[lo, hi)`` of ``n`` points, HiBench's GenKMeansDataset scheme: ``GEN_CENTRES``
    centres ~ U(0, 1000), per-dimension std ~ U(0.01, 100), points split evenly among
    them; each block of ``GEN_BLOCK`` rows has its own stream keyed by ``(seed, start)``,
    so any row range is generated alone with the same numbers as the whole array."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(0, 1000, size=(GEN_CENTRES, dims))
    stds = rng.uniform(0.01, 100, size=(GEN_CENTRES, dims))
    out = np.empty((hi - lo, dims))
    for start in range(lo // GEN_BLOCK * GEN_BLOCK, hi, GEN_BLOCK):
        stop = min(n, start + GEN_BLOCK)
        which = (np.arange(start, stop) * GEN_CENTRES) // n
        block = means[which] + stds[which] * np.random.default_rng([seed, start]).standard_normal((stop - start, dims))
        a, b = max(lo, start), min(hi, stop)
        out[a - lo : b - lo] = block[a - start : b - start]
    return out


KERNEL_CHUNK = 8192  # rows per step: the (rows, k) distances and the index array stay in cache


def bincount_kernel(points: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Per-centre sums and counts of the points nearest each centre, and the cost (sum of
    squared distances to the nearest centre). Squared distances are |x|^2 - 2 x.c + |c|^2
    (one matrix product a chunk), the nearest centre is an ``argmin``, and the sums are one
    ``bincount`` over (label, dimension) cells.

    Kept to show a cost of read-only arrays: ``np.bincount`` copies ``weights`` that are not
    writeable (it asks numpy for a C-contiguous, aligned, *writeable* array), and a cached
    batch is handed to tasks read-only, so this kernel runs ~2x slower on a cached
    partition than on a writable copy of it (``--kernel bincount``)."""
    k, d = centres.shape
    sums = np.zeros(k * d)
    counts = np.zeros(k, dtype=np.int64)
    cost = 0.0
    cc = np.einsum("ij,ij->i", centres, centres)
    m2ct = -2.0 * centres.T
    offs = np.arange(d)
    for s in range(0, len(points), KERNEL_CHUNK):
        x = np.ascontiguousarray(points[s : s + KERNEL_CHUNK], dtype=np.float64)
        dist = x @ m2ct
        dist += cc
        lab = dist.argmin(axis=1)
        best = np.take_along_axis(dist, lab[:, None], axis=1)
        cost += float(np.einsum("ij,ij->", x, x) + best.sum())
        counts += np.bincount(lab, minlength=k)
        sums += np.bincount((lab[:, None] * d + offs).ravel(), weights=x.ravel(), minlength=k * d)
    return sums.reshape(k, d), counts, cost


#: the kernel both sides run: the engine's own K-means kernel (``strataflow run kmeans``'s,
#: BLAS products only, indifferent to a read-only input) unless ``--kernel bincount``
KERNELS = {"workload": kmeans_partition, "bincount": bincount_kernel}
kmeans_kernel = kmeans_partition


def combine(parts) -> tuple[np.ndarray, np.ndarray, float]:
    return (sum(p[0] for p in parts), sum(p[1] for p in parts), float(sum(p[2] for p in parts)))


def new_centres(old: np.ndarray, total) -> np.ndarray:
    sums, counts, _ = total
    out = old.copy()
    nz = counts > 0
    out[nz] = sums[nz] / counts[nz, None]
    return out


def slice_bounds(n: int, k: int) -> list[tuple[int, int]]:
    """The engine's partition positions (``io.sources.slice_bounds``)."""
    return [((i * n) // k, ((i + 1) * n) // k) for i in range(k)]


# -- guard: a variant that hangs is stopped, recorded, and the run goes on ------------------------
class VariantTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise VariantTimeout("variant timed out")


def guarded(name: str, timeout: int, fn, *args, **kw) -> dict:
    load = os.getloadavg()[0]
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    t0 = time.perf_counter()
    try:
        out = fn(*args, **kw)
    except BaseException as exc:  # noqa: BLE001 - recorded, the run goes on (Ctrl-C still stops it)
        if isinstance(exc, KeyboardInterrupt):
            raise
        tb = traceback.format_exc()
        log(f"  !! {name} failed after {time.perf_counter() - t0:.1f} s:\n{tb}")
        out = {"error": repr(exc), "traceback": tb}
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out["load_avg_1m"] = load
    out["wall_s"] = time.perf_counter() - t0
    return out


# -- the variants ----------------------------------------------------------------------------------------
def make_context(backend: str, p: int, memory: int | str, dirs: dict) -> Context:
    kw = dict(executors=p, cores_per_executor=1) if backend == "processes" else {}
    return Context(memory=memory, parallelism=p, backend=backend, progress=False, local_dirs=[dirs["cache"]],
                   shuffle_dirs=[dirs["shuffle"]], **kw)


def _small_metrics(ctx: Context) -> dict:
    try:
        m = ctx.metrics()
    except Exception as exc:  # noqa: BLE001
        return {"error": repr(exc)}
    keep = ("misses", "memory_hits", "disk_hits", "blocks_dropped", "bytes_dropped", "blocks_recached", "disk_bytes_read",
            "disk_bytes_written", "deserialize_s", "serialize_s", "gc_s", "peak_storage_memory")
    return {k: m[k] for k in keep if k in m}


def run_overhead(backend: str, p: int, dirs: dict, tasks_per_worker: int) -> dict:
    ctx = make_context(backend, p, "1GB", dirs)
    try:
        n = tasks_per_worker * p
        runs = []
        for _ in range(4):  # one warm-up, three timed
            t0 = time.perf_counter()
            ctx.parallelize(range(n), n).count()
            runs.append((time.perf_counter() - t0) / n)
        return {"startup_s": ctx.startup_s, "tasks": n, "per_task_ms_runs": [r * 1e3 for r in runs],
                "per_task_ms": med(runs[1:]) * 1e3}
    finally:
        ctx.stop()


def run_kmeans_engine(backend: str, p: int, level: StorageLevel, memory: int, dirs: dict, data: np.ndarray | None,
                      init: np.ndarray, sizes: dict) -> dict:
    """``data`` None: the partitions are generated inside the tasks (a source with no data)."""
    ctx = make_context(backend, p, memory, dirs)
    try:
        parts = sizes["ppw"] * p
        n, dims, seed = sizes["points"], sizes["dims"], sizes["seed"]
        if data is not None:
            points = ctx.from_numpy(data, parts)
        else:
            bounds = slice_bounds(n, parts)
            points = ctx.range(parts, num_partitions=parts).map_partitions(
                lambda r, b=bounds: gen_points(b[r[0]][0], b[r[0]][1], n, dims, seed))
        points.name = "points"
        points.persist(level)
        centres = init
        times = []
        for _ in range(sizes["iterations"]):
            t0 = time.perf_counter()
            out = points.map_partitions(lambda a, c=centres: [kmeans_kernel(a, c)]).collect()
            centres = new_centres(centres, combine(out))
            times.append(time.perf_counter() - t0)
        return {"startup_s": ctx.startup_s, "iteration_s": times, "median_s": med(times[1:]),
                "centres": centres, "metrics": _small_metrics(ctx)}
    finally:
        ctx.stop()


_FORK: dict = {}


def _forked_worker(conn, bounds: list, blas: int) -> None:
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=blas, user_api="blas")
    data = _FORK["points"]
    while True:
        centres = conn.recv()
        if centres is None:
            break
        conn.send(combine([kmeans_kernel(data[a:b], centres) for a, b in bounds]))
    conn.close()


def run_kmeans_forked(p: int, data: np.ndarray, init: np.ndarray, sizes: dict, nproc: int) -> dict:
    _FORK["points"] = data  # before the fork: the children share it copy-on-write
    fork = mp.get_context("fork")
    ppw = sizes["ppw"]
    bounds = slice_bounds(len(data), ppw * p)
    blas = max(1, nproc // p)  # as the engine gives an executor of one slot
    workers = []
    t0 = time.perf_counter()
    try:
        for w in range(p):
            parent, child = fork.Pipe()
            proc = fork.Process(target=_forked_worker, args=(child, bounds[w * ppw:(w + 1) * ppw], blas), daemon=True)
            proc.start()
            child.close()
            workers.append((proc, parent))
        fork_s = time.perf_counter() - t0
        centres = init
        times = []
        for _ in range(sizes["iterations"]):
            t0 = time.perf_counter()
            for _, conn in workers:
                conn.send(centres)
            centres = new_centres(centres, combine([conn.recv() for _, conn in workers]))
            times.append(time.perf_counter() - t0)
        return {"fork_s": fork_s, "blas_threads": blas, "iteration_s": times, "median_s": med(times[1:]),
                "centres": centres}
    finally:
        for proc, conn in workers:
            try:
                conn.send(None)
            except OSError:
                pass
        for proc, conn in workers:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
            conn.close()
        _FORK.clear()


def run_wordcount(backend: str, p: int, dirs: dict, path: str, words: int, sizes: dict) -> dict:
    ctx = make_context(backend, p, "4GB", dirs)
    try:
        n = sizes["ppw"] * p
        t0 = time.perf_counter()
        counts = ctx.text_file(path, n).flat_map(str.split).map(lambda w: (w, 1)).reduce_by_key(operator.add, n).collect()
        seconds = time.perf_counter() - t0
        total = sum(c for _, c in counts)
        return {"startup_s": ctx.startup_s, "seconds": seconds, "distinct": len(counts),
                "check": "ok" if total == words else f"{total} words counted, the file has {words}"}
    finally:
        ctx.stop()


def _spin(_):
    t0 = time.perf_counter()
    s = 0
    for i in range(3_000_000):
        s += i
    return time.perf_counter() - t0


def calibrate(nproc: int) -> dict:
    """Cores actually available: the same pure-Python loop alone and in nproc forked
    processes at once; nproc * alone / together (nproc on an idle machine)."""
    one = min(_spin(0) for _ in range(2))
    with mp.get_context("fork").Pool(nproc) as pool:
        together = pool.map(_spin, range(nproc))
    return {"one_s": one, "together_s": together, "effective_cores": nproc * one / max(together)}


# -- report -------------------------------------------------------------------------------------------
def _med(runs: list[dict], key: str) -> float | None:
    """Median of ``key`` over the runs that did not fail; for ``iteration_s`` pooled over
    all repeats, the first iteration of each left out."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return None
    if key == "iteration_s":
        return med([t for r in ok for t in r["iteration_s"][1:]])
    return med(r[key] for r in ok)


def summarize(raw: dict, ps: list[int]) -> dict:
    s: dict = {}
    for p in ps:
        r = raw[str(p)]
        row = {}
        for b in BACKENDS:
            row[f"km_mo_{b}_s"] = _med(r["kmeans_memory_only"][b], "iteration_s")
            row[f"km_mad_{b}_s"] = _med(r["kmeans_memory_and_disk"][b], "iteration_s")
            row[f"wc_{b}_s"] = _med(r["wordcount"][b], "seconds")
            row[f"startup_{b}_s"] = _med(r["overhead"][b] + r["kmeans_memory_only"][b] + r["kmeans_memory_and_disk"][b]
                                         + r["wordcount"][b], "startup_s")
            row[f"task_{b}_ms"] = _med(r["overhead"][b], "per_task_ms")
        row["km_mo_processes_gen_s"] = _med(r["kmeans_memory_only"]["processes_gen"], "iteration_s")
        row["km_mo_forked_s"] = _med(r["kmeans_memory_only"]["forked"], "iteration_s")
        a, f = row["km_mo_processes_s"], row["km_mo_forked_s"]
        row["km_mo_processes_over_forked"] = a / f if a and f else None
        a = row["km_mo_processes_gen_s"]
        row["km_mo_processes_gen_over_forked"] = a / f if a and f else None
        s[str(p)] = row
    base = s[str(ps[0])] if ps[0] == 1 else None
    for p in ps:
        for b in BACKENDS:
            t0, t = (base or {}).get(f"wc_{b}_s"), s[str(p)][f"wc_{b}_s"]
            s[str(p)][f"wc_{b}_speedup"] = t0 / t if t0 and t else None
    return s


def _f(v, unit: str = "", digits: int = 3) -> str:
    if v is None:
        return "error"
    return f"{v:.{digits}f}{unit}"


def markdown(summary: dict, ps: list[int], sizes: dict, nproc: int) -> str:
    head = ["P", "KM MO threads s", "KM MO processes s", "KM MO forked numpy s", "processes / forked",
            "KM MO processes, gen. source s", "KM MAD 4x threads s", "KM MAD 4x processes s", "WC threads s",
            "WC processes s", "WC threads speed-up", "WC processes speed-up"]
    lines = [f"K-means ({sizes['kernel']} kernel): {sizes['points']:,} x {sizes['dims']} float64 points ({sizes['data_mb']:.0f} MB), "
             f"k={sizes['k']}, median iteration of {sizes['iterations']} (first left out), {sizes['ppw']} partitions "
             f"per worker; word count: {sizes['wc_mb']:.0f} MB of text; nproc={nproc}, repeat={sizes['repeat']}.", "",
             "| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for p in ps:
        r = summary[str(p)]
        cells = [str(p), _f(r["km_mo_threads_s"]), _f(r["km_mo_processes_s"]), _f(r["km_mo_forked_s"]),
                 _f(r["km_mo_processes_over_forked"], "x", 2), _f(r["km_mo_processes_gen_s"]),
                 _f(r["km_mad_threads_s"]), _f(r["km_mad_processes_s"]), _f(r["wc_threads_s"], "", 2),
                 _f(r["wc_processes_s"], "", 2), _f(r["wc_threads_speedup"], "x", 2),
                 _f(r["wc_processes_speedup"], "x", 2)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| P | start-up threads s | start-up processes s | per task threads ms | per task processes ms |",
              "|---:|---:|---:|---:|---:|"]
    for p in ps:
        r = summary[str(p)]
        lines.append(f"| {p} | {_f(r['startup_threads_s'])} | {_f(r['startup_processes_s'])} | "
                     f"{_f(r['task_threads_ms'])} | {_f(r['task_processes_ms'])} |")
    return "\n".join(lines)


def chart(summary: dict, ps: list[int], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    panels = [
        (axes[0][0], "K-means MEMORY_ONLY", "median iteration (s)",
         [("threads", "km_mo_threads_s"), ("processes", "km_mo_processes_s"),
          ("processes, gen. source", "km_mo_processes_gen_s"), ("forked numpy", "km_mo_forked_s")]),
        (axes[0][1], "K-means MEMORY_AND_DISK, 4x pressure", "median iteration (s)",
         [("threads", "km_mad_threads_s"), ("processes", "km_mad_processes_s")]),
        (axes[1][0], "word count (records)", "total (s)", [("threads", "wc_threads_s"), ("processes", "wc_processes_s")]),
        (axes[1][1], "word count speed-up over P=1", "speed-up (x)",
         [("threads", "wc_threads_speedup"), ("processes", "wc_processes_speedup")]),
    ]
    for ax, title, ylabel, series in panels:
        for label, key in series:
            pts = [(p, summary[str(p)][key]) for p in ps if summary[str(p)][key] is not None]
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=label)
        if "speed-up" in title:
            ax.plot([0, ps[-1]], [0, ps[-1]], linestyle=":", color="grey", label="ideal")
        ax.set_title(title)
        ax.set_xlabel("parallelism (workers)")
        ax.set_ylabel(ylabel)
        ax.set_xlim(0, ps[-1] + 0.5)
        ax.set_ylim(bottom=0)
        ax.set_xticks(range(0, ps[-1] + 1))
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def targets(summary: dict, ps: list[int], nproc: int) -> list[str]:
    out = []

    def line(ok, text):
        out.append(f"{'SKIP' if ok is None else 'PASS' if ok else 'FAIL'}: {text}")

    top = ps[-1]
    r = summary[str(top)]["km_mo_processes_over_forked"]
    note = "" if top == nproc else f" (P={top}, below nproc={nproc})"
    line(None if r is None else r <= 1.1, f"K-means MEMORY_ONLY processes / forked numpy at P={top}: "
                                          f"{_f(r, 'x', 2)} (target <= 1.1x){note}")
    g = summary[str(top)]["km_mo_processes_gen_over_forked"]
    out.append(f"INFO: the same with the partitions generated in tasks (no from_numpy source): {_f(g, 'x', 2)}")
    if "2" in summary and "1" in summary:
        sp = summary["2"]["wc_processes_speedup"]
        line(None if sp is None else sp >= 1.7, f"word count, 2 executors vs 1 (processes): {_f(sp, 'x', 2)} faster "
                                                f"(target >= 1.7x)")
        st = summary["2"]["startup_processes_s"]
        line(None if st is None else st <= 1.5, f"start-up of a 2-executor Context: {_f(st, ' s')} (target <= 1.5 s)")
    else:
        line(None, "word count 2 vs 1 executors and 2-executor start-up: need P=1 and P=2")
    for b in BACKENDS:
        vals = [summary[str(p)][f"task_{b}_ms"] for p in ps]
        worst = None if any(v is None for v in vals) else max(vals)
        line(None if worst is None else worst <= 2.0, f"per-task overhead, {b}: worst over P {_f(worst, ' ms')} "
                                                      f"(target <= 2 ms)")
    return out


# -- main ---------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the K-means points and the text size")
    ap.add_argument("--points", type=int, default=2_000_000, help="K-means points at scale 1")
    ap.add_argument("--dims", type=int, default=20)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=6)
    ap.add_argument("--wc-mb", type=float, default=512, help="MB of text for word count at scale 1")
    ap.add_argument("--parts-per-worker", type=int, default=4)
    ap.add_argument("--kernel", choices=sorted(KERNELS), default="workload",
                    help="the K-means kernel both sides run (bincount: shows the cost of read-only batches)")
    ap.add_argument("--tasks-per-worker", type=int, default=200, help="empty tasks per worker for the overhead job")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--max-parallelism", type=int, default=None, help="default: os.cpu_count()")
    ap.add_argument("--parallelisms", default=None,
                    help="the P to run, comma-separated (e.g. 1,2,4,8,16 on a 16-core machine); default 1..--max-parallelism")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variant-timeout", type=int, default=600, help="seconds before a variant is abandoned")
    ap.add_argument("--tmp", default=None, help="base for the temporary data, cache and shuffle dirs")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "strataflow-scaling"))
    args = ap.parse_args(argv)
    global kmeans_kernel
    kmeans_kernel = KERNELS[args.kernel]

    nproc = os.cpu_count() or 1
    ps = ([int(p) for p in args.parallelisms.split(",")] if args.parallelisms
          else list(range(1, (args.max_parallelism or nproc) + 1)))
    n = max(args.k, int(args.points * args.scale))
    wc_bytes = max(1 << 16, int(args.wc_mb * args.scale * MB))
    os.makedirs(args.out, exist_ok=True)
    t_start = time.perf_counter()

    with tempfile.TemporaryDirectory(prefix="strataflow-scaling-", dir=args.tmp) as tmp:
        dirs = {"cache": os.path.join(tmp, "cache"), "shuffle": os.path.join(tmp, "shuffle")}
        for d in dirs.values():
            os.makedirs(d)
        log(f"generating {n:,} x {args.dims} points and {wc_bytes / MB:.0f} MB of text under {tmp}")
        t0 = time.perf_counter()
        data = gen_points(0, n, n, args.dims, args.seed)
        rng = np.random.default_rng([args.seed, 1])
        init = data[np.sort(rng.choice(n, size=args.k, replace=False))].copy()
        manifest = gen_text(os.path.join(tmp, "text"), wc_bytes, seed=args.seed)
        text_path = os.path.join(tmp, "text", manifest["files"][0])
        gen_s = time.perf_counter() - t0
        sizes = {"kernel": args.kernel, "points": n, "dims": args.dims, "k": args.k, "iterations": args.iterations, "seed": args.seed,
                 "ppw": args.parts_per_worker, "data_mb": data.nbytes / MB, "wc_mb": manifest["bytes"] / MB,
                 "wc_words": manifest["words"], "wc_lines": manifest["lines"], "repeat": args.repeat,
                 "scale": args.scale, "memory_only_budget": 3 * data.nbytes,
                 "memory_and_disk_budget": data.nbytes // 4, "generate_s": gen_s}
        # the reference: the same iterations as one plain loop (every variant should end at these centres)
        ref = init
        for _ in range(args.iterations):
            ref = new_centres(ref, combine([kmeans_kernel(data[a:b], ref) for a, b in slice_bounds(n, args.parts_per_worker)]))

        calibration = {"start": calibrate(nproc)}
        log(f"calibration: {calibration['start']['effective_cores']:.2f} of {nproc} cores available")
        raw = {str(p): {"overhead": {b: [] for b in BACKENDS}, "wordcount": {b: [] for b in BACKENDS},
                        "kmeans_memory_only": {"threads": [], "processes": [], "processes_gen": [], "forked": []},
                        "kmeans_memory_and_disk": {b: [] for b in BACKENDS}} for p in ps}
        T = args.variant_timeout

        def record(where: list, name: str, res: dict) -> None:
            if "centres" in res:
                c = res.pop("centres")
                res["centres_max_rel_diff"] = float(np.abs(c - ref).max() / np.abs(ref).max())
            where.append(res)
            if "error" in res:
                return
            brief = {k: res[k] for k in ("startup_s", "median_s", "seconds", "per_task_ms", "check",
                                         "centres_max_rel_diff") if k in res}
            log(f"  {name}: " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                          for k, v in brief.items()) + f" (load {res['load_avg_1m']:.2f})")

        for rep in range(args.repeat):
            for p in ps:
                log(f"repeat {rep + 1}/{args.repeat}, parallelism {p}")
                r = raw[str(p)]
                for b in BACKENDS:
                    record(r["overhead"][b], f"overhead {b}",
                           guarded("overhead", T, run_overhead, b, p, dirs, args.tasks_per_worker))
                km = r["kmeans_memory_only"]
                for b in BACKENDS:
                    record(km[b], f"kmeans MEMORY_ONLY {b}",
                           guarded("kmeans", T, run_kmeans_engine, b, p, StorageLevel.MEMORY_ONLY,
                                   sizes["memory_only_budget"], dirs, data, init, sizes))
                record(km["processes_gen"], "kmeans MEMORY_ONLY processes, gen. source",
                       guarded("kmeans", T, run_kmeans_engine, "processes", p, StorageLevel.MEMORY_ONLY,
                               sizes["memory_only_budget"], dirs, None, init, sizes))
                record(km["forked"], "kmeans forked numpy",
                       guarded("forked", T, run_kmeans_forked, p, data, init, sizes, nproc))
                for b in BACKENDS:
                    record(r["kmeans_memory_and_disk"][b], f"kmeans MEMORY_AND_DISK 4x {b}",
                           guarded("kmeans", T, run_kmeans_engine, b, p, StorageLevel.MEMORY_AND_DISK,
                                   sizes["memory_and_disk_budget"], dirs, data, init, sizes))
                for b in BACKENDS:
                    record(r["wordcount"][b], f"word count {b}",
                           guarded("wordcount", T, run_wordcount, b, p, dirs, text_path, manifest["words"], sizes))
        calibration["end"] = calibrate(nproc)

    summary = summarize(raw, ps)
    md = markdown(summary, ps, sizes, nproc)
    checks = targets(summary, ps, nproc)
    errors = [f"P={p} {part} {variant}: {res['error']}" for p, parts in raw.items() for part, variants in parts.items()
              for variant, runs in variants.items() for res in runs if "error" in res]
    result = {"machine": {"nproc": nproc, "python": sys.version.split()[0], "numpy": np.__version__,
                          "calibration": calibration},
              "sizes": sizes, "parallelism": ps, "summary": summary, "targets": checks, "errors": errors,
              "raw": raw, "total_s": time.perf_counter() - t_start}
    with open(os.path.join(args.out, "scaling.json"), "w") as fh:
        json.dump(result, fh, indent=1, default=lambda v: v.item() if hasattr(v, "item") else str(v))
    with open(os.path.join(args.out, "scaling.md"), "w") as fh:
        fh.write(md + "\n\n" + "\n".join(checks) + "\n")
    try:
        chart(summary, ps, os.path.join(args.out, "scaling.png"))
    except Exception as exc:  # noqa: BLE001 - the numbers matter more than the picture
        log(f"chart failed: {exc!r}")
    log(f"calibration at the end: {calibration['end']['effective_cores']:.2f} of {nproc} cores available; "
        f"total {result['total_s']:.0f} s; results in {args.out}")
    print(md)
    print()
    for e in errors:
        print(f"ERROR: {e}")
    print("\n".join(checks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
