"""The event bus: every step of a job posts an event here; listeners log or display it.

Events are plain dicts with an ``event`` name and a wall-clock ``time`` so that the JSON
lines log is readable by anything (jq, pandas) and replayable by later tools (the cache
simulator reads block accesses from it).
"""

from __future__ import annotations

import errno
import json
import os
import logging
import threading
import time
from typing import Any, Callable

__all__ = ["EventBus", "JsonLinesLog", "open_event_log"]

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
    """Appends each event as one JSON line; values JSON cannot hold are written as str.

    The file is 0600 whatever the umask (made so, or made so again when it exists): it
    holds the application's paths, dataset names and error messages, which are nobody
    else's to read."""

    def __init__(self, path: str) -> None:
        self.path = path
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.fchmod(fd, 0o600)  # the umask may take bits off, never add them; an old file may have more
            self._file = open(fd, "a", encoding="utf-8")
        except BaseException:
            os.close(fd)
            raise
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


def open_event_log(path: str) -> JsonLinesLog:
    """The log of ``Context(event_log=path)``; a ConfigError naming the option, the path
    and the errno when it cannot be opened (a directory, a read-only file system)."""
    from strataflow.common.checks import ConfigError

    try:
        return JsonLinesLog(path)
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        raise ConfigError(f"event_log: cannot open {path!r} ({name}: {exc.strerror})") from exc
