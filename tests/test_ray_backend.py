"""The ray backend on a simulated Ray cluster, inside a private network namespace.

The module enters a network namespace of its own (``netns.py``: only ``lo``, up) before
it starts anything, so every Ray process binds to 127.0.0.1 and can reach no other
address; without the privilege to do so (not root, no user namespaces) every test here
is skipped with the reason. In it, one simulated cluster (``ray.cluster_utils.Cluster``:
a head without CPUs and two worker nodes of 3 CPUs, small object stores, processes of
this machine) serves every test; the module then shuts it down, checks that no Ray
process is left, and goes back to the host's namespace, so the rest of the suite runs
as before. (Module-scoped, not session-scoped: every Ray test is here, and the other
modules should run without Ray's idle daemons on this machine's cores.)

- the core API on executors in actors on two nodes: transformations, the four joins,
  sort, shuffles, persist at every level, MEMORY_AND_DISK under pressure, task errors;
- K-means (``strataflow run kmeans --backend ray``) with its result check;
- locality: a cached partition's tasks run on the executor that holds it, iteration
  after iteration, and a block read elsewhere is fetched from the holder's actor;
- faults: a node removed mid-job (a third node added for it) and an actor killed
  mid-job: the answer is right, ``ExecutorLost`` is logged, lost blocks are recomputed,
  and a replacement starts;
- the default: ``address=None`` starts a local Ray and stops it with the Context (in a
  subprocess, in the same namespace).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from typing import Iterator

import numpy as np
import psutil
import pytest

import netns
from faults_util import fail_tasks_sent_together
from waits import HANG_S, hold_until, wait_for

from strataflow import Context, StorageLevel, TaskFailedError
from strataflow.cli import main as cli_main
from strataflow.config import ConfigError
from strataflow.workloads import kmeans_job

# Ray is imported by the cluster fixture, not at collection: the rest of the suite runs
# without it in the process.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                reason="Ray is not installed (pip install strataflow[ray])")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MB = 1 << 20
CLIENT_PORT = 10001  # the head's Ray Client server (a private namespace: the port is free)
_NODE = dict(num_cpus=3, node_ip_address="127.0.0.1", object_store_memory=80 * MB)


def _is_ray(cmdline: str) -> bool:
    return cmdline.startswith("ray::") or "/ray/" in cmdline or "raylet" in cmdline or "gcs_server" in cmdline


def _ray_processes(tmpdir: str, descendants: bool = True) -> list[psutil.Process]:
    """Processes of a Ray started here: anything naming its temp dir, and (``descendants``)
    Ray's processes among ours (a worker's title, ``ray::...``, names no directory)."""
    out = {}
    for p in psutil.process_iter(["cmdline"]):
        if tmpdir in " ".join(p.info["cmdline"] or []):
            out[p.pid] = p
    if descendants:
        for p in psutil.Process().children(recursive=True):
            try:
                if _is_ray(" ".join(p.cmdline())):
                    out[p.pid] = p
            except psutil.Error:
                pass
    alive = []
    for p in out.values():
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.Error:
            pass
    return alive


class SimCluster:
    """The module's Ray cluster: head (no CPUs: the driver's node) and worker nodes."""

    def __init__(self, tmpdir: str, labels: "list[dict] | None" = None, head_labels: dict | None = None,
                 client_port: int | None = CLIENT_PORT) -> None:
        """``labels``: per worker node, its Ray labels (default: two nodes, none), and the
        head's; ``client_port``: the head's Ray Client server's (None: no such server)."""
        import ray
        from ray.cluster_utils import Cluster

        self.tmpdir = tmpdir
        head = {"num_cpus": 0, "include_dashboard": False, "node_ip_address": "127.0.0.1",
                "object_store_memory": 80 * MB,
                "_system_config": {"health_check_period_ms": 1000, "health_check_failure_threshold": 3}}
        if client_port is not None:
            head["ray_client_server_port"] = client_port
        if head_labels:
            head["labels"] = head_labels
        self.cluster = Cluster(initialize_head=True, head_node_args=head)
        self.nodes = [self.cluster.add_node(**_NODE, **({"labels": lab} if lab else {}))
                      for lab in (labels or [{}, {}])]
        ray.init(address=self.cluster.address, logging_level="warning",
                 runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([REPO, *sys.path])}})

    def add_node(self):
        node = self.cluster.add_node(**_NODE)
        self.cluster.wait_for_nodes()
        return node

    def shutdown(self) -> None:
        import ray

        if self.cluster is None:
            return
        ray.shutdown()
        self.cluster.shutdown()
        self.cluster = None


