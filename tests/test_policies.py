"""The cache policies' rules, each against the Spark behaviour that
``strataflow/storage/policies/spark.py`` documents (and the paper's ``no-recache`` fix):

- LRU in access order: a memory hit moves a block to the young end, victims come from the
  old end;
- a block is never evicted for another block of its own dataset, but execution memory
  pressure may evict any block;
- all or nothing: victims that cannot free enough are not dropped, and the new block is
  not cached in memory (MEMORY_ONLY: recomputed; MEMORY_AND_DISK: written to disk);
- a dropped block of a disk-capable level goes to disk unless it is already there; a
  memory-only block is discarded;
- ``spark`` re-caches a block read from disk, also right after the put that spilled it;
  ``no-recache`` serves it from disk every time;
- unified memory: storage borrows free execution memory, execution evicts blocks only
  down to ``storage_fraction``, storage never evicts execution;
- ``make_policy`` and ``Context(policy=...)``.

Most tests drive a BlockManager with a MemoryManager and a DiskStore directly, with
numpy blocks whose accounted size is exact (``nbytes`` + 112 bytes of array header), so
that every eviction can be predicted; the last ones run the same rules end to end.
"""

from __future__ import annotations

import inspect
import json
import os
import sys

import numpy as np
import pytest

from strataflow import Context
from strataflow.cli import main as cli_main
from strataflow.config import Config, ConfigError
from strataflow.storage.memory.unified import MemoryManager
from strataflow.storage.disk.disk_store import _HEAD, DiskStore
from strataflow.storage.level import StorageLevel
from strataflow.storage.manager import BlockId, BlockManager
from strataflow.storage.policies import DEFAULT_POLICY, POLICIES, Policy, Promotion, make_policy
from strataflow.storage.policies.lineage import LineagePolicy
from strataflow.storage.policies.no_recache import NoRecachePolicy
from strataflow.storage.policies.spark import SparkPolicy
from strataflow.storage.blocks.sizing import estimate_size

pytestmark = pytest.mark.usefixtures("no_leaks")

KB = 1024
MB = 1024 * KB
#: why some tests run for the Spark family only (``policy_subset``): they pin down LRU victim order
LRU_ORDER = "asserts LRU victim order (a memory hit moves a block to the young end): Spark's rule, not the contract's"
ML, MD = StorageLevel.MEMORY_ONLY, StorageLevel.MEMORY_AND_DISK


def block_value(did: int, split: int, size: int) -> np.ndarray:
    """A float64 block whose estimated size is exactly ``size`` bytes."""
    n, rem = divmod(size - 112, 8)
    assert rem == 0
    return np.full(n, did * 100 + split, dtype=np.float64)


def payload(h, bid) -> int:
    """Bytes of a block file's payload (what a disk read counts): the file minus its header."""
    e = h.disk.entry(bid)
    return e.size - _HEAD.size - len(e.serializer.encode())


def test_block_values_have_the_exact_size_the_tests_assume():
    assert estimate_size(block_value(1, 2, 300 * KB)) == 300 * KB
    assert estimate_size(block_value(1, 2, 100_000)) == 100_000


class Harness:
    """A block manager over a memory manager and a disk store, with a compute counter."""

    def __init__(self, tmp_path, policy="spark", total=MB, fraction=0.5, memory=None, disk=None):
        self.mm = memory if memory is not None else MemoryManager(total, fraction)
        self.dir = str(tmp_path / "cache")
        os.makedirs(self.dir, exist_ok=True)
        self.disk = disk if disk is not None else DiskStore([self.dir])
        self.bm = BlockManager(self.mm, self.disk, make_policy(policy))
        self.events: list[dict] = []
        self.bm.events.subscribe(self.events.append)
        self.computed: list[BlockId] = []
        self.levels: dict[int, object] = {}
        self.sizes: dict[BlockId, int] = {}

    def persist(self, did: int, level, serializer=None) -> None:
        self.bm.register(did, lambda did=did: f"ds{did}", level, serializer, 8)
        self.levels[did] = level

    def read(self, did: int, split: int, size: int = 300 * KB):
        bid = BlockId(did, split)
        self.sizes.setdefault(bid, size)

        def compute():
            self.computed.append(bid)
            return block_value(did, split, self.sizes[bid])

        value = self.bm.get_or_compute(bid, self.levels[did], compute)
        assert np.array_equal(value, block_value(did, split, self.sizes[bid])), f"wrong value for {bid}"
        return value

    def memory(self) -> set:
        return {(b.dataset_id, b.split) for b, _ in self.bm.memory_store.items()}

    def on_disk(self) -> set:
        return {(b.dataset_id, b.split) for b, _ in self.disk.items()}

    def m(self) -> dict:
        return self.bm.metrics.snapshot()

    def dropped(self) -> list:
        return [(e["dataset_id"], int(e["block"].rsplit("_", 1)[1]), e["to"]) for e in self.events
                if e["event"] == "BlockDropped"]

    def check_accounting(self) -> None:
        with self.mm.lock:
            assert self.mm.storage_used == self.bm.memory_store.used
            assert self.mm.storage_used + self.mm.execution_used <= self.mm.total


