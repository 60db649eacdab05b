"""The disk store: atomic block files, round-robin directories, verified checksums, a
capacity; and, through a Context, what happens when block files go bad, the cache
directory is full, or a value cannot be serialized."""

from __future__ import annotations

import errno
import os
import threading

import numpy as np
import pytest

from strataflow import Context, TaskFailedError
from strataflow.storage.disk.disk_store import BlockUnavailable, DiskFull, DiskStore
from strataflow.storage.level import StorageLevel

pytestmark = pytest.mark.usefixtures("no_leaks")


def payload(n: int, seed: int = 0) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


@pytest.fixture
def dirs(tmp_path):
    out = []
    for name in ("d0", "d1", "d2"):
        (tmp_path / name).mkdir()
        out.append(str(tmp_path / name))
    return out


def all_files(dirs) -> list[str]:
    return sorted(os.path.join(d, f) for d in dirs for f in os.listdir(d))


# -- the store on its own ----------------------------------------------------------------------
def test_put_get_roundtrip_and_no_temp_files(dirs):
    store = DiskStore(dirs)
    data = payload(10_000)
    entry = store.put("rdd_0_0", [data[:3000], memoryview(data)[3000:]], len(data), "pickle5")
    got, name = store.get("rdd_0_0")
    assert bytes(got) == data and name == "pickle5"
    assert os.path.isfile(entry.path) and os.path.getsize(entry.path) == entry.size
    assert store.used == entry.size
    assert "rdd_0_0" in store and store.entry("rdd_0_0") == entry
    assert not any(f.endswith(".tmp") for f in all_files(dirs))
    assert all_files(dirs) == [entry.path]


def test_block_file_appears_only_complete(dirs, monkeypatch):
    """The file is written under a temporary name and renamed: when the rename happens the
    block's own name does not exist yet and the temporary file already has every byte."""
    store = DiskStore(dirs)
    data = payload(50_000)
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append((src, dst, os.path.exists(dst), os.path.getsize(src)))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    entry = store.put("rdd_1_0", [data], len(data), "pickle")
    assert len(seen) == 1
    src, dst, dst_existed, src_size = seen[0]
    assert dst == entry.path and src != dst and src.endswith(".tmp")
    assert not dst_existed
    assert src_size == entry.size
    assert not os.path.exists(src)


@pytest.mark.parametrize("err", [errno.EIO, errno.ENOSPC], ids=["EIO", "ENOSPC"])
def test_failed_write_leaves_nothing_behind(dirs, monkeypatch, err):
    store = DiskStore(dirs)
    store.put("keep", [payload(100)], 100, "pickle")
    used = store.used

    def fail(src, dst):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(os, "replace", fail)
    expected = DiskFull if err == errno.ENOSPC else OSError
    with pytest.raises(expected):
        store.put("lost", [payload(1000)], 1000, "pickle")
    monkeypatch.undo()
    assert store.used == used
    assert "lost" not in store
    assert [os.path.basename(f) for f in all_files(dirs)] == ["keep.blk"]  # no .tmp, no partial block
    with pytest.raises(BlockUnavailable):
        store.get("lost")


def test_directories_used_round_robin(dirs):
    store = DiskStore(dirs)
    entries = [store.put(f"rdd_0_{i}", [payload(64, i)], 64, "pickle") for i in range(9)]
    assert [os.path.dirname(e.path) for e in entries] == [dirs[i % 3] for i in range(9)]
    assert [len(os.listdir(d)) for d in dirs] == [3, 3, 3]
    for i, e in enumerate(entries):
        assert bytes(store.get(f"rdd_0_{i}")[0]) == payload(64, i)


def test_every_flipped_byte_is_detected(dirs):
    """Each byte of the file, header and serializer name included, is covered: a flip
    anywhere raises BlockUnavailable (not a wrong payload, a wrong serializer name, or a
    MemoryError from a corrupt length)."""
    store = DiskStore(dirs)
    data = payload(200)
    entry = store.put("rdd_0_0", [data], len(data), "arrow:zstd")
    original = open(entry.path, "rb").read()
    for i in range(len(original)):
        for mask in (0x01, 0x80):
            corrupt = bytearray(original)
            corrupt[i] ^= mask
            with open(entry.path, "wb") as f:
                f.write(corrupt)
            with pytest.raises(BlockUnavailable):
                store.get("rdd_0_0")
    with open(entry.path, "wb") as f:
        f.write(original)
    assert bytes(store.get("rdd_0_0")[0]) == data  # the untouched file still reads


