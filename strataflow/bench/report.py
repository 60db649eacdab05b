"""The bench report: ``results.json`` (every run and the medians), ``table.md`` and PNG
charts (matplotlib, headless)."""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["write_report", "markdown_table", "mark_failures", "COLUMNS", "emit_json"]

COLUMNS = {
    "levels": ["workload", "peer", "api", "level", "total_s", "iteration_s", "cached_mb", "serialize_s",
               "deserialize_s", "gc_s", "disk_written_mb", "disk_read_mb", "failed", "result_check"],
    "serde": ["kind", "api", "serializer", "level", "total_s", "cache_s", "read_s", "cached_mb", "serialize_s",
              "deserialize_s", "result_check"],
    "devices": ["dir", "kind", "threads", "size_scale", "cached_mb", "total_s", "mb_per_s", "write_mb_per_s",
                "read_mb_per_s", "result_check"],
    "auto": ["workload", "pressure", "level", "total_s", "iteration_s", "vs_best_fixed", "vs_best_fixed_ci",
             "best_fixed", "target", "vs_memory_and_disk", "mb_dropped", "disk_written_mb", "disk_read_mb",
             "memory_mb", "machine_memory_mb", "peak_mb", "oom_kills", "device_read_gb", "device_written_gb",
             "result_check"],
    "pressure": ["workload", "peer", "pressure", "policy", "total_s", "iteration_s", "speedup_vs_spark",
                 "blocks_dropped", "mb_dropped", "blocks_recached", "mb_recached", "mb_prefetched", "mb_moved",
                 "moved_vs_min", "disk_read_mb", "disk_written_mb", "memory_mb", "failed", "result_check"],
    "scale": ["workload", "peer", "policy", "size_scale", "input_gb", "memory_mb", "partitions", "total_s", "s_per_gb",
              "iteration_s", "moved_gb", "moved_per_gb", "cache_written_gb", "cache_read_gb", "shuffle_gb", "spill_gb",
              "serde_share", "gc_share", "machine_memory_mb", "peak_mb", "oom_kills", "device_read_gb", "device_written_gb",
              "iteration_read_mb_s", "cache_write_mb_s", "device_read_mb_s", "device_write_mb_s", "read_share",
              "write_share", "finished", "skipped", "checked", "result_check"],
}


#: the longest text a table cell shows (an error's first words; results.json has it whole)
CELL = 120


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}"
    if isinstance(v, (list, tuple)):  # an interval
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    text = " ".join(str(v).split()).replace("|", "/")  # one line, no column break: a long error stays one cell
    return text if len(text) <= CELL else text[: CELL - 1] + "…"


def markdown_table(rows: list[dict], experiment: str) -> str:
    cols = [c for c in COLUMNS.get(experiment, sorted({k for r in rows for k in r})) if any(c in r for r in rows)]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        extra = r.get("extra") or {}
        lines.append("| " + " | ".join(_fmt(r.get(c, extra.get(c))) for c in cols) + " |")
    return "\n".join(lines)


def _charts(rows: list[dict], experiment: str, out_dir: str) -> list[str]:
    """The experiment's chart(s). Every chart plots what its experiment is about, with y
    axes from zero, both axes labelled with their units, a legend for every series, and
    bars wide enough to see (a bar too small to see carries its value as text)."""
    try:  # an extra: only the charts need it
        import matplotlib
    except ImportError:
        raise ImportError("strataflow bench draws its charts with matplotlib: pip install 'strataflow[plots]'") \
            from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    draw = {"levels": _levels_chart, "pressure": _pressure_chart, "auto": _auto_chart, "serde": _serde_chart,
            "devices": _devices_chart, "scale": _scale_chart}.get(experiment)
    if draw is None or not rows:
        return []
    fig = draw(plt, rows)
    return [_save(fig, out_dir, f"{experiment}.png")]


def _label(v: float, unit: str = "") -> str:
    return f"{v:,.0f}{unit}" if abs(v) >= 100 else f"{v:,.1f}{unit}" if abs(v) >= 1 else f"{v:.2g}{unit}"


def _bar_values(ax, xs, tops, values, fmt=_label, fontsize=6) -> None:
    """Each bar's value above it, so that a bar too small to see still reads."""
    for x, top, v in zip(xs, tops, values):
        if v is not None:
            ax.text(x, top, fmt(v), ha="center", va="bottom", fontsize=fontsize, rotation=90 if fontsize < 7 else 0)


