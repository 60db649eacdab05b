"""The live view (``Context(live=True)``, ``strataflow run --live``): while a job runs, the
running stages and their tasks per executor, the cache's occupancy per tier as bars
against the budget, the hit ratio and the bytes moved so far, redrawn a few times a second
on the terminal (rich's ``Live``).

Why: under memory pressure the question is *what is the cache doing now*: Spark's UI and
Dask's dashboard answer it in a browser; a strataflow user gets it in the terminal, with
no server. Task progress comes from the event bus (every executor's ``TaskStart`` and
``TaskEnd`` carry its id); the cache's figures from ``Context.metrics()`` polled once a
second (one call per executor), not from the events, whose sum would drift from the
stores' truth after an unpersist or a tier move.

Off a terminal the view is nothing (``LiveView.wanted`` is False): a log file or a CI run
must not fill with redraws.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table

__all__ = ["LiveView", "LiveState"]

MIB = 1 << 20  # MiB, as `strataflow run` and the report print


def _mb(n: float) -> str:
    return f"{n / MIB:,.1f}"


class LiveState:
    """What the view shows, folded from events (stages, tasks per executor) and the last
    polled metrics; thread-safe. ``render()`` draws it (also used by tests)."""

    def __init__(self, memory_budget: int) -> None:
        self.memory_budget = memory_budget
        self._lock = threading.Lock()
        self.stages: dict[int, dict] = {}  # running: name, tasks, done, failed
        self.executors: dict[str, dict] = {}  # running, done
        self.finished_stages = 0
        self.metrics: dict = {}
        self.split: dict = {}

    def __call__(self, ev: dict) -> None:
        kind = ev.get("event")
        with self._lock:
            if kind == "StageStart":
                self.stages[ev["stage_id"]] = {"name": ev.get("name", ""), "tasks": ev.get("num_tasks", 0),
                                               "done": 0, "failed": 0}
            elif kind == "StageEnd":
                if self.stages.pop(ev.get("stage_id"), None) is not None:
                    self.finished_stages += 1
            elif kind in ("TaskStart", "TaskEnd"):
                ex = self.executors.setdefault(str(ev.get("executor", "?")), {"running": 0, "done": 0})
                if kind == "TaskStart":
                    ex["running"] += 1
                else:
                    ex["running"] = max(0, ex["running"] - 1)
                    ex["done"] += 1
                    stage = self.stages.get(ev.get("stage_id"))
                    if stage is not None:
                        stage["done" if ev.get("ok", True) else "failed"] += 1
            elif kind == "ExecutorLost":
                self.executors.pop(str(ev.get("executor", ev.get("executor_id", "?"))), None)

    def polled(self, metrics: dict, split: dict | None = None) -> None:
        with self._lock:
            self.metrics = dict(metrics)
            self.split = dict(split or {})

    def render(self) -> Group:
        with self._lock:
            stages, executors = dict(self.stages), {k: dict(v) for k, v in self.executors.items()}
            m, split, finished = dict(self.metrics), dict(self.split), self.finished_stages
        parts: list[Any] = []
        st = Table(title=f"stages running ({finished} finished)", expand=False, title_justify="left")
        for col in ("stage", "name", "tasks", ""):
            st.add_column(col)
        for sid, s in sorted(stages.items()):
            total = max(1, s["tasks"])
            st.add_row(str(sid), s["name"][:48], f"{s['done']}/{s['tasks']}" + (f" ({s['failed']} failed)"
                       if s["failed"] else ""), ProgressBar(total=total, completed=s["done"], width=30))
        parts.append(st)
        ex = Table(title="executors", title_justify="left")
        for col in ("executor", "running", "tasks done"):
            ex.add_column(col)
        for eid, e in sorted(executors.items()):
            ex.add_row(eid, str(e["running"]), str(e["done"]))
        parts.append(ex)
        parts.append(self._cache_table(m, split))
        return Group(*parts)

    def _cache_table(self, m: dict, split: dict) -> Table:
        t = Table(title="cache", title_justify="left")
        for col in ("where", "MiB", "of MiB", ""):
            t.add_column(col)
        tiers = m.get("tier_bytes", {}) or {}
        budget = split.get("heap", self.memory_budget) if split else self.memory_budget
        used = m.get("storage_memory_used", tiers.get("memory", 0))
        t.add_row("memory (cached)", _mb(used), _mb(budget), ProgressBar(total=max(1, budget), completed=used,
                                                                       width=30))
        for name, n in tiers.items():
            if name != "memory":
                t.add_row(name, _mb(n), "", "")
        if m.get("mmap_bytes_mapped"):
            mapped_limit = split.get("mapped") if split else None
            t.add_row("mapped (files)", _mb(m["mmap_bytes_mapped"]),
                      "" if mapped_limit is None else f"pages {_mb(mapped_limit)}", "")
        hits = {k: m.get(k, 0) for k in ("memory_hits", "disk_hits", "misses")}
        reads = sum(hits.values())
        ratio = f"{hits['memory_hits'] / reads:.0%}" if reads else "-"
        t.caption = (f"hits: memory {hits['memory_hits']:.0f} / disk {hits['disk_hits']:.0f} / "
                     f"misses {hits['misses']:.0f} (memory hit ratio {ratio}); MiB dropped "
                     f"{_mb(m.get('bytes_dropped', 0))}, re-cached {_mb(m.get('bytes_recached', 0))}, "
                     f"prefetched {_mb(m.get('bytes_prefetched', 0))}, written {_mb(m.get('disk_bytes_written', 0))}, "
                     f"read {_mb(m.get('disk_bytes_read', 0))}"
                     + (f"; split moves {split.get('moves', 0)}" if split else ""))
        return t


class LiveView:
    """Draws a :class:`LiveState` on ``console`` (stderr by default) while running,
    polling ``poll()`` -> ``(metrics, split)`` every ``interval`` seconds. ``start()``
    does nothing where ``wanted`` is False (not a terminal)."""

    def __init__(self, state: LiveState, poll: Callable[[], tuple[dict, dict | None]],
                 console: Console | None = None, interval: float = 1.0) -> None:
        self.state, self._poll, self.interval = state, poll, interval
        self.console = console or Console(stderr=True)
        self._live: Live | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @staticmethod
    def wanted(stream: Any = None) -> bool:
        """Only on a terminal."""
        stream = sys.stderr if stream is None else stream
        return bool(getattr(stream, "isatty", lambda: False)())

    def start(self) -> "LiveView":
        if not self.console.is_terminal:
            return self
        self._live = Live(get_renderable=self.state.render, console=self.console, refresh_per_second=4,
                          transient=False)
        self._live.start()
        self._thread = threading.Thread(target=self._run, name="strataflow-live", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll_once()

    def poll_once(self) -> None:
        try:
            metrics, split = self._poll()
        except Exception:  # noqa: BLE001 - the view must never fail the job (e.g. stopping)
            return
        self.state.polled(metrics, split)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._live is not None:
            self.poll_once()  # the last figures
            self._live.stop()
            self._live = None
