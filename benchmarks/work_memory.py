"""The work under the execution-memory budget in a machine smaller than its data.

The claim under test: a ``group_by_key`` where one key holds half the records, and a
``sort_by_key`` of all of them, finish in a memory cgroup (``strataflow.bench.machine``)
smaller than the records' Python objects, with 0 OOM kills and the right answer, because
the grouper and the external sorter spill within each task's share of execution memory.
Before them the hot key's group was rebuilt whole in one reduce task.

What runs, in a fresh interpreter inside the machine (driver, executors and their page
cache together): ``ctx.range(n)`` made into ``(key, "value-NNNNNNNNNN")`` on the executors
(the driver never holds the data), ``group_by_key(4).map_values(len)`` checked against
the counts the generator implies (the hot key n/2, 50,000 other keys, n in all), then
``sort_by_key`` of the values, descending, its first record checked. One run.

    python benchmarks/work_memory.py [--records 3000000] [--budget 64MB] [--machine 384MB] [--src DIR]

``--src`` runs another checkout's ``strataflow`` (its parent directory), e.g. the code
before a change, for a before/after pair. Prints one line: exit code, wall seconds, OOM
kills, the machine's peak, and the job's own line (times and checks).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time


def job(n: int, budget: str) -> None:
    """The measured job (run inside the machine)."""
    from strataflow import Context

    with tempfile.TemporaryDirectory(prefix="work-memory-") as work, \
            Context(memory=budget, parallelism=2, backend="processes", progress=False, shuffle_dirs=[work],
                    local_dirs=[work]) as ctx:
        ds = ctx.range(n, num_partitions=16).map(lambda i: ("hot" if i % 2 == 0 else i % 100_000,
                                                             f"value-{i:010d}"))
        t0 = time.perf_counter()
        sizes = dict(ds.group_by_key(4).map_values(len).collect())
        group_ok = sizes["hot"] == (n + 1) // 2 and sum(sizes.values()) == n and len(sizes) == 1 + 50_000
        group_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        first = ds.map(lambda kv: (kv[1], 1)).sort_by_key(ascending=False).map(lambda kv: kv[0]).take(1)
        sort_ok = first == [f"value-{n - 1:010d}"]
        print(f"RESULT group_by_key {group_s:.1f}s ok={group_ok} sort_by_key {time.perf_counter() - t0:.1f}s "
              f"ok={sort_ok}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=3_000_000)
    p.add_argument("--budget", default="64MB")
    p.add_argument("--machine", default="384MB")
    p.add_argument("--src", default=None, help="the directory holding the strataflow package to run")
    p.add_argument("--job", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.job:
        job(args.records, args.budget)
        return
    from strataflow.bench.machine import Machine
    from strataflow.config import parse_size

    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = os.path.abspath(args.src)
    cmd = [sys.executable, os.path.abspath(__file__), "--job", "--records", str(args.records), "--budget", args.budget]
    with Machine(parse_size(args.machine, "--machine")) as machine:
        t0 = time.perf_counter()
        # executors put their working directory first on sys.path: run where no package is
        proc = machine.popen(cmd, env=env, cwd=tempfile.gettempdir(), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        out, _ = proc.communicate()
        usage = machine.usage()
    result = [line for line in out.splitlines() if line.startswith("RESULT")]
    print(f"src={args.src or 'this checkout'} records={args.records} budget={args.budget} machine={args.machine} "
          f"rc={proc.returncode} wall={time.perf_counter() - t0:.1f}s oom_kills={usage.oom_kills} "
          f"peak_mb={usage.peak_bytes / 2**20:.0f} {result[0] if result else out.strip().splitlines()[-1:]}")


if __name__ == "__main__":
    main()
