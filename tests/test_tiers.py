"""Disk tiers below memory (``strataflow/storage/disk/tiers.py``): movement down when a tier
fills (LRU within the tier), promotion up into room (never evicting), the bottom tier's
capacity, reads racing moves, per-tier status and metrics, configuration errors, the
bandwidth probe, hot blocks ending in the faster tier, and results equal to NONE for
every policy with tiers. Unit tests assert the contents of every tier after each step.
"""

from __future__ import annotations

import os
import re
import threading

import numpy as np
import pytest

from strataflow import Context, StorageLevel
from strataflow.cli import main as cli_main
from strataflow.config import ConfigError
from strataflow.storage.memory.unified import MemoryManager
from strataflow.storage.disk.disk_store import BlockUnavailable, DiskFull, DiskStore
from strataflow.storage.disk.kinds import TIER_KINDS
from strataflow.storage.manager import BlockId, BlockManager
from strataflow.storage.policies import make_policy
from strataflow.storage.disk.tier_spec import TierSpec, parse_bandwidth, parse_tiers
from strataflow.storage.disk.tiers import Tier, TieredStore

pytestmark = pytest.mark.usefixtures("no_leaks")

KB = 1024
BLOCK = 1000  # payload bytes of a unit-test block


def blob(i: int) -> bytes:
    return bytes([i % 251]) * BLOCK


@pytest.fixture(params=sorted(TIER_KINDS))
def kind(request) -> str:
    """The stack's rules hold whatever kind its tiers are: every registered kind."""
    return request.param


def _tier_store(kind: str, path, blocks: int | None):
    path.mkdir(exist_ok=True)
    cls = TIER_KINDS[kind]
    store = cls.from_spec(TierSpec(path.name, [str(path)], kind=kind), [str(path)], None, None)
    store.capacity = None if blocks is None else blocks * store.footprint(BLOCK, "pickle")
    return store


def two_tiers(tmp_path, top_blocks: int = 2, bottom_blocks: int | None = 3, events=None,
              kind: str = "disk") -> TieredStore:
    fast = _tier_store(kind, tmp_path / "fast", top_blocks)
    slow = _tier_store(kind, tmp_path / "slow", bottom_blocks)
    post = (lambda name, **f: events.append({"event": name, **f})) if events is not None else None
    return TieredStore([Tier("fast", fast), Tier("slow", slow)], post=post)


def layout(ts: TieredStore) -> dict[str, list]:
    return {name: sorted(b for b, _ in items) for name, items in ts.items_by_tier().items()}


def put(ts: TieredStore, i: int) -> None:
    ts.put(f"b{i}", [blob(i)], BLOCK, "pickle")


def check_files(ts: TieredStore) -> None:
    """Each tier's directory holds exactly its indexed blocks' files, and capacity holds."""
    for t in ts.tiers:
        names = {n for d in t.store.dirs for n in os.listdir(d)}
        assert len(names) == len(t.store.items())  # one file per block, none left behind
        assert t.capacity is None or t.used <= t.capacity
        assert t.used == sum(e.size for _, e in t.store.items())


# -- the tier stack ------------------------------------------------------------------------------
def test_a_full_tier_moves_its_least_recently_used_block_down(tmp_path, kind):
    events: list = []
    ts = two_tiers(tmp_path, events=events, kind=kind)
    put(ts, 0)
    put(ts, 1)
    assert layout(ts) == {"fast": ["b0", "b1"], "slow": []}
    ts.get("b0")  # b0 used: b1 is now the least recently used of the fast tier
    put(ts, 2)
    assert layout(ts) == {"fast": ["b0", "b2"], "slow": ["b1"]}
    assert [e["event"] for e in events] == ["BlockMoved"]
    assert events[0]["from"] == "fast" and events[0]["to"] == "slow" and events[0]["direction"] == "down"
    put(ts, 3)
    assert layout(ts) == {"fast": ["b2", "b3"], "slow": ["b0", "b1"]}
    for i in range(4):
        payload, ser, _ = ts.read(f"b{i}")
        assert bytes(payload) == blob(i) and ser == "pickle"
    check_files(ts)


