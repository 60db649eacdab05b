"""StorageLevel.AUTO: the engine chooses, per dataset, whether blocks leaving memory are
dropped, mapped or serialized to disk, from what it measures (``storage/auto_level.py``).

The choice itself is tested with known costs (``choose``, ``DiskCosts``, ``AutoLevels``);
then whole jobs under memory pressure, on datasets whose costs are declared (the
``declared_costs`` fixture: tasks ``spend`` their compute seconds and disk transfers cost
bytes at declared bandwidths, so a busy machine cannot flip a choice): a cheap one
(nothing declared: recomputing beats any disk round trip), dear numeric batches and dear
Python records (150 ms declared: a round trip wins), and one whose cost changes phase
while the job runs (the choice follows it)."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest

from strataflow import Context, StorageLevel
from strataflow.config import ConfigError
from strataflow.storage.auto_level import (DROP, LOOP_READS, MAPPED, SERIALIZED, SWITCH_MARGIN, AutoLevels, DatasetFacts,
                                           DiskCosts, choose)
from strataflow.storage.blocks.block import DatasetInfo
from strataflow.storage.cost_clock import spend
from strataflow.storage.mapped.layout import zero_copy_layout
from strataflow.storage.blocks.serde import get_serializer
from conftest import local_backends

MB = 1 << 20


# -- the choice, with known costs -----------------------------------------------------------------
def costs_of(write_mb_s: float, read_mb_s: float) -> DiskCosts:
    c = DiskCosts()
    for form in ("serialized", "mapped"):
        c.observe(form, "write", 8 * MB, 8 / write_mb_s)
        c.observe(form, "read", 8 * MB, 8 / read_mb_s)
    return c


def facts(compute_ms: float, nbytes: int, zero_copy: bool) -> DatasetFacts:
    return DatasetFacts(compute_s_per_byte=compute_ms / 1e3 / nbytes, block_bytes=nbytes, zero_copy=zero_copy)


def test_cheap_blocks_are_dropped_and_dear_ones_spilled_in_their_form():
    costs = costs_of(100, 100)  # 8 MB: 80 ms there, 80 ms back
    assert choose(facts(50, 8 * MB, True), costs)[0] is DROP
    assert choose(facts(50, 8 * MB, False), costs)[0] is DROP
    level, reason, compute_s, trip_s = choose(facts(500, 8 * MB, True), costs)
    assert level is MAPPED and "mapped" in reason and compute_s == pytest.approx(0.5)
    assert trip_s == pytest.approx(0.16)
    assert choose(facts(500, 8 * MB, False), costs)[0] is SERIALIZED
    assert choose(facts(50, 8 * MB, True), costs_of(1000, 1000))[0] is MAPPED  # a fast disk: spill


def test_a_serialized_round_trip_is_priced_on_the_bytes_it_takes_on_disk():
    """Python records pickle to a fraction of their objects' size in memory, and the disk
    costs are per byte on disk: 8 MB of records that pickle to 1 MB cost 1 MB's round trip
    (20 ms here), not 8 MB's (160 ms), against a 50 ms recompute."""
    costs = costs_of(100, 100)
    records = facts(50, 8 * MB, False)
    assert choose(records, costs)[0] is DROP  # no spill measured yet: priced as 8 MB
    records.disk_ratio = 1 / 8  # its spills measured: 1 byte on disk per 8 in memory
    level, _, compute_s, trip_s = choose(records, costs)
    assert level is SERIALIZED and trip_s == pytest.approx(0.02) and compute_s == pytest.approx(0.05)
    arrays = facts(50, 8 * MB, True)
    arrays.disk_ratio = 1 / 8  # a mapped layout is its bytes: no ratio applies
    assert choose(arrays, costs)[0] is DROP


