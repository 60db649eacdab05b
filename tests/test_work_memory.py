"""The work under the execution-memory budget: every operation that holds more than one
record (the map-side combine of the ``*_by_key`` aggregations, ``count_by_key``,
``distinct``, ``group_by_key`` with one key holding half the records, ``sort_by_key`` /
``sort_by``, ``cogroup`` and the joins, the reduce-side merge) spills under a small
budget and gives the plain-Python model's answer, on every local backend; and the
structures' true sizes stay within what they were granted."""

from __future__ import annotations

import gc
import json
import os
import sys
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from key_types import Color, Level, Point, Unit
from strataflow import Context
from strataflow.shuffle import (Aggregator, ExternalAggregator, ExternalGrouper, ExternalSorter, Grouping, SortOrder,
                                SpilledGroup)
from strataflow.shuffle.work_memory import CHECK_EVERY
from strataflow.storage.memory.unified import MemoryManager
from conftest import local_backends

N = 100_000
HOT = "hot ключ ☃"
ODD = [None, Color.RED, Color.BLUE, Unit.KB, Level.HIGH, Point(7, "p")]


def key_of(i: int):
    """Half the records share one key; the rest spread over 12,000 keys of every kind."""
    if i % 2 == 0:
        return HOT
    j = (i // 2) % 12_000
    kind = j % 4
    if kind == 0:
        return j
    if kind == 1:
        return f"ключ-{j}-é"
    if kind == 2:
        return (j, "ü", None)
    return ODD[j % len(ODD)]


DATA = [(key_of(i), f"v{i:07d}") for i in range(N)]
#: a second side for the joins: every 3rd key of the first once, the hot key twice, and
#: keys the first side lacks
RIGHT = ([(k, f"w{n}") for n, k in enumerate(dict.fromkeys(k for k, _ in DATA)) if n % 3 == 0]
         + [(HOT, "w-hot-2")] + [(f"only-right-{j}", f"w-r{j}") for j in range(500)])


def groups(pairs) -> dict:
    out: dict = {}
    for k, v in pairs:
        out.setdefault(k, []).append(v)
    return out


def joined(left, right, keep_left: bool, keep_right: bool) -> Counter:
    """The join's model: nested loops over the two sides' groups."""
    a, b = groups(left), groups(right)
    out: Counter = Counter()
    for k in set(a) | set(b):
        vs, ws = a.get(k, []), b.get(k, [])
        if (not vs and not keep_right) or (not ws and not keep_left):
            continue
        for v in vs or [None]:
            for w in ws or [None]:
                out[(k, (v, w))] += 1
    return out


def cogrouped(a: dict, b: dict) -> dict:
    return {k: (sorted(a.get(k, [])), sorted(b.get(k, []))) for k in set(a) | set(b)}


def _pairing(v: str) -> str:
    """Most values their own key, one in five sharing it with its neighbour."""
    return v[:-1] if v[-1] in "01" else v


def _min_count(a, b):
    return a[0] + b[0], min(a[1], b[1])


# (engine, model): each a function of the two sides, giving comparable values
OPERATIONS = {
    "reduce_by_key": (lambda d, r: dict(d.reduce_by_key(max).collect()),
                      lambda: {k: max(v) for k, v in groups(DATA).items()}),
    "combine_by_key": (lambda d, r: dict(d.combine_by_key(lambda v: (1, v), lambda c, v: (c[0] + 1, min(c[1], v)),
                                                          _min_count).collect()),
                       lambda: {k: (len(v), min(v)) for k, v in groups(DATA).items()}),
    "aggregate_by_key": (lambda d, r: dict(d.aggregate_by_key((0, 0), lambda c, v: (c[0] + 1, c[1] + len(v)),
                                                              lambda a, b: (a[0] + b[0], a[1] + b[1])).collect()),
                         lambda: {k: (len(v), sum(map(len, v))) for k, v in groups(DATA).items()}),
    "fold_by_key": (lambda d, r: dict(d.fold_by_key("", max).collect()),
                    lambda: {k: max(v) for k, v in groups(DATA).items()}),
    "count_by_key": (lambda d, r: d.map(lambda kv: (kv[1], kv[0])).count_by_key(),
                     lambda: {v: 1 for _, v in DATA}),
    "reduce_by_key_locally": (lambda d, r: d.map(lambda kv: (_pairing(kv[1]), 1)).reduce_by_key_locally(
                              lambda a, b: a + b), lambda: Counter(_pairing(v) for _, v in DATA)),
    "distinct": (lambda d, r: Counter(d.map(lambda kv: (kv[0], kv[1][:5])).distinct().collect()),
                 lambda: Counter(set((k, v[:5]) for k, v in DATA))),
    "group_by_key": (lambda d, r: {k: sorted(g) for k, g in d.group_by_key().collect()},
                     lambda: {k: sorted(v) for k, v in groups(DATA).items()}),
    "group_by_key_len": (lambda d, r: dict(d.group_by_key().map_values(len).collect()),
                         lambda: {k: len(v) for k, v in groups(DATA).items()}),
    "sort_by_key": (lambda d, r: d.map(lambda kv: (kv[1], kv[0])).sort_by_key(ascending=False).collect(),
                    lambda: sorted(((v, k) for k, v in DATA), key=lambda vk: vk[0], reverse=True)),
    "sort_by_stable": (lambda d, r: d.sort_by(lambda kv: kv[1][-2:]).collect(),
                       lambda: sorted(DATA, key=lambda kv: kv[1][-2:])),
    "join": (lambda d, r: Counter(d.join(r).collect()), lambda: joined(DATA, RIGHT, False, False)),
    "left_outer_join": (lambda d, r: Counter(d.left_outer_join(r).collect()), lambda: joined(DATA, RIGHT, True, False)),
    "right_outer_join": (lambda d, r: Counter(d.right_outer_join(r).collect()),
                         lambda: joined(DATA, RIGHT, False, True)),
    "full_outer_join": (lambda d, r: Counter(d.full_outer_join(r).collect()), lambda: joined(DATA, RIGHT, True, True)),
    "join_partitioned_alike": (lambda d, r: Counter(d.partition_by(3).join(r.partition_by(3)).collect()),
                               lambda: joined(DATA, RIGHT, False, False)),
    "cogroup": (lambda d, r: {k: (sorted(a), sorted(b)) for k, (a, b) in d.cogroup(r).collect()},
                lambda: cogrouped(groups(DATA), groups(RIGHT))),
}


@pytest.fixture(scope="module", params=local_backends())
def small(request, tmp_path_factory):
    """A Context of 2 MB (data ~10x that in Python objects), its shuffle dir, its event log,
    and the two sides (with empty partitions)."""
    base = tmp_path_factory.mktemp(f"work-{request.param}")
    shuffle = base / "shuffle"
    shuffle.mkdir()
    log = base / "events.jsonl"
    with Context(memory="2MB", parallelism=2, backend=request.param, progress=False, shuffle_dirs=[str(shuffle)],
                 local_dirs=[str(base)], event_log=str(log)) as ctx:
        left = ctx.parallelize(DATA, 5).union(ctx.parallelize([], 2))
        right = ctx.parallelize(RIGHT, 3)
        yield ctx, left, right, shuffle, log


def spilled(log) -> int:
    with open(log) as f:
        return sum(json.loads(line).get("spill_bytes", 0) for line in f if '"StageEnd"' in line)


@pytest.mark.parametrize("op", list(OPERATIONS))
def test_each_operation_spills_and_gives_the_models_answer(small, op):
    ctx, left, right, shuffle, log = small
    engine, model = OPERATIONS[op]
    before = spilled(log)
    got = engine(left, right)
    assert spilled(log) > before, f"{op} did not spill under a 2 MB budget"
    assert got == model()
    del got
    gc.collect()
    assert not [p for p in shuffle.rglob("spill-*")], "spill files outlived their task"


def test_a_group_larger_than_memory_is_a_spilled_sequence(tmp_path):
    mm = MemoryManager(1 << 20)
    mm.task_started(1)
    grouper = ExternalGrouper(Grouping(), mm, 1, str(tmp_path))
    values = [f"value-{i}" for i in range(200_000)]  # ~13 MB of strings for a 1 MB budget
    grouper.insert((("k", i % 5000) if i % 2 else "hot", v) for i, v in enumerate(values))
    out = dict(grouper.groups())
    hot = out["hot"]
    assert isinstance(hot, SpilledGroup) and len(hot) == 100_000
    assert hot == values[::2] and list(hot) == values[::2]  # insertion order, read any number of times
    assert hot[0] == "value-0" and hot[-1] == values[-2] and hot[10:12] == values[20:24:2]
    assert all(isinstance(g, list) for k, g in out.items() if k != "hot")
    assert sum(len(g) for g in out.values()) == len(values)
    import pickle

    assert pickle.loads(pickle.dumps(hot)) == values[::2] and type(pickle.loads(pickle.dumps(hot))) is list
    assert mm.execution_used == 0
    assert [p.name for p in tmp_path.iterdir()] == [os.path.basename(hot._path)]  # runs gone, the group's file kept
    del hot, out
    gc.collect()
    assert not list(tmp_path.iterdir())


def deep_size(obj, seen=None) -> int:
    """Every byte a structure references, walked exhaustively (no sampling): the truth the
    structures' sampled estimates are checked against."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        size += sum(deep_size(x, seen) for x in obj)
    return size


def _records(n: int, width: int):
    """Skewed pairs whose values vary in size (a short and a long string)."""
    for i in range(n):
        yield ("hot" if i % 3 == 0 else (i % 5000, "k")), ("x" * (width if i % 7 == 0 else 3)) + str(i)


@pytest.mark.parametrize("kind", ["aggregator", "sorter", "grouper"])
def test_what_a_structure_holds_stays_within_its_grant(tmp_path, kind):
    """Two tasks share 4 MB: each structure's true size, measured after every batch, is
    within what its task was granted (plus one check interval's records), and each task
    holds at most its half."""
    mm = MemoryManager(4 << 20, storage_fraction=0.5)
    for t in (1, 2):
        mm.task_started(t)
    if kind == "aggregator":
        s = ExternalAggregator(Aggregator(lambda v: [v], lambda c, v: c + [v] if len(c) < 3 else c,
                                          lambda a, b: a + b), mm, 1, str(tmp_path))
        insert, held = s.insert_values, lambda: s.data
    elif kind == "sorter":
        s = ExternalSorter(SortOrder(lambda kv: kv[1]), mm, 1, str(tmp_path))
        insert, held = s.insert_all, lambda: s.buffer
    else:
        s = ExternalGrouper(Grouping(), mm, 1, str(tmp_path))
        insert, held = s.insert, lambda: s.data
    other = mm.acquire_execution(3 << 20, 2)  # the other task takes what it may: its half
    assert other == 2 << 20
    records = list(_records(150_000, 200))
    slack = CHECK_EVERY * max(deep_size(r) for r in records[:50])
    worst = 0
    for i in range(0, len(records), 2_000):
        insert(records[i: i + 2_000])
        true = deep_size(held())
        worst = max(worst, true - s.grant.granted)
        assert mm.held_by(1) <= 2 << 20 and mm.held_by(1) + mm.held_by(2) <= mm.total
    assert worst <= slack, f"{kind} held {worst} bytes beyond its grant (allowed: {slack})"
    assert s.files.spilled_bytes > 0


def _fails_on_the_last(value):
    if value == f"v{N - 1:07d}":
        raise ValueError("a user function fails on the last record")
    return value


def failed_spills(log) -> int:
    """Bytes spilled by tasks that failed (their TaskEnd events)."""
    with open(log) as f:
        ends = [json.loads(line) for line in f if '"TaskEnd"' in line]
    return sum(e.get("spill_bytes", 0) for e in ends if not e.get("ok"))


@pytest.mark.parametrize("op", ["sort", "group"])
def test_a_task_that_fails_mid_work_leaves_no_spill_files(small, op):
    ctx, left, right, shuffle, log = small
    before = failed_spills(log)
    if op == "sort":
        # the sort key is used in the reduce task alone, where it fails once runs are spilled
        job = left.map(lambda kv: (kv[1], kv[0])).repartition_and_sort_within_partitions(
            2, lambda k: int(k[-1]) % 2, key_func=_fails_on_the_last).count
    else:  # the groups are written, then the user's function fails on the hot one
        job = left.group_by_key().map_values(lambda g: [_fails_on_the_last(v) for v in g]).count
    with pytest.raises(Exception, match="fails on the last record"):
        job()
    assert failed_spills(log) > before, "the failing task had not spilled yet: the test would prove nothing"
    gc.collect()
    assert not [p for p in shuffle.rglob("spill-*")], "a failed task's spill files outlived it"


def test_the_merge_of_a_hot_key_holds_chunks_not_runs(tmp_path):
    """Merging 10+ runs that each hold part of a hot key and of many small groups: what
    Python allocates while the groups are read (traced, not RSS) stays within twice the
    task's memory (its grant, plus one chunk of each run), not the group's 7 MB."""
    import tracemalloc

    mm = MemoryManager(2 << 20)
    mm.task_started(1)
    grouper = ExternalGrouper(Grouping(), mm, 1, str(tmp_path))
    grouper.insert(("hot" if i % 2 == 0 else i % 10_000, f"value-{i:08d}") for i in range(200_000))
    assert len(grouper.runs) >= 8
    tracemalloc.start()
    try:
        total = hot = 0
        for k, g in grouper.groups():  # each group dropped once counted
            total += len(g)
            hot = len(g) if k == "hot" else hot
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert hot == 100_000 and total == 200_000
    assert peak <= 2 * mm.total, f"the merge allocated {peak:,} bytes for a {mm.total:,}-byte task"


@pytest.mark.parametrize("backend", local_backends())
def test_pyspark_group_by_key_of_a_hot_key_under_a_small_budget(tmp_path, backend):
    """PySpark's API over the same engine: ``groupByKey`` gives ResultIterables whose hot
    group spilled; ``mapValues(len)`` and ``mapValues(list)`` give the model's answer."""
    from strataflow.pyspark import SparkConf, SparkContext

    log = tmp_path / "events.jsonl"
    conf = (SparkConf().set("strataflow.backend", backend).set("strataflow.progress", "false")
            .set("strataflow.memory", "2MB").set("strataflow.event_log", str(log))
            .set("strataflow.shuffle_dirs", str(tmp_path)))
    sc = SparkContext("local[2]", "work-memory", conf=conf)
    try:
        pairs = sc.parallelize(DATA, 4)
        lengths = dict(pairs.groupByKey().mapValues(len).collect())
        lists = dict(pairs.groupByKey().mapValues(list).collect())
    finally:
        sc.stop()
    model = groups(DATA)
    assert lengths == {k: len(v) for k, v in model.items()}
    assert {k: sorted(v) for k, v in lists.items()} == {k: sorted(v) for k, v in model.items()}
    assert spilled(log) > 0


def test_a_cached_group_keeps_its_file_until_unpersisted(small):
    """A persisted ``group_by_key`` holds its hot group as a SpilledGroup: a second job
    reads the group again from its file (or from the block, if the cache pickled it to a
    list), and unpersisting the dataset removes the file."""
    ctx, left, right, shuffle, log = small
    grouped = left.group_by_key().persist()
    model = {k: len(v) for k, v in groups(DATA).items()}
    assert dict(grouped.map_values(len).collect()) == model
    assert dict(grouped.map_values(lambda g: sum(1 for _ in g)).collect()) == model
    grouped.unpersist(blocking=True)
    gc.collect()
    assert not [p for p in shuffle.rglob("spill-*")], "an unpersisted group's file outlived it"


_KEYS = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3), st.tuples(st.integers(0, 2), st.text(max_size=2)),
                  st.sampled_from([Color.RED, Unit.MB, Level.LOW]), st.floats(allow_nan=False, width=16))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(_KEYS, st.integers(0, 50)), min_size=1, max_size=40), st.integers(600, 3000),
       st.integers(0, 2**32 - 1))
