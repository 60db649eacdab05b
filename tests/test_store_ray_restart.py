"""The store on Ray outlives the cluster, and no application's hold outlives the application
(issue 42: "a store killed with kill -9 restarts and serves every published dataset"; on a
cluster its store servers are the store).

Clusters of their own (``test_ray_backend.private_ray``: the private network namespace and
Ray's temp dir as there), two worker nodes each named by a Ray label
(``strataflow-store-node``), the head too (its store keeps the catalog), so that their stores (``store-{node}``) are at the same paths
when the cluster is started again: the node ids are new at every start, the labels are
not, as the paths of a real cluster's nodes (their own ``/dev/shm``) are not.

- A saves on both nodes and exits; the whole cluster is shut down (every server gone);
  a new cluster starts over the same stores; B opens the dataset by name and reads every
  partition right, on the node holding it: no rebuild, nothing fetched, and each node's
  new server held the blocks before its first sweep.
- A driver killed with ``kill -9`` while it holds a ``STORE`` dataset's blocks and has a
  save half done: the servers see its job ended and let both go (the blocks swept), while
  the dataset it published before stays held.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys

import pytest

from test_ray_backend import REPO, SimCluster, private_ray, wait_ray_gone
from test_store_ray import _A, _PRELUDE, _blocks, _driver
from waits import HANG_S, wait_for

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                reason="Ray is not installed (pip install strataflow[ray])")

LABEL = "strataflow-store-node"
NAMES = ["n1", "n2"]


@pytest.fixture(scope="module")
def ray_env():
    with private_ray() as sims:
        yield sims


def _start(sims: list) -> SimCluster:
    for old in sims:
        old.shutdown()
    sim = SimCluster(os.environ["RAY_TMPDIR"], labels=[{LABEL: n} for n in NAMES], head_labels={LABEL: "head"},
                     client_port=None)
    sims.append(sim)
    return sim


def _next_json(proc: subprocess.Popen) -> dict:
    """The next JSON line a driver prints (Ray also forwards its workers' logs there)."""
    for line in proc.stdout:
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"the driver ended (exit status {proc.wait()}) before it said what the test waits for")


def _start_driver(source: str, sim: SimCluster, store: str, marks) -> subprocess.Popen:
    """A driver (``source``) of its own, joined to ``sim``'s cluster; its stdout piped."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, os.path.join(REPO, "tests"), *sys.path])}
    env.pop("RAY_ADDRESS", None)
    return subprocess.Popen([sys.executable, "-c", source, sim.cluster.address, store, str(marks)], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, text=True)


def _current(sims: list) -> SimCluster:
    live = [s for s in sims if s.cluster is not None]
    return live[-1] if live else _start(sims)


# B: an executor on each node; every partition waits for its block's node
_B_AFTER = _PRELUDE + r"""
from waits import HANG_S
with Context(backend="ray", executors=2, memory="64MB", progress=False, store=store, locality_wait=HANG_S) as c:
    ds = c.store.open("points")
    ran = ds.map_partitions_with_index(
        lambda i, a: [(i, ray.get_runtime_context().get_node_id(), bool(np.array_equal(a, part(i))))]).collect()
    entry = c.store.info("points")
    print(json.dumps({"ran": ran, "id": entry.id, "rebuilds": entry.rebuilds, "stats": c.store.backing.stats(),
                      "rebuilt": c.metrics()["store"]["app"].get("rebuilds", 0),
                      "fig_nodes": c.metrics()["store"]["datasets"]["points"]["nodes"]}), flush=True)
"""


def test_the_catalog_and_its_blocks_outlive_the_cluster(ray_env, tmp_path):
    store, marks = str(tmp_path / "store-{node}"), tmp_path / "marks"
    marks.mkdir()
    roots = {n: store.replace("{node}", n) for n in NAMES}
    sim = _start(ray_env)
    (saved,) = _driver(_A, sim, store, str(marks))
    label_of = {node.node_id: name for node, name in zip(sim.nodes, NAMES)}
    placed = {label_of[n] for n in saved["nodes"]}
    assert placed == set(NAMES)  # blocks in both nodes' stores
    before = {n: _blocks(r) for n, r in roots.items()}
    (did,) = {d for b in before.values() for d in b}
    idents = {n: open(os.path.join(r, "store-id")).read() for n, r in roots.items()}
    assert len(set(idents.values())) == 2
    assert all(os.stat(os.path.join(r, "store-id")).st_mode & 0o777 == 0o600 for r in roots.values())

    # the whole cluster goes: every server with it
    ray_env[-1].shutdown()
    assert wait_ray_gone(os.environ["RAY_TMPDIR"]) == []
    assert {n: _blocks(r) for n, r in roots.items()} == before

    sim = _start(ray_env)  # new node ids, the same labels, so the same stores
    assert not {n.node_id for n in sim.nodes} & set(label_of)
    (got,) = _driver(_B_AFTER, sim, store, str(marks))
    assert got["id"] == did and got["rebuilds"] == 0 and got["rebuilt"] == 0  # opened, not rebuilt
    label_now = {node.node_id: name for node, name in zip(sim.nodes, NAMES)}
    assert sorted(i for i, _, _ in got["ran"]) == list(range(8)) and all(ok for _, _, ok in got["ran"])
    for i, node, _ in got["ran"]:  # each partition read on the node whose store holds its block
        assert f"part-{i:05d}.sfb" in before[label_now[node]][did]
    assert sum(s["served"] for s in got["stats"]) == 0  # nothing fetched
    node_now = {name: node for node, name in label_now.items()}  # the figures name this cluster's nodes
    assert got["fig_nodes"] == {node_now[n][:12]: len(before[n][did]) for n in NAMES}
    by_store = {s["store"]: s for s in got["stats"]}
    for n in NAMES:  # each node's new server held the dataset from its start (before its sweep)
        assert did in by_store[idents[n]]["reheld"] and did in by_store[idents[n]]["held"]
    assert {n: _blocks(r) for n, r in roots.items()} == before  # swept at the servers' start: nothing gone


# D: publishes "kept", persists a dataset at STORE on both nodes, says so, then starts a
# save whose partition 7 waits for a file no one makes: the test kills D meanwhile
_D = _PRELUDE + r"""
from strataflow import StorageLevel
from waits import hold_until