def _headroom(ax, top: float) -> None:
    """y from zero, with room above the tallest bar for its label."""
    ax.set_ylim(0, top * 1.25 if top > 0 else 1)


def _levels_chart(plt, rows: list[dict]):
    fig, ax = plt.subplots(figsize=(10, 4.2))
    groups = sorted({(r.get("api"), r.get("peer", "strataflow")) for r in rows}, key=str)
    levels = list(dict.fromkeys(r["level"] for r in rows))
    width = 0.8 / max(1, len(groups))
    top = 0.0
    for i, g in enumerate(groups):
        vals = [next((r.get("total_s") for r in rows if (r.get("api"), r.get("peer", "strataflow")) == g
                      and r["level"] == lv), None) for lv in levels]
        xs = [x + (i - (len(groups) - 1) / 2) * width for x in range(len(levels))]
        heights = [v or 0 for v in vals]
        ax.bar(xs, heights, width * 0.95, label=" ".join(map(str, g)), edgecolor="black", linewidth=0.4)
        _bar_values(ax, xs, heights, vals, fmt=lambda v: f"{v:.2f}", fontsize=7)
        top = max(top, *heights)
    ax.set_xticks(range(len(levels)), levels, rotation=20)
    ax.set_xlabel("storage level")
    ax.set_ylabel("seconds (load + 5 iterations)")
    _headroom(ax, top)
    ax.set_title("K-means by storage level (ample memory): time, less is better")
    ax.legend(title="api, engine", fontsize=8)
    return fig


def _pressure_chart(plt, rows: list[dict]):
    """Per workload, side by side: MB moved between memory and disk (dropped, re-cached,
    prefetched), disk MB written and read, and the time; grouped by data/memory ratio,
    one colour per policy."""
    from matplotlib.patches import Patch

    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    who = lambda r: str(r.get("policy") or r.get("peer"))  # noqa: E731
    policies = list(dict.fromkeys(who(r) for r in rows))
    colour = {p: plt.get_cmap("tab10")(i % 10) for i, p in enumerate(policies)}
    fig, axes = plt.subplots(len(workloads), 3, figsize=(16, 3.9 * len(workloads)), squeeze=False)
    width = 0.8 / max(1, len(policies))
    panels = (
        ("MB moved between memory and disk", "MB (dropped + re-cached + prefetched)",
         [("mb_dropped", None, "dropped"), ("mb_recached", "//", "re-cached"), ("mb_prefetched", "..", "prefetched")]),
        ("disk I/O of the cache", "MB (written + read)",
         [("disk_written_mb", None, "written"), ("disk_read_mb", "xx", "read")]),
        ("time (less is better)", "seconds (whole run)", [("total_s", None, "time")]),
    )
    for row, w in zip(axes, workloads):
        sub = [r for r in rows if r["workload"] == w]
        pressures = sorted({r["pressure"] for r in sub})
        for ax, (title, ylabel, parts) in zip(row, panels):
            top = 0.0
            for i, p in enumerate(policies):
                xs = [x + (i - (len(policies) - 1) / 2) * width for x in range(len(pressures))]
                found = [next((r for r in sub if who(r) == p and r["pressure"] == pr), None) for pr in pressures]
                bottom = [0.0] * len(pressures)
                for key, hatch, _ in parts:
                    vals = [float((r or {}).get(key) or 0) for r in found]
                    ax.bar(xs, vals, width * 0.95, bottom=bottom, color=colour[p], hatch=hatch, edgecolor="black",
                           linewidth=0.4)
                    bottom = [b + v for b, v in zip(bottom, vals)]
                _bar_values(ax, xs, bottom, [b if r is not None else None for b, r in zip(bottom, found)])
                top = max(top, *bottom)
            ax.set_xticks(range(len(pressures)), [f"{p:g}x" for p in pressures])
            ax.set_xlabel("cached data / memory budget")
            ax.set_ylabel(ylabel)
            _headroom(ax, top)
            ax.set_title(f"{w}: {title}", fontsize=10)
    handles = [Patch(facecolor=colour[p], edgecolor="black", label=p) for p in policies]
    handles += [Patch(facecolor="white", edgecolor="black", hatch=h, label=f"{lbl} (hatch)" if h else f"{lbl} (plain)")
                for _, h, lbl in panels[0][2] + panels[1][2]]
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(handles), fontsize=8,
               frameon=False)
    return fig


