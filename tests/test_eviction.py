"""Eviction without disk I/O under the memory lock (``storage/eviction.py``).

A victim's disk write is held on a gate (a blocked device), and the tests show what
must go on meanwhile: memory hits complete (the victim itself among them: it stays in
memory and readable while it is written), a second eviction picks other victims, the
accounted memory never exceeds the budget, and an unpersist in between wins. Every wait
is on an event with a bound, never a sleep: a hit that waited for the write would fail
the ``join`` bound, not pass by luck.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from strataflow.storage.memory.unified import MemoryManager
from strataflow.storage.disk.disk_store import DiskStore
from strataflow.storage.level import StorageLevel
from strataflow.storage.manager import BlockId, BlockManager
from strataflow.storage.policies import make_policy
from waits import HANG_S

KB, MB = 1 << 10, 1 << 20
MD = StorageLevel.MEMORY_AND_DISK
BOUND_S = HANG_S  # every wait's bound, against a hang; a correct run waits microseconds


def value(did: int, split: int) -> np.ndarray:
    return np.full((100 * KB - 112) // 8, did * 100 + split, dtype=np.float64)  # 100 KB accounted


class Held:
    """A block manager over 1 MB whose disk writes wait for ``gate``."""

    def __init__(self, tmp_path, policy: str = "no-recache") -> None:
        self.mm = MemoryManager(MB, 0.5)
        (tmp_path / "cache").mkdir(exist_ok=True)
        self.disk = DiskStore([str(tmp_path / "cache")])
        self.bm = BlockManager(self.mm, self.disk, make_policy(policy))
        self.gate, self.writing = threading.Event(), threading.Event()
        self.writes_started = 0
        real_put = self.disk.put

        def held_put(*args, **kwargs):
            self.writes_started += 1
            self.writing.set()
            assert self.gate.wait(BOUND_S), "the test never opened the gate"
            return real_put(*args, **kwargs)

        self.disk.put = held_put
        for did in (1, 2, 3):
            self.bm.register(did, lambda did=did: f"ds{did}", MD, None, 100)
        self.peak_seen = 0

    def read(self, did: int, split: int) -> np.ndarray:
        got = self.bm.get_or_compute(BlockId(did, split), MD, lambda: value(did, split))
        assert np.array_equal(got, value(did, split))
        self.check()
        return got

    def check(self) -> None:
        with self.mm.lock:
            used = self.mm.storage_used + self.mm.execution_used
            assert used <= self.mm.total, "accounted memory over the budget"
            self.peak_seen = max(self.peak_seen, used)

    def in_thread(self, fn) -> threading.Thread:
        errors: list = []

        def run():
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)

        t = threading.Thread(target=run, daemon=True)
        t.errors = errors  # type: ignore[attr-defined]
        t.start()
        return t

    def close(self) -> None:
        self.gate.set()
        self.bm.close()


@pytest.fixture
def h(tmp_path):
    held = Held(tmp_path)
    yield held
    held.close()


def fill_dataset_1(h: Held) -> None:
    for s in range(10):  # 1 MB of memory: full, nothing written yet
        h.read(1, s)
    assert h.writes_started == 0 and len(h.bm.memory_store) == 10


def test_memory_hits_complete_while_a_victim_is_being_written(h):
    fill_dataset_1(h)
    put = h.in_thread(lambda: h.read(2, 0))  # needs 100 KB: evicts block 1/0 to disk, held there
    assert h.writing.wait(BOUND_S)
    victim = BlockId(1, 0)
    hits0 = h.bm.metrics.snapshot()["memory_hits"]

    def hits():
        for _ in range(5):
            for s in range(10):  # the victim among them: still in memory, readable
                h.read(1, s)

    reader = h.in_thread(hits)
    reader.join(BOUND_S)
    assert not reader.is_alive(), "a memory hit waited for the victim's disk write"
    assert not reader.errors, reader.errors
    assert h.bm.metrics.snapshot()["memory_hits"] == hits0 + 50
    assert victim in h.bm.memory_store and victim not in h.disk  # marked, not yet gone
    assert put.is_alive()  # the put is still waiting for its room
    h.gate.set()
    put.join(BOUND_S)
    assert not put.is_alive() and not put.errors, put.errors
    assert victim not in h.bm.memory_store and victim in h.disk
    assert BlockId(2, 0) in h.bm.memory_store
    with h.mm.lock:
        assert h.mm.storage_used == h.bm.memory_store.used <= h.mm.total
    m = h.bm.metrics.snapshot()
    assert m["sync_evictions"] == 1 and m["blocks_dropped"] == 1 and m["blocks_discarded"] == 0
    h.read(1, 0)  # from disk now
    assert h.bm.metrics.snapshot()["disk_hits"] == 1


def test_a_second_eviction_meanwhile_picks_another_victim_and_the_budget_holds(h):
    fill_dataset_1(h)
    first = h.in_thread(lambda: h.read(2, 0))
    assert h.writing.wait(BOUND_S)
    second = h.in_thread(lambda: h.read(3, 0))  # another put short of room, while 1/0 is written
    # both puts wait on their own victims' writes; neither may take the other's
    for t in (first, second):
        assert t.is_alive()
    with h.mm.lock:  # victims are still accounted: nothing was freed twice or early
        assert h.mm.storage_used == h.bm.memory_store.used and len(h.bm.memory_store) == 10
    h.gate.set()
    for t in (first, second):
        t.join(BOUND_S)
        assert not t.is_alive() and not t.errors, t.errors
    assert {BlockId(2, 0), BlockId(3, 0)} <= set(b for b, _ in h.bm.memory_store.items())
    dropped = [b for b, _ in h.disk.items()]
    assert len(dropped) == 2 and len(set(dropped)) == 2  # two distinct victims, each written once
    assert h.peak_seen <= h.mm.total
    with h.mm.lock:
        assert h.mm.storage_used == h.bm.memory_store.used <= h.mm.total


def test_an_unpersist_during_the_write_wins(h):
    fill_dataset_1(h)
    put = h.in_thread(lambda: h.read(2, 0))
    assert h.writing.wait(BOUND_S)
    assert h.bm.unregister(1) == 10  # while block 1/0's disk copy is being written
    h.gate.set()
    put.join(BOUND_S)
    assert not put.is_alive() and not put.errors, put.errors
    assert not h.disk.items(), "a disk copy nobody owns was left behind"
    assert [b for b, _ in h.bm.memory_store.items()] == [BlockId(2, 0)]
    with h.mm.lock:
        assert h.mm.storage_used == h.bm.memory_store.used
    assert h.bm.metrics.snapshot()["blocks_dropped"] == 0  # it left by the unpersist, not the drop


def test_execution_memory_evicts_without_holding_the_lock_during_the_write(h):
    fill_dataset_1(h)
    task = 7
    h.mm.task_started(task)
    grant = []
    taker = h.in_thread(lambda: grant.append(h.mm.acquire_execution(300 * KB, task)))
    assert h.writing.wait(BOUND_S)
    reader = h.in_thread(lambda: [h.read(1, s) for s in range(10)])
    reader.join(BOUND_S)
    assert not reader.is_alive() and not reader.errors, reader.errors
    h.gate.set()
    taker.join(BOUND_S)
    assert not taker.is_alive() and not taker.errors, taker.errors
    assert grant == [300 * KB]
    with h.mm.lock:
        assert h.mm.storage_used == h.bm.memory_store.used
        assert h.mm.storage_used + h.mm.execution_used <= h.mm.total
    h.mm.task_finished(task)
