"""AUTO's drop-or-spill choice once blocks are needed again: both sides priced from what
was measured (``storage/auto_ledger.py``), switched when the current choice's accumulated
excess passes ``MARGIN`` of the dataset's cost so far plus one block. Every cost here is
injected (no clock is read): the recompute seconds, the reads' seconds, the writes'."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strataflow import StorageLevel
from strataflow.storage.auto_ledger import MARGIN, Ledger
from strataflow.storage.auto_level import DROP, LOOP_READS, MAPPED, SERIALIZED, AutoLevels, DiskCosts
from strataflow.storage.blocks.block import DatasetInfo
from strataflow.storage.blocks.serde import get_serializer

MB = 1 << 20
BLOCK = 4 * MB


def costs(write_mb_s: float = 1000, read_mb_s: float = 1000) -> DiskCosts:
    c = DiskCosts()
    for form in ("serialized", "mapped"):
        c.observe(form, "write", 8 * MB, 8 / write_mb_s)
        c.observe(form, "read", 8 * MB, 8 / read_mb_s)
    return c


def dataset(auto: AutoLevels, dataset_id: int = 1) -> DatasetInfo:
    return DatasetInfo(dataset_id, lambda: "points", StorageLevel.AUTO, get_serializer("auto"), 8,
                       auto=auto.register(dataset_id))


def make(c: DiskCosts):
    posted = []
    auto = AutoLevels(c, lambda kind, **f: posted.append(f), lambda **d: None)
    return auto, dataset(auto), posted


VALUE = np.zeros(BLOCK // 8)  # a zero-copy layout: its spill form is mapped


def first_pass(auto, info, seconds: float, n: int = 8):
    for split in range(n):
        auto.computed(info, VALUE, BLOCK, seconds, split=split)


def test_it_maps_where_reads_are_cheaper_than_recomputes():
    """The issue-43 case: a recompute is a copy out of a mapped source (4 ms a block), which
    the estimates put under a disk round trip (1 GB/s each way: 8 ms), so it is dropped;
    but this executor's mapped reads measure nearly nothing (warm pages): recomputing each
    time it comes round costs more than the one write and the reads, and the ledger maps it."""
    c = costs()
    c.served("mapped", BLOCK, 0.0001)  # a warm mapped read, as measured
    auto, info, posted = make(c)
    first_pass(auto, info, 0.004)
    assert info.level is DROP
    for _ in range(3):  # the loop comes round: each block recomputed
        for split in range(8):
            auto.computed(info, VALUE, BLOCK, 0.004, split=split)
            if info.level is MAPPED:
                break
        if info.level is MAPPED:
            break
    assert info.level is MAPPED
    assert posted[-1]["before"] == "MEMORY_ONLY" and posted[-1]["reason"].startswith("measured over")


def test_it_drops_where_recompute_is_cheaper():
    """Dear on the estimates (6 ms against a 4 ms round trip: spilled), but each read back
    measures 20 ms (cold pages on a slow device) against the 6 ms recompute: the ledger
    drops it."""
    auto, info, posted = make(costs(2000, 2000))
    first_pass(auto, info, 0.006)
    assert info.level is MAPPED
    for split in range(8):
        auto.written(1, split, 0.002)
    for _ in range(2):
        for split in range(8):
            auto.read(1, split, BLOCK, 0.020)
    assert info.level is DROP
    assert "spilling cost" in posted[-1]["reason"]


def test_it_switches_back_when_measurements_change():
    c = costs()
    c.served("mapped", BLOCK, 0.0001)
    auto, info, _ = make(c)
    first_pass(auto, info, 0.004)
    for _ in range(4):
        for split in range(8):
            if info.level is DROP:
                auto.computed(info, VALUE, BLOCK, 0.004, split=split)
            else:
                auto.read(1, split, BLOCK, 0.0001)
    assert info.level is MAPPED
    # the pages went cold (the memory split gave them to the heap): reads cost 30 ms now
    for _ in range(6):
        for split in range(8):
            if info.level is MAPPED:
                auto.read(1, split, BLOCK, 0.030)
            else:
                auto.computed(info, VALUE, BLOCK, 0.004, split=split)
    assert info.level is DROP


def test_no_evidence_no_ledger_choice_and_a_write_is_charged_once():
    ledger = Ledger(spill=True)
    ledger.computed(3, BLOCK, 0.002, write_s=0.0, read_s=0.0)  # its first computation: nothing priced
    assert ledger.events == 0 and not ledger.should_switch(0.0)  # nothing needed again yet: ``choose`` rules
    ledger.written(3, 0.010)
    ledger.read(3, BLOCK, 0.001, compute_s=0.002)  # the write is charged on the first read back
    assert ledger.spill_s == pytest.approx(0.011) and ledger.drop_s == pytest.approx(0.002)
    ledger.read(3, BLOCK, 0.001, compute_s=0.002)  # but once
    assert ledger.spill_s == pytest.approx(0.012) and ledger.drop_s == pytest.approx(0.004)
    assert ledger.regret_s == pytest.approx(0.008)  # 11 - 2, then 1 - 2 taken off
    ledger.switched(spill=False)
    ledger.computed(3, BLOCK, 0.002, write_s=0.010, read_s=0.001)  # not a first computation: priced
    assert ledger.spill_s == pytest.approx(0.023)  # after a switch, a block's write is charged again


def test_serialized_form_for_records():
    auto, _, _ = make(costs())
    info = dataset(auto, 2)
    auto.computed(info, [(1, "a")] * 10, BLOCK, 0.5, split=0)
    assert info.level is SERIALIZED


# -- the bound ------------------------------------------------------------------------------------
event = st.tuples(st.integers(0, 5), st.floats(0.0, 0.05), st.floats(0.0, 0.05), st.floats(0.0, 0.05))


@settings(max_examples=200, deadline=None)
@given(events=st.lists(event, min_size=1, max_size=120), block_s=st.floats(0.0, 0.01),
       start_spill=st.booleans())
def test_the_locked_in_loss_is_bounded(events, block_s, start_spill):
    """Whatever the measured costs (any sequence of blocks needed again, each side's cost
    arbitrary: a read, a recompute, a write the first time each block returns), since the
    last switch the current choice cost at most ``MARGIN`` of the dataset's cost so far plus
    one block more than the other side would have; the event that trips a switch adds at
    most its own excess."""
    ledger = Ledger(spill=start_spill)
    for split in range(6):  # the first pass: every block computed once
        ledger.computed(split, BLOCK, 0.01, write_s=0.0, read_s=0.0)
    excesses: list[float] = []  # the current choice's excess per event since the last switch
    for split, read_s, compute_s, write_s in events:
        before = (ledger.spill_s, ledger.drop_s)
        if ledger.spill:  # the block was spilled: written once, read back now
            if split not in ledger._charged:
                ledger.written(split, write_s)
            ledger.read(split, BLOCK, read_s, compute_s=compute_s)
        else:  # dropped: recomputed now
            ledger.computed(split, BLOCK, compute_s, write_s=write_s, read_s=read_s)
        spill, drop = ledger.spill_s - before[0], ledger.drop_s - before[1]
        excesses.append(spill - drop if ledger.spill else drop - spill)
        worst = sum(excesses)  # the whole stretch since the last switch, writes included
        bound = MARGIN * ledger.paid_s + block_s
        if ledger.should_switch(block_s):
            assert worst <= bound + max(0.0, excesses[-1]) + 1e-12
            ledger.switched(not ledger.spill)
            excesses = []
        else:
            assert worst <= bound + 1e-12


# -- what the block manager measures ------------------------------------------------------------
def test_a_recompute_from_a_mapped_source_is_timed_with_its_copy(tmp_path, monkeypatch):
    """A partition of an ``.npy`` source is a view of the file's map: computing it costs
    nothing, the copy that makes it the block's own (out of the page cache) is the cost. The
    block manager times that copy as part of the computation (a clock that moves only when
    the copy is made: the dataset's measured compute is that copy's second)."""
    from strataflow.storage import manager as manager_module
    from strataflow.storage.cost_clock import CostClock
    from strataflow.storage.disk.disk_store import DiskStore
    from strataflow.storage.manager import BlockId, BlockManager
    from strataflow.storage.mapped.region_store import RegionStore
    from strataflow.storage.memory.unified import MemoryManager
    from strataflow.storage.policies import make_policy

    ticks = [0.0]
    real_owned = manager_module.owned

    def owned(value):
        ticks[0] += 1.0  # the copy costs a second on this clock
        return real_owned(value)

    class Clock(CostClock):
        def now(self) -> float:
            return ticks[0]

        def io(self, form: str, op: str, nbytes: int, measured_s: float) -> float:
            return 0.0

    monkeypatch.setattr(manager_module, "owned", owned)
    path = tmp_path / "points.npy"
    np.save(path, np.arange(64 * 1024, dtype=np.float64).reshape(-1, 8))
    source = np.load(path, mmap_mode="r")
    bm = BlockManager(MemoryManager(64 * MB, 0.5), DiskStore([str(tmp_path)]), make_policy("lineage"),
                      regions=RegionStore([str(tmp_path)]))
    bm.clock = Clock()
    try:
        bm.register(1, lambda: "points", StorageLevel.AUTO, None, 1)
        value = bm.get_or_compute(BlockId(1, 0), StorageLevel.AUTO, lambda: source[:])
        f = bm.auto.facts(1)
        assert f.compute_s_per_byte * f.block_bytes == pytest.approx(1.0)  # the copy, and only it
        assert not np.shares_memory(value, source)
        np.testing.assert_array_equal(value, source)
    finally:
        bm.close()


def test_warm_reads_of_other_datasets_do_not_vouch_for_blocks_that_cannot_stay_warm():
    """Before the dataset measured a read of its own, its spill side is priced at this
    executor's reads as they came (warm, nearly free) only if its mapped blocks could all
    keep their pages under the bound; 8 blocks of 4 MB under a 10 MB bound would be read
    from the device every time round, so that is the price, and recomputing stays."""
    c = costs(1000, 200)  # a device read: 20 ms a block
    c.served("mapped", BLOCK, 0.0001)  # another dataset's warm reads
    for limit, after in ((10 * MB, DROP), (64 * MB, MAPPED)):
        auto = AutoLevels(c, lambda kind, **f: None, lambda **d: None, mapped_limit=lambda limit=limit: limit)
        info = dataset(auto)
        first_pass(auto, info, 0.004)
        assert info.level is DROP
        for _ in range(4):
            first_pass(auto, info, 0.004)  # recomputed each time round
        assert info.level is after, limit


# -- the forecast: a loop's future reads priced at its first returns -------------------------------
def warm_costs() -> DiskCosts:
    """Writes and device reads at 1 GB/s (a 4 MB block: 4 ms each way), mapped reads as they
    came warm: 0.1 ms a block."""
    c = costs()
    c.served("mapped", BLOCK, 0.0001)
    return c


def test_a_looped_dataset_is_forecast_to_spill_once_its_returns_pay_for_the_write():
    """Dropped on the first pass (a 4 ms recompute against an 8 ms round trip, one read
    expected). When its first block comes back and the policy sees a loop, the reads ahead
    are priced, as many as the block came back so far: one recompute (4 ms) against one
    4 ms write and 0.1 ms of warm reads, so it stays dropped; at the block's second return,
    two reads ahead: 8 ms of recomputes against 4.2 ms, and it maps at once. Without the
    loop, the backward-looking ledger alone needs more returns."""
    for looped, after_two in ((False, DROP), (True, MAPPED)):
        auto, info, posted = make(warm_costs())
        first_pass(auto, info, 0.004)
        assert info.level is DROP
        auto.computed(info, VALUE, BLOCK, 0.004, looped=looped, split=0)
        assert info.level is DROP and not auto.facts(1).ledger.forecast_made
        auto.computed(info, VALUE, BLOCK, 0.004, looped=looped, split=0)
        assert info.level is after_two, looped
    assert posted[-1]["reason"].startswith("forecast for a loop (2 more reads") and posted[-1]["before"] == "MEMORY_ONLY"
    assert auto.facts(1).ledger.forecast_made and auto.facts(1).ledger.forecast_reads == 2


def test_the_reads_a_forecast_counts_on_grow_with_the_returns_up_to_loop_reads():
    ledger = Ledger()
    ledger.computed(0, BLOCK, 0.004, write_s=0.0, read_s=0.0)
    assert ledger.expected_reads(LOOP_READS) == 0  # computed once: nothing came back
    for returns in range(1, 7):
        ledger.computed(0, BLOCK, 0.004, write_s=0.0, read_s=0.0) if returns % 2 else \
            ledger.read(0, BLOCK, 0.0001, compute_s=0.004)  # recomputed or read back: a return either way
        assert ledger.expected_reads(LOOP_READS) == min(returns, LOOP_READS)
    ledger.computed(1, BLOCK, 0.004, write_s=0.0, read_s=0.0)
    ledger.computed(1, BLOCK, 0.004, write_s=0.0, read_s=0.0)
    assert ledger.expected_reads(LOOP_READS) == 1  # the block priced last: its own returns


def test_a_dataset_read_once_more_by_a_last_pass_is_not_forecast_a_loop():
    """The mixed pipeline inside a machine (issue 52): ``signals`` is computed by the first
    pass, dropped (a 4 ms recompute against a 10 ms write: the page cache full, a write waits
    for write-back), and read once more by the assignment pass. The policy sees its blocks
    read twice, so a reuse distance is known; a forecast of four reads ahead (16 ms of
    recomputes against 10.4 ms) mapped it there, and its recomputed blocks, now a spill
    level's, pushed the dear Python records out of memory. One return is evidence of one
    read ahead: 4 ms against 10.1 ms, and it stays dropped."""
    c = costs(write_mb_s=400)  # a 4 MB block: 10 ms
    c.served("mapped", BLOCK, 0.0001)
    auto, info, posted = make(c)
    first_pass(auto, info, 0.004)
    assert info.level is DROP
    for split in range(8):  # the last pass: every block back once
        auto.computed(info, VALUE, BLOCK, 0.004, looped=True, split=split)
        assert info.level is DROP, split
    assert not auto.facts(1).ledger.forecast_made
    assert not any(p["reason"].startswith("forecast") for p in posted)


def test_no_forecast_when_the_measured_costs_say_drop():
    """Looped, but the measured write (40 ms) costs more than the 4 recomputes it saves: it stays dropped."""
    c = costs(write_mb_s=100)
    c.served("mapped", BLOCK, 0.0001)
    auto, info, _ = make(c)
    first_pass(auto, info, 0.004)
    for split in range(8):
        auto.computed(info, VALUE, BLOCK, 0.004, looped=True, split=split)
    assert info.level is DROP and not auto.facts(1).ledger.forecast_made


def come_back(auto, info, times: int = 2) -> None:
    """Block 0 of a looped, dropped dataset comes back ``times`` times (recomputed each time)."""
    for _ in range(times):
        auto.computed(info, VALUE, BLOCK, 0.004, looped=True, split=0)


def forecast_switched(write_s: float = 0.004):
    """A looped dataset forecast to spill at its block's second return (two reads ahead:
    8 ms of recomputes against a 4 ms write and 0.2 ms of warm reads), every block then written."""
    auto, info, posted = make(warm_costs())
    first_pass(auto, info, 0.004)
    come_back(auto, info)
    assert info.level is MAPPED
    ledger = auto.facts(1).ledger
    for split in range(8):
        auto.written(1, split, write_s)
    return auto, info, ledger, posted


def test_a_wrong_forecast_is_undone_by_the_auditor_within_the_bound():
    """The forecast counted on warm reads; the pages went cold and each read back costs 30 ms
    against a 4 ms recompute. The ledger audits the forecast and drops the dataset again, its
    excess since the switch within the bound plus the writes not yet charged; and the same
    forecast is not made again."""
    auto, info, ledger, posted = forecast_switched()
    spill, drop = 8 * 0.004, 0.0  # what each side really cost since the forecast switch (writes in full)
    for split in range(8):
        uncharged = ledger.uncharged_write_s()
        auto.read(1, split, BLOCK, 0.030)
        spill, drop = spill + 0.030, drop + 0.004
        if info.level is DROP:
            break
    assert info.level is DROP and "spilling cost" in posted[-1]["reason"]
    assert split == 0  # one cold read, 27 ms over a recompute, is past the bound (5% of 68 ms + 4 ms)
    block_s = BLOCK * max(auto.facts(1).compute_s_per_byte, auto.costs.per_byte("mapped")[0])
    tripping = 0.030 + 0.004 / ledger.forecast_reads - 0.004  # the excess of the event that crossed the bound
    assert spill - drop <= MARGIN * ledger.paid_s + block_s + tripping + uncharged + 1e-12
    assert uncharged <= 8 * 0.004  # at most one write of each block written on the forecast
    for _ in range(3):  # the loop goes on, the dataset recomputed: no second forecast
        first_pass(auto, info, 0.004)
    assert info.level is DROP


def test_when_the_loop_ends_the_loss_is_at_most_the_writes_made_on_the_forecast():
    """The forecast counted on 2 more reads of each block; the loop ends after one. Each
    block's write was charged half a return, so the ledger's spill side holds half of each
    write and the rest is uncharged: the loss beyond the bound is that rest, at most one
    write of each block written on the forecast."""
    auto, info, ledger, _ = forecast_switched(write_s=0.006)
    spill, drop = 8 * 0.006, 0.0
    for split in range(8):  # the last pass: each block read back once, warm
        auto.read(1, split, BLOCK, 0.0001)
        spill, drop = spill + 0.0001, drop + 0.004
    assert info.level is MAPPED  # as the evidence stands, mapping was cheaper so far
    assert ledger.forecast_reads == 2 and ledger.uncharged_write_s() == pytest.approx(8 * 0.006 / 2)
    block_s = BLOCK * max(auto.facts(1).compute_s_per_byte, auto.costs.per_byte("mapped")[0])
    assert spill - drop <= MARGIN * ledger.paid_s + block_s + ledger.uncharged_write_s() + 1e-12
    assert ledger.uncharged_write_s() <= 8 * 0.006


@settings(max_examples=1000, deadline=None)
@given(events=st.lists(event, min_size=1, max_size=120), block_s=st.floats(0.0, 0.01),
       reads=st.integers(1, 6))
def test_the_locked_in_loss_after_a_forecast_is_bounded(events, block_s, reads):
    """After a forecast switch (each write charged over ``reads`` returns), whatever the
    measured costs: the spill side's real excess (every write in full) since the switch is
    at most the bound, plus the excess of the event that trips a switch back, plus the writes
    not yet charged (at most one write of each block written on the forecast)."""
    ledger = Ledger()
    for split in range(6):
        ledger.computed(split, BLOCK, 0.01, write_s=0.0, read_s=0.0)
    assert ledger.forecast(reads, recompute_s=1.0, write_s=0.0, read_s=0.0)
    ledger.switched(True, amortize=reads, forecast=True)
    assert not ledger.forecast(reads, recompute_s=1.0, write_s=0.0, read_s=0.0)  # one per dataset
    real, written_s = 0.0, 0.0
    for split, read_s, compute_s, write_s in events:
        if not ledger.spill:
            break
        if split not in ledger._charged:
            ledger.written(split, write_s)
            real, written_s = real + write_s, written_s + write_s
        before = ledger.spill_s - ledger.drop_s
        ledger.read(split, BLOCK, read_s, compute_s=compute_s)
        last = ledger.spill_s - ledger.drop_s - before  # this event's excess, its share of the write included
        real += read_s - compute_s
        bound = MARGIN * ledger.paid_s + block_s
        uncharged = ledger.uncharged_write_s()
        assert uncharged <= written_s + 1e-12
        if ledger.should_switch(block_s):
            assert real <= bound + max(0.0, last) + uncharged + 1e-12
            ledger.switched(False)
        else:
            assert real <= bound + uncharged + 1e-12


def test_the_first_timing_of_a_form_is_a_warm_up():
    """A process's first mapped write of 40 MB took 100 ms (one-time costs), the next ones
    12 and 16 ms: the second replaces the first, and the average runs from there, so a
    forecast prices a block's write at what writes cost now, not at the warm-up."""
    c = DiskCosts()
    c.observe("mapped", "write", 40 * MB, 0.100)
    assert c.timed("mapped") and c.per_byte("mapped")[0] == pytest.approx(0.100 / (40 * MB))
    c.observe("mapped", "write", 40 * MB, 0.012)
    assert c.per_byte("mapped")[0] == pytest.approx(0.012 / (40 * MB))
    c.observe("mapped", "write", 40 * MB, 0.016)
    assert c.per_byte("mapped")[0] == pytest.approx((0.7 * 0.012 + 0.3 * 0.016) / (40 * MB))
    assert c.per_byte("serialized")[0] == pytest.approx(1 / (250 * MB))  # another form: its prior still