def test_structures_under_a_tiny_budget_agree_with_the_model(tmp_path_factory, sample, n, seed):
    """Random keys of every kind (None, unicode, tuples, Enums, floats with -0.0 == 0.0),
    one of them hot, under 16 KB: the grouper, the sorter and the aggregator spill and
    give the plain-Python answer (groups in insertion order, a stable sort)."""
    import random

    rng = random.Random(seed)
    hot = sample[0][0]
    pairs = [(hot, i) if rng.random() < 0.5 else (rng.choice(sample)[0], i) for i in range(n)]
    d = str(tmp_path_factory.mktemp("tiny"))
    mm = MemoryManager(16 << 10)
    mm.task_started(1)
    model = groups(pairs)

    grouper = ExternalGrouper(Grouping(), mm, 1, d)
    grouper.insert(pairs)
    got = [(k, list(g)) for k, g in grouper.groups()]
    assert len(got) == len(model) and all(model[k] == g for k, g in got)

    sorter = ExternalSorter(SortOrder(lambda kv: kv[1] % 7, reverse=bool(seed % 2)), mm, 1, d)
    sorter.insert_all(pairs)
    assert list(sorter.sorted_records()) == sorted(pairs, key=lambda kv: kv[1] % 7, reverse=bool(seed % 2))

    agg = ExternalAggregator(Aggregator(lambda v: v, lambda a, b: a + b, lambda a, b: a + b), mm, 1, d)
    agg.insert_values(pairs)
    sums = list(agg.items())
    assert len(sums) == len(model) and all(sum(model[k]) == s for k, s in sums)
    assert grouper.spilled_bytes > 0 and sorter.spilled_bytes > 0
    assert mm.execution_used == 0
