"""Shuffle internals: bucket encoding, batch shuffles, vectorized hashing, spilling
aggregation within the execution budget, and the memory manager's fair shares."""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strataflow import Context
from strataflow.storage.memory.unified import MemoryManager
from strataflow.shuffle.partitioner import HashPartitioner, RangePartitioner, hash_int_array, portable_hash
from strataflow.shuffle import Aggregator, ExternalAggregator
from strataflow.shuffle.codec import decode, encode
from conftest import local_backends


@pytest.mark.parametrize("value", [
    [], [1, "a", (2, 3.5)], np.arange(12.0).reshape(4, 3), np.array(["x", "yy"]),
    np.zeros(0, dtype=np.int64), pa.table({"k": [1, 2], "v": [0.5, 1.5]}),
])
def test_codec_round_trip(value):
    out = decode(encode(value))
    if isinstance(value, np.ndarray):
        assert out.dtype == value.dtype and np.array_equal(out, value)
    elif isinstance(value, pa.Table):
        assert out.equals(value)
    else:
        assert out == value


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1), max_size=50),
       st.integers(min_value=1, max_value=9))
def test_vectorized_int_hash_matches_scalar(keys, n):
    arr = np.array(keys, dtype=np.int64)
    vec = HashPartitioner(n).partition_array(arr)
    assert vec.tolist() == [HashPartitioner(n).partition(k) for k in keys]
    assert hash_int_array(arr).tolist() == [portable_hash(k) for k in keys]


def test_portable_hash_is_deterministic_for_strings_and_tuples():
    # Python's hash of str is salted per process; ours must not be.
    import subprocess
    import sys

    code = "from strataflow.shuffle.partitioner import portable_hash; print(portable_hash(('a', 1, 'ü')))"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": s, "PATH": ""}).stdout for s in ("1", "2")}
    assert len(outs) == 1 and outs.pop().strip() == str(portable_hash(("a", 1, "ü")))


def test_range_partitioner_keeps_ties_together():
    p = RangePartitioner.from_sample([1, 1, 1, 2, 2, 3, 3, 3, 3], 3)
    assert p.partition(1) == p.partition(1.0)
    parts = [p.partition(k) for k in [1, 1, 2, 2, 3, 3]]
    assert parts == sorted(parts)
    desc = RangePartitioner(p.bounds, ascending=False)
    assert [desc.partition(k) for k in [1, 2, 3]] == sorted([desc.partition(k) for k in [1, 2, 3]], reverse=True)


def test_repartition_keeps_batches_and_rows(ctx):
    a = np.arange(1000.0).reshape(500, 2)
    parts = ctx.from_numpy(a, 3).repartition(4).collect_partitions()
    assert len(parts) == 4 and all(isinstance(p, np.ndarray) for p in parts)
    assert max(len(p) for p in parts) - min(len(p) for p in parts) <= 3
    assert np.array_equal(np.sort(np.concatenate(parts), axis=0), a)


def test_partition_by_moves_tables_as_tables_to_hash_partitions(ctx):
    t = pa.table({"k": np.arange(-50, 50), "v": np.arange(100) * 0.5})
    ds = ctx.from_numpy(np.arange(2), 2).map_partitions(lambda a: t.slice(int(a[0]) * 50, 50))
    parts = ds.partition_by(3).collect_partitions()
    assert all(isinstance(p, pa.Table) for p in parts)
    for i, p in enumerate(parts):
        assert all(portable_hash(k) % 3 == i for k in p.column("k").to_pylist())
    assert sorted(r for p in parts for r in zip(*(c.to_pylist() for c in p.columns))) == sorted(
        zip(t.column("k").to_pylist(), t.column("v").to_pylist()))


def test_batch_and_record_pairs_co_partition(ctx):
    keys = np.array([-3, -2, -1, 0, 1, 2, 3, 10**12, -(10**12)], dtype=np.int64)
    batch = ctx.from_numpy(np.stack([keys, keys * 2], axis=1), 2).partition_by(4).collect_partitions()
    records = ctx.parallelize([(int(k), int(k) * 2) for k in keys], 3).partition_by(4).collect_partitions()
    assert [sorted(int(r[0]) for r in b) for b in batch] == [sorted(k for k, _ in r) for r in records]


