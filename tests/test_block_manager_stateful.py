"""A hypothesis state machine drives the block manager with puts (reads of new blocks),
reads, unpersists, execution-memory pressure, corrupted files, concurrent readers and
failing disk writes, against a plain-dict model of what each block's value must be. The
machine is set up with one disk or two small disk tiers with capacities, and with or
without the asynchronous eviction writer.

Invariants checked after every step:
- accounted storage never exceeds the budget, and equals the sum of the memory store's
  entry sizes; storage + execution <= total;
- a block the manager holds (in memory or on disk, not corrupted) is served without
  recomputation, and every value served equals the model's;
- the block files in the cache directory are exactly the disk store's records, with no
  temporary file left behind;
- memory blocks belong to memory-capable levels and disk blocks to disk-capable levels;
- no block is lost silently: a block once held is still held (memory or a tier), or an
  event said why not (``BlockDropped`` to discarded, ``BlockNotStored``, ``BlockLost``);
- every tier's bytes stay within its capacity and equal the sizes of its files;
- no file descriptor or thread leaks (checked at teardown).
"""

from __future__ import annotations

import os
import threading

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, precondition, rule

from conftest import registered_policies
from strataflow.storage.memory.unified import MemoryManager
from strataflow.storage.disk.disk_store import DiskStore
from strataflow.storage.disk.tiers import Tier, TieredStore
from strataflow.storage.level import StorageLevel
from strataflow.storage.manager import BlockId, BlockManager
from strataflow.storage.policies import make_policy
from strataflow.storage.mapped.region_store import RegionStore

LEVELS = [l for l in StorageLevel.all() if l.is_valid]
TOTAL = 160 * 1024
SPLITS = 6