def test_the_ledger_prices_a_read_back_of_records_against_a_recompute_of_their_objects():
    """A read back of a serialized block is reported in bytes on disk; the recompute it
    saved is of the block's bytes in memory (the ratio's inverse)."""
    levels = AutoLevels(costs_of(100, 100), post=lambda *a, **k: None, count=lambda *a, **k: None)
    info = DatasetInfo(7, lambda: "records", StorageLevel.AUTO, get_serializer("auto"), 4, auto=levels.register(7))
    levels.computed(info, [{"k": i} for i in range(10)], 8 * MB, 0.05, split=0)
    f = levels.facts(7)
    f.disk_ratio = 1 / 8
    levels.read(7, 0, 1 * MB, 0.001)  # 1 MB on disk read back in 1 ms
    assert f.ledger.drop_s == pytest.approx(0.05)  # what a recompute of the 8 MB block costs


def test_a_choice_changes_only_when_the_other_side_wins_by_the_margin():
    costs = costs_of(100, 100)  # round trip of 8 MB: 160 ms
    just_above = facts(160 * 1.2, 8 * MB, True)  # 1.2x the round trip: within the margin
    assert SWITCH_MARGIN > 1.2
    assert choose(just_above, costs)[0] is MAPPED  # a first choice takes the cheaper side
    assert choose(just_above, costs, current=DROP)[0] is DROP  # a standing one needs the margin
    assert choose(facts(160 * SWITCH_MARGIN * 1.1, 8 * MB, True), costs, current=DROP)[0] is MAPPED
    just_below = facts(160 / 1.2, 8 * MB, True)
    assert choose(just_below, costs, current=MAPPED)[0] is MAPPED
    assert choose(facts(160 / SWITCH_MARGIN / 1.1, 8 * MB, True), costs, current=MAPPED)[0] is DROP


def test_disk_costs_start_from_priors_and_follow_what_is_measured():
    c = DiskCosts()
    prior = c.round_trip_s("serialized", 100 * MB)
    assert 0 < prior < 10
    c.observe("serialized", "write", 1000, 5.0)  # a tiny block: fixed cost, not counted
    assert c.round_trip_s("serialized", 100 * MB) == prior
    for _ in range(20):
        c.observe("serialized", "write", 10 * MB, 1.0)  # 10 MB/s
        c.observe("serialized", "read", 10 * MB, 0.5)  # 20 MB/s
    assert c.round_trip_s("serialized", 100 * MB) == pytest.approx(15.0, rel=0.01)
    assert c.measured()["write_serialized_mb_per_s"] == pytest.approx(10, rel=0.01)
    assert c.measured()["read_mapped_mb_per_s"] is None  # nothing measured: the prior is used
    assert DiskCosts(read_bandwidth=1000 * MB).per_byte("serialized")[1] == pytest.approx(1 / (1000 * MB))


def test_zero_copy_layouts():
    assert zero_copy_layout(np.zeros((3, 2)))
    assert zero_copy_layout(pa.table({"a": [1, 2]}))
    assert not zero_copy_layout(np.array([object()], dtype=object))
    assert not zero_copy_layout([(1, "a")])


