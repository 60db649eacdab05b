"""Memory honesty: how far above its budget the whole application goes (issue 14, point 7).

The claim under test: the anonymous resident memory of the application (the driver and
every executor process, summed at the same instant) stays within

    memory budget + (task slots x 3 + writing executors x 2) x largest block + fixed overhead

where the *fixed overhead* is what the interpreters hold before any job runs (measured:
the application's anonymous memory right after the Context starts: ~26 MB for the driver,
~24 MB more per executor process) plus 32 MB per process for working memory that does not
scale with blocks. A running task holds, outside the budget, the block it is building or
reading back (Spark's "unroll" memory, which Spark too lets exceed the storage fraction),
what it builds it from (a text split's lines, a CSV split's Arrow table) and what the
user's function makes of it (K-means stacks a partition of point records into one array):
up to three blocks' worth, measured 2.1-3.1x.

What runs: the K-means workload (``strataflow run kmeans``: points and norms persisted,
Lloyd iterations) at a 64 MB budget on generated text data several times larger, for
numpy batches and for Python records, at MEMORY_AND_DISK and MEMORY_ONLY, on the threads
backend (one process) and the processes backend (one executor per core), each variant in
a fresh interpreter (an allocator keeps what earlier runs freed). Sampled every 20 ms with
psutil (``strataflow.metrics.rss.PeakRss``). The largest block is the largest estimated
deserialized partition that any variant of the same API stored or tried to store.

    python benchmarks/memory_bound.py [--size 160MB] [--memory 64MB] [--iterations 3] [--out DIR]
                                      [--measure rss|heap]

``--measure heap`` (the threads backend only) counts instead what the job allocates: the
peak of Python's heap (``tracemalloc``, which numpy's buffers report to) plus the peak of
pyarrow's memory pool, above what was allocated when the job started. Those are bytes the
structures hold, the same on a busy machine as on a quiet one, so the test suite checks
the ceiling with them (``tests/test_memory_bound.py``); the resident-memory figure, which
a busy machine's page reclaim and allocator slack move, stays this benchmark's.

Prints a table (MB) and writes ``memory_bound.json``; a row's ``ok`` says whether the peak
kept within the bound.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from strataflow import Context  # noqa: E402
from strataflow.config import parse_size  # noqa: E402
from strataflow.metrics.rss import PeakRss, anon_bytes  # noqa: E402
from strataflow.workloads import kmeans_job  # noqa: E402
from strataflow.workloads.api import read_manifest  # noqa: E402

MB = 1 << 20
# Working memory a driver or executor may use beyond blocks: the task's other locals (a
# parser's buffers, the kernel's temporaries), pickling buffers of task results and the
# allocator's slack. Stated here, checked by this script and by tests/test_memory_bound.py.
MARGIN_PER_PROCESS = 32 * MB
SLOT_BLOCKS = 3  # blocks' worth a running task may hold beside the budget (see above)
#: what the input cache's writer may hold, per executor, in decoded partitions (the one it
#: writes and its copy into whole columns: ``store/input_reader.py``); a K-means CSV
#: partition decodes to the bytes of its block
WRITER_BLOCKS = 2


def bound(budget: int, slots: int, largest_block: int, idle: int, processes: int, writers: int = 0) -> int:
    """The stated ceiling on the application's anonymous memory (``writers``: the executors
    whose input cache writes, 0 with ``input_cache="off"``)."""
    return (budget + (slots * SLOT_BLOCKS + writers * WRITER_BLOCKS) * largest_block + idle
            + processes * MARGIN_PER_PROCESS)


class HeapPeak:
    """The peak bytes a block of code allocates: Python's heap (``tracemalloc``) plus
    pyarrow's default pool, each above its level at the start. (pyarrow's peak cannot be
    reset: use it in a fresh interpreter.)"""

    def __enter__(self) -> "HeapPeak":
        import tracemalloc

        import pyarrow as pa

        self._pool = pa.default_memory_pool()
        self._arrow0 = self._pool.bytes_allocated()
        tracemalloc.start()
        self._py0 = tracemalloc.get_traced_memory()[0]
        return self

    def __exit__(self, *exc: object) -> None:
        import tracemalloc

        self.python = tracemalloc.get_traced_memory()[1] - self._py0
        tracemalloc.stop()
        self.arrow = max(0, self._pool.max_memory() - self._arrow0)
        self.peak = self.python + self.arrow


def run_one(data_dir: str, *, memory: int, api: str, level: str, backend: str, parallelism: int,
            iterations: int, measure: str = "rss") -> dict:
    """One K-means run, measured; ``largest_block`` is what this run saw stored or refused
    (the caller may widen it with other runs' figures). ``measure``: ``rss`` the
    application's anonymous resident memory, ``heap`` the bytes allocated (``HeapPeak``;
    threads backend only: the idle footprint is then 0, the heap is counted from the job's
    start)."""
    if measure == "heap" and backend != "threads":
        raise ValueError("--measure heap counts one process's allocations: use --backends threads")
    manifest = read_manifest(data_dir)
    stored: list[int] = []
    with tempfile.TemporaryDirectory(prefix="sf-membound-") as local:
        with Context(memory=memory, parallelism=parallelism, backend=backend, progress=False,
                     local_dirs=[local], app_name="memory_bound") as ctx:
            ctx.events.subscribe(lambda ev: stored.append(ev.get("bytes", 0))
                                 if ev["event"] in ("BlockStored", "BlockNotStored") else None)
            time.sleep(0.2)
            idle = anon_bytes(children=backend != "threads") if measure == "rss" else 0
            processes = 1 + (ctx.config.executors if backend != "threads" else 0)
            slots = ctx.config.task_slots
            writers = 0 if ctx.config.input_cache == "off" else (ctx.config.executors if backend != "threads" else 1)
            t0 = time.perf_counter()
            with (PeakRss(children=backend != "threads") if measure == "rss" else HeapPeak()) as rss:
                out = kmeans_job.run(ctx, data_dir, manifest, api=api, level=level, iterations=iterations,
                                     check=False)
            seconds = time.perf_counter() - t0
            m = ctx.metrics()
    largest = max(stored, default=0)
    return {"api": api, "level": level, "backend": backend, "parallelism": parallelism, "slots": slots,
            "processes": processes, "writers": writers, "budget": memory, "idle": idle, "largest_block": largest, "peak": rss.peak,
            "over_budget": rss.peak - idle - memory,
            "bound": bound(memory, slots, largest, idle, processes, writers),
            "ok": rss.peak <= bound(memory, slots, largest, idle, processes, writers),
            "measure": measure, "seconds": seconds, "iterations": len(out.iteration_s),
            "dropped_bytes": m.get("bytes_dropped", 0), "disk_bytes_written": m.get("disk_bytes_written", 0)}


def _variant(data: str, api: str, level: str, backend: str, a: argparse.Namespace) -> dict:
    """One variant in a fresh interpreter; its row as JSON on the last line of stdout."""
    cmd = [sys.executable, __file__, "--one", f"{api},{level},{backend}", "--data", data, "--memory", a.memory,
           "--iterations", str(a.iterations), "--parallelism", str(a.parallelism), "--measure", a.measure]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="160MB")
    p.add_argument("--memory", default="64MB")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--apis", default="batches,records")
    p.add_argument("--levels", default="MEMORY_AND_DISK,MEMORY_ONLY")
    p.add_argument("--backends", default="threads,processes")
    p.add_argument("--out", default=None)
    p.add_argument("--measure", choices=("rss", "heap"), default="rss")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    p.add_argument("--data", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    memory = parse_size(a.memory)
    if a.one:
        api, level, backend = a.one.split(",")
        print(json.dumps(run_one(a.data, memory=memory, api=api, level=level, backend=backend,
                                 parallelism=a.parallelism, iterations=a.iterations, measure=a.measure)))
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="sf-membound-data-") as data:
        kmeans_job.gen(data, size=parse_size(a.size))
        for api in a.apis.split(","):
            for level in a.levels.split(","):
                for backend in a.backends.split(","):
                    rows.append(_variant(data, api, level, backend, a))
                    print(f"  ran {api} {level} {backend}", file=sys.stderr, flush=True)
    for r in rows:
        largest = max(x["largest_block"] for x in rows if x["api"] == r["api"])
        r["largest_block"] = largest
        r["bound"] = bound(r["budget"], r["slots"], largest, r["idle"], r["processes"], r["writers"])
        r["ok"] = r["peak"] <= r["bound"]
        print(f"{r['api']:8s} {r['level']:16s} {r['backend']:9s} idle {r['idle'] / MB:5.0f}  "
              f"largest block {largest / MB:5.1f}  peak {r['peak'] / MB:5.0f}  "
              f"peak-idle {(r['peak'] - r['idle']) / MB:5.0f}  bound {r['bound'] / MB:5.0f}  "
              f"{'ok' if r['ok'] else 'OVER'}  ({r['seconds']:.1f} s)", flush=True)
    out = a.out or "."
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "memory_bound.json"), "w") as f:
        json.dump({"size": a.size, "memory": memory, "margin_per_process": MARGIN_PER_PROCESS, "rows": rows}, f,
                  indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
