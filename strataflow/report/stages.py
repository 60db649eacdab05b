"""The cache's figures per stage and for the whole run, as the engine measured them.

Each ``StageEnd`` and ``JobEnd`` carries the difference of the executors' cache counters
over that stage or job (``cache``), so the figures here are the run's own metrics, not a
recount: the totals are the sum over jobs (stages are nested in jobs, so summing them
would count a stage that several jobs share once per job: it is not). The hit ratio is
memory hits over all reads of cached blocks: memory, disk (and mapped) and peer hits,
and misses.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StageRow", "stage_rows", "run_totals", "hit_ratio"]


@dataclass
class StageRow:
    stage_id: int
    job_id: int | None
    name: str
    kind: str
    tasks: int
    seconds: float
    ok: bool
    cache: dict

    @property
    def reads(self) -> float:
        c = self.cache
        return c.get("memory_hits", 0) + c.get("disk_hits", 0) + c.get("misses", 0) + c.get("peer_hits", 0)

    @property
    def hit_ratio(self) -> float | None:
        return hit_ratio(self.cache)


def hit_ratio(cache: dict) -> float | None:
    """Memory hits over all reads of cached blocks; None when there were none."""
    reads = sum(cache.get(k, 0) for k in ("memory_hits", "disk_hits", "misses", "peer_hits"))
    return cache.get("memory_hits", 0) / reads if reads else None


def stage_rows(events: list[dict]) -> list[StageRow]:
    """One row per finished stage attempt, in the order they ended."""
    return [StageRow(int(e.get("stage_id", -1)), e.get("job_id"), str(e.get("name") or ""), str(e.get("kind") or ""),
                     int(e.get("num_tasks") or 0), float(e.get("seconds") or 0.0), bool(e.get("ok", True)),
                     dict(e.get("cache") or {}))
            for e in events if e["event"] == "StageEnd"]


def run_totals(events: list[dict]) -> dict:
    """The run's cache counters (the sum of the jobs' ``cache``), GC seconds, and counts
    of jobs, stages and tasks."""
    cache: dict[str, float] = {}
    jobs = [e for e in events if e["event"] == "JobEnd"]
    for e in jobs:
        for k, v in (e.get("cache") or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                cache[k] = cache.get(k, 0) + v
    tasks = [e for e in events if e["event"] == "TaskEnd"]
    return {
        "cache": cache,
        "jobs": len(jobs), "jobs_failed": sum(1 for e in jobs if not e.get("ok", True)),
        "stages": sum(1 for e in events if e["event"] == "StageEnd"),
        "stages_skipped": sum(1 for e in events if e["event"] == "StageSkipped"),
        "tasks": len(tasks), "tasks_failed": sum(1 for e in tasks if not e.get("ok", True)),
        "gc_s": sum(float(e.get("gc_s") or 0) for e in jobs),
        "block_accesses": sum(1 for e in events if e["event"] == "BlockAccess"),
    }
