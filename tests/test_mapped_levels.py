"""The mapped levels DISK_MMAP and MEMORY_AND_DISK_MMAP and the GC-free records cache, through a
Context: the results of NONE, read-only views of the segment maps that outlive unpersist,
no re-caching, the mmap_memory page bound, the pickle fallback in storage_status, next to
no deserialization, and full collections that skip the cached records.

Every test has a Context of its own (small budgets, working directories under tmp_path),
stopped before the ``no_leaks`` check: no threads, descriptors or segment maps may remain."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

from strataflow import Context
from strataflow.storage.level import StorageLevel
from strataflow.storage.status import blocks_of

pytestmark = [pytest.mark.usefixtures("no_leaks"),
              pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")]

MAPPED = [StorageLevel.DISK_MMAP, StorageLevel.MEMORY_AND_DISK_MMAP]


def context(tmp_path, **kw) -> Context:
    local = tmp_path / "local"
    local.mkdir(exist_ok=True)
    kw.setdefault("memory", "1MB")
    kw.setdefault("parallelism", 2)
    return Context(backend="threads", progress=False, local_dirs=[str(local)], shuffle_dirs=[str(tmp_path)], **kw)


def batches(c: Context, parts: int = 8, rows: int = 4096, dims: int = 8):
    """``parts`` float64 arrays of rows x dims (256 KB each by default), made in the tasks."""
    return c.range(parts, num_partitions=parts).map_partitions_with_index(
        lambda i, _: np.arange(rows * dims, dtype=np.float64).reshape(rows, dims) * (i + 1))


def records(c: Context, n: int = 20_000, parts: int = 8):
    return c.range(n, num_partitions=parts).map(lambda i: (i, f"r{i}", [i, i * i]))


def segment_map_ranges() -> list[tuple[int, int]]:
    out = []
    with open("/proc/self/maps") as fh:
        for line in fh:
            if "region-" in line and ".seg" in line:
                lo, hi = line.split()[0].split("-")
                out.append((int(lo, 16), int(hi, 16)))
    return out


@pytest.mark.parametrize("level", MAPPED, ids=str)
@pytest.mark.parametrize("kind", ["records", "batches"])
def test_mapped_levels_give_the_results_of_none(tmp_path, level, kind):
    with context(tmp_path) as c:  # 1 MB budget: MEMORY_AND_DISK_MMAP evicts to the mapped layout
        make = batches if kind == "batches" else records
        want = make(c).collect_partitions()
        ds = make(c).persist(level)
        for _ in range(3):  # computed and stored, then served from the cache
            got = ds.collect_partitions()
            assert len(got) == len(want)
            for g, w in zip(got, want):
                if kind == "batches":
                    assert isinstance(g, np.ndarray) and np.array_equal(g, w)
                else:
                    assert g == w
        mem, disk = blocks_of(c.block_manager, ds.id)
        assert disk, "nothing reached the mapped layout"
        del got
        ds.unpersist()


def test_a_mapped_batch_is_a_read_only_view_of_the_map(tmp_path):
    with context(tmp_path) as c:
        ds = batches(c).persist(StorageLevel.DISK_MMAP)
        ds.count()
        parts = ds.collect_partitions()  # served by mapping
        ranges = segment_map_ranges()
        for a in parts:
            assert not a.flags.writeable and not a.flags.owndata
            addr = a.__array_interface__["data"][0]
            assert any(lo <= addr and addr + a.nbytes <= hi for lo, hi in ranges), "not inside a segment map"
            with pytest.raises(ValueError, match="read-only"):
                a[0, 0] = 1.0
        assert ds.map_partitions(lambda a: [a.flags.writeable]).collect() == [False] * 8  # tasks get the view
        del parts, a
        ds.unpersist()


def test_a_held_view_stays_valid_after_unpersist(tmp_path):
    with context(tmp_path) as c:
        ds = batches(c).persist(StorageLevel.DISK_MMAP)
        want = [np.array(p) for p in ds.collect_partitions()]
        held = ds.collect_partitions()
        ds.unpersist()
        assert c.regions.segments() == [] and not any(f.endswith(".seg") for f in _files(tmp_path))
        gc.collect()
        for h, w in zip(held, want):
            assert np.array_equal(h, w)  # the unlinked file stays readable through the map
        assert segment_map_ranges(), "the views should keep their map alive"
        del held, h


def _files(root) -> list[str]:
    return [f for _, _, fs in os.walk(root) for f in fs]


def test_memory_and_disk_mmap_never_recaches(tmp_path):
    with context(tmp_path, policy="spark") as c:  # Spark's policy re-caches every other level
        first = batches(c, parts=3).persist(StorageLevel.MEMORY_AND_DISK_MMAP)  # fits in the 1 MB budget
        second = batches(c).persist(StorageLevel.MEMORY_AND_DISK_MMAP)  # 2 MB: evicts the first
        want = {3: batches(c, parts=3).collect_partitions(), 8: batches(c).collect_partitions()}
        for _ in range(3):
            for ds in (first, second):
                got = ds.collect_partitions()
                assert all(np.array_equal(g, w) for g, w in zip(got, want[len(got)]))
        m = c.metrics()
        assert m["blocks_dropped"] > 0 and m["disk_hits"] > 0  # evicted to the mapped layout, read from it
        assert m["blocks_recached"] == 0 and m["bytes_recached"] == 0
        del got
        first.unpersist()
        second.unpersist()


def test_mmap_memory_bounds_the_pages_of_read_blocks(tmp_path):
    with context(tmp_path, mmap_memory="512KB") as c:
        ds = batches(c).persist(StorageLevel.DISK_MMAP)  # 2 MB mapped, 512 KB allowed
        want = batches(c).collect_partitions()
        for _ in range(2):
            assert all(np.array_equal(g, w) for g, w in zip(ds.collect_partitions(), want))
        assert c.metrics()["mmap_released_bytes"] > 0
        ds.unpersist()


def test_storage_status_says_pickle_fallback_for_plain_records(tmp_path):
    with context(tmp_path) as c:
        recs = records(c).persist(StorageLevel.DISK_MMAP)
        recs.count()
        arrays = batches(c).persist(StorageLevel.DISK_MMAP)
        arrays.count()
        status = {d.name: d for d in c.storage_status()}
        assert "pickle fallback" in status[recs.label].layout
        assert status[arrays.label].layout == "ndarray"
        assert "pickle fallback" in str(c.storage_status())
        recs.unpersist()
        arrays.unpersist()


def test_mapped_batches_are_served_without_deserializing(tmp_path, monkeypatch):
    """A mapped batch is a read-only view of the segment's map: no serializer loads it and
    nothing is copied. Counted, not timed: every serializer's ``loads`` is wrapped and the
    batches handed to the tasks are inspected."""
    from strataflow.storage.blocks import serde

    loads = {"n": 0}
    for ser in serde.SERIALIZERS.values():
        real = ser.loads

        def counted(data, real=real):
            loads["n"] += 1
            return real(data)

        monkeypatch.setattr(ser, "loads", counted)
    with context(tmp_path, parallelism=1) as c:
        mapped = batches(c, rows=1 << 16).persist(StorageLevel.DISK_MMAP)  # 8 x 4 MB
        pickled = batches(c, rows=1 << 16).persist(StorageLevel.MEMORY_AND_DISK, "pickle")  # on disk: 1 MB budget
        mapped.count()
        pickled.count()
        m0, n0 = c.metrics(), loads["n"]
        seen: list = []
        for _ in range(3):
            mapped.map_partitions(lambda b: seen.append(b) or [len(b)]).count()
        m1, n1 = c.metrics(), loads["n"]
        for _ in range(3):
            pickled.count()
        m2, n2 = c.metrics(), loads["n"]
        assert m2["disk_hits"] - m1["disk_hits"] == 24 and m1["disk_hits"] - m0["disk_hits"] == 24
        assert n1 == n0  # mapped reads: no serializer involved
        assert n2 - n1 == 24  # each pickled disk hit is one load
        assert m2["deserialize_s"] - m1["deserialize_s"] > 0
        for b in seen:  # views of the map, not copies
            assert not b.flags.owndata and not b.flags.writeable
        mapped.unpersist()
        pickled.unpersist()


def _walked_by_full_collections(tmp_path, gc_free: bool) -> tuple[int, int, int]:
    """``(cached containers, those of them a full collection walks, frozen objects)``. The
    containers are the cached records and the lists inside them: what the collector would
    traverse. A full collection walks the objects of generations 0-2, which
    ``gc.get_objects()`` lists; frozen objects (``gc.freeze``) are in none of them."""
    with context(tmp_path, memory="1GB", gc_free_cache=gc_free) as c:
        ds = records(c, 300_000, 4).persist(StorageLevel.MEMORY_ONLY)
        assert ds.count() == 300_000
        mem, _ = blocks_of(c.block_manager, ds.id)
        assert len(mem) == 4
        held: list = []  # the partitions as the tasks see them: the cached records themselves
        ds.map_partitions(lambda part: held.append(part) or [len(part)]).count()
        cached = {id(o) for part in held for rec in part for o in (rec, rec[2])}
        del held
        walked = len(cached & {id(o) for o in gc.get_objects()})
        frozen = gc.get_freeze_count()
        ds.unpersist()
        return len(cached), walked, frozen


def test_gc_free_cache_keeps_full_collections_off_the_cached_records(tmp_path):
    n, walked, _ = _walked_by_full_collections(tmp_path, False)
    assert n == 600_000 and walked == n  # plain: every cached record is walked by a collection
    n, walked, frozen = _walked_by_full_collections(tmp_path, True)
    assert n == 600_000 and walked == 0 and frozen >= n  # GC-free: none of them is
