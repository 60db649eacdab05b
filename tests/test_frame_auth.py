"""Code execution through the cache (issue 14, point 4): every pickled frame the engine
stores in a file is authenticated with the application's key before it is unpickled.

Each forgery below is what an attacker who can write the engine's files but does not
know the key can best do: a malicious pickle (its ``__reduce__`` runs ``os.system`` to
create a marker file) put where the engine will unpickle, the file's size unchanged and
every unkeyed check (XXH3 fields, lengths) recomputed to match. The old code accepted
such files and ran the pickle; each test checks that the read now fails the documented
way (BlockUnavailable, FetchFailed, SpillCorrupt, SourceSliceError) and that the marker
was never created, and a control shows that the forged bytes, loaded without the check,
do create it. The numeric hot path stays off the MAC: raw buffers keep their XXH3.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import shlex
import stat
import struct
import threading

import numpy as np
import pytest
import xxhash

from strataflow import Context, StorageLevel
from strataflow.storage.memory.unified import MemoryManager
from strataflow.shuffle import Aggregator, ExternalAggregator, FetchFailed, ShuffleWriter, SpillCorrupt
from strataflow.shuffle import codec
from strataflow.shuffle.files import read_bucket
from strataflow.shuffle.manager import read_buckets
from strataflow.storage.blocks import app_keys
from strataflow.storage.blocks import frame_auth
from strataflow.storage.disk.disk_store import _HEAD, BlockUnavailable, DiskStore
from strataflow.storage.blocks.frame_auth import TAG_BYTES, FrameAuth, new_key
from strataflow.storage.manager import BlockId
from strataflow.storage.mapped.region_store import RegionStore
from strataflow.storage.blocks.serde import SERIALIZERS
from strataflow.shipping.source_store import SourceSliceError, SourceStore, load_slice

KEY = bytes(range(32))


class Evil:
    """Unpickled, it creates ``marker``: the stand-in for arbitrary code."""

    def __init__(self, marker) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(self.marker)}",))


def evil_pickle(marker, size: int | None = None) -> bytes:
    """A malicious pickle, padded to ``size`` (pickle ignores the bytes after its STOP)."""
    data = pickle.dumps(Evil(marker), protocol=5)
    if size is not None:
        assert len(data) <= size, "the forgery must fit in the file it replaces"
        data += b"\0" * (size - len(data))
    return data


@pytest.fixture
def marker(tmp_path):
    return tmp_path / "pwned"


@pytest.fixture
def registered(dirs):
    """``dirs`` registered with KEY, as a fleet and its executors register theirs."""
    auth = FrameAuth(KEY)
    app_keys.register(dirs, auth)
    yield auth
    app_keys.unregister(dirs, auth)


def assert_live_forgery(loader, marker) -> None:
    """Control: the forged bytes really run code when loaded without authentication."""
    assert not marker.exists()
    try:
        loader()
    except Exception:  # noqa: BLE001 - whatever the load does after the code ran
        pass
    assert marker.exists(), "the forgery is not malicious: the test would prove nothing"


# -- the tag itself ---------------------------------------------------------------------------
def test_tags_depend_on_key_domain_and_bytes():
    a, b = FrameAuth(KEY), FrameAuth(new_key())
    t = a.tag(b"sf-test", b"abc", b"def")
    assert len(t) == frame_auth.TAG_BYTES == 32
    assert a.verify(t, b"sf-test", b"abcdef")  # the parts are one stream: callers frame them
    assert not a.verify(t, b"sf-other", b"abc", b"def")
    assert not b.verify(t, b"sf-test", b"abc", b"def")
    assert not a.verify(t, b"sf-test", b"abc", b"deg")
    assert not a.verify(t[:16], b"sf-test", b"abc", b"def")
    assert FrameAuth().key != FrameAuth().key and len(new_key()) == 32  # no key given: a random one
    assert KEY.hex() not in repr(a)
    with pytest.raises(TypeError):
        pickle.dumps(a)  # the key never travels by accident inside a task or stage
    with pytest.raises(ValueError):
        FrameAuth(b"short")


def test_app_keys_find_the_nearest_registered_directory(tmp_path):
    a, b = FrameAuth(KEY), FrameAuth(new_key())
    app = str(tmp_path / "app")
    app_keys.register([app], a)
    app_keys.register([app], FrameAuth(KEY))  # the threads backend's driver and executor: counted
    try:
        assert app_keys.auth_for(os.path.join(app, "exec-1", "rdd_0_0.blk")) == a
        assert app_keys.auth_for(app) == a
        assert app_keys.auth_for(str(tmp_path / "application" / "x.blk")) is None  # not a prefix match
        assert app_keys.auth_for(str(tmp_path / "x.blk")) is None
        with pytest.raises(ValueError, match="another"):
            app_keys.register([app], b)
        app_keys.unregister([app], a)
        assert app_keys.auth_for(os.path.join(app, "f")) == a  # one registration left
    finally:
        app_keys.unregister([app], a)
    assert app_keys.auth_for(os.path.join(app, "f")) is None


# -- disk blocks ------------------------------------------------------------------------------
_FIELDS = struct.Struct("<8sQQQB")


def read_header(path: str) -> tuple:
    with open(path, "rb") as f:
        raw = f.read()
    magic, length, auth_len, digest, name_len, tag = _HEAD.unpack_from(raw)
    name = raw[_HEAD.size : _HEAD.size + name_len]
    return raw, magic, length, auth_len, digest, name, tag


def forge_block(path: str, payload: bytes, auth_len: int) -> None:
    """Rewrites a block file with ``payload`` (same size), every unkeyed field recomputed
    for it (the XXH3 of the bytes after ``auth_len``), the old tag kept: no key, no tag."""
    raw, magic, length, _, _, name, tag = read_header(path)
    assert len(payload) == length
    digest = xxhash.xxh3_64_intdigest(payload[auth_len:])
    with open(path, "wb") as f:
        f.write(_FIELDS.pack(magic, length, auth_len, digest, len(name)) + tag + name + payload)
    assert os.path.getsize(path) == len(raw)


def forge_block_old_format(path: str, payload_size: int, marker) -> None:
    """The file as the old code wrote it (``SFBLK02``: xxh3 of name + payload), same size."""
    raw, _, _, _, _, name, _ = read_header(path)
    old_head = struct.Struct("<8sQQB")
    payload = evil_pickle(marker, len(raw) - old_head.size - len(name))
    h = xxhash.xxh3_64(name)
    h.update(payload)
    with open(path, "wb") as f:
        f.write(old_head.pack(b"SFBLK02\0", h.intdigest(), len(payload), len(name)) + name + payload)
    assert os.path.getsize(path) == len(raw)


def evil_payload(serializer: str, marker, size: int) -> bytes:
    """A payload that ``serializer``'s loads would unpickle into the marker's creation."""
    if serializer == "pickle":
        return evil_pickle(marker, size)
    stream = evil_pickle(marker)  # pickle5: a header of no buffers, then the stream
    return (struct.pack("<QQ", 0, len(stream)) + stream).ljust(size, b"\0")


BLOCKS = {
    "pickle-dict": ("pickle", {"a": list(range(2000)), "b": "x" * 500}),
    "record-list": ("pickle", [(i, f"value-{i}", float(i)) for i in range(3000)]),
    "pickle5-ndarray": ("pickle5", np.arange(5000, dtype=np.float64)),
    "pickle5-mapped": ("pickle5", np.arange(300_000, dtype=np.float64)),  # 2.4 MB: read by mapping
    "record-list-mapped": ("pickle", [(i, "v" * 20) for i in range(60_000)]),
}


@pytest.mark.parametrize("honest_prefix", [True, False], ids=["prefix-recomputed", "claims-no-pickle"])
@pytest.mark.parametrize("case", list(BLOCKS))
def test_forged_block_file_is_unavailable_and_never_unpickled(dirs, marker, case, honest_prefix):
    serializer, value = BLOCKS[case]
    store = DiskStore(dirs, key=KEY)
    ser = SERIALIZERS[serializer]
    frames = ser.dumps(value)
    size = sum(memoryview(f).nbytes for f in frames)
    entry = store.put("rdd_1_0", frames, size, serializer)
    got, name = store.get("rdd_1_0")
    assert name == serializer and bytes(got) == b"".join(bytes(memoryview(f)) for f in frames)
    forged = evil_payload(serializer, marker, size)
    # the attacker sets the authenticated length the serializer would use for the forged
    # payload, or claims that nothing is pickled, so that no tag would be checked at all
    auth_len = ser.unpickled_prefix([forged]) if honest_prefix else 0
    forge_block(entry.path, forged, auth_len)
    with pytest.raises(BlockUnavailable, match="authentication"):
        store.get("rdd_1_0")
    with pytest.raises(BlockUnavailable):
        DiskStore.read_entry(entry, FrameAuth(KEY))  # another executor's read, same key
    assert not marker.exists()
    assert_live_forgery(lambda: ser.loads(memoryview(forged)), marker)


@pytest.mark.parametrize("case", ["record-list", "pickle5-mapped"])
def test_block_file_in_the_old_format_is_refused(dirs, marker, case):
    serializer, value = BLOCKS[case]
    store = DiskStore(dirs)
    frames = SERIALIZERS[serializer].dumps(value)
    entry = store.put("rdd_1_0", frames, sum(memoryview(f).nbytes for f in frames), serializer)
    forge_block_old_format(entry.path, entry.size, marker)
    with pytest.raises(BlockUnavailable, match="bad header"):
        store.get("rdd_1_0")
    assert not marker.exists()


def test_block_files_of_another_key_or_another_block_are_refused(dirs, registered):
    ser = SERIALIZERS["pickle"]
    mine = DiskStore(dirs, key=KEY)
    a = mine.put("rdd_1_0", ser.dumps([1, 2, 3]), len(ser.dumps([1, 2, 3])[0]), "pickle")
    b = mine.put("rdd_1_1", ser.dumps([4, 5, 6]), len(ser.dumps([4, 5, 6])[0]), "pickle")
    # another executor of the application reads it through the registry (a peer read)
    assert pickle.loads(DiskStore.read_entry(a)[0]) == [1, 2, 3]
    with pytest.raises(BlockUnavailable, match="authentication"):
        DiskStore.read_entry(a, FrameAuth(new_key()))  # another application's key
    with open(a.path, "rb") as f:
        a_bytes = f.read()
    with open(b.path, "wb") as f:
        f.write(a_bytes)  # a valid file of this application, under another block's name
    with pytest.raises(BlockUnavailable, match="authentication"):
        mine.get("rdd_1_1")
    app_keys.unregister(dirs, registered)
    try:
        with pytest.raises(BlockUnavailable, match="no key"):
            DiskStore.read_entry(a)  # a path under no application directory: refused
    finally:
        app_keys.register(dirs, registered)


def test_numeric_buffers_stay_on_the_fast_path(dirs, monkeypatch):
    """A pickle5 block of a large ndarray: the MAC covers its header and small pickle
    stream only (the header records how many bytes); its 16 MB buffer keeps XXH3, which
    still catches a flipped byte in it."""
    hashed = []
    real = FrameAuth.hasher

    def counting(self, domain):
        h = real(self, domain)

        class Counted:
            def update(self, data):
                hashed.append(memoryview(data).nbytes)
                h.update(data)

            def digest(self):
                return h.digest()

        return Counted()

    monkeypatch.setattr(FrameAuth, "hasher", counting)
    store = DiskStore(dirs)
    value = np.random.default_rng(0).random(2_000_000)  # 16 MB
    frames = SERIALIZERS["pickle5"].dumps(value)
    size = sum(memoryview(f).nbytes for f in frames)
    entry = store.put("rdd_2_0", frames, size, "pickle5")
    _, _, length, auth_len, _, _, _ = read_header(entry.path)
    assert length == size >= 16_000_000
    assert auth_len == memoryview(frames[0]).nbytes + memoryview(frames[1]).nbytes < 1024  # header + stream
    payload, _ = store.get("rdd_2_0")
    np.testing.assert_array_equal(SERIALIZERS["pickle5"].loads(payload), value)
    assert 0 < sum(hashed) < 2 * (_HEAD.size + 64 + auth_len)  # one write and one read: no buffer bytes
    del payload
    with open(entry.path, "r+b") as f:  # a flip in the raw buffer: the checksum's job
        f.seek(entry.size - 1000)
        b = f.read(1)
        f.seek(entry.size - 1000)
        f.write(bytes([b[0] ^ 1]))
    with pytest.raises(BlockUnavailable, match="checksum"):
        store.get("rdd_2_0")
    arrow = SERIALIZERS["arrow"]
    frames = arrow.dumps(value)
    entry = store.put("rdd_2_1", frames, sum(memoryview(f).nbytes for f in frames), "arrow")
    assert read_header(entry.path)[3] == 0  # Arrow is never unpickled: nothing to authenticate


# -- region extents ----------------------------------------------------------------------------
def write_at(path: str, offset: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def test_pickled_extent_forged_after_its_first_read_is_never_unpickled(dirs, marker):
    """The old store verified an extent's XXH3 on its first read only: a pickle rewritten
    in place afterwards was unpickled as is. The tag is checked before every decode."""
    store = RegionStore(dirs, key=KEY)
    try:
        value = [(i, f"v{i}") for i in range(2000)]
        bid = BlockId(3, 0)
        e = store.put(bid, value)
        assert e.kind == "pickle" and e.tag
        assert store.get(bid) == value  # verified: the old store trusted it from now on
        forged = evil_pickle(marker, e.length)
        write_at(e.segment, e.offset, forged)
        with pytest.raises(BlockUnavailable, match="authentication"):
            store.get(bid)
        assert bid not in store  # forgotten: the block manager recomputes it
        assert not marker.exists()
        assert_live_forgery(lambda: pickle.loads(forged), marker)
    finally:
        store.close()


def test_pickle5_extent_with_a_colliding_checksum_is_never_unpickled(dirs, marker, registered):
    """XXH3 is not a cryptographic hash: a forger can match it. The store is given the
    forged extent's own XXH3 (what a collision achieves); only the tag stops it."""
    store = RegionStore(dirs, key=KEY)
    try:
        value = [("weights", np.arange(100_000, dtype=np.float64)), ("name", "x" * 300)]
        bid = BlockId(3, 1)
        e = store.put(bid, value)
        assert e.kind == "pickle5"
        head, tail = e.meta["pickled"]
        assert tail > 0 and head + tail < 4096 < e.length  # the 800 KB buffer is not authenticated
        write_at(e.segment, e.offset, evil_pickle(marker, head))  # the stream, same length
        with open(e.segment, "rb") as f:
            f.seek(e.offset)
            extent = f.read(e.length)
        colliding = dataclasses.replace(e, digest=xxhash.xxh3_64_intdigest(extent))
        with store._lock:
            store._entries[bid] = colliding
        with pytest.raises(BlockUnavailable, match="authentication"):
            RegionStore.read_extent(colliding)  # another executor's read, key by the registry
        with pytest.raises(BlockUnavailable, match="authentication"):
            store.get(bid)
        assert bid not in store
        assert not marker.exists()
    finally:
        store.close()