def test_when_every_tier_is_full_the_block_goes_down_or_raises_disk_full(tmp_path, kind):
    ts = two_tiers(tmp_path, top_blocks=1, bottom_blocks=1, kind=kind)
    put(ts, 0)
    put(ts, 1)  # b0 moves down, b1 takes the fast tier
    assert layout(ts) == {"fast": ["b1"], "slow": ["b0"]}
    with pytest.raises(DiskFull, match="slow"):
        put(ts, 2)  # neither b1 can move down nor b2 fit below: the bottom's capacity holds
    assert layout(ts) == {"fast": ["b1"], "slow": ["b0"]}  # nothing lost on the way
    check_files(ts)


def test_a_block_larger_than_a_tier_goes_to_the_next_one(tmp_path, kind):
    ts = two_tiers(tmp_path, top_blocks=1, bottom_blocks=None, kind=kind)
    ts.put("big", [b"x" * (3 * BLOCK)], 3 * BLOCK, "pickle")
    assert layout(ts) == {"fast": [], "slow": ["big"]}


def test_promotion_moves_up_one_tier_only_into_room(tmp_path, kind):
    events: list = []
    ts = two_tiers(tmp_path, top_blocks=2, events=events, kind=kind)
    for i in range(4):
        put(ts, i)
    assert layout(ts) == {"fast": ["b2", "b3"], "slow": ["b0", "b1"]}
    payload, ser, tier = ts.read("b0")
    assert tier == "slow"
    assert not ts.promote("b0", payload, ser)  # the fast tier is full: no eviction to promote
    assert layout(ts) == {"fast": ["b2", "b3"], "slow": ["b0", "b1"]}
    ts.remove("b3")
    assert ts.promote("b0", payload, ser)
    assert layout(ts) == {"fast": ["b0", "b2"], "slow": ["b1"]}
    assert events[-1]["direction"] == "up" and events[-1]["to"] == "fast"
    assert not ts.promote("b0", payload, ser)  # already on top
    check_files(ts)


def test_a_corrupt_block_found_while_moving_is_dropped_with_block_lost(tmp_path, kind):
    events: list = []
    ts = two_tiers(tmp_path, top_blocks=1, events=events, kind=kind)
    put(ts, 0)
    (name,) = os.listdir(ts.tiers[0].store.dirs[0])  # its one block's file, whatever the kind names it
    with open(os.path.join(ts.tiers[0].store.dirs[0], name), "r+b") as f:
        f.seek(-1, os.SEEK_END)
        f.write(b"?")
    put(ts, 1)
    assert layout(ts) == {"fast": ["b1"], "slow": []}
    assert [e["event"] for e in events] == ["BlockLost"]
    check_files(ts)


def test_a_read_racing_a_move_down_and_back_up_reads_it_again(tmp_path, kind):
    """The race the churn test below met once in a full suite: a reader finds the block in
    the fast tier; before it opens the file the block moves down and is promoted back up
    (a new file where the old one was); its open fails on the old file, yet the index
    names the fast tier again. That is a move, not a bad file: the read goes on."""
    ts = two_tiers(tmp_path, top_blocks=2, bottom_blocks=None, kind=kind)
    put(ts, 0)
    fast = ts.tiers[0].store
    real_get, raced = fast.get, []

    def get_while_it_moves(block_id):
        if block_id == "b0" and not raced:
            raced.append(True)
            assert ts._move("b0", 0)  # down...
            payload, ser = ts.tiers[1].store.get("b0")
            assert ts.promote("b0", payload, ser)  # ...and back up: a new file
            raise BlockUnavailable("block file fast/b0.blk is missing")  # the old file, opened too late
        return real_get(block_id)

    fast.get = get_while_it_moves
    payload, _, tier = ts.read("b0")
    assert raced and bytes(payload) == blob(0) and tier == "fast"
    check_files(ts)


def test_readers_racing_moves_always_get_the_block(tmp_path, kind):
    ts = two_tiers(tmp_path, top_blocks=2, bottom_blocks=None, kind=kind)
    for i in range(3):
        put(ts, i)
    errors: list = []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            for i in range(3):
                try:
                    payload, _, _ = ts.read(f"b{i}")
                    if bytes(payload) != blob(i):
                        errors.append(f"b{i} wrong")
                except BlockUnavailable as exc:
                    errors.append(repr(exc))

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for n in range(40):  # churn: every put moves the LRU block of the fast tier down
            put(ts, 100 + n)
            ts.remove(f"b{100 + n}")
            for i in range(3):
                p, ser, tier = ts.read(f"b{i}")
                if tier == "slow":
                    ts.promote(f"b{i}", p, ser)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:3]
    check_files(ts)


