"""The shared store (issue 42, first slice): a dataset saved by one application and opened
by another, later process, from the same files; zero-copy reads; atomic publish; a writer
killed mid-save; a reader while its dataset is removed; damaged blocks; private files.

Applications A and B are separate Python processes (``store_apps.py``); the checks of the
store's own rules run in this process on the threads backend."""

from __future__ import annotations

import os
import signal
import stat

import numpy as np
import psutil
import pytest

from store_apps import OPEN_ALL, SAVE_ALL, run_app
from strataflow import Context
from strataflow.store import DatasetExists, DatasetNotFound, Store, StoreAccessError, StoreError
from strataflow.store.blockfile import forget_maps


@pytest.fixture
def root(tmp_path):
    return str(tmp_path / "store")


def _ctx(root, **kw):
    return Context(memory="64MB", parallelism=2, backend="threads", progress=False, store=root, **kw)


def _block_files(root):
    return sorted(os.path.join(d, f) for d, _, files in os.walk(os.path.join(root, "data")) for f in files)


def test_an_application_opens_what_another_saved_and_maps_it_zero_copy(root):
    a = run_app(SAVE_ALL, root, rows=1000)
    assert a["names"] == ["features", "records", "table"]
    assert not psutil.pid_exists(a["pid"]) or psutil.Process(a["pid"]).status() == psutil.STATUS_ZOMBIE
    b = run_app(OPEN_ALL, root)
    full = np.arange(4000, dtype=np.float64).reshape(1000, 4) * 2.0
    assert b["features"] == full[250:500].tolist()
    assert [w["sum"] for w in b["where"]] == [full[i:i + 250].sum() for i in range(0, 1000, 250)]
    for w in b["where"]:  # each executor of B mapped the block file A wrote: no copy into its heap
        assert w["file"].startswith(os.path.realpath(root)) and w["file"].endswith(".sfb"), w
        assert w["pid"] != b["pid"] and not w["owns"] and not w["writeable"]
    assert sorted(map(tuple, b["records"])) == sorted((i % 7, str(i)) for i in range(100))
    assert b["table"][0]["x"] + b["table"][1]["x"] == list(range(50))


def test_a_partition_is_a_view_of_the_mapped_file_in_this_process_too(root):
    with _ctx(root) as ctx:
        ctx.store.save(ctx.from_numpy(np.arange(64 * 1024, dtype=np.float32).reshape(-1, 8), 2), "f32")
        forget_maps()
        part = ctx.store.open("f32").collect_partitions()[0]
    base = part
    while getattr(base, "base", None) is not None:
        base = base.base
    assert isinstance(base, memoryview) and not part.flags.owndata and not part.flags.writeable
    assert np.array_equal(part, np.arange(64 * 1024, dtype=np.float32).reshape(-1, 8)[:4096])


def test_kill_9_of_a_writer_mid_save_leaves_nothing_visible_and_nothing_behind(root, tmp_path):
    gate = str(tmp_path / "writing")
    writer = run_app("""
        import time
        def slow(i, a):
            if i == 1:  # partition 0 is written; partition 1 never will be
                open(ARGS["gate"], "w").close()
                while True:
                    time.sleep(1)
            return a
        with Context(memory="64MB", parallelism=2, progress=False, store=ROOT) as ctx:
            ctx.store.save(ctx.from_numpy(np.ones((4000, 4)), 2).map_partitions_with_index(slow), "half")
        """, root, wait=False, gate=gate)
    try:
        def half_written():
            if writer.poll() is not None:
                pytest.fail(f"the writer exited early: {writer.stderr.read()[-3000:]}")
            return os.path.exists(gate) and any(f.endswith("part-00000.sfb") for f in _block_files(root))

        _wait_for(half_written)
        children = psutil.Process(writer.pid).children(recursive=True)
        assert os.listdir(os.path.join(root, "writing"))  # its save is in progress
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        psutil.wait_procs(children, timeout=120)  # its executors follow their driver
        assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert _block_files(root)  # the half it wrote is still there...
    store = Store(root)  # ...until the next start sweeps it
    assert not store.exists("half") and store.ls() == []
    assert store.swept["dead_writers"] and store.swept["datasets"]
    assert _block_files(root) == [] and os.listdir(os.path.join(root, "writing")) == []
    with pytest.raises(DatasetNotFound, match="'half'"):
        store.open_source("half")


