"""The shared store on a Ray cluster (issue 42): a store per node, one catalog for the
cluster, a block read on another node fetched from its node's store.

The simulated cluster of ``test_ray_backend.py`` (its ``cluster`` fixture: a private
network namespace, a head without CPUs and two worker nodes, processes of this machine).
The nodes' stores are told apart by ``{node}`` in the store's path (on a real cluster
each node has its own ``/dev/shm``). Applications A and B are separate drivers
(subprocesses joining the cluster by its address): A saves and exits; B opens the
dataset by name and reads every partition, some from the other node's store.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from test_ray_backend import REPO, cluster  # noqa: F401 - the module's cluster fixture

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                reason="Ray is not installed (pip install strataflow[ray])")

_PRELUDE = r"""
import json, os, sys
import numpy as np
import ray
from strataflow import Context
address, store, marks = sys.argv[1], sys.argv[2], sys.argv[3]
ray.init(address=address, logging_level="warning",
         runtime_env={"env_vars": {"PYTHONPATH": os.environ["PYTHONPATH"]}})

def part(i):
    return np.arange(i * 1000, (i + 1) * 1000, dtype=np.float64).reshape(-1, 4)
"""

# A: two executors, one per worker node; the first task of each waits until a task of the
# other node has started, so both nodes' stores get blocks (not left to the scheduler)
_A = _PRELUDE + r"""
from waits import hold_until

def make(i, it):
    node = ray.get_runtime_context().get_node_id()
    open(os.path.join(marks, node), "w").close()
    others = lambda: [n for n in os.listdir(marks) if n != node and not n.startswith(".")]
    hold_until(os.path.join(marks, ".both")) if not others() else open(os.path.join(marks, ".both"), "w").close()
    return part(i)

with Context(backend="ray", executors=2, memory="64MB", progress=False, store=store) as c:
    entry = c.store.save(c.parallelize(range(8), 8).map_partitions_with_index(make), "points")
    print(json.dumps({"nodes": [p["node"] for p in entry.partitions]}), flush=True)
"""

# A with one executor: every block in one node's store
_A_ONE_NODE = _PRELUDE + r"""
with Context(backend="ray", executors=1, memory="64MB", progress=False, store=store) as c:
    entry = c.store.save(c.parallelize(range(8), 8).map_partitions_with_index(lambda i, it: part(i)), "points")
    print(json.dumps({"nodes": [p["node"] for p in entry.partitions]}), flush=True)
"""

# B: one executor (on one of the two nodes); reads every partition twice
_B = _PRELUDE + r"""
with Context(backend="ray", executors=1, memory="64MB", progress=False, store=store) as c:
    ds = c.store.open("points")
    first = ds.collect_partitions()
    stats1 = c.store.backing.stats()
    again = ds.map_partitions(lambda a: [float(a.sum())]).collect()
    stats2 = c.store.backing.stats()
    node = c.fleet.live()[0].node_id
    ok = all(np.array_equal(first[i], part(i)) for i in range(8))
    data = os.path.join(store.replace("{node}", node[:12]), "data")
    files = {d: sorted(os.listdir(os.path.join(data, d))) for d in os.listdir(data)}
    m = c.metrics()["store"]
    print(json.dumps({"ok": ok, "sums": again, "node": node, "stats1": stats1, "stats2": stats2,
                      "names": [e.name for e in c.store.ls()], "files": files,
                      "figures": {k: m[k] for k in ("fetches", "app", "nodes", "tiers", "datasets")}}), flush=True)
    c.store.rm("points")
    print(json.dumps({"after_rm": [e.name for e in c.store.ls()], "stats3": c.store.backing.stats()}), flush=True)
"""


def _driver(code: str, cluster, store: str, marks: str) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, os.path.join(REPO, "tests"), *sys.path])}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run([sys.executable, "-c", code, cluster.cluster.address, store, marks], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _blocks(path: str) -> dict[str, list[str]]:
    """dataset id -> block files, in a node's store (its first tier)."""
    d = os.path.join(path, "data")
    return {did: sorted(os.listdir(os.path.join(d, did))) for did in os.listdir(d)} if os.path.isdir(d) else {}