def test_the_choice_is_revised_as_measurements_come_in_and_each_change_is_posted():
    posted, counted = [], []
    auto = AutoLevels(costs_of(100, 100), lambda kind, **f: posted.append((kind, f)),
                      lambda **d: counted.append(d))
    info = DatasetInfo(7, lambda: "points", StorageLevel.AUTO, get_serializer("auto"), 4, auto=auto.register(7))
    block = np.zeros(MB // 8)  # 1 MB: a round trip of 20 ms
    assert auto.computed(info, block, MB, 0.001) is DROP and info.level is DROP
    assert info.level_name == "AUTO:MEMORY_ONLY" and info.mapped  # its spill form: mapped, from the first block
    for _ in range(3):
        auto.computed(info, block, MB, 0.001)
    assert len(posted) == 1  # unchanged: nothing more posted
    for _ in range(10):  # the dataset became dear (its parents left the cache, say)
        auto.computed(info, block, MB, 0.5)
    assert info.level is MAPPED
    kinds = [k for k, _ in posted]
    assert kinds == ["AutoLevelChosen", "AutoLevelChosen"]
    assert posted[1][1]["before"] == "MEMORY_ONLY" and posted[1][1]["level"] == "MEMORY_AND_DISK_MMAP"
    assert posted[1][1]["name"] == "points" and posted[1][1]["compute_ms"] > posted[1][1]["round_trip_ms"]
    assert counted == [{"auto_level_changes": 1}] * 2
    auto.forget(7)
    assert auto.facts(7) is None


# -- whole jobs under pressure ------------------------------------------------------------------
def events(path: str, name: str) -> list[dict]:
    with open(path) as f:
        return [e for e in map(json.loads, f) if e["event"] == name]


def _dear(a):
    spend(0.15)
    return a * 3.0


def _dear_records(it):
    spend(0.15)
    return [(i, str(i) * 3) for i in it]


@pytest.mark.parametrize("backend", local_backends())
def test_auto_chooses_per_dataset_under_pressure(tmp_path, backend, declared_costs):
    """8 MB of memory per executor against ~25 MB of each dataset (each larger than both
    executors' memory, so each must leave memory however the tasks were spread over the
    executors): the cheap one is dropped (recomputed, nothing written), the dear numeric
    one goes to the mapped layout, the dear records to the tiers, serialized; every answer
    is right and the dear ones are not recomputed on the second read."""
    log = str(tmp_path / "events.jsonl")
    (tmp_path / "local").mkdir()
    data = np.random.default_rng(0).standard_normal((400_000, 8))
    with Context(memory="16MB", parallelism=2, backend=backend, progress=False, local_dirs=[str(tmp_path / "local")],
                 event_log=log) as ctx:
        base = ctx.from_numpy(data, 8)
        # no work: calloc'd pages (a view of ``base`` is not cheap under processes, where
        # recomputing it loads the source slice from a file, about a mapped round trip)
        cheap = ctx.parallelize(range(8), 8).map_partitions(lambda it: np.zeros((50_000, 8))).persist(
            StorageLevel.AUTO)
        dear = base.map_partitions(_dear).persist("auto")
        recs = ctx.parallelize(range(160_000), 8).map_partitions(_dear_records).persist(StorageLevel.AUTO)  # ~25 MB
        assert cheap.storage_level is StorageLevel.AUTO
        sums = {}
        for name, ds in (("cheap", cheap), ("dear", dear), ("recs", recs)):
            first = ds.map_partitions(lambda v: [len(v)]).sum()
            before = ctx.metrics()["misses"]
            assert ds.map_partitions(lambda v: [len(v)]).sum() == first
            sums[name] = (first, ctx.metrics()["misses"] - before)
        assert sums["cheap"][0] == sums["dear"][0] == 400_000 and sums["recs"][0] == 160_000
        assert sums["dear"][1] == 0 and sums["recs"][1] == 0  # read back, not recomputed
        assert sums["cheap"][1] > 0  # dropped: recomputed
        np.testing.assert_array_equal(np.concatenate(dear.collect_partitions()), data * 3.0)
        assert sorted(recs.collect())[:2] == [(0, "000"), (1, "111")]
        status = {d.name: d for d in ctx.storage_status()}
        assert status[cheap.label].level == "AUTO:MEMORY_ONLY"
        # the mapped write was timed by exploring: at most a victim per task running at once
        assert status[cheap.label].disk_partitions <= 2
        assert status[dear.label].level == "AUTO:MEMORY_AND_DISK_MMAP" and "ndarray" in status[dear.label].layout
        assert status[recs.label].level == "AUTO:MEMORY_AND_DISK" and status[recs.label].serializer == "auto"
        assert status[recs.label].disk_partitions > 0
        assert ctx.metrics()["auto_level_changes"] >= 3
    chosen = events(log, "AutoLevelChosen")
    assert {(e["name"], e["level"]) for e in chosen} == {
        (cheap.label, "MEMORY_AND_DISK_MMAP"), (cheap.label, "MEMORY_ONLY"), (dear.label, "MEMORY_AND_DISK_MMAP"),
        (recs.label, "MEMORY_AND_DISK")}
    first = next(e for e in chosen if e["name"] == cheap.label)
    assert first["level"] == "MEMORY_AND_DISK_MMAP" and first["reason"].startswith("exploring")


def test_the_choice_follows_a_dataset_whose_cost_changes_phase(tmp_path, declared_costs):
    """Cheap at first (dropped, once exploring has timed a mapped write), then dear (the phase flag in a file): the executor
    revises its choice to spill, with an event saying so, and the answer stays right."""
    flag = tmp_path / "dear"
    log = str(tmp_path / "events.jsonl")
    data = np.arange(800_000, dtype=np.float64).reshape(-1, 8)

    def phase(a, flag=str(flag)):
        if os.path.exists(flag):
            spend(0.2)
        return a[:]  # a view: no work, so dropped (once a mapped write is timed)

    with Context(memory="4MB", parallelism=1, progress=False, local_dirs=[str(tmp_path)], event_log=log) as ctx:
        ds = ctx.from_numpy(data, 8).map_partitions(phase).persist(StorageLevel.AUTO)
        total = ds.map_partitions(lambda a: [a.sum()])
        assert total.sum() == data.sum()
        flag.touch()
        for _ in range(3):
            assert total.sum() == data.sum()
        levels = [(e["before"], e["level"]) for e in events(log, "AutoLevelChosen")]
    # explored (the mapped write is a prior until the first victim is written), dropped, spilled
    assert levels[:2] == [(None, "MEMORY_AND_DISK_MMAP"), ("MEMORY_AND_DISK_MMAP", "MEMORY_ONLY")], levels
    assert (("MEMORY_ONLY", "MEMORY_AND_DISK_MMAP") in levels[2:]), levels


def test_default_level_makes_persist_and_cache_auto(tmp_path):
    with Context(memory="64MB", parallelism=1, progress=False, local_dirs=[str(tmp_path)],
                 default_level="auto") as ctx:
        assert ctx.parallelize(range(4), 2).persist().storage_level is StorageLevel.AUTO
        assert ctx.parallelize(range(4), 2).cache().storage_level is StorageLevel.AUTO
        assert ctx.parallelize(range(4), 2).persist("DISK_ONLY").storage_level is StorageLevel.DISK_ONLY
    with pytest.raises(ConfigError, match="default_level.*memory_sometimes"):
        Context(default_level="memory_sometimes")
    with pytest.raises(ConfigError, match="default_level: NONE"):
        Context(default_level="NONE")


def test_hot_blocks_read_in_a_loop_are_weighed_for_many_reads_and_cold_ones_for_one():
    costs = costs_of(100, 400)  # 8 MB: 80 ms to write, 20 ms to read back
    # a recomputation of 50 ms: dearer than a read, cheaper than a write and a read
    cold = facts(50, 8 * MB, True)
    hot = DatasetFacts(compute_s_per_byte=cold.compute_s_per_byte, block_bytes=8 * MB, zero_copy=True, looped=True)
    assert choose(cold, costs)[0] is DROP  # read back once: 50 ms < 100 ms
    level, reason, compute_s, trip_s = choose(hot, costs)
    assert level is MAPPED and f"{LOOP_READS} reads (a loop)" in reason  # 4 x 50 ms > 80 + 4 x 20 ms
    assert compute_s == pytest.approx(LOOP_READS * 0.050) and trip_s == pytest.approx(0.080 + LOOP_READS * 0.020)
    assert choose(facts(15, 8 * MB, True), costs)[0] is DROP  # cheaper than a read: dropped even in a loop
    assert choose(DatasetFacts(compute_s_per_byte=15e-3 / (8 * MB), block_bytes=8 * MB, zero_copy=True,
                               looped=True), costs)[0] is DROP


def test_a_dataset_found_to_loop_is_revised_to_spill():
    posted = []
    auto = AutoLevels(costs_of(100, 400), lambda kind, **f: posted.append(f), lambda **d: None)
    info = DatasetInfo(3, lambda: "features", StorageLevel.AUTO, get_serializer("auto"), 4, auto=auto.register(3))
    block = np.zeros(MB)  # 8 MB
    assert auto.computed(info, block, 8 * MB, 0.080) is DROP  # first pass: no reuse known
    assert auto.computed(info, block, 8 * MB, 0.080, looped=True) is MAPPED  # the loop came round (by the margin)
    assert posted[-1]["looped"] and posted[-1]["before"] == "MEMORY_ONLY"
    assert auto.computed(info, block, 8 * MB, 0.080) is MAPPED  # a loop stays a loop


def test_a_drop_that_rests_on_a_prior_explores_first():
    """The ALS case (2 ms to recompute a 2 MB block; the mapped write's prior, 400 MB/s,
    makes a round trip 6 ms): while the write is untimed, AUTO spills, saying so; the
    choice is one more once a write is timed."""
    als = facts(2.1, 2 * MB, True)
    untimed = DiskCosts()
    level, reason, compute_s, trip_s = choose(als, untimed)
    assert level is MAPPED and reason.startswith("exploring") and "mapped write" in reason
    assert compute_s < trip_s  # the prior alone would have dropped it
    assert choose(als, untimed, explore=False)[0] is DROP
    assert choose(facts(2.1, 2 * MB, False), untimed)[0] is SERIALIZED  # each form is explored on its own
    untimed.observe("mapped", "write", 8 * MB, 8 / 2600)  # the page cache: 2.6 GB/s
    assert not untimed.timed("serialized") and untimed.timed("mapped")
    assert choose(als, untimed)[0] is MAPPED  # 0.8 + 1.0 ms < 2.1 ms: a spill, on what was measured
    assert choose(facts(0.5, 2 * MB, True), untimed)[0] is DROP  # now a drop is trusted
    assert choose(facts(0.5, 2 * MB, False), untimed)[0] is SERIALIZED  # the tiers: still a prior


@pytest.mark.parametrize("write_mb_s, after", [(100, DROP), (2600, MAPPED)])
def test_a_timed_write_revises_every_choice_made_on_priors(write_mb_s, after):
    """The exploring spill is revised by the first timed write, of this dataset or any
    other, without the hysteresis (it was made on a prior), and the change is posted."""
    posted = []
    costs = DiskCosts()
    auto = AutoLevels(costs, lambda kind, **f: posted.append(f), lambda **d: None)
    info = DatasetInfo(3, lambda: "ratings by user", StorageLevel.AUTO, get_serializer("auto"), 4,
                       auto=auto.register(3))
    assert auto.computed(info, np.zeros(MB // 4), 2 * MB, 0.0021) is MAPPED
    assert posted[0]["reason"].startswith("exploring")
    costs.observe("mapped", "write", 2 * MB, 2 / write_mb_s)  # what the block manager's writer times
    assert info.level is after
    if after is DROP:  # 2.1 ms against 20 + 1 ms: recomputing is cheaper by far
        assert posted[-1]["before"] == "MEMORY_AND_DISK_MMAP" and posted[-1]["level"] == "MEMORY_ONLY"
        assert len(posted) == 2
    else:  # 0.8 + 1 ms: the spill was right; nothing more to post
        assert len(posted) == 1
        costs.observe("mapped", "read", 2 * MB, 0.0016)  # 0.8 + 1.6 ms: a drop now, as a first choice...
        assert choose(auto.facts(3), costs)[0] is DROP
        assert info.level is MAPPED and len(posted) == 1  # ...but not by the margin a timed choice needs


def test_the_lineage_policy_says_which_blocks_are_read_again_in_a_loop():
    from strataflow.storage.blocks.block import BlockId
    from strataflow.storage.policies import make_policy

    policy = make_policy("lineage")
    blocks = [BlockId(5, i) for i in range(4)]
    assert not any(policy.rereads(b) for b in blocks)
    for _ in range(2):  # two passes over the dataset
        for b in blocks:
            policy.admit(b, MB)
            policy.record_access(b, "put")
    assert all(policy.rereads(b) for b in blocks)
    assert not policy.rereads(BlockId(6, 0))  # another dataset: nothing known
    assert not make_policy("spark").rereads(blocks[0])  # a policy without a future cannot tell


def test_asking_about_the_ninth_dataset_does_not_index_past_the_table():
    """A regression: ``rereads`` of a block of a dataset the policy has never seen grows
    its per-dataset column; the lookup must index the grown column, not the old one."""
    from strataflow.storage.blocks.block import BlockId
    from strataflow.storage.policies import make_policy

    policy = make_policy("lineage")
    for ds in range(40):
        assert not policy.rereads(BlockId(ds, 0))
