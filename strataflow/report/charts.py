"""The report's charts as PNG files (matplotlib, headless).

matplotlib is an optional extra (``pip install 'strataflow[plots]'``) imported only when
a chart is drawn. Every chart follows the same rules, so it tells the truth at a glance:
y axes start at zero, both axes say what they measure and in which unit, every series
is in a legend outside the axes (never over the data), bars are wide enough to see,
bytes are in MiB (2**20 bytes, as ``strataflow run`` prints), datasets are named
``name#id`` as the CLI names them, and time is seconds since the application's first
event, over one window shared by every time chart: from the first task to the work's last
event (``window.time_window``), so executor start-up and the driver's time after the last
job do not squeeze the work into a sliver.

Without matplotlib, ``available()`` is False and the page is written without charts.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from strataflow.io.output_files import output_file_mode
from strataflow.report.occupancy import MOVES, Occupancy, Series
from strataflow.report.stages import StageRow
from strataflow.report.timeline import Timeline
from strataflow.report.window import Window

__all__ = ["HINT", "available", "pyplot", "timeline_chart", "occupancy_chart", "moves_chart", "split_chart",
           "hits_chart", "simulator_chart"]

MIB = 1 << 20  # the unit of every byte figure on the page, as `strataflow run` prints
TIME_LABEL = "seconds since the application started"
#: the time charts' margins in inches, left (slot names) and right (legends): one plot area for all
TIME_WIDTH_IN, TIME_LEFT_IN, TIME_RIGHT_IN = 11.0, 1.45, 2.9
HINT = "charts need matplotlib: pip install 'strataflow[plots]'"
LOCATION_TITLE = {"memory": "memory (heap cache)", "mapped": "mapped region files"}


def available() -> bool:
    """Whether matplotlib can be imported (the ``plots`` extra is installed)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def pyplot() -> Any:
    """matplotlib's pyplot on the headless Agg backend, or an ImportError naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError(f"strataflow report draws its charts with matplotlib; {HINT}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str, layout: bool = True) -> str:
    """Saves ``fig`` as a PNG (laid out tight, unless ``layout`` is False: already laid out)."""
    plt = pyplot()
    if layout:
        fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})  # no tool's web address in the file
    os.chmod(path, output_file_mode())  # a user's output: at most 0644 whatever the umask
    plt.close(fig)
    return path


def _steps(series: list[Series], end: float) -> tuple[np.ndarray, np.ndarray]:
    """Step functions sampled on the union of their change times (and ``end``):
    times, and one row of values per series."""
    times = np.array(sorted({0.0, end, *(t for s in series for t in s.t)}))
    rows = np.zeros((len(series), len(times)))
    for i, s in enumerate(series):
        if s.t:
            idx = np.searchsorted(np.asarray(s.t), times, side="right") - 1
            vals = np.asarray(s.v, dtype=float)
            rows[i] = np.where(idx >= 0, vals[np.clip(idx, 0, None)], 0.0)
    return times, rows


def _short(label: str, n: int = 20) -> str:
    """A dataset's ``name#id`` cut to ``n`` characters in the middle of its name, keeping
    ``#id``: a time chart's legend has a fixed width (``TIME_RIGHT_IN``)."""
    if len(label) <= n:
        return label
    base, sep, ident = label.rpartition("#")
    if not sep:
        return label[:n - 1] + "…"
    return base[:max(1, n - len(ident) - 2)] + "…#" + ident


def _aligned(fig: Any) -> Any:
    """A time chart laid out with the same plot area left and right as every other: the
    charts stack on the page, and one time must sit at one place on all of them (a
    tight layout would size each plot area by its own labels and legend)."""
    fig.tight_layout()
    width = fig.get_figwidth()
    fig.subplots_adjust(left=TIME_LEFT_IN / width, right=1 - TIME_RIGHT_IN / width)
    return fig


