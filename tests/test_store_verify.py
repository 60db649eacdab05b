"""A store's block digests checked once per version of a file (``verify="store"``,
``store/verified.py``, the default) instead of at the first read in each process: which
reads hash, and that a block changed after its check is hashed again and refused.

A fresh process is this process with its maps dropped (``forget_maps``): its reads then
start from the files and the records alone. The hashes are counted by wrapping the digest
function the block reader calls."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from strataflow import Context
from strataflow.storage.blocks.frame_auth import FrameAuth, new_key
from strataflow.store import Store, StoreError
from strataflow.store import blockfile, verified
from strataflow.store.blockfile import forget_maps
from strataflow.store.errors import BlockCorrupt


class _CountingXXH:
    """``xxhash`` as the block reader uses it, counting the digests of whole extents."""

    def __init__(self, real):
        self.real, self.calls = real, 0

    def xxh3_64_intdigest(self, data):
        self.calls += 1
        return self.real.xxh3_64_intdigest(data)

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.fixture
def hashes(monkeypatch):
    counting = _CountingXXH(blockfile.xxhash)
    monkeypatch.setattr(blockfile, "xxhash", counting)
    return counting


def _ctx(root):
    return Context(memory="64MB", parallelism=2, backend="threads", progress=False, store=root)


DATA = np.arange(4096.0 * 4).reshape(-1, 4)


def _save(root, name="nums"):
    with _ctx(root) as ctx:
        ctx.store.save(ctx.from_numpy(DATA, 4), name)
        return ctx.store.info(name).id


def _read(root, name="nums"):
    forget_maps()  # as a fresh process: no map, nothing verified in memory
    with _ctx(root) as ctx:
        return np.concatenate(ctx.store.open(name).collect_partitions())


def _block(root, did, partition):
    return os.path.join(root, "data", did, f"part-{partition:05d}.sfb")


def _damage(path, keep_mtime=False):
    """One byte of the numbers flipped with a plain write (as damage through the file system
    would be); ``keep_mtime`` puts the mtime back afterwards, as ``touch -r`` would."""
    st = os.stat(path)
    with open(path, "r+b") as fh:
        fh.seek(st.st_size - 9000)
        b = fh.read(1)
        fh.seek(st.st_size - 9000)
        fh.write(bytes([b[0] ^ 0xFF]))
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert os.stat(path).st_mtime_ns == st.st_mtime_ns


def test_the_default_is_once_per_file_version(tmp_path):
    assert Store(str(tmp_path / "store")).root.verify == "store"


def test_with_verify_process_every_process_hashes_each_file_it_reads_and_no_record_is_kept(tmp_path, hashes):
    root = str(tmp_path / "store")
    Store(root, verify="process")
    did = _save(root)
    assert Store(root).root.verify == "process"
    hashes.calls = 0
    assert (_read(root) == DATA).all()
    assert hashes.calls == 4
    assert not os.path.exists(os.path.join(root, "verified", did))


def test_with_verify_store_the_writer_checks_each_file_once_and_later_readers_do_not_hash(tmp_path, hashes):
    root = str(tmp_path / "store")
    Store(root, verify="store")
    did = _save(root)
    assert hashes.calls == 4  # the writer read each file back and hashed it
    assert sorted(os.listdir(os.path.join(root, "verified", did))) == [f"part-{i:05d}.ok" for i in range(4)]
    hashes.calls = 0
    for _ in range(2):  # two later "processes"
        assert (_read(root) == DATA).all()
    assert hashes.calls == 0


@pytest.mark.parametrize("keep_mtime", [False, True])
@pytest.mark.parametrize("fresh", [True, False])
def test_a_block_changed_after_its_check_is_hashed_again_and_refused(tmp_path, hashes, keep_mtime, fresh):
    root = str(tmp_path / "store")
    Store(root, verify="store")
    did = _save(root)
    with _ctx(root) as ctx:
        ds = ctx.store.open("nums")
        assert (np.concatenate(ds.collect_partitions()) == DATA).all()  # mapped here, trusted
        _damage(_block(root, did, 2), keep_mtime)
        if fresh:
            forget_maps()
        with pytest.raises(Exception, match=r"'nums' .*partition 2: block file .*part-00002\.sfb fails its checksum"):
            ds.collect()


def test_a_record_not_made_with_the_stores_key_or_of_another_version_is_not_trusted(tmp_path, hashes):
    root = str(tmp_path / "store")
    Store(root, verify="store")
    did = _save(root)
    path, records = _block(root, did, 1), os.path.join(root, "verified", did)
    stale = open(os.path.join(records, "part-00001.ok"), "rb").read()
    _damage(path)
    st, digest = os.stat(path), json.loads(stale[:-32])["digest"]
    verified.record(records, 1, st, digest, FrameAuth(new_key()))  # matches the file, wrong key
    with pytest.raises(Exception, match="partition 1: block file .*fails its checksum"):
        _read(root)
    with open(os.path.join(records, "part-00001.ok"), "wb") as fh:
        fh.write(stale)  # the right key, the version before the damage
    with pytest.raises(Exception, match="partition 1: block file .*fails its checksum"):
        _read(root)
    assert not verified.trusted(records, 1, st, digest, Store(root).root.auth)


def test_a_reader_that_hashes_leaves_a_record_for_the_next(tmp_path, hashes):
    root = str(tmp_path / "store")
    Store(root, verify="process")
    did = _save(root)  # written by a "process" store: no records
    Store(root, verify="store")
    hashes.calls = 0
    assert (_read(root) == DATA).all()
    assert hashes.calls == 4
    assert len(os.listdir(os.path.join(root, "verified", did))) == 4
    hashes.calls = 0
    assert (_read(root) == DATA).all()
    assert hashes.calls == 0


def test_the_mode_is_the_stores_recorded_with_its_tiers_and_checked(tmp_path):
    root = str(tmp_path / "store")
    Store(root, verify="store")
    assert Store(root).root.verify == "store"
    Store(root, tiers=[{"name": "mem", "dir": root}, {"name": "disk", "dir": str(tmp_path / "disk")}])
    again = Store(root).root
    assert again.verify == "store" and [t.name for t in again.tiers] == ["mem", "disk"]
    Store(root, verify="process")
    again = Store(root).root
    assert again.verify == "process" and [t.name for t in again.tiers] == ["mem", "disk"]
    with pytest.raises(StoreError, match="verify='sometimes'"):
        Store(root, verify="sometimes")
    cfg = os.path.join(root, "store.json")
    with open(cfg) as fh:
        raw = json.load(fh)
    with open(cfg, "w") as fh:
        json.dump({**raw, "verify": "never"}, fh)
    with pytest.raises(StoreError, match="verify='never' is not one of"):
        Store(root)
    again = Store(root, tiers=[{"name": "mem", "dir": root}]).root  # given tiers replace it, as before
    assert again.verify == "store" and json.load(open(cfg))["verify"] == "store"  # the default


def test_removing_a_dataset_removes_its_records(tmp_path):
    root = str(tmp_path / "store")
    store = Store(root, verify="store")
    did = _save(root)
    other = _save(root, "kept")
    store.rm("nums")
    assert not os.path.exists(os.path.join(root, "verified", did))
    assert len(os.listdir(os.path.join(root, "verified", other))) == 4


def test_a_block_moved_down_a_tier_is_a_new_file_hashed_again_once(tmp_path, hashes):
    root, disk = str(tmp_path / "store"), str(tmp_path / "disk")
    Store(root, verify="store", tiers=[{"name": "mem", "dir": root}, {"name": "disk", "dir": disk}])
    did = _save(root)
    store = Store(root, tiers=[{"name": "mem", "dir": root, "capacity": "1KB"}, {"name": "disk", "dir": disk}])
    assert store.balance() and len([f for f in os.listdir(os.path.join(disk, "data", did)) if f.endswith(".sfb")]) == 4
    hashes.calls = 0
    assert (_read(root) == DATA).all()
    assert hashes.calls == 4  # copies: other inodes than the records name
    hashes.calls = 0
    assert (_read(root) == DATA).all()
    assert hashes.calls == 0


def test_a_missing_block_is_still_refused_with_records_on(tmp_path):
    root = str(tmp_path / "store")
    store = Store(root, verify="store")
    with pytest.raises(BlockCorrupt, match="is gone"):
        blockfile.read_block(str(tmp_path / "nowhere.sfb"), "x", 0, store.root.auth, "a missing block",
                             store.root.records_dir("x"))


def _faults_touching(buf):
    import resource
    a = np.frombuffer(buf, dtype=np.uint8)
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    int(a[::4096].sum())  # one byte of every page
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before


@pytest.fixture
def shm_file():
    """A file of 2048 pages in ``/dev/shm``, the default store's tier (tmpfs: small pages, so
    a plain map faults them in 16 at a time; a disk file system's large folios fault fewer)."""
    import tempfile
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    fd, path = tempfile.mkstemp(dir="/dev/shm", prefix="sf-test-map-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(np.ones(8 << 20, dtype=np.uint8).tobytes())
    yield path
    os.unlink(path)


def test_a_block_is_mapped_with_its_page_tables_filled_and_no_descriptor_left(shm_file, monkeypatch):
    path = shm_file
    fds = len(os.listdir("/proc/self/fd"))
    assert blockfile.MAP_MODE == "populate_read"  # the default (STRATAFLOW_STORE_MAP unset in tests)
    populated = blockfile.map_block(path)
    assert len(os.listdir("/proc/self/fd")) == fds
    monkeypatch.setattr(blockfile, "MAP_MODE", "plain")
    plain = blockfile.map_block(path)
    at_touch, populated_touch = _faults_touching(plain), _faults_touching(populated)
    assert at_touch >= 2048 // 16 // 2 and populated_touch <= at_touch // 8, (at_touch, populated_touch)