def test_kill_9_of_a_reader_leaves_its_dataset_whole_and_its_lease_swept(root, tmp_path):
    """A reader killed mid-read hurts no one: the dataset stays published and readable, and
    once it is removed the dead reader's lease does not keep its blocks on disk."""
    with _ctx(root) as ctx:
        ctx.store.save(ctx.from_numpy(np.arange(8000.0).reshape(-1, 4), 4), "read")
    gate = str(tmp_path / "reading")
    reader = run_app("""
        import time
        def stuck(i, a):
            if i == 1:  # partition 0 is read; the reader dies reading partition 1
                open(ARGS["gate"], "w").close()
                while True:
                    time.sleep(1)
            return [a.sum()]
        with Context(memory="64MB", parallelism=1, progress=False, store=ROOT) as ctx:
            ctx.store.open("read").map_partitions_with_index(stuck).collect()
        """, root, wait=False, gate=gate)
    try:
        _wait_for(lambda: os.path.exists(gate) or reader.poll() is not None)
        assert reader.poll() is None, reader.stderr.read()[-3000:]
        children = psutil.Process(reader.pid).children(recursive=True)
        os.kill(reader.pid, signal.SIGKILL)
        reader.wait()
        psutil.wait_procs(children, timeout=120)
    finally:
        if reader.poll() is None:
            reader.kill()
    store = Store(root)
    assert store.swept["dead_leases"] >= 1 and store.swept["datasets"] == []  # its lease went, the blocks stay
    with _ctx(root) as ctx:  # published and whole
        assert ctx.store.open("read").map_partitions(lambda a: [a.sum()]).sum() == np.arange(8000.0).sum()
    store.rm("read")
    Store(root)  # the next start sweeps: no live lease holds the blocks any more
    assert _block_files(root) == []


def test_a_lease_released_while_the_sweep_looks_at_it_is_no_error(root, monkeypatch):
    """A reader releases its lease without the gc lock: unlink, then unlock. A sweep that
    found the lease unheld may find its file gone when it unlinks it (CI met this race on
    the Ray store server). The release happens here exactly in that gap."""
    from strataflow.store import sweep as sweep_mod
    from strataflow.store.locks import Lease

    store = Store(root)
    with _ctx(root) as ctx:
        ctx.store.save(ctx.from_numpy(np.arange(40.0).reshape(-1, 4), 2), "kept")
    lease = Lease(store.root.path, "some-dataset")
    real = sweep_mod.is_held

    def released_meanwhile(path):
        held = real(path)
        if path == lease.path:
            lease.release()  # the owner closes between the check and the unlink
            return False
        return held

    monkeypatch.setattr(sweep_mod, "is_held", released_meanwhile)
    out = sweep_mod.sweep(store.root)
    assert out["dead_leases"] == 0 and not os.path.exists(lease.path)
    assert out["datasets"] == []
    with _ctx(root) as ctx:  # what is published stays whole
        assert ctx.store.open("kept").map_partitions(lambda a: [a.sum()]).sum() == np.arange(40.0).sum()


def _wait_for(cond, limit: float = 120.0) -> None:
    """Polls ``cond`` (a file appearing, a process state) until true; fails past ``limit``
    seconds, which bound a hang, not a timing the test measures."""
    import time

    deadline = time.monotonic() + limit
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail("the condition never held")
        time.sleep(0.05)