# -- configuration -------------------------------------------------------------------------------------
def test_parse_tiers_reads_sizes_and_bandwidths(tmp_path):
    specs = parse_tiers([{"name": "ssd", "dirs": [str(tmp_path)], "capacity": "20MB", "bandwidth": "1.5GB/s"},
                         {"name": "hdd", "dirs": str(tmp_path / ".."), "write_parallelism": 1}])
    assert [s.name for s in specs] == ["ssd", "hdd"]
    assert specs[0].capacity == 20 << 20 and specs[0].bandwidth == 1.5 * (1 << 30)
    assert specs[1].capacity is None and specs[1].bandwidth is None and specs[1].write_parallelism == 1
    assert parse_bandwidth(1000) == 1000.0


@pytest.mark.parametrize("tiers, message", [
    ([{"name": "ssd", "dirs": ["/no/such/dir"]}], r"tiers\[0\] \('ssd'\)\.dirs: directory '/no/such/dir' does not exist"),
    ([{"name": "ssd"}], r"tiers\[0\] \('ssd'\)\.dirs: give at least one directory"),
    ([{"name": "ssd", "dirs": "TMP", "capacity": "lots"}], r"tiers\[0\] \('ssd'\)\.capacity: cannot read size 'lots'"),
    ([{"name": "ssd", "dirs": "TMP", "bandwidth": "fast"}], r"bandwidth: cannot read bandwidth 'fast'"),
    ([{"name": "ssd", "dirs": "TMP", "bandwidth": "1GB"}], r"write a size per second"),
    ([{"name": "ssd", "dirs": "TMP"}, {"name": "SSD", "dirs": "TMP2"}], r"duplicate tier name 'SSD'"),
    ([{"name": "memory", "dirs": "TMP"}], r"'memory' is the tier above"),
    ([{"name": "ssd", "dirs": "TMP", "size": 3}], r"unknown key\(s\) \['size'\]"),
    ([{"name": "", "dirs": "TMP"}], r"tiers\[0\]\.name"),
    ([{"name": "ssd", "dirs": "TMP"}, {"name": "hdd", "dirs": "TMP"}], r"more than one tier"),
    ([{"name": "ssd", "dirs": "TMP", "write_parallelism": 0}], r"write_parallelism"),
    ([], r"at least one tier"),
    ({"name": "ssd"}, r"expected a list"),
])
def test_bad_tier_configs_name_the_problem(tmp_path, tiers, message):
    (tmp_path / "b").mkdir()
    fix = {"TMP": str(tmp_path), "TMP2": str(tmp_path / "b")}
    if isinstance(tiers, list):
        tiers = [{k: fix.get(v, v) if isinstance(v, str) else v for k, v in t.items()} for t in tiers]
    with pytest.raises(ConfigError, match=message):
        Context(memory="8MB", parallelism=1, progress=False, local_dirs=[str(tmp_path)],
                shuffle_dirs=[str(tmp_path)], tiers=tiers)
    assert not [n for n in os.listdir(tmp_path) if n.startswith("strataflow-")]  # failed before making dirs


# -- through a Context ---------------------------------------------------------------------------------------
@pytest.fixture
def tier_dirs(tmp_path):
    out = {}
    for name in ("local", "ssd", "hdd"):
        (tmp_path / name).mkdir()
        out[name] = str(tmp_path / name)
    return out


def tiered_ctx(d: dict, policy=None, memory="2MB", ssd="600KB", hdd=None, **kw) -> Context:
    return Context(backend="threads", memory=memory, parallelism=2, progress=False, local_dirs=[d["local"]], shuffle_dirs=[d["local"]],
                   policy=policy, tiers=[{"name": "ssd", "dirs": [d["ssd"]], "capacity": ssd, "bandwidth": "1GB/s"},
                                         {"name": "hdd", "dirs": [d["hdd"]], "capacity": hdd}], **kw)