# -- the policy objects themselves ------------------------------------------------------------
def test_spark_policy_selects_victims_from_the_old_end_in_access_order():
    p = SparkPolicy()
    a, b, c = BlockId(1, 0), BlockId(2, 0), BlockId(3, 0)
    sizes = {a: 100, b: 100, c: 100}
    for bid in (a, b, c):
        p.record_access(bid, "put")
    assert p.select_victims(100, None, sizes) == [a]
    p.record_access(a, "memory")  # a hit: a is now the youngest
    assert p.select_victims(100, None, sizes) == [b]
    assert p.select_victims(150, None, sizes) == [b, c]
    p.record_access(b, "disk")  # a disk hit does not touch the memory LRU
    assert p.select_victims(100, None, sizes) == [b]
    p.record_remove(b)
    assert p.select_victims(100, None, {a: 100, c: 100}) == [c]
    # blocks the store no longer holds are skipped, not returned
    assert p.select_victims(100, None, {a: 100}) == [a]


def test_spark_policy_never_picks_blocks_of_the_dataset_being_added():
    p = SparkPolicy()
    a0, a1, b0 = BlockId(1, 0), BlockId(1, 1), BlockId(2, 0)
    sizes = {a0: 100, b0: 100, a1: 100}
    for bid in (a0, b0, a1):
        p.record_access(bid, "put")
    assert p.select_victims(100, BlockId(1, 5), sizes) == [b0]  # a0 is older but of dataset 1
    assert p.select_victims(150, BlockId(1, 5), sizes) is None  # only b0 is evictable: all or nothing
    assert p.select_victims(300, None, sizes) == [a0, b0, a1]  # execution: any block
    assert p.select_victims(301, None, sizes) is None


#: the answers of the policies this file knows, for a block nothing is known about: spark
#: re-caches evicting, no-recache never, adaptive and lineage (without knowledge) only into
#: free memory. A policy not listed gets the contract's checks only.
KNOWN_ANSWERS = {  # name: (promote, recache_after_spill, plans and prefetches)
    "spark": (Promotion.MAY_EVICT, True, False),
    "no-recache": (Promotion.NO, False, False),
    "adaptive": (Promotion.INTO_FREE, False, False),
    "lineage": (Promotion.INTO_FREE, False, True),
}


def test_promotion_and_recache_after_spill_flags(policy):
    p = make_policy(policy)
    assert isinstance(p, Policy) and p.name == policy
    assert isinstance(p.admit(BlockId(0, 0), 10), bool)
    promotion = p.promote(BlockId(0, 0), 10)
    assert isinstance(promotion, Promotion) and bool(promotion) is (promotion is not Promotion.NO)
    # capabilities are flags of the contract, not guessed from overridden methods
    assert all(isinstance(flag, bool) for flag in (p.plans, p.prefetches, p.recache_after_spill))
    if policy in KNOWN_ANSWERS:
        expected, recache, future = KNOWN_ANSWERS[policy]
        assert p.admit(BlockId(0, 0), 10)
        assert promotion is expected
        assert p.recache_after_spill is recache
        assert (p.plans, p.prefetches) == (future, future)


