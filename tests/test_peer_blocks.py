"""Blocks another executor holds: a task placed away from its cached partition reads it
from there (a disk copy straight from the holder's file, a memory block fetched from the
holder through the driver) instead of recomputing it; a hint gone stale is recomputed.

To place every task away from its blocks, the tests invert the block-location master's
preference (each task prefers the executor that does NOT hold its partition)."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from strataflow import Context
from strataflow.executor.messages import Unpersist


def _context(tmp_path, **kw) -> Context:
    for d in ("cache", "shuffle", "calls"):
        (tmp_path / d).mkdir(exist_ok=True)
    return Context(backend="processes", parallelism=2, executors=2, progress=False, memory="64MB",
                   local_dirs=[str(tmp_path / "cache")], shuffle_dirs=[str(tmp_path / "shuffle")], **kw)


def _counted(calls_dir: str):
    """map_partitions_with_index function that leaves a file per computation."""
    def f(i, a):
        with open(os.path.join(calls_dir, f"{i}.{os.getpid()}.{np.random.randint(1 << 30)}"), "w"):
            pass
        return a * 2.0
    return f


def _computed(tmp_path) -> int:
    return len(os.listdir(tmp_path / "calls"))


def _invert_locality(ctx: Context) -> None:
    master = ctx.block_master
    real = master.preferred
    ids = ctx.executors()
    master.preferred = lambda blocks: [e for e in ids if e not in real(blocks)] if real(blocks) else []


def _dataset(ctx, tmp_path, level):
    data = np.arange(80_000.0).reshape(-1, 8)
    ds = ctx.from_numpy(data, 8).map_partitions_with_index(_counted(str(tmp_path / "calls"))).persist(level)
    return ds, data * 2.0


@pytest.mark.parametrize("level,served_from", [
    ("MEMORY_ONLY", "memory"), ("MEMORY_ONLY_SER", "memory"), ("DISK_ONLY", "file"), ("DISK_MMAP", "file"),
])
def test_a_task_away_from_its_block_reads_it_from_the_executor_that_holds_it(tmp_path, level, served_from):
    with _context(tmp_path, locality_wait=60.0) as c:
        ds, want = _dataset(c, tmp_path, level)
        assert np.array_equal(np.concatenate(ds.glom().collect()), want)
        assert _computed(tmp_path) == 8
        where_first = {i: p for i, p in ds.map_partitions_with_index(lambda i, a: [(i, os.getpid())]).collect()}
        before = c.metrics()
        _invert_locality(c)
        got = ds.map_partitions_with_index(lambda i, a: [(i, os.getpid(), float(a.sum()))]).collect()
        assert _computed(tmp_path) == 8  # nothing recomputed: every block came from its holder
        assert all(where_first[i] != pid for i, pid, _ in got)  # and every task ran away from it
        assert [s for _, _, s in got] == [float(p.sum()) for p in np.array_split(want, 8)]
        after, per = c.metrics(), c.metrics(by_executor=True)
        assert after["peer_hits"] - before["peer_hits"] == 8
        assert after["peer_bytes_read"] - before["peer_bytes_read"] >= want.nbytes
        assert after["misses"] == before["misses"]
        served = sum(p["peer_blocks_served"] for p in per.values())
        # a disk copy is read straight from the holder's file: the holder serves nothing
        assert served == (8 if served_from == "memory" else 0)
        # read, not copied: each block is still held once
        status = c.storage_status()[0]
        assert status.memory_partitions + status.disk_partitions == 8


@pytest.mark.parametrize("level,pattern,damage", [
    ("DISK_ONLY", "*.blk", "remove"), ("DISK_ONLY", "*.blk", "corrupt"), ("DISK_MMAP", "*.seg", "corrupt"),
])
def test_a_block_gone_or_damaged_at_its_holder_is_recomputed_not_served(tmp_path, level, pattern, damage):
    with _context(tmp_path, locality_wait=60.0) as c:
        ds, want = _dataset(c, tmp_path, level)
        ds.count()
        files = glob.glob(str(tmp_path / "cache" / "**" / pattern), recursive=True)
        assert files
        for f in files:  # behind the holders' backs: the driver's hints are stale
            if damage == "remove":
                os.remove(f)
            else:  # same size, other bytes: only a checksum can tell
                size = min(os.path.getsize(f), 2 << 20)
                with open(f, "r+b") as fh:
                    fh.seek(64)
                    fh.write(np.random.default_rng(0).integers(0, 256, size - 64, dtype=np.uint8).tobytes())
        _invert_locality(c)
        assert np.array_equal(np.concatenate(ds.glom().collect()), want)
        assert _computed(tmp_path) == 16  # every partition recomputed where its task ran
        assert c.metrics()["peer_hits"] == 0


def test_a_memory_block_whose_holder_dropped_it_is_recomputed(tmp_path):
    with _context(tmp_path, locality_wait=60.0) as c:
        ds, want = _dataset(c, tmp_path, "MEMORY_ONLY")
        ds.count()
        for h in c.fleet.live():  # the holders forget the blocks; the driver does not know
            h.call(Unpersist(ds.id))
        _invert_locality(c)
        assert np.array_equal(np.concatenate(ds.glom().collect()), want)
        assert _computed(tmp_path) == 16
        assert c.metrics()["peer_hits"] == 0