def test_numeric_extents_carry_no_tag_and_cost_no_mac(dirs):
    store = RegionStore(dirs)
    try:
        bid = BlockId(4, 0)
        e = store.put(bid, np.ones(1_000_000))
        assert e.kind == "ndarray" and e.tag == b"" and e.meta["pickled"] == (0, 0)
        for _ in range(3):
            assert store.get(bid).sum() == 1_000_000
        assert store.stats()["auth_bytes"] == 0
    finally:
        store.close()


# -- shuffle files ------------------------------------------------------------------------------
def _sparse_fields(raw: bytes) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """The SFIDX4 index's table: (n, reduce ids, offsets, auth lengths, digests, where tags start)."""
    _, n, k = struct.unpack_from("<8sqq", raw)
    at = 24
    ids = np.frombuffer(raw, np.int64, k, at).copy()
    offsets = np.frombuffer(raw, np.int64, k + 1, at + 8 * k).copy()
    auth_lens = np.frombuffer(raw, np.int64, k, at + 8 * (2 * k + 1)).copy()
    digests = np.frombuffer(raw, np.uint64, k, at + 8 * (3 * k + 1)).copy()
    return n, ids, offsets, auth_lens, digests, at + 8 * (4 * k + 1)


def index_fields(raw: bytes) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, int]:
    """The index's table as dense arrays over all n buckets (offsets n+1: an empty bucket
    starts and ends where the previous one ended): (n, offsets, auth lengths, digests, where
    the tags start). :func:`pack_index` writes a table edited in this form back."""
    n, ids, offsets, auth_lens, digests, tags_at = _sparse_fields(raw)
    sizes = np.zeros(n, np.int64)
    sizes[ids] = offsets[1:] - offsets[:-1]
    dense_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    dense_auth, dense_digests = np.zeros(n, np.int64), np.zeros(n, np.uint64)
    dense_auth[ids], dense_digests[ids] = auth_lens, digests
    return n, dense_offsets, dense_auth, dense_digests, tags_at


