"""Tachyon's lineage in the shared store (issue 42, phase 2): a dataset saved with its
lineage and then evicted from every tier (``balance`` under capacity pressure) is rebuilt
when a later application opens it, and counted; one saved without lineage says so.
Also the store's figures (per application, per tier, moves, evictions, rebuilds) and hot
datasets moving up a tier.

Applications A and B are separate Python processes (``store_apps.run_app``); the store's
balance runs in this process, as ``strataflow store balance`` would."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from store_apps import run_app
from strataflow import Context
from strataflow.store import DatasetEvicted, Store
from strataflow.store.stats import counters

SAVE_A = """
np.save(ARGS["npy"], np.arange(4000, dtype=np.float64).reshape(1000, 4))
with Context(memory="128MB", parallelism=2, progress=False, store=ROOT) as ctx:
    points = ctx.npy_file(ARGS["npy"], num_partitions=4).map_partitions(lambda a: a * 3.0)
    ctx.store.save(points, "with-lineage", lineage=True)
    ctx.store.save(ctx.from_numpy(np.ones((1000, 4)), 4), "without-lineage")
    words = ctx.parallelize(["a b", "b c", "c a b"], 2).flat_map(str.split).map(lambda w: (w, 1))
    ctx.store.save(words.reduce_by_key(lambda x, y: x + y, 2), "counts", lineage=True)
    print(json.dumps({"app": ctx.app_id, "ids": {e.name: e.id for e in ctx.store.ls()}}))
"""

OPEN_B = """
from strataflow.store import DatasetEvicted
with Context(memory="128MB", parallelism=2, progress=False, store=ROOT, event_log=ARGS["log"]) as ctx:
    pts = ctx.store.open("with-lineage")
    out = {"app": ctx.app_id, "sums": pts.map_partitions(lambda a: [float(a.sum())]).collect(),
           "counts": sorted(ctx.store.open("counts").collect()), "entry": ctx.store.info("with-lineage").rebuilds}
    try:
        ctx.store.open("without-lineage")
        out["error"] = None
    except DatasetEvicted as exc:
        out["error"] = str(exc)
    again = ctx.store.open("with-lineage")  # rebuilt once: this open reads the new blocks
    out["again"] = again.map_partitions(lambda a: [float(a.sum())]).collect()
    m = ctx.metrics()["store"]
    out["figures"] = {"app": m["app"], "rebuilds": m["rebuilds"], "evictions": m["evictions"], "tiers": m["tiers"]}
    print(json.dumps(out))