@contextlib.contextmanager
def private_ray() -> Iterator[list[SimCluster]]:
    """The setting of every Ray test: a private network namespace, Ray's files in a temp
    dir of their own; yields a list the caller adds its ``SimCluster``s to. At the end each
    is shut down, no Ray process may be left, and the thread goes back to the host's
    namespace. One at a time on the machine (``RAY_LOCK``): ``make test`` runs two pytest
    workers, each in a namespace of its own, but Ray's token under ``~/.ray`` is the
    user's, and one worker's cleanup would remove it from under the other's Ray."""
    with open(RAY_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its holder dies
        with _private_ray() as sims:
            yield sims


#: held by whoever runs a private Ray (``private_ray``)
RAY_LOCK = os.path.join(tempfile.gettempdir(), f"strataflow-tests-ray-{os.geteuid()}.lock")


@contextlib.contextmanager
def _private_ray() -> Iterator[list[SimCluster]]:
    entered = netns.enter_private_netns()
    if entered is not True:
        pytest.skip(f"no private network namespace for the Ray tests: {entered}")
    had_token = os.path.exists(netns.RAY_TOKEN)
    saved = {k: os.environ.get(k) for k in ("RAY_TMPDIR", "RAY_USAGE_STATS_ENABLED")}
    tmpdir = tempfile.mkdtemp(prefix="sfray", dir="/tmp")  # short: unix socket paths
    os.environ.update(RAY_TMPDIR=tmpdir, RAY_USAGE_STATS_ENABLED="0")
    sims: list[SimCluster] = []
    try:
        yield sims
    finally:
        for sim in sims:
            sim.shutdown()
        if "ray" in sys.modules and sys.modules["ray"].is_initialized():
            sys.modules["ray"].shutdown()
        left = wait_ray_gone(tmpdir)
        for p in left:
            p.kill()
        shutil.rmtree(tmpdir, ignore_errors=True)
        netns.remove_new_ray_token(had_token)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        back = netns.leave_private_netns()
        assert not left, f"Ray processes left running: {[' '.join(p.cmdline()[:3]) for p in left]}"
        assert back is True, back


def wait_ray_gone(tmpdir: str) -> list[psutil.Process]:
    """Waits (up to ``HANG_S``) until no process of the Ray started here is left; those
    still there then."""
    deadline = time.monotonic() + HANG_S
    while _ray_processes(tmpdir) and time.monotonic() < deadline:
        time.sleep(0.2)
    return _ray_processes(tmpdir)


@pytest.fixture(scope="module")
def cluster():
    with private_ray() as sims:
        sims.append(SimCluster(os.environ["RAY_TMPDIR"]))
        yield sims[0]


def _context(tmp_path, **kw) -> Context:
    opts = dict(backend="ray", executors=2, memory="128MB", progress=False,
                local_dirs=[str(tmp_path / "local")], shuffle_dirs=[str(tmp_path / "shuffle")])
    opts.update(kw)
    for d in opts["local_dirs"] + opts["shuffle_dirs"]:
        os.makedirs(d, exist_ok=True)
    return Context(**opts)


def _recorder(c: Context) -> list[dict]:
    """Every event of ``c`` from now on (the event log is flushed only after jobs)."""
    seen: list[dict] = []
    c.events.subscribe(seen.append)
    return seen


def _events(seen: list[dict], name: str) -> list[dict]:
    return [e for e in list(seen) if e["event"] == name]


@pytest.fixture(scope="module")
def rctx(cluster, tmp_path_factory):
    """Two executors of one core, one per worker node, shared by the core API tests."""
    base = tmp_path_factory.mktemp("ray-ctx")
    c = _context(base)
    yield c
    c.stop()
    assert not os.listdir(base / "local") and not os.listdir(base / "shuffle")


# -- configuration -----------------------------------------------------------------------------
def test_ray_options_are_checked(monkeypatch):
    with pytest.raises(ConfigError, match="address: only for backend='ray'"):
        Context(backend="processes", address="auto")
    with pytest.raises(ConfigError, match="address: expected"):
        Context(backend="ray", address="nowhere")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ConfigError, match=r"pip install strataflow\[ray\]"):
        Context(backend="ray")


