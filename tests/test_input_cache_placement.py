"""Where the input cache keeps what it decodes (issue 65): on disk by default, in memory
only within a stated bound, shown per tier by ``strataflow store status``; and a writer
killed mid-block does not keep its partition out of the cache (the next writer takes its
lock over at once, no sweep needed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

from strataflow import Context
from strataflow.store import root as store_root
from strataflow.store.inputs import InputEntry, get_input, list_inputs, put_input, tier_room
from strataflow.store.locks import WriterLock
from strataflow.store.root import MEMORY_TIER_ROOM, StoreRoot, default_root, memory_backed
from strataflow.store.store import Store

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MiB = 2**20


def _shm_dir():
    """A private directory on a memory file system (``/dev/shm``), or skip where there is none."""
    if not os.path.isdir("/dev/shm") or not memory_backed("/dev/shm") or not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable tmpfs /dev/shm here")
    return tempfile.mkdtemp(prefix="sf-test-placement-", dir="/dev/shm")


@pytest.fixture
def shm():
    d = _shm_dir()
    yield d
    subprocess.run(["rm", "-rf", d], check=False)


@pytest.fixture
def racy0(monkeypatch):
    monkeypatch.setenv("STRATAFLOW_RACY_S", "0")


def test_the_default_store_is_on_disk_in_the_users_cache_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_root() == str(tmp_path / ".cache" / "strataflow" / "store")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_root() == str(tmp_path / "xdg" / "strataflow" / "store")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG rule: a relative path is ignored
    assert default_root() == str(tmp_path / ".cache" / "strataflow" / "store")


def test_memory_file_systems_are_told_from_disks(tmp_path, shm):
    assert memory_backed(shm) and memory_backed("/dev/shm")
    if memory_backed(str(tmp_path)):
        pytest.skip("the temporary directory is a tmpfs here")
    assert not memory_backed(str(tmp_path))
    assert StoreRoot(str(tmp_path / "s")).tiers[0].name == "disk"
    assert StoreRoot(os.path.join(shm, "s")).tiers[0].name == "mem"


def test_an_application_caches_its_inputs_on_disk_by_default(tmp_path, monkeypatch, racy0):
    """No ``store=``: the decoded partitions go to the user's cache directory, on disk;
    nothing is added to the former default in ``/dev/shm``."""
    monkeypatch.delenv("STRATAFLOW_STORE", raising=False)  # conftest's test store
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    os.makedirs(tmp_path / "home")
    former = store_root.former_default_root()
    before = sorted(os.listdir(former)) if os.path.isdir(former) else None
    (tmp_path / "t.txt").write_text("".join(f"línea {i}\n" for i in range(5000)))
    with Context(parallelism=2, backend="processes", input_cache="on") as ctx:
        assert ctx.text_file(str(tmp_path / "t.txt"), 2).count() == 5000
    root = StoreRoot(str(tmp_path / "home" / ".cache" / "strataflow" / "store"))
    entries = list_inputs(root)
    assert len(entries) == 2 and all(e.path == str(tmp_path / "t.txt") for e in entries)
    assert root.tiers[0].name == ("mem" if memory_backed(str(tmp_path)) else "disk")
    assert (sorted(os.listdir(former)) if os.path.isdir(former) else None) == before


def test_a_memory_tier_without_a_capacity_takes_the_stated_bound_of_inputs(shm, tmp_path, monkeypatch):
    """A memory tier above a disk tier, neither with a capacity: inputs fill the memory tier
    up to its bound (``MEMORY_TIER_ROOM``, made 1 MiB here so the test writes little), then
    go to disk; ``usage`` (what ``store status`` shows) says which tier is memory, what the
    input cache holds in each, and its bound."""
    assert tier_room(StoreRoot(os.path.join(shm, "big")).tiers[0], MEMORY_TIER_ROOM + 1) is False
    monkeypatch.setattr(store_root, "MEMORY_TIER_ROOM", MiB)
    store = Store(os.path.join(shm, "s"), tiers=[{"name": "mem", "dir": os.path.join(shm, "mem")},
                                                 {"name": "disk", "dir": str(tmp_path / "disk")}])
    root = store.root
    for k in "abc":  # 0.4 MB each: two fit in 1 MiB, the third goes to disk
        assert put_input(root, InputEntry(key=k * 40, path=k, reader="npy_file", part="rows"),
                         np.full(50_000, ord(k), dtype=np.float64)) is not None
    where = {k: [t.name for t in root.tiers if os.path.isdir(t.data_dir("in-" + k * 40))] for k in "abc"}
    assert where == {"a": ["mem"], "b": ["mem"], "c": ["disk"]}
    for k in "abc":
        value, _ = get_input(root, k * 40)
        assert value.tolist() == [float(ord(k))] * 50_000
    usage = {u["tier"]: u for u in store.usage()}
    assert usage["mem"]["medium"] == "memory" and usage["disk"]["medium"] == "disk"
    assert usage["mem"]["input_limit"] == MiB and 2 * 400_000 <= usage["mem"]["input_bytes"] <= MiB
    assert 400_000 <= usage["disk"]["input_bytes"] == usage["disk"]["bytes"]
    assert usage["disk"]["input_limit"] > MiB  # half the disk's free space


def test_a_capacity_given_to_a_memory_tier_is_used_whole(shm):
    root = StoreRoot(os.path.join(shm, "s"), tiers=[{"name": "mem", "dir": os.path.join(shm, "mem"),
                                                     "capacity": str(MEMORY_TIER_ROOM + 4 * MiB)}])
    assert tier_room(root.tiers[0], MEMORY_TIER_ROOM + MiB)  # the user's capacity, not the default bound


def test_store_status_shows_each_tier_s_medium_and_inputs(shm, tmp_path):
    store = Store(os.path.join(shm, "s"), tiers=[{"name": "mem", "dir": os.path.join(shm, "mem"), "capacity": "8MB"},
                                                 {"name": "disk", "dir": str(tmp_path / "disk")}])
    put_input(store.root, InputEntry(key="q" * 40, path="q.csv", reader="csv_file", part="0-10"), np.arange(1000.0))
    out = subprocess.run([sys.executable, "-m", "strataflow.cli", "store", "status", "--root", store.path],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT), check=True).stdout
    tiers = {t["tier"]: t for t in json.loads(out)["tiers"]}
    assert tiers["mem"]["medium"] == "memory" and tiers["mem"]["capacity"] == 8 * MiB
    assert tiers["mem"]["input_bytes"] >= 8000 and tiers["mem"]["input_limit"] == 8 * MiB
    assert tiers["disk"]["medium"] == "disk" and tiers["disk"]["input_bytes"] == 0


# -- a dead writer's lock ------------------------------------------------------------------------
_KILLED_APP = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[3])
    from strataflow.common.private_file import atomic_write
    from strataflow.store import blockfile

    def stalled(directory, partition, views):
        # the real temporary file, half written, then killed: what kill -9 mid-block leaves
        with atomic_write(os.path.join(directory, blockfile.block_name(partition)), sync=True, prefix=".part-") as fh:
            fh.write(views[0])
            fh.flush()
            os.write(1, b"writing\\n")
            sys.stdin.read()  # killed here

    blockfile._write_file = stalled
    from strataflow import Context
    ctx = Context(parallelism=1, backend="threads", store=sys.argv[1], input_cache="on")
    print(ctx.text_file(sys.argv[2], 1).count(), flush=True)
    ctx.stop()  # drains the input cache's writer: stalls in it
""")