# -- LRU in access order ------------------------------------------------------------------------
@pytest.mark.policy_subset("spark", "no-recache", "adaptive", reason=LRU_ORDER)
def test_a_memory_hit_moves_a_block_to_the_young_end(tmp_path, policy):
    h = Harness(tmp_path, policy)
    h.persist(1, ML)
    h.persist(2, ML)
    for s in range(3):
        h.read(1, s)  # A0 A1 A2: 900 KB of 1 MB
    assert h.memory() == {(1, 0), (1, 1), (1, 2)}
    h.read(1, 0)  # hit: A0 is now the youngest, A1 the oldest
    assert h.m()["memory_hits"] == 1
    h.read(2, 0)  # needs 176 KB more: the oldest block goes
    assert h.memory() == {(1, 0), (1, 2), (2, 0)}
    assert h.dropped() == [(1, 1, "discarded")]
    h.read(2, 1)  # LRU now A2, A0, B0; B0 is of the same dataset anyway
    assert h.memory() == {(1, 0), (2, 0), (2, 1)}
    assert h.dropped() == [(1, 1, "discarded"), (1, 2, "discarded")]
    h.check_accounting()


def test_without_the_hit_the_first_block_put_is_the_first_victim(tmp_path):
    """The control for the test above: insertion order alone evicts A0."""
    h = Harness(tmp_path, "spark")
    h.persist(1, ML)
    h.persist(2, ML)
    for s in range(3):
        h.read(1, s)
    h.read(2, 0)
    assert h.dropped() == [(1, 0, "discarded")]


# -- never evict a block of the same dataset; execution may evict any block --------------------------
def test_a_put_does_not_evict_blocks_of_its_own_dataset(tmp_path, policy):
    h = Harness(tmp_path, policy)
    h.persist(1, ML)
    for s in range(3):
        h.read(1, s)
    h.read(1, 3)  # does not fit, and only blocks of dataset 1 could make room
    assert h.memory() == {(1, 0), (1, 1), (1, 2)}
    m = h.m()
    assert m["blocks_dropped"] == 0 and m["blocks_not_stored"] == 1
    assert [e for e in h.events if e["event"] == "BlockNotStored"][0]["block"] == "rdd_1_3"
    h.read(1, 3)  # MEMORY_ONLY: not cached, so computed again
    assert h.computed.count(BlockId(1, 3)) == 2
    h.check_accounting()


def test_the_victim_search_skips_own_blocks_but_takes_older_ones_of_others(tmp_path, policy):
    h = Harness(tmp_path, policy)
    h.persist(1, ML)
    h.persist(2, ML)
    h.read(1, 0)
    h.read(2, 0)
    h.read(1, 1)  # LRU: A0 (oldest), B0, A1
    h.read(1, 2)  # must free 176 KB: A0 is older, but B0 is the first block of another dataset
    assert h.memory() == {(1, 0), (1, 1), (1, 2)}
    assert h.dropped() == [(2, 0, "discarded")]


@pytest.mark.policy_subset("spark", "no-recache", "adaptive", reason=LRU_ORDER)
def test_execution_pressure_may_evict_any_block(tmp_path, policy):
    h = Harness(tmp_path, policy, fraction=0.0)
    h.persist(1, ML)
    for s in range(3):
        h.read(1, s)
    h.read(1, 1)  # LRU: A0, A2, A1
    h.mm.task_started(7)
    got = h.mm.acquire_execution(500 * KB, 7)  # free is 124 KB: 376 KB must come from the cache
    assert got == 500 * KB and h.mm.held_by(7) == 500 * KB
    assert h.memory() == {(1, 1)}  # A0 then A2, from the old end
    assert [d[:2] for d in h.dropped()] == [(1, 0), (1, 2)]
    h.check_accounting()
    h.mm.task_finished(7)
    assert h.mm.execution_used == 0


# -- all or nothing -------------------------------------------------------------------------------
@pytest.mark.parametrize("level", [ML, MD], ids=str)
def test_all_or_nothing_when_victims_cannot_free_enough(tmp_path, policy, level):
    h = Harness(tmp_path, policy)
    h.persist(1, level)
    h.persist(2, level)
    h.read(1, 0)
    h.read(2, 0)
    h.read(2, 1)  # A0, B0, B1: 900 KB, 124 KB free
    h.read(2, 2, size=800 * KB)  # needs 676 KB more; only A0 (300 KB) is evictable
    assert h.memory() == {(1, 0), (2, 0), (2, 1)}, "a partial eviction happened"
    assert h.dropped() == []
    m = h.m()
    assert m["blocks_dropped"] == 0 and m["bytes_dropped"] == 0
    h.check_accounting()
    h.read(2, 2)
    if level is ML:  # not cached anywhere: recomputed
        assert h.on_disk() == set()
        assert h.computed.count(BlockId(2, 2)) == 2
        assert h.m()["blocks_not_stored"] == 2
    else:  # written to disk instead, and served from there (or re-cached, which fails too)
        assert h.on_disk() == {(2, 2)}
        assert h.computed.count(BlockId(2, 2)) == 1
        assert h.m()["disk_hits"] == 1 and h.m()["blocks_not_stored"] == 0
    assert h.memory() == {(1, 0), (2, 0), (2, 1)}
    assert h.dropped() == []