"""


def _tiers(tmp_path, fast_cap=None, slow_cap=None):
    return [{"name": "fast", "dir": str(tmp_path / "store"), "capacity": fast_cap},
            {"name": "slow", "dir": str(tmp_path / "slow"), "capacity": slow_cap}]


def test_an_evicted_dataset_is_rebuilt_from_its_lineage_by_the_next_application(tmp_path):
    root = str(tmp_path / "store")
    Store(root, tiers=_tiers(tmp_path))
    a = run_app(SAVE_A, root, npy=str(tmp_path / "points.npy"))
    pressed = Store(root, tiers=_tiers(tmp_path, fast_cap=1, slow_cap=1))  # pressure: room for nothing
    moves = pressed.balance()
    evicted = {m["dataset"] for m in moves if m.get("evicted")}
    assert evicted == {"with-lineage", "without-lineage", "counts"}
    assert all(pressed.info(n).evicted for n in evicted)  # the names stay, marked
    c = counters(root)
    assert c["evictions"] == 3 and c["moves_down"] >= 1 and c["bytes_evicted"] > 0
    assert not any(f.endswith(".sfb") for _, _, fs in os.walk(root) for f in fs)
    Store(root, tiers=_tiers(tmp_path))  # the pressure passes

    log = str(tmp_path / "b.jsonl")
    b = run_app(OPEN_B, root, log=log)
    full = np.arange(4000, dtype=np.float64).reshape(1000, 4) * 3.0
    assert b["sums"] == [float(full[i:i + 250].sum()) for i in range(0, 1000, 250)]
    assert b["again"] == b["sums"] and b["counts"] == [["a", 2], ["b", 3], ["c", 2]]
    assert b["entry"] == 1  # rebuilt once, counted in its entry
    err = b["error"]
    assert err and "'without-lineage'" in err and "evicted" in err and "without lineage" in err
    f = b["figures"]
    assert f["rebuilds"] == 2 and f["evictions"] == 3  # with-lineage and counts
    assert f["app"]["rebuilds"] == 2 and f["app"]["opens"] == 3 and f["app"]["block_reads"] >= 4 + 2 + 4
    assert f["tiers"]["fast"] > 0
    events = [json.loads(line) for line in open(log)]
    kinds = [e["event"] for e in events]
    assert kinds.count("StoreRebuild") == 2 and kinds.count("StoreOpen") == 3 and "StoreFigures" in kinds
    figures = Store(root).figures()
    assert set(figures["apps"]) >= {a["app"], b["app"]}
    assert figures["apps"][a["app"]]["saves"] == 3 and figures["datasets"]["with-lineage"]["rebuilds"] == 1
    assert figures["datasets"]["without-lineage"]["evicted"]


def test_eviction_spares_datasets_a_reader_holds(tmp_path):
    root = str(tmp_path / "store")
    Store(root, tiers=_tiers(tmp_path))
    with Context(memory="64MB", parallelism=1, backend="threads", progress=False, store=root) as ctx:
        ctx.store.save(ctx.from_numpy(np.ones((512, 4)), 2), "held")
        ctx.store.save(ctx.from_numpy(np.ones((512, 4)), 2), "free")
        held = ctx.store.open("held")
        moves = Store(root, tiers=_tiers(tmp_path, fast_cap=1, slow_cap=1)).balance()
        assert {m["dataset"] for m in moves if m.get("evicted")} == {"free"}
        assert held.map_partitions(lambda a: [a.sum()]).collect() == [1024.0, 1024.0]
        with pytest.raises(DatasetEvicted, match="'free'.*evicted.*without lineage"):
            ctx.store.open("free")


def test_a_lineage_that_cannot_be_pickled_fails_the_save_naming_it(tmp_path):
    import threading
    lock = threading.Lock()
    with Context(memory="64MB", parallelism=1, backend="threads", progress=False, store=str(tmp_path / "s")) as ctx:
        ds = ctx.parallelize(range(4), 2).map(lambda x: (x, lock))
        with pytest.raises(Exception, match="'locked'.*lineage cannot be pickled"):
            ctx.store.save(ds, "locked", lineage=True)
        assert not ctx.store.exists("locked")


def test_a_dataset_read_again_moves_up_a_tier_when_there_is_room(tmp_path):
    root = str(tmp_path / "store")
    Store(root, tiers=_tiers(tmp_path))
    with Context(memory="64MB", parallelism=1, backend="threads", progress=False, store=root) as ctx:
        for name in ("hot", "cold"):
            ctx.store.save(ctx.from_numpy(np.ones((2048, 4)), 2), name)
        size = ctx.store.info("hot").nbytes
        down = Store(root, tiers=_tiers(tmp_path, fast_cap=1)).balance()
        assert {m["dataset"] for m in down} == {"hot", "cold"} and all(m["to"] == "slow" for m in down)
        roomy = Store(root, tiers=_tiers(tmp_path, fast_cap=size + size // 2))
        for _ in range(2):  # read again, by this application (twice)
            assert ctx.store.open("hot").map_partitions(lambda a: [a.sum()]).collect() == [4096.0, 4096.0]
        ctx.store.open("cold")  # once: not hot
        up = roomy.balance()
        assert {m["dataset"] for m in up} == {"hot"} and all(m["to"] == "fast" for m in up)
        assert {u["tier"]: u["bytes"] for u in roomy.usage()}["fast"] >= size
        assert roomy.balance() == []  # settled: nothing moves back and forth
        assert counters(root)["moves_up"] == 2
        assert ctx.store.open("hot").map_partitions(lambda a: [a.sum()]).collect() == [4096.0, 4096.0]