def pack_index(raw: bytes, offsets: np.ndarray, auth_lens: np.ndarray, digests: np.ndarray) -> bytes:
    """``raw`` with its table replaced by the dense fields given (``index_fields``'s form),
    keeping the tags written for the buckets still listed and the index's tag: what a
    forger without the key can do."""
    n, ids, _, _, _, tags_at = _sparse_fields(raw)
    tag_of = {int(r): raw[tags_at + TAG_BYTES * i : tags_at + TAG_BYTES * (i + 1)] for i, r in enumerate(ids)}
    keep = [r for r in range(n) if offsets[r + 1] > offsets[r]]
    starts = [int(offsets[r]) for r in keep]
    sparse_offsets = np.array(starts + [int(offsets[keep[-1] + 1]) if keep else 0], np.int64)
    table = (struct.pack("<8sqq", raw[:8], n, len(keep)) + np.array(keep, np.int64).tobytes()
             + sparse_offsets.tobytes() + auth_lens[keep].astype(np.int64).tobytes()
             + digests[keep].astype(np.uint64).tobytes())
    return table + b"".join(tag_of.get(r, bytes(TAG_BYTES)) for r in keep) + raw[-TAG_BYTES:]


def forge_bucket(out, reduce_id: int, bucket: bytes, auth_len: int) -> None:
    """Replaces one bucket (same size) and recomputes the index's unkeyed fields for it."""
    with open(out.index_path, "rb") as f:
        raw = f.read()
    n, offsets, auth_lens, digests, tags_at = index_fields(raw)
    start, end = int(offsets[reduce_id]), int(offsets[reduce_id + 1])
    assert len(bucket) == end - start
    write_at(out.data_path, start, bucket)
    auth_lens[reduce_id] = auth_len
    digests[reduce_id] = xxhash.xxh3_64_intdigest(bucket[auth_len:])
    with open(out.index_path, "wb") as f:
        f.write(pack_index(raw, offsets, auth_lens, digests))