def test_after_a_forecast_a_block_recomputed_first_is_charged_its_whole_write():
    """A block's first return after the forecast switch is a recompute (it had been dropped):
    a quarter of the write's estimate is charged then, the block is written after it, and the
    three quarters left are charged at the measured write over its next returns: all of it."""
    ledger = Ledger()
    for split in range(2):
        ledger.computed(split, BLOCK, 0.004, write_s=0.0, read_s=0.0)
    assert ledger.forecast(4, recompute_s=0.004, write_s=0.004, read_s=0.0001)
    ledger.switched(True, amortize=4, forecast=True)
    ledger.computed(0, BLOCK, 0.004, write_s=0.008, read_s=0.0001)  # recomputed: 8 ms estimated
    ledger.written(0, 0.012)  # then written: 12 ms measured
    assert ledger.uncharged_write_s() == pytest.approx(0.012 * 3 / 4)
    for _ in range(5):
        ledger.read(0, BLOCK, 0.0001, compute_s=0.004)
    assert ledger.spill_s == pytest.approx(0.008 / 4 + 0.012 * 3 / 4 + 6 * 0.0001)
    assert ledger.uncharged_write_s() == 0.0


def test_a_forecast_whose_writes_cost_more_than_it_assumed_is_undone_at_once():
    """The forecast mapped on a 4 ms write (8 ms of recomputes against 4.2 ms); the writes
    since cost 30 ms a block (fresh pages on our VM). At the second of them the forecast,
    priced again with their mean, says drop: dropped again before any block came back, not
    after the returns the auditor waits for. One slow write is not enough (an outlier), and
    writes that cost more but not enough to reverse it leave the forecast in force."""
    for writes, after in (((0.030,), MAPPED), ((0.030, 0.030), DROP), ((0.005, 0.006, 0.007), MAPPED)):
        auto, info, posted = make(warm_costs())
        first_pass(auto, info, 0.004)
        come_back(auto, info)
        assert info.level is MAPPED
        for split, seconds in enumerate(writes, start=1):
            auto.written(1, split, seconds)
        assert info.level is after, writes
        assert auto.facts(1).ledger.events == 2  # no block came back since the forecast
    auto, info, posted = make(warm_costs())
    first_pass(auto, info, 0.004)
    come_back(auto, info)
    for split in (1, 2):  # as the disk writer reports a write: to the costs, then to the dataset
        auto.costs.observe("mapped", "write", BLOCK, 0.030)
        auto.written(1, split, 0.030)
    assert posted[-1]["level"] == "MEMORY_ONLY" and posted[-1]["before"] == "MEMORY_AND_DISK_MMAP"
    assert "premise failed: the 2 writes since it cost 30.00 ms a block, not the 4.00 ms" in posted[-1]["reason"]
    for _ in range(2):  # the next returns, as many as made the first forecast: no second one
        auto.computed(info, VALUE, BLOCK, 0.004, looped=True, split=3)
    assert info.level is DROP and len([p for p in posted if p["reason"].startswith("forecast")]) == 1
