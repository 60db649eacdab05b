"""The run's block accesses replayed by the simulator against every policy and ``opt``.

Each executor's reads are replayed against its own memory (``executor_traces``) and the
counts summed (``simulate_executors``), as the run had them: pooling the executors'
memory would compare the run with a cache it never had. Beside the simulator's answers
the page shows what the run itself achieved on exactly those reads, measured the
simulator's way (memory-hit bytes over the bytes of reads that were not an executor's
first read of the block), so "this run" and the bars measure the same thing, and the
replay of the policy the run used should land on it. Block reads through maps are not in
the trace (the simulator models the heap cache), nor reads another executor served.
"""

from __future__ import annotations

import os

from strataflow.simulate import executor_traces, measured_byte_hit_ratio, run_settings, simulate_executors

__all__ = ["replay"]


def replay(path: str | os.PathLike) -> dict:
    """``{"report": simulator report, "measured": ratio or None, "policy": the run's policy
    or None, "executors": traces replayed}``, or ``{"error": why}`` when the log cannot be
    replayed (no block accesses, no memory size). The run's asynchronous-eviction
    watermarks, when it had them, apply to the policies replayed."""
    try:
        traces = executor_traces(path)
        settings = run_settings(path)
    except ValueError as exc:
        return {"error": str(exc)}
    report = simulate_executors(traces, watermarks=settings["eviction_watermarks"])
    return {"report": report, "measured": measured_byte_hit_ratio(traces), "policy": settings["policy"],
            "executors": len(traces)}