@pytest.mark.parametrize("keep", [0, 5, 21, -1], ids=["empty", "in-header", "after-header", "last-byte"])
def test_truncated_file_is_unavailable(dirs, keep):
    store = DiskStore(dirs)
    data = payload(500)
    entry = store.put("b", [data], len(data), "pickle")
    os.truncate(entry.path, keep if keep >= 0 else entry.size + keep)
    with pytest.raises(BlockUnavailable):
        store.get("b")


def test_extended_file_is_unavailable(dirs):
    store = DiskStore(dirs)
    data = payload(500)
    entry = store.put("b", [data], len(data), "pickle")
    with open(entry.path, "ab") as f:
        f.write(b"trailing garbage")
    with pytest.raises(BlockUnavailable):
        store.get("b")


def test_deleted_or_unknown_block_is_unavailable(dirs):
    store = DiskStore(dirs)
    entry = store.put("b", [b"abc"], 3, "pickle")
    os.remove(entry.path)
    with pytest.raises(BlockUnavailable, match="missing"):
        store.get("b")
    with pytest.raises(BlockUnavailable):
        store.get("never-written")
    assert store.remove("b") == entry  # removing a block whose file is gone is fine
    assert store.used == 0


def test_capacity_raises_disk_full_and_leaves_used_unchanged(dirs):
    store = DiskStore(dirs, capacity=2000)
    a = store.put("a", [payload(900)], 900, "pickle")
    used = store.used
    assert used == a.size <= 2000
    with pytest.raises(DiskFull) as info:
        store.put("b", [payload(1500)], 1500, "pickle")
    assert info.value.errno == errno.ENOSPC
    assert isinstance(info.value, OSError)  # callers catch OSError for every write failure
    assert store.used == used
    assert "b" not in store
    assert all_files(dirs) == [a.path]
    small = store.put("c", [payload(100)], 100, "pickle")  # a block that fits still goes in
    assert store.used == a.size + small.size <= 2000


def test_remove_frees_used_and_deletes_the_file(dirs):
    store = DiskStore(dirs, capacity=2000)
    a = store.put("a", [payload(1500)], 1500, "pickle")
    with pytest.raises(DiskFull):
        store.put("b", [payload(1500)], 1500, "pickle")
    assert store.remove("a") == a
    assert store.used == 0 and not os.path.exists(a.path) and "a" not in store
    assert store.remove("a") is None
    b = store.put("b", [payload(1500)], 1500, "pickle")  # the room is back
    assert store.used == b.size


def test_concurrent_puts_never_overshoot_capacity(dirs):
    store = DiskStore(dirs, capacity=50_000)
    errors: list = []
    full = []

    def writer(t):
        for i in range(20):
            try:
                store.put(f"t{t}_{i}", [payload(1000, i)], 1000, "pickle")
            except DiskFull:
                full.append(1)
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert full  # 80 blocks of ~1 KB cannot all fit in 50 KB
    files = all_files(dirs)
    assert store.used == sum(e.size for _, e in store.items()) == sum(os.path.getsize(f) for f in files)
    assert store.used <= 50_000
    assert len(files) == len(store.items()) == 80 - len(full)


