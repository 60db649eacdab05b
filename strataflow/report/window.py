"""The span of time the report's charts show: the run's work, not the application's life.

A small run spends most of its life outside its work. Before the first task, the
executors start (1.6-2.3 s of processes spawning and importing); after the last job, the
driver still runs inside the Context before ``ApplicationEnd``: ``strataflow run``
re-reads the whole input there for its independent result check (16 s of a 37 s word
count), and stopping the executors takes a second or two more. Charted from the first
event to the last, the work was a sliver at the right edge.

So every time chart (timeline, occupancy, bytes moved, memory split) shares one window:
from the first task's start to the work's last event, the last end of a job, stage or
task. A job that never ended (a killed run) runs to the log's last event, and so does the
window; a log with no job at all is shown whole. Time stays in seconds since the
application's first event, the same numbers the log and the summary use. Start-up and the
time after the work are numbers in the summary, not drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Window", "time_window"]

#: the events that end a piece of work: the window ends at the last of them
WORK_ENDS = frozenset({"JobEnd", "StageEnd", "StageSkipped", "TaskEnd"})


@dataclass(frozen=True)
class Window:
    """The charts' time span and what was left out of it, in seconds since the
    application's first event (``t0``)."""

    t0: float                 # the application's first event (epoch seconds)
    start: float              # the first task's start (0 when the log has no task or job)
    end: float                # the work's last event
    log_end: float            # the log's last event (``ApplicationEnd`` in a finished run)
    startup: float | None     # executors ready (``ExecutorsStarted``) after this long; None if not logged

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)

    @property
    def after(self) -> float:
        """Seconds from the work's end to the log's last event (result check, shutdown)."""
        return max(0.0, self.log_end - self.end)

    def limits(self) -> tuple[float, float]:
        """The x limits of a time chart: the window with a margin of 1% each side, so
        the first and last bars do not sit on the axes' frame."""
        pad = max(self.seconds * 0.01, 5e-4)
        return max(0.0, self.start - pad), self.end + pad


def time_window(events: list[dict]) -> Window:
    """The window of a log's events (sorted by time, as ``events.by_time`` returns them).

    start: the first ``TaskStart`` (a task with no start: its ``TaskEnd`` less its
    ``seconds``), else the first ``JobStart``, else the log's first event. end: the last
    ``JobEnd``/``StageEnd``/``StageSkipped``/``TaskEnd``, or the log's last event when a
    job was started and never ended, or when the log has no such end."""
    t0, t_last = events[0]["time"], events[-1]["time"]
    starts = [e["time"] for e in events if e["event"] == "TaskStart"]
    if not starts:
        starts = [e["time"] - float(e.get("seconds") or 0.0) for e in events if e["event"] == "TaskEnd"]
    if not starts:
        starts = [e["time"] for e in events if e["event"] == "JobStart"]
    begin = min(starts, default=t0)
    open_jobs = {e.get("job_id") for e in events if e["event"] == "JobStart"}
    open_jobs -= {e.get("job_id") for e in events if e["event"] == "JobEnd"}
    ends = [e["time"] for e in events if e["event"] in WORK_ENDS]
    end = t_last if open_jobs or not ends else max(ends)
    ready = next((e for e in events if e["event"] == "ExecutorsStarted"), None)
    start = min(max(begin - t0, 0.0), end - t0)
    return Window(t0, start, end - t0, t_last - t0, None if ready is None else ready["time"] - t0)