def test_b_opens_by_name_what_a_saved_reading_the_other_nodes_store(cluster, tmp_path):  # noqa: F811
    store, marks = str(tmp_path / "store-{node}"), tmp_path / "marks"
    marks.mkdir()
    (saved,) = _driver(_A, cluster, store, str(marks))
    workers = {n.node_id for n in cluster.nodes}
    by_node = saved["nodes"]
    assert set(by_node) == workers  # both worker nodes' stores hold blocks
    roots = {n: store.replace("{node}", n[:12]) for n in workers}
    for n in workers:  # each block in the store of the node that wrote it, and only there
        (files,) = _blocks(roots[n]).values()
        assert files == [f"part-{i:05d}.sfb" for i, m in enumerate(by_node) if m == n]

    got, removed = _driver(_B, cluster, store, str(marks))
    assert got["ok"] and got["names"] == ["points"]
    assert got["sums"] == [float(np.arange(i * 1000, (i + 1) * 1000).sum()) for i in range(8)]
    elsewhere = [i for i, m in enumerate(by_node) if m != got["node"]]
    assert elsewhere  # A's blocks lie on both nodes: B's one executor reads some from the other
    served = {s["node"]: s["served"] for s in got["stats1"]}
    assert sum(served.values()) == len(elsewhere) >= 1  # each fetched once, from the node that holds it
    assert served.get(got["node"], 0) == 0
    # the second pass read the copies B's node cached: nothing more crossed
    assert {s["node"]: s["served"] for s in got["stats2"]} == served
    # the figures: fetches between nodes, B's reads (two passes) and fetches, bytes per node's store
    figures = got["figures"]
    assert figures["fetches"] == len(elsewhere)
    app = figures["app"]
    assert (app["opens"], app["block_reads"], app["fetches"]) == (1, 16, len(elsewhere))
    assert app["bytes_fetched"] > 0 and app["datasets"] == {"points": 16}
    assert {n[:12] for n in workers} <= set(figures["nodes"])
    assert sum(figures["tiers"].values()) == sum(sum(n["tiers"].values()) for n in figures["nodes"].values()) > 0
    assert figures["nodes"][got["node"][:12]]["served"] == 0
    assert figures["datasets"]["points"]["nodes"] == {n[:12]: by_node.count(n) for n in workers}
    (files,) = got["files"].values()  # B's node's store: its own blocks and the copies
    assert files == [f"part-{i:05d}.sfb" for i in range(8)]
    # rm: the cluster's catalog forgets it, every node lets its blocks go
    assert removed["after_rm"] == [] and all(not s["held"] for s in removed["stats3"])
    for n in workers:
        assert _blocks(roots[n]) == {}


# B: an executor on each worker node; a task waits for its block's node however long that
# takes (no timing in the outcome): every partition is read where its block lies
_B_LOCAL = _PRELUDE + r"""
from waits import HANG_S
with Context(backend="ray", executors=2, memory="64MB", progress=False, store=store, locality_wait=HANG_S) as c:
    ds = c.store.open("points")
    ran = ds.map_partitions_with_index(
        lambda i, a: [(i, ray.get_runtime_context().get_node_id(), float(a.sum()))]).collect()
    print(json.dumps({"ran": ran, "executors": sorted(h.node_id for h in c.fleet.live()),
                      "stats": c.store.backing.stats()}), flush=True)
    c.store.rm("points")
"""


