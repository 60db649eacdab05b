"""The dynamic memory split (``storage/memory_split.py``): its decisions on known costs,
the order of a move (the giver shrinks first, so the budget holds at every instant), the
split moving both ways under a workload that changes phase, and the option's checks."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from strataflow import Context, StorageLevel
from strataflow.config import ConfigError
from strataflow.storage.memory.unified import MemoryManager
from strataflow.storage.memory.split import MARGIN, STEPS, WINDOW_MISSES, MemorySplit
from strataflow.storage.mapped.page_cache import MappedPageBound

MB = 1 << 20


class Blocks:
    """An evictor over named blocks of storage memory; checks, while it drops them (the
    moment a shrink is under way), that the budget holds."""

    def __init__(self, mm: MemoryManager, check=None) -> None:
        self.mm, self.blocks, self.check = mm, {}, check
        self.dropped: list = []
        mm.set_evictor(self)

    def put(self, name: str, size: int) -> None:
        assert self.mm.acquire_storage(size, name, evict=False)
        self.blocks[name] = size

    def select(self, space, for_block):
        out, freed = [], 0
        for name, size in self.blocks.items():
            if freed >= space:
                break
            out.append(name)
            freed += size
        return out

    def drop(self, victims):
        if self.check is not None:
            self.check()
        freed = 0
        for name in victims:
            size = self.blocks.pop(name, 0)
            self.mm.release_storage(size)
            self.dropped.append(name)
            freed += size
        return freed


def make(budget=64 * MB, bounds=(0.0, 0.5), prior=1e-9):
    mm = MemoryManager(budget)
    released = []
    pages = MappedPageBound(lambda b: released.append(b) or 0, 0)
    events, counts = [], {}

    def count(**kw):
        for k, v in kw.items():
            counts[k] = counts.get(k, 0) + v

    split = MemorySplit(mm, pages, budget, bounds, lambda side: prior,
                        lambda kind, **f: events.append((kind, f)), count)
    return split, mm, pages, events, counts


def mapped_misses(split, n=4, size=4 * MB, seconds=0.01):
    for i in range(n):
        split.miss("mapped", ("m", i), size, seconds)


def heap_misses(split, n=4, size=4 * MB, seconds=0.05):
    for i in range(n):
        split.miss("heap", ("h", i), size, seconds)


def test_starts_at_the_least_mapped_share_with_the_rest_to_the_heap():
    split, mm, pages, _, _ = make(bounds=(0.25, 0.5))
    assert (pages.limit, mm.total) == (16 * MB, 48 * MB)
    assert split.snapshot()["mapped_bounds"] == (16 * MB, 32 * MB)


def test_idle_heap_moves_a_step_to_mapped_pages_that_miss():
    split, mm, pages, events, counts = make()
    mapped_misses(split)
    moved = split.evaluate()
    assert moved["to"] == "mapped" and moved["bytes"] == 64 * MB // STEPS
    assert (mm.total, pages.limit) == (60 * MB, 4 * MB)
    assert events[0][0] == "MemorySplitMoved" and events[0][1]["cost_us_per_mb"] == 0.0
    assert counts == {"memory_split_moves": 1, "memory_split_bytes_to_mapped": 4 * MB}


def test_no_evidence_no_move_and_hits_carry_over_to_the_next_window():
    split, mm, pages, events, _ = make()
    split.hit("heap", 10 * MB)
    assert split.evaluate() is None and not events
    assert split._window["heap"].hit_bytes == 10 * MB


def test_the_mapped_share_stops_at_its_upper_bound():
    split, mm, pages, _, _ = make(bounds=(0.0, 0.125))
    for _ in range(5):
        mapped_misses(split)
        split.evaluate()
    assert pages.limit == 8 * MB and mm.total == 56 * MB
    mapped_misses(split)
    assert split.evaluate() is None


def test_expensive_heap_misses_take_bytes_back_from_idle_mapped_pages_down_to_the_lower_bound():
    split, mm, pages, _, counts = make(bounds=(0.0625, 0.5))
    for _ in range(3):
        mapped_misses(split)
        split.evaluate()
    assert pages.limit == 16 * MB
    for _ in range(5):
        heap_misses(split)
        split.evaluate()
    assert pages.limit == 4 * MB and mm.total == 60 * MB  # the lower bound holds
    assert counts["memory_split_bytes_to_heap"] == 12 * MB


def test_a_busy_giver_keeps_its_bytes_unless_the_taker_saves_margin_times_more():
    split, mm, pages, _, _ = make()
    blocks = Blocks(mm)
    for i in range(16):
        blocks.put(f"b{i}", 4 * MB)  # the heap is full: no idle bytes
    # heap bytes are read once per window at 1 ms/MB; a mapped miss saves less than MARGIN times that
    cost = 1e-3 / MB
    split._cost["heap"] = cost
    split.hit("heap", 64 * MB)
    split.miss("mapped", "m", 4 * MB, 4 * MB * cost * MARGIN * 0.9)
    assert split.evaluate() is None and mm.total == 64 * MB
    split.hit("heap", 64 * MB)
    split.miss("mapped", "m", 4 * MB, 4 * MB * cost * MARGIN * 1.5)
    assert split.evaluate()["to"] == "mapped"
    assert blocks.dropped == ["b0"]  # the heap evicted a block to give the step


def test_a_shrinking_heap_evicts_before_the_mapped_side_grows():
    split, mm, pages, _, _ = make()
    seen = []
    blocks = Blocks(mm, check=lambda: seen.append(mm.total + pages.limit))
    for i in range(16):
        blocks.put(f"b{i}", 4 * MB)
    split._cost["heap"] = 1e-12
    split.hit("heap", 1)
    mapped_misses(split, seconds=1.0)
    assert split.evaluate()["bytes"] == 4 * MB
    assert seen and all(total <= 64 * MB for total in seen)
    assert mm.storage_used <= mm.total and mm.total + pages.limit == 64 * MB


def test_the_heap_never_gives_memory_a_task_holds_for_execution():
    split, mm, pages, _, _ = make()
    assert mm.acquire_execution(62 * MB, task_id=1) == 62 * MB  # one task: it may take it all
    mapped_misses(split)
    moved = split.evaluate()
    assert moved["bytes"] == 2 * MB  # only what the task does not hold
    assert mm.total == 62 * MB and mm.execution_used == 62 * MB
    mapped_misses(split)
    assert split.evaluate() is None  # nothing more to give


def test_an_evaluation_is_due_after_enough_misses():
    split, *_ = make()
    heap_misses(split, n=WINDOW_MISSES - 1)
    assert not split.due
    split.miss("heap", "one more", MB, 0.01)
    assert split.due


def test_mmap_memory_auto_is_the_default_for_every_level(tmp_path):
    """One accounting (docs/caching.md, "What memory= counts"): memory= holds the mapped
    pages too, whatever the default level; a size given is the one way out."""
    from strataflow.config import Config

    assert Config.build(memory="64MB", parallelism=1, default_level="AUTO").memory_split == (0.0, 0.5)
    assert Config.build(memory="64MB", parallelism=1).memory_split == (0.0, 0.5)
    assert Config.build(memory="64MB", parallelism=1, default_level="DISK_MMAP").memory_split == (0.0, 0.5)
    assert Config.build(memory="64MB", parallelism=1, mmap_memory="8MB").memory_split is None
    assert Config.build(memory="64MB", parallelism=1, mmap_memory="AUTO", mmap_share=(0.1, 0.3)).memory_split \
        == (0.1, 0.3)
    assert Config.build(memory="64MB", parallelism=1, default_level="AUTO", mmap_memory="8MB").memory_split is None
    with pytest.raises(ConfigError, match="mmap_share"):
        Config.build(memory="64MB", parallelism=1, mmap_memory="auto", mmap_share=(0.5, 0.95))
    with pytest.raises(ConfigError, match="mmap_share"):
        Config.build(memory="64MB", parallelism=1, mmap_memory="auto", mmap_share="half")


def _phases(ctx, rounds=5):
    """A loop over a numeric dataset on a mapped level, then one over Python records
    cached MEMORY_AND_DISK that do not fit: mapped pages matter first, heap after."""
    numeric = ctx.from_numpy(np.random.default_rng(0).random((1_000_000, 4)), 8).persist(StorageLevel.DISK_MMAP)
    for _ in range(rounds):
        numeric.map_partitions(lambda x: x.sum(axis=0)).collect()
    records = ctx.parallelize([(i, "x" * 40) for i in range(240_000)], 8).persist(StorageLevel.MEMORY_AND_DISK)
    for _ in range(rounds):
        records.count()


def test_the_split_moves_both_ways_as_the_job_changes_phase_and_the_budget_always_holds(tmp_path, declared_costs):
    budget = 24 * MB
    with Context(memory=budget, parallelism=2, backend="threads", local_dirs=str(tmp_path), mmap_memory="auto",
                 event_log=str(tmp_path / "events.jsonl")) as ctx:
        bm = ctx.block_manager
        mm, pages = ctx.memory, bm.mapped_pages
        largest_block = 4 * MB  # 1M x 4 float64 in 8 splits: the block just read may stay past the bound
        broken, stop = [], threading.Event()

        def checked(change):  # the split's one thread that moves: check right after each change
            def call(*args):
                out = change(*args)
                if mm.total + pages.limit > budget:
                    broken.append(("budget", mm.total, pages.limit))
                return out
            return call

        mm.resize, pages.set_limit = checked(mm.resize), checked(pages.set_limit)

        def watch():  # samples the uses against their sides while tasks run
            while not stop.is_set():
                with mm.lock:
                    if mm.storage_used + mm.execution_used > mm.total:
                        broken.append(("heap", mm.total, mm.storage_used, mm.execution_used))
                before, held, after = pages.limit, pages.held_bytes, pages.limit
                if held > max(before, after) + largest_block:
                    broken.append(("mapped", before, after, held))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            _phases(ctx)
        finally:
            stop.set()
            watcher.join()
        metrics = ctx.metrics()
        status = str(ctx.storage_status())
    assert not broken, broken[:3]
    assert metrics["memory_split_bytes_to_mapped"] > 0 and metrics["memory_split_bytes_to_heap"] > 0
    import json

    moves = [e for e in map(json.loads, open(tmp_path / "events.jsonl")) if e["event"] == "MemorySplitMoved"]
    assert len(moves) == metrics["memory_split_moves"]
    first_heap = next(i for i, m in enumerate(moves) if m["to"] == "heap")
    assert all(m["to"] == "mapped" for m in moves[:first_heap])  # mapped first, then heap
    assert all(m["heap"] + m["mapped"] <= budget for m in moves)
    assert "memory split: heap" in status


def test_each_executor_splits_its_own_share_and_the_driver_sums_them(tmp_path, declared_costs):
    with Context(memory="48MB", parallelism=2, backend="processes", local_dirs=str(tmp_path),
                 default_level="AUTO") as ctx:
        _phases(ctx, rounds=3)
        parts = ctx.storage_status(by_executor=True)
        whole = ctx.storage_status()
        metrics = ctx.metrics()
    assert len(parts) == 2 and all(p.split["budget"] == 24 * MB for p in parts.values())
    assert whole.split["budget"] == 48 * MB
    assert whole.split["heap"] + whole.split["mapped"] == 48 * MB
    assert metrics["memory_split_moves"] == whole.split["moves"] > 0
