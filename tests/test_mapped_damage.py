"""Mapped blocks damaged on disk behind the region store's back (issue 14, point 3): an extent
rewritten after its first (verified) read, a segment file truncated while in use. Mapped data
must never yield a wrong answer silently: the damaged blocks raise BlockUnavailable (and the
block manager recomputes them from lineage), the others still read right, and the store never
appends to a segment whose file no longer matches its map."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from strataflow import Context
from strataflow.storage.disk.disk_store import BlockUnavailable
from strataflow.storage.blocks.block import BlockId
from strataflow.storage.mapped.region_store import RegionStore

pytestmark = [pytest.mark.usefixtures("no_leaks"),
              pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")]


def damage(path: str, offset: int, n: int = 64) -> None:
    """Flips ``n`` bytes at ``offset`` in place (same size), and moves the mtime on in case the
    write fell within the file system's timestamp granularity."""
    fd = os.open(path, os.O_RDWR)
    try:
        old = os.pread(fd, n, offset)
        assert os.pwrite(fd, bytes(b ^ 0xFF for b in old), offset) == len(old)
    finally:
        os.close(fd)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def cut(path: str, size: int) -> None:
    os.truncate(path, size)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


@pytest.fixture
def store(tmp_path):
    d = tmp_path / "d0"
    d.mkdir()
    s = RegionStore([str(d)], segment_bytes=1 << 20)
    yield s
    s.close()


def arrays(n: int = 4) -> list[np.ndarray]:
    return [np.arange(5000, dtype=np.float64) * (i + 1) for i in range(n)]


def test_extent_damaged_after_its_first_read_is_unavailable(store):
    want = arrays()
    ids = [BlockId(1, i) for i in range(len(want))]
    entries = [store.put(b, a) for b, a in zip(ids, want)]
    assert len({e.segment for e in entries}) == 1
    for b, a in zip(ids, want):
        assert np.array_equal(store.get(b), a)  # first read: verified
    before = store.stats()["checksum_bytes"]
    for b, a in zip(ids, want):  # warm, unchanged: no hashing
        assert np.array_equal(store.get(b), a)
    assert store.stats()["checksum_bytes"] == before
    e = entries[2]
    damage(e.segment, e.offset + 1000)
    with pytest.raises(BlockUnavailable, match="checksum"):
        store.get(ids[2])
    assert ids[2] not in store  # forgotten: the block manager recomputes it
    for i in (0, 1, 3):  # the others are hashed again once, and still right
        assert np.array_equal(store.get(ids[i]), want[i])
    after = store.stats()["checksum_bytes"]
    for i in (0, 1, 3):  # and trusted again until the next change
        assert np.array_equal(store.get(ids[i]), want[i])
    assert store.stats()["checksum_bytes"] == after


def test_damage_seen_while_the_map_is_warm_and_held(store):
    """A view held across the damage does not stop the next get from catching it."""
    a = np.arange(10000, dtype=np.float64)
    e = store.put(BlockId(1, 0), a)
    held = store.get(BlockId(1, 0))
    assert np.array_equal(held, a)
    damage(e.segment, e.offset + 4096)
    with pytest.raises(BlockUnavailable):
        store.get(BlockId(1, 0))
    del held


