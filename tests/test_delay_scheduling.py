"""Delay scheduling's three levels (``scheduler/task_set.py``), on executors that are
stand-ins: a task waits ``locality_wait`` for the executor that holds its block, then as
long again for another executor of that executor's node, then goes anywhere. Executors
without a node (threads, processes: all on the driver's machine) are one node, so for
them the second level is already "anywhere", as before there were levels."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from strataflow.scheduler.task_set import _TASKS_PER_SLOT, TaskSetRunner

WAIT = 3.0


class Handle:
    needs_pickled_stages = False

    def __init__(self, executor_id: str, node_id: str | None) -> None:
        self.executor_id, self.node_id, self.cores = executor_id, node_id, 1
        self.submitted: list[int] = []
        self.messages = 0

    def submit(self, work, payload, plan, spec) -> Future:
        self.submitted.append(spec.partition)
        return Future()

    def submit_many(self, work, payload, plan, specs, together=False) -> list[Future]:
        self.messages += 1
        self.together = together
        return [self.submit(work, payload, plan, spec) for spec in specs]


def _runner(preferred: dict[int, list[str]], wait: float = WAIT) -> TaskSetRunner:
    dag = SimpleNamespace(fleet=None, config=SimpleNamespace(max_task_attempts=2, task_max_failures=2,
                                                             locality_wait=wait),
                          map_outputs_for=lambda ds: {}, shipped_files=dict)
    stage = SimpleNamespace(id=0, attempts=1, dataset=None, shuffle_dep=None)
    return TaskSetRunner(dag, stage, 0, list(preferred), None, preferred, None, lambda *a: None)


def _busy(handle: Handle) -> dict:
    """Running tasks that fill every slot of ``handle``."""
    return {Future(): (100 + i, 1, handle.executor_id) for i in range(handle.cores * _TASKS_PER_SLOT)}


def _cluster() -> tuple[Handle, Handle, Handle]:
    return Handle("holder", "node-a"), Handle("neighbour", "node-a"), Handle("far", "node-b")


@pytest.mark.parametrize("waited, goes_to", [(0.0, None), (WAIT, "neighbour"), (1.9 * WAIT, "neighbour"),
                                             (2 * WAIT, "neighbour-or-far")])
def test_a_busy_holders_task_waits_then_goes_to_its_node_then_anywhere(waited, goes_to):
    holder, neighbour, far = _cluster()
    running = _busy(holder)
    far_running = {Future(): (200, 1, "far")}  # 'far' is the least loaded only if the level allows it
    neighbour_running = {Future(): (201, 1, "neighbour")}
    running.update(far_running)
    running.update(neighbour_running)
    left, local = _runner({0: ["holder"]})._launch([(0, 1)], running, [holder, neighbour, far], waited)
    placed = {h.executor_id: h.submitted for h in (holder, neighbour, far) if h.submitted}
    assert not local  # never on the holder: it is full
    if goes_to is None:
        assert left == [(0, 1)] and not placed
    elif goes_to == "neighbour":
        assert left == [] and placed == {"neighbour": [0]}
    else:
        assert left == [] and len(placed) == 1 and set(placed) <= {"neighbour", "far"}


def test_past_the_node_level_a_full_node_sends_its_tasks_elsewhere():
    holder, neighbour, far = _cluster()
    running = {**_busy(holder), **_busy(neighbour)}
    runner = _runner({0: ["holder"]})
    assert runner._launch([(0, 1)], running, [holder, neighbour, far], WAIT)[0] == [(0, 1)]  # node level: waits
    assert runner._launch([(0, 1)], running, [holder, neighbour, far], 2 * WAIT)[0] == []
    assert far.submitted == [0]


def test_a_free_holder_is_always_first():
    holder, neighbour, far = _cluster()
    left, local = _runner({0: ["holder"], 1: ["far"]})._launch([(0, 1), (1, 1)], {}, [holder, neighbour, far], 10 * WAIT)
    assert left == [] and local and holder.submitted == [0] and far.submitted == [1]


def test_executors_without_nodes_are_one_node():
    """threads and processes: after one wait a task goes to any executor, as before."""
    holder, other = Handle("holder", None), Handle("other", None)
    left, _ = _runner({0: ["holder"]})._launch([(0, 1)], _busy(holder), [holder, other], WAIT)
    assert left == [] and other.submitted == [0]


def test_a_partition_nobody_holds_goes_to_the_least_loaded_at_once():
    holder, neighbour, far = _cluster()
    running = {**_busy(holder), Future(): (300, 1, "neighbour")}
    left, _ = _runner({0: []})._launch([(0, 1)], running, [holder, neighbour, far], 0.0)
    assert left == [] and far.submitted == [0]


def test_a_holder_takes_its_fair_share_of_local_tasks_in_one_message():
    """Eight cached partitions, four on each of two one-core executors: each gets its
    four at once (they would wait for it anyway), one message each, not two per slot
    and one more per finished task."""
    a, b = Handle("a", None), Handle("b", None)
    preferred = {p: ["a" if p % 2 == 0 else "b"] for p in range(8)}
    running: dict = {}
    left, local = _runner(preferred)._launch([(p, 1) for p in range(8)], running, [a, b], 0.0)
    assert left == [] and local and len(running) == 8
    assert a.submitted == [0, 2, 4, 6] and b.submitted == [1, 3, 5, 7]
    assert a.messages == b.messages == 1
    assert a.together and b.together  # nothing left to launch: results may come back together


def test_beyond_its_fair_share_a_holder_s_tasks_wait_and_others_keep_two_per_slot():
    """Six of eight partitions on 'a': it takes its share (four), the other two wait for
    it (delay scheduling); partitions nobody holds go two per slot, as before."""
    a, b = Handle("a", None), Handle("b", None)
    preferred = {p: (["a"] if p < 6 else []) for p in range(8)}
    left, _ = _runner(preferred)._launch([(p, 1) for p in range(8)], {}, [a, b], 0.0)
    assert a.submitted == [0, 1, 2, 3]
    assert b.submitted == [6, 7]  # unheld tasks: two for b's one slot
    assert left == [(4, 1), (5, 1)]
    assert not a.together and not b.together  # the driver still has tasks to launch


def test_without_a_locality_wait_a_holder_takes_two_per_slot_like_any_executor():
    """``locality_wait=0``: nothing waits for a holder, so nothing is committed to one
    beyond its slots; the other executor takes the rest as it frees."""
    a, b = Handle("a", None), Handle("b", None)
    left, _ = _runner({p: ["a"] for p in range(6)}, wait=0.0)._launch([(p, 1) for p in range(6)], {}, [a, b], 0.0)
    assert a.submitted == [0, 1] and b.submitted == [2, 3] and left == [(4, 1), (5, 1)]
