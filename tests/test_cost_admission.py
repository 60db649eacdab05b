"""Cost-aware admission for AUTO (``storage/cost_admission.py``): a block of a dataset AUTO
drops (cheap to recompute) takes free memory, but evicts only blocks cheaper to get back
by the margin (or its own dataset's); a dear block may evict a cheap one; fixed levels
are untouched.

Costs are injected, never measured: the block manager weighs a ``DeclaredCosts`` clock
(tasks ``spend`` their compute seconds, a disk byte costs a declared bandwidth), and the
disk costs are observed as timed before any block, so no choice rests on a prior (which
would make AUTO explore by spilling) and none on how busy the machine is."""

from __future__ import annotations

import math

import numpy as np
import pytest

from strataflow.storage.auto_level import DROP, MAPPED, SERIALIZED, AutoLevels, DatasetFacts, DiskCosts
from strataflow.storage.blocks.block import DatasetInfo
from strataflow.storage.blocks.serde import get_serializer
from strataflow.storage.cost_admission import MARGIN, CostAdmission
from strataflow.storage.cost_clock import DeclaredCosts, spend
from strataflow.storage.disk.disk_store import DiskStore
from strataflow.storage.level import StorageLevel
from strataflow.storage.mapped.region_store import RegionStore
from strataflow.storage.manager import BlockId, BlockManager
from strataflow.storage.memory.unified import MemoryManager
from strataflow.storage.policies import make_policy

KB, MB = 1 << 10, 1 << 20
AUTO = StorageLevel.AUTO
CHEAP, DEAR, MID, PEER = 1, 2, 3, 4
#: declared compute seconds of one block: all cheaper than a round trip at 1 MB/s (0.2 s
#: for 100 KB), so AUTO drops them all; the dear one costs 100x the cheap one to get back,
#: the middle one 10x, and the peer about the same (within the margin)
COMPUTE_S = {CHEAP: 1e-4, DEAR: 1e-2, MID: 1e-3, PEER: 1.2e-4}


# -- the prices -----------------------------------------------------------------------------------
def auto_levels(write_s_per_mb: float, read_s_per_mb: float) -> AutoLevels:
    costs = DiskCosts()
    for form in ("serialized", "mapped"):
        costs.observe(form, "write", 8 * MB, 8 * write_s_per_mb)
        costs.observe(form, "read", 8 * MB, 8 * read_s_per_mb)
    return AutoLevels(costs, lambda kind, **f: None, lambda **d: None)


def add(auto: AutoLevels, datasets: dict, did: int, level, compute_s_per_byte: float | None,
        zero_copy: bool = True) -> None:
    facts = auto.register(did) if level is not None else None
    if facts is not None:
        facts.level, facts.compute_s_per_byte, facts.zero_copy = level, compute_s_per_byte, zero_copy
    datasets[did] = DatasetInfo(did, lambda: f"ds{did}", StorageLevel.MEMORY_AND_DISK if level is None else level,
                                get_serializer(None), 8, auto=facts)
    if facts is not None:
        facts.info = datasets[did]


def test_a_loss_is_priced_per_byte_from_what_auto_measured():
    auto, datasets = auto_levels(write_s_per_mb=0.01, read_s_per_mb=0.002), {}
    add(auto, datasets, 1, DROP, 3e-9)
    add(auto, datasets, 2, MAPPED, 1e-6)
    add(auto, datasets, 3, SERIALIZED, 1e-6, zero_copy=False)
    add(auto, datasets, 4, None, None)  # a fixed level
    add(auto, datasets, 5, DROP, None)  # AUTO, nothing measured yet
    prices = CostAdmission(datasets, auto)
    assert prices.loss_per_byte(1) == 3e-9  # a recomputation
    assert prices.loss_per_byte(2) == pytest.approx(0.012 / MB)  # a write and a read back
    assert prices.loss_per_byte(3, on_disk=True) == pytest.approx(0.002 / MB)  # on disk already: the read
    assert prices.loss_per_byte(4) == math.inf and prices.loss_per_byte(5) == math.inf
    assert prices.loss_per_byte(99) == math.inf
    assert prices.own_price(BlockId(1, 0)) == 3e-9  # a priced AUTO dataset's blocks are weighed
    assert prices.own_price(BlockId(2, 0)) == pytest.approx(0.012 / MB)  # spilled: its write and read
    assert [prices.own_price(BlockId(d, 0)) for d in (4, 5, 99)] == [None] * 3  # fixed, unpriced, unknown