def test_aggregation_spills_within_budget_and_gives_same_result(tmp_path):
    n = 60_000
    with Context(memory="2MB", parallelism=2, shuffle_dirs=[str(tmp_path)], progress=False,
                 event_log=str(tmp_path / "ev.jsonl")) as ctx:
        ds = ctx.range(n, num_partitions=2).map(lambda x: (f"key-{x % 20000}", x))
        grouped = dict(ds.group_by_key(2).map_values(sorted).collect())
        summed = dict(ds.reduce_by_key(lambda a, b: a + b, 2).collect())
    expect: dict = {}
    for x in range(n):
        expect.setdefault(f"key-{x % 20000}", []).append(x)
    assert grouped == expect
    assert summed == {k: sum(v) for k, v in expect.items()}
    import json

    ends = [json.loads(l) for l in open(tmp_path / "ev.jsonl") if '"TaskEnd"' in l]
    assert sum(e["spill_bytes"] for e in ends) > 0
    assert not list(tmp_path.glob("strataflow-*/spill-*"))


class CollidingKey:
    """Every key hashes alike, so merging must fall back on equality."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, CollidingKey) and other.v == self.v

    def __hash__(self):
        return 7


def test_external_aggregator_merges_runs_with_colliding_hashes(tmp_path):
    Key = CollidingKey
    mm = MemoryManager(1 << 20)
    agg = ExternalAggregator(Aggregator(lambda v: v, lambda a, b: a + b, lambda a, b: a + b), mm, 1, str(tmp_path))
    for round_ in range(3):
        agg.insert_values((Key(i), 1) for i in range(40))
        agg._spill()
    agg.insert_values((Key(i), 1) for i in range(40))
    out = {k.v: c for k, c in agg.items()}
    assert out == {i: 4 for i in range(40)}
    assert mm.execution_used == 0 and not list(tmp_path.glob("spill-*"))


def test_memory_manager_fair_share_and_release():
    mm = MemoryManager(1000)
    mm.task_started(1)
    assert mm.acquire_execution(800, 1) == 800
    mm.task_started(2)
    got = []
    t = threading.Thread(target=lambda: got.append(mm.acquire_execution(600, 2)))
    t.start()
    mm.release_execution(500, 1)  # task 2 waits until task 1 frees memory, then gets its share
    t.join(5)
    assert got and 250 <= got[0] <= 500
    assert mm.acquire_execution(10_000, 1) <= 500 - mm.held_by(1) + 500
    mm.task_finished(1)
    mm.task_finished(2)
    assert mm.execution_used == 0


@settings(max_examples=30, deadline=None)
@given(st.lists(st.one_of(st.integers(min_value=-(1 << 70), max_value=1 << 70), st.integers(-5, 5)),
                min_size=64, max_size=200),
       st.integers(min_value=1, max_value=9))
def test_record_buckets_follow_portable_hash(keys, n):
    from strataflow.shuffle import split_into_buckets

    records = [(k, i) for i, k in enumerate(keys)]
    buckets = split_into_buckets(records, n, HashPartitioner(n))
    for i, b in enumerate(buckets):
        assert all(portable_hash(k) % n == i for k, _ in b)
        assert [j for _, j in b] == sorted(j for _, j in b)  # map order kept within a bucket
    assert sorted(r for b in buckets for r in b) == sorted(records)


def test_join_of_co_partitioned_inputs_needs_no_shuffle(ctx):
    links = ctx.parallelize([(i % 10, i) for i in range(100)], 4).group_by_key(4)
    ranks = links.map_values(lambda vs: float(len(vs)))
    assert links.partitioner == ranks.partitioner
    joined = links.join(ranks, 4)
    assert joined.explain().count("stage boundary") == 1  # only group_by_key's shuffle
    assert joined.partitioner == links.partitioner
    got = sorted((k, sorted(v), r) for k, (v, r) in joined.collect())
    assert got == sorted((k, [i for i in range(100) if i % 10 == k], 10.0) for k in range(10))
    # different partition counts still shuffle, with the same answer
    other = links.join(ranks, 3)
    assert other.explain().count("stage boundary") == 2  # a cogroup shuffle over the shared one
    assert sorted((k, r) for k, (_, r) in other.collect()) == [(k, 10.0) for k in range(10)]


def _shuffle_files(ctx) -> list[str]:
    return [os.path.join(r, f) for d in ctx.shuffle_dirs for r, _, fs in os.walk(d) for f in fs]


@pytest.mark.parametrize("backend", local_backends())
def test_a_shuffle_no_dataset_reads_any_more_is_removed(tmp_path, backend):
    """Spark's ContextCleaner: a loop making a new shuffle each iteration does not pile up
    shuffle files; a shuffle still referenced keeps its files (and its map stage is skipped)."""
    import gc

    with Context(backend=backend, parallelism=2, progress=False, local_dirs=[str(tmp_path)],
                 shuffle_dirs=[str(tmp_path)], event_log=str(tmp_path / "ev.jsonl")) as c:
        base = c.parallelize(range(2000), 4)
        kept = base.map(lambda x: (x % 7, 1)).reduce_by_key(lambda a, b: a + b, 4)
        assert sorted(kept.collect())[0] == (0, 286)
        kept_files = len(_shuffle_files(c))
        assert kept_files > 0
        for i in range(10):
            r = base.map(lambda x, i=i: (x % (i + 3), x)).reduce_by_key(lambda a, b: a + b, 4)
            assert len(r.collect()) == i + 3
            del r
            gc.collect()
        c.parallelize([1], 1).count()  # the next job cleans what the finalizers found
        assert len(_shuffle_files(c)) == kept_files  # only the live shuffle's files remain
        assert sorted(kept.collect())[0] == (0, 286)  # still readable: its map stage is skipped
    with open(tmp_path / "ev.jsonl") as f:
        events = [json.loads(line) for line in f]
    assert sum(e["event"] == "ShuffleCleaned" for e in events) == 10
    assert any(e["event"] == "StageSkipped" for e in events)


def test_every_corrupt_map_output_is_rerun_in_one_stage_attempt(tmp_path):
    with Context(backend="threads", parallelism=2, progress=False, local_dirs=[str(tmp_path)],
                 shuffle_dirs=[str(tmp_path)], event_log=str(tmp_path / "ev.jsonl")) as c:
        pairs = c.parallelize(range(6000), 6).map(lambda x: (x % 5, 1))
        counts = pairs.reduce_by_key(lambda a, b: a + b, 3)
        assert dict(counts.collect()) == {k: 1200 for k in range(5)}
        data = sorted(p for p in _shuffle_files(c) if p.endswith(".data"))
        assert len(data) == 6
        for p in data[:5]:  # five of six map outputs damaged (each bucket): more than max_stage_attempts
            size = os.path.getsize(p)
            with open(p, "r+b") as f:
                for at in (size // 6, size // 2, 5 * size // 6):
                    f.seek(at)
                    f.write(b"\xff\x00\xff\x00")
        assert dict(counts.collect()) == {k: 1200 for k in range(5)}
    with open(tmp_path / "ev.jsonl") as f:
        events = [json.loads(line) for line in f]
    failed = [e for e in events if e["event"] == "FetchFailed"]
    assert len(failed) == 1 and sorted(failed[0]["map_ids"]) == list(range(5)), failed  # one attempt reran all


def test_damage_in_several_chained_shuffles_is_rerun_shuffle_by_shuffle(tmp_path):
    """Four chained shuffles, every output damaged: each is found by a different reading
    stage, one after another. Attempts count per map output (Spark counts per stage), so
    the job reruns them all instead of giving up after four fetch failures of the job."""
    import faults_util as fu

    with fu.application(tmp_path, "threads", memory="256MB") as c:
        ds = c.parallelize([(i % 7, "x" * 50 + str(i)) for i in range(60)], 2)
        for _ in range(4):
            ds = ds.repartition(2)
        want = sorted(ds.collect())
        for out in fu.map_outputs(c):
            fu.flip_output(out)
        assert sorted(ds.collect()) == want


def test_an_output_damaged_at_every_write_gives_up_naming_it(tmp_path):
    """A map output that cannot be read however often it is rerun: the job fails loudly
    after ``max_stage_attempts`` reads of it, naming the shuffle and the map."""
    import faults_util as fu
    from strataflow import JobError

    with fu.application(tmp_path, "threads", memory="256MB", max_stage_attempts=3) as c:
        ds = c.parallelize([(i % 7, i) for i in range(60)], 2).reduce_by_key(lambda a, b: a + b, 2)
        ends: list[int] = []

        def damage_each_map_stage(e: dict) -> None:
            if e["event"] == "StageEnd" and e["kind"] == "shuffle-map":
                ends.append(e["stage_id"])
                for out in fu.map_outputs(c):
                    fu.flip_output(out)

        c.events.subscribe(damage_each_map_stage)
        with pytest.raises(JobError, match=r"giving up after 3 stage attempts: shuffle \d+ output of map \d+"):
            ds.collect()
        assert len(ends) == 3  # the first run and two reruns


# -- a wide shuffle costs its data, not maps x reducers (issue 41) -------------------------------
@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(min_value=-(1 << 62), max_value=1 << 62), min_size=0, max_size=300),
       st.sampled_from([1, 2, 7, 16, 40_000]), st.integers(min_value=1, max_value=5))
def test_batch_buckets_hold_their_rows_in_map_order_as_a_model_says(keys, n, chunks):
    """A batch's buckets (a table of several chunks, an ndarray, a DataFrame; bucket counts
    over the 16-bit radix-sort bound too) hold exactly the rows whose key hashes to them, in
    the map's order: the plain-Python model of a shuffle's split."""
    import pandas as pd

    from strataflow.shuffle import split_nonempty

    rows = [(k, f"r{i}", None if i % 3 == 0 else i * 0.5) for i, k in enumerate(keys)]
    part = HashPartitioner(n)
    model: dict = {b: [] for b in range(n)}  # each row's bucket computed once: n is up to 40,000
    position = {}
    for i, r in enumerate(rows):
        model[part.partition(r[0])].append(r)
        position[r] = i
    bounds = [len(rows) * c // chunks for c in range(chunks + 1)]
    schema = pa.schema([("k", pa.int64()), ("s", pa.string()), ("x", pa.float64())])
    table = pa.concat_tables([pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows[a:b]], schema)
                              for a, b in zip(bounds, bounds[1:])])
    got = split_nonempty(table, n, part)
    assert sorted(got) == list(range(n))
    assert {b: [tuple(r.values()) for r in t.to_pylist()] for b, t in got.items()} == model
    array = np.array([(k, i) for i, (k, _, _) in enumerate(rows)], dtype=[("k", "i8"), ("i", "i8")])
    assert {b: a.tolist() for b, a in split_nonempty(array, n, part).items()} == \
        {b: [(r[0], position[r]) for r in m] for b, m in model.items()}
    frame = pd.DataFrame({"k": [r[0] for r in rows], "s": [r[1] for r in rows]}, columns=["k", "s"])
    assert {b: list(f["s"]) for b, f in split_nonempty(frame, n, part).items()} == \
        {b: [r[1] for r in m] for b, m in model.items()}


def test_split_nonempty_keeps_records_buckets_with_rows_only_and_batches_whole():
    from strataflow.shuffle import split_into_buckets, split_nonempty

    records = [(k, k) for k in range(100)]
    sparse = split_nonempty(records, 1000, HashPartitioner(1000))
    assert sorted(sparse) == [portable_hash(k) % 1000 for k in range(100)] == sorted(sparse)
    dense = split_into_buckets(records, 1000, HashPartitioner(1000))
    assert len(dense) == 1000 and {r: b for r, b in enumerate(dense) if b} == sparse
    table = np.array([(1, 2.0), (3, 4.0)], dtype=[("k", "i8"), ("v", "f8")])
    whole = split_nonempty(table, 5, HashPartitioner(5))
    assert sorted(whole) == list(range(5))  # empty batches carry the dtype to their reducers
    assert all(b.dtype == table.dtype for b in whole.values())


def test_map_output_sizes_are_sparse_and_pickle_small(tmp_path):
    import pickle

    from strataflow.shuffle import ShuffleWriter

    writer = ShuffleWriter([str(tmp_path)])
    out = writer.write(0, 3, {7: [(1, 1)], 2: [(2, 2)]}, num_buckets=4000)
    assert out.num_buckets == 4000 and out.reduce_ids.tolist() == [2, 7]
    assert out.bucket_size(7) == out.bucket_bytes[7] > 0 and out.bucket_size(8) == 0
    assert out.total_bytes == sum(out.bucket_bytes)
    assert os.path.getsize(out.data_path) == out.total_bytes  # empty buckets write nothing
    back = pickle.loads(pickle.dumps(out))
    assert back == out
    assert len(pickle.dumps(out)) < 400  # not 4,000 sizes
    dense = ShuffleWriter([str(tmp_path)]).write(0, 4, [[], [(5, 5)], []])
    assert dense.bucket_bytes[0] == dense.bucket_bytes[2] == 0 and dense.reduce_ids.tolist() == [1]


def test_shuffle_reads_index_each_reducers_nonempty_buckets_in_map_order():
    from strataflow.shuffle import MapOutput, ShuffleReads

    outs = [MapOutput("d0", "i0", (0, 5, 0, 2)), MapOutput("d1", "i1", (3, 4, 0, 0)), None,
            MapOutput("d3", "i3", (0, 1, 0, 9))]
    reads = ShuffleReads(outs)
    assert reads.missing() == [2] and len(reads) == 4 and reads[1] is outs[1]
    got = {r: tuple(a.tolist() for a in reads.for_reducer(r)) for r in range(5)}
    assert got == {0: ([1], [3]), 1: ([0, 1, 3], [5, 4, 1]), 2: ([], []), 3: ([0, 3], [2, 9]), 4: ([], [])}


def test_a_reduce_task_reads_only_the_buckets_that_hold_its_data(tmp_path, monkeypatch):
    """The empty (map, reduce) pairs of a wide shuffle are never opened; a missing output
    still fails the fetch of every reducer (what it held is unknown)."""
    from strataflow.shuffle import FetchFailed, ShuffleReads, ShuffleWriter, read_buckets
    from strataflow.shuffle import manager

    writer = ShuffleWriter([str(tmp_path)])
    outs = [writer.write(0, m, {r: [(r, m)] for r in (m, 5)}, num_buckets=50) for m in range(4)]
    calls = []

    def read(out, reduce_id, shuffle_id, map_id):
        calls.append((map_id, reduce_id))
        return manager.read_bucket(out, reduce_id, shuffle_id, map_id, auth=writer.auth)

    assert [b for r in range(50) for b in read_buckets(outs, 0, r, read=read)] == \
        [[(0, 0)], [(1, 1)], [(2, 2)], [(3, 3)], [(5, 0)], [(5, 1)], [(5, 2)], [(5, 3)]]
    assert sorted(calls) == sorted([(m, m) for m in range(4)] + [(m, 5) for m in range(4)])
    with pytest.raises(FetchFailed) as info:
        list(read_buckets(ShuffleReads([outs[0], None, outs[2], outs[3]]), 0, 40, read=read))
    assert info.value.map_ids == (1,)
    os.remove(outs[2].data_path)
    with pytest.raises(FetchFailed) as info:
        list(read_buckets(outs, 0, 5, read=read))
    assert info.value.map_ids == (2,)
    assert list(read_buckets(outs, 0, 3, read=read)) == [[(3, 3)]]  # no data of map 2: nothing to rerun
