"""Asynchronous eviction and prefetch (``strataflow/storage/eviction_writer.py``): the
writer keeps memory use under the watermarks, puts do not evict synchronously while it
keeps up, a block being written stays readable, a put short of room waits only a bounded
time, a failing writer loses nothing and falls back to synchronous eviction, prefetched
blocks fill free memory without evicting, and every thread is joined on stop.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from strataflow import Context, StorageLevel
from strataflow.config import ConfigError
from strataflow.storage.memory.unified import MemoryManager
from strataflow.storage.disk.disk_store import DiskFull, DiskStore
from strataflow.storage.manager import BlockId, BlockManager
from strataflow.storage.policies import make_policy
from strataflow.storage.policies.no_recache import NoRecachePolicy
from waits import HANG_S, wait_for

pytestmark = pytest.mark.usefixtures("no_leaks")

KB = 1024
MB = 1024 * KB
MD, MD_SER, ML = StorageLevel.MEMORY_AND_DISK, StorageLevel.MEMORY_AND_DISK_SER, StorageLevel.MEMORY_ONLY


def block_value(did: int, split: int, size: int = 50 * KB) -> np.ndarray:
    return np.full((size - 112) // 8, did * 100 + split, dtype=np.float64)


class Harness:
    def __init__(self, tmp_path, total=MB, policy="no-recache", async_eviction=True, watermarks=(0.5, 0.7),
                 wait_s=HANG_S):
        # wait_s: a put short of room waits for the writer until it freed the bytes (a
        # signal); the bound only guards a hang, so "no synchronous eviction" never depends
        # on how soon a busy machine schedules the writer (a test of the bound sets its own)
        self.mm = MemoryManager(total, 0.5)
        (tmp_path / "cache").mkdir(exist_ok=True)
        self.disk = DiskStore([str(tmp_path / "cache")])
        self.bm = BlockManager(self.mm, self.disk, make_policy(policy), async_eviction=async_eviction,
                               watermarks=watermarks, async_wait_s=wait_s)
        self.events: list[dict] = []
        self.bm.events.subscribe(self.events.append)
        self.computed: list[BlockId] = []
        self.levels: dict = {}

    def persist(self, did, level=MD):
        self.bm.register(did, lambda: f"ds{did}", level, None, 100)
        self.levels[did] = level

    def read(self, did, split, size=50 * KB):
        bid = BlockId(did, split)

        def compute():
            self.computed.append(bid)
            return block_value(did, split, size)

        v = self.bm.get_or_compute(bid, self.levels[did], compute)
        assert np.array_equal(v, block_value(did, split, size)), f"wrong value for {bid}"
        self.check()
        return v

    def check(self):
        with self.mm.lock:
            assert self.mm.storage_used == self.bm.memory_store.used
            assert self.mm.storage_used + self.mm.execution_used <= self.mm.total

    def settle(self, timeout=HANG_S):
        """Waits for the writer's idle signal: it looked at everything asked of it and
        has nothing left to write, read or wait for."""
        assert self.bm.writer.wait_idle(timeout), "the writer did not settle"

    def m(self):
        return self.bm.metrics.snapshot()

    def named(self, name):
        return [e for e in self.events if e["event"] == name]

    def close(self):
        self.bm.close()
        assert not self.bm.writer.running


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path)
    yield harness
    harness.close()


def fill(h, first: int = 12, second: int = 10) -> list[BlockId]:
    """Dataset 1's blocks, then dataset 2's: by Spark's rule (kept by every policy here)
    only dataset 2's puts may evict dataset 1's blocks."""
    h.persist(1)
    h.persist(2)
    for s in range(first):
        h.read(1, s)
    for s in range(second):
        h.read(2, s)
    return [BlockId(1, s) for s in range(first)] + [BlockId(2, s) for s in range(second)]


def test_the_writer_keeps_headroom_and_puts_do_not_evict_synchronously(h):
    blocks = fill(h)  # 1.1 MB of blocks into a 1 MB memory
    h.settle()
    m = h.m()
    assert m["async_evictions"] > 0 and m["sync_evictions"] == 0
    assert h.mm.storage_used <= 0.7 * MB
    dropped = h.named("BlockDropped")
    assert all(e.get("mode") == "async" and e["to"] == "disk" and e["dataset_id"] == 1 for e in dropped)
    before = len(h.computed)
    for b in blocks:  # every block is in memory or on disk: nothing recomputed
        h.read(b.dataset_id, b.split)
    assert len(h.computed) == before
    assert {b for b, _ in h.bm.memory_store.items()} | {b for b, _ in h.disk.items()} == set(blocks)


def test_one_dataset_larger_than_memory_is_not_thrashed_by_the_writer(h):
    h.persist(1)
    for s in range(30):  # the writer asks for the block put last: never evicts its own dataset
        h.read(1, s)
    h.settle()
    assert h.bm.writer.passes > 0  # it was woken past the high watermark and looked
    m = h.m()
    assert m["async_evictions"] == 0 and m["sync_evictions"] == 0
    assert {b.split for b, _ in h.bm.memory_store.items()} == set(range(len(h.bm.memory_store)))


def test_memory_only_blocks_are_never_evicted_by_the_writer(h):
    h.persist(1, ML)
    for s in range(16):  # 800 KB of memory-only blocks: past the high watermark
        h.read(1, s)
    h.settle()
    assert h.bm.writer.passes > 0  # it was woken and looked
    assert h.m()["async_evictions"] == 0 and len(h.bm.memory_store) == 16
    assert not h.disk.items()


def hold_writes(h) -> tuple[threading.Event, threading.Event]:
    """Makes the writer's disk writes (the strict ones: synchronous drops are not held)
    wait for ``gate``; ``writing`` is set when one starts."""
    gate, writing = threading.Event(), threading.Event()
    real = h.bm.eviction.write_victim

    def slow(victim, strict=False):
        if strict:
            writing.set()
            assert gate.wait(HANG_S)
        return real(victim, strict)

    h.bm.eviction.write_victim = slow
    return gate, writing


def test_a_block_being_written_stays_readable_from_memory(h):
    gate, writing = hold_writes(h)
    fill(h, 8, 7)  # 750 KB: past the 0.7 high watermark
    try:
        assert writing.wait(HANG_S)
        victim = min(h.bm.writer.inflight())
        assert victim in h.bm.memory_store
        hits = h.m()["memory_hits"]
        h.read(victim.dataset_id, victim.split)
        assert h.m()["memory_hits"] == hits + 1
    finally:
        gate.set()
    h.settle()
    assert victim not in h.bm.memory_store and victim in h.disk
    h.read(victim.dataset_id, victim.split)
    assert h.m()["disk_hits"] == 1
    assert h.mm.storage_used <= 0.7 * MB


def test_a_put_short_of_room_waits_a_bounded_time_then_evicts_synchronously(tmp_path):
    h = Harness(tmp_path, wait_s=0.2, watermarks=(0.9, 1.0))
    gate, writing = hold_writes(h)  # the writer starts a write and never finishes it
    try:
        fill(h, 16, 10)  # 1.3 MB into 1 MB: every put returned while the writer was stuck
        assert writing.is_set() and h.bm.writer.failed is None  # still stuck, not failed
        assert h.m()["sync_evictions"] > 0 and h.m()["async_evictions"] == 0  # puts went synchronous
        assert h.mm.reclaim_waited_s > 0  # after waiting for it
    finally:
        gate.set()
        h.close()


def test_a_failing_writer_keeps_the_block_and_falls_back_to_synchronous_eviction(h):
    real = h.bm.eviction.write_victim

    def boom(victim, strict=False):
        if strict:  # the writer's writes fail; synchronous drops write as usual
            raise DiskFull(28, "no space left on the test device")
        return real(victim, strict)

    h.bm.eviction.write_victim = boom
    blocks = fill(h, 14, 16)  # 1.5 MB into 1 MB
    (failed,) = h.named("EvictionFailed")
    assert "no space left" in failed["reason"] and failed["fallback"] == "synchronous eviction"
    assert h.bm.writer.failed is not None and not h.bm.writer.helping()
    m = h.m()
    assert m["eviction_failures"] == 1 and m["sync_evictions"] > 0 and m["blocks_discarded"] == 0
    failed_block = BlockId(1, int(failed["block"].rsplit("_", 1)[1]))
    assert failed_block in h.bm.memory_store or failed_block in h.disk  # kept, then dropped synchronously
    before = len(h.computed)
    for b in blocks:
        h.read(b.dataset_id, b.split)
    assert len(h.computed) == before  # nothing lost


def test_a_full_disk_under_the_writer_loses_nothing_silently(tmp_path, caplog):
    h = Harness(tmp_path)
    try:
        h.disk.capacity = 200 * KB  # room for 3 blocks on disk
        with caplog.at_level("WARNING", logger="strataflow"):
            blocks = fill(h, 14, 16)
        assert [r for r in caplog.records if "not cached" in r.getMessage()]
        assert h.named("EvictionFailed")
        held = {b for b, _ in h.bm.memory_store.items()} | {b for b, _ in h.disk.items()}
        not_stored = {e["block"] for e in h.named("BlockNotStored")}
        discarded = {e["block"] for e in h.named("BlockDropped") if e["to"] == "discarded"}
        for bid in blocks:  # each block is held, or an event said it was not
            assert bid in held or str(bid) in not_stored | discarded
        assert h.disk.used <= 200 * KB
        for b in blocks:
            h.read(b.dataset_id, b.split)
    finally:
        h.close()


def test_unpersist_while_writing_leaves_no_file(h):
    gate, writing = hold_writes(h)
    fill(h, 8, 7)
    try:
        assert writing.wait(HANG_S)
        h.bm.unregister(1)
        h.bm.unregister(2)
    finally:
        gate.set()
    h.settle()
    assert not h.bm.writer.inflight()
    assert not h.disk.items() and h.mm.storage_used == 0


def test_bad_watermarks_are_config_errors(tmp_path):
    for marks in [(0.9, 0.5), (0.0, 0.5), (0.5, 1.5), ("a", "b"), (0.5,)]:
        with pytest.raises(ConfigError, match="eviction_watermarks"):
            Context(memory="8MB", parallelism=1, progress=False, local_dirs=[str(tmp_path)],
                    shuffle_dirs=[str(tmp_path)], async_eviction=True, eviction_watermarks=marks)


@pytest.mark.parametrize("tiers", [False, True])
def test_context_with_async_eviction_gives_the_same_answers_and_stops_cleanly(tmp_path, tiers):
    kw = {}
    if tiers:
        (tmp_path / "ssd").mkdir()
        (tmp_path / "hdd").mkdir()
        kw["tiers"] = [{"name": "ssd", "dirs": [str(tmp_path / "ssd")], "capacity": "1MB"},
                       {"name": "hdd", "dirs": [str(tmp_path / "hdd")]}]
    # no-recache: the second dataset's puts evict the first's blocks (lineage would keep the
    # looped-over blocks, predicted sooner, and send the new ones to disk: no eviction)
    c = Context(backend="threads", memory="2MB", parallelism=2, progress=False, local_dirs=[str(tmp_path)],
                shuffle_dirs=[str(tmp_path)], async_eviction=True, policy="no-recache", **kw)
    try:
        pts = c.from_numpy(np.arange(600_000, dtype=np.float64).reshape(-1, 3), 12).persist(MD)  # 4.8 MB
        centers = np.array([[0.0, 0.0, 0.0], [1e6, 1e6, 1e6]])
        for _ in range(3):  # a K-means-like loop over a cache 2.4x memory
            sums = pts.map_partitions(lambda b, cs=centers: [np.bincount(
                ((b[:, None, :] - cs[None]) ** 2).sum(-1).argmin(1), minlength=2)]).collect()
        assert np.sum(sums, axis=0).sum() == 200_000
        doubled = pts.map_partitions(lambda b: b * 2.0).persist(MD)  # a second dataset evicts the first
        for _ in range(2):
            assert doubled.map_partitions(lambda b: [b[:, 0].sum()]).sum() == 2 * np.arange(0, 600_000, 3.0).sum()
        m = c.metrics()
        assert m["async_evictions"] > 0 and m["storage_memory_used"] <= 2 * MB
        assert all(t.capacity is None or t.used <= t.capacity for t in c.disk_store.tiers)
    finally:
        c.stop()
    assert not c.block_manager.writer.running


# -- prefetch ---------------------------------------------------------------------------------------
class PrefetchAll(NoRecachePolicy):
    """Names every disk block that fits in free memory, smallest split first."""

    name = "test-prefetch"
    prefetches = True  # the contract's capability flag: without it the manager never asks

    def prefetch_candidates(self, free, on_disk):
        out = []
        for bid in sorted(on_disk):
            if on_disk[bid] <= free:
                out.append(bid)
                free -= on_disk[bid]
        return out


@pytest.mark.parametrize("async_eviction", [False, True])
def test_prefetch_fills_free_memory_without_evicting(tmp_path, async_eviction):
    h = Harness(tmp_path, policy=PrefetchAll(), async_eviction=async_eviction, watermarks=(0.9, 1.0))
    try:
        h.persist(1, MD_SER)
        task = 42
        h.mm.task_started(task)
        assert h.mm.acquire_execution(700 * KB, task) == 700 * KB  # execution holds most of memory
        for s in range(10):  # 500 KB of blocks: most go to disk
            h.read(1, s)
        on_disk = {b for b, _ in h.disk.items()}
        assert len(on_disk) >= 3
        h.mm.task_finished(task)  # memory is free again
        dropped = h.m()["blocks_dropped"]
        h.read(1, 0)  # any access runs the prefetch hook
        h.settle()  # the queued prefetches are done
        m = h.m()
        assert m["blocks_prefetched"] == len(on_disk) and m["bytes_prefetched"] > 0
        assert m["blocks_dropped"] == dropped  # nothing was evicted to make room
        assert {e["block"] for e in h.named("BlockPrefetched")} == {str(b) for b in on_disk}
        hits = m["memory_hits"]
        for s in range(10):
            h.read(1, s)
        assert h.m()["memory_hits"] == hits + 10 and h.m()["disk_hits"] == 0
    finally:
        h.close()


def test_an_idle_writer_thread_ends_and_work_starts_another(h):
    fill(h)
    assert h.bm.writer.running
    # half a second without work: it ends (by itself: only a hang outlasts the wait)
    wait_for(lambda: not h.bm.writer.running, what="the idle writer thread to end")
    before = h.m()["async_evictions"]
    h.persist(3)
    for s in range(10):  # a new dataset's puts past the high watermark: a new thread writes again
        h.read(3, s)
    h.settle()
    assert h.m()["async_evictions"] > before and h.m()["sync_evictions"] == 0
    assert h.mm.storage_used <= 0.7 * MB


def test_adaptive_does_not_promote_into_the_writers_headroom(tmp_path):
    """A block promoted into the headroom the writer keeps free would be written out again
    at once: under the writer, promotion uses only the room below the high watermark."""
    h = Harness(tmp_path, policy="adaptive", watermarks=(0.5, 0.7))
    try:
        blocks = fill(h)
        h.settle()
        for _ in range(3):  # loops over everything: disk blocks are read again and again
            for b in blocks:
                h.read(b.dataset_id, b.split)
            h.settle()
        m = h.m()
        assert h.mm.storage_used <= 0.7 * MB
        # each promotion that lands in the headroom would be dropped again by the writer
        assert m["bytes_recached"] <= 0.3 * MB, m
        assert m["bytes_dropped"] <= 0.8 * MB, m
    finally:
        h.close()