def test_a_reader_keeps_reading_while_its_dataset_is_removed(root):
    with _ctx(root) as writer:
        writer.store.save(writer.from_numpy(np.arange(20000.0).reshape(-1, 2), 2), "gone")
    with _ctx(root) as reader:
        ds = reader.store.open("gone")
        held = ds.collect_partitions()[1]  # views of the mapped files
        Store(root).rm("gone")  # another application removes it
        assert not reader.store.exists("gone")
        assert _block_files(root)  # the reader's lease keeps the blocks...
        assert ds.count() == 10000  # ...so reading on, even partitions not mapped yet, works
    assert Store(root).swept is not None and _block_files(root) == []  # the reader gone, the files went
    assert np.array_equal(held, np.arange(10000.0, 20000.0).reshape(-1, 2))  # unlinked, still mapped


def test_save_modes_and_overwrite_sweeps_the_old_blocks(root):
    with _ctx(root) as ctx:
        ctx.store.save(ctx.parallelize([1, 2, 3], 1), "x")
        first = _block_files(root)
        with pytest.raises(DatasetExists, match="'x' exists already"):
            ctx.store.save(ctx.parallelize([4], 1), "x")
        assert ctx.store.save(ctx.parallelize([4], 1), "x", mode="ignore") is None
        ctx.store.save(ctx.parallelize([5, 6], 1), "x", mode="overwrite")
        assert ctx.store.open("x").collect() == [5, 6]
        assert not set(first) & set(_block_files(root)) and len(_block_files(root)) == 1
        with pytest.raises(StoreError, match="not a dataset name"):
            ctx.store.save(ctx.parallelize([1]), "../escape")


def test_a_damaged_block_fails_loudly_naming_it(root):
    with _ctx(root) as ctx:
        ctx.store.save(ctx.from_numpy(np.arange(4096.0 * 4).reshape(-1, 4), 4), "nums")
        ctx.store.save(ctx.parallelize([{"k": i} for i in range(400)], 2), "recs")
        nums = [f for f in _block_files(root) if "part-00002" in f and _holds(f, b'"ndarray"')][0]
        recs = [f for f in _block_files(root) if "part-00001" in f and _holds(f, b'"records"')][0]
        _flip(nums, os.path.getsize(nums) - 9000)  # in the numbers: the checksum
        _flip(recs, os.path.getsize(recs) - 10)  # in the pickle stream: the keyed tag
        forget_maps()
        with pytest.raises(Exception, match=r"'nums' .*partition 2: block file .*part-00002\.sfb fails its checksum"):
            ctx.store.open("nums").collect()
        with pytest.raises(Exception, match=r"'recs' .*partition 1: block file .*part-00001\.sfb fails its keyed tag"):
            ctx.store.open("recs").collect()
        intact = ctx.store.open("nums").node  # the other blocks are still served
        assert [len(intact.compute(i, None)) for i in (0, 1, 3)] == [1024, 1024, 1024]


def test_blocks_and_entries_of_another_store_are_refused(root, tmp_path):
    other = str(tmp_path / "other")
    with _ctx(root) as ctx:
        ctx.store.save(ctx.parallelize([1, 2], 1), "mine")
        with _ctx(other) as octx:
            octx.store.save(octx.parallelize([666, 666], 1), "mine")
        theirs = [f for d, _, fs in os.walk(os.path.join(other, "data")) for f in [os.path.join(d, x) for x in fs]][0]
        ours = _block_files(root)[0]
        os.replace(theirs, ours)  # a block written with another store's key
        forget_maps()
        with pytest.raises(Exception, match="fails its keyed tag"):
            ctx.store.open("mine").collect()
        os.replace(os.path.join(other, "catalog", "mine.json"), os.path.join(root, "catalog", "mine.json"))
        with pytest.raises(StoreError, match="fails its keyed tag"):
            ctx.store.open("mine")


