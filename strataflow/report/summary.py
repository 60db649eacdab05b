"""The summary table: one row per figure a reader looks for first.

Each row keeps its raw value beside the text shown (``Row.value``), so the page can carry
it in a ``data-value`` attribute and a test can check it against the log's own metrics
without parsing formatted numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from strataflow.report.occupancy import Occupancy
from strataflow.report.stages import hit_ratio
from strataflow.report.timeline import Timeline
from strataflow.report.window import Window

__all__ = ["Row", "summary_rows"]

MIB = 1 << 20


@dataclass
class Row:
    key: str
    label: str
    value: float | int | str | None
    text: str


def _mib(n: float) -> str:
    """Bytes in MiB (2**20 bytes), the unit ``strataflow run`` prints."""
    return f"{n / MIB:,.2f} MiB"


def _budget(app: dict) -> str:
    if not app.get("memory"):
        return "not in the log"
    n, each = app.get("executors") or 1, app.get("executor_memory")
    return _mib(app["memory"]) + (f" ({n} executors, {_mib(each)} each)" if n > 1 and each else "")


def window_rows(window: Window) -> list[Row]:
    """What the time charts show and leave out: the span they draw (first task to the
    work's end), the executors' start-up before it and the time after it."""
    rows = [Row("window_s", "charted (first task to the end of the work)", round(window.seconds, 6),
                f"{window.seconds:,.2f} s, from {window.start:,.2f} s to {window.end:,.2f} s")]
    if window.startup is not None:
        rows.append(Row("startup_s", "executor start-up", round(window.startup, 6),
                        f"executors started in {window.startup:,.2f} s (not charted)"))
    rows.append(Row("after_s", "after the work (the driver's own time, shutdown)", round(window.after, 6),
                    f"{window.after:,.2f} s (not charted)"))
    return rows


def summary_rows(app: dict, tl: Timeline, totals: dict, occ: Occupancy, replay: dict,
                 window: Window | None = None) -> list[Row]:
    """The rows, from the ``ApplicationStart`` event, the timeline, the run's totals
    (``stages.run_totals``), the occupancy replay, the simulator's replay and the charts'
    time window."""
    c = totals["cache"]
    rows = [
        Row("app", "application", app.get("app_name"), f"{app.get('app_name', '?')} ({app.get('app_id', '?')})"),
        Row("backend", "backend", app.get("backend"),
            f"{app.get('backend', '?')}: {app.get('executors', '?')} executor(s) x "
            f"{app.get('cores_per_executor', '?')} slot(s)"),
        Row("memory", "memory budget", app.get("memory"), _budget(app)),
        Row("policy", "cache policy", app.get("policy"), app.get("policy") or "not in the log"),
        Row("duration_s", "duration (the application's first event to its last)", round(tl.duration, 6),
            f"{tl.duration:,.2f} s"),
        *(window_rows(window) if window is not None else []),
        Row("jobs", "jobs (failed)", totals["jobs"], f"{totals['jobs']} ({totals['jobs_failed']})"),
        Row("stages", "stages run (skipped)", totals["stages"], f"{totals['stages']} ({totals['stages_skipped']})"),
        Row("tasks", "tasks (failed)", totals["tasks"], f"{totals['tasks']} ({totals['tasks_failed']})"),
    ]
    for key, label in (("memory_hits", "memory hits"), ("disk_hits", "disk hits"), ("peer_hits", "peer hits"),
                       ("misses", "misses (computed)")):
        if key in c:
            rows.append(Row(key, label, c[key], f"{c[key]:,.0f}"))
    ratio = hit_ratio(c)
    rows.append(Row("hit_ratio", "memory hit ratio (of cached-block reads)", ratio,
                    "no reads of cached blocks" if ratio is None else f"{ratio:.1%}"))
    for key, blocks, label in (("bytes_dropped", "blocks_dropped", "dropped from memory"),
                               ("bytes_recached", "blocks_recached", "re-cached (disk to memory on a read)"),
                               ("bytes_prefetched", "blocks_prefetched", "prefetched (disk to memory ahead)"),
                               ("bytes_moved_between_tiers", None, "moved between disk tiers"),
                               ("disk_bytes_written", None, "written to disk"),
                               ("disk_bytes_read", None, "read from disk")):
        if key in c:
            n = f" in {c[blocks]:,.0f} blocks" if blocks and blocks in c else ""
            rows.append(Row(key, label, c[key], f"{_mib(c[key])}{n}"))
    mem = occ.total("memory")
    rows.append(Row("peak_memory_held", "peak bytes cached in memory", mem.peak, _mib(mem.peak)))
    for key, label in (("serialize_s", "serialize"), ("deserialize_s", "deserialize")):
        if key in c:
            rows.append(Row(key, f"{label} time", c[key], f"{c[key]:,.3f} s"))
    rows.append(Row("gc_s", "garbage collection time", totals["gc_s"], f"{totals['gc_s']:,.3f} s"))
    if c.get("memory_split_moves"):
        rows.append(Row("memory_split_moves", "memory split moves (MiB to heap / to mapped)", c["memory_split_moves"],
                        f"{c['memory_split_moves']:,.0f} ({_mib(c.get('memory_split_bytes_to_heap', 0))} / "
                        f"{_mib(c.get('memory_split_bytes_to_mapped', 0))})"))
    if occ.auto_levels:
        rows.append(Row("auto_level_choices", "AUTO level choices", len(occ.auto_levels),
                        str(len(occ.auto_levels))))
    if "report" in replay:
        pol = replay["report"]["policies"]
        top = max(pol[n]["byte_hit_ratio"] for n in pol if n not in ("opt", "unbounded"))
        tied = [n for n in pol if n not in ("opt", "unbounded") and pol[n]["byte_hit_ratio"] >= top - 1e-9]
        n = replay.get("executors", 1)
        how = f", {n} executors replayed apart" if n > 1 else ""
        rows.append(Row("opt_byte_hit_ratio", f"simulated: opt's byte hit ratio{how}", pol["opt"]["byte_hit_ratio"],
                        f"{pol['opt']['byte_hit_ratio']:.3f}"))
        rows.append(Row("best_policy", f"simulated: best policy (byte hit ratio{how})", ",".join(tied),
                        (f"{tied[0]}" if len(tied) == 1 else f"a tie: {', '.join(tied)}") + f" ({top:.3f})"))
        used = replay.get("policy")
        if used in pol:
            rows.append(Row("replayed_policy_byte_hit_ratio", f"simulated: this run's policy, {used}",
                            pol[used]["byte_hit_ratio"], f"{pol[used]['byte_hit_ratio']:.3f}"))
        m = replay.get("measured")
        rows.append(Row("measured_byte_hit_ratio", "this run's byte hit ratio on the same reads", m,
                        "-" if m is None else f"{m:.3f}"))
    if occ.estimated_blocks:
        rows.append(Row("estimated_blocks", "disk blocks whose size is estimated", occ.estimated_blocks,
                        f"{occ.estimated_blocks} (the log does not report their size)"))
    return rows