def test_a_cheap_block_sees_only_victims_no_dearer_than_itself():
    auto, datasets = auto_levels(write_s_per_mb=0.01, read_s_per_mb=0.002), {}
    add(auto, datasets, 1, DROP, 1e-9)  # the block being put
    add(auto, datasets, 2, DROP, 1e-9 / MARGIN)  # cheaper by the margin: may go
    add(auto, datasets, 3, DROP, 1e-6)  # dearer: stays
    add(auto, datasets, 6, DROP, 0.9e-9)  # cheaper, but within the margin: stays (no churn)
    add(auto, datasets, 4, MAPPED, 1e-6)  # a write and a read: 1.1e-8 s a byte, dearer
    add(auto, datasets, 5, None, None)  # a fixed level: not measured, never displaced
    entries = {BlockId(d, s): 100 * KB for d in (1, 2, 3, 4, 5, 6) for s in (0, 1)}
    prices = CostAdmission(datasets, auto)
    view = prices.victims_for(BlockId(1, 9), entries)
    assert sorted(view) == [BlockId(1, 0), BlockId(1, 1), BlockId(2, 0), BlockId(2, 1)]
    assert view.get(BlockId(3, 0)) is None and BlockId(5, 1) not in view and BlockId(6, 0) not in view
    assert len(view) == 4
    assert view[BlockId(2, 1)] == 100 * KB and view.excluded
    with pytest.raises(KeyError):
        view[BlockId(4, 0)]
    dearer = prices.victims_for(BlockId(3, 9), entries)  # dropped too, dearer: all but the fixed level
    assert sorted(dearer) == sorted(b for b in entries if b.dataset_id != 5)  # 4: 1.1e-8 s a byte
    spilled = prices.victims_for(BlockId(4, 9), entries)  # spilled (1.1e-8 s a byte): the cheap drops
    assert sorted(spilled) == sorted(b for b in entries if b.dataset_id in (1, 2, 4, 6))
    add(auto, datasets, 7, MAPPED, 1e-6)  # a spilled peer: the same write and read
    entries.update({BlockId(7, s): 100 * KB for s in (0, 1)})
    peers = CostAdmission(datasets, auto).victims_for(BlockId(4, 9), entries)
    assert {b.dataset_id for b in peers} == {1, 2, 4, 6}  # a peer within the margin stays (no churn)
    for other in (BlockId(5, 9), None):  # fixed, execution memory: not weighed
        assert prices.victims_for(other, entries) is entries


def test_a_serialized_spill_is_priced_per_byte_in_memory():
    """Disk costs are per byte on disk; pickled records take a fraction of their memory
    there, so their loss per byte in memory is that fraction of it (measured per spill)."""
    auto, datasets = auto_levels(write_s_per_mb=0.01, read_s_per_mb=0.002), {}
    add(auto, datasets, 1, SERIALIZED, 1e-6, zero_copy=False)
    add(auto, datasets, 2, MAPPED, 1e-6)
    prices = CostAdmission(datasets, auto)
    assert prices.loss_per_byte(1) == pytest.approx(0.012 / MB)  # nothing measured: 1 byte for 1
    prices.spilled(BlockId(1, 0), 8 * MB, MB)
    assert datasets[1].auto.disk_ratio == pytest.approx(1 / 8)
    assert prices.loss_per_byte(1) == pytest.approx(0.012 / MB / 8)
    prices.spilled(BlockId(1, 1), 8 * MB, 2 * MB)  # a moving average
    assert 1 / 8 < datasets[1].auto.disk_ratio < 1 / 4
    prices.spilled(BlockId(2, 0), 8 * MB, MB)  # a mapped layout is its memory form: not scaled
    assert datasets[2].auto.disk_ratio is None and prices.loss_per_byte(2) == pytest.approx(0.012 / MB)