def test_status_and_metrics_break_bytes_and_hits_down_by_tier(tier_dirs):
    with tiered_ctx(tier_dirs) as c:
        ds = c.from_numpy(np.arange(160_000, dtype=np.float64).reshape(-1, 4), 8).persist(StorageLevel.DISK_ONLY)
        assert ds.map_partitions(lambda b: b.sum(keepdims=True)).collect()  # 8 blocks of 160 KB: 1.3 MB
        st = c.storage_status()
        (entry,) = st
        assert set(entry.tier_bytes) == {"ssd", "hdd"}
        assert entry.tier_bytes["ssd"] <= 600 * KB and entry.tier_bytes["hdd"] > 0
        assert sum(entry.tier_bytes.values()) == entry.disk_bytes
        assert [t["name"] for t in st.tiers] == ["ssd", "hdd"]
        assert st.tiers[0]["capacity"] == 600 * KB and st.tiers[0]["bandwidth"] == 1 << 30
        assert st.tier_bytes["memory"] == 0 and st.tier_bytes["ssd"] == entry.tier_bytes["ssd"]
        text = str(st)
        assert "ssd" in text and "hdd" in text and "read MiB/s" in text
        ds.map_partitions(lambda b: b.sum(keepdims=True)).collect()
        m = c.metrics()
        assert m["tier_hits"]["ssd"] + m["tier_hits"]["hdd"] == 8 == m["disk_hits"]
        assert m["tier_hits"]["memory"] == 0
        assert m["tier_bytes"] == c.storage_status().tier_bytes
        assert m["blocks_moved_down"] >= 1 and m["bytes_moved_between_tiers"] > 0
        ssd_dir, hdd_dir = c.disk_store.tiers[0].store.dirs[0], c.disk_store.tiers[1].store.dirs[0]
        assert ssd_dir.startswith(tier_dirs["ssd"]) and hdd_dir.startswith(tier_dirs["hdd"])
    assert os.listdir(tier_dirs["ssd"]) == [] and os.listdir(tier_dirs["hdd"]) == []  # removed at stop


def test_default_is_one_disk_tier_on_local_dirs(tier_dirs):
    with Context(memory="2MB", parallelism=1, progress=False, local_dirs=[tier_dirs["local"]],
                 shuffle_dirs=[tier_dirs["local"]], disk_capacity="10MB") as c:
        assert c.disk_store.names == ["disk"]
        assert c.disk_store.tiers[0].capacity == 10 << 20
        assert c.disk_store.tiers[0].store.dirs == c.local_dirs
        assert "tier" not in str(c.storage_status()).split("\n")[0]
        assert set(c.metrics()["tier_bytes"]) == {"memory", "disk"}


def test_the_bottom_tiers_capacity_is_enforced_with_block_not_stored(tier_dirs, caplog):
    with tiered_ctx(tier_dirs, ssd="200KB", hdd="200KB") as c:
        events: list = []
        c.events.subscribe(events.append)
        ds = c.from_numpy(np.arange(160_000, dtype=np.float64), 8).persist(StorageLevel.DISK_ONLY)
        with caplog.at_level("WARNING", logger="strataflow"):
            assert ds.map_partitions(lambda b: b.sum(keepdims=True)).collect()
        assert [r for r in caplog.records if "not cached" in r.getMessage()]
        assert all(t.used <= t.capacity for t in c.disk_store.tiers)
        reasons = [e["reason"] for e in events if e["event"] == "BlockNotStored"]
        assert reasons and all("tier" in r for r in reasons)
        again = ds.map_partitions(lambda b: b.sum(keepdims=True)).collect()  # recomputed, same answer
        assert np.allclose(np.ravel(again), np.arange(160_000, dtype=np.float64).reshape(8, -1).sum(1))


def test_hot_blocks_end_in_the_faster_tier(tmp_path):
    if not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable /dev/shm for a tmpfs tier")
    (tmp_path / "disk").mkdir()
    c = Context(memory="2MB", parallelism=1, progress=False, local_dirs=[str(tmp_path)], shuffle_dirs=[str(tmp_path)],
                tiers=[{"name": "shm", "dirs": ["/dev/shm"], "capacity": "700KB"},  # 4 blocks
                       {"name": "disk", "dirs": [str(tmp_path / "disk")]}])
    try:
        total = lambda d: d.map_partitions(lambda b: b.sum(keepdims=True)).collect()  # noqa: E731
        blocks = lambda n, v: c.from_numpy(np.full((n * 10_000, 2), v), n).persist(StorageLevel.DISK_ONLY)  # noqa: E731
        hot = blocks(2, 1.0)  # 2 blocks of 160 KB
        total(hot)
        scan = blocks(12, 0.0)
        total(scan)  # a scan fills the fast tier and pushes the hot blocks down to disk
        hot_status = lambda: next(d for d in c.storage_status() if d.num_partitions == 2 and d.name == hot.label)  # noqa: E731
        assert hot_status().tier_bytes["shm"] == 0
        scan.unpersist()  # room in the fast tier
        for i in range(4):  # the hot set is read again and again among small writes of new data
            total(hot)  # read from disk: promoted into the room (evicting nothing)
            total(hot)
            total(blocks(2, float(i + 2)))  # new blocks go to the top; the tier's LRU blocks move down
        st = hot_status()
        assert st.tier_bytes == {"shm": st.disk_bytes, "disk": 0}, st
        assert c.metrics()["blocks_moved_up"] == 2
        assert c.metrics()["tier_hits"]["shm"] >= 6
    finally:
        c.stop()
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"strataflow-{c.app_id}")]