def hang_last(i, it):
    if i == 7:
        open(os.path.join(marks, "started"), "w").close()
        hold_until(os.path.join(marks, "never"))
    return part(i)

with Context(backend="ray", executors=2, memory="64MB", progress=False, store=store) as c:
    kept = c.store.save(c.parallelize(range(4), 4).map_partitions_with_index(lambda i, it: part(i)), "kept")
    cached = c.parallelize(range(8), 8).map_partitions_with_index(lambda i, it: part(i)).persist(StorageLevel.STORE)
    cached.count()
    print(json.dumps({"kept": kept.id, "app": c.app_id, "cached": cached.id}), flush=True)
    c.store.save(c.parallelize(range(8), 8).map_partitions_with_index(hang_last), "half")
"""


def test_the_holds_of_a_driver_killed_go_with_it(ray_env, tmp_path):
    import ray

    from strataflow.store.level_blocks import level_id
    from strataflow.store.ray_server import servers

    sim = _current(ray_env)
    store, marks = str(tmp_path / "store-{node}"), tmp_path / "marks"
    marks.mkdir()
    roots = [store.replace("{node}", n) for n in NAMES]
    proc = _start_driver(_D, sim, store, marks)
    try:
        said = _next_json(proc)
        lvl = level_id(said["app"], said["cached"])

        def half_written() -> set[str]:  # the half-done save's blocks: 7 of its 8, on the nodes' stores
            ids = {d for r in roots for d in _blocks(r) if d not in (said["kept"], lvl)}
            n = sum(len(_blocks(r).get(d, [])) for r in roots for d in ids)
            return ids if n == 7 and (marks / "started").exists() else set()

        (half,) = wait_for(half_written, what="the half-done save's seven blocks")
        assert sum(len(_blocks(r).get(lvl, [])) for r in roots) == 8
        held = {d for s in ray.get([s.stats.remote() for s in servers(store).values()]) for d in s["held"]}
        assert {said["kept"], lvl, half} <= held
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()

    def let_go() -> bool:
        held = {d for s in ray.get([s.stats.remote() for s in servers(store).values()]) for d in s["held"]}
        on_disk = {d for r in roots for d in _blocks(r)}
        return not ({lvl, half} & held) and not ({lvl, half} & on_disk)

    wait_for(let_go, timeout=2 * HANG_S, what="the servers to let the killed driver's holds go and sweep its blocks",
             interval=0.2)
    stats = {os.path.realpath(s["path"]): s for s in ray.get([s.stats.remote() for s in servers(store).values()])}
    with_kept = [r for r in roots if _blocks(r).get(said["kept"])]
    assert sum(len(_blocks(r)[said["kept"]]) for r in with_kept) == 4  # published: held for the catalog
    assert all(said["kept"] in stats[os.path.realpath(r)]["held"] for r in with_kept)
    entry = _driver(_PRELUDE + r"""
with Context(backend="ray", executors=2, memory="64MB", progress=False, store=store) as c:
    got = c.store.open("kept").collect_partitions()
    print(json.dumps({"ok": all(np.array_equal(got[i], part(i)) for i in range(4))}), flush=True)
    c.store.rm("kept")