def test_a_block_larger_than_memory_evicts_nothing(tmp_path, policy):
    h = Harness(tmp_path, policy)
    h.persist(1, MD)
    h.persist(2, MD)
    h.read(1, 0)
    h.read(1, 1)
    h.read(2, 0, size=MB + 8)
    assert h.memory() == {(1, 0), (1, 1)} and h.dropped() == []
    assert h.on_disk() == {(2, 0)}


# -- where dropped blocks go ------------------------------------------------------------------------
@pytest.mark.parametrize("level", [MD, StorageLevel.MEMORY_AND_DISK_SER], ids=str)
def test_a_dropped_block_is_written_to_disk_only_once(tmp_path, level):
    h = Harness(tmp_path, "spark", fraction=0.0)
    h.persist(1, level)
    for s in range(3):
        h.read(1, s)
    assert h.on_disk() == set()
    h.mm.task_started(1)
    assert h.mm.acquire_execution(300 * KB, 1) == 300 * KB  # evicts A0 to disk
    assert h.dropped() == [(1, 0, "disk")] and h.on_disk() == {(1, 0)}
    written = h.m()["disk_bytes_written"]
    assert written == h.disk.entry(BlockId(1, 0)).size > 300 * KB
    h.mm.task_finished(1)

    h.read(1, 0)  # disk hit; spark re-caches it (there is room now), the file stays
    m = h.m()
    assert m["disk_hits"] == 1 and m["blocks_recached"] == 1
    assert (1, 0) in h.memory() and h.on_disk() == {(1, 0)}
    h.read(1, 1)
    h.read(1, 2)  # LRU: A0, A1, A2
    h.mm.task_started(2)
    assert h.mm.acquire_execution(300 * KB, 2) == 300 * KB  # A0 dropped again
    assert h.dropped() == [(1, 0, "disk"), (1, 0, "disk")]
    m = h.m()
    assert m["blocks_dropped"] == 2
    assert m["disk_bytes_written"] == written, "a block already on disk was written again"
    assert len([f for f in os.listdir(h.dir) if f.endswith(".blk")]) == 1
    h.mm.task_finished(2)
    h.read(1, 0)
    assert h.computed.count(BlockId(1, 0)) == 1  # never recomputed
    h.check_accounting()


@pytest.mark.parametrize("level", [ML, StorageLevel.MEMORY_ONLY_SER, StorageLevel.OFF_HEAP], ids=str)
def test_a_dropped_memory_only_block_is_discarded(tmp_path, policy, level):
    h = Harness(tmp_path, policy)
    h.persist(1, level)
    h.persist(2, level)
    for s in range(3):
        h.read(1, s)
    h.read(2, 0)  # evicts A0
    assert h.dropped() == [(1, 0, "discarded")]
    m = h.m()
    assert m["blocks_discarded"] == 1 and m["disk_bytes_written"] == 0
    assert h.on_disk() == set() and os.listdir(h.dir) == []
    h.read(1, 0)  # recomputed from lineage
    assert h.computed.count(BlockId(1, 0)) == 2
    assert h.m()["misses"] == 5


# -- re-caching --------------------------------------------------------------------------------------
def _fill_and_push_out(h):
    """A0..A2 cached, then B0..B2 push every block of A to disk (LRU, 300 KB each)."""
    h.persist(1, MD)
    h.persist(2, MD)
    for s in range(3):
        h.read(1, s)
    for s in range(3):
        h.read(2, s)
    assert h.memory() == {(2, 0), (2, 1), (2, 2)}
    assert h.on_disk() == {(1, 0), (1, 1), (1, 2)}
    assert h.m()["blocks_dropped"] == 3