# -- in the block manager ------------------------------------------------------------------------
def value(did: int, split: int) -> np.ndarray:
    return np.full((100 * KB - 112) // 8, did * 100 + split, dtype=np.float64)  # 100 KB accounted


class Manager:
    """A block manager over 1 MB (512 KB of storage) whose costs are declared: disks at
    1 MB/s, compute as ``COMPUTE_S``; ``level`` is every dataset's."""

    def __init__(self, tmp_path, policy: str, level=AUTO) -> None:
        self.mm = MemoryManager(MB, 0.5)
        self.bm = BlockManager(self.mm, DiskStore([str(tmp_path)]), make_policy(policy))
        self.bm.clock = DeclaredCosts({"serialized": (1, 1), "mapped": (1, 1)})
        for form in ("serialized", "mapped"):  # timed: no choice rests on a prior
            self.bm.auto.costs.observe(form, "write", 8 * MB, 8.0)
            self.bm.auto.costs.observe(form, "read", 8 * MB, 8.0)
        self.level = level
        for did in COMPUTE_S:
            self.bm.register(did, lambda did=did: f"ds{did}", level, None, 64)

    def read(self, did: int, split: int) -> None:
        def compute():
            spend(COMPUTE_S[did])
            return value(did, split)

        got = self.bm.get_or_compute(BlockId(did, split), self.level, compute)
        assert np.array_equal(got, value(did, split))

    def in_memory(self) -> set:
        return {(b.dataset_id, b.split) for b, _ in self.bm.memory_store.items()}


def test_a_cheap_block_takes_free_memory_but_does_not_evict_a_dear_one(tmp_path, policy):
    m = Manager(tmp_path, policy)
    try:
        room = m.mm.free // (100 * KB)
        assert room >= 3
        dear = {(DEAR, s) for s in range(room - 1)}
        for _, s in sorted(dear):
            m.read(DEAR, s)
        m.read(CHEAP, 0)  # the last free block's worth: taken
        assert m.bm.info(CHEAP).level is DROP and m.bm.info(DEAR).level is DROP
        assert m.in_memory() == dear | {(CHEAP, 0)}
        m.read(CHEAP, 1)  # full: only dearer blocks could make room, so it is not cached
        assert m.in_memory() == dear | {(CHEAP, 0)}
        m.read(PEER, 0)  # about as cheap: within the margin it does not take the cheap one's place
        assert m.in_memory() == dear | {(CHEAP, 0)}
        m.read(MID, 0)  # dearer by more than the margin: evicts the cheap block
        assert m.in_memory() == dear | {(MID, 0)}
        m.read(DEAR, room)  # a dear block may evict a cheaper one
        assert m.in_memory() == dear | {(DEAR, room)}
        assert m.bm.metrics.snapshot()["blocks_dropped"] == 2  # the cheap and the middle block, nothing else
        assert m.bm.metrics.snapshot()["auto_cost_bypasses"] == 2  # the second cheap block, the peer
    finally:
        m.bm.close()


def test_fixed_levels_are_not_weighed(tmp_path, policy):
    """The control: at a fixed level the same sequence evicts a dear block for a cheap
    one, as Spark does (and the ``spark`` policy is left exactly as it is). Both tests run
    for every registered policy: the rule narrows the victims any policy may name."""
    m = Manager(tmp_path, policy, level=StorageLevel.MEMORY_ONLY)
    try:
        room = m.mm.free // (100 * KB)
        for s in range(room - 1):
            m.read(DEAR, s)
        m.read(CHEAP, 0)
        m.read(CHEAP, 1)
        assert (CHEAP, 1) in m.in_memory() and len({b for b in m.in_memory() if b[0] == DEAR}) == room - 2
        assert m.bm.metrics.snapshot()["auto_cost_bypasses"] == 0
    finally:
        m.bm.close()


def records_manager(tmp_path) -> BlockManager:
    """A 1 MB block manager whose disk costs are declared and timed (1 GB/s each way), with
    dataset 7 ("records") persisted at AUTO."""
    bm = BlockManager(MemoryManager(MB, 0.5), DiskStore([str(tmp_path)]), make_policy("lineage"))
    bm.clock = DeclaredCosts({"serialized": (1000, 1000), "mapped": (1000, 1000)})
    for form in ("serialized", "mapped"):
        bm.auto.costs.observe(form, "write", 8 * MB, 8 / 1000)
        bm.auto.costs.observe(form, "read", 8 * MB, 8 / 1000)
    bm.register(7, lambda: "records", AUTO, None, 64)
    return bm


def test_the_block_manager_measures_how_much_smaller_a_spilled_block_is_on_disk(tmp_path):
    """Python records spilled serialized by eviction: the dataset's ratio of bytes on disk to
    bytes in memory is measured, and is well under 1 (pickled ints against list objects)."""
    bm = records_manager(tmp_path)
    try:
        def compute(split: int):
            spend(1.0)  # dear: serialized
            return list(range(split * 10_000, (split + 1) * 10_000))

        bm.get_or_compute(BlockId(7, 0), AUTO, lambda: compute(0))  # 0.35 MB: in memory
        assert bm.auto.facts(7).disk_ratio is None
        bm.register(8, lambda: "other", StorageLevel.MEMORY_ONLY, None, 1)
        bm.get_or_compute(BlockId(8, 0), StorageLevel.MEMORY_ONLY, lambda: np.zeros(800 * KB // 8))  # evicts it
        facts = bm.auto.facts(7)
        assert facts.level is SERIALIZED and bm.metrics.snapshot()["blocks_dropped"] == 1
        assert facts.disk_ratio is not None and 0 < facts.disk_ratio < 0.5
    finally:
        bm.close()


def test_a_spills_bytes_on_disk_are_known_before_its_write_revises_the_choices(tmp_path):
    """The write's timing revises every AUTO choice at once (``DiskCosts.on_change``); the
    ratio must be in the facts by then, or the revision prices the round trip on the
    block's bytes in memory (8x too dear for pickled records: the mixed pipeline's records
    flapped drop, serialized, drop on it)."""
    bm = records_manager(tmp_path)
    seen = []
    observe = bm.auto.costs.observe

    def spy(form, op, nbytes, seconds):
        if op == "write":
            seen.append(bm.auto.facts(7).disk_ratio)
        return observe(form, op, nbytes, seconds)

    bm.auto.costs.observe = spy
    try:
        bm.get_or_compute(BlockId(7, 0), AUTO, lambda: (spend(1.0), list(range(10_000)))[1])
        bm.register(8, lambda: "other", StorageLevel.MEMORY_ONLY, None, 1)
        bm.get_or_compute(BlockId(8, 0), StorageLevel.MEMORY_ONLY, lambda: np.zeros(800 * KB // 8))  # evicts it
        assert seen and seen[0] is not None and 0 < seen[0] < 0.5
    finally:
        bm.close()


def test_a_block_written_straight_to_the_tiers_is_timed_for_auto_like_an_eviction(tmp_path):
    """A serialized AUTO block that memory cannot take goes to the tiers from ``_put``: its
    serializing and write are a spill's costs (observed, in the ledger, its bytes on disk
    measured), as they are for a block evicted later."""
    bm = records_manager(tmp_path)
    writes = []
    observe = bm.auto.costs.observe
    bm.auto.costs.observe = lambda form, op, n, s: (writes.append((form, op, n)) if op == "write" else None,
                                                    observe(form, op, n, s))
    try:
        big = list(range(60_000))  # ~2 MB of ints in memory: more than the whole budget
        bm.get_or_compute(BlockId(7, 0), AUTO, lambda: (spend(1.0), big)[1])
        facts = bm.auto.facts(7)
        assert facts.level is SERIALIZED and BlockId(7, 0) in bm.disk
        assert [w[:2] for w in writes] == [("serialized", "write")]
        assert facts.ledger.paid_s > 1.0  # the compute and the write
        assert facts.disk_ratio is not None and facts.disk_ratio < 0.5
        assert bm.writes.in_memory(BlockId(7, 0), bm.disk.entry(BlockId(7, 0)).size) > 2 * bm.disk.entry(
            BlockId(7, 0)).size
    finally:
        bm.close()


def test_a_spilled_block_goes_to_its_spill_form_rather_than_evict_dearer_records(tmp_path, policy):
    """Issue 52, the mixed pipeline in a machine: a cheap numeric dataset that AUTO maps
    (a write and a read back at 100 MB/s: 2 ms for 100 KB) is recomputed while memory
    holds Python records that AUTO spills serialized (at 1 MB/s: their loss costs about a
    hundred times more per byte). The numeric block does not evict them: it is written in
    its mapped form and read back from there, and the records stay. The control: at a
    fixed level the same put evicts a record, by the policy's rules."""
    for level in (AUTO, StorageLevel.MEMORY_AND_DISK):
        bm = BlockManager(MemoryManager(MB, 0.5), DiskStore([str(tmp_path / level.name)]), make_policy(policy),
                          regions=RegionStore([str(tmp_path / level.name / "regions")]))
        bm.clock = DeclaredCosts({"serialized": (1, 1), "mapped": (100, 100)})
        for form, mb_s in (("serialized", 1), ("mapped", 100)):
            bm.auto.costs.observe(form, "write", 8 * MB, 8 / mb_s)
            bm.auto.costs.observe(form, "read", 8 * MB, 8 / mb_s)
        bm.register(7, lambda: "records", level, None, 64)
        bm.register(1, lambda: "signals", level, None, 64)
        try:
            def records(split: int) -> list:
                spend(1.0)
                return [(i, {"id": i, "tier": "gold"}) for i in range(split * 300, (split + 1) * 300)]

            split = 0
            while bm.memory.free >= 100 * KB:  # memory filled with records, as the query rounds left it
                bm.get_or_compute(BlockId(7, split), level, lambda s=split: records(s))
                split += 1
            resident = {b for b, _ in bm.memory_store.items()}
            assert resident and all(b.dataset_id == 7 for b in resident)
            if level is AUTO:
                assert bm.auto.facts(7).level is SERIALIZED
            got = bm.get_or_compute(BlockId(1, 0), level, lambda: (spend(1.0), value(1, 0))[1])
            assert np.array_equal(got, value(1, 0))
            after = {b for b, _ in bm.memory_store.items()}
            if level is AUTO:
                assert bm.auto.facts(1).level is MAPPED
                assert after == resident  # no record evicted for it
                assert bm.metrics.snapshot()["auto_cost_bypasses"] >= 1
                again = bm.get_or_compute(BlockId(1, 0), level, lambda: pytest.fail("recomputed: it was lost"))
                assert np.array_equal(again, value(1, 0))  # read back from its mapped form
            else:
                assert BlockId(1, 0) in after and after != resident | {BlockId(1, 0)}  # a record went
        finally:
            bm.close()