@pytest.mark.parametrize("fault, message", [
    ("world-writable", "group/world-writable"), ("group-readable", "readable by other users"),
    ("other-owner", "belongs to uid 54321"), ("symlink", "symbolic link"), ("key-mode", "store key")])
def test_a_store_others_could_touch_is_refused(tmp_path, fault, message):
    root = str(tmp_path / "store")
    Store(root)
    if fault == "world-writable":
        os.chmod(root, 0o777)
    elif fault == "group-readable":
        os.chmod(root, 0o750)
    elif fault == "other-owner":
        if os.geteuid() != 0:
            pytest.skip("only root can give a directory to another user")
        os.chown(root, 54321, 54321)
    elif fault == "symlink":
        os.rename(root, root + ".real")
        os.symlink(root + ".real", root)
    elif fault == "key-mode":
        os.chmod(os.path.join(root, "store.key"), 0o644)
    with pytest.raises(StoreAccessError, match=message):
        Store(root).root.auth
    with pytest.raises(StoreAccessError, match=message):
        with _ctx(root) as ctx:
            ctx.store.ls()


def test_files_and_directories_are_private(root):
    old = os.umask(0o022)
    try:
        with _ctx(root) as ctx:
            ctx.store.save(ctx.parallelize(range(10), 2), "p")
            ds = ctx.store.open("p")  # a lease
            modes = {}
            for d, dirs, files in os.walk(root):
                modes[d] = stat.S_IMODE(os.stat(d).st_mode)
                for f in files:
                    modes[os.path.join(d, f)] = stat.S_IMODE(os.stat(os.path.join(d, f)).st_mode)
            assert ds.count() == 10
    finally:
        os.umask(old)
    assert {p: m for p, m in modes.items() if m not in (0o700, 0o600)} == {}
    assert any(p.endswith(".lease") for p in modes) and any(p.endswith(".sfb") for p in modes)


def test_blocks_go_to_the_next_tier_when_the_first_is_full(tmp_path):
    root, slow = str(tmp_path / "fast"), str(tmp_path / "slow")
    tiers = [{"name": "fast", "dir": root, "capacity": 40000}, {"name": "slow", "dir": slow}]
    Store(root, tiers=tiers)
    with _ctx(root) as ctx:  # the tiers are the store's: recorded, not given again
        entry = ctx.store.save(ctx.from_numpy(np.arange(8 * 4096.0).reshape(-1, 8), 4), "big")
        assert [p["tier"] for p in entry.partitions].count("slow") >= 1
        assert ctx.store.open("big").map_partitions(lambda a: [a.sum()]).collect() == \
            [np.arange(8 * 4096.0).reshape(-1, 8)[i:i + 1024].sum() for i in range(0, 4096, 1024)]
        assert sum(u["bytes"] for u in ctx.store.usage()) >= 8 * 4096 * 8


def test_the_default_store_needs_no_setting(monkeypatch):
    monkeypatch.delenv("STRATAFLOW_STORE", raising=False)  # the test run's own (conftest.py)
    with Context(memory="64MB", parallelism=1, progress=False) as ctx:
        from strataflow.store import default_root

        assert ctx.store.path == default_root()
        name = f"test-default-{os.getpid()}"
        ctx.store.save(ctx.parallelize(["a"], 1), name, mode="overwrite")
        try:
            assert ctx.store.open(name).collect() == ["a"]
        finally:
            ctx.store.rm(name)


def _holds(path, needle):
    with open(path, "rb") as fh:
        return needle in fh.read(4096)


def _flip(path, offset):
    with open(path, "r+b") as fh:
        fh.seek(offset)
        b = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([b[0] ^ 0xFF]))