def _auto_chart(plt, rows: list[dict]):
    """Per workload: every level's time by pressure (top), and AUTO's paired ratios to the
    best fixed level and to MEMORY_AND_DISK by pressure, against the target (1.05, or the
    workload's own; bottom: the top panel's scale, set by MEMORY_ONLY's recomputations,
    hides a few per cent)."""
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    fig, axes = plt.subplots(2, len(workloads), figsize=(4.8 * len(workloads), 8.0), squeeze=False)
    for ax, ratio_ax, w in zip(axes[0], axes[1], workloads):
        sub = [r for r in rows if r["workload"] == w and r.get("total_s")]
        for level in dict.fromkeys(r["level"] for r in sub):
            pts = sorted((r["pressure"], r["total_s"]) for r in sub if r["level"] == level)
            ax.plot([p for p, _ in pts], [t for _, t in pts], marker="o", label=level,
                    linewidth=3 if level == "AUTO" else 1, color="black" if level == "AUTO" else None)
        pressures = sorted({r["pressure"] for r in sub})
        ax.set_xscale("log", base=2)
        if pressures:
            ax.set_xticks(pressures, [f"{p:g}x" for p in pressures])
            ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.set_xlabel("cached data / memory budget (log scale)")
        ax.set_ylabel("seconds (whole run)")
        ax.set_title(f"{w}: AUTO and the fixed levels")
        ax.legend(fontsize=7)
        auto = {r["pressure"]: r for r in sub if r["level"] == "AUTO"}
        xs = list(range(len(pressures)))
        top = 1.05
        for i, (key, label) in enumerate((("vs_best_fixed", "AUTO / best fixed level"),
                                          ("vs_memory_and_disk", "AUTO / MEMORY_AND_DISK"))):
            vals = [(auto.get(p) or {}).get(key) for p in pressures]
            bx = [x + (i - 0.5) * 0.38 for x in xs]
            heights = [v or 0.0 for v in vals]
            ratio_ax.bar(bx, heights, 0.36, label=label, edgecolor="black", linewidth=0.4)
            _bar_values(ratio_ax, bx, heights, vals, fmt=lambda v: f"{v:.3f}", fontsize=7)
            top = max(top, *heights) if heights else top
            if key == "vs_best_fixed":  # the 95% interval of the median, where there is one
                cis = [((auto.get(p) or {}).get("vs_best_fixed_ci"), h, x) for p, h, x in zip(pressures, heights, bx)]
                cis = [(ci, h, x) for ci, h, x in cis if ci]
                if cis:
                    ratio_ax.errorbar([x for _, _, x in cis], [h for _, h, _ in cis], fmt="none", ecolor="black",
                                      capsize=3, linewidth=1, label="95% interval",
                                      yerr=[[max(0.0, h - ci[0]) for ci, h, _ in cis],
                                            [max(0.0, ci[1] - h) for ci, h, _ in cis]])
                    top = max(top, *(ci[1] for ci, _, _ in cis))
        bound = next((r["target_bound"] for r in auto.values() if "target_bound" in r), 1.05)
        ratio_ax.axhline(bound, color="red", linestyle="--", linewidth=1, label=f"target {bound:g}")
        ratio_ax.set_xticks(xs, [f"{p:g}x" + (f"\n{auto[p]['target']}" if "target" in auto.get(p, {}) else "")
                                 for p in pressures])
        ratio_ax.set_xlabel("cached data / memory budget (and the target's verdict)")
        ratio_ax.set_ylabel("time ratio (median of paired runs)")
        ratio_ax.set_title(f"{w}: AUTO's time over a fixed level's")
        _headroom(ratio_ax, top)
        ratio_ax.legend(fontsize=7, loc="lower right")
    return fig