def test_tasks_run_on_the_node_that_holds_their_block_nothing_fetched(cluster, tmp_path):  # noqa: F811
    """With a free executor on every node, each task of B's read runs on the node the
    catalog names for its block (its preferred location) and maps it there: no block
    crosses between nodes (the servers count what they serve). Every block lies on one
    node, so B's executor on the other node gets none of the tasks (spread over both, half
    would fetch; with blocks on both nodes a spread could match by chance). The first test
    is the other case: B's one executor has no peer on the other node, so those partitions
    run on it at once and are fetched."""
    store, marks = str(tmp_path / "store-{node}"), tmp_path / "marks"
    marks.mkdir()
    (saved,) = _driver(_A_ONE_NODE, cluster, store, str(marks))
    by_node = saved["nodes"]
    assert len(set(by_node)) == 1
    (got,) = _driver(_B_LOCAL, cluster, store, str(marks))
    assert got["executors"] == sorted({n.node_id for n in cluster.nodes})  # one executor per worker node
    assert sorted(i for i, _, _ in got["ran"]) == list(range(8))
    assert {i: node for i, node, _ in got["ran"]} == dict(enumerate(by_node))  # each where its block lies
    assert [s for _, _, s in sorted(got["ran"])] == [float(np.arange(i * 1000, (i + 1) * 1000).sum())
                                                     for i in range(8)]
    assert sum(s["served"] for s in got["stats"]) == 0  # nothing fetched from another node


def test_a_block_damaged_in_the_other_nodes_store_is_refused_not_served(cluster, tmp_path):  # noqa: F811
    """B damages the blocks that lie in the *other* node's store (their last bytes): the
    holder's server finds them failing their digest and sends none; B's task fails with
    ``BlockCorrupt`` naming the dataset, the partition and the file."""
    store, marks = str(tmp_path / "store-{node}"), tmp_path / "marks"
    marks.mkdir()
    _driver(_A, cluster, store, str(marks))
    code = _PRELUDE + r"""
from strataflow import TaskFailedError
with Context(backend="ray", executors=1, memory="64MB", progress=False, store=store, task_max_failures=1) as c:
    here = c.fleet.live()[0].node_id
    entry = c.store.info("points")
    for p in entry.partitions:
        if p["node"] != here:
            path = os.path.join(store.replace("{node}", p["node"][:12]), "data", entry.id,
                                f"part-{p['partition']:05d}.sfb")
            with open(path, "r+b") as fh:
                fh.seek(-8, 2)
                fh.write(b"XXXXXXXX")
    try:
        c.store.open("points").collect_partitions()
        print(json.dumps({"error": None}))
    except TaskFailedError as exc:
        print(json.dumps({"error": str(exc)}))
    print(json.dumps({"stats": c.store.backing.stats()}))
    c.store.rm("points")
"""
    out, stats = _driver(code, cluster, store, str(marks))
    assert out["error"] and "BlockCorrupt" in out["error"] and "'points'" in out["error"]
    assert "fails its checksum" in out["error"] and "does not serve it" in out["error"]
    assert sum(s["served"] for s in stats["stats"]) == 0


# A saves one dataset twice: with its lineage and without
_A_LINEAGE = _PRELUDE + r"""
with Context(backend="ray", executors=2, memory="64MB", progress=False, store=store) as c:
    ds = c.parallelize(range(8), 8).map_partitions_with_index(lambda i, it: part(i))
    lin, bare = c.store.save(ds, "lin", lineage=True), c.store.save(ds, "bare")
    print(json.dumps({"lin": lin.id, "bare": bare.id, "lineage": [lin.lineage, bare.lineage],
                      "nodes": sorted({p["node"] for p in lin.partitions + bare.partitions})}), flush=True)
"""

# B opens both after their blocks were lost on every node
_B_LINEAGE = _PRELUDE + r"""
from strataflow.store.errors import DatasetEvicted
with Context(backend="ray", executors=2, memory="64MB", progress=False, store=store) as c:
    seen = []
    c.events.subscribe(seen.append)
    try:
        c.store.open("bare")
        err = None
    except DatasetEvicted as exc:
        err = str(exc)
    got = c.store.open("lin").collect_partitions()
    entry = c.store.info("lin")
    m = c.metrics()["store"]
    lineage_dir = os.path.join(c.store.path, "cluster", "lineage")
    print(json.dumps({"err": err, "ok": all(np.array_equal(got[i], part(i)) for i in range(8)), "id": entry.id,
                      "rebuilds": entry.rebuilds, "lineage": entry.lineage, "lineage_files": os.listdir(lineage_dir),
                      "events": [e["event"] for e in seen if e["event"].startswith("Store")],
                      "figures": {k: m[k] for k in ("rebuilds", "app", "datasets")}}), flush=True)
    c.store.rm("lin")
    c.store.rm("bare")
    print(json.dumps({"lineage_files": os.listdir(lineage_dir)}), flush=True)
"""


