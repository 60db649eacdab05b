"""A progress bar per stage on a terminal (rich), fed by the event bus."""

from __future__ import annotations

import threading

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["StageProgress"]


class StageProgress:
    """Shows one bar per running stage and prints a line with its time when it ends."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self._bars: dict[int, int] = {}
        self._lock = threading.Lock()
        self._started = False

    def __call__(self, ev: dict) -> None:
        kind = ev["event"]
        with self._lock:
            if kind == "StageStart":
                if not self._started:
                    self._progress.start()
                    self._started = True
                self._bars[ev["stage_id"]] = self._progress.add_task(
                    f"stage {ev['stage_id']} {ev['name']}", total=ev["num_tasks"]
                )
            elif kind == "TaskEnd" and ev["stage_id"] in self._bars and ev.get("ok"):
                self._progress.advance(self._bars[ev["stage_id"]])
            elif kind == "StageEnd" and ev["stage_id"] in self._bars:
                self._progress.remove_task(self._bars.pop(ev["stage_id"]))
                self._progress.console.print(
                    f"stage {ev['stage_id']:>3} {ev['name']:<40} {ev['num_tasks']:>4} tasks "
                    f"{ev['seconds']:8.3f} s"
                )
                if not self._bars:
                    self._progress.stop()
                    self._started = False

    def close(self) -> None:
        with self._lock:
            if self._started:
                self._progress.stop()
                self._started = False