def expected_value(dataset_id: int, split: int, kind: str):
    rows = 500 + 700 * ((dataset_id + split) % 5)  # 4-28 KB blocks against a 160 KB budget
    if kind == "batch":
        return np.full(rows, dataset_id * 1000 + split, dtype=np.float64)
    return [(dataset_id, split, i, f"r{i}") for i in range(rows // 20)]


def same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    return a == b


class BlockManagerMachine(RuleBasedStateMachine):
    datasets = Bundle("datasets")

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.tmp = tempfile.TemporaryDirectory(prefix="sf-stateful-")
        self.fds_before = len(os.listdir("/proc/self/fd"))
        self.model: dict[int, tuple] = {}  # dataset id -> (level, kind)
        self.next_id = 0
        self.computed: list[BlockId] = []
        self.corrupted: set[BlockId] = set()
        self.task_ids = iter(range(10**6, 2 * 10**6))

    @initialize(policy=st.sampled_from(registered_policies()), fraction=st.sampled_from([0.0, 0.5, 1.0]),
                tiered=st.booleans(), async_eviction=st.booleans())
    def setup(self, policy, fraction, tiered, async_eviction):
        self.memory = MemoryManager(TOTAL, fraction)
        if tiered:  # two small tiers: 64 KB above 192 KB, against 4-28 KB blocks
            tiers = []
            for name, cap in (("fast", 64 * 1024), ("slow", 192 * 1024)):
                os.mkdir(os.path.join(self.tmp.name, name))
                tiers.append(Tier(name, DiskStore([os.path.join(self.tmp.name, name)], capacity=cap)))
            self.disk = TieredStore(tiers)
            self.stores = [t.store for t in tiers]
        else:
            self.disk = DiskStore([os.path.join(self.tmp.name)])
            self.stores = [self.disk]
        self.regions = RegionStore([self.tmp.name], segment_bytes=64 * 1024)
        self.bm = BlockManager(self.memory, self.disk, make_policy(policy), regions=self.regions,
                               async_eviction=async_eviction, watermarks=(0.6, 0.8), async_wait_s=0.2)
        self.held_views: list = []  # (value handed out, expected) kept across unpersist and eviction
        self.ever_held: set = set()  # blocks seen held after a read
        self.released: set = set()  # str(block) of blocks an event said were dropped, not stored or lost
        self.bm.events.subscribe(self._on_event)

    def _on_event(self, e: dict) -> None:
        if (e["event"] in ("BlockNotStored", "BlockLost")
                or (e["event"] == "BlockDropped" and e["to"] == "discarded")):
            self.released.add(e["block"])

    def _held(self, bid: BlockId) -> bool:
        return bid in self.bm.memory_store or bid in self.disk or bid in self.regions

    def _settle(self) -> None:
        """Waits for the background writer to be idle (a write in progress has a temporary
        file and moves blocks between stores)."""
        assert self.bm.writer.wait_idle(10), "the eviction writer never went idle"

    # -- rules ---------------------------------------------------------------------------
    @rule(target=datasets, level=st.sampled_from(LEVELS), kind=st.sampled_from(["batch", "records"]),
          serializer=st.sampled_from([None, "pickle", "pickle5"]))
    def persist(self, level, kind, serializer):
        did = self.next_id
        self.next_id += 1
        self.bm.register(did, lambda did=did: f"ds#{did}", level, serializer, SPLITS)
        self.model[did] = (level, kind)
        return did

    def _read(self, did: int, split: int) -> None:
        level, kind = self.model[did]
        bid = BlockId(did, split)
        held = (bid in self.bm.memory_store or bid in self.disk or bid in self.regions) and bid not in self.corrupted
        before = len(self.computed)

        def compute():
            self.computed.append(bid)
            return expected_value(did, split, kind)

        value = self.bm.get_or_compute(bid, level, compute)
        assert same(value, expected_value(did, split, kind)), f"wrong value for {bid}"
        if level.mmap and len(self.held_views) < 8:
            self.held_views.append((value, expected_value(did, split, kind)))
        if held:
            assert len(self.computed) == before, f"{bid} was held but recomputed"
        self.corrupted.discard(bid)
        if self._held(bid):
            self.ever_held.add(bid)
            self.released.discard(str(bid))

    @rule(did=datasets, split=st.integers(0, SPLITS - 1))
    def read(self, did, split):
        if did in self.model:
            self._read(did, split)

    @rule(did=datasets)
    def scan(self, did):
        """A whole pass over a dataset, as an iteration of an iterative job does."""
        if did in self.model:
            for split in range(SPLITS):
                self._read(did, split)

    @rule(target=datasets, level=st.sampled_from([l for l in LEVELS if l.use_disk and not l.mmap]),
          kind=st.sampled_from(["batch", "records"]))
    def persist_and_scan(self, level, kind):
        """A new dataset of a tiered level, read whole at once: pressure on memory and tiers."""
        did = self.persist(level, kind, None)
        for split in range(SPLITS):
            self._read(did, split)
        return did

    @rule(did=datasets)
    def unpersist(self, did):
        if did in self.model:
            self.bm.unregister(did)
            del self.model[did]
            assert not any(b.dataset_id == did for b, _ in self.bm.memory_store.items())
            assert not any(b.dataset_id == did for b, _ in self.disk.items())

    @rule(size=st.integers(1, TOTAL), hold=st.booleans())
    def execution_pressure(self, size, hold):
        tid = next(self.task_ids)
        self.memory.task_started(tid)
        got = self.memory.acquire_execution(size, tid)
        assert 0 <= got <= size
        assert self.memory.storage_used + self.memory.execution_used <= TOTAL
        if not hold:
            self.memory.task_finished(tid)
        else:
            self.held_task = tid

    @precondition(lambda self: getattr(self, "held_task", None) is not None)
    @rule()
    def release_execution(self):
        self.memory.task_finished(self.held_task)
        self.held_task = None

    @invariant()
    def held_views_stay_valid(self):
        """A reader holding a mapped value keeps it valid after unpersist and eviction."""
        for value, want in getattr(self, "held_views", []):
            assert same(value, want)

    @rule(n=st.integers(1, 4), how=st.sampled_from(["async", "disk"]))
    def fail_writes(self, n, how):
        """The next ``n`` disk writes fail: only the background writer's ("async": it turns
        itself off and the cache goes on synchronously), or every write to the top store
        ("disk": EIO, as a failing device does)."""
        if how == "async":
            real = self.bm.eviction.write_victim
            left = [n]

            def failing(victim, strict=False, real=real, left=left):
                if strict and left[0] > 0:  # strict: the writer's writes
                    left[0] -= 1
                    raise OSError(5, "injected write failure (async writer)")
                return real(victim, strict)

            self.bm.eviction.write_victim = failing
        else:
            store = self.stores[0]
            real_put = store.put
            left = [n]

            def failing_put(*a, real_put=real_put, left=left, **k):
                if left[0] > 0:
                    left[0] -= 1
                    raise OSError(5, "injected write failure (device)")
                return real_put(*a, **k)

            store.put = failing_put

    @rule(pick=st.integers(0, 10**6), how=st.sampled_from(["flip", "truncate", "delete"]))
    def corrupt_a_block_file(self, pick, how):
        """Draws do not depend on the state (which the background writer's timing shapes),
        so hypothesis can replay a failing run."""
        self._settle()
        on_disk = [b for b, _ in self.disk.items() if b not in self.bm.memory_store and b not in self.corrupted]
        if not on_disk:
            return
        bid = sorted(on_disk)[pick % len(on_disk)]
        path = self.disk.entry(bid).path
        if how == "delete":
            os.remove(path)
        elif how == "truncate":
            with open(path, "r+b") as f:
                f.truncate(max(0, os.path.getsize(path) // 2))
        else:
            with open(path, "r+b") as f:
                f.seek(os.path.getsize(path) - 1)
                last = f.read(1)
                f.seek(os.path.getsize(path) - 1)
                f.write(bytes([last[0] ^ 0x55]))
        self.corrupted.add(bid)
        self.lost_files = getattr(self, "lost_files", set()) | {path}

    @rule(picks=st.lists(st.tuples(st.integers(0, 50), st.integers(0, SPLITS - 1)), min_size=2, max_size=6))
    def concurrent_readers(self, picks):
        ids = sorted(self.model)
        if not ids:
            return
        errors: list = []

        def reader(did, split):
            level, kind = self.model[did]
            try:
                v = self.bm.get_or_compute(BlockId(did, split), level, lambda: expected_value(did, split, kind))
                if not same(v, expected_value(did, split, kind)):
                    errors.append(f"wrong value for {did}/{split}")
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(repr(exc))

        chosen = [(ids[i % len(ids)], s) for i, s in picks]
        threads = [threading.Thread(target=reader, args=c) for c in chosen]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.corrupted -= {BlockId(d, s) for d, s in chosen}  # read again: recomputed if corrupted
        assert not errors, errors

    # -- invariants ------------------------------------------------------------------------
    @invariant()
    def nothing_lost_silently(self):
        if not hasattr(self, "bm"):
            return
        for bid in list(self.ever_held):
            if bid.dataset_id not in self.model:
                self.ever_held.discard(bid)
                continue
            assert self._held(bid) or str(bid) in self.released or bid in self.corrupted, \
                f"{bid} was held and is gone without an event"

    @invariant()
    def tier_capacities(self):
        if not hasattr(self, "bm"):
            return
        self._settle()  # a write in progress has reserved its bytes before its entry exists
        for store in self.stores:
            assert store.capacity is None or store.used <= store.capacity
            assert store.used == sum(e.size for _, e in store.items())

    @invariant()
    def accounting(self):
        if not hasattr(self, "bm"):
            return
        with self.memory.lock:
            used = self.bm.memory_store.used
            assert self.memory.storage_used == used
            assert used + self.memory.execution_used <= TOTAL

    @invariant()
    def levels_respected(self):
        if not hasattr(self, "bm"):
            return
        for bid, entry in self.bm.memory_store.items():
            level = self.model[bid.dataset_id][0]
            assert level.use_memory and entry.deserialized == level.deserialized
        for bid, _ in self.disk.items():
            assert self._spills_to(bid.dataset_id) == "tiers"
        for bid, _ in self.regions.entries():
            assert self._spills_to(bid.dataset_id) == "mapped"

    def _spills_to(self, did) -> str | None:
        """Where the dataset's blocks may go below memory: its level's, or for AUTO the
        form its first block fixed (``DatasetInfo.mapped``)."""
        level = self.model[did][0]
        if level.auto:
            return "mapped" if self.bm.info(did).mapped else "tiers"
        return "mapped" if level.mmap else "tiers" if level.use_disk else None

    @invariant()
    def files_match_records(self):
        if not hasattr(self, "bm"):
            return
        self._settle()
        names = {n for n in os.listdir(self.tmp.name) if os.path.isfile(os.path.join(self.tmp.name, n))}
        segments = {os.path.basename(p) for p in self.regions.segments()}
        assert {n for n in names if n.endswith(".seg")} == segments  # region files match the index
        files = {os.path.join(d, n) for st_ in self.stores for d in st_.dirs for n in os.listdir(d)
                 if os.path.isfile(os.path.join(d, n)) and not n.endswith(".seg")}
        assert not [f for f in files if f.endswith(".tmp")]
        recorded = {e.path for st_ in self.stores for _, e in st_.items()}
        lost = getattr(self, "lost_files", set())
        assert recorded - lost <= files
        assert files <= recorded | lost

    def teardown(self):
        if hasattr(self, "bm"):
            self.bm.close()
            assert not self.bm.writer.running, "the eviction writer was not joined"
            for did in list(self.model):
                self.bm.unregister(did)
            assert self.memory.storage_used == 0
            assert not [n for n in os.listdir(self.tmp.name) if n.endswith(".seg")]  # regions freed whole
            for store in self.stores:
                for d in store.dirs:
                    assert not [n for n in os.listdir(d) if n.endswith(".blk") and
                                os.path.join(d, n) not in getattr(self, "lost_files", set())]
        if hasattr(self, "regions"):
            self.regions.close()
        self.tmp.cleanup()
        self.held_views = []
        if hasattr(self, "bm"):
            del self.bm
        import gc

        gc.collect()
        assert len(os.listdir("/proc/self/fd")) <= self.fds_before, "file descriptors leaked"


BlockManagerMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
TestBlockManager = BlockManagerMachine.TestCase
