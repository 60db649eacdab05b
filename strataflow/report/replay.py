"""The run's block accesses replayed by the simulator against every policy and ``opt``.

``strataflow.simulate`` rebuilds the trace from the same log; next to its answers the
page shows what the run itself achieved on that trace, measured the simulator's way
(memory-hit bytes over the bytes of reads that were not a block's first read), so the
bars compare like with like. Block reads through maps are not in the trace (the
simulator models the heap cache), nor in the measured figure.
"""

from __future__ import annotations

import os

from ..simulate import from_event_log, simulate
from .occupancy import block_dataset

__all__ = ["replay", "measured_byte_hit_ratio"]


def _block_key(ev: dict) -> tuple[int, int] | None:
    """(dataset, split) as the simulator's trace names a block."""
    ds, split = block_dataset(ev), ev.get("split")
    if split is None:
        parts = str(ev.get("block", "")).split("_")
        split = int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else None
    return None if ds is None or not isinstance(split, int) else (ds, split)


def measured_byte_hit_ratio(events_in_file_order: list[dict], sizes: list[int]) -> float | None:
    """The run's own byte hit ratio on the trace's reads (``sizes``: the trace's sizes of
    the same reads, in order)."""
    seen: set = set()
    hit = total = 0
    reads = [e for e in events_in_file_order if e["event"] == "BlockAccess" and not e.get("mapped")
             and _block_key(e) is not None]
    if len(reads) != len(sizes):
        return None  # the trace was not built from these reads: say nothing rather than guess
    for ev, size in zip(reads, sizes):
        key = _block_key(ev)
        if key not in seen:
            seen.add(key)
            continue
        total += size
        hit += size if ev.get("result") == "memory" else 0
    return hit / total if total else None


def replay(path: str | os.PathLike, events_in_file_order: list[dict]) -> dict:
    """``{"report": simulator report, "measured": ratio or None}``, or ``{"error": why}``
    when the log cannot be replayed (no block accesses, no memory size)."""
    try:
        trace = from_event_log(path)
    except ValueError as exc:
        return {"error": str(exc)}
    report = simulate(trace)
    sizes = [op[2] for op in trace.ops if op[0] == "read"]
    return {"report": report, "measured": measured_byte_hit_ratio(events_in_file_order, sizes)}