def _time_axis(ax: Any, window: Window) -> None:
    """The shared time axis: the window's limits, and a label that says what is left out."""
    ax.set_xlim(*window.limits())
    left = [f"executor start-up {window.startup:,.2f} s"] if window.startup is not None else []
    if window.after >= 0.005:
        left.append(f"{window.after:,.2f} s after the work")
    ax.set_xlabel(TIME_LABEL + ", from the first task to the end of the work"
                  + (f"\n(not drawn: {'; '.join(left)})" if left else ""))


def timeline_chart(tl: Timeline, window: Window, path: str) -> str:
    """Jobs and stages on top, then one row per executor slot with its tasks as bars
    (coloured by stage; failed or unfinished tasks in red, hatched), over ``window``."""
    plt = pyplot()
    rows = len(tl.slots)
    fig, (top, ax) = plt.subplots(2, 1, sharex=True, figsize=(TIME_WIDTH_IN, 1.6 + 0.35 * max(rows, 2) + 1.2),
                                  gridspec_kw={"height_ratios": [1.1, max(1.5, 0.35 * rows)]})
    cmap = plt.get_cmap("tab20")
    stage_ids = list(dict.fromkeys(sp.key.get("stage_id") for sp in tl.stages))
    colour = {sid: cmap(i % 20) for i, sid in enumerate(stage_ids)}
    for sp in tl.jobs:
        top.broken_barh([(sp.start, max(sp.seconds, 1e-4))], (1.1, 0.8),
                        facecolors="#4c72b0" if sp.ok else "#c44e52", edgecolor="white")
    for sp in tl.stages:
        top.broken_barh([(sp.start, max(sp.seconds, 1e-4))], (0.1, 0.8),
                        facecolors=colour.get(sp.key.get("stage_id"), "grey"), edgecolor="black", linewidth=0.5)
        if window.seconds and sp.seconds > window.seconds / 40:
            top.text(sp.start + sp.seconds / 2, 0.5, str(sp.key.get("stage_id")), ha="center", va="center",
                     fontsize=7)
    top.set_yticks([0.5, 1.5], ["stages", "jobs"])
    top.set_ylim(0, 2)
    top.set_title("jobs, stages (numbered) and tasks per executor slot")
    index = {slot: i for i, slot in enumerate(tl.slots)}
    failed = False
    for sp in tl.tasks:
        y = index[(sp.key["executor"], sp.key["slot"])]
        bad = not sp.ok
        failed |= bad
        ax.broken_barh([(sp.start, max(sp.seconds, 1e-4))], (y + 0.1, 0.8),
                       facecolors="#c44e52" if bad else colour.get(sp.key.get("stage_id"), "grey"),
                       edgecolor="black", linewidth=0.3, hatch="//" if bad else None)
    ax.set_yticks([i + 0.5 for i in range(rows)], [f"executor {ex} slot {s}" for ex, s in tl.slots], fontsize=8)
    ax.set_ylim(max(rows, 1), 0)  # the first slot on top
    _time_axis(ax, window)
    ax.set_ylabel("executor slot")
    if failed:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor="#c44e52", hatch="//", label="failed or unfinished task")],
                  loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)  # off the bars
    return _save(_aligned(fig), path, layout=False)