def _serde_chart(plt, rows: list[dict]):
    """Serialization and deserialization seconds per serializer, stacked, beside the
    cached MB each one made; values written on the bars (some are a few ms)."""
    fig, (ax, mb_ax) = plt.subplots(1, 2, figsize=(13, 4.4), gridspec_kw={"width_ratios": [3, 2]})
    labels = [f"{r.get('kind')}\n{r.get('api')}\n{r.get('serializer')}" for r in rows]
    xs = list(range(len(rows)))
    ser = [float(r.get("serialize_s") or 0) * 1e3 for r in rows]
    de = [float(r.get("deserialize_s") or 0) * 1e3 for r in rows]
    ax.bar(xs, ser, 0.7, label="serialize", color="#4c72b0", edgecolor="black", linewidth=0.4)
    ax.bar(xs, de, 0.7, bottom=ser, label="deserialize", color="#dd8452", edgecolor="black", linewidth=0.4)
    tops = [a + b for a, b in zip(ser, de)]
    _label_bars(ax, xs, labels, tops, lambda v: f"{v:,.1f} ms", "milliseconds (serialize + deserialize)",
                "rddtest: serialization time by serializer")
    mb = [float(r.get("cached_mb") or 0) for r in rows]
    mb_ax.bar(xs, mb, 0.7, color="#55a868", edgecolor="black", linewidth=0.4, label="cached MB")
    _label_bars(mb_ax, xs, labels, mb, lambda v: f"{v:,.2f}", "MB cached", "size of the cached data")
    return fig


def _label_bars(ax, xs: list, labels: list[str], tops: list[float], fmt, ylabel: str, title: str) -> None:
    """A serde panel's values on its bars, ticks, labels, headroom, title and legend."""
    _bar_values(ax, xs, tops, tops, fmt=fmt, fontsize=7)
    ax.set_xticks(xs, labels, fontsize=7)
    ax.set_xlabel("data kind, api, serializer")
    ax.set_ylabel(ylabel)
    _headroom(ax, max(tops, default=0))
    ax.set_title(title)
    ax.legend(fontsize=8)


def _devices_chart(plt, rows: list[dict]):
    """DISK_ONLY caching throughput per thread count, with the directory's raw read
    bandwidth as references; a reference far above the rest (a warm page cache) is
    written at the top, not drawn, so the measured lines stay readable."""
    fig, ax = plt.subplots(figsize=(9, 4.6))
    measured: list[float] = []
    refs: list[tuple[str, float]] = []
    threads: set = set()
    for d in dict.fromkeys(r["dir"] for r in rows):
        for scale in dict.fromkeys(r.get("size_scale") for r in rows if r["dir"] == d and r.get("threads")):
            sub = [r for r in rows if r["dir"] == d and r.get("threads") and r.get("mb_per_s")
                   and r.get("size_scale") == scale]  # one line per data size: not one zigzag over both
            pts = sorted((r["threads"], r["mb_per_s"]) for r in sub)
            if pts:
                size = max(float(r.get("cached_mb") or 0) for r in sub)
                ax.plot([p for p, _ in pts], [v for _, v in pts], marker="o",
                        label=f"rddtest {d}, {size:,.1f} MB cached")
                threads |= {p for p, _ in pts}
                measured += [v for _, v in pts]
        refs += [(f"{d} {r['kind']} read", float(r["read_mb_per_s"])) for r in rows
                 if r["dir"] == d and str(r.get("kind", "")).startswith("raw") and r.get("read_mb_per_s")]
    scale = max(measured + [v for k, v in refs if "cold" in k], default=1.0)
    top = scale * 1.3
    above = []
    for name, v in refs:
        if v <= top:
            ax.axhline(v, linestyle="--", alpha=0.6, label=f"{name}: {v:,.0f} MB/s")
        else:
            above.append(f"{name}: {v:,.0f} MB/s (above the chart)")
    if above:
        ax.text(0.01, 0.98, "\n".join(above), transform=ax.transAxes, va="top", fontsize=7, color="grey")
    ax.set_ylim(0, top)
    if threads:
        ax.set_xticks(sorted(threads))
    ax.set_xlabel("threads")
    ax.set_ylabel("MB/s (cached data read per second)")
    ax.set_title("DISK_ONLY caching throughput vs raw bandwidth")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=1)
    return fig