# -- through a Context ---------------------------------------------------------------------------
@pytest.fixture
def make_ctx(tmp_path):
    made = []

    def make(**kw):
        local = tmp_path / f"local{len(made)}"
        shuffle = tmp_path / f"shuffle{len(made)}"
        local.mkdir()
        shuffle.mkdir()
        kw.setdefault("memory", "64MB")
        kw.setdefault("parallelism", 2)
        c = Context(backend="threads", progress=False, local_dirs=[str(local)], shuffle_dirs=[str(shuffle)], **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()


def block_files(c) -> dict[str, str]:
    return {f[: -len(".blk")]: os.path.join(d, f) for d in c.local_dirs for f in os.listdir(d) if f.endswith(".blk")}


def record(c, name) -> list:
    events: list = []
    c.events.subscribe(lambda e: events.append(e) if e["event"] == name else None)
    return events


def corrupt(path: str) -> None:
    with open(path, "r+b") as f:
        f.seek(-10, os.SEEK_END)
        b = f.read(1)
        f.seek(-10, os.SEEK_END)
        f.write(bytes([b[0] ^ 0x40]))


def test_disk_only_corrupt_or_deleted_block_is_recomputed(make_ctx):
    c = make_ctx()
    lost = record(c, "BlockLost")
    ds = c.parallelize(range(4000), 4).map(lambda x: (x, x * x)).set_name("squares")
    ds.persist(StorageLevel.DISK_ONLY)
    expected = [(x, x * x) for x in range(4000)]
    assert ds.collect() == expected
    files = block_files(c)
    assert sorted(files) == [f"rdd_{ds.id}_{i}" for i in range(4)]
    corrupt(files[f"rdd_{ds.id}_1"])
    os.remove(files[f"rdd_{ds.id}_3"])
    before = c.metrics()
    assert ds.collect() == expected
    after = c.metrics()
    assert sorted(e["split"] for e in lost) == [1, 3]
    assert all(e["dataset_id"] == ds.id for e in lost)
    assert after["misses"] - before["misses"] == 2  # recomputed from lineage...
    assert after["disk_hits"] - before["disk_hits"] == 2
    assert sorted(block_files(c)) == [f"rdd_{ds.id}_{i}" for i in range(4)]  # ...and stored again
    assert ds.collect() == expected
    assert len(lost) == 2 and c.metrics()["disk_hits"] - after["disk_hits"] == 4


def test_memory_and_disk_block_lost_on_disk_is_recomputed(make_ctx, policy):
    c = make_ctx(memory="1MB", policy=policy)
    lost = record(c, "BlockLost")
    data = np.arange(200_000, dtype=np.float64).reshape(-1, 4)  # 1.6 MB: cannot all fit in memory
    ds = c.from_numpy(data, 4).map_partitions(lambda a: a * 2.0).set_name("doubled")
    ds.persist(StorageLevel.MEMORY_AND_DISK)
    sums = ds.map_partitions(lambda a: [float(a.sum())])
    expected = [float(p.sum()) * 2.0 for p in np.array_split(data, 4)]
    assert sums.collect() == expected
    on_disk = block_files(c)
    assert on_disk, "the test needs blocks that went to disk"
    status = c.storage_status()[0]
    assert status.disk_partitions == len(on_disk) and status.memory_partitions + status.disk_partitions >= 4
    for path in on_disk.values():
        corrupt(path)
    assert sums.collect() == expected
    assert sorted(e["block"] for e in lost) == sorted(on_disk)
    np.testing.assert_array_equal(np.concatenate(ds.collect_partitions()), data * 2.0)


def test_tiny_disk_capacity_degrades_to_not_caching(make_ctx, caplog):
    c = make_ctx(disk_capacity="64KB")
    not_stored = record(c, "BlockNotStored")
    ds = c.parallelize(range(40_000), 4).map(lambda x: (x, str(x) * 3)).set_name("wide")
    ds.persist(StorageLevel.DISK_ONLY)
    expected = [(x, str(x) * 3) for x in range(40_000)]
    with caplog.at_level("WARNING", logger="strataflow"):
        assert ds.collect() == expected
    warned = [r.getMessage() for r in caplog.records if "not cached" in r.getMessage()]
    assert len(warned) == 1, warned  # one per cause per stage, however many blocks
    assert not_stored and all(e["dataset_id"] == ds.id for e in not_stored)
    assert any("capacity" in e["reason"] or "space" in e["reason"] for e in not_stored)
    assert c.disk_store.used <= 64 * 1024
    files = block_files(c)
    assert c.storage_status()[0].disk_partitions == len(files) < 4
    assert ds.collect() == expected  # still right, blocks that could not be written recomputed
    assert ds.count() == 40_000
    assert c.metrics()["blocks_not_stored"] >= 4 - len(files)


def test_full_memory_and_disk_degrades_to_not_caching(make_ctx, caplog):
    c = make_ctx(memory="1MB", disk_capacity="16KB")
    not_stored = record(c, "BlockNotStored")
    data = np.arange(600_000, dtype=np.int64)  # 4 blocks of 1.2 MB: none fits anywhere
    ds = c.from_numpy(data, 4).map_partitions(lambda a: a + 1).set_name("nowhere")
    ds.persist(StorageLevel.MEMORY_AND_DISK_SER)
    with caplog.at_level("WARNING", logger="strataflow"):
        assert ds.sum() == int((data + 1).sum())
    assert [r for r in caplog.records if "not cached" in r.getMessage()]
    assert not_stored
    assert len(not_stored) == 4 and not block_files(c)
    status = c.storage_status()[0]
    assert (status.memory_partitions, status.disk_partitions) == (0, 0)
    assert ds.sum() == int((data + 1).sum())


def test_cache_files_go_to_local_dirs_never_shuffle_dirs(tmp_path):
    local = [tmp_path / "l0", tmp_path / "l1"]
    shuffle = tmp_path / "s"
    for d in [*local, shuffle]:
        d.mkdir()
    with Context(backend="threads", memory="64MB", parallelism=2, progress=False, local_dirs=[str(d) for d in local],
                 shuffle_dirs=[str(shuffle)]) as c:
        pairs = c.parallelize(range(2000), 4).map(lambda x: (x % 7, x)).persist(StorageLevel.DISK_ONLY)
        sums = pairs.reduce_by_key(lambda a, b: a + b, 3).persist(StorageLevel.DISK_ONLY)
        assert dict(sums.collect()) == {k: sum(x for x in range(2000) if x % 7 == k) for k in range(7)}
        cache_files = [f for d in c.local_dirs for f in os.listdir(d) if f.endswith(".blk")]
        assert len(cache_files) == 4 + 3
        assert all(os.listdir(d) for d in c.local_dirs)  # both cache directories used
        assert [len([f for f in os.listdir(d) if f.endswith(".blk")]) for d in c.local_dirs] in ([4, 3], [3, 4])
        for root, _, names in os.walk(shuffle):
            assert not [n for n in names if n.endswith(".blk")], f"cache block in shuffle dir {root}"
        assert os.listdir(c.shuffle_dirs[0])  # the shuffle did write there
        assert set(c.local_dirs).isdisjoint(c.shuffle_dirs)


UNPICKLABLE = {  # a lambda in a record pickles (by value: common/value_pickle.py); a generator does not
    "generator": lambda x: (x, (i for i in range(x))),
    "lock": lambda x: (x, threading.Lock()),
}


@pytest.mark.parametrize("what", list(UNPICKLABLE))
@pytest.mark.parametrize("level", ["DISK_ONLY", "MEMORY_ONLY_SER", "MEMORY_AND_DISK_SER", "OFF_HEAP"])
@pytest.mark.parametrize("serializer", [None, "pickle", "pickle5"])
def test_unserializable_value_fails_the_job_naming_dataset_and_serializer(make_ctx, what, level, serializer):
    c = make_ctx(max_task_attempts=1)
    ds = c.parallelize(range(10), 2).map(UNPICKLABLE[what]).set_name(f"unpicklable_{what}")
    ds.persist(level, serializer=serializer)
    with pytest.raises(TaskFailedError) as info:
        ds.count()
    err = info.value
    text = str(err) + " " + str(err.__cause__)
    assert f"unpicklable_{what}" in text
    assert f"'{serializer or 'auto'}'" in text
    assert level in text
    assert not block_files(c)
    # the context is still usable, and the dataset works once it is not persisted that way
    assert ds.unpersist().count() == 10


@pytest.mark.parametrize("what", list(UNPICKLABLE))
@pytest.mark.parametrize("level", ["MEMORY_ONLY", "MEMORY_AND_DISK"])
def test_unserializable_value_stays_in_memory_when_the_level_allows(make_ctx, what, level):
    c = make_ctx()
    ds = c.parallelize(range(10), 2).map(UNPICKLABLE[what]).set_name("in_memory").persist(level)
    assert ds.count() == 10
    before = c.metrics()
    assert [x for x, _ in ds.collect()] == list(range(10))
    assert c.metrics()["memory_hits"] - before["memory_hits"] == 2
    status = c.storage_status()[0]
    assert (status.memory_partitions, status.disk_partitions) == (2, 0)


def test_unserializable_value_without_room_in_memory_is_not_cached(make_ctx, caplog):
    """MEMORY_AND_DISK with no memory room: the block cannot go to disk either; the job
    still succeeds, with BlockNotStored and a warning naming the dataset."""
    c = make_ctx(memory="1MB")
    not_stored = record(c, "BlockNotStored")
    big = 600_000

    def part(i, _):
        return [(np.zeros(big // 8), threading.Lock())]

    ds = c.parallelize(range(4), 4).map_partitions_with_index(part).set_name("locked_batches")
    ds.persist(StorageLevel.MEMORY_AND_DISK)
    with caplog.at_level("WARNING", logger="strataflow"):
        assert ds.count() == 4
    assert any("locked_batches" in r.getMessage() for r in caplog.records)
    assert any("locked_batches" in e["reason"] for e in not_stored)
    assert not block_files(c)


def test_unserializable_block_evicted_from_memory_is_discarded_not_lost(make_ctx):
    """A MEMORY_AND_DISK block that cannot be serialized is dropped, not written, when
    another dataset needs the memory: BlockNotStored, and the next read recomputes it."""
    c = make_ctx(memory="2MB")
    not_stored = record(c, "BlockNotStored")
    dropped = record(c, "BlockDropped")

    def part(i, _):
        return [(i, np.full(37_500, float(i)), threading.Lock())]  # ~300 KB a block

    locked = c.parallelize(range(4), 4).map_partitions_with_index(part).set_name("locked")
    locked.persist(StorageLevel.MEMORY_AND_DISK)
    assert [r[0] for r in locked.collect()] == [0, 1, 2, 3]
    assert c.storage_status()[0].memory_partitions == 4
    other = c.from_numpy(np.ones(4 * 37_500), 4).map_partitions(lambda a: a * 2).set_name("other")
    other.persist(StorageLevel.MEMORY_AND_DISK)
    assert other.sum() == 2.0 * 4 * 37_500
    gone = [e for e in dropped if e["dataset_id"] == locked.id]
    assert gone and all(e["to"] == "discarded" for e in gone)
    assert any("locked" in e["reason"] for e in not_stored)
    assert not [f for f in block_files(c) if f.startswith(f"rdd_{locked.id}_")]
    before = c.metrics()
    assert [float(r[1][0]) for r in locked.collect()] == [0.0, 1.0, 2.0, 3.0]
    assert c.metrics()["misses"] - before["misses"] == len(gone)
    assert c.metrics()["blocks_discarded"] >= len(gone)


def test_arrow_serializer_refuses_records_naming_itself(make_ctx):
    c = make_ctx(max_task_attempts=1)
    ds = c.parallelize(range(100), 2).map(lambda x: (x, x)).set_name("pairs_for_arrow")
    ds.persist(StorageLevel.DISK_ONLY, serializer="arrow")
    with pytest.raises(TaskFailedError) as info:
        ds.count()
    text = str(info.value) + " " + str(info.value.__cause__)
    assert "pairs_for_arrow" in text and "'arrow'" in text
    batches = c.from_numpy(np.arange(100.0), 2).set_name("batches_for_arrow")
    batches.persist(StorageLevel.DISK_ONLY, serializer="arrow:zstd")
    assert batches.sum() == sum(range(100))
    assert batches.sum() == sum(range(100))
    status = {s.name.split("#")[0]: s for s in c.storage_status()}
    assert status["batches_for_arrow"].serializer == "arrow:zstd"
    assert status["batches_for_arrow"].disk_partitions == 2


def _big_block_context(tmp_path, level, policy="spark"):
    from strataflow import Context

    return Context(backend="threads", memory="6MB", parallelism=2, policy=policy, local_dirs=[str(tmp_path / "c")],
                   shuffle_dirs=[str(tmp_path / "s")], progress=False)


@pytest.mark.parametrize("level", ["MEMORY_AND_DISK", "MEMORY_AND_DISK_SER", "DISK_ONLY", "OFF_HEAP"])
def test_large_blocks_are_mapped_verified_and_recached_as_copies(tmp_path, level):
    """Blocks of 1 MB and more are read by mapping their file; re-caching copies them into
    memory; a corrupt or truncated large block file is detected and recomputed."""
    import numpy as np

    (tmp_path / "c").mkdir()
    (tmp_path / "s").mkdir()
    data = np.arange(1_500_000, dtype=np.float64).reshape(-1, 3)  # 8 blocks of 1.5 MB
    with _big_block_context(tmp_path, level) as c:
        a = c.from_numpy(data, 8).map_partitions(lambda x: x + 1).persist(level)
        b = a.map_partitions(lambda x: x * 2).persist(level)
        want = ((data + 1) * 2).sum()
        for _ in range(3):
            assert a.map_partitions(lambda x: [x.sum()]).sum() == (data + 1).sum()
            assert b.map_partitions(lambda x: [x.sum()]).sum() == want
        m = c.metrics()
        if level != "OFF_HEAP":
            assert m["disk_hits"] > 0
        if level.startswith("MEMORY_AND_DISK"):
            assert m["blocks_recached"] > 0  # spark's policy re-caches what it read from disk
        if level == "DISK_ONLY":
            lost = []
            c.events.subscribe(lambda e: lost.append(e) if e["event"] == "BlockLost" else None)
            files = sorted(e.path for bid, e in c.disk_store.items()
                           if bid.dataset_id == b.id and os.path.getsize(e.path) > 1 << 20)
            with open(files[0], "r+b") as f:
                f.seek(os.path.getsize(files[0]) - 100)
                f.write(b"\xff" * 8)
            with open(files[1], "r+b") as f:
                f.truncate(os.path.getsize(files[1]) // 2)
            assert b.map_partitions(lambda x: [x.sum()]).sum() == want
            assert len(lost) >= 2
