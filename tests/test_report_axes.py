"""The report's time charts show the work, not the application's life.

A small run spends seconds starting executors before its first task and, after its last
job, running the driver's own code inside the Context (``strataflow run``'s result check)
and stopping executors: charted from the first event to the last, the work was a sliver.
Here a generated log has 2 s of start-up before the first task and 9 s of idle events
after the last job; every time chart must start at the first task, end at the work's last
event, and share that span and its plot area; the start-up is a figure in the summary.
"""

from __future__ import annotations

import json
import re

import pytest

from report_capture import render_reading_charts
from strataflow.report import charts
from strataflow.report.events import by_time, read_events
from strataflow.report.window import Window, time_window

MIB = 1 << 20
T = 1_700_000_000.0  # the application's first event, epoch seconds
STARTUP, FIRST_TASK, WORK_END, LOG_END = 2.0, 2.1, 2.9, 12.0
TIME_CHARTS = ("timeline.png", "occupancy.png", "moves.png", "memory_split.png")
LONG_NAME = "points_scaled_and_normalised_for_kmeans#1"  # longer than a time chart's legend has room for


def small_run_events() -> list[dict]:
    """A run's events as the engine logs them: start-up of 2 s, one job of one stage with
    two tasks per executor on 2 executors reading a persisted dataset (a miss, a store, a
    drop, a re-cache), a memory split move, then idle: a dataset unpersisted and the
    application's end, 9.1 s after the last job."""
    evs = [{"event": "ApplicationStart", "time": T, "app_id": "gen", "app_name": "axes", "memory": 4 * MIB,
            "backend": "processes", "executors": 2, "cores_per_executor": 1, "executor_memory": 2 * MIB,
            "policy": "lineage"},
           {"event": "ExecutorsStarted", "time": T + STARTUP, "seconds": STARTUP, "executors": 2},
           {"event": "JobStart", "time": T + 2.05, "job_id": 0, "description": "count points#1"},
           {"event": "StageStart", "time": T + 2.05, "stage_id": 0, "job_id": 0, "name": "count points#1",
            "kind": "result", "num_tasks": 4,
            "persisted": [{"dataset_id": 1, "name": LONG_NAME, "level": "MEMORY_AND_DISK"}]}]
    for i, (ex, start, end) in enumerate((("0", 2.1, 2.4), ("1", 2.15, 2.5), ("0", 2.4, 2.8), ("1", 2.5, 2.85))):
        block = f"rdd_1_{i % 2}"
        evs += [{"event": "TaskStart", "time": T + start, "task_id": i, "stage_id": 0, "job_id": 0, "partition": i,
                 "attempt": 1, "executor": ex},
                {"event": "BlockAccess", "time": T + start + 0.01, "block": block, "dataset_id": 1, "split": i % 2,
                 "result": "miss" if i < 2 else "disk", "bytes": MIB, "executor": ex},
                {"event": "BlockStored" if i < 2 else "BlockRecached", "time": T + end - 0.05, "block": block,
                 "where": "memory", "dataset_id": 1, "bytes": MIB, "executor": ex},
                {"event": "TaskEnd", "time": T + end, "task_id": i, "stage_id": 0, "job_id": 0, "partition": i,
                 "attempt": 1, "ok": True, "seconds": end - start, "executor": ex}]
        if i < 2:
            evs.append({"event": "BlockDropped", "time": T + end - 0.01, "block": block, "dataset_id": 1,
                        "bytes": MIB, "to": "disk", "executor": ex})
    evs += [{"event": "MemorySplitMoved", "time": T + 2.6, "to": "mapped", "bytes": MIB // 2, "heap": 3 * MIB // 2,
             "mapped": MIB // 2, "budget": 2 * MIB, "executor": "0"},
            {"event": "StageEnd", "time": T + WORK_END, "stage_id": 0, "job_id": 0, "name": "count points#1",
             "kind": "result", "num_tasks": 4, "ok": True, "seconds": 0.85,
             "cache": {"memory_hits": 0, "disk_hits": 2, "misses": 2}},
            {"event": "JobEnd", "time": T + WORK_END, "job_id": 0, "ok": True, "seconds": 0.85,
             "cache": {"memory_hits": 0, "disk_hits": 2, "misses": 2}},
            {"event": "DatasetUnpersisted", "time": T + 9.0, "dataset_id": 1, "name": LONG_NAME, "blocks": 2},
            {"event": "ApplicationEnd", "time": T + LOG_END, "app_id": "gen"}]
    return evs


def write_log(path, events: list[dict]) -> str:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return str(path)


def test_the_window_runs_from_the_first_task_to_the_works_last_event():
    w = time_window(by_time(small_run_events()))
    assert w.t0 == T
    assert w.start == pytest.approx(FIRST_TASK) and w.end == pytest.approx(WORK_END)
    assert w.startup == pytest.approx(STARTUP) and w.log_end == pytest.approx(LOG_END)
    assert w.after == pytest.approx(LOG_END - WORK_END) and w.seconds == pytest.approx(WORK_END - FIRST_TASK)
    lo, hi = w.limits()
    assert FIRST_TASK - 0.02 < lo < FIRST_TASK and WORK_END < hi < WORK_END + 0.02  # a 1% margin each side


def test_a_job_that_never_ended_runs_the_window_to_the_logs_end():
    """A killed run: its last job and task have no end; the work went on to the last event."""
    evs = [e for e in small_run_events() if e["event"] not in ("JobEnd", "StageEnd", "ApplicationEnd")]
    evs = [e for e in evs if not (e["event"] == "TaskEnd" and e["task_id"] == 3)]
    w = time_window(by_time(evs))
    assert w.start == pytest.approx(FIRST_TASK) and w.end == pytest.approx(9.0) and w.after == 0


def test_a_log_without_jobs_is_shown_whole_and_one_without_start_up_says_none():
    evs = [{"event": "ApplicationStart", "time": T}, {"event": "MemorySplitMoved", "time": T + 3},
           {"event": "ApplicationEnd", "time": T + 4}]
    assert time_window(evs) == Window(T, 0.0, 4.0, 4.0, None)
    # tasks whose starts are not in the log: their ends less their seconds
    ends = [e for e in small_run_events() if e["event"] != "TaskStart"]
    assert time_window(by_time(ends)).start == pytest.approx(FIRST_TASK)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The generated log's report, with every chart's x limits and plot area read as it
    is saved."""
    base = tmp_path_factory.mktemp("axes")
    log = write_log(base / "events.jsonl", small_run_events())
    def read(fig, path, **kw):  # a time chart comes laid out (``layout=False``): its legends are where they will be
        legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
        return {"xlim": [ax.get_xlim() for ax in fig.axes],
                "layout": kw.get("layout", True),
                "legends": [(leg.get_window_extent(), [t.get_text() for t in leg.get_texts()]) for leg in legends],
                "figure": fig.bbox,
                "area": [(ax.get_position().x0, ax.get_position().x1) for ax in fig.axes],
                "width": fig.get_figwidth(),
                "xlabel": [ax.get_xlabel() for ax in fig.axes]}

    result, seen, html = render_reading_charts(log, base / "report", read)
    return {"result": result, "seen": seen, "html": html, "log": log}


def test_every_time_chart_starts_at_the_first_task_and_ends_at_the_works_end(report):
    seen = report["seen"]
    assert set(TIME_CHARTS) <= set(seen)
    limits = {lim for name in TIME_CHARTS for lim in seen[name]["xlim"]}
    assert len(limits) == 1  # one window, shared by every panel of every time chart
    lo, hi = limits.pop()
    assert lo == pytest.approx(FIRST_TASK, abs=0.02) and hi == pytest.approx(WORK_END, abs=0.02)
    assert lo > STARTUP and hi < 9.0  # neither the start-up nor the idle tail is on the axis


def test_the_time_charts_share_one_plot_area(report):
    """Stacked on the page, one time sits at one place on all of them."""
    seen = report["seen"]
    inches = {(round(x0 * s["width"], 3), round(x1 * s["width"], 3))
              for s in (seen[n] for n in TIME_CHARTS) for x0, x1 in s["area"]}
    assert len(inches) == 1


def test_the_time_charts_legends_fit_their_fixed_margin(report):
    """A fixed plot area leaves a fixed width for the legends: each lies inside its
    figure, a long dataset name cut in its middle with its ``#id`` kept."""
    seen = report["seen"]
    for name in TIME_CHARTS:
        assert seen[name]["layout"] is False, name  # laid out by ``_aligned``, not re-laid out when saved
        fig = seen[name]["figure"]
        for box, _ in seen[name]["legends"]:
            assert fig.x0 <= box.x0 and box.x1 <= fig.x1, (name, box, fig)
    texts = [t for _, texts in seen["occupancy.png"]["legends"] for t in texts]
    short = [t for t in texts if t.startswith("points_")]
    assert short and all("…#1 (peak" in t and LONG_NAME not in t for t in short), texts


def test_the_axis_and_the_summary_say_what_is_left_out(report):
    summary = dict(re.findall(r'data-key="([^"]+)" data-value="([^"]*)"', report["html"]))
    assert float(summary["startup_s"]) == pytest.approx(STARTUP)
    assert float(summary["window_s"]) == pytest.approx(WORK_END - FIRST_TASK)
    assert float(summary["after_s"]) == pytest.approx(LOG_END - WORK_END)
    assert float(summary["duration_s"]) == pytest.approx(LOG_END)  # the application's life, still said
    assert "executors started in 2.00 s (not charted)" in report["html"]
    label = [t for t in report["seen"]["timeline.png"]["xlabel"] if t][0]
    assert "executor start-up 2.00 s" in label and "9.10 s after the work" in label


def test_the_log_is_read_as_generated(report):
    """The generated log is one the report reads whole: its sections have something to show."""
    events, facts = read_events(report["log"])
    assert facts == {"lines": len(small_run_events()), "truncated_last_line": False}
    assert set(report["result"]["charts"]) == {"timeline", "occupancy", "moves", "memory_split", "hits", "simulator"}