def test_spark_recaches_a_disk_block_evicting_other_datasets(tmp_path):
    h = Harness(tmp_path, "spark")
    _fill_and_push_out(h)
    before = h.m()
    for s in range(3):
        h.read(1, s)  # each disk hit is put back in memory, evicting a block of B
    m = h.m()
    assert m["disk_hits"] - before["disk_hits"] == 3
    assert m["blocks_recached"] == 3 and m["bytes_recached"] == 900 * KB
    assert m["blocks_dropped"] - before["blocks_dropped"] == 3
    assert h.memory() == {(1, 0), (1, 1), (1, 2)}
    assert [d[0] for d in h.dropped()[3:]] == [2, 2, 2]
    assert m["disk_bytes_written"] - before["disk_bytes_written"] > 0  # B went to disk
    for s in range(3):
        h.read(1, s)  # now memory hits
    assert h.m()["memory_hits"] - m["memory_hits"] == 3
    assert h.m()["disk_hits"] == m["disk_hits"]
    # the thrash: every pass over B moves 900 KB back, evicting A again
    for s in range(3):
        h.read(2, s)
    assert h.m()["blocks_recached"] == 6 and h.m()["blocks_dropped"] == 9
    assert len(h.computed) == 6
    h.check_accounting()


def test_no_recache_serves_disk_blocks_from_disk_on_every_pass(tmp_path):
    h = Harness(tmp_path, "no-recache")
    _fill_and_push_out(h)
    base = h.m()
    for p in range(1, 4):
        for s in range(3):
            h.read(1, s)
        for s in range(3):
            h.read(2, s)
        m = h.m()
        assert m["disk_hits"] - base["disk_hits"] == 3 * p  # A from disk, every pass
        assert m["memory_hits"] - base["memory_hits"] == 3 * p  # B stays in memory
        assert m["blocks_recached"] == 0 and m["bytes_recached"] == 0
        assert m["blocks_dropped"] == base["blocks_dropped"]
        assert m["disk_bytes_written"] == base["disk_bytes_written"]
        assert m["disk_bytes_read"] - base["disk_bytes_read"] == p * sum(
            payload(h, BlockId(1, s)) for s in range(3))
    assert h.memory() == {(2, 0), (2, 1), (2, 2)}
    assert len(h.computed) == 6


class CountingMemory(MemoryManager):
    """Records every storage request; refuses the first ``refuse`` requests for a block
    (as if a running task held the memory then released it)."""

    def __init__(self, total, fraction=0.5, refuse=0):
        super().__init__(total, fraction)
        self.requests: list = []
        self.refuse = refuse

    def acquire_storage(self, num_bytes, block_id=None, evict=True):
        self.requests.append(block_id)
        if self.requests.count(block_id) <= self.refuse:
            return False
        return super().acquire_storage(num_bytes, block_id, evict)


def test_after_a_spill_spark_reads_the_block_back_and_tries_memory_again(tmp_path, policy):
    mm = CountingMemory(MB)
    h = Harness(tmp_path, policy, memory=mm)
    h.persist(1, MD)
    for s in range(3):
        h.read(1, s)
    h.read(1, 3)  # no room (own dataset): spilled to disk
    assert h.on_disk() == {(1, 3)}
    tries = mm.requests.count(BlockId(1, 3))
    m = h.m()
    assert m["disk_hits"] == 0  # the read-back is not a hit
    if policy == "spark":
        assert tries == 2
        assert m["disk_bytes_read"] == payload(h, BlockId(1, 3))
    else:
        assert tries == 1 and m["disk_bytes_read"] == 0
    assert m["blocks_recached"] == 0 and h.memory() == {(1, 0), (1, 1), (1, 2)}


def test_the_retry_after_a_spill_caches_the_block_when_memory_came_free(tmp_path, policy):
    mm = CountingMemory(MB, refuse=1)  # the put's request fails, a second one would succeed
    h = Harness(tmp_path, policy, memory=mm)
    h.persist(1, MD)
    h.read(1, 0)
    assert h.on_disk() == {(1, 0)}
    if h.bm.policy.recache_after_spill:  # spark: the read-back tries memory again
        assert h.memory() == {(1, 0)} and h.m()["blocks_recached"] == 1
        h.read(1, 0)
        assert h.m()["memory_hits"] == 1
    else:
        assert h.memory() == set() and h.m()["blocks_recached"] == 0
        never = make_policy(policy).promote(BlockId(1, 0), 100) is Promotion.NO  # a fresh one: no state
        h.read(1, 0)
        assert h.m()["disk_hits"] == 1
        if never:  # no-recache: and it stays on disk (others may promote it into free memory)
            assert h.memory() == set()
    assert h.computed == [BlockId(1, 0)]