def test_a_cluster_too_small_fails_at_once(cluster, tmp_path):
    from strataflow.executor.work import ExecutorLost

    # at once: the message is the CPU count's check before placing, not the placement's
    # timeout ("could not place ... in N s"); no seconds are asserted
    with pytest.raises(ExecutorLost, match=r"has 6 CPUs, 4 executors of 2 need 8"):
        _context(tmp_path, executors=4, cores_per_executor=2)
    assert not os.listdir(tmp_path / "local")  # nothing left behind


# -- the core API ---------------------------------------------------------------------------------
def test_executors_are_actors_spread_over_the_nodes(cluster, rctx):
    live = rctx.fleet.live()
    assert len(live) == 2 and rctx.backend == "ray"
    assert len({h.node_id for h in live}) == 2  # SPREAD: one per worker node
    assert {h.node_id for h in live} <= {n.node_id for n in cluster.nodes}
    assert sorted(rctx.parallelize(range(8), 8).map(lambda _: os.getpid()).distinct().collect()) == \
        sorted(h.pid for h in live)


def test_transformations_joins_and_sort(rctx):
    nums = rctx.parallelize(range(1000), 8)
    assert nums.map(lambda x: x * 2).filter(lambda x: x % 3 == 0).sum() == sum(x * 2 for x in range(1000) if x * 2 % 3 == 0)
    counts = nums.map(lambda x: (x % 13, 1)).reduce_by_key(lambda a, b: a + b, 5)
    assert dict(counts.collect()) == {k: sum(1 for x in range(1000) if x % 13 == k) for k in range(13)}
    left = rctx.parallelize([(k, k * k) for k in range(50)], 4)
    right = rctx.parallelize([(k, -k) for k in range(25, 75)], 3)
    assert sorted(left.join(right).collect()) == [(k, (k * k, -k)) for k in range(25, 50)]
    assert len(left.left_outer_join(right).collect()) == 50 and len(left.full_outer_join(right).collect()) == 75
    assert sorted(left.right_outer_join(right).collect())[-1] == (74, (None, -74))
    words = rctx.parallelize([f"w{i % 37}" for i in range(2000)], 6)
    top = words.map(lambda w: (w, 1)).reduce_by_key(lambda a, b: a + b).sort_by(lambda kv: (-kv[1], kv[0]))
    assert top.take(2) == [("w0", 55), ("w1", 55)]
    assert rctx.parallelize(list(range(500))[::-1], 7).sort_by(lambda x: x).collect() == list(range(500))


def test_broadcasts_and_accumulators(rctx):
    """A broadcast over the object store's inline limit reaches every actor; an
    accumulator counts each task once."""
    table = rctx.broadcast(list(range(300_000)))
    acc = rctx.accumulator(0)

    def f(x):
        acc.add(1)
        return table.value[x]

    assert rctx.range(1000, num_partitions=6).map(f).sum() == sum(range(1000))
    assert acc.value == 1000
    table.destroy()


def test_added_files_reach_actors_without_the_drivers_copy(rctx, tmp_path):
    """On a cluster the driver's copy is not on the other nodes: with it gone, each actor
    writes the bytes that travelled through the object store under its own directory."""
    import shutil

    from strataflow.shipping import files

    (tmp_path / "factor.txt").write_text("4")
    rctx.add_file(str(tmp_path / "factor.txt"))
    shutil.rmtree(rctx._files.root)  # as on a node that never had it

    def f(x):
        with open(files.get("factor.txt")) as fh:
            return (x * int(fh.read()), files.get("factor.txt"))

    out = rctx.range(8, num_partitions=4).map(f).collect()
    assert [v for v, _ in out] == [x * 4 for x in range(8)]
    assert all("exec-" in path for _, path in out)  # each executor's own copy