@pytest.mark.parametrize("level", [StorageLevel.MEMORY_AND_DISK, StorageLevel.MEMORY_AND_DISK_SER,
                                   StorageLevel.DISK_ONLY])
def test_results_equal_none_for_every_policy_with_tiers(tier_dirs, policy, level):
    with tiered_ctx(tier_dirs, policy=policy, memory="1MB", ssd="300KB") as c:
        base = c.from_numpy(np.arange(120_000, dtype=np.float64).reshape(-1, 3), 6)
        want = [base.map(lambda r: float(r.sum()) + k).sum() for k in range(3)]
        ds = base.map_partitions(lambda b: b * 2.0).persist(level)
        got = [ds.map(lambda r: float(r.sum()) / 2 + k).sum() for k in range(3)]
        assert got == want
        recs = c.parallelize(range(30_000), 5).map(lambda x: (x, str(x))).persist(level)
        assert [recs.count(), recs.map(lambda kv: kv[0]).sum()] == [30_000, sum(range(30_000))]
        assert [recs.count(), recs.map(lambda kv: kv[0]).sum()] == [30_000, sum(range(30_000))]
        assert all(t.capacity is None or t.used <= t.capacity for t in c.disk_store.tiers)


# -- bandwidth ------------------------------------------------------------------------------------------------
def test_measure_takes_the_cold_read_figure_unless_configured(tmp_path):
    calls = []

    def probe(directory, size, cold):
        calls.append((directory, size, cold))
        return {"read_mb_per_s": 100.0 if cold else 900.0, "write_mb_per_s": 50.0, "mode": "cold" if cold else "warm"}

    given = Tier("ssd", DiskStore([str(tmp_path)]), bandwidth=5.0)
    measured = Tier("hdd", DiskStore([str(tmp_path)]))
    out = measured.measure(1 << 20, probe=probe)
    given.measure(1 << 20, probe=probe)
    assert out["cold"]["read_mb_per_s"] == 100.0 and out["warm"]["read_mb_per_s"] == 900.0
    assert measured.bandwidth == 100.0 * (1 << 20) and given.bandwidth == 5.0
    assert [c[2] for c in calls] == [True, False, True, False]


def test_measure_tiers_runs_the_real_probe(tier_dirs):
    with tiered_ctx(tier_dirs) as c:
        got = c.measure_tiers("4MB")
        assert set(got) == {"ssd", "hdd"}
        assert got["hdd"]["cold"]["read_mb_per_s"] > 0 and got["hdd"]["warm"]["mode"] == "warm"
        assert c.disk_store.tiers[0].bandwidth == 1 << 30  # configured: kept
        assert c.disk_store.tiers[1].bandwidth > 0  # measured
        assert not [n for n in os.listdir(c.disk_store.tiers[1].store.dirs[0]) if "probe" in n]


def test_probe_command_prints_cold_and_warm(tmp_path, capsys):
    assert cli_main(["probe", str(tmp_path), "--size", "4MB"]) == 0
    out = capsys.readouterr().out
    assert " cold: " in out and " warm: " in out and "read" in out and "write" in out


