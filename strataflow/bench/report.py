"""The bench report: ``results.json`` (every run and the medians), ``table.md`` and PNG
charts (matplotlib, headless)."""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["write_report", "markdown_table", "COLUMNS", "emit_json"]

COLUMNS = {
    "levels": ["workload", "peer", "api", "level", "total_s", "iteration_s", "cached_mb", "serialize_s",
               "deserialize_s", "gc_s", "result_check"],
    "serde": ["kind", "api", "serializer", "level", "total_s", "cache_s", "read_s", "cached_mb", "serialize_s",
              "deserialize_s", "result_check"],
    "devices": ["dir", "kind", "threads", "size_scale", "cached_mb", "total_s", "mb_per_s", "write_mb_per_s",
                "read_mb_per_s", "result_check"],
    "auto": ["workload", "pressure", "level", "total_s", "iteration_s", "vs_best_fixed", "best_fixed",
             "vs_memory_and_disk", "mb_dropped", "disk_written_mb", "disk_read_mb", "memory_mb", "result_check"],
    "pressure": ["workload", "peer", "pressure", "policy", "total_s", "iteration_s", "speedup_vs_spark",
                 "blocks_dropped", "mb_dropped", "blocks_recached", "mb_recached", "mb_prefetched", "mb_moved",
                 "moved_vs_min", "disk_read_mb", "disk_written_mb", "memory_mb", "result_check"],
}


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}"
    return str(v)


def markdown_table(rows: list[dict], experiment: str) -> str:
    cols = [c for c in COLUMNS.get(experiment, sorted({k for r in rows for k in r})) if any(c in r for r in rows)]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        extra = r.get("extra") or {}
        lines.append("| " + " | ".join(_fmt(r.get(c, extra.get(c))) for c in cols) + " |")
    return "\n".join(lines)


def _charts(rows: list[dict], experiment: str, out_dir: str) -> list[str]:
    try:  # an extra: only the charts need it
        import matplotlib
    except ImportError:
        raise ImportError("strataflow bench draws its charts with matplotlib: pip install 'strataflow[plots]'") \
            from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    if experiment == "levels":
        fig, ax = plt.subplots(figsize=(9, 4))
        groups = sorted({(r.get("api"), r.get("peer", "strataflow")) for r in rows}, key=str)
        levels = list(dict.fromkeys(r["level"] for r in rows))
        width = 0.8 / max(1, len(groups))
        for i, g in enumerate(groups):
            vals = [next((r["total_s"] for r in rows if (r.get("api"), r.get("peer", "strataflow")) == g
                          and r["level"] == lv), 0) for lv in levels]
            ax.bar([x + i * width for x in range(len(levels))], vals, width, label=" ".join(map(str, g)))
        ax.set_xticks([x + width * (len(groups) - 1) / 2 for x in range(len(levels))], levels, rotation=20)
        ax.set_ylabel("seconds (load + 5 iterations)")
        ax.set_title("K-means by storage level (ample memory)")
        ax.legend()
        files.append(_save(fig, out_dir, "levels.png"))
    elif experiment == "pressure":
        workloads = list(dict.fromkeys(r["workload"] for r in rows))
        fig, axes = plt.subplots(1, len(workloads), figsize=(4.5 * len(workloads), 4), squeeze=False)
        for ax, w in zip(axes[0], workloads):
            sub = [r for r in rows if r["workload"] == w]
            for policy in dict.fromkeys(r.get("policy") or r.get("peer") for r in sub):
                pts = sorted((r["pressure"], r["total_s"]) for r in sub if (r.get("policy") or r.get("peer")) == policy)
                ax.plot([p for p, _ in pts], [t for _, t in pts], marker="o", label=str(policy))
            ax.set_xscale("log", base=2)
            ax.set_xlabel("cached data / memory budget")
            ax.set_ylabel("seconds")
            ax.set_title(w)
            ax.legend()
        files.append(_save(fig, out_dir, "pressure.png"))
    elif experiment == "auto":
        workloads = list(dict.fromkeys(r["workload"] for r in rows))
        fig, axes = plt.subplots(1, len(workloads), figsize=(4.5 * len(workloads), 4), squeeze=False)
        for ax, w in zip(axes[0], workloads):
            sub = [r for r in rows if r["workload"] == w and r.get("total_s")]
            for level in dict.fromkeys(r["level"] for r in sub):
                pts = sorted((r["pressure"], r["total_s"]) for r in sub if r["level"] == level)
                ax.plot([p for p, _ in pts], [t for _, t in pts], marker="o", label=level,
                        linewidth=3 if level == "AUTO" else 1, color="black" if level == "AUTO" else None)
            ax.set_xscale("log", base=2)
            ax.set_ylim(bottom=0)
            ax.set_xlabel("cached data / memory budget")
            ax.set_ylabel("seconds (whole run)")
            ax.set_title(f"{w}: AUTO and the fixed levels")
            ax.legend(fontsize=7)
        files.append(_save(fig, out_dir, "auto.png"))
    elif experiment == "serde":
        fig, ax = plt.subplots(figsize=(8, 4))
        labels = [f"{r.get('kind')}\n{r.get('api')}\n{r.get('serializer')}" for r in rows]
        ax.bar(range(len(rows)), [r.get("serialize_s") or 0 for r in rows], label="serialize s")
        ax.bar(range(len(rows)), [r.get("deserialize_s") or 0 for r in rows],
               bottom=[r.get("serialize_s") or 0 for r in rows], label="deserialize s")
        ax.set_xticks(range(len(rows)), labels, fontsize=7)
        ax.set_title("rddtest: serialization time by serializer")
        ax.legend()
        files.append(_save(fig, out_dir, "serde.png"))
    elif experiment == "devices":
        fig, ax = plt.subplots(figsize=(7, 4))
        for d in dict.fromkeys(r["dir"] for r in rows):
            pts = sorted((r["threads"], r["mb_per_s"]) for r in rows if r["dir"] == d and r.get("threads")
                         and r.get("mb_per_s"))
            if pts:
                ax.plot([p for p, _ in pts], [v for _, v in pts], marker="o", label=f"rddtest {d}")
            for r in rows:
                if r["dir"] == d and str(r.get("kind", "")).startswith("raw"):
                    ax.axhline(r["read_mb_per_s"], linestyle="--", alpha=0.5, label=f"{d} {r['kind']} read")
        ax.set_xlabel("threads")
        ax.set_ylabel("MB/s")
        ax.set_title("DISK_ONLY caching throughput vs raw bandwidth")
        ax.legend(fontsize=7)
        files.append(_save(fig, out_dir, "devices.png"))
    return files


def _save(fig, out_dir: str, name: str) -> str:
    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def write_report(out_dir: str, experiment: str, rows: list[dict], summary: list[dict], meta: dict) -> dict:
    os.makedirs(out_dir, exist_ok=True)
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
