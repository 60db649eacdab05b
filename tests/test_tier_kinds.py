"""Tier kinds: every registered kind satisfies the written contract
(``storage/tier_store.py``), and a new kind is one class plus a ``kind`` key -- proved by
a kind defined here, registered for these tests only, and used by a job through
``Context(tiers=...)``."""

from __future__ import annotations

import errno
import os
import re
import threading
from typing import Any

import numpy as np
import pytest

from strataflow import Context, StorageLevel
from strataflow.config import ConfigError
from strataflow.storage.blocks import app_keys
from strataflow.storage.blocks.frame_auth import FrameAuth, new_key
from strataflow.storage.disk.disk_store import DiskStore
from strataflow.storage.disk.kinds import TIER_KINDS, register_tier_kind, tier_kind
from strataflow.storage.disk.tier_spec import TierSpec
from strataflow.storage.mapped.region_store import RegionStore
from strataflow.storage.stores import build_stores, store_class_of
from strataflow.storage.tier_store import BlockUnavailable, DiskFull, StackedStore, StoreEntry, TierStore

pytestmark = pytest.mark.usefixtures("no_leaks")

BLOCK = 4000


def payload(i: int) -> bytes:
    return bytes([i % 251]) * BLOCK


def make(kind: str, path, capacity: int | None = None, key: bytes | None = None, **options: Any) -> StackedStore:
    path.mkdir(exist_ok=True)
    spec = TierSpec("t", [str(path)], capacity, kind=kind, options=options)
    return tier_kind(kind).from_spec(spec, [str(path)], capacity, key)


# -- the contract, for every registered kind -------------------------------------------------------
@pytest.fixture(params=sorted(TIER_KINDS))
def kind(request) -> str:
    return request.param


def test_a_kind_satisfies_the_protocols(kind, tmp_path):
    store = make(kind, tmp_path / "s")
    assert isinstance(store, StackedStore) and isinstance(store, TierStore)
    assert store.dirs == [str(tmp_path / "s")] and store.used == 0 and store.items() == []


def test_put_get_entry_items_remove_and_accounting(kind, tmp_path):
    store = make(kind, tmp_path / "s", capacity=10 * BLOCK)
    entry = store.put("b0", [payload(0)], BLOCK, "pickle")
    assert isinstance(entry, StoreEntry) and entry.size == store.footprint(BLOCK, "pickle")
    assert "b0" in store and store.entry("b0") == entry and store.items() == [("b0", entry)]
    assert store.used == entry.size and store.free == 10 * BLOCK - entry.size
    got, ser = store.get("b0")
    assert bytes(got) == payload(0) and ser == "pickle"
    assert store.put("b0", [payload(9)], BLOCK, "pickle") == entry  # already here: not written again
    assert store.used == entry.size
    assert store.remove("b0") == entry and "b0" not in store and store.used == 0
    assert store.remove("b0") is None
    with pytest.raises(BlockUnavailable):
        store.get("b0")


def test_no_room_raises_disk_full_and_reserves_nothing(kind, tmp_path):
    store = make(kind, tmp_path / "s", capacity=store_bytes(kind, tmp_path, 2))
    store.put("b0", [payload(0)], BLOCK, "pickle")
    store.put("b1", [payload(1)], BLOCK, "pickle")
    used = store.used
    with pytest.raises(DiskFull):
        store.put("b2", [payload(2)], BLOCK, "pickle")
    assert store.used == used and "b2" not in store and store.free is not None and store.free >= 0


def store_bytes(kind: str, tmp_path, blocks: int) -> int:
    return blocks * make(kind, tmp_path / "probe").footprint(BLOCK, "pickle")


def test_a_store_never_hands_back_bytes_it_has_not_verified(kind, tmp_path):
    store = make(kind, tmp_path / "s")
    store.put("b0", [payload(0)], BLOCK, "pickle")
    for d in store.dirs:
        for name in os.listdir(d):
            with open(os.path.join(d, name), "r+b") as f:
                f.seek(-1, os.SEEK_END)
                last = f.read(1)
                f.seek(-1, os.SEEK_END)
                f.write(bytes([last[0] ^ 0xFF]))
    with pytest.raises(BlockUnavailable):
        store.get("b0")