""", sim, store, str(marks))
    assert entry == [{"ok": True}]
    assert not any(_blocks(r) for r in roots)


def test_a_stores_identity_is_made_once_private_and_kept(tmp_path):
    from strataflow.store.ray_holds import IDENT_FILE, store_ident

    d = tmp_path / "s"
    d.mkdir(mode=0o700)
    first = store_ident(str(d))
    assert len(first) == 32 and store_ident(str(d)) == first
    assert os.stat(d / IDENT_FILE).st_mode & 0o777 == 0o600
    assert sorted(os.listdir(d)) == [IDENT_FILE]  # no temporary file left
    other = tmp_path / "t"
    other.mkdir(mode=0o700)
    assert store_ident(str(other)) != first


def test_holds_of_ended_jobs_go_unless_the_catalog_names_them(tmp_path):
    from strataflow.store.ray_holds import Holds

    d = tmp_path / "s"
    d.mkdir(mode=0o700)
    holds = Holds(str(d))
    for did, job in [("shared", "a"), ("shared", "b"), ("saving", "a"), ("published", "a"), ("kept", None)]:
        holds.hold(did, job)
    assert holds.jobs() == {"a", "b"}
    assert sorted(holds.reap({"a"}, published={"published"})) == ["saving"]  # b still holds "shared"
    assert holds.ids() == ["kept", "published", "shared"]
    assert not (d / "leases" / "saving").exists()  # its lease file went with it
    assert holds.reap({"b"}, published=set()) == ["shared"]
    assert holds.jobs() == set()  # "published" is now held for the catalog, as "kept" was
    assert holds.reap({"a", "b"}, published=set()) == [] and holds.ids() == ["kept", "published"]
    assert holds.release("published") and not holds.release("published")


def test_holds_are_recorded_and_taken_again_in_the_same_cluster_session_only(tmp_path):
    from strataflow.store.ray_holds import Holds

    d = tmp_path / "s"
    d.mkdir(mode=0o700)
    record = str(d / "holds.json")
    first = Holds(str(d), record, session="s1")
    first.hold("saving", "a")
    first.hold("published", None)
    first.hold("gone", "a")
    first.release("gone")
    assert os.stat(record).st_mode & 0o777 == 0o600
    again = Holds(str(d), record, session="s1")  # the server restarted by Ray, same cluster
    assert again.restore() == ["published", "saving"] and again.jobs() == {"a"}
    assert again.reap({"a"}, published={"published"}) == ["saving"]
    assert Holds(str(d), record, session="s2").restore() == []  # a cluster started again: its jobs are gone


# E: persists a dataset at STORE on both nodes, then waits for the test before reading it again
_E = _PRELUDE + r"""
from strataflow import StorageLevel
from waits import HANG_S, hold_until
with Context(backend="ray", executors=2, memory="64MB", progress=False, store=store, locality_wait=HANG_S) as c:
    cached = c.parallelize(range(8), 8).map_partitions_with_index(lambda i, it: part(i)).persist(StorageLevel.STORE)
    cached.count()
    print(json.dumps({"app": c.app_id, "cached": cached.id}), flush=True)
    hold_until(os.path.join(marks, "go"))
    m0 = c.metrics()
    ok = cached.map_partitions_with_index(lambda i, a: [bool(np.array_equal(a, part(i)))]).collect()
    m1 = c.metrics()
    print(json.dumps({"ok": all(ok), "hits": m1["store_hits"] - m0["store_hits"],
                      "misses": m1["misses"] - m0["misses"]}), flush=True)
"""


def test_a_server_restarted_after_a_crash_holds_again_what_it_held(ray_env, tmp_path):
    """A node's store server killed (``kill -9``) while an application's ``STORE`` blocks
    lie in its store: Ray restarts it, and before its first sweep it takes again the holds
    it had recorded in this cluster session; the application's next pass maps every block
    where it lies, none recomputed."""
    import ray

    from strataflow.store.level_blocks import level_id
    from strataflow.store.ray_server import servers

    sim = _current(ray_env)
    store, marks = str(tmp_path / "store-{node}"), tmp_path / "marks"
    marks.mkdir()
    victim_root = os.path.realpath(store.replace("{node}", NAMES[0]))
    proc = _start_driver(_E, sim, store, marks)
    try:
        said = _next_json(proc)
        lvl = level_id(said["app"], said["cached"])
        (victim,) = [h for h in servers(store).values()
                     if os.path.realpath(ray.get(h.stats.remote())["path"]) == victim_root]
        before = ray.get(victim.stats.remote())
        blocks = _blocks(victim_root).get(lvl, [])
        assert lvl in before["held"] and blocks
        os.kill(before["pid"], signal.SIGKILL)

        def restarted():
            try:
                got = ray.get(victim.stats.remote(), timeout=HANG_S)
            except ray.exceptions.RayError:
                return None
            return got if got["pid"] != before["pid"] else None

        after = wait_for(restarted, what="Ray to restart the store server", interval=0.2)
        assert lvl in after["restored"] and lvl in after["held"]
        assert _blocks(victim_root).get(lvl, []) == blocks  # its start's sweep left them
        (marks / "go").touch()
        read = _next_json(proc)
        assert read == {"ok": True, "hits": 8, "misses": 0}
        assert proc.wait(timeout=HANG_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