def test_a_recache_does_not_evict_blocks_of_its_own_dataset(tmp_path):
    h = Harness(tmp_path, "spark")
    h.persist(1, MD)
    h.persist(2, MD)
    for s in range(3):
        h.read(1, s)
    h.read(2, 0)  # evicts A0 to disk; LRU: A1, A2, B0
    assert h.on_disk() == {(1, 0)}
    h.read(1, 0)  # re-cached: A1 is older, but only B0 may make room for a block of A
    assert h.memory() == {(1, 0), (1, 1), (1, 2)}
    assert h.dropped() == [(1, 0, "disk"), (2, 0, "disk")]
    assert h.m()["blocks_recached"] == 1


def test_a_recache_that_cannot_make_room_drops_nothing(tmp_path):
    h = Harness(tmp_path, "spark")
    h.persist(1, MD)
    for s in range(4):
        h.read(1, s)  # A3 does not fit next to A0..A2 and goes to disk
    for _ in range(2):
        h.read(1, 3)  # a disk hit each time; the re-cache fails without evicting A0..A2
    m = h.m()
    assert m["disk_hits"] == 2 and m["blocks_recached"] == 0 and m["blocks_dropped"] == 0
    assert h.memory() == {(1, 0), (1, 1), (1, 2)}
    assert h.computed.count(BlockId(1, 3)) == 1


def test_disk_only_blocks_are_never_put_in_memory(tmp_path, policy):
    h = Harness(tmp_path, policy)
    h.persist(1, StorageLevel.DISK_ONLY)
    for _ in range(3):
        h.read(1, 0)
    assert h.memory() == set() and h.mm.storage_used == 0
    assert h.m()["disk_hits"] == 2 and h.m()["blocks_recached"] == 0
    assert h.computed == [BlockId(1, 0)]


# -- unified memory -----------------------------------------------------------------------------------
def test_storage_borrows_free_execution_memory(tmp_path, policy):
    h = Harness(tmp_path, policy, fraction=0.5)  # storage region 512 KB
    h.persist(1, ML)
    for s in range(3):
        h.read(1, s)
    assert h.memory() == {(1, 0), (1, 1), (1, 2)}
    assert h.mm.storage_used == 900 * KB > h.mm.storage_region
    assert h.m()["blocks_dropped"] == 0 and h.m()["blocks_not_stored"] == 0


def test_execution_evicts_blocks_only_down_to_the_storage_region(tmp_path, policy):
    total, block = 1_000_000, 100_000  # region 500_000: five blocks exactly
    h = Harness(tmp_path, policy, total=total, fraction=0.5)
    h.persist(1, ML)
    for s in range(8):
        h.read(1, s, size=block)
    assert h.mm.storage_used == 800_000
    h.mm.task_started(1)
    got = h.mm.acquire_execution(total, 1)  # wants everything
    assert h.mm.storage_used == 500_000 == h.mm.storage_region
    assert got == 500_000 and h.mm.held_by(1) == 500_000
    assert h.memory() == {(1, s) for s in range(3, 8)}  # the three oldest went
    assert h.m()["blocks_dropped"] == 3
    assert h.mm.acquire_execution(100_000, 1) == 0  # nothing more: storage is protected
    assert h.m()["blocks_dropped"] == 3 and h.mm.storage_used == 500_000
    h.check_accounting()
    h.mm.task_finished(1)


@pytest.mark.parametrize("fraction, survivors", [(1.0, 3), (0.0, 0)])
def test_storage_fraction_bounds_what_execution_can_reclaim(tmp_path, fraction, survivors):
    h = Harness(tmp_path, "spark", fraction=fraction)
    h.persist(1, ML)
    for s in range(3):
        h.read(1, s)
    h.mm.task_started(1)
    got = h.mm.acquire_execution(MB, 1)
    assert len(h.memory()) == survivors
    assert got == MB - survivors * 300 * KB
    h.check_accounting()
    h.mm.task_finished(1)


