"""The live view: folded from a real job's events and polled metrics, drawn with rich;
off a terminal it is nothing."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from strataflow import Context, StorageLevel
from strataflow.metrics.live import LiveState, LiveView
from conftest import local_backends


def _text(renderable) -> str:
    out = io.StringIO()
    Console(file=out, width=160, force_terminal=False).print(renderable)
    return out.getvalue()


@pytest.mark.parametrize("backend", local_backends())
def test_the_view_shows_stages_tasks_per_executor_and_the_cache(tmp_path, backend):
    with Context(memory="8MB", parallelism=2, backend=backend, local_dirs=str(tmp_path), progress=False) as ctx:
        state = LiveState(ctx.config.memory)
        ctx.events.subscribe(state)
        ds = ctx.from_numpy(np.ones((400_000, 4)), 8).persist(StorageLevel.MEMORY_AND_DISK)
        for _ in range(2):
            ds.map_partitions(lambda a: a.sum(axis=0, keepdims=True)).collect()
        state.polled(ctx.metrics())
        m = ctx.metrics()
    text = _text(state.render())
    assert "stages running (2 finished)" in text
    assert len(state.executors) == (2 if backend == "processes" else 1)  # tasks counted where they ran
    assert sum(e["done"] for e in state.executors.values()) == 16
    assert all(f" {eid} " in text for eid in state.executors)
    assert "memory (cached)" in text and "8.0" in text  # the budget
    assert f"misses {m['misses']:.0f}" in text and f"disk {m['disk_hits']:.0f}" in text
    assert f"written {m['disk_bytes_written'] / (1 << 20):,.1f}" in text


def test_a_running_stage_shows_its_progress():
    state = LiveState(1 << 30)
    state({"event": "StageStart", "stage_id": 3, "name": "collect kmeans iteration", "num_tasks": 8})
    for i in range(5):
        state({"event": "TaskStart", "stage_id": 3, "executor": "1"})
    for i in range(3):
        state({"event": "TaskEnd", "stage_id": 3, "executor": "1", "ok": True})
    state({"event": "TaskEnd", "stage_id": 3, "executor": "1", "ok": False})
    text = _text(state.render())
    assert "collect kmeans iteration" in text and "3/8 (1 failed)" in text
    assert state.executors["1"] == {"running": 1, "done": 4}


def test_off_a_terminal_the_view_is_nothing(tmp_path, capsys):
    with Context(memory="8MB", parallelism=1, backend="threads", local_dirs=str(tmp_path), live=True) as ctx:
        assert ctx._view is None  # pytest's stderr is not a terminal
        ctx.range(100, num_partitions=2).count()
    assert capsys.readouterr().err == ""


def test_on_a_terminal_it_draws_polls_and_stops():
    out = io.StringIO()
    state = LiveState(64 << 20)
    polls = []

    def poll():
        polls.append(1)
        return {"storage_memory_used": 16 << 20, "memory_hits": 3, "disk_hits": 1, "misses": 0}, None

    view = LiveView(state, poll, console=Console(file=out, force_terminal=True, width=120), interval=0.05)
    view.start()
    state({"event": "StageStart", "stage_id": 0, "name": "count", "num_tasks": 2})
    from waits import wait_for

    wait_for(lambda: len(polls) >= 2, what="the view to poll twice")  # at its interval, however busy the machine
    view.stop()
    assert len(polls) >= 2
    drawn = out.getvalue()
    assert "memory hit ratio 75%" in drawn and "16.0" in drawn and "64.0" in drawn