def occupancy_chart(occ: Occupancy, window: Window, path: str) -> str:
    """One panel per location (memory, each disk tier, mapped files): bytes held per
    dataset, stacked, over ``window``; the memory panel with the memory budget."""
    end = window.end
    plt = pyplot()
    locs = occ.locations
    fig, axes = plt.subplots(len(locs), 1, sharex=True, figsize=(TIME_WIDTH_IN, 2.3 * len(locs) + 0.6), squeeze=False)
    cmap = plt.get_cmap("tab10")
    colours = {ds: cmap(i % 10) for i, ds in enumerate(occ.datasets)}
    for ax, loc in zip(axes[:, 0], locs):
        keys = [ds for ds in occ.datasets if (loc, ds) in occ.held]
        times, rows = _steps([occ.held[(loc, ds)] for ds in keys], end)
        lower = np.zeros(len(times))
        for ds, row in zip(keys, rows):
            upper = lower + row / MIB
            ax.fill_between(times, lower, upper, step="post", color=colours[ds], alpha=0.85,
                            label=f"{_short(occ.datasets[ds])} (peak {row.max() / MIB:,.1f} MiB)")
            lower = upper
        top = float(lower.max()) if len(lower) else 0.0
        if loc == "memory" and occ.budget:
            ax.axhline(occ.budget / MIB, color="black", linestyle="--", linewidth=1.2,
                       label=f"memory budget {occ.budget / MIB:,.1f} MiB\n(execution + storage)" + (
                           f"\n{occ.shares[0]} executors, {occ.shares[1] / MIB:,.2f} MiB each" if occ.shares else ""))
            top = max(top, occ.budget / MIB)
        ax.set_ylim(0, top * 1.12 if top > 0 else 1)
        ax.set_ylabel("MiB held")
        ax.set_title(LOCATION_TITLE.get(loc, f"disk tier {loc!r}"), fontsize=10, loc="left")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        if not any(row.any() for row in rows):
            ax.text(0.5, 0.5, "nothing held here", transform=ax.transAxes, ha="center", color="grey")
    _time_axis(axes[-1, 0], window)
    fig.suptitle("cache occupancy per dataset and tier", fontsize=11)
    return _save(_aligned(fig), path, layout=False)