@pytest.mark.parametrize("level", [ML, MD], ids=str)
def test_storage_never_evicts_execution(tmp_path, policy, level):
    h = Harness(tmp_path, policy, fraction=0.5)
    h.mm.task_started(1)
    assert h.mm.acquire_execution(700 * KB, 1) == 700 * KB  # into storage's region: it was free
    h.persist(1, level)
    h.read(1, 0, size=400 * KB)  # 324 KB free, and execution memory is not evictable
    assert h.mm.held_by(1) == 700 * KB
    assert h.memory() == set()
    assert h.on_disk() == ({(1, 0)} if level is MD else set())
    h.read(1, 1, size=300 * KB)  # this one fits in what is free
    assert h.memory() == {(1, 1)} and h.mm.held_by(1) == 700 * KB
    h.persist(2, level)
    h.read(2, 0, size=300 * KB)  # 24 KB free: evicts the block of dataset 1, not execution memory
    assert h.memory() == {(2, 0)} and h.mm.held_by(1) == 700 * KB
    assert [d[:2] for d in h.dropped()] == [(1, 1)]
    h.check_accounting()
    h.mm.task_finished(1)


# -- choosing a policy -----------------------------------------------------------------------------
def test_make_policy_names_the_choices_for_an_unknown_name():
    with pytest.raises(ConfigError) as err:
        make_policy("lfu")
    msg = str(err.value)
    assert "lfu" in msg and all(name in msg for name in POLICIES)


def test_make_policy_default_and_lookup():
    assert DEFAULT_POLICY == "lineage"
    assert isinstance(make_policy(None), LineagePolicy)
    assert type(make_policy("spark")) is SparkPolicy
    assert type(make_policy("SPARK")) is SparkPolicy
    assert type(make_policy("no-recache")) is NoRecachePolicy
    assert DEFAULT_POLICY in POLICIES
    mine = SparkPolicy()
    assert make_policy(mine) is mine
    assert make_policy("spark") is not make_policy("spark")  # a fresh LRU per context


def assert_policy_is_complete(name: str, tmp_path) -> None:
    """What the registry line must be all it takes for: a policy class named as its key,
    documented (its module's or class's docstring names it, for the README's table), built
    fresh by ``make_policy``, accepted by the configuration and chosen on the command line,
    where the simulator replays a trace with it. True of any registry, so a new policy is
    checked without editing this test (``test_policy_recipe.py`` runs it on a double)."""
    cls = POLICIES[name]
    assert isinstance(cls, type) and issubclass(cls, Policy) and not inspect.isabstract(cls)
    assert cls.name == name == name.lower(), f"{cls.__name__}.name is {cls.name!r}, registered as {name!r}"
    doc = (cls.__doc__ or "") + (sys.modules[cls.__module__].__doc__ or "")
    assert f"``{name}``" in doc, f"{cls.__name__}: no docstring says what ``{name}`` does"
    assert type(make_policy(name.upper())) is cls and make_policy(name) is not make_policy(name)
    assert Config.build(memory="64MB", parallelism=1, local_dirs=str(tmp_path), policy=name).policy == name
    out = tmp_path / f"simulate-{name}.json"
    assert cli_main(["simulate", "--synthetic", "cyclic", "--pressure", "2", "--policies", name,
                     "--json", str(out)]) == 0
    row = json.loads(out.read_text())["policies"]
    assert set(row) == {name, "opt", "unbounded"}
    assert 0 <= row[name]["byte_hit_ratio"] <= row["opt"]["byte_hit_ratio"] + 1e-9


def test_every_registered_policy_is_complete(tmp_path, policy):
    assert_policy_is_complete(policy, tmp_path)


def _ctx(tmp_path, **kw) -> Context:
    local, shuffle = tmp_path / "local", tmp_path / "shuffle"
    local.mkdir(exist_ok=True)
    shuffle.mkdir(exist_ok=True)
    kw.setdefault("memory", "2MB")
    return Context(parallelism=1, progress=False, local_dirs=[str(local)], shuffle_dirs=[str(shuffle)], **kw)