@pytest.mark.parametrize("claim", ["pickled", "raw"])
def test_forged_shuffle_bucket_fails_the_fetch_and_is_never_unpickled(dirs, marker, registered, claim):
    writer = ShuffleWriter(dirs, key=KEY)
    buckets = [[(i, str(i)) for i in range(500)], [(i, -i) for i in range(500)], np.arange(1000.0)]
    out = writer.write(7, 2, buckets)
    assert [codec.decode(read_bucket(out, r, 7, 2)) for r in range(2)] == buckets[:2]
    size = out.bucket_bytes[0]
    forged = b"L" + evil_pickle(marker, size - 1)
    forge_bucket(out, 0, forged, size if claim == "pickled" else 1)
    with pytest.raises(FetchFailed, match="authentication") as info:
        read_bucket(out, 0, 7, 2)
    assert (info.value.shuffle_id, info.value.map_id) == (7, 2)  # the map task to rerun
    with pytest.raises(FetchFailed, match="authentication"):
        list(read_buckets([out], 7, 0))  # a reduce task's read: the key from the registry
    assert codec.decode(read_bucket(out, 1, 7, 2)) == buckets[1]  # the other buckets still read
    np.testing.assert_array_equal(codec.decode(read_bucket(out, 2, 7, 2)), buckets[2])
    assert not marker.exists()
    assert_live_forgery(lambda: codec.decode(forged), marker)


