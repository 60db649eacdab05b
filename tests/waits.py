"""Waiting in tests without making the outcome depend on the machine's speed.

A test that needs something to have happened (a task to have started, a process to have
died, a thread to have ended) waits for *that*: a file the task creates, a signal, a
state it can observe. ``wait_for`` polls for such a state; its timeout only guards against
a hang, so it is generous (``HANG_S``): on a busy machine the wait is longer, never a
different outcome. Never ``time.sleep(n)`` and hope that ``n`` was enough.
"""

from __future__ import annotations

import os
import time
from typing import Callable, TypeVar

__all__ = ["HANG_S", "wait_for", "wait_for_file", "hold_until"]

#: seconds after which a wait is a hang: far beyond any scheduling delay
HANG_S = 60.0

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float = HANG_S, what: str = "the condition",
             interval: float = 0.02) -> T:
    """``predicate()``'s first truthy value, polled every ``interval`` seconds; fails the
    test naming ``what`` if ``timeout`` seconds pass first (a hang, not a slow machine)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}: it never happened (a hang)")
        time.sleep(interval)


def wait_for_file(path: "str | os.PathLike", timeout: float = HANG_S, what: str | None = None) -> None:
    """Until ``path`` exists (a marker a task or process creates when it has started)."""
    wait_for(lambda: os.path.exists(path), timeout, what or f"{os.fspath(path)} to appear")


def hold_until(path: "str | os.PathLike", timeout: float = HANG_S) -> None:
    """For a task that must keep running until the test has acted: returns once ``path``
    exists (the test creates it), instead of sleeping for a guess of long enough. A task
    still held after ``timeout`` raises (the test hung or forgot to release it)."""
    wait_for(lambda: os.path.exists(path), timeout, f"the test to create {os.fspath(path)}", interval=0.01)