def test_a_full_tier_moves_its_coldest_datasets_down_and_readers_follow(tmp_path):
    fast, slow = str(tmp_path / "fast"), str(tmp_path / "slow")
    Store(fast, tiers=[{"name": "fast", "dir": fast}, {"name": "slow", "dir": slow}])
    with _ctx(fast) as ctx:
        for name in ("cold", "warm"):
            ctx.store.save(ctx.from_numpy(np.full((2048, 4), 1.0 if name == "cold" else 2.0), 2), name)
        warm = ctx.store.open("warm")  # opened, and held: moved last
        held = warm.collect_partitions()[0]
        per = ctx.store.info("cold").nbytes
        store = Store(fast, tiers=[{"name": "fast", "dir": fast, "capacity": per + per // 2},
                                   {"name": "slow", "dir": slow}])
        moves = store.balance()
        assert {m["dataset"] for m in moves} == {"cold"} and all(m["to"] == "slow" for m in moves)
        usage = {u["tier"]: u for u in store.usage()}
        assert usage["fast"]["bytes"] <= usage["fast"]["capacity"] and usage["slow"]["bytes"] >= per // 2
        assert ctx.store.open("cold").map_partitions(lambda a: [a.sum()]).collect() == [4096.0, 4096.0]
        assert warm.map_partitions(lambda a: [a.sum()]).collect() == [8192.0, 8192.0] and held.sum() == 8192.0


def test_the_daemon_survives_kill_9_and_serves_every_dataset_again(root):
    import subprocess
    import sys

    from strataflow.store.daemon import request

    with _ctx(root) as ctx:
        ctx.store.save(ctx.parallelize(range(5), 1), "kept")

    def start():
        proc = subprocess.Popen([sys.executable, "-m", "strataflow.store.daemon", root, "3600"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert '"socket"' in proc.stdout.readline(), proc.stderr.read()  # bound and listening
        return proc

    first = start()
    try:
        assert request(root, "ls")["datasets"][0]["name"] == "kept"
        assert stat.S_IMODE(os.stat(os.path.join(root, "daemon.sock")).st_mode) == 0o600
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        assert os.path.exists(os.path.join(root, "daemon.sock"))  # left behind, stale
        second = start()
        try:
            status = request(root, "status")
            assert status["pid"] == second.pid and status["datasets"] == 1
            with _ctx(root) as ctx:
                assert ctx.store.open("kept").collect() == [0, 1, 2, 3, 4]
            assert request(root, "stop") == {"stopping": True}
            second.wait(timeout=60)
        finally:
            if second.poll() is None:
                second.kill()
    finally:
        if first.poll() is None:
            first.kill()
    assert request(root, "status") is None


def test_the_daemon_refuses_another_user(root, monkeypatch):
    """The peer-credential check, with the daemon's uid made to differ (a second user
    cannot be made here): the connection is refused before any request is read."""
    import socket

    from strataflow.store import daemon as daemon_mod

    d = daemon_mod.StoreDaemon(root, interval=3600)
    try:
        monkeypatch.setattr(daemon_mod, "peer_uid", lambda conn: os.geteuid() + 1)
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(d.sock_path)
        conn, _ = d.sock.accept()
        d._serve(conn)
        assert b"refused" in client.recv(4096)
        client.close()
        with pytest.raises(RuntimeError, match="already runs"):
            daemon_mod.StoreDaemon(root)
    finally:
        d.close()


def test_the_cli_lists_and_removes(root, capsys):
    from strataflow.cli import main

    with _ctx(root) as ctx:
        ctx.store.save(ctx.parallelize(range(5), 1), "one")
        ctx.store.save(ctx.parallelize(range(5), 1), "two")
    assert main(["store", "--root", root, "ls"]) == 0
    assert [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()] == ["one", "two"]
    assert main(["store", "--root", root, "rm", "one"]) == 0
    assert main(["store", "--root", root, "status"]) == 0
    assert '"datasets": 1' in capsys.readouterr().out
    assert main(["store", "--root", root, "rm", "one"]) == 2
    assert "no dataset named 'one'" in capsys.readouterr().err