def test_empty_shuffle_buckets_are_accepted_only_under_the_index_tag(dirs, registered):
    """An empty bucket has no tag of its own: the index's tag vouches for it. An index
    forged to say a bucket is empty (dropping its records), or forged anywhere else in its
    table, fails every empty bucket; the other non-empty buckets still read by their tags."""
    writer = ShuffleWriter(dirs, key=KEY)
    buckets = [[(1, "a")], [], [(2, "b")], []]
    out = writer.write(3, 1, buckets)
    assert out.bucket_bytes[1] == out.bucket_bytes[3] == 0
    assert [codec.decode(read_bucket(out, r, 3, 1)) for r in range(4)] == buckets
    with open(out.index_path, "rb") as f:
        raw = f.read()
    n, offsets, auth_lens, digests, tags_at = index_fields(raw)
    offsets[1] = offsets[2]  # claim bucket 0 runs to the end of bucket 1: bucket 1 still empty
    offsets[0] = offsets[1]  # ... and bucket 0 is empty too: its record would be lost
    forged = pack_index(raw, offsets, auth_lens, digests)
    tmp = out.index_path + ".forged"
    with open(tmp, "wb") as f:
        f.write(forged)
    os.replace(tmp, out.index_path)  # a new file: the reader's cached index is not used
    with pytest.raises(FetchFailed, match="does not match its index|authentication"):
        read_bucket(out, 0, 3, 1)
    for r in (1, 3):
        with pytest.raises(FetchFailed, match="authentication"):
            read_bucket(out, r, 3, 1)
    assert codec.decode(read_bucket(out, 2, 3, 1)) == buckets[2]