def _scale_chart(plt, rows: list[dict]):
    """Per workload: time per GB (top) and GB moved per GB (bottom) against the input's
    size, one line per policy or peer; flat means linear growth. A size a series did not
    finish is an x on the axis; a size skipped for disk, a dotted line."""
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    fig, axes = plt.subplots(2, len(workloads), figsize=(6.2 * len(workloads), 8.0), squeeze=False)
    who = lambda r: str(r.get("peer") or r.get("policy"))  # noqa: E731
    for col, w in enumerate(workloads):
        sub = [r for r in rows if r["workload"] == w]
        series = list(dict.fromkeys(who(r) for r in sub if not r.get("skipped")))
        sizes = sorted({r["size_scale"] for r in sub})
        budget_gb = next((r["memory_mb"] / 1024 for r in sub if r.get("memory_mb")), None)
        for ax, key, ylabel, title in ((axes[0][col], "s_per_gb", "seconds per GB of input", "time per GB"),
                                       (axes[1][col], "moved_per_gb", "GB moved per GB of input",
                                        "bytes moved (cache disk I/O, shuffle, spill) per GB")):
            for s in series:
                pts = sorted((r["size_scale"], r[key]) for r in sub if who(r) == s and r.get(key) is not None)
                line = ax.plot([p for p, _ in pts], [v for _, v in pts], marker="o", label=s,
                               linestyle="--" if s.startswith("pyspark") else "-")
                lost = [r["size_scale"] for r in sub if who(r) == s and not r.get("finished")]
                if lost:
                    ax.plot(lost, [0] * len(lost), marker="x", markersize=10, linestyle="none", clip_on=False,
                            color=line[0].get_color(), label=f"{s}: did not finish")
            for r in sub:
                if r.get("skipped"):
                    ax.axvline(r["size_scale"], linestyle=":", color="grey")
                    ax.text(r["size_scale"], 0.5, "skipped:\nno disk room", transform=ax.get_xaxis_transform(),
                            fontsize=7, color="grey", ha="right", rotation=90)
            ax.set_xscale("log", base=2)
            if sizes:
                ax.set_xticks(sizes, [f"{x:g}x" + (f"\n{x * budget_gb:.3g} GB" if budget_gb else "") for x in sizes])
                ax.minorticks_off()
            ax.set_ylim(bottom=0)
            ax.set_xlabel("input size: multiple of the memory budget, and GB (log scale)")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{w}: {title} (flat = linear growth)", fontsize=10)
            ax.legend(fontsize=7)
    return fig


def _save(fig, out_dir: str, name: str) -> str:
    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")  # "tight": a legend placed outside the axes is kept
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def mark_failures(rows: list[dict], summary: list[dict]) -> None:
    """Each summary row whose configuration had runs that did not finish (a peer's
    ``failure``: KilledWorker, a stall) gets ``failed``: how many of its runs, and
    what, e.g. ``1 of 5: KilledWorker (iteration 2)``; its times are the medians of the
    runs that finished (a failed run has no ``total_s``)."""
    from strataflow.bench.experiments import CONFIG_KEYS

    def config(r: dict) -> tuple:
        return tuple((k, r[k]) for k in CONFIG_KEYS if k in r)

    by_config: dict[tuple, list[dict]] = {}
    for r in rows:
        by_config.setdefault(config(r), []).append(r)
    for row in summary:
        runs = by_config.get(config(row), [])
        failures = [r["failure"] for r in runs if r.get("failure")]
        if failures:
            row["failed"] = f"{len(failures)} of {len(runs)}: " + "; ".join(dict.fromkeys(failures))


def write_report(out_dir: str, experiment: str, rows: list[dict], summary: list[dict], meta: dict) -> dict:
    os.makedirs(out_dir, exist_ok=True)
    mark_failures(rows, summary)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"experiment": experiment, "meta": meta, "summary": summary, "runs": rows}, f, indent=1,
                  default=str)
    table = markdown_table(summary, experiment)
    notes = "\n".join(f"- {n}" for n in meta.get("notes", []))
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(f"# bench {experiment}\n\n{table}\n\n{notes}\n")
    charts = _charts(summary, experiment, out_dir)
    return {"results": os.path.join(out_dir, "results.json"), "table": os.path.join(out_dir, "table.md"),
            "charts": charts, "markdown": table}


def emit_json(result: dict, out: str | None = None) -> str:
    """A benchmark's result: JSON on stdout (progress goes to stderr) and, with ``out``, to
    that file too. Values JSON cannot hold (numpy scalars, paths) are written as text."""
    text = json.dumps(result, indent=1, default=lambda v: v.item() if hasattr(v, "item") else str(v))
    print(text)
    if out:
        with open(out, "w") as fh:
            fh.write(text + "\n")
    return text