# -- the block manager over tiers ---------------------------------------------------------------------------
def test_block_manager_promotes_between_tiers_on_a_disk_hit(tmp_path, kind):
    ts = two_tiers(tmp_path, top_blocks=3, bottom_blocks=None, kind=kind)
    mm = MemoryManager(1 << 20, 0.5)
    bm = BlockManager(mm, ts, make_policy("no-recache"))
    bm.register(1, lambda: "ds", StorageLevel.DISK_ONLY, "pickle", 6)
    value = lambda s: np.full(100, float(s))  # noqa: E731 - ~900 byte pickles
    for s in range(6):
        bm.get_or_compute(BlockId(1, s), StorageLevel.DISK_ONLY, lambda s=s: value(s))
    below = [b for b, _ in ts.items_by_tier()["slow"]]
    assert below
    ts.remove(ts.items_by_tier()["fast"][0][0])  # room for one
    got = bm.get_or_compute(below[0], StorageLevel.DISK_ONLY, lambda: pytest.fail("recomputed"))
    assert np.array_equal(got, value(below[0].split))
    assert ts.tier_of(below[0]) == "fast"
    assert bm.metrics.snapshot()["blocks_moved_up"] == 1 and bm.metrics.tier_hits() == {"slow": 1}
    bm.close()


@pytest.mark.parametrize("slots", [1, 2])
def test_writes_to_one_tier_are_bounded_in_parallelism(tmp_path, slots):
    store = DiskStore([str(tmp_path)])
    ts = TieredStore([Tier("only", store, write_parallelism=slots)])
    real, now, peak, guard = store.put, [0], [0], threading.Lock()

    def counting_put(*a, **k):
        with guard:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        try:
            threading.Event().wait(0.02)
            return real(*a, **k)
        finally:
            with guard:
                now[0] -= 1

    store.put = counting_put
    threads = [threading.Thread(target=put, args=(ts, i)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == slots and len(ts.items()) == 6


def test_run_command_takes_tiers_and_async_eviction(tmp_path, capsys):
    import json

    from strataflow.cli import parse_tier

    assert parse_tier("shm:/a,/b:1GB:2GB/s") == {"name": "shm", "dirs": ["/a", "/b"], "capacity": "1GB",
                                                 "bandwidth": "2GB/s"}
    for bad in ("shm", ":/a", "shm:", "a:/b:1GB:1GB/s:x"):  # argparse puts "argument --tier: " in front
        with pytest.raises(Exception, match=rf"^(expected NAME:DIR.* or .*, got|too many ':' fields in) {bad!r}$"):
            parse_tier(bad)
    # the keyed form carries a kind (and its own keys); ``dir`` repeats; ':' is fine in a value
    assert parse_tier("name=ssd,kind=disk,dir=/a,dir=/b:c,capacity=10GB,bandwidth=1GB/s,write_parallelism=3") == {
        "name": "ssd", "kind": "disk", "dirs": ["/a", "/b:c"], "capacity": "10GB", "bandwidth": "1GB/s",
        "write_parallelism": 3}
    assert parse_tier("name=ssd,dir=/a") == {"name": "ssd", "dirs": ["/a"]}
    for bad, part in [("name=ssd,kind=tape,dir=/a", rf"kind='tape' .* known: {re.escape(str(sorted(TIER_KINDS)))}"),
                      ("name=ssd,dir=/a,size=1GB", r"unknown key\(s\) \['size'\]"),
                      ("name=ssd,dir=/a,capacity", r"'capacity' in .* is not KEY=VALUE"),
                      ("name=ssd,name=hdd,dir=/a", r"'name' given twice"),
                      ("name=ssd,capacity=1GB", r"needs name= and at least one dir="),
                      ("name=ssd,dir=/a,write_parallelism=two", r"write_parallelism='two' .* not a whole number")]:
        with pytest.raises(Exception, match=part):
            parse_tier(bad)
    fast, slow = tmp_path / "fast", tmp_path / "slow"
    fast.mkdir()
    slow.mkdir()
    data, out = tmp_path / "km", tmp_path / "r.json"
    assert cli_main(["gen", "kmeans", "--out", str(data), "--points", "20000", "--format", "npy"]) == 0
    code = cli_main(["run", "kmeans", "--data", str(data), "--memory", "1MB", "--iterations", "2", "--quiet",
                     "--tier", f"fast:{fast}:1MB", "--tier", f"slow:{slow}", "--async-eviction",
                     "--json", str(out)])
    assert code == 0
    rep = json.loads(out.read_text())
    m = rep["metrics"]
    assert rep["result_check"] == "ok"
    assert {"memory", "fast", "slow"} <= set(m["tier_hits"])
    assert m["tier_hits"]["fast"] > 0 and m["tier_hits"]["slow"] > 0  # 3 MB of points: both tiers hold some
    assert "hits by tier" in capsys.readouterr().out
