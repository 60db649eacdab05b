"""The event bus: every step of a job posts an event here; listeners log or display it.

Events are plain dicts with an ``event`` name and a wall-clock ``time`` so that the JSON
lines log is readable by anything (jq, pandas) and replayable by later tools (the cache
simulator reads block accesses from it).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, Callable

__all__ = ["EventBus", "JsonLinesLog"]

Listener = Callable[[dict], None]
_FLUSH_AFTER = frozenset({"JobEnd", "ApplicationEnd", "FetchFailed"})


class EventBus:
    """Synchronous fan-out to listeners. A listener that raises is removed and reported
    once on stderr: a broken progress bar or log must never fail a job."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def subscribe(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def post(self, event: str, **fields: Any) -> dict:
        return self.forward({"event": event, "time": time.time(), **fields})

    def forward(self, record: dict) -> dict:
        """Fans out a record made elsewhere (an executor's event, with its own time)."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(record)
            except Exception as exc:  # noqa: BLE001 - isolate listeners from the job
                logging.getLogger("strataflow").error("event listener %r failed and was removed: %r", listener, exc)
                self.unsubscribe(listener)
        return record


class JsonLinesLog:
    """Appends each event as one JSON line; values JSON cannot hold are written as str."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file = open(path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def __call__(self, record: dict) -> None:
        line = json.dumps(record, default=str)
        with self._lock:
            if not self._file.closed:
                self._file.write(line + "\n")
                if record["event"] in _FLUSH_AFTER:
                    self._file.flush()  # a finished job is readable while the app runs

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.flush()
                self._file.close()