def test_context_selects_the_policy(tmp_path):
    with _ctx(tmp_path) as c:
        assert c.policy == "lineage" and isinstance(c.block_manager.policy, LineagePolicy)
    with _ctx(tmp_path, policy="no-recache") as c:
        assert c.policy == "no-recache" and isinstance(c.block_manager.policy, NoRecachePolicy)
    with _ctx(tmp_path, policy="spark") as c:
        assert c.policy == "spark" and isinstance(c.block_manager.policy, SparkPolicy)
    with pytest.raises(ConfigError, match="no-recache"):
        _ctx(tmp_path, policy="arc")
    assert os.listdir(tmp_path / "local") == [] and os.listdir(tmp_path / "shuffle") == []


# -- end to end ------------------------------------------------------------------------------------
def test_iterations_over_two_persisted_datasets(tmp_path, policy):
    """The paper's setting in small: two MEMORY_AND_DISK datasets of 1.2 MB each against
    2 MB, read alternately. ``spark`` moves blocks back into memory and drops the other
    dataset's on every pass (MB dropped grows with the iterations); ``no-recache`` drops
    only while first caching and then reads the same blocks from disk on every pass."""
    with _ctx(tmp_path, policy=policy) as c:
        data = np.arange(4 * 37_500, dtype=np.float64)  # 4 blocks of 300 KB
        a = c.from_numpy(data, 4).map_partitions(lambda x: x * 2).persist(MD)
        b = c.from_numpy(data, 4).map_partitions(lambda x: x + 1).persist(MD)
        want_a, want_b = (data * 2).sum(), (data + 1).sum()
        dropped, disk_hits, recached = [], [], []
        for _ in range(4):
            assert a.sum() == want_a and b.sum() == want_b
            m = c.metrics()
            dropped.append(m["bytes_dropped"])
            disk_hits.append(m["disk_hits"])
            recached.append(m["blocks_recached"])
            assert m["misses"] == 8  # never recomputed
            assert c.memory.storage_used <= c.memory.total
        assert dropped[0] > 0
        if policy == "spark":
            assert all(y > x for x, y in zip(dropped, dropped[1:])), dropped
            assert all(y > x for x, y in zip(recached, recached[1:])), recached
            assert dropped[-1] > 2 * 1.2 * MB
        else:
            assert dropped == [dropped[0]] * 4 and recached == [0] * 4
            per_pass = disk_hits[1] - disk_hits[0]
            assert per_pass > 0 and [y - x for x, y in zip(disk_hits, disk_hits[1:])] == [per_pass] * 3



def test_adaptive_promotes_only_into_free_memory(tmp_path):
    """``adaptive`` never evicts to promote (no thrash under pressure), but once memory is
    freed (here: execution memory taken, which evicts blocks, then given back) the blocks
    read from disk move back up."""
    import numpy as np

    from strataflow import Context, StorageLevel

    (tmp_path / "c").mkdir()
    with Context(memory="4MB", parallelism=1, policy="adaptive", local_dirs=[str(tmp_path / "c")],
                 shuffle_dirs=[str(tmp_path)], progress=False) as c:
        data = c.from_numpy(np.arange(1_600_000.0).reshape(-1, 2), 8).map_partitions(lambda a: a + 1)
        data = data.persist(StorageLevel.MEMORY_AND_DISK)  # 12.8 MB in 1.6 MB blocks: 2 fit in memory
        want = (np.arange(1_600_000.0) + 1).sum()
        assert data.map_partitions(lambda a: [a.sum()]).sum() == want
        before = c.metrics()
        for _ in range(2):  # under pressure: as no-recache, nothing moves
            assert data.map_partitions(lambda a: [a.sum()]).sum() == want
        m = c.metrics()
        assert m["blocks_recached"] == before["blocks_recached"] == 0
        assert m["blocks_dropped"] == before["blocks_dropped"] and m["disk_hits"] > before["disk_hits"]
        task = 10**9  # a task takes execution memory (evicting blocks to disk), then ends
        c.memory.task_started(task)
        assert c.memory.acquire_execution(2 << 20, task) > 0
        c.memory.task_finished(task)
        dropped = c.metrics()["blocks_dropped"]
        assert dropped > m["blocks_dropped"] and c.memory.free >= 2 << 20
        assert data.map_partitions(lambda a: [a.sum()]).sum() == want
        m = c.metrics()
        assert m["blocks_recached"] > 0 and m["blocks_dropped"] == dropped  # promoted without evicting
        hits = m["disk_hits"]
        assert data.map_partitions(lambda a: [a.sum()]).sum() == want
        assert c.metrics()["disk_hits"] < hits + 8  # more of the blocks are now read from memory