def test_shuffles(rctx):
    data = [(i % 17, i) for i in range(3000)]
    ds = rctx.parallelize(data, 6)
    grouped = dict(ds.group_by_key(9).map_values(sorted).collect())
    assert grouped == {k: sorted(v for kk, v in data if kk == k) for k in range(17)}
    assert sorted(ds.repartition(11).collect()) == sorted(data)
    arr = rctx.from_numpy(np.arange(20_000.0).reshape(-1, 2), 5).repartition(3)
    assert arr.num_partitions == 3 and arr.map_partitions(lambda a: [a.sum()]).sum() == np.arange(20_000.0).sum()


def test_equal_keys_meet_on_actors(rctx):
    """Dates, Enums, dataclasses and a class hashing a string (salted unless the actors
    start with PYTHONHASHSEED=0: an actor that did not would refuse it) meet in one group;
    the driver's lookup finds every value of each (issue 50)."""
    import datetime as dt

    from key_types import Color, Event, Name

    days = [dt.date(2024, 2, d) for d in range(1, 6)]
    keys = days + list(Color) + [Event("ann", days[0]), Name("ann"), Name("bob"), frozenset({"a", "b"})]
    pairs = rctx.parallelize([(k, i) for i in range(4) for k in keys], 4).partition_by(5)
    assert pairs.keys().distinct().count() == len(keys)
    assert dict(pairs.reduce_by_key(lambda a, b: a + b).collect()) == {k: 6 for k in keys}
    assert all(sorted(pairs.lookup(k)) == [0, 1, 2, 3] for k in keys)


def _shuffle_files(base) -> list[str]:
    return [f for _, _, files in os.walk(base) for f in files if f.startswith("shuffle_")]


def test_a_shuffle_across_nodes_reads_through_its_writers(cluster, tmp_path):
    """Each reduce task reads the outputs of its own node from their files and the other
    node's through the executor that wrote them (no shared file system is assumed); a
    file gone on the writer's side is a FetchFailed there, and its map task is rerun; the
    files of a shuffle no dataset reads are removed by their writers."""
    import gc

    data = [(i % 23, i) for i in range(6000)]
    want = {k: sum(v for kk, v in data if kk == k) for k in range(23)}
    with _context(tmp_path) as c:
        seen = _recorder(c)
        sums = c.parallelize(data, 6).reduce_by_key(lambda a, b: a + b, 4)
        assert dict(sums.collect()) == want
        m = c.metrics()
        assert m["shuffle_remote_fetches"] > 0 and m["shuffle_remote_bytes_read"] > 0, m
        # every reduce task read 6 outputs; those of the other node came through their writer
        by_node = {h.executor_id: h.node_id for h in c.fleet.live()}
        assert len(set(by_node.values())) == 2
        assert m["shuffle_remote_fetches"] < 4 * 6

        for root, _, files in os.walk(tmp_path / "shuffle"):  # lost on every node
            for f in files:
                if f.endswith(".data"):
                    os.remove(os.path.join(root, f))
        assert dict(sums.collect()) == want  # the maps ran again
        assert _events(seen, "FetchFailed"), "no FetchFailed: the missing outputs were never read"

        sid = max(c.map_outputs._outputs)
        paths = [p for out in c.map_outputs.outputs(sid, 6) for p in (out.index_path, out.data_path)]
        assert len(paths) == 12 and all(map(os.path.exists, paths))
        del sums
        gc.collect()
        assert c.parallelize(range(4), 2).count() == 4  # the next job cleans the dead shuffle
        # each removed by its writer, in the background
        wait_for(lambda: not any(map(os.path.exists, paths)), what="the dead shuffle's files to be removed")


def test_large_sources_go_through_the_object_store(cluster, tmp_path):
    """from_numpy and parallelize over 1 MB: the driver writes no slice files (another
    node could not read them); each executor gets its slices from Ray's object store, as
    arrays of its own (writable: not the store's read-only copy)."""
    from strataflow.executor.ray.session import RaySourceStore

    arr = np.arange(600_000.0).reshape(-1, 3)  # 4.8 MB
    recs = [(i, str(i)) for i in range(40_000)]
    with _context(tmp_path) as c:
        assert isinstance(c.sources, RaySourceStore)

        def bump(a):
            a += 1  # in place: fails on a read-only array
            return [a.sum()]

        assert c.from_numpy(arr, 4).map_partitions(bump).sum() == pytest.approx((arr + 1).sum())
        assert c.parallelize(recs, 4).map(lambda r: r[0]).sum() == sum(range(40_000))
        names = [n for _, dirs, files in os.walk(tmp_path) for n in dirs + files]
        assert not [n for n in names if n.startswith("source-")], names


