"""Jobs, stages and tasks as intervals, each task placed on one slot of its executor.

The log says which executor ran a task, not which of its slots (threads in one
process, or one per executor process): a slot is rebuilt by packing the executor's tasks
greedily, each into the first slot free at its start, which needs exactly as many slots
as tasks ran at once. A task the driver declared lost (``TaskEnd`` with ``task_id`` -1
and no start) closes the open attempt of that stage and partition; a task with no end
(the run was killed) ends at the log's last event and is marked unfinished.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

__all__ = ["Span", "Timeline", "fold_timeline"]


@dataclass
class Span:
    """One interval on the timeline, in seconds since the application started."""

    start: float
    end: float
    label: str
    ok: bool = True
    key: dict = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)


@dataclass
class Timeline:
    t0: float
    t_end: float
    jobs: list[Span]
    stages: list[Span]
    tasks: list[Span]                      # key: executor, slot, stage_id, partition, attempt
    slots: list[tuple[str, int]]           # (executor, slot) rows, executors in order of first task

    @property
    def duration(self) -> float:
        return max(0.0, self.t_end - self.t0)


def _executor(ev: dict) -> str:
    e = ev.get("executor")
    return "driver" if e is None else str(e)


def _pair(events: list[dict], t0: float, t_end: float, start: str, end: str, ident, label) -> list[Span]:
    """Intervals from start/end events matched by ``ident(ev)``; an unmatched start runs
    to the end of the log, marked not ok."""
    open_: dict = {}
    spans: list[Span] = []
    for ev in events:
        kind = ev["event"]
        if kind == start:
            open_[ident(ev)] = ev
        elif kind == end:
            s = open_.pop(ident(ev), None)
            first = s or ev
            begin = s["time"] if s else ev["time"] - float(ev.get("seconds") or 0.0)
            spans.append(Span(begin - t0, ev["time"] - t0, label(first), bool(ev.get("ok", True)), dict(first)))
    for s in open_.values():
        spans.append(Span(s["time"] - t0, t_end - t0, label(s) + " (unfinished)", False, dict(s)))
    return sorted(spans, key=lambda sp: sp.start)


def _tasks(events: list[dict], t0: float, t_end: float) -> list[Span]:
    open_: dict = {}
    spans: list[Span] = []

    def span(start: dict | None, end: dict | None) -> Span:
        ev = start or end
        begin = start["time"] if start else end["time"] - float(end.get("seconds") or 0.0)
        stop = end["time"] if end else t_end
        ok = bool(end.get("ok", False)) if end else False
        key = {"executor": _executor(end if start is None else start), "stage_id": ev.get("stage_id"),
               "job_id": ev.get("job_id"), "partition": ev.get("partition"), "attempt": ev.get("attempt"),
               "error": end.get("error") if end else "unfinished"}
        return Span(begin - t0, stop - t0, f"stage {ev.get('stage_id')} partition {ev.get('partition')}", ok, key)

    for ev in events:
        kind = ev["event"]
        ident = (ev.get("stage_id"), ev.get("partition"), ev.get("attempt"))
        if kind == "TaskStart":
            open_[(_executor(ev), ev.get("task_id"), *ident)] = ev
        elif kind == "TaskEnd":
            start = open_.pop((_executor(ev), ev.get("task_id"), *ident), None)
            if start is None and ev.get("task_id") == -1:  # lost with its executor: the driver's word
                match = next((k for k in open_ if k[2:] == ident), None)
                start = open_.pop(match) if match else None
            spans.append(span(start, ev))
    spans.extend(span(s, None) for s in open_.values())
    return sorted(spans, key=lambda sp: sp.start)


def _assign_slots(tasks: list[Span]) -> list[tuple[str, int]]:
    """Greedy interval partitioning per executor (tasks sorted by start)."""
    free: dict[str, list] = {}     # executor -> heap of (end, slot)
    count: dict[str, int] = {}
    for sp in tasks:
        ex = sp.key["executor"]
        heap = free.setdefault(ex, [])
        if heap and heap[0][0] <= sp.start + 1e-9:
            _, slot = heapq.heappop(heap)
        else:
            slot = count.get(ex, 0)
            count[ex] = slot + 1
        sp.key["slot"] = slot
        heapq.heappush(heap, (sp.end, slot))
    order = sorted(count, key=lambda e: (not e.isdigit(), int(e) if e.isdigit() else 0, e))
    return [(ex, s) for ex in order for s in range(count[ex])]


def _clip(spans: list[Span], end: float) -> list[Span]:
    """Spans held inside the application's span [0, end]: a start rebuilt from an end
    event's ``seconds`` may fall before the first event, and must not stretch the axis."""
    for sp in spans:
        sp.start = min(max(sp.start, 0.0), end)
        sp.end = min(max(sp.end, sp.start), end)
    return spans


def fold_timeline(events: list[dict]) -> Timeline:
    """The timeline of a log's events (sorted by time, as ``read_events`` returns them),
    from the application's first event to its last: time 0 is the first event (its
    ``ApplicationStart``), ``duration`` the span to the last, and every interval lies
    within it. The charts show the part of it that holds the work (``window.time_window``)."""
    t0 = events[0]["time"]
    t_end = events[-1]["time"]
    jobs = _pair(events, t0, t_end, "JobStart", "JobEnd", lambda e: e.get("job_id"),
                 lambda e: f"job {e.get('job_id')}: {e.get('description') or ''}".rstrip(": "))
    stages = _pair(events, t0, t_end, "StageStart", "StageEnd", lambda e: (e.get("stage_id"), e.get("job_id")),
                   lambda e: f"stage {e.get('stage_id')}: {e.get('name') or ''}".rstrip(": "))
    end = max(0.0, t_end - t0)
    jobs, stages, tasks = _clip(jobs, end), _clip(stages, end), _clip(_tasks(events, t0, t_end), end)
    slots = _assign_slots(tasks)
    return Timeline(t0, t_end, jobs, stages, tasks, slots)
