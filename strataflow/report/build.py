"""One event log to one report folder: ``report.html`` and the PNGs it inlines.

Without matplotlib (the ``plots`` extra) the page is still written, with every table and
figure, and a note in place of each chart: a user who installed the bare package gets
the page and the one line that says how to get the charts, not an error.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from strataflow.io.output_files import make_output_dirs, open_output
from strataflow.report import charts
from strataflow.simulate.trace import last_application
from strataflow.report.events import by_time, read_events
from strataflow.report.occupancy import fold_occupancy
from strataflow.report.page import Section, auto_table, render_page, simulator_table, stage_table, summary_table
from strataflow.report.replay import replay
from strataflow.report.stages import run_totals, stage_rows
from strataflow.report.input_rows import input_rows
from strataflow.report.store_rows import store_rows
from strataflow.report.summary import summary_rows
from strataflow.report.timeline import fold_timeline
from strataflow.report.window import time_window

__all__ = ["render_report", "default_out_dir"]


def default_out_dir(log: str | os.PathLike) -> str:
    """``run.jsonl`` -> ``run-report`` beside it."""
    base, _ = os.path.splitext(os.fspath(log))
    return base + "-report"


def render_report(log: str | os.PathLike, out_dir: str | os.PathLike | None = None) -> dict:
    """Reads ``log``, writes ``report.html`` and the charts' PNGs into ``out_dir``
    (default: ``default_out_dir(log)``); returns ``{"html": path, "charts": {name: path},
    "summary": {key: value}, "notes": [...]}``. Raises FileNotFoundError / LogError
    (a ValueError) for a missing or malformed log. Without matplotlib it writes the page
    with no chart (``charts`` is empty, each chart's place says ``charts.HINT``) and prints
    ``charts.HINT`` once on stdout."""
    plots = charts.available()
    raw, facts = read_events(log)
    apps = sum(e["event"] == "ApplicationStart" for e in raw)
    raw = last_application(raw)  # runs appended to one log: the last one
    events = by_time(raw)
    out = os.fspath(out_dir) if out_dir is not None else default_out_dir(log)
    make_output_dirs(out, exist_ok=True)  # a user's output: at most 0755 / 0644 (``io/output_files.py``)
    paths = charts.chart_paths(out)

    app = next((e for e in events if e["event"] == "ApplicationStart"), {})
    tl = fold_timeline(events)
    window = time_window(events)
    occ = fold_occupancy(events, tl.t0)
    rows = stage_rows(events)
    totals = run_totals(events)
    sim = replay(log)
    summary = summary_rows(app, tl, totals, occ, sim, window) + store_rows(events, totals["cache"]) + input_rows(events)
    missing = "" if plots else charts.HINT

    def draw(chart: Callable[..., str], *args: Any) -> str | None:
        return chart(*args) if plots else None

    notes = []
    if facts["truncated_last_line"]:
        notes.append("the log's last line was cut off (the run was killed?) and is left out")
    if apps > 1:
        notes.append(f"the log holds {apps} applications (runs appended to one file): this page shows the last")
    if not app:
        notes.append("the log has no ApplicationStart event: budget and backend unknown")

    sections = [Section("summary", "Summary",
                        "The run's figures as the engine measured them (the sum of its jobs' cache metrics), "
                        "and the simulator's best on the same reads.", extra=summary_table(summary))]
    sections.append(Section("timeline", "Timeline", "Each job, stage and task; a row per executor slot (tasks "
                            "packed onto the slots their executor had). Colours tell stages apart. The time "
                            "charts run from the first task to the end of the work: executor start-up and the "
                            "time after the last task are in the summary, not drawn.",
                            draw(charts.timeline_chart, tl, window, paths["timeline"]), missing=missing))
    note = ("Bytes held per dataset in memory, on each disk tier and in mapped region files, replayed from the "
            "blocks' events. Blocks computed straight to disk post no event of their own: they are placed at "
            "the end of their task.")
    if occ.estimated_blocks:
        note += f" {occ.estimated_blocks} disk block size(s) are estimated (the median of their dataset's)."
    sections.append(Section("occupancy", "Cache occupancy", note,
                            draw(charts.occupancy_chart, occ, window, paths["occupancy"]), missing=missing))
    sections.append(Section("moves", "Bytes moved", "Cumulative MiB dropped from memory, re-cached on a read, "
                            "prefetched ahead of a read, and moved up or down between disk tiers.",
                            draw(charts.moves_chart, occ, window, paths["moves"]), missing=missing))
    if occ.split is not None:
        sections.append(Section("memory-split", "Memory split", "The budget shared by the heap (execution and "
                                "cached blocks) and the page cache of mapped blocks, as the split moved it.",
                                draw(charts.split_chart, occ, window, paths["memory_split"]), missing=missing))
    sections.append(Section("hits", "Hit ratios per stage", "Reads of cached blocks in each stage, by where they "
                            "were served (the stage's own metrics); stages with no such reads are left out of "
                            "the chart.", draw(charts.hits_chart, rows, paths["hits"]) if rows else None,
                            stage_table(rows), missing=missing if rows else ""))
    if "report" in sim:
        n = sim["executors"]
        who = (f"Each of the {n} executors' block reads replayed against its own memory (as the run had it), "
               "the counts summed, " if n > 1 else "The run's block reads replayed ")
        sections.append(Section("simulator", "Policies replayed", who + "by `strataflow simulate` against every "
                                "policy, Belady's clairvoyant optimum (opt) and an unbounded cache; the dashed line "
                                "is what this run achieved on the same reads, and the hatched bar replays the "
                                "policy it ran.",
                                draw(charts.simulator_chart, sim["report"], sim["measured"], paths["simulator"],
                                     sim["policy"]),
                                simulator_table(sim["report"], sim["measured"], sim["policy"]), missing=missing))
    else:
        sections.append(Section("simulator", "Policies replayed", f"Not replayed: {sim['error']}"))
    if occ.auto_levels:
        sections.append(Section("auto-levels", "AUTO level choices", "Each executor's choice of level for "
                                "datasets persisted at AUTO, and why.", extra=auto_table(occ.auto_levels)))
    name = app.get("app_name") or os.path.basename(os.fspath(log))
    subtitle = (f"event log {os.fspath(log)}: {facts['lines']} lines, {len(events)} events"
                + "".join(f"; {n}" for n in notes))
    text = render_page(f"strataflow report: {name}", subtitle, sections)
    html_path = os.path.join(out, "report.html")
    with os.fdopen(open_output(html_path), "w", encoding="utf-8") as fh:
        fh.write(text)
    written = {k: p for k, p in paths.items() if os.path.exists(p) and any(s.png == p for s in sections)}
    if not plots:
        print(charts.HINT, flush=True)  # once, on stdout: the page is written, its charts are not
    return {"html": html_path, "charts": written, "summary": {r.key: r.value for r in summary}, "notes": notes}
