"""The ``lineage`` policy: Belady's rule with predicted next uses.

- its decisions, one by one, on a policy object: the furthest predicted use goes first, a
  new block used later than everything in memory is not admitted, a block read from disk
  in a loop is never promoted by evicting (no thrash), a plan orders the predictions and
  the prefetches;
- with no knowledge it *is* ``adaptive``: the same answers to every call (random first
  passes through the simulator's block-manager model, compared call for call);
- end to end on a real Context: results equal NONE's; a K-means-like loop under pressure
  drops and reads from disk no more than ``no-recache``; memory given back by execution is
  refilled by prefetch; the scheduler's ``plan`` names the persisted blocks each stage
  reads, in task order.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strataflow import Context, StorageLevel
from strataflow.simulate import CacheModel, Trace
from strataflow.storage.manager import BlockId
from strataflow.storage.policies import Promotion, make_policy
from strataflow.storage.policies.adaptive import AdaptivePolicy
from strataflow.storage.policies.lineage import LineagePolicy
from waits import wait_for

MD = StorageLevel.MEMORY_AND_DISK
KB = 1024
MB = 1 << 20


def B(d: int, s: int) -> BlockId:
    return BlockId(d, s)


def loop(policy: LineagePolicy, blocks: list, passes: int) -> None:
    """``passes`` reads of ``blocks`` in order: the first pass as misses (admit + put),
    the next ones as memory hits."""
    for i in range(passes):
        for b in blocks:
            if i == 0:
                policy.admit(b, 100)
                policy.record_access(b, "put")
            else:
                policy.record_access(b, "memory")


# -- decisions --------------------------------------------------------------------------------------
def test_registered_with_its_capability_flags():
    p = make_policy("lineage")
    assert isinstance(p, LineagePolicy) and p.name == "lineage" and not p.recache_after_spill
    assert p.plans and p.prefetches


def test_execution_memory_evicts_the_furthest_predicted_use():
    p = LineagePolicy()
    blocks = [B(1, s) for s in range(6)]
    loop(p, blocks, 3)  # each block's reuse distance is 6; the last read is used last
    entries = {b: 100 for b in blocks}
    assert p.select_victims(250, None, entries) == [B(1, 5), B(1, 4), B(1, 3)]
    assert p.next_use(B(1, 0)) < p.next_use(B(1, 5))


def test_a_new_block_used_later_than_everything_is_not_admitted():
    p = LineagePolicy()
    blocks = [B(1, s) for s in range(4)]
    loop(p, blocks, 2)
    new = B(2, 0)
    assert p.admit(new, 100)
    # nothing is known about the new block, everything about memory: bypass (to disk)
    assert p.select_victims(100, new, {b: 100 for b in blocks}) is None
    # but it may take the place of a block nothing is known about either (adaptive's rule)
    stranger = B(3, 0)
    p.admit(stranger, 100)
    p.record_access(stranger, "put")
    assert p.select_victims(100, new, {**{b: 100 for b in blocks}, stranger: 100}) == [stranger]


def test_a_block_used_sooner_is_promoted_by_evicting_later_ones():
    """Two hot blocks read between every cold block (reuse distance 3 against 12): a hot
    block read from disk evicts cold blocks, the furthest first."""
    p = LineagePolicy()
    hot, cold = [B(1, s) for s in range(2)], [B(2, s) for s in range(4)]
    for i in range(2):
        for c in cold:
            for h in hot:
                if i == 0 and c == cold[0]:
                    p.admit(h, 100)
                    p.record_access(h, "put")
                else:
                    p.record_access(h, "memory")
            if i == 0:
                p.admit(c, 100)
                p.record_access(c, "put")
            else:
                p.record_access(c, "memory")
    p.record_remove(hot[0])
    p.record_access(hot[0], "disk")
    assert p.promote(hot[0], 100) is Promotion.MAY_EVICT
    victims = p.select_victims(200, hot[0], {c: 100 for c in cold} | {hot[1]: 100})
    assert victims == [cold[3], cold[2]]  # read last, due last
    # a cold block read from disk is due after everything in memory: not promoted
    p.record_remove(cold[0])
    p.record_access(cold[0], "disk")
    assert p.promote(cold[0], 100) is Promotion.NO


def test_no_thrash_in_a_loop_larger_than_memory():
    """In a loop, a block read from disk is due a whole iteration later, after every block
    in memory: it is not promoted at all (neither by evicting nor into free memory)."""
    p = LineagePolicy()
    blocks = [B(1, s) for s in range(8)]
    for b in blocks:  # first pass: 4 in memory, 4 spilled
        p.admit(b, 100)
        if b.split < 4:
            p.record_access(b, "put")
    for _ in range(3):
        for b in blocks:
            if b.split < 4:
                p.record_access(b, "memory")
            else:
                p.record_access(b, "disk")
                assert p.promote(b, 100) is Promotion.NO


def test_a_block_read_twice_in_a_row_does_not_evict_one_due_next_iteration():
    """K-means' first iteration reads each point block twice (once to derive a persisted
    dataset): promoting it for the second read would evict a block due next iteration,
    one hit won now, one lost then, bytes moved for nothing."""
    p = LineagePolicy()
    blocks = [B(1, s) for s in range(4)]
    for b in blocks:  # first pass: block 0 in memory, the others on disk
        p.admit(b, 100)
    p.record_access(blocks[0], "put")
    p.plan([x for b in blocks for x in (b, b)])  # each task reads its block twice
    p.record_access(blocks[0], "memory")
    p.record_access(blocks[0], "memory")
    p.record_access(blocks[1], "disk")  # due again at once (planned), block 0 only next iteration
    assert p.next_use(blocks[1]) < p.next_use(blocks[0])
    assert p.promote(blocks[1], 100) is Promotion.INTO_FREE  # into free memory only


def test_plan_orders_predictions_and_prefetches():
    p = LineagePolicy()
    a, b, c, d = B(1, 0), B(1, 1), B(1, 2), B(1, 3)
    p.plan([c, a, b])
    assert p.next_use(c) < p.next_use(a) < p.next_use(b)
    assert p.next_use(d) == float("inf")
    on_disk = {a: 100, b: 100, c: 100, d: 100}
    assert p.prefetch_candidates(250, on_disk) == [c, a]
    assert p.prefetch_candidates(0, on_disk) == []
    p.record_access(c, "disk")  # consumed: c is not read again in this stage
    assert p.prefetch_candidates(1000, on_disk) == [a, b]
    # an eviction writer's headroom is not free memory: the block manager passes free less
    # its reserve (see test_async_eviction), so 250 free with 150 reserved is 100 of room
    assert p.prefetch_candidates(100, on_disk) == [a]


def test_no_prefetch_of_blocks_due_after_executions_next_eviction():
    """A shuffle that takes memory back every few accesses evicts what is due last: a
    block due after that moment is not loaded into the memory it will take back."""
    p = LineagePolicy()
    blocks = [B(1, s) for s in range(20)]
    p.plan(blocks)
    entries = {B(2, 0): 100}
    for i in range(10):  # execution memory evicts every 5 accesses
        p.record_access(blocks[i], "disk")
        if i % 5 == 4:
            p.select_victims(100, None, entries)
    on_disk = {b: 100 for b in blocks[10:]}
    got = p.prefetch_candidates(10_000, on_disk)
    assert got and set(got) < set(on_disk) and got == blocks[10:10 + len(got)] and len(got) <= 5


def test_a_prefetched_block_evicted_unused_is_not_prefetched_again_until_read():
    p = LineagePolicy()
    a = B(1, 0)
    p.plan([a])
    assert p.prefetch_candidates(100, {a: 100}) == [a]
    p.record_access(a, "put")  # loaded by the block manager
    p.record_remove(a)  # and evicted before any task read it
    assert p.prefetch_candidates(100, {a: 100}) == []
    p.record_access(a, "disk")
    p.plan([a])
    assert p.prefetch_candidates(100, {a: 100}) == [a]


def test_promotion_answer_is_the_call_s_own():
    """Whether a promotion may evict is the answer itself, not state another thread could
    read in between (it was a thread-local flag read after the call)."""
    p = LineagePolicy()
    blocks = [B(1, s) for s in range(4)]
    loop(p, blocks, 2)
    answers = {}

    def other(b):
        answers[b] = p.promote(b, 100)

    threads = [threading.Thread(target=other, args=(b,)) for b in blocks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(isinstance(a, Promotion) for a in answers.values()) and len(answers) == 4


def test_concurrent_calls_keep_the_policy_consistent():
    p = LineagePolicy()
    blocks = [B(d, s) for d in (1, 2) for s in range(16)]
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(400):
                b = blocks[int(rng.integers(len(blocks)))]
                k = int(rng.integers(6))
                if k == 0:
                    p.record_access(b, "memory")
                elif k == 1:
                    p.record_access(b, "disk")
                    p.promote(b, 100)
                elif k == 2:
                    p.admit(b, 100)
                    p.record_access(b, "put")
                elif k == 3:
                    p.select_victims(200, b if rng.integers(2) else None, {x: 100 for x in blocks[:8]})
                elif k == 4:
                    p.plan(blocks[: int(rng.integers(len(blocks)))])
                else:
                    p.prefetch_candidates(300, {x: 100 for x in blocks[8:]})
                    p.record_remove(b)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# -- no knowledge: exactly adaptive ---------------------------------------------------------------
class Recorder:
    """Wraps a policy and records every answer it gives."""

    def __init__(self, inner):
        self.inner = inner
        self.log: list = []

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args):
            out = attr(*args)
            self.log.append((name, args if name != "select_victims" else args[:2], out))
            return out

        return call


class RecordingModel(CacheModel):
    pass


@st.composite
def first_passes(draw):
    """Every block read once (no knowledge), execution memory taken and given back."""
    n = draw(st.integers(2, 24))
    ops: list = []
    for s in range(n):
        ops.append(("read", B(draw(st.integers(1, 3)), s), draw(st.sampled_from([100, 200, 300]))))
        k = draw(st.integers(0, 5))
        if k == 0:
            ops.append(("exec", draw(st.sampled_from([100, 300, 600]))))
        elif k == 1:
            ops.append(("free", 0))
    return Trace("first-pass", ops, draw(st.sampled_from([300, 600, 1000])), draw(st.sampled_from([0.0, 0.5])))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first_passes())
def test_without_knowledge_lineage_is_adaptive(trace):
    runs = []
    for cls in (AdaptivePolicy, LineagePolicy):
        model = CacheModel(cls(), trace.capacity, trace.storage_fraction)
        tally = model.run(trace)
        runs.append((vars(tally), dict(model.mem), dict(model.disk)))
    assert runs[0] == runs[1]


def test_without_knowledge_the_answers_are_adaptives_call_by_call():
    rng = np.random.default_rng(3)
    a, lin = AdaptivePolicy(), LineagePolicy()
    mem: dict = {}
    for s in range(40):
        b = B(int(rng.integers(1, 4)), s)
        size = int(rng.integers(1, 4)) * 100
        assert a.admit(b, size) == lin.admit(b, size)
        space = int(rng.integers(0, 500))
        want = a.select_victims(space, b if s % 3 else None, dict(mem))
        assert lin.select_victims(space, b if s % 3 else None, dict(mem)) == want
        for v in want or []:
            mem.pop(v)
            a.record_remove(v)
            lin.record_remove(v)
        mem[b] = size
        a.record_access(b, "put")
        lin.record_access(b, "put")
        assert lin.promote(b, size) is a.promote(b, size)


# -- end to end --------------------------------------------------------------------------------------
def _ctx(tmp_path, policy, memory="1MB", parallelism=2):
    local = tmp_path / f"local-{policy if isinstance(policy, str) else policy.name}"
    local.mkdir(exist_ok=True)
    return Context(backend="threads", memory=memory, parallelism=parallelism, progress=False, policy=policy,
                   local_dirs=[str(local)], shuffle_dirs=[str(local)])


def _workload(c, level):
    """A few transformations over persisted data under pressure: maps, a zip, a shuffle,
    a union and a coalesce, read several times."""
    rng = np.random.default_rng(0)
    x = c.from_numpy(rng.normal(size=(60_000, 2)), 12).map_partitions(lambda a: a * 2).persist(level)
    y = c.from_numpy(np.arange(60_000.0), 12).map_partitions(lambda a: a + 1).persist(level)
    out = []
    for _ in range(3):
        out.append(round(float(x.map_partitions(lambda a: [a.sum()]).sum()), 6))
        out.append(round(float(y.map_partitions(lambda a: [a.sum()]).sum()), 6))
        z = x.zip_partitions(y, f=lambda a, b: [float((a[:, 0] * b).sum())])
        out.append(round(sum(z.collect()), 6))
    keyed = y.map_partitions(lambda a: [(int(v) % 7, float(v)) for v in a[:500]])
    out.append(sorted(keyed.reduce_by_key(lambda p, q: p + q).collect()))
    out.append(round(float(x.union(x).coalesce(3).map_partitions(lambda a: [a.size]).sum()), 6))
    return out


def test_results_equal_none(tmp_path):
    with _ctx(tmp_path, "lineage") as c:
        got = _workload(c, MD)
        assert c.metrics()["blocks_dropped"] > 0  # there was pressure
    with _ctx(tmp_path, "no-recache", memory="64MB") as c:
        want = _workload(c, StorageLevel.NONE)
    assert got == want


def _kmeans_like(tmp_path, policy):
    """Points and weights persisted MEMORY_AND_DISK at about 3x the memory; each iteration
    reads both (zip), then shuffles the partial sums (execution memory). One task thread:
    the same access order in every run."""
    with _ctx(tmp_path, policy, memory="1MB", parallelism=1) as c:
        rng = np.random.default_rng(1)
        pts = rng.normal(size=(60_000, 4))
        P = c.from_numpy(pts, 12).map_partitions(lambda a: a * 1.0).persist(MD)
        W = c.from_numpy(np.ones(60_000), 12).map_partitions(lambda a: a + 0).persist(MD)
        cent = pts[:3].copy()
        for _ in range(8):
            def step(a, w, cent=cent):
                k = ((a[:, None, :] - cent[None]) ** 2).sum(-1).argmin(1)
                return [(j, ((a[k == j] * w[k == j, None]).sum(0), float(w[k == j].sum()))) for j in range(3)]
            sums = dict(P.zip_partitions(W, f=step).reduce_by_key(lambda p, q: (p[0] + q[0], p[1] + q[1])).collect())
            cent = np.array([sums[j][0] / max(1.0, sums[j][1]) for j in range(3)])
        return cent, c.metrics()


def test_kmeans_like_loop_drops_no_more_than_no_recache(tmp_path):
    c_lin, m_lin = _kmeans_like(tmp_path, "lineage")
    c_nr, m_nr = _kmeans_like(tmp_path, "no-recache")
    np.testing.assert_allclose(c_lin, c_nr)
    assert m_lin["misses"] == m_nr["misses"] == 24  # computed once each, never lost
    assert m_nr["bytes_dropped"] > 0 and m_nr["disk_hits"] > 0  # under pressure
    assert m_lin["blocks_dropped"] <= m_nr["blocks_dropped"]
    assert m_lin["bytes_dropped"] <= m_nr["bytes_dropped"]
    assert m_lin["disk_bytes_written"] <= m_nr["disk_bytes_written"]
    # memory the shuffles give back is refilled with the blocks read next
    assert m_lin["memory_hits"] > m_nr["memory_hits"] and m_lin["disk_hits"] < m_nr["disk_hits"]


def test_memory_given_back_is_refilled_by_prefetch(tmp_path):
    """Execution memory evicts blocks, then is given back: the blocks the next stage reads
    are prefetched into it (no-recache leaves it empty)."""
    with _ctx(tmp_path, "lineage", memory="4MB", parallelism=1) as c:
        data = c.from_numpy(np.arange(1_600_000.0).reshape(-1, 2), 8).map_partitions(lambda a: a + 1).persist(MD)
        want = (np.arange(1_600_000.0) + 1).sum()
        for _ in range(3):  # 12.8 MB in 1.6 MB blocks against 4 MB: learnt as a loop
            assert data.map_partitions(lambda a: [a.sum()]).sum() == want
        task = 10 ** 9
        c.memory.task_started(task)
        assert c.memory.acquire_execution(2 << 20, task) > 0  # evicts blocks
        c.memory.task_finished(task)
        before = c.metrics()
        assert data.map_partitions(lambda a: [a.sum()]).sum() == want
        # the prefetch runs in the background: wait for it (the bound only guards a hang)
        wait_for(lambda: c.metrics().get("blocks_prefetched", 0) > before.get("blocks_prefetched", 0),
                 what="a block to be prefetched")
        assert data.map_partitions(lambda a: [a.sum()]).sum() == want


class SpyPolicy(LineagePolicy):
    def __init__(self):
        super().__init__()
        self.planned: list = []

    def plan(self, accesses):
        self.planned.append(list(accesses))
        super().plan(accesses)


def test_scheduler_plans_the_persisted_blocks_each_stage_reads(tmp_path):
    spy = SpyPolicy()
    with _ctx(tmp_path, spy, memory="64MB", parallelism=2) as c:
        a = c.from_numpy(np.arange(4_000.0), 4).map_partitions(lambda x: x * 2).persist(MD)
        b = a.map_partitions(lambda x: x + 1).persist(MD)
        plain = b.map_partitions(lambda x: x - 1)
        plain.count()  # b absent: its tasks compute b from a, so a is read too
        assert spy.planned[-1] == [B(b.id, 0), B(a.id, 0), B(b.id, 1), B(a.id, 1),
                                 B(b.id, 2), B(a.id, 2), B(b.id, 3), B(a.id, 3)]
        plain.count()  # b stored: only b is read
        assert spy.planned[-1] == [B(b.id, s) for s in range(4)]
        c.scheduler.run_job(plain, lambda tc, v: len(v), partitions=[2, 0])
        assert spy.planned[-1] == [B(b.id, 2), B(b.id, 0)]
        n = len(spy.planned)
        keyed = b.map_partitions(lambda x: [(int(v) % 3, 1) for v in x]).reduce_by_key(lambda p, q: p + q)
        vals = (np.arange(4_000) * 2 + 1) % 3
        assert sorted(keyed.collect()) == [(k, int((vals == k).sum())) for k in range(3)]
        map_plan, result_plan = spy.planned[n:n + 2]
        assert map_plan == [B(b.id, s) for s in range(4)]  # the shuffle-map stage reads b
        assert result_plan == []  # the reduce stage reads shuffle files only
        c.parallelize(range(10), 2).count()
        assert spy.planned[-1] == []


class AccessLog(SpyPolicy):
    """Also records every access the block manager reports (reads and puts of computed
    blocks), per thread, in order."""

    def __init__(self):
        super().__init__()
        self.seen: dict = {}

    def record_access(self, block_id, where):
        if where in ("memory", "disk"):
            self.seen.setdefault(threading.get_ident(), []).append(block_id)
        super().record_access(block_id, where)

    def admit(self, block_id, size):
        self.seen.setdefault(threading.get_ident(), []).append(block_id)
        return super().admit(block_id, size)


@pytest.mark.parametrize("memory", ["64MB", "1MB"])  # all in memory; 4 MB of points under pressure
def test_a_tasks_second_read_of_a_block_is_served_by_the_task(tmp_path, memory):
    """K-means' shape: points, norms derived from them, both zipped. The task reads its
    points block, computes the norms from it: the second read is served from the value the
    task holds, not from the cache (counted as ``task_rereads``), and the plan leaves it
    out, so that it matches the accesses the cache sees."""
    spy = AccessLog()
    with _ctx(tmp_path, spy, memory=memory, parallelism=1) as c:
        pts = c.from_numpy(np.arange(524_288.0).reshape(-1, 2), 4).map_partitions(lambda x: x * 1.0).persist(MD)
        pts.count()
        norms = pts.map_partitions(lambda x: np.sqrt((x * x).sum(axis=1))).persist(MD)
        zipped = pts.zip_partitions(norms, f=lambda x, n: [float((x.sum(axis=1) * n).sum())])
        before = c.block_manager.metrics.snapshot()
        spy.seen.clear()
        got = sum(zipped.collect())
        after = c.block_manager.metrics.snapshot()
        x = np.arange(524_288.0).reshape(-1, 2)
        assert got == pytest.approx(float((x.sum(axis=1) * np.sqrt((x * x).sum(axis=1))).sum()))
        plan = spy.planned[-1]
        assert plan == [b for s in range(4) for b in (B(pts.id, s), B(norms.id, s))]
        (accessed,) = spy.seen.values()  # one task thread
        assert accessed == plan
        assert after["task_rereads"] - before["task_rereads"] == 4
        assert (after["memory_hits"] + after["disk_hits"] + after["misses"]
                - before["memory_hits"] - before["disk_hits"] - before["misses"]) == 8  # not 12
        if memory == "1MB":
            assert after["disk_hits"] > before["disk_hits"]  # the points came back from disk
        spy.seen.clear()
        assert sum(zipped.collect()) == pytest.approx(got)  # norms stored now: no reread
        assert spy.seen and list(spy.seen.values())[0] == spy.planned[-1]
        assert c.block_manager.metrics.snapshot()["task_rereads"] == after["task_rereads"]


def test_plans_skipped_for_policies_that_ignore_them(tmp_path, monkeypatch):
    from strataflow.scheduler import dag

    called = []
    monkeypatch.setattr(dag, "planned_reads", lambda *a: called.append(a) or [])
    with _ctx(tmp_path, "no-recache", memory="8MB") as c:
        c.from_numpy(np.arange(100.0), 2).persist(MD).count()
    assert called == []


def test_no_prefetch_into_memory_the_stages_own_puts_will_need():
    """Blocks the running stage will compute and put (planned, stored nowhere) take the
    free memory before any prefetch: a block prefetched there would be evicted again."""
    p = LineagePolicy()
    pts = [B(1, s) for s in range(4)]
    norms = [B(2, s) for s in range(4)]
    on_disk = {b: 100 for b in pts}
    p.plan([x for pair in zip(pts, norms) for x in pair])  # each task reads a point block, puts a norms block
    assert p.prefetch_candidates(1000, on_disk) == []  # the norms' size is not known yet: wait
    p.record_access(pts[0], "disk")
    assert p.admit(norms[0], 60)
    p.record_access(norms[0], "put")
    # 3 norms blocks of ~60 bytes are still to come: 180 of the 300 free bytes are theirs
    got = p.prefetch_candidates(300, on_disk)
    assert got == [pts[1]]
    assert p.prefetch_candidates(400, on_disk) == [pts[1], pts[2]]


def test_no_promotion_into_memory_the_stages_own_puts_will_need():
    p = LineagePolicy()
    pts, norms = [B(1, s) for s in range(4)], [B(2, s) for s in range(4)]
    for b in pts:  # a first pass: every point block known, none in memory
        p.record_access(b, "disk")
    p.plan([x for pair in zip(pts, norms) for x in pair])
    assert not p.promote(pts[0], 100)  # norms are still to be computed and put
    for b in norms:
        p.record_access(pts[norms.index(b)], "disk")
        p.admit(b, 10)
        p.record_access(b, "put")
    p.plan([x for pair in zip(pts, norms) for x in pair])
    assert p.promote(pts[0], 100) is Promotion.INTO_FREE  # nothing pending: free memory may be used


def test_a_dataset_joining_the_loop_does_not_make_resident_blocks_look_finished():
    """K-means' shape at 4x, in the order two task threads produced it: the first pass puts
    the points (partition 1 finishing before 0), the first iteration reads them and puts
    the small norms, which double the loop's period. The points kept in memory must still
    count as due next iteration when the last norms block is put: it goes to disk, and
    nothing is dropped (a prediction dropped after one overdue distance evicted points
    block 0 here, then prefetched another back: 82 MB moved for none)."""
    pts = [B(1, s) for s in range(8)]
    nrm = [B(3, s) for s in range(8)]
    ops: list = [("plan", tuple(pts))]
    ops += [("read", b, 41 * MB) for b in [pts[1], pts[0], *pts[2:]]]
    it1 = [b for s in range(8) for b in (pts[s], nrm[s])]
    ops.append(("plan", tuple(it1)))
    ops += [("read", b, (41 if b.dataset_id == 1 else 2) * MB) for b in it1]
    for _ in range(4):
        ops.append(("plan", tuple(it1)))
        ops += [("read", b, (41 if b.dataset_id == 1 else 2) * MB) for b in it1]
    trace = Trace("kmeans-4x", ops, 86 * MB)
    tally = CacheModel(make_policy("lineage"), trace.capacity, trace.storage_fraction).run(trace)
    assert tally.dropped_bytes == 0 and tally.prefetch_bytes == 0
    nr = CacheModel(make_policy("no-recache"), trace.capacity, trace.storage_fraction).run(trace)
    assert tally.memory_hit_bytes >= nr.memory_hit_bytes


class NothingToPrefetch(LineagePolicy):
    """Never promotes nor prefetches (a policy holding free memory for the stage's puts
    answers so on every served block), and counts the scans it is asked for."""

    def __init__(self):
        super().__init__()
        self.scans = 0

    def promote(self, block_id, size):
        return False

    def prefetch_candidates(self, free, on_disk):
        self.scans += 1
        super().prefetch_candidates(free, on_disk)
        return []


def _free_by_execution(c, n):
    """Execution memory takes ``n`` bytes (evicting blocks) and gives them back."""
    task = 10 ** 9
    c.memory.task_started(task)
    assert c.memory.acquire_execution(n, task) > 0
    c.memory.task_finished(task)


def test_empty_prefetch_scans_back_off_until_memory_is_freed(tmp_path):
    """A scan is linear in the blocks on disk. After one finds nothing, the next wait
    1, 2, 4 ... served blocks, unless memory is freed (then at once) or a stage starts."""
    policy = NothingToPrefetch()
    with _ctx(tmp_path, policy, memory="8MB", parallelism=1) as c:
        data = c.from_numpy(np.arange(64 * 50_000.0), 64).persist(MD)  # 64 blocks of 0.4 MB
        want = float(np.arange(64 * 50_000.0).sum())
        assert data.map_partitions(lambda a: [a.sum()]).sum() == want
        _free_by_execution(c, 2 << 20)
        assert c.memory.free >= 2 << 20
        stages = []
        for _ in range(2):  # each stage: 64 reads
            before = policy.scans
            assert data.map_partitions(lambda a: [a.sum()]).sum() == want
            stages.append(policy.scans - before)
        assert all(1 <= n <= 8 for n in stages), stages  # 1 + log2(64) at most, not one per read
        assert c.metrics()["prefetch_scans"] == policy.scans
        bm = c.block_manager  # between stages, as after served blocks: backed off
        before = policy.scans
        for _ in range(4):
            bm.writer.maybe_prefetch()
        assert policy.scans - before <= 1
        before = policy.scans
        _free_by_execution(c, 3 << 20)  # more memory freed: the next served block scans
        bm.writer.maybe_prefetch()
        assert policy.scans == before + 1