def test_a_dataset_lost_on_every_node_is_rebuilt_from_its_lineage_or_refused_without(cluster, tmp_path):  # noqa: F811
    """A saves ``lin`` with ``lineage=True`` (kept beside the cluster's catalog) and
    ``bare`` without; every node's store then loses their blocks (a node wiped). B's
    ``open("bare")`` raises DatasetEvicted saying it has no lineage; ``open("lin")``
    rebuilds it (one job in B's executors), reads it right and counts the rebuild: the
    entry's, the store's and B's figures. ``rm`` drops the lineage files."""
    store, marks = str(tmp_path / "store-{node}"), tmp_path / "marks"
    marks.mkdir()
    (saved,) = _driver(_A_LINEAGE, cluster, store, str(marks))
    assert saved["lineage"] == [True, False]
    for n in saved["nodes"]:  # every block of both, on every node that holds some
        root = store.replace("{node}", n[:12])
        for did in (saved["lin"], saved["bare"]):
            shutil.rmtree(os.path.join(root, "data", did))
    got, after = _driver(_B_LINEAGE, cluster, store, str(marks))
    assert "'bare'" in got["err"] and "saved without lineage, so it cannot be rebuilt" in got["err"]
    assert "lost the blocks of partitions [0, 1, 2, 3, 4, 5, 6, 7]" in got["err"]
    assert got["ok"] and got["lineage"] and got["rebuilds"] == 1 and got["id"] != saved["lin"]
    assert got["lineage_files"] == [f"{got['id']}.pkl"]  # the old id's went with it
    assert got["events"] == ["StoreRebuild", "StoreOpen"]
    figures = got["figures"]
    assert figures["rebuilds"] == 1 and figures["datasets"]["lin"]["rebuilds"] == 1
    assert (figures["app"]["rebuilds"], figures["app"]["saves"], figures["app"]["opens"]) == (1, 1, 1)
    assert figures["app"]["block_reads"] == 8
    assert after["lineage_files"] == []


def test_a_dataset_whose_node_left_the_cluster_is_rebuilt_from_its_lineage(cluster, tmp_path):  # noqa: F811
    """A saves on three nodes; the third leaves the cluster (removed, not gracefully), its
    store with it. B finds the partitions that lay there lost: ``bare`` is refused,
    naming that node, ``lin`` is rebuilt on the nodes left; ``rm`` does not wait for the
    gone node's server."""
    import ray

    from waits import wait_for

    node = cluster.add_node()
    try:
        store, marks = str(tmp_path / "store-{node}"), tmp_path / "marks"
        marks.mkdir()
        (saved,) = _driver(_A_LINEAGE.replace("executors=2", "executors=3"), cluster, store, str(marks))
        assert node.node_id in saved["nodes"]  # SPREAD: blocks on the third node too
        cluster.cluster.remove_node(node, allow_graceful=False)
        wait_for(lambda: node.node_id not in {n["NodeID"] for n in ray.nodes() if n["Alive"]},
                 what="the removed node to be seen dead")
        got, after = _driver(_B_LINEAGE, cluster, store, str(marks))
        assert "'bare'" in got["err"] and node.node_id[:12] in got["err"] and "without lineage" in got["err"]
        assert got["ok"] and got["rebuilds"] == 1 and got["figures"]["app"]["rebuilds"] == 1
        assert after["lineage_files"] == []
    finally:
        if node in cluster.cluster.worker_nodes:
            cluster.cluster.remove_node(node, allow_graceful=False)