def test_truncated_segment_drops_the_cut_blocks_and_is_never_appended_to(store):
    want = arrays()
    ids = [BlockId(1, i) for i in range(len(want))]
    entries = [store.put(b, a) for b, a in zip(ids, want)]
    seg = entries[0].segment
    assert all(e.segment == seg for e in entries)
    for b, a in zip(ids, want):
        assert np.array_equal(store.get(b), a)  # mapped and verified
    cut(seg, entries[1].offset + entries[1].length // 2)  # through the second extent
    for b in ids[1:]:
        with pytest.raises(BlockUnavailable):
            store.get(b)
        assert b not in store
    assert np.array_equal(store.get(ids[0]), want[0])
    # A put goes to a new segment, not past the truncated file's end (nor into its map).
    again = [store.put(b, a) for b, a in zip(ids[1:], want[1:])]
    assert all(e.segment != seg for e in again)
    for b, a in zip(ids, want):
        assert np.array_equal(store.get(b), a)
        assert np.array_equal(store.get(b), a)
    assert os.path.getsize(seg) == entries[1].offset + entries[1].length // 2  # never grown again
    new = store.put(BlockId(1, 9), np.ones(7))
    assert new.segment != seg
    assert store.get(BlockId(1, 9)).tolist() == [1.0] * 7


def test_blocks_cut_off_unseen_are_each_reported_at_their_next_read(store):
    """The read that notices the cut may be of a block before it: the blocks past the end
    still answer ``in`` and raise BlockUnavailable naming the cut once (each is reported
    lost, then recomputed), never a silent miss."""
    want = arrays()
    ids = [BlockId(1, i) for i in range(len(want))]
    entries = [store.put(b, a) for b, a in zip(ids, want)]
    for b in ids:
        store.get(b)
    cut(entries[0].segment, entries[1].offset + entries[1].length)  # blocks 2 and 3 cut off
    assert np.array_equal(store.get(ids[0]), want[0])  # notices the change, still served
    for b in ids[2:]:
        assert b in store
        with pytest.raises(BlockUnavailable, match="cut off"):
            store.get(b)
        assert b not in store
    assert np.array_equal(store.get(ids[1]), want[1])


def test_truncated_before_the_first_map_then_grown(store):
    """A segment mapped while truncated, then grown by a write of another process: no raw
    error, and no block is served from a map shorter than it."""
    want = arrays(3)
    ids = [BlockId(1, i) for i in range(3)]
    entries = [store.put(b, a) for b, a in zip(ids, want)]
    seg = entries[0].segment
    cut(seg, entries[0].offset + entries[0].length)
    assert np.array_equal(store.get(ids[0]), want[0])  # mapped now, at the cut size
    for b in ids[1:]:
        with pytest.raises(BlockUnavailable):
            store.get(b)
    os.truncate(seg, 1 << 20)  # grown again behind the store's back
    assert np.array_equal(store.get(ids[0]), want[0])
    e = store.put(BlockId(1, 5), want[2])
    assert e.segment != seg
    assert np.array_equal(store.get(BlockId(1, 5)), want[2])


def test_changed_current_segment_gets_no_more_appends(store):
    a = np.arange(100, dtype=np.float64)
    e = store.put(BlockId(1, 0), a)
    damage(e.segment, e.offset + 8)  # not read yet: the put still sees the file changed
    e2 = store.put(BlockId(1, 1), a)
    assert e2.segment != e.segment
    with pytest.raises(BlockUnavailable):
        store.get(BlockId(1, 0))
    assert np.array_equal(store.get(BlockId(1, 1)), a)


# -- through a Context -------------------------------------------------------------------------
def context(tmp_path, log) -> Context:
    local = tmp_path / "local"
    local.mkdir(exist_ok=True)
    return Context(backend="threads", progress=False, local_dirs=[str(local)], shuffle_dirs=[str(tmp_path)],
                   event_log=str(log))


def lost_events(log) -> list[dict]:
    out = []
    with open(log) as fh:
        for line in fh:
            line = line.strip()
            if line and "BlockLost" in line:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    out.append({"raw": line})
    return out


@pytest.mark.parametrize("how", ["flip", "truncate"])
def test_damaged_mapped_dataset_recomputes_to_the_right_answer(tmp_path, how):
    arr = np.arange(64 * 8 * 100, dtype=np.float64).reshape(-1, 8)
    want = arr * 2.0
    log = tmp_path / "events.jsonl"
    with context(tmp_path, log) as c:
        ds = c.from_numpy(arr, 8).map_partitions(lambda a: a * 2.0).persist("DISK_MMAP")
        assert np.array_equal(np.concatenate(ds.collect_partitions()), want)
        assert np.array_equal(np.concatenate(ds.collect_partitions()), want)  # read, verified
        entries = c.regions.entries()
        assert len(entries) == 8
        assert c.metrics().get("blocks_lost", 0) == 0
        segs = sorted({e.segment for _, e in entries})
        if how == "flip":
            for _, e in entries:
                damage(e.segment, e.offset + e.length // 2, 16)
        else:
            for s in segs:
                ext = sorted((e for _, e in entries if e.segment == s), key=lambda e: e.offset)
                cut(s, ext[0].offset + ext[0].length // 2)  # through the first extent: all lost
        assert np.array_equal(np.concatenate(ds.collect_partitions()), want)
        lost = c.metrics()["blocks_lost"]
        # A flip is caught per block (8 lost). A cut drops every extent past the new end at
        # once: the block whose read found it is reported lost, the others are misses; all
        # are recomputed from lineage.
        assert lost == 8 if how == "flip" else lost >= 1
        assert np.array_equal(np.concatenate(ds.collect_partitions()), want)
        assert np.array_equal(np.concatenate(ds.collect_partitions()), want)
        assert c.metrics()["blocks_lost"] == lost  # recomputed and cached again: nothing more lost
        assert all(e.segment not in segs for _, e in c.regions.entries())
    events = lost_events(log)
    assert len(events) == lost