@pytest.mark.parametrize("level", [lv.name for lv in StorageLevel.all() if lv.is_valid])
def test_persist_at_every_level(rctx, level):
    ds = rctx.from_numpy(np.arange(200_000.0).reshape(-1, 4), 6).map_partitions(lambda a: a * 2)
    ds.name = f"doubled-{level}"
    ds = ds.persist(level)
    want = np.arange(200_000.0).sum() * 2
    for _ in range(2):
        assert ds.map_partitions(lambda a: [a.sum()]).sum() == pytest.approx(want)
    status = {d.name: d for d in rctx.storage_status()}[ds.label]
    assert status.level.split(":")[0] == level  # AUTO shows its choice: AUTO:MEMORY_ONLY...
    assert status.memory_partitions + status.disk_partitions >= (6 if level != "AUTO" else 1)
    ds.unpersist()


def test_memory_and_disk_under_pressure(cluster, tmp_path):
    """4x pressure: 16 MB of points against 4 MB of memory over two executors."""
    pts = np.random.default_rng(0).normal(size=(500_000, 4))
    with _context(tmp_path, memory="4MB") as c:
        ds = c.from_numpy(pts, 16).map_partitions(np.array).persist(StorageLevel.MEMORY_AND_DISK)
        for _ in range(3):
            assert ds.map_partitions(lambda a: [a.sum(axis=0)]).sum() == pytest.approx(pts.sum(axis=0))
        m = c.metrics()
        assert m["disk_bytes_written"] > 0 and m["disk_hits"] > 0 and m["memory_hits"] > 0
        assert m["misses"] == 16  # each block computed once: nothing lost to the pressure


def test_a_task_error_comes_back_as_itself(rctx, tmp_path):
    """Caught as its own type, with the user's file, function and line from the actor's
    traceback, and run once (a user error is not retried in local mode: issue 39)."""
    calls = tmp_path / "calls"

    def bad(x):
        if x == 7:
            with open(calls, "a") as f:
                f.write("7\n")
            raise KeyError("seven")  # RAY-USER-RAISE
        return x

    with pytest.raises(KeyError) as info:
        rctx.parallelize(range(10), 2).map(bad).collect()
    err = info.value
    assert isinstance(err, TaskFailedError) and "seven" in str(err) and err.attempts == 1
    assert isinstance(err.__cause__, KeyError) and err.executor in {h.executor_id for h in rctx.fleet.live()}
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    here = os.path.abspath(__file__)
    with open(here) as f:
        line = next(n for n, src in enumerate(f, 1) if src.rstrip().endswith("# RAY-USER-RAISE"))
    assert f'File "{here}", line {line}, in bad' in text, text
    assert 'raise KeyError("seven")  # RAY-USER-RAISE' in text
    assert calls.read_text() == "7\n"  # once
    assert rctx.parallelize(range(10), 2).sum() == 45  # the executors go on