def test_concurrent_puts_of_one_block_write_it_once(kind, tmp_path):
    store = make(kind, tmp_path / "s")
    entries: list = []
    threads = [threading.Thread(target=lambda: entries.append(store.put("b", [payload(3)], BLOCK, "pickle")))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(entries)) == 1 and store.used == entries[0].size


def test_a_peer_reads_an_entry_by_the_class_whose_entry_it_is(kind, tmp_path):
    key = new_key()
    store = make(kind, tmp_path / "s", key=key)
    entry = store.put("b0", [payload(4)], BLOCK, "pickle")
    auth = FrameAuth(key)
    app_keys.register(store.dirs, auth)
    try:
        cls = store_class_of(entry)
        assert cls is not None and isinstance(store, cls)
        value, nbytes = cls.load_entry(entry, lambda p, ser: (bytes(p), ser))
        assert value == (payload(4), "pickle") and nbytes == BLOCK
        store.remove("b0")
        with pytest.raises(BlockUnavailable):
            cls.load_entry(entry, lambda p, ser: bytes(p))
    finally:
        app_keys.unregister(store.dirs, auth)


def test_the_mapped_store_satisfies_the_common_protocol(tmp_path):
    from strataflow.storage.blocks.block import BlockId

    key = new_key()
    regions = RegionStore([str(tmp_path)], capacity=1 << 30, key=key)
    auth = FrameAuth(key)
    app_keys.register([str(tmp_path)], auth)
    try:
        assert isinstance(regions, TierStore) and not isinstance(regions, StackedStore)
        bid = BlockId(1, 0)
        entry = regions.put(bid, np.arange(1000.0))
        assert isinstance(entry, StoreEntry) and regions.items() == [(bid, entry)] and bid in regions
        assert regions.used >= entry.size > 0 and regions.free == (1 << 30) - regions.used
        assert store_class_of(entry) is RegionStore
        value, nbytes = RegionStore.load_entry(entry, lambda p, s: None)
        assert np.array_equal(value, np.arange(1000.0)) and nbytes == entry.size
        del value
        assert regions.remove(bid) == entry and regions.remove(bid) is None and regions.used == 0
    finally:
        app_keys.unregister([str(tmp_path)], auth)
        regions.close()


def test_the_factory_builds_each_tier_by_its_kind(kind, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "local").mkdir()
    specs = [TierSpec("a", [str(tmp_path / "a")], 1 << 20, kind=kind)]
    stores = build_stores(specs, [[str(tmp_path / "a")]], [str(tmp_path / "local")], None, executors=2, key=None)
    try:
        (tier,) = stores.tiers.tiers
        assert type(tier.store) is TIER_KINDS[kind] and tier.capacity == 1 << 19  # each executor's share
    finally:
        stores.regions.close()


# -- a new kind: one class plus a ``kind`` key ---------------------------------------------------------
def _count(value: Any, option: str) -> int:
    if isinstance(value, str) and value.isdigit():  # from the CLI
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{option}: expected a number of blocks >= 1, got {value!r}")
    return value


class FewBlocks(DiskStore):
    """A tier capped in blocks, not bytes (say, a device with few inodes): the test double."""

    spec_options = {"max_blocks": _count}

    def __init__(self, dirs: list[str], capacity: int | None = None, key: bytes | None = None,
                 max_blocks: int = 1) -> None:
        super().__init__(dirs, capacity, key=key)
        self.max_blocks = max_blocks

    @classmethod
    def from_spec(cls, spec: TierSpec, dirs, capacity, key) -> "FewBlocks":
        return cls(list(dirs), capacity, key=key, max_blocks=spec.options.get("max_blocks", 1))

    @property
    def free(self) -> int | None:  # no room once full by count: the stack then moves blocks down
        return 0 if len(self.items()) >= self.max_blocks else super().free

    def put(self, block_id, frames, payload_size, serializer):
        if block_id not in self and len(self.items()) >= self.max_blocks:
            raise DiskFull(errno.ENOSPC, f"tier holds its {self.max_blocks} blocks already")
        return super().put(block_id, frames, payload_size, serializer)