def test_shuffle_index_changed_after_a_read_is_read_again(dirs, registered):
    """A reader keeps each index it read while the file is unchanged; a removed one is a
    FetchFailed at once, and a rewritten one is read again."""
    writer = ShuffleWriter(dirs, key=KEY)
    out = writer.write(4, 0, [[(1, 1)], []])
    assert codec.decode(read_bucket(out, 1, 4, 0)) == []
    os.remove(out.index_path)
    with pytest.raises(FetchFailed, match="missing"):
        read_bucket(out, 1, 4, 0)
    out2 = writer.write(4, 0, [[(5, 5)], [(6, 6)]])
    assert out2.index_path == out.index_path
    assert codec.decode(read_bucket(out2, 1, 4, 0)) == [(6, 6)]


def test_numeric_shuffle_buckets_authenticate_their_tag_byte_only(dirs, registered):
    out = ShuffleWriter(dirs, key=KEY).write(0, 0, [np.arange(100_000.0), [(1, 2)],
                                                    np.array([{"a": 1}], dtype=object)])
    with open(out.index_path, "rb") as f:
        _, _, auth_lens, _, _ = index_fields(f.read())
    assert auth_lens.tolist() == [1, out.bucket_bytes[1], out.bucket_bytes[2]]  # .npy numbers: tag byte
    np.testing.assert_array_equal(codec.decode(read_bucket(out, 0, 0, 0)), np.arange(100_000.0))
    assert codec.decode(read_bucket(out, 2, 0, 0))[0] == {"a": 1}