def test_a_writer_killed_mid_block_is_taken_over_by_the_next_application(tmp_path, racy0):
    store = str(tmp_path / "store")
    path = tmp_path / "w.txt"
    path.write_text("".join(f"{i},ü\n" for i in range(2000)))
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_APP, store, str(path), ROOT], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=dict(os.environ, STRATAFLOW_RACY_S="0"))
    try:
        assert proc.stdout.readline().strip() == b"2000"
        assert proc.stdout.readline().strip() == b"writing"  # mid-block, its lock held
        root = StoreRoot(store)
        (lock,) = os.listdir(root.sub("writing"))
        with pytest.raises(FileExistsError):  # a live writer's lock is not taken
            WriterLock(root.path, lock[:-5], "another")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    did = lock[:-5]
    assert os.listdir(root.sub("writing")) == [lock]  # left behind by kill -9, with its temporary file
    assert [f for f in os.listdir(root.tiers[0].data_dir(did)) if f.endswith(".tmp")]
    assert list_inputs(root) == []
    with Context(parallelism=1, backend="threads", store=store, input_cache="on") as ctx:  # no sweep between
        assert ctx.text_file(str(path), 1).collect() == [f"{i},ü" for i in range(2000)]
        assert ctx.metrics()["input_misses"] == 1
    (entry,) = list_inputs(root)
    assert entry.id == did and os.listdir(root.sub("writing")) == []
    assert os.listdir(root.tiers[0].data_dir(did)) == ["part-00000.sfb"]  # the dead writer's file went
    with Context(parallelism=1, backend="threads", store=store, input_cache="on") as ctx:
        assert ctx.text_file(str(path), 1).collect() == [f"{i},ü" for i in range(2000)]
        assert ctx.metrics()["input_hits"] == 1


def test_a_lock_file_nobody_holds_is_taken_over_and_a_released_one_made_afresh(tmp_path):
    root = StoreRoot(str(tmp_path / "store"))
    dead = {"pid": 2**22 + 1, "start_time": 1.0, "name": "input gone.csv", "since": 2.0}
    with open(root.sub("writing", "in-y.lock"), "w") as fh:  # a dead writer's file: no flock on it
        json.dump(dead, fh)
    taker = WriterLock(root.path, "in-y", "taker")
    assert taker.took_over == dead
    with open(taker.path) as fh:
        assert json.load(fh)["name"] == "taker" and json.load(open(taker.path))["pid"] == os.getpid()
    with pytest.raises(FileExistsError):  # held now
        WriterLock(root.path, "in-y", "third")
    taker.release()
    again = WriterLock(root.path, "in-y", "again")
    assert again.took_over is None  # released: its file went, a new one is made
    again.release()
    assert os.listdir(root.sub("writing")) == []
