"""Broadcast variables and accumulators (issue 17, point 3) on every backend: a broadcast
is written once and loaded once per executor, unpersist and destroy do what they say;
an accumulator counts each successful task exactly once, a retried task too."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from strataflow import AccumulatorParam, Context
from strataflow.shipping.accumulators import Accumulators
from strataflow.shipping.broadcast import BroadcastDestroyed
from strataflow.shipping.source_store import SourceStore, spilling_sources
from strataflow.config.backends import BACKENDS
from conftest import local_backends


@pytest.fixture(params=local_backends())
def ctx(request, tmp_path):
    # task_max_failures=2: a task whose code fails once is retried (accumulators of retried tasks)
    with Context(memory="64MB", parallelism=2, backend=request.param, local_dirs=str(tmp_path),
                 progress=False, task_max_failures=2) as c:
        yield c


def test_a_broadcast_is_read_in_tasks_and_loaded_once_per_executor(ctx):
    table = ctx.broadcast({i: i * i for i in range(100_000)})  # over 1 MB: written once, travels as a path
    ds = ctx.range(1000, num_partitions=8)
    assert ds.map(lambda x: table.value[x]).sum() == sum(i * i for i in range(1000))
    seen = set()
    for _ in range(3):  # three stages: each executor keeps the one copy it loaded
        seen |= set(ds.map_partitions(lambda it: [(os.getpid(), id(table.value))]).collect())
    pids = {pid for pid, _ in seen}
    assert len(seen) == len(pids)  # one object per process, across stages
    assert len(pids) == (1 if BACKENDS[ctx.backend].in_driver_process else ctx.config.executors)


def test_a_large_broadcast_travels_as_a_reference(tmp_path):
    with Context(memory="64MB", parallelism=1, backend="threads", local_dirs=str(tmp_path)) as ctx:
        big = ctx.broadcast(np.arange(1_000_000))
        store = SourceStore(str(tmp_path))
        with spilling_sources(store):
            once, twice = pickle.dumps(big), pickle.dumps(big)
        assert len(once) < 1000 and once == twice  # the 8 MB value went to one file, written once
        assert len(os.listdir(tmp_path)) >= 1
        copy = pickle.loads(once)
        assert np.array_equal(copy.value, np.arange(1_000_000))


def test_a_broadcast_over_64_kb_is_written_and_a_smaller_one_travels_in_line(tmp_path):
    """A broadcast is loaded once per executor and kept, so one of a few hundred KB is
    written once rather than sent with every stage to every executor; a tiny one (a
    lookup dict) is cheaper in line."""
    with Context(memory="64MB", parallelism=1, backend="threads", local_dirs=str(tmp_path)) as ctx:
        mid, tiny = ctx.broadcast(np.arange(25_000)), ctx.broadcast({"a": 1})  # 200 KB; a few bytes
        with spilling_sources(SourceStore(str(tmp_path))):
            mid_bytes, tiny_bytes = pickle.dumps(mid), pickle.dumps(tiny)
        assert len(mid_bytes) < 1000 and np.array_equal(pickle.loads(mid_bytes).value, np.arange(25_000))
        assert b"a" in tiny_bytes and pickle.loads(tiny_bytes).value == {"a": 1}
        assert pickle.loads(tiny_bytes)._ref is None and pickle.loads(mid_bytes)._ref is not None


def test_unpersist_reloads_and_destroy_fails_loudly(ctx):
    b = ctx.broadcast(list(range(300_000)))
    ds = ctx.range(100, num_partitions=4)
    assert ds.map(lambda x: b.value[x]).sum() == 4950
    b.unpersist()
    assert ds.map(lambda x: b.value[x]).sum() == 4950  # loaded again
    b.destroy()
    with pytest.raises(BroadcastDestroyed):
        b.value
    with pytest.raises(Exception, match="destroyed"):
        ds.map(lambda x: b.value[x]).sum()


def test_an_accumulator_counts_each_successful_task_once(ctx, tmp_path):
    acc = ctx.accumulator(0)
    vec = ctx.accumulator(np.zeros(2))
    flag = tmp_path / "failed-once"

    def work(i, it):
        rows = list(it)
        acc.add(len(rows))
        vec.add(np.array([1.0, len(rows)]))
        if i == 3 and not flag.exists():  # partition 3's first attempt fails after adding
            flag.write_text("x")
            raise RuntimeError("flaky")
        return rows

    assert ctx.range(1000, num_partitions=8).map_partitions_with_index(work).count() == 1000
    assert flag.exists()
    assert acc.value == 1000  # the failed attempt's 125 not counted
    assert vec.value.tolist() == [8.0, 1000.0]


def test_a_custom_param_and_reading_in_a_task(ctx):
    class Concat(AccumulatorParam):
        def zero(self, value):
            return []

        def add_in_place(self, a, b):
            a.extend(b if isinstance(b, list) else [b])
            return a

    names = ctx.accumulator([], Concat())
    ctx.parallelize(["a", "b", "c"], 3).foreach(lambda x: names.add(x))
    assert sorted(names.value) == ["a", "b", "c"]
    acc = ctx.accumulator(0)
    with pytest.raises(Exception, match="only be read on the driver"):
        ctx.range(4, num_partitions=2).foreach(lambda x: acc.value)
    with pytest.raises(TypeError, match="accum_param"):
        ctx.accumulator("text")
    acc += 5  # driver code adds at once
    assert acc.value == 5


def test_a_recomputed_task_is_not_counted_again():
    reg = Accumulators()
    acc = reg.new(0)
    assert reg.merge(stage_id=1, partition=0, updates={acc.aid: 10})
    assert not reg.merge(stage_id=1, partition=0, updates={acc.aid: 10})  # the same map task, rerun
    assert reg.merge(stage_id=2, partition=0, updates={acc.aid: 10})  # another stage's task
    assert acc.value == 20


def test_an_accumulator_counts_once_when_an_executor_dies_mid_stage(tmp_path):
    """A map task kills its executor (``os._exit``) after adding: the driver loses that
    executor's map outputs, reruns what it must elsewhere, and the count is still exact."""
    flag = tmp_path / "died"
    with Context(memory="64MB", parallelism=2, backend="processes", local_dirs=str(tmp_path), progress=False) as ctx:
        seen = ctx.accumulator(0)
        lost: list = []
        ctx.events.subscribe(lambda e: lost.append(e) if e["event"] == "ExecutorLost" else None)

        def tag(i, it):
            rows = list(it)
            seen.add(len(rows))
            if i == 5 and not flag.exists():
                flag.write_text("x")
                os._exit(3)  # the executor process dies with the task
            return [(x % 10, 1) for x in rows]

        counts = ctx.range(2000, num_partitions=8).map_partitions_with_index(tag).reduce_by_key(lambda a, b: a + b)
        assert dict(counts.collect()) == {k: 200 for k in range(10)}
    assert flag.exists() and lost  # the executor did die
    assert seen.value == 2000
