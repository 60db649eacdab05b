"""The cache seen by a user: persist/cache/unpersist, storage_level, storage_status(),
metrics() and the cache figures of the event log, and read-only cached batches."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from strataflow import Context, TaskFailedError
from strataflow.storage.level import StorageLevel
from strataflow.storage.status import blocks_of

pytestmark = pytest.mark.usefixtures("no_leaks")

METRIC_KEYS = ("memory_hits", "disk_hits", "misses", "blocks_dropped", "bytes_dropped", "blocks_recached",
               "bytes_recached", "disk_bytes_written", "disk_bytes_read", "serialize_s", "deserialize_s",
               "gc_s", "gc_collections", "disk_write_s", "disk_read_s")
COUNTERS = [k for k in METRIC_KEYS if not k.endswith("_s")]


@pytest.fixture
def cx(tmp_path):
    (tmp_path / "local").mkdir()
    (tmp_path / "shuffle").mkdir()
    with Context(backend="threads", memory="64MB", parallelism=2, progress=False, local_dirs=[str(tmp_path / "local")],
                 shuffle_dirs=[str(tmp_path / "shuffle")], event_log=str(tmp_path / "events.jsonl")) as c:
        yield c


def block_files(c) -> list[str]:
    return sorted(f for d in c.local_dirs for f in os.listdir(d) if f.endswith(".blk"))


def events(c, name=None) -> list[dict]:
    """The event log as written so far (the log is flushed at every JobEnd)."""
    with open(c.config.event_log) as f:
        out = [json.loads(line) for line in f]
    return [e for e in out if name is None or e["event"] == name]


# -- persist, cache, unpersist, storage_level ---------------------------------------------------
def test_persist_and_cache_return_the_dataset(cx):
    a = cx.parallelize(range(10), 2)
    assert a.storage_level is StorageLevel.NONE and not a.is_cached
    assert a.persist(StorageLevel.MEMORY_AND_DISK) is a
    assert a.storage_level is StorageLevel.MEMORY_AND_DISK and a.is_cached
    b = cx.parallelize(range(10), 2)
    assert b.cache() is b and b.storage_level is StorageLevel.MEMORY_ONLY
    c = cx.parallelize(range(10), 2).map(lambda x: x + 1).persist("disk_only").map(lambda x: x * 2)
    assert c.sum() == sum((x + 1) * 2 for x in range(10))  # chaining
    d = cx.parallelize(range(10), 2)
    assert d.persist() is d and d.storage_level is StorageLevel.MEMORY_ONLY  # the default level
    assert b.unpersist() is b and b.storage_level is StorageLevel.NONE


def test_every_level_is_named_like_spark():
    names = {lvl.name for lvl in StorageLevel.all()}
    assert names == {"NONE", "MEMORY_ONLY", "MEMORY_ONLY_SER", "MEMORY_AND_DISK", "MEMORY_AND_DISK_SER",
                     "DISK_ONLY", "OFF_HEAP", "DISK_MMAP", "MEMORY_AND_DISK_MMAP",  # Spark's and our mapped ones
                     "STORE",  # the shared store (Spark 1.x's OFF_HEAP on Tachyon)
                     "AUTO"}  # and the engine's choice
    assert str(StorageLevel.MEMORY_AND_DISK) == "MEMORY_AND_DISK"
    assert StorageLevel.parse("memory-and-disk-ser") is StorageLevel.MEMORY_AND_DISK_SER


def test_changing_the_level_raises_until_unpersisted(cx):
    ds = cx.parallelize(range(100), 4).persist(StorageLevel.MEMORY_ONLY)
    assert ds.persist(StorageLevel.MEMORY_ONLY) is ds  # the same level again is fine
    assert ds.cache() is ds
    with pytest.raises(ValueError, match="MEMORY_ONLY"):
        ds.persist(StorageLevel.DISK_ONLY)
    assert ds.storage_level is StorageLevel.MEMORY_ONLY
    ds.count()
    ds.unpersist()
    assert ds.persist(StorageLevel.DISK_ONLY) is ds
    assert ds.count() == 100
    assert len(block_files(cx)) == 4
    status = cx.storage_status()
    assert [(s.level, s.disk_partitions, s.memory_partitions) for s in status] == [("DISK_ONLY", 4, 0)]


@pytest.mark.parametrize("level", ["MEMORY_ONLY", "MEMORY_ONLY_SER", "MEMORY_AND_DISK", "DISK_ONLY", "OFF_HEAP"])
def test_unpersist_removes_blocks_from_memory_and_disk(cx, level):
    keep = cx.parallelize(range(50), 2).map(lambda x: -x).set_name("keep").persist(StorageLevel.DISK_ONLY)
    keep.count()
    ds = cx.parallelize(range(1000), 4).map(lambda x: (x, str(x))).set_name("gone").persist(level)
    assert ds.count() == 1000
    names = [s.name for s in cx.storage_status()]
    assert any(n.startswith("gone") for n in names)
    assert cx.memory.storage_used > 0 or StorageLevel.parse(level) is StorageLevel.DISK_ONLY
    ds.unpersist()
    assert [s.name.split("#")[0] for s in cx.storage_status()] == ["keep"]
    assert block_files(cx) == [f"rdd_{keep.id}_{i}.blk" for i in range(2)]
    assert cx.memory.storage_used == 0
    assert blocks_of(cx.block_manager, ds.id) == ({}, {})
    before = cx.metrics()
    assert ds.count() == 1000  # recomputed, not cached again
    after = cx.metrics()
    unpersisted = events(cx, "DatasetUnpersisted")
    assert [(e["dataset_id"], e["blocks"]) for e in unpersisted] == [(ds.id, 4)]
    assert after["misses"] == before["misses"] and after["memory_hits"] == before["memory_hits"]
    assert keep.collect() == [-x for x in range(50)]


# -- storage_status -----------------------------------------------------------------------------
def test_storage_status_one_entry_per_persisted_dataset(cx):
    assert cx.storage_status() == [] and "no persisted" in str(cx.storage_status())
    pts = cx.from_numpy(np.arange(40_000, dtype=np.float64).reshape(-1, 4), 4).set_name("points")
    pts.persist(StorageLevel.MEMORY_ONLY)
    norms = pts.map_partitions(lambda a: np.sqrt((a * a).sum(axis=1))).set_name("norms")
    norms.persist(StorageLevel.DISK_ONLY)
    recs = cx.parallelize(range(300), 3).set_name("records").persist(StorageLevel.MEMORY_AND_DISK_SER,
                                                                     serializer="pickle5")
    cx.parallelize(range(5), 1).set_name("never_persisted").count()
    norms.count()
    recs.count()
    status = {s.name.split("#")[0]: s for s in cx.storage_status()}
    assert set(status) == {"points", "norms", "records"}
    p, n, r = status["points"], status["norms"], status["records"]
    assert (p.level, p.num_partitions, p.memory_partitions, p.disk_partitions) == ("MEMORY_ONLY", 4, 4, 0)
    assert p.memory_bytes >= 40_000 * 8 and p.disk_bytes == 0
    assert (n.level, n.num_partitions, n.memory_partitions, n.disk_partitions) == ("DISK_ONLY", 4, 0, 4)
    assert n.memory_bytes == 0 and n.disk_bytes >= 10_000 * 8
    assert (r.level, r.memory_partitions, r.disk_partitions) == ("MEMORY_AND_DISK_SER", 3, 0)
    assert 0 < r.memory_bytes < 300 * 50
    table = str(cx.storage_status())
    lines = table.splitlines()
    assert len(lines) == 2 + 3  # header, rule, one line per dataset
    for name, level in [("points", "MEMORY_ONLY"), ("norms", "DISK_ONLY"), ("records", "MEMORY_AND_DISK_SER")]:
        row = next(line for line in lines if name in line)
        assert level in row.split()
    assert "4/4" in next(line for line in lines if "points" in line)
    assert r.serializer == "pickle5" and "pickle5" in next(line for line in lines if "records" in line)
    assert p.serializer == "auto"  # the context's default


def test_storage_status_counts_partitions_actually_computed(cx):
    ds = cx.parallelize(range(100), 5).set_name("partial").persist(StorageLevel.MEMORY_ONLY)
    ds.take(3)  # computes only the first partition
    s = cx.storage_status()[0]
    assert (s.num_partitions, s.memory_partitions) == (5, 1)


# -- metrics ------------------------------------------------------------------------------------
def test_metrics_keys_and_values_after_a_small_job(cx):
    m0 = cx.metrics()
    assert set(METRIC_KEYS) <= set(m0)
    assert all(m0[k] == 0 for k in COUNTERS if not k.startswith("gc_"))
    ds = cx.parallelize(range(10_000), 4).map(lambda x: (x, x * 0.5)).persist(StorageLevel.MEMORY_ONLY)
    assert ds.count() == 10_000
    m1 = cx.metrics()
    assert (m1["misses"], m1["memory_hits"], m1["disk_hits"]) == (4, 0, 0)
    assert ds.count() == 10_000
    m2 = cx.metrics()
    assert m2["memory_hits"] == 4 and m2["misses"] == 4  # the second action: only hits
    assert m2["disk_hits"] == 0 and m2["disk_bytes_written"] == 0 and m2["disk_bytes_read"] == 0
    assert m2["blocks_dropped"] == m2["bytes_dropped"] == m2["blocks_recached"] == m2["bytes_recached"] == 0
    assert m2["serialize_s"] == 0 and m2["deserialize_s"] == 0  # MEMORY_ONLY holds values
    assert m2["disk_write_s"] == 0 and m2["disk_read_s"] == 0  # nor is the disk timed
    for k in METRIC_KEYS:
        assert isinstance(m2[k], (int, float)) and m2[k] >= 0, k
    assert isinstance(m2["gc_collections"], int) and m2["gc_collections"] >= m1["gc_collections"]
    assert m2["gc_s"] >= m1["gc_s"] >= 0


def test_metrics_of_serialized_and_disk_levels(cx):
    ser = cx.parallelize(range(5000), 2).map(lambda x: (x, str(x))).persist(StorageLevel.MEMORY_ONLY_SER)
    disk = cx.parallelize(range(5000), 3).map(lambda x: x * 3).persist(StorageLevel.DISK_ONLY)
    ser.count()
    disk.count()
    m1 = cx.metrics()
    assert m1["misses"] == 5 and m1["serialize_s"] > 0
    files = [os.path.join(d, f) for d in cx.local_dirs for f in os.listdir(d) if f.endswith(".blk")]
    assert m1["disk_bytes_written"] == sum(os.path.getsize(f) for f in files) > 0
    assert m1["disk_bytes_read"] == 0 and m1["disk_read_s"] == 0
    assert m1["disk_write_s"] > 0  # the disk tier's writes are timed (bench scale's write rate)
    assert ser.collect()[:2] == [(0, "0"), (1, "1")]
    assert disk.sum() == 3 * sum(range(5000))
    m2 = cx.metrics()
    assert m2["memory_hits"] - m1["memory_hits"] == 2
    assert m2["disk_hits"] - m1["disk_hits"] == 3
    assert m2["misses"] == m1["misses"]
    assert 0 < m2["disk_bytes_read"] <= m2["disk_bytes_written"]
    assert m2["deserialize_s"] > 0 and m2["disk_read_s"] > 0
    assert m2["disk_write_s"] == m1["disk_write_s"]  # nothing written by reading


def test_event_log_carries_cache_differences_per_stage_and_job(cx):
    ds = cx.parallelize(range(2000), 4).map(lambda x: (x % 5, 1)).persist(StorageLevel.MEMORY_ONLY)
    counts = ds.reduce_by_key(lambda a, b: a + b, 2)
    assert dict(counts.collect()) == {k: 400 for k in range(5)}  # job 0: map stage misses
    assert ds.count() == 2000  # job 1: memory hits only
    job_ends = events(cx, "JobEnd")
    stage_ends = events(cx, "StageEnd")
    assert len(job_ends) == 2
    for e in job_ends + stage_ends:
        assert isinstance(e["cache"], dict)
        assert set(METRIC_KEYS) - {"gc_s", "gc_collections"} <= set(e["cache"]), e["event"]
        assert "gc_s" in e and "gc_collections" in e
    first, second = job_ends
    assert first["cache"]["misses"] == 4 and first["cache"]["memory_hits"] == 0
    assert second["cache"]["misses"] == 0 and second["cache"]["memory_hits"] == 4
    for job in job_ends:
        stages = [s for s in stage_ends if s["job_id"] == job["job_id"]]
        for key in ("misses", "memory_hits"):
            assert sum(s["cache"][key] for s in stages) == job["cache"][key]
    map_stage = next(s for s in stage_ends if s["job_id"] == first["job_id"] and s["kind"] == "shuffle-map")
    assert map_stage["cache"]["misses"] == 4
    total = cx.metrics()
    assert total["memory_hits"] == sum(j["cache"]["memory_hits"] for j in job_ends)


# -- cached batches are read-only ---------------------------------------------------------------
LEVELS = ["MEMORY_ONLY", "MEMORY_ONLY_SER", "MEMORY_AND_DISK", "MEMORY_AND_DISK_SER", "DISK_ONLY", "OFF_HEAP"]


@pytest.mark.parametrize("level", LEVELS)
def test_cached_batches_are_read_only(cx, level):
    data = np.arange(8000, dtype=np.float64).reshape(-1, 4)
    plain = cx.from_numpy(data, 4).map_partitions(lambda a: a * 3.0)
    cached = cx.from_numpy(data, 4).map_partitions(lambda a: a * 3.0).persist(level)
    expected = np.concatenate(plain.collect_partitions())
    for _ in range(2):  # the computing action and a cache hit
        assert cached.map_partitions(lambda a: [a.flags.writeable]).collect() == [False] * 4
        np.testing.assert_array_equal(np.concatenate(cached.collect_partitions()), expected)

    def scribble(a):
        a[0, 0] = -1.0
        return a

    with pytest.raises(TaskFailedError) as info:
        cached.map_partitions(scribble).count()
    assert isinstance(info.value.__cause__, ValueError)
    assert "read-only" in str(info.value.__cause__)
    np.testing.assert_array_equal(np.concatenate(cached.collect_partitions()), expected)  # unharmed
    # a copy is the way to modify it
    bumped = cached.map_partitions(lambda a: np.array(a) + 1.0)
    np.testing.assert_array_equal(np.concatenate(bumped.collect_partitions()), expected + 1.0)


def test_uncached_batches_stay_writable(cx):
    ds = cx.from_numpy(np.zeros((100, 2)), 2).map_partitions(lambda a: a + 1.0)
    assert ds.map_partitions(lambda a: [a.flags.writeable]).collect() == [True, True]


def test_metrics_of_drops_and_recaches_between_two_datasets(tmp_path, policy):
    """Two MEMORY_AND_DISK datasets of 1.2 MB in 2 MB: caching the second drops blocks of
    the first to disk; reading the first again re-caches them under ``spark`` only."""
    with Context(backend="threads", memory="2MB", parallelism=2, progress=False, policy=policy, local_dirs=[str(tmp_path)],
                 shuffle_dirs=[str(tmp_path)]) as c:
        dropped: list = []
        c.events.subscribe(lambda e: dropped.append(e) if e["event"] == "BlockDropped" else None)
        data = np.arange(4 * 37_500, dtype=np.float64)  # 4 blocks of 300 KB
        a = c.from_numpy(data, 4).map_partitions(lambda x: x + 1).set_name("A").persist("MEMORY_AND_DISK")
        b = c.from_numpy(data, 4).map_partitions(lambda x: x + 2).set_name("B").persist("MEMORY_AND_DISK")
        assert a.sum() == (data + 1).sum() and b.sum() == (data + 2).sum()
        m1 = c.metrics()
        assert m1["misses"] == 8 and m1["blocks_dropped"] >= 1
        assert m1["bytes_dropped"] == sum(e["bytes"] for e in dropped) >= 300_000 * m1["blocks_dropped"]
        assert all(e["to"] == "disk" and e["dataset_id"] == a.id for e in dropped)
        assert m1["disk_bytes_written"] >= m1["bytes_dropped"]
        status = {s.name.split("#")[0]: s for s in c.storage_status()}
        assert status["A"].disk_partitions == m1["blocks_dropped"]
        assert c.memory.storage_used == sum(s.memory_bytes for s in status.values()) <= c.memory.total
        assert a.sum() == (data + 1).sum()
        m2 = c.metrics()
        assert m2["misses"] == 8
        assert m2["disk_hits"] - m1["disk_hits"] == m1["blocks_dropped"]
        assert m2["disk_bytes_read"] > 0
        if policy == "spark":
            assert m2["blocks_recached"] == m1["blocks_dropped"] and m2["bytes_recached"] > 0
            assert m2["blocks_dropped"] > m1["blocks_dropped"]  # re-caching A evicts B
        else:
            assert m2["blocks_recached"] == 0 and m2["bytes_recached"] == 0
            assert m2["blocks_dropped"] == m1["blocks_dropped"]
        files = block_files(c)
        a.unpersist()
        assert not [f for f in block_files(c) if f.startswith(f"rdd_{a.id}_")]
        assert len(block_files(c)) == len([f for f in files if f.startswith(f"rdd_{b.id}_")])
        assert b.sum() == (data + 2).sum()


def test_failed_persist_leaves_the_dataset_unpersisted(cx):
    from strataflow import ConfigError

    ds = cx.parallelize(range(10), 2)
    with pytest.raises(ConfigError):
        ds.persist(StorageLevel.DISK_ONLY, serializer="no-such-serializer")
    assert ds.storage_level is StorageLevel.NONE and not ds.is_cached
    assert ds.persist(StorageLevel.MEMORY_ONLY) is ds  # choosing a level afterwards works