def test_numeric_npy_bucket_never_unpickles(marker):
    """A numeric bucket is read with allow_pickle=False: a forged ``N`` bucket holding an
    object array fails to decode instead of unpickling."""
    import io

    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.array([Evil(marker)], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle"):
        codec.decode(b"N" + buf.getvalue())
    assert not marker.exists()


# -- spilled aggregation buffers -----------------------------------------------------------
def test_forged_spill_file_is_never_unpickled(tmp_path, marker):
    mm = MemoryManager(1 << 20)
    agg = ExternalAggregator(Aggregator(lambda v: v, lambda a, b: a + b, lambda a, b: a + b), mm, 1, str(tmp_path))
    agg.insert_values((i, 1) for i in range(3000))
    agg._spill()
    agg.insert_values((i, 1) for i in range(3000))
    [path] = agg.spills
    with open(path, "rb") as f:
        raw = f.read()
    index, length, _ = struct.unpack_from("<QQ32s", raw)
    assert index == 0 and 40 + length < len(raw)  # several chunks
    forged = evil_pickle(marker, length)
    write_at(path, 40, forged)  # the first chunk's pickle, its frame kept
    with pytest.raises(SpillCorrupt, match="authentication"):
        dict(agg.items())
    assert not marker.exists()
    assert not list(tmp_path.glob("spill-*")) and mm.execution_used == 0  # released all the same
    assert_live_forgery(lambda: pickle.loads(forged), marker)


def test_truncated_spill_file_is_detected(tmp_path):
    mm = MemoryManager(1 << 20)
    agg = ExternalAggregator(Aggregator(lambda v: v, lambda a, b: a + b, lambda a, b: a + b), mm, 1, str(tmp_path))
    agg.insert_values((i, 1) for i in range(3000))
    agg._spill()
    [path] = agg.spills
    with open(path, "rb") as f:
        first_length = struct.unpack_from("<QQ", f.read(16))[1]
    os.truncate(path, 40 + first_length)  # whole chunks dropped: pairs would silently vanish
    with pytest.raises(SpillCorrupt, match="truncated"):
        dict(agg.items())


# -- source slices ----------------------------------------------------------------------------
def test_forged_source_slice_raises_a_clear_error_and_is_never_unpickled(tmp_path, marker):
    store = SourceStore(str(tmp_path), key=KEY)
    records = [[(i, f"r{i}") for i in range(1000)], [(i, i * 2) for i in range(1000)]]
    path = store.ship("u1", records + [np.arange(10.0)], list)
    assert load_slice(path, 0, key=KEY) == records[0]
    np.testing.assert_array_equal(load_slice(path, 2, key=KEY), np.arange(10.0))
    pkl = path.file(0)
    size = os.path.getsize(pkl)
    forged = evil_pickle(marker, size - 40)
    write_at(pkl, 40, forged)  # the body, its header kept
    with pytest.raises(SourceSliceError, match="fails authentication"):
        load_slice(path, 0, key=KEY)
    with pytest.raises(SourceSliceError, match="fails authentication"):
        load_slice(path, 1, key=new_key())  # another application's key
    with pytest.raises(SourceSliceError, match="no key"):
        load_slice(path, 1)  # a path under no application directory
    os.replace(path.file(1), pkl)  # a valid slice under another split's name
    with pytest.raises(SourceSliceError, match="fails authentication"):
        load_slice(path, 0, key=KEY)
    assert not marker.exists()
    assert_live_forgery(lambda: pickle.loads(forged), marker)


def test_source_store_without_a_key_reads_back_through_the_registry(tmp_path):
    store = SourceStore(str(tmp_path / "src"))
    (tmp_path / "src").mkdir()
    path = store.ship("u2", [[1, 2, 3]], list)
    assert load_slice(path, 0) == [1, 2, 3]


# -- file modes ----------------------------------------------------------------------------------
def modes(root) -> dict[str, int]:
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            out[os.path.join(d, n)] = stat.S_IMODE(os.stat(os.path.join(d, n)).st_mode)
    return out


def test_every_file_is_created_0600_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        d = tmp_path / "files"
        d.mkdir()
        DiskStore([str(d)]).put("b", [b"x" * 100], 100, "pickle")
        regions = RegionStore([str(d)])
        regions.put(BlockId(1, 0), np.arange(10))
        ShuffleWriter([str(d)]).write(0, 0, [[1], [2]])
        agg = ExternalAggregator(Aggregator(lambda v: v, lambda a, b: a + b, lambda a, b: a + b),
                                 MemoryManager(1 << 20), 1, str(d))
        agg.insert_values((i, 1) for i in range(10))
        agg._spill()
        SourceStore(str(d), key=KEY).ship("u", [[1, 2], np.arange(3.0)], list)
        found = modes(d)
        names = {os.path.basename(p) for p in found}
        assert {"b.blk", "shuffle_0_0.data", "shuffle_0_0.index", "0.pkl", "1.npy"} <= names
        assert any(n.startswith("region-") for n in names) and any(n.startswith("spill-") for n in names)
        assert not [n for n in names if n.endswith(".tmp")]
        assert {p: m for p, m in found.items() if m != 0o600} == {}
        regions.close()
        list(agg.items())
    finally:
        os.umask(old)


def test_a_jobs_files_are_0600_whatever_the_umask(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "s").mkdir()
    old = os.umask(0)
    try:
        # processes: the driver writes source slices, executors (which inherit the umask)
        # write blocks, extents and shuffle files
        with Context(backend="processes", executors=2, memory="16MB", parallelism=2, progress=False,
                     local_dirs=[str(tmp_path / "c")], shuffle_dirs=[str(tmp_path / "s")]) as c:
            big = [(i % 97, "x" * 40) for i in range(40_000)]  # over INLINE_BYTES: slices on disk
            pairs = c.parallelize(big, 4).persist(StorageLevel.DISK_ONLY)
            grouped = pairs.group_by_key(3).map_values(len).persist(StorageLevel.DISK_MMAP)
            assert sum(grouped.values().collect()) == 40_000
            found = {**modes(tmp_path / "c"), **modes(tmp_path / "s")}
            kinds = {os.path.splitext(p)[1] for p in found}
            assert {".blk", ".data", ".index", ".pkl", ".seg"} <= kinds
            assert {p: oct(m) for p, m in found.items() if m != 0o600} == {}
    finally:
        os.umask(old)


# -- through a Context -------------------------------------------------------------------------
def events_of(c, name: str) -> list:
    got: list = []
    lock = threading.Lock()

    def listen(e):
        if e["event"] == name:
            with lock:
                got.append(e)

    c.events.subscribe(listen)
    return got


@pytest.fixture
def threads_ctx(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "s").mkdir()
    c = Context(backend="threads", memory="64MB", parallelism=2, progress=False, local_dirs=[str(tmp_path / "c")],
                shuffle_dirs=[str(tmp_path / "s")])
    yield c
    c.stop()


def test_forged_disk_only_block_is_recomputed_from_lineage(threads_ctx, marker):
    c = threads_ctx
    lost = events_of(c, "BlockLost")
    ds = c.parallelize(range(4000), 4).map(lambda x: (x, x * x)).persist(StorageLevel.DISK_ONLY)
    expected = [(x, x * x) for x in range(4000)]
    assert ds.collect() == expected
    files = {bid.split: e.path for bid, e in c.disk_store.items() if bid.dataset_id == ds.id}
    assert sorted(files) == [0, 1, 2, 3]
    _, _, length, _, _, _, _ = read_header(files[1])
    forge_block(files[1], evil_pickle(marker, length), length)  # same size, XXH3 recomputed
    before = c.metrics()
    assert ds.collect() == expected
    assert [e["split"] for e in lost] == [1] and "authentication" in lost[0]["reason"]
    assert c.metrics()["misses"] - before["misses"] == 1  # recomputed from lineage, and stored again
    assert ds.collect() == expected and len(lost) == 1
    assert not marker.exists()


def test_forged_shuffle_file_reruns_the_map(threads_ctx, marker):
    c = threads_ctx
    failed = events_of(c, "FetchFailed")
    ds = c.parallelize(range(2000), 2).map(lambda x: (x % 5, x)).group_by_key(2).map_values(sorted)
    expected = sorted(ds.collect())
    [index] = [os.path.join(d, f) for d, _, names in os.walk(c.shuffle_dirs[0]) for f in names
               if f.endswith("_0.index")]
    from strataflow.shuffle.files import MapOutput

    out = MapOutput(index[: -len(".index")] + ".data", index, ())
    with open(index, "rb") as f:
        _, offsets, _, _, _ = index_fields(f.read())
    size = int(offsets[1] - offsets[0])
    forge_bucket(out, 0, b"L" + evil_pickle(marker, size - 1), size)
    assert sorted(ds.collect()) == expected
    assert failed and "authentication" in str(failed[0])
    assert not marker.exists()


def test_forged_source_slice_is_refused_and_sent_again_on_executor_processes(tmp_path, marker):
    """Processes backend: the driver writes the slices with the fleet's key and the
    executors, in other processes, read them with the same key; a forged one is refused
    before anything of it is unpickled, and the driver, which holds the collection, sends
    the slice itself and writes its file again: the answer is right."""
    (tmp_path / "c").mkdir()
    (tmp_path / "s").mkdir()
    with Context(backend="processes", executors=2, memory="64MB", parallelism=2, progress=False,
                 max_task_attempts=1, local_dirs=[str(tmp_path / "c")], shuffle_dirs=[str(tmp_path / "s")]) as c:
        lost = events_of(c, "SourceSliceLost")
        big = [(i, "y" * 30) for i in range(40_000)]
        ds = c.parallelize(big, 2)
        assert ds.count() == 40_000
        [pkl] = [os.path.join(d, f) for d, _, names in os.walk(tmp_path / "c") for f in names if f == "0.pkl"]
        write_at(pkl, 40, evil_pickle(marker, os.path.getsize(pkl) - 40))
        assert ds.map(lambda r: r[0]).sum() == sum(range(40_000))
        assert [(e["split"], e["rewritten"]) for e in lost] == [(0, True)]
        assert "fails authentication" in lost[0]["reason"]
        assert ds.count() == 40_000 and len(lost) == 1  # the file was written again: read from it
    assert not marker.exists()
