"""A prefetch or a promotion checks for room by what a block takes in memory, not on disk.

A pickled record takes several times fewer bytes than its objects; checked by the bytes on
disk, the writer's thread read and decoded a records block (holding the GIL, beside the
tasks) only to find that it did not fit, again at every scan: on the mixed pipeline at 8x
that was a tenth of a second of the query rounds (docs/lab-notes/benchmarks-history.md)."""

from __future__ import annotations

from strataflow.storage.manager import BlockId
from test_async_eviction import KB, MB, Harness, PrefetchAll


def records(split: int, n: int = 600) -> list:
    return [(i, {"name": f"user-{split}-{i}", "region": "north", "score": float(i)}) for i in range(n)]


def test_a_prefetch_that_would_not_fit_deserialized_reads_nothing(tmp_path):
    h = Harness(tmp_path, total=4 * MB, policy=PrefetchAll(), async_eviction=False)
    try:
        h.persist(1)
        values = {}

        def compute(s):
            return lambda: values.setdefault(s, records(s))

        task = 7
        h.mm.task_started(task)
        held = h.mm.acquire_execution(int(3.2 * MB), task)  # little storage room: blocks spill
        for s in range(8):
            h.bm.get_or_compute(BlockId(1, s), h.levels[1], compute(s))
        spilled = [b for b, _ in h.disk.items()]
        assert spilled, "no block went to disk"
        bid = spilled[0]
        on_disk = h.disk.entry(bid).size
        in_memory = h.bm.writes.in_memory(bid, on_disk)
        assert in_memory >= 3 * on_disk  # measured at the spills: dicts take more than their pickle
        # free memory between the block's bytes on disk and its bytes in memory
        h.mm.release_execution(held, task)
        h.mm.acquire_execution(h.bm.room() - (on_disk + in_memory) // 2, task)
        assert on_disk < h.bm.room() < in_memory
        reads = []
        real = h.bm.disk.read
        h.bm.disk.read = lambda b: reads.append(b) or real(b)
        assert h.bm.prefetch(bid) is False
        assert reads == []  # not read, not decoded
        # with room for its objects it is read and cached
        h.mm.task_finished(task)
        assert h.bm.prefetch(bid) is True and reads == [bid]
        assert h.bm.get_or_compute(bid, h.levels[1], compute(bid.split)) == values[bid.split]
    finally:
        h.close()


def test_a_prefetch_that_read_a_block_and_could_not_store_it_is_counted(tmp_path):
    """The loss above was invisible in the metrics: ``blocks_prefetched`` stayed 0 because
    nothing was stored. With the old estimate (bytes on disk) put back, the wasted read shows."""
    h = Harness(tmp_path, total=4 * MB, policy=PrefetchAll(), async_eviction=False)
    try:
        h.persist(1)
        task = 7
        h.mm.task_started(task)
        held = h.mm.acquire_execution(int(3.2 * MB), task)
        for s in range(8):
            h.bm.get_or_compute(BlockId(1, s), h.levels[1], lambda s=s: records(s))
        bid = next(b for b, _ in h.disk.items())
        on_disk = h.disk.entry(bid).size
        in_memory = h.bm.writes.in_memory(bid, on_disk)
        h.mm.release_execution(held, task)
        h.mm.acquire_execution(h.bm.room() - (on_disk + in_memory) // 2, task)
        before = h.bm.metrics.snapshot()
        h.bm.writes.in_memory = lambda b, size: size  # the estimate before the fix: bytes on disk
        assert h.bm.prefetch(bid) is False
        got = h.bm.metrics.diff(h.bm.metrics.snapshot(), before)
        assert got["prefetches_discarded"] == 1 and got["blocks_prefetched"] == 0
        assert 0.9 * on_disk < got["disk_bytes_read"] <= on_disk  # the bytes it read for nothing count too
        h.mm.task_finished(task)
    finally:
        h.close()