@pytest.fixture
def few_blocks_kind():
    register_tier_kind("few", FewBlocks)
    try:
        yield "few"
    finally:
        del TIER_KINDS["few"]


def test_registering_a_class_that_is_not_a_tier_store_names_what_it_lacks():
    with pytest.raises(TypeError, match=r"lacks \[.*'from_spec'"):
        register_tier_kind("bad", dict)
    assert "bad" not in TIER_KINDS


def test_a_new_kind_serves_a_job_under_memory_pressure(few_blocks_kind, tmp_path):
    for name in ("local", "few", "rest"):
        (tmp_path / name).mkdir()
    tiers = [{"name": "small", "kind": few_blocks_kind, "dirs": [str(tmp_path / "few")], "max_blocks": 2},
             {"name": "big", "dirs": [str(tmp_path / "rest")]}]
    with Context(backend="threads", memory="1MB", parallelism=1, progress=False, local_dirs=[str(tmp_path / "local")],
                 shuffle_dirs=[str(tmp_path / "local")], tiers=tiers) as c:
        data = np.arange(200_000, dtype=np.float64).reshape(-1, 4)  # 10 blocks of 160 KB: 1.6 MB
        ds = c.from_numpy(data, 10).persist(StorageLevel.MEMORY_AND_DISK)
        sums = lambda: np.ravel(ds.map_partitions(lambda b: b.sum(keepdims=True)).collect())  # noqa: E731
        expected = data.reshape(10, -1).sum(1)
        assert np.allclose(sums(), expected)
        assert np.allclose(sums(), expected)  # read back: memory and both tiers serve it
        small, big = c.disk_store.tiers
        assert type(small.store) is FewBlocks and small.store.max_blocks == 2
        assert len(small.store.items()) == 2 and len(big.store.items()) >= 1  # spilled past the cap
        m = c.metrics()
        assert m["tier_hits"]["small"] > 0 and m["tier_hits"]["big"] > 0 and m["blocks_moved_down"] >= 1
        (entry,) = c.storage_status()
        assert entry.memory_partitions + entry.disk_partitions >= 10 and entry.tier_bytes["small"] > 0


def test_a_kinds_own_keys_are_checked_with_the_config(few_blocks_kind, tmp_path):
    base = {"name": "small", "kind": few_blocks_kind, "dirs": [str(tmp_path)]}
    for bad, message in [({**base, "max_blocks": 0}, r"tiers\[0\] \('small'\)\.max_blocks: expected a number"),
                         ({**base, "max_block": 2}, r"unknown key\(s\) \['max_block'\] for a tier of kind 'few'"),
                         ({**base, "kind": "nvme"}, rf"unknown tier kind 'nvme'; known: {re.escape(str(sorted(TIER_KINDS)))}"),
                         ({"name": "d", "dirs": [str(tmp_path)], "max_blocks": 2}, r"for a tier of kind 'disk'")]:
        with pytest.raises(ConfigError, match=message):
            Context(memory="8MB", parallelism=1, progress=False, local_dirs=[str(tmp_path)],
                    shuffle_dirs=[str(tmp_path)], tiers=[bad])


def test_the_cli_carries_a_kind_and_its_options(few_blocks_kind, tmp_path):
    import argparse

    from strataflow.cli import parse_tier

    assert parse_tier(f"name=small,kind=few,dir={tmp_path},max_blocks=2") == {
        "name": "small", "kind": "few", "dirs": [str(tmp_path)], "max_blocks": "2"}
    with pytest.raises(argparse.ArgumentTypeError, match=r"unknown key\(s\) \['max_block'\] .* kind 'few'"):
        parse_tier(f"name=small,kind=few,dir={tmp_path},max_block=2")
    with Context(backend="threads", memory="8MB", parallelism=1, progress=False, local_dirs=[str(tmp_path)],
                 shuffle_dirs=[str(tmp_path)], tiers=[parse_tier(f"name=small,kind=few,dir={tmp_path},max_blocks=3")]) as c:
        (tier,) = c.disk_store.tiers
        assert type(tier.store) is FewBlocks and tier.store.max_blocks == 3