# -- K-means ---------------------------------------------------------------------------------------------
def test_kmeans_workload_through_the_cli(cluster, tmp_path):
    data = tmp_path / "km"
    kmeans_job.gen(str(data), size=0, points=12000, seed=3, fmt="text")  # ~2 MB: spills at 1 MB
    out = tmp_path / "report.json"
    code = cli_main(["run", "kmeans", "--data", str(data), "--backend", "ray", "--address", cluster.cluster.address,
                     "--executors", "2", "--parallelism", "2", "--memory", "1MB", "--iterations", "3",
                     "--quiet", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["result_check"] == "ok", report["result_check"]
    assert len(report["iteration_s"]) == 3 and report["metrics"]["disk_bytes_written"] > 0
    assert report["metrics"]["executors"] == 2


# -- locality ---------------------------------------------------------------------------------------------
def test_cached_partitions_run_where_they_are_cached(cluster, tmp_path):
    # a task waits for its block's executor however busy the machine (locality_wait's
    # bound is tested in test_delay_scheduling.py)
    with _context(tmp_path, locality_wait=HANG_S) as c:
        runs: list[dict] = []
        c.events.subscribe(lambda e: runs.append(e) if e["event"] == "TaskEnd" and e.get("ok") else None)
        ds = c.from_numpy(np.arange(160_000.0).reshape(-1, 4), 8).map_partitions(lambda a: a + 1)
        ds = ds.persist(StorageLevel.MEMORY_ONLY)
        ds.count()
        where = {}
        for it in range(3):
            runs.clear()
            assert ds.map_partitions(lambda a: [a.sum()]).sum() == pytest.approx((np.arange(160_000.0) + 1).sum())
            placed = {e["partition"]: e["executor"] for e in runs}
            assert len(placed) == 8
            if it == 0:
                where = placed
                assert set(where.values()) == {"0", "1"}  # both executors hold blocks
            assert placed == where  # every iteration reads its own executor's memory
        m = c.metrics()
        assert m["misses"] == 8 and m["memory_hits"] == 24 and m["peer_hits"] == 0


@pytest.mark.parametrize("level", ["MEMORY_ONLY", "DISK_ONLY"])
def test_a_block_read_elsewhere_is_fetched_from_its_holder(cluster, tmp_path, level):
    """One executor's tasks are held (until the other has run more partitions than it
    holds), so with no locality wait the other runs some of the partitions cached on the
    held one: it fetches those blocks from the held one's actor (a disk copy too: the two
    are on different nodes), computing nothing again."""
    with _context(tmp_path, locality_wait=0.0) as c:
        ds = c.from_numpy(np.arange(80_000.0).reshape(-1, 4), 8).map_partitions(lambda a: a * 3).persist(level)
        ds.count()
        held = {e: sum(d.memory_partitions + d.disk_partitions for d in st)
                for e, st in c.storage_status(by_executor=True).items()}
        slow, fast = sorted(held, key=held.get, reverse=True)  # the one holding more blocks is slow
        slow_pid = c.fleet.get(slow).pid

        ran = tmp_path / "fast-ran"
        ran.mkdir()

        def part_sum(a, pid=slow_pid, ran=str(ran), enough=held[fast] + 1):
            if os.getpid() == pid:  # held until the fast one ran a partition cached here
                wait_for(lambda: len(os.listdir(ran)) >= enough, what="the fast executor to take a partition")
            else:
                import uuid

                open(os.path.join(ran, uuid.uuid4().hex), "w").close()
            return [a.sum()]

        assert ds.map_partitions(part_sum).sum() == pytest.approx(np.arange(80_000.0).sum() * 3)
        m = c.metrics(by_executor=True)
        hits = {e: x["peer_hits"] for e, x in m.items()}
        served = {e: x["peer_blocks_served"] for e, x in m.items()}
        assert hits[fast] > 0, (held, hits, served)  # the fast one ran some of the slow one's partitions
        assert sum(hits.values()) == sum(served.values()), (hits, served)  # each one sent by its holder
        assert sum(e["misses"] for e in m.values()) == 8, m  # nothing recomputed


# -- faults ---------------------------------------------------------------------------------------------------
def _wait_executors(c: Context, n: int, timeout: float = HANG_S) -> None:
    wait_for(lambda: len(c.executors()) >= n, timeout, f"{n} executors")
    assert len(c.executors()) == n


def test_a_node_removed_mid_job(cluster, tmp_path):
    node = cluster.add_node()
    try:
        with _context(tmp_path, executors=3) as c:
            seen = _recorder(c)
            on_node = [h for h in c.fleet.live() if h.node_id == node.node_id]
            assert len(on_node) == 1, "SPREAD put no executor on the third node"
            doomed = on_node[0].executor_id
            ds = c.from_numpy(np.arange(120_000.0).reshape(-1, 4), 12).map_partitions(lambda a: a - 1)
            ds = ds.persist(StorageLevel.MEMORY_ONLY)
            ds.count()
            held = c.storage_status(by_executor=True)[doomed]
            assert sum(d.memory_partitions for d in held) > 0

            marks, doomed_pid = tmp_path / "started", on_node[0].pid
            marks.mkdir()

            def held_sum(a, marks=str(marks), doomed_pid=doomed_pid):
                if os.getpid() == doomed_pid:  # mid-task until its node is removed
                    open(os.path.join(marks, str(doomed_pid)), "w").close()
                    hold_until(os.path.join(marks, "never"), timeout=600)
                return [a.sum()]

            def remove_when_started():
                wait_for(lambda: os.listdir(marks), what="a task on the doomed node to start")
                cluster.cluster.remove_node(node, allow_graceful=False)

            remover = threading.Thread(target=remove_when_started)
            remover.start()
            try:
                got = ds.map_partitions(held_sum).sum()
            finally:
                remover.join(HANG_S)
            want = (np.arange(120_000.0) - 1).sum()
            assert got == pytest.approx(want)
            assert ds.map_partitions(lambda a: [a.sum()]).sum() == pytest.approx(want)
            lost = _events(seen, "ExecutorLost")
            assert [e["executor"] for e in lost] == [doomed] and lost[0]["replaced"]
            assert c.metrics()["misses"] > 12  # the lost node's blocks were computed again
            _wait_executors(c, 3)  # its bundle moved to the nodes left; a replacement runs there
            assert doomed not in c.executors()
            assert len(_events(seen, "ExecutorAdded")) == 1
            assert {h.node_id for h in c.fleet.live()} <= {n.node_id for n in cluster.nodes}
            assert c.parallelize(range(100), 6).sum() == 4950
    finally:
        if node in cluster.cluster.worker_nodes:
            cluster.cluster.remove_node(node, allow_graceful=False)


def test_an_actor_killed_mid_job(cluster, tmp_path):
    with _context(tmp_path) as c:
        seen = _recorder(c)
        pairs = c.parallelize(range(4000), 8).map(lambda x: (x % 11, x)).persist(StorageLevel.MEMORY_ONLY)
        pairs.count()
        victim = c.fleet.get("1")

        marks, victim_pid = tmp_path / "started", victim.pid
        marks.mkdir()

        def held(kv, marks=str(marks), victim_pid=victim_pid):
            if os.getpid() == victim_pid:  # mid-task until the actor is killed
                open(os.path.join(marks, str(victim_pid)), "w").close()
                hold_until(os.path.join(marks, "never"), timeout=600)
            return kv

        def kill_when_started():
            wait_for(lambda: os.listdir(marks), what="a task on the victim actor to start")
            victim.kill()

        killer = threading.Thread(target=kill_when_started)
        killer.start()
        try:
            got = dict(pairs.map(held).reduce_by_key(lambda a, b: a + b).collect())
        finally:
            killer.join(HANG_S)
        assert got == {k: sum(x for x in range(4000) if x % 11 == k) for k in range(11)}
        assert sorted(pairs.values().collect()) == list(range(4000))
        lost = _events(seen, "ExecutorLost")
        assert [e["executor"] for e in lost] == ["1"] and "actor died" in lost[0]["reason"]
        _wait_executors(c, 2)
        assert c.executors() == ["0", "2"]
        assert c.parallelize(range(100), 4).map(lambda x: x + 1).sum() == 5050


def test_tasks_the_driver_waits_for_together_are_one_actor_call_per_executor(cluster, tmp_path, monkeypatch):
    """Four cached partitions on two one-core executors (two each): an iteration over them
    is one ``run_many`` call per executor, the answer right; a failing task and a result
    that does not pickle fail their job with their own errors, and the others in the
    same call are not lost."""
    from strataflow.executor.ray.handle import RayExecutor

    kinds: list[str] = []
    real_watch = RayExecutor._watch

    def watch(self, ref, kind, fut):
        if kind in ("task", "tasks"):
            kinds.append(kind)
        return real_watch(self, ref, kind, fut)

    monkeypatch.setattr(RayExecutor, "_watch", watch)
    with _context(tmp_path, max_task_attempts=1) as c:
        pts = c.from_numpy(np.arange(40_000.0).reshape(-1, 4), 4).persist(StorageLevel.MEMORY_ONLY)
        pts.count()
        held = [s[0].memory_partitions for s in c.storage_status(by_executor=True).values()]
        assert held == [2, 2]
        kinds.clear()
        assert pts.map_partitions(lambda a: [a.sum()]).sum() == pytest.approx(np.arange(40_000.0).sum())
        assert kinds == ["tasks", "tasks"]

        fail_tasks_sent_together(pts, Exception)
        assert c.metrics()["misses"] == 4  # nothing recomputed: every task ran where its block is


# -- a local Ray ------------------------------------------------------------------------------------------
_LOCAL = r'''
import os, sys
import ray
from strataflow import Context
with Context(backend="ray", executors=2, memory="64MB", progress=False) as c:
    assert ray.is_initialized()
    print("sum", c.parallelize(range(100), 4).map(lambda x: x * 2).sum(), flush=True)
    print("pids", *sorted({h.pid for h in c.fleet.live()}), flush=True)
print("after", ray.is_initialized(), flush=True)
'''


def test_address_none_starts_a_local_ray_and_stops_it(cluster, tmp_path):
    tmpdir = tempfile.mkdtemp(prefix="sfrl", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": tmpdir, "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": os.pathsep.join([REPO, *sys.path])}
    env.pop("RAY_ADDRESS", None)
    try:
        proc = subprocess.run([sys.executable, "-c", _LOCAL], env=env, cwd=str(tmp_path), capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
        assert lines["sum"] == "9900" and lines["after"] == "False"
        pids = [int(p) for p in lines["pids"].split()]
        assert len(pids) == 2
        wait_for(lambda: not _ray_processes(tmpdir, descendants=False), what="the local Ray to end with its Context")
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


# -- joining a running cluster ------------------------------------------------------------------------------
_JOIN = r"""
import sys
import numpy as np
import ray
from strataflow import Context
with Context(backend="ray", address=sys.argv[1], executors=2, memory="64MB", progress=False) as c:
    print("nodes", len({h.node_id for h in c.fleet.live()}), flush=True)
    print("sum", c.from_numpy(np.arange(300_000.0), 4).map_partitions(lambda a: [a.sum()]).sum(), flush=True)
    pairs = c.parallelize([(i % 7, 1) for i in range(7000)], 5).reduce_by_key(lambda a, b: a + b, 3)
    print("counts", sorted(v for _, v in pairs.collect()) == [1000] * 7, flush=True)
print("after", ray.is_initialized(), flush=True)
"""


@pytest.mark.parametrize("how", ["gcs", "ray-client"])
def test_joining_a_running_cluster(cluster, tmp_path, how):
    """A driver in another process joins the running cluster by its address (``HOST:PORT``,
    as ``ray start`` prints it) or through Ray Client (``ray://``), runs jobs on executors
    of both worker nodes, and leaves the cluster running when its Context stops."""
    import ray

    address = cluster.cluster.address if how == "gcs" else f"ray://127.0.0.1:{CLIENT_PORT}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, *sys.path])}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run([sys.executable, "-c", _JOIN, address], env=env, cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert lines["nodes"] == "2" and float(lines["sum"]) == np.arange(300_000.0).sum()
    assert lines["counts"] == "True" and lines["after"] == "False"
    assert len([n for n in ray.nodes() if n["Alive"]]) >= 3  # the cluster is still up


def test_a_ray_client_session_that_fails_to_start_is_tried_again(caplog):
    """Ray Client's server forks a process per client, and that process dies at birth now
    and then (ray-project/ray#63202): the connection is tried again, with a warning, and
    the last failure goes to the caller naming the address; other errors are not retried."""
    from strataflow.executor.ray.session import connect_ray_client

    calls = []

    def flaky(failures):
        def init(address):
            calls.append(address)
            if len(calls) <= failures:
                raise ConnectionAbortedError("Initialization failure from server")
        return init

    with caplog.at_level("WARNING", logger="strataflow"):
        connect_ray_client("ray://h:1", attempts=3, init=flaky(2))
    assert calls == ["ray://h:1"] * 3
    assert sum("attempt" in r.getMessage() for r in caplog.records) == 2
    calls.clear()
    with pytest.raises(ConnectionAbortedError, match=r"ray://h:1.*3 times"):
        connect_ray_client("ray://h:1", attempts=3, init=flaky(5))
    assert len(calls) == 3
    calls.clear()

    def refused(address):
        calls.append(address)
        raise ConnectionError("refused")

    with pytest.raises(ConnectionError, match="refused"):
        connect_ray_client("ray://h:1", attempts=3, init=refused)
    assert len(calls) == 1
