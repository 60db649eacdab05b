"""``StorageLevel.STORE`` (issue 42, phase 2): a persisted dataset's blocks kept in the
shared store, so they survive an executor killed with ``kill -9``: the partitions it had
computed are read back from the store by the other executors, not recomputed.

Recomputations are counted two ways: the ``misses`` the block managers count, and a file
the partition's function writes each time it runs (what the engine cannot fake)."""

from __future__ import annotations

import os
import signal
import uuid

import numpy as np
import psutil
import pytest

from strataflow import Context, StorageLevel
from strataflow.store.level_blocks import level_id

pytestmark = pytest.mark.usefixtures("no_leaks")


def _computing(marks: str):
    def f(i, a):
        with open(os.path.join(marks, f"{i}-{uuid.uuid4().hex}"), "w"):
            pass
        return a * 2.0
    return f


def _computed(marks) -> list[int]:
    return sorted(int(f.split("-")[0]) for f in os.listdir(marks))


def _level_files(root, app_id):
    out = []
    for d, _, files in os.walk(os.path.join(root, "data")):
        if os.path.basename(d).startswith(f"lvl-{app_id}-"):
            out += [os.path.join(d, f) for f in files]
    return sorted(out)


def _dead(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_off_heap_keeps_its_meaning_and_store_is_its_own_level():
    assert StorageLevel.OFF_HEAP.off_heap and not StorageLevel.OFF_HEAP.shared
    assert StorageLevel.parse("store") is StorageLevel.STORE
    assert StorageLevel.STORE.shared and StorageLevel.STORE.is_valid and not StorageLevel.STORE.use_memory


def test_blocks_survive_kill_9_of_the_executor_that_computed_them(tmp_path):
    root, marks = str(tmp_path / "store"), str(tmp_path / "marks")
    os.mkdir(marks)
    data = np.arange(8000, dtype=np.float64).reshape(-1, 4)
    with Context(memory="64MB", parallelism=2, progress=False, store=root, locality_wait=0) as ctx:
        ds = ctx.from_numpy(data, 4).map_partitions_with_index(_computing(marks)).persist(StorageLevel.STORE)
        assert ds.map_partitions(lambda a: [a.sum()]).collect() == [data[i:i + 500].sum() * 2 for i in range(0, 2000, 500)]
        assert _computed(marks) == [0, 1, 2, 3]
        m0 = ctx.metrics()
        assert m0["store_puts"] == 4 and m0["misses"] == 4 and m0["store_hits"] == 0
        files = _level_files(root, ctx.app_id)
        assert len(files) == 4 and all(os.path.basename(os.path.dirname(f)) == level_id(ctx.app_id, ds.id)
                                       for f in files)
        pids = set(ctx.parallelize(range(8), 8).map(lambda _: os.getpid()).collect())
        assert len(pids) == 2
        victim = sorted(pids)[0]
        os.kill(victim, signal.SIGKILL)
        try:
            psutil.Process(victim).wait(timeout=60)
        except psutil.NoSuchProcess:
            pass  # reaped already by the driver, which waits on its executor processes
        again = ds.map_partitions(lambda a: [a.sum()]).collect()
        assert again == [data[i:i + 500].sum() * 2 for i in range(0, 2000, 500)]
        m1 = ctx.metrics()
        assert m1["executors_lost"] >= 1
        assert _computed(marks) == [0, 1, 2, 3]  # nothing recomputed: read back from the store
        assert m1["misses"] == m0["misses"] and m1["store_hits"] - m0["store_hits"] == 4
        ds.unpersist()
        assert _level_files(root, ctx.app_id) == []  # unpersist takes them out of the store
        app = ctx.app_id
        ds2 = ctx.parallelize(range(100), 2).persist(StorageLevel.STORE)
        assert ds2.sum() == 4950 and len(_level_files(root, app)) == 2
    assert _level_files(root, app) == []  # the application's end takes the rest


def test_a_damaged_store_block_is_recomputed_not_served(tmp_path):
    root, marks = str(tmp_path / "store"), str(tmp_path / "marks")
    os.mkdir(marks)
    with Context(memory="64MB", parallelism=1, backend="threads", progress=False, store=root) as ctx:
        ds = ctx.from_numpy(np.ones((1000, 4)), 2).map_partitions_with_index(_computing(marks))
        ds.persist(StorageLevel.STORE)
        assert ds.map_partitions(lambda a: [a.sum()]).sum() == 8000.0
        path = _level_files(root, ctx.app_id)[0]
        with open(path, "r+b") as fh:
            fh.seek(os.path.getsize(path) - 8)
            fh.write(b"\x00\x01\x02\x03\x04\x05\x06\x07")
        from strataflow.store.blockfile import forget_maps
        forget_maps()
        assert ds.map_partitions(lambda a: [a.sum()]).sum() == 8000.0
        m = ctx.metrics()
        assert m["blocks_lost"] == 1 and m["store_hits"] == 1 and len(_computed(marks)) == 3


def test_another_application_sweeps_nothing_of_a_live_one(tmp_path):
    from strataflow.store import Store
    root = str(tmp_path / "store")
    with Context(memory="64MB", parallelism=1, backend="threads", progress=False, store=root) as ctx:
        ds = ctx.parallelize(range(10), 2).persist(StorageLevel.STORE)
        assert ds.sum() == 45
        swept = Store(root).swept  # another user of the store starts: its sweep keeps them
        assert swept["datasets"] == [] and len(_level_files(root, ctx.app_id)) == 2
        assert ds.sum() == 45 and ctx.metrics()["store_hits"] == 2


def test_the_report_and_the_cli_show_the_store(tmp_path, capsys):
    import json

    from strataflow.cli import main
    from strataflow.report.events import read_events
    from strataflow.report.stages import run_totals
    from strataflow.report.store_rows import store_rows
    root, log = str(tmp_path / "store"), str(tmp_path / "events.jsonl")
    with Context(memory="64MB", parallelism=1, backend="threads", progress=False, store=root, event_log=log) as ctx:
        ds = ctx.parallelize(range(10), 2).persist(StorageLevel.STORE)
        assert ds.sum() == 45 and ds.sum() == 45
        ctx.store.save(ctx.from_numpy(np.ones((100, 4)), 2), "seen")
        assert ctx.store.open("seen").count() == 100
        app = ctx.app_id
    events, _ = read_events(log)
    rows = {r.key: r for r in store_rows(events, run_totals(events)["cache"])}
    assert rows["store_saves"].value == 1 and rows["store_opens"].value == 1
    assert rows["store_hits"].value == 2 and rows["store_block_reads"].value == 2
    assert rows["store_tier_mem" if root.startswith("/dev/shm") else "store_tier_disk"].value > 0
    assert rows["store_evictions"].value == 0
    assert main(["store", "--root", root, "status"]) == 0
    status = json.loads(capsys.readouterr().out)
    fig = status["figures"]
    assert fig["apps"][app]["opens"] == 1 and fig["apps"][app]["block_reads"] == 2 and fig["apps"][app]["saves"] == 1
    assert fig["datasets"]["seen"]["opens"] == 1 and set(fig) >= {"tiers", "moves_down", "evictions", "rebuilds"}