def moves_chart(occ: Occupancy, window: Window, path: str) -> str:
    """Cumulative MiB moved by kind (dropped, re-cached, prefetched, promoted, demoted)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(TIME_WIDTH_IN, 3.6))
    styles = dict(zip(MOVES, ["#c44e52", "#dd8452", "#55a868", "#4c72b0", "#8172b3"]))
    times, rows = _steps([occ.moves[m] for m in MOVES], window.end)
    for m, row in zip(MOVES, rows):
        ax.step(times, row / MIB, where="post", color=styles[m], linewidth=2, label=f"{m}: {row[-1] / MIB:,.1f} MiB")
    top = float(rows.max() / MIB) if rows.size else 0.0
    ax.set_ylim(0, top * 1.12 if top > 0 else 1)
    if top == 0:
        ax.text(0.5, 0.5, "nothing moved", transform=ax.transAxes, ha="center", color="grey")
    return _finish_timed(fig, ax, window, "MiB moved so far (cumulative)",
                         "bytes moved between memory and disk, and between disk tiers", path)


def _finish_timed(fig, ax, window: Window, ylabel: str, title: str, path: str) -> str:
    """A chart over the run's time: x over the window, labels, title, the legend
    right of the axes; saved."""
    _time_axis(ax, window)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # outside the axes: off the data
    return _save(_aligned(fig), path, layout=False)


def split_chart(occ: Occupancy, window: Window, path: str) -> str:
    """The dynamic memory split: heap and mapped shares of the budget, stacked."""
    plt = pyplot()
    assert occ.split is not None
    fig, ax = plt.subplots(figsize=(TIME_WIDTH_IN, 3.2))
    times, (heap, mapped, budget) = _steps([occ.split["heap"], occ.split["mapped"], occ.split["budget"]],
                                           window.end)
    ax.fill_between(times, 0, heap / MIB, step="post", color="#4c72b0", alpha=0.85, label="heap (execution + cache)")
    ax.fill_between(times, heap / MIB, (heap + mapped) / MIB, step="post", color="#55a868", alpha=0.85,
                    label="mapped pages\n(page cache of mapped blocks)")
    ax.step(times, budget / MIB, where="post", color="black", linestyle="--", label="budget")
    ax.set_ylim(0, max(float(budget.max()), float((heap + mapped).max())) / MIB * 1.12 or 1)
    return _finish_timed(fig, ax, window, "MiB (all executors)",
                         "memory split between heap and mapped pages (MemorySplitMoved)", path)


def hits_chart(rows: list[StageRow], path: str) -> str:
    """Per stage: block reads by where they were served (stacked bars), with the memory
    hit ratio written above each bar."""
    plt = pyplot()
    rows = [r for r in rows if r.reads] or rows
    n = len(rows)
    fig, ax = plt.subplots(figsize=(min(16, max(8, 0.45 * n + 3)), 3.8))
    x = np.arange(n)
    bottom = np.zeros(n)
    for key, label, colour in (("memory_hits", "memory hits", "#55a868"), ("disk_hits", "disk hits", "#dd8452"),
                               ("peer_hits", "peer hits", "#8172b3"), ("misses", "misses (computed)", "#c44e52")):
        vals = np.array([float(r.cache.get(key, 0)) for r in rows])
        if vals.any() or key in ("memory_hits", "misses"):
            ax.bar(x, vals, 0.7, bottom=bottom, color=colour, label=label, edgecolor="black", linewidth=0.4)
            bottom += vals
    for i, r in enumerate(rows):
        if r.hit_ratio is not None:
            ax.text(i, bottom[i], f"{r.hit_ratio:.0%}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, [f"s{r.stage_id}" for r in rows], fontsize=7, rotation=90 if n > 30 else 0)
    ax.set_ylim(0, (bottom.max() if n else 1) * 1.15 or 1)
    ax.set_xlim(-0.6, max(n, 1) - 0.4)
    ax.set_xlabel("stage (in the order it ran)")
    ax.set_ylabel("cached-block reads (count)")
    ax.set_title("cached-block reads per stage\n(memory hit ratio above each bar)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(fig, path)


def simulator_chart(report: dict, measured: float | None, path: str, used: str | None = None) -> str:
    """The replay: byte hit ratio and MiB moved per policy, ``opt`` and ``unbounded``,
    side by side; the run's own measured ratio as a line, the policy it ran (``used``)
    hatched. The legend sits under the axes, off the bars."""
    plt = pyplot()
    from matplotlib.patches import Patch

    pol = report["policies"]
    names = list(pol)
    colours = ["#4c72b0" if n not in ("opt", "unbounded") else "#444444" for n in names]
    hatches = ["//" if n == used else None for n in names]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.4))
    x = np.arange(len(names))
    ratios = [pol[n]["byte_hit_ratio"] for n in names]
    a.bar(x, ratios, 0.7, color=colours, edgecolor="black", linewidth=0.4, hatch=hatches)
    for i, v in enumerate(ratios):
        a.text(i, v, f"{v:.3f}", ha="center", va="bottom", fontsize=7)
    handles = []
    if measured is not None:
        handles.append(a.axhline(measured, color="#c44e52", linestyle="--", label=f"this run, measured: {measured:.3f}"))
    if used in pol:
        handles.append(Patch(facecolor="#4c72b0", hatch="//", edgecolor="black", label=f"the run's policy ({used}), "
                             "replayed"))
    if handles:
        a.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.22), ncol=2, frameon=False)
    a.set_ylim(0, 1.1)
    a.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    a.set_ylabel("byte hit ratio in memory")
    a.set_title("simulated: memory hits (first reads left out)", fontsize=10)
    moved = [pol[n]["bytes_moved"] / MIB for n in names]
    b.bar(x, moved, 0.7, color=colours, edgecolor="black", linewidth=0.4, hatch=hatches)
    for i, v in enumerate(moved):
        b.text(i, v, f"{v:,.1f}", ha="center", va="bottom", fontsize=7)
    b.set_ylim(0, max(moved, default=0) * 1.15 or 1)
    b.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    b.set_ylabel("MiB moved")
    b.set_title("simulated: MiB moved (dropped + re-cached + prefetched)", fontsize=10)
    tr = report["trace"]
    n = tr.get("executors", 1)
    memory = (f"each of {n} executors replayed against its own {tr['memory_per_executor'] / MIB:,.2f} MiB, summed"
              if n > 1 else f"memory {tr['memory_bytes'] / MIB:,.2f} MiB")
    fig.suptitle(f"the log's {tr['reads']} reads replayed against every policy ({memory}; "
                 f"data/memory {tr['pressure']}x)", fontsize=10)
    return _save(fig, path)


def chart_paths(out_dir: str) -> dict[str, str]:
    """Where each chart goes in ``out_dir``."""
    return {k: os.path.join(out_dir, f"{k}.png") for k in
            ("timeline", "occupancy", "moves", "memory_split", "hits", "simulator")}