def test_the_report_shows_the_fetches_between_nodes():
    from strataflow.report.store_rows import store_rows

    rows = store_rows([{"event": "StoreFigures", "app": {}, "tiers": {"mem": 0}, "fetches": 3,
                        "bytes_fetched": 3 << 20}], {})
    (row,) = [r for r in rows if r.key == "store_fetches"]
    assert row.value == 3 and row.text == "3 (3.00 MiB)"


def test_store_level_blocks_are_held_on_every_node_by_its_server(cluster, tmp_path):  # noqa: F811
    """``persist(StorageLevel.STORE)`` on the cluster: each executor writes its blocks into
    its own node's store and that node's server holds them, so another user of that
    store (its start sweeps) leaves them; the executors report them to the block master,
    so the next pass runs each task where its block lies (a locality wait long enough to
    never give up) and maps it there; a task placed on the other node (the preference
    inverted) fetches it from the holder's executor instead of recomputing it;
    ``unpersist`` lets them go on every node."""
    from strataflow import Context, StorageLevel
    from strataflow.store import Store
    from strataflow.store.level_blocks import level_id
    from waits import HANG_S

    store = str(tmp_path / "store-{node}")
    roots = {n.node_id: store.replace("{node}", n.node_id[:12]) for n in cluster.nodes}
    dirs = {k: tmp_path / k for k in ("local", "shuffle")}
    for d in dirs.values():
        d.mkdir()
    with Context(backend="ray", executors=2, memory="64MB", progress=False, store=store, locality_wait=HANG_S,
                 local_dirs=[str(dirs["local"])], shuffle_dirs=[str(dirs["shuffle"])]) as c:
        ds = c.parallelize(range(8), 8).map_partitions_with_index(
            lambda i, it: np.full((250, 4), float(i))).persist(StorageLevel.STORE)
        assert ds.map_partitions(lambda a: [float(a.sum())]).collect() == [1000.0 * i for i in range(8)]
        lid = level_id(c.app_id, ds.id)
        placed = {n: _blocks(r).get(lid, []) for n, r in roots.items()}
        assert all(placed.values()) and sum(map(len, placed.values())) == 8  # blocks on both nodes' stores
        for n, r in roots.items():  # another user of each node's store: its start sweeps what no one holds
            assert lid not in Store(r).swept["datasets"]
            assert _blocks(r).get(lid, []) == placed[n]
        held = {s["node"]: s["held"] for s in c.store.backing.stats()}
        assert all(lid in held[n] for n in roots)

        def where_and_sums():
            return ds.map_partitions_with_index(lambda i, a: [(i, ray_node(), float(a.sum()))]).collect()

        m0 = c.metrics()
        ran = where_and_sums()
        m1 = c.metrics()
        assert [s for _, _, s in ran] == [1000.0 * i for i in range(8)]
        assert all(f"part-{i:05d}.sfb" in placed[node] for i, node, _ in ran)  # each on its block's node
        assert (m1["store_hits"] - m0["store_hits"], m1["misses"] - m0["misses"]) == (8, 0)
        master, ids = c.block_master, c.executors()
        real = master.preferred
        master.preferred = lambda blocks: [e for e in ids if e not in real(blocks)] if real(blocks) else []
        ran = where_and_sums()  # every task on the node its block is not on: fetched from the holder
        m2 = c.metrics()
        master.preferred = real
        assert [s for _, _, s in ran] == [1000.0 * i for i in range(8)]
        assert all(f"part-{i:05d}.sfb" not in placed[node] for i, node, _ in ran)
        assert (m2["peer_hits"] - m1["peer_hits"], m2["misses"] - m1["misses"]) == (8, 0)
        ds.unpersist()
        assert all(lid not in s["held"] for s in c.store.backing.stats())
        for r in roots.values():
            assert lid not in _blocks(r)


def ray_node() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()
