"""The cost clock: the seconds AUTO and the memory split weigh are the wall clock's, or,
under ``STRATAFLOW_DECLARED_COSTS`` (the test seam), exactly what was declared."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from strataflow import Context, StorageLevel
from strataflow.storage import cost_clock
from strataflow.storage.cost_clock import ENV, DeclaredCosts, MeasuredClock, from_environment, parse, spend

MB = 1 << 20


def test_without_the_variable_the_wall_clock_is_used(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    clock = from_environment()
    assert isinstance(clock, MeasuredClock) and not clock.declared
    assert clock.io("mapped", "write", 8 * MB, 0.25) == 0.25  # what was measured
    t0 = clock.now()
    spend(5.0)  # declares nothing to the wall clock
    assert clock.now() - t0 < 5.0


def test_declared_transfers_cost_their_bytes_at_the_declared_bandwidth_and_move_the_thread_clock():
    clock = parse('{"serialized": [100, 200], "mapped": [400, 1000]}')
    assert isinstance(clock, DeclaredCosts) and clock.declared
    t0 = clock.now()
    assert clock.io("serialized", "write", 100 * MB, 123.0) == pytest.approx(1.0)  # the measured 123 s is ignored
    assert clock.io("mapped", "read", 100 * MB, 0.0) == pytest.approx(0.1)
    spend(0.5)
    assert clock.now() - t0 == pytest.approx(1.6)  # a computation that read its parent pays for the read

    other = []  # each task thread has its own clock
    thread = threading.Thread(target=lambda: other.append(clock.now()))
    thread.start()
    thread.join()
    assert other == [0.0]


@pytest.mark.parametrize("text, says", [
    ("not json", "STRATAFLOW_DECLARED_COSTS"),
    ('{"serialized": [100, 200]}', "exactly the forms serialized, mapped"),
    ('{"serialized": [100, 0], "mapped": [1, 1]}', "serialized: bandwidths must be > 0"),
    ('{"serialized": [100], "mapped": [1, 1]}', r"\[write, read\] MB/s per form"),
])
def test_a_bad_declaration_names_the_variable_and_the_fault(text, says):
    with pytest.raises(ValueError, match=says):
        parse(text)


def test_spend_refuses_negative_seconds():
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        spend(-1)


def _declared_dear(a):
    spend(0.5)
    return a + 1.0


@pytest.mark.parametrize("write_mb_s, level", [(1000, "AUTO:MEMORY_AND_DISK_MMAP"), (1, "AUTO:MEMORY_ONLY")])
def test_auto_weighs_the_declared_seconds_in_executor_processes(tmp_path, monkeypatch, write_mb_s, level):
    """The same job, the same 0.5 s declared per block: a fast declared disk spills it, a
    slow one (a 2 MB block: 2 s to write) drops it. Executor processes read the declaration
    from the environment they inherit."""
    monkeypatch.setenv(ENV, f'{{"serialized": [{write_mb_s}, 1000], "mapped": [{write_mb_s}, 1000]}}')
    data = np.zeros((8 * 256 * 1024 // 8, 8))  # 8 blocks of 2 MB
    with Context(memory="8MB", parallelism=2, backend="processes", progress=False,
                 local_dirs=[str(tmp_path)]) as ctx:
        ds = ctx.from_numpy(data, 8).map_partitions(_declared_dear).persist(StorageLevel.AUTO)
        assert ds.map_partitions(lambda a: [a.sum()]).sum() == data.size
        assert {s.name: s.level for s in ctx.storage_status()}[ds.label] == level


def test_the_block_manager_takes_its_clock_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, '{"serialized": [1, 1], "mapped": [1, 1]}')
    with Context(memory="8MB", parallelism=1, backend="threads", progress=False, local_dirs=[str(tmp_path)]) as ctx:
        assert ctx.block_manager.clock.declared and ctx.block_manager.writes.clock is ctx.block_manager.clock
    assert cost_clock.MeasuredClock().declared is False
