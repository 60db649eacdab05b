"""The ray backend's overhead (issue 15): K-means on a 2-node simulated Ray cluster against
the processes backend on the same executors and cores.

    python benchmarks/ray_overhead.py [--mb 256] [--iterations 6] [--repeat 2] [--out FILE]

K-means (the ``kmeans`` workload: batches API, points and norms at MEMORY_AND_DISK, the
memory budget a quarter of the data: 4x pressure) on ``--mb`` of generated text points,
with 2 executors of one core each: ``processes`` (two executor processes on this
machine) and ``ray`` (two executor actors, one on each of the 2 worker nodes of a
``ray.cluster_utils.Cluster`` on this machine: a head without CPUs for the driver, two
nodes of one CPU each). Runs are interleaved (processes, ray, processes, ray, ...).

Reported: each backend's median per-iteration time (the first iteration, which parses
the text and caches the points, left out) and the ratio ray / processes (target <= 1.3x);
what a task costs each backend (a job of 16 trivial tasks on cached blocks), and the CPU
Ray's daemons take while idle (here they share the 2 cores with the executors);
and start-up, until every executor is ready (``Context.startup_s``, median of 3):
processes; ray on the running cluster (actors only); ray with ``address=None`` (a local
Ray started and stopped by the Context: ``ray.init`` included).

Everything runs inside a private network namespace (``tests/netns.py``: only ``lo``) when
this process may make one, so Ray binds to 127.0.0.1 only; otherwise the nodes still bind
to 127.0.0.1, said in the output.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

import netns  # noqa: E402

MB = 1 << 20
med = statistics.median


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def kmeans_run(backend: str, data: str, memory: int, iterations: int) -> dict:
    from strataflow.workloads.runner import run_workload

    r = run_workload("kmeans", data, api="batches", level="MEMORY_AND_DISK", memory=memory, parallelism=2,
                     iterations=iterations, check=False,
                     context_options={"backend": backend, "executors": 2, "cores_per_executor": 1})
    its = r["iteration_s"]
    return {"backend": backend, "iteration_s": its, "median_iteration_s": med(its[1:]), "total_s": r["total_s"],
            "disk_bytes_read": r["metrics"]["disk_bytes_read"], "disk_hits": r["metrics"]["disk_hits"],
            "memory_hits": r["metrics"]["memory_hits"], "misses": r["metrics"]["misses"]}


def task_overhead(backend: str, jobs: int = 30, tasks: int = 16) -> float:
    """Median seconds of a job of ``tasks`` trivial tasks on cached blocks (what each
    task costs the backend: submission, the call, the reply)."""
    import numpy as np

    from strataflow import Context, StorageLevel

    with Context(backend=backend, executors=2, memory="256MB", progress=False) as c:
        ds = c.from_numpy(np.ones((16_000, 4)), tasks).map_partitions(np.array).persist(StorageLevel.MEMORY_ONLY)
        ds.count()
        times = []
        for _ in range(jobs):
            t0 = time.perf_counter()
            ds.map_partitions(lambda a: [a.shape[0]]).sum()
            times.append(time.perf_counter() - t0)
        return med(times)


def idle_cpu(seconds: float = 3.0) -> float:
    """Cores' worth of CPU that this process's descendants (Ray's daemons and idle
    workers) use while nothing runs: on this 2-core machine they compete with the work."""
    import psutil

    def total() -> float:
        t = 0.0
        for p in psutil.Process().children(recursive=True):
            try:
                ct = p.cpu_times()
                t += ct.user + ct.system
            except psutil.Error:
                pass
        return t

    t0, c0 = time.perf_counter(), total()
    time.sleep(seconds)
    return (total() - c0) / (time.perf_counter() - t0)


def startup(backend: str, **kw) -> float:
    from strataflow import Context

    with Context(backend=backend, executors=2, memory="64MB", progress=False, **kw) as c:
        return c.startup_s


_LOCAL = r'''
import time
t0 = time.perf_counter()
from strataflow import Context
c = Context(backend="ray", executors=2, memory="64MB", progress=False)
print(c.startup_s, time.perf_counter() - t0, flush=True)
c.stop()
'''


def local_ray_startup(env: dict) -> tuple[float, float]:
    """(startup_s, seconds until the Context was made, imports included) of a Context that
    starts its own Ray, in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _LOCAL], env=env, capture_output=True, text=True, timeout=180,
                         check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=256, help="K-means text data (MB)")
    ap.add_argument("--iterations", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    args = ap.parse_args()

    isolated = netns.enter_private_netns()
    log(f"network namespace: {'private (lo only)' if isolated is True else isolated}")
    tmp = tempfile.mkdtemp(prefix="sfrb", dir="/tmp")  # short: Ray's unix sockets
    had_token = os.path.exists(netns.RAY_TOKEN)
    os.environ.update(RAY_TMPDIR=tmp, RAY_USAGE_STATS_ENABLED="0")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, *sys.path])}
    cluster = None
    try:
        import ray
        from ray.cluster_utils import Cluster

        from strataflow.workloads import kmeans_job

        data = os.path.join(tmp, "km")
        t0 = time.perf_counter()
        manifest = kmeans_job.gen(data, size=args.mb * MB, seed=0, fmt="text")
        memory = max(MB, manifest["bytes"] // 4)
        log(f"data: {manifest['bytes'] / MB:.1f} MB of text points ({manifest['points']} points) in "
            f"{time.perf_counter() - t0:.1f} s; memory {memory / MB:.1f} MB (4x pressure)")

        # a local Ray started by the Context (before the cluster: nothing else runs)
        local = [local_ray_startup(env) for _ in range(3)]
        log(f"ray, address=None: startup {[round(s, 2) for s, _ in local]} s")

        t0 = time.perf_counter()
        node = dict(num_cpus=1, node_ip_address="127.0.0.1", object_store_memory=200 * MB)
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "include_dashboard": False, "node_ip_address": "127.0.0.1",
            "object_store_memory": 200 * MB})
        nodes = [cluster.add_node(**node) for _ in range(2)]
        ray.init(address=cluster.address, logging_level="warning",
                 runtime_env={"env_vars": {"PYTHONPATH": env["PYTHONPATH"]}})
        cluster_s = time.perf_counter() - t0
        log(f"simulated cluster (head + {len(nodes)} nodes) up in {cluster_s:.1f} s")

        idle = idle_cpu()
        log(f"Ray's daemons and idle workers, nothing running: {idle:.2f} of a core")
        per_job = {b: [] for b in ("processes", "ray")}
        for _ in range(2):
            for backend in ("processes", "ray"):
                per_job[backend].append(task_overhead(backend))
        per_task_ms = {b: 1000 * med(v) / 16 for b, v in per_job.items()}
        log(f"16 trivial tasks on cached blocks: {json.dumps({b: round(x * 16, 2) for b, x in per_task_ms.items()})} "
            f"ms per job")

        starts = {"processes": [], "ray": []}
        for _ in range(3):
            for backend in ("processes", "ray"):
                starts[backend].append(startup(backend))
        log(f"startup: {json.dumps({k: [round(x, 2) for x in v] for k, v in starts.items()})}")

        runs = []
        for rep in range(args.repeat):
            for backend in ("processes", "ray"):
                r = kmeans_run(backend, data, memory, args.iterations)
                runs.append(r)
                log(f"  repeat {rep} {backend:9s} iterations {[round(x, 2) for x in r['iteration_s']]} "
                    f"median (2nd on) {r['median_iteration_s']:.3f} s  disk hits {r['disk_hits']}")
        it = {b: med([x for r in runs if r["backend"] == b for x in r["iteration_s"][1:]])
              for b in ("processes", "ray")}
        ratio = it["ray"] / it["processes"]
        result = {
            "data_mb": manifest["bytes"] / MB, "memory_mb": memory / MB, "iterations": args.iterations,
            "repeat": args.repeat, "network_namespace": isolated is True, "cluster_start_s": cluster_s,
            "median_iteration_s": it, "ratio_ray_over_processes": ratio,
            "ray_idle_cpu_cores": idle, "trivial_task_ms": per_task_ms,
            "startup_s": {"processes": med(starts["processes"]), "ray_on_cluster": med(starts["ray"]),
                          "ray_local_address_none": med(s for s, _ in local),
                          "ray_local_with_imports": med(w for _, w in local)},
            "runs": runs,
        }
        print(f"K-means batches, MEMORY_AND_DISK at 4x ({manifest['bytes'] / MB:.0f} MB text, "
              f"{memory / MB:.0f} MB memory), 2 executors x 1 core, median per iteration (2nd on):")
        print(f"  processes {it['processes']:.3f} s   ray (2 simulated nodes) {it['ray']:.3f} s   "
              f"ratio {ratio:.2f}x  [{'PASS' if ratio <= 1.3 else 'FAIL'} <= 1.3x]")
        print(f"  per task, trivial tasks on cached blocks (a job of 16): processes {per_task_ms['processes']:.2f} ms, "
              f"ray {per_task_ms['ray']:.2f} ms; Ray's daemons idle: {idle:.2f} of a core (of 2)")
        su = result["startup_s"]
        print(f"start-up (until every executor is ready, median of 3): processes {su['processes']:.2f} s; "
              f"ray on a running cluster {su['ray_on_cluster']:.2f} s; ray with address=None "
              f"{su['ray_local_address_none']:.2f} s (ray.init included; {su['ray_local_with_imports']:.2f} s "
              f"with imports); the simulated cluster itself {cluster_s:.1f} s")
        if args.out:
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)
    finally:
        try:
            import ray

            ray.shutdown()
        except Exception:  # noqa: BLE001
            pass
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
        netns.remove_new_ray_token(had_token)
    return 0


if __name__ == "__main__":
    sys.exit(main())
