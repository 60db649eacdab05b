"""Reading an event log: every line a JSON object with an ``event`` name and a ``time``.

A report built on a half-read log would mislead, so a malformed line is an error that
names the file and the line, not a line skipped. A last line cut off mid-write (a run that
was killed) is the one exception: it is dropped and counted, since everything before it
is sound. Events come back in the file's order (the simulator's trace follows it);
``by_time`` sorts them for the timeline: executors' events reach the driver's log in
batches, each with the time the executor saw it.
"""

from __future__ import annotations

import json
import os

__all__ = ["LogError", "read_events", "by_time"]


class LogError(ValueError):
    """The event log cannot be read as one (missing, empty, or a malformed line)."""


def _check(record: object, path: str, n: int) -> dict:
    if not isinstance(record, dict):
        raise LogError(f"{path}:{n}: expected a JSON object (an event), got {type(record).__name__}")
    if not isinstance(record.get("event"), str):
        raise LogError(f"{path}:{n}: the event has no 'event' name")
    t = record.get("time")
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        raise LogError(f"{path}:{n}: the {record['event']} event has no numeric 'time'")
    return record


def read_events(path: str | os.PathLike) -> tuple[list[dict], dict]:
    """The log's events in file order, and facts about the reading (``lines``,
    ``truncated_last_line``). Raises ``FileNotFoundError`` for a missing file and
    ``LogError`` (a ``ValueError``) naming the file and line for a malformed one."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"report: no event log at {path!r} (write one with `strataflow run --event-log "
                                f"PATH` or Context(event_log=PATH))")
    if os.path.isdir(path):
        raise LogError(f"report: {path!r} is a directory, not an event log")
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise LogError(f"{path}:{line}: not UTF-8 text; is this a JSON-lines event log?") from None
    lines = text.split("\n")
    last = max((i for i, s in enumerate(lines) if s.strip()), default=-1)
    events: list[dict] = []
    truncated = False
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if i == last and i > 0 and not text.endswith("\n"):
                truncated = True  # the run died mid-write: the lines before it stand
                continue
            raise LogError(f"{path}:{i + 1}: not a JSON event ({exc.msg} at column {exc.colno})") from None
        events.append(_check(record, path, i + 1))
    if not events:
        raise LogError(f"report: {path} holds no events")
    return events, {"lines": last + 1, "truncated_last_line": truncated}


def by_time(events: list[dict]) -> list[dict]:
    """The events sorted by their time (stable: equal times keep the file's order)."""
    return sorted(events, key=lambda e: e["time"])
