"""Block-access traces: what the cache simulator replays.

A trace is a list of operations on one memory budget, in the order the block manager saw
them. Plain tuples keep a replay of thousands of operations cheap:

- ``("read", block_id, size)``: a task reads a persisted block (the first read of a block
  computes and puts it; MEMORY_AND_DISK semantics: once computed a block is in memory or
  on disk, never lost);
- ``("plan", (block_id, ...))``: a stage is submitted that reads these blocks in order
  (what the scheduler tells ``Policy.plan``);
- ``("exec", nbytes)`` / ``("free", nbytes)``: execution memory taken (it may evict
  blocks, down to the protected storage region) and given back;
- ``("unpersist", dataset_id)``: every block of a dataset is removed.

``executor_traces`` rebuilds a run's traces from its JSON-lines event log (``Context(
event_log=...)``), one per executor, since each executor's block manager caches in its own
share of the budget (``ApplicationStart``'s ``executor_memory``): replaying all of them
against one pooled budget measures a cache the run never had (a 2-executor run of
K-means scored 0.04 against 0.16 for every pooled policy). In an executor's trace each of
its ``BlockAccess`` events (memory, disk or miss) is a read, each stage's reads on it form
its plan, and ``DatasetUnpersisted`` removes. ``from_event_log`` is the whole log as one
cache (a one-executor run). Block sizes are the in-memory sizes the log reports
(``BlockStored``, ``BlockDropped``, ``BlockRecached``, memory hits), else the disk bytes.
Each trace keeps what the run logged for each read (``Trace.logged``), so
``measured_byte_hit_ratio`` scores the run on exactly the reads the simulator replays.
Execution memory is not in the log, so a replayed log has no ``exec`` operations.
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable

from strataflow.storage.manager import BlockId

__all__ = ["Trace", "from_event_log", "executor_traces", "run_settings", "compulsory", "last_application",
           "measured_byte_hit_ratio"]


@dataclass
class Trace:
    """Operations and the memory they run against (``capacity`` bytes of unified memory,
    of which ``storage_fraction`` is protected from execution, as ``MemoryManager``)."""

    name: str
    ops: list[tuple]
    capacity: int
    storage_fraction: float = 0.5
    meta: dict = field(default_factory=dict)
    #: for a trace read from an event log: the result the run itself logged for each read
    #: (``memory``, ``disk``, ``miss``, ``peer``), in order
    logged: list[str] | None = None

    def reads(self) -> Iterable[tuple[Any, int]]:
        return ((op[1], op[2]) for op in self.ops if op[0] == "read")

    def summary(self) -> dict:
        """Sizes that describe the trace (the ``trace`` part of the simulator's JSON)."""
        sizes: dict = {}
        n = total = 0
        for bid, size in self.reads():
            sizes[bid] = size
            n += 1
            total += size
        data = sum(sizes.values())
        return {"name": self.name, "reads": n, "read_bytes": total, "blocks": len(sizes), "data_bytes": data,
                "memory_bytes": self.capacity, "pressure": round(data / self.capacity, 3) if self.capacity else None,
                "storage_fraction": self.storage_fraction, **self.meta}


def measured_byte_hit_ratio(traces: Iterable[Trace]) -> float | None:
    """What the run itself achieved on the traces' reads, measured the simulator's way:
    memory-hit bytes over the bytes of reads that were not a block's first read in its
    trace (each executor's first read of a block is compulsory for it). None without a
    logged result for every read, or without a read that is not a first."""
    hit = total = 0
    for trace in traces:
        reads = [op for op in trace.ops if op[0] == "read"]
        if trace.logged is None or len(trace.logged) != len(reads):
            return None
        seen: set = set()
        for (_, bid, size), result in zip(reads, trace.logged):
            if bid not in seen:
                seen.add(bid)
                continue
            total += size
            hit += size if result == "memory" else 0
    return hit / total if total else None


def compulsory(trace: Trace) -> tuple[int, int]:
    """Reads and bytes of first reads (misses every cache has, even an unbounded one)."""
    seen: set = set()
    n = b = 0
    for bid, size in trace.reads():
        if bid not in seen:
            seen.add(bid)
            n += 1
            b += size
    return n, b


def _block_id(ev: dict) -> BlockId | None:
    try:
        return BlockId(int(ev["dataset_id"]), int(ev["split"]))
    except (KeyError, TypeError, ValueError):
        name = str(ev.get("block", ""))
        parts = name.split("_")
        if len(parts) == 3 and parts[0] == "rdd":
            try:
                return BlockId(int(parts[1]), int(parts[2]))
            except ValueError:
                return None
        return None


def last_application(events: list[dict]) -> list[dict]:
    """The events of the log's last application: a log that several runs appended to
    (the same ``event_log`` path) would otherwise mix their blocks, whose ids repeat."""
    starts = [i for i, ev in enumerate(events) if ev.get("event") == "ApplicationStart"]
    return events[starts[-1]:] if len(starts) > 1 else events


def _load(path: str | os.PathLike) -> list[dict]:
    """The log's events (its last application's), in file order."""
    events = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not a JSON event ({exc.msg})") from None
    return last_application(events)


def _executor(ev: dict) -> str | None:
    return None if ev.get("executor") is None else str(ev["executor"])


def _is_read(ev: dict, local: bool) -> bool:
    """A read of the cache the trace models. Reads through maps are not in it (the
    simulator models the heap cache); a ``peer-miss`` is followed by the task's own miss;
    with ``local``, a ``peer`` read was served by another executor's cache, not this one."""
    if ev.get("event") != "BlockAccess" or ev.get("mapped"):
        return False
    result = ev.get("result")
    return result in ("memory", "disk", "miss") or (result == "peer" and not local)


def _sizes(events: list[dict]) -> tuple[dict, dict, int]:
    """Block sizes: in memory (``BlockStored``, ``BlockDropped``, ``BlockRecached``, memory
    hits) and on disk, and the median for a block neither reports."""
    mem_size: dict = {}
    disk_size: dict = {}
    for ev in events:
        kind = ev.get("event")
        if kind in ("BlockStored", "BlockDropped", "BlockRecached") or (
                kind == "BlockAccess" and ev.get("result") == "memory"):
            bid = _block_id(ev)
            if bid is not None and ev.get("bytes"):
                mem_size[bid] = int(ev["bytes"])
        elif kind == "BlockAccess" and ev.get("result") in ("disk", "peer") and ev.get("bytes"):
            bid = _block_id(ev)
            if bid is not None:
                disk_size.setdefault(bid, int(ev["bytes"]))
    known = list(mem_size.values()) or list(disk_size.values())
    return mem_size, disk_size, int(statistics.median(known)) if known else 1


def _ops(events: list[dict], executor: str | None, sizes: tuple[dict, dict, int]) -> tuple[list[tuple], list[str]]:
    """The trace's operations (every executor's when ``executor`` is None, else that
    executor's own) and what the run logged for each read, in order."""
    mem_size, disk_size, default = sizes
    local = executor is not None
    ops: list[tuple] = []
    logged: list[str] = []
    stage: list | None = None
    stage_at = 0
    for ev in events:
        kind = ev.get("event")
        if kind == "StageStart":
            stage, stage_at = [], len(ops)
            ops.append(("plan", ()))
        elif kind == "StageEnd":
            if stage is not None:
                ops[stage_at] = ("plan", tuple(stage))
            stage = None
        elif _is_read(ev, local) and (not local or _executor(ev) in (None, executor)):
            bid = _block_id(ev)
            if bid is None:
                continue
            ops.append(("read", bid, mem_size.get(bid) or disk_size.get(bid) or default))
            logged.append(str(ev.get("result")))
            if stage is not None:
                stage.append(bid)
        elif kind == "DatasetUnpersisted" and ev.get("dataset_id") is not None and (
                not local or _executor(ev) in (None, executor)):
            ops.append(("unpersist", int(ev["dataset_id"])))
    if stage is not None:
        ops[stage_at] = ("plan", tuple(stage))
    return [op for op in ops if op != ("plan", ())], logged


def _start(events: list[dict]) -> dict:
    return next((ev for ev in events if ev.get("event") == "ApplicationStart"), {})


def _fraction(app: dict, storage_fraction: float | None) -> float:
    if storage_fraction is not None:
        return float(storage_fraction)
    return float(app.get("storage_fraction") or 0.5)


def from_event_log(path: str | os.PathLike, memory: int | None = None,
                   storage_fraction: float | None = None) -> Trace:
    """The trace of a recorded run as if one cache of ``memory`` bytes (default: the log's
    whole budget) had served every executor's reads: right for a run with one executor.
    For several, each had its own share: replay ``executor_traces`` (what ``strataflow
    simulate`` and ``strataflow report`` do). ``storage_fraction``: default the log's, else
    0.5. Raises ValueError when the log has no block accesses or no memory size is known."""
    events = _load(path)
    ops, logged = _ops(events, None, _sizes(events))
    if not any(op[0] == "read" for op in ops):
        raise ValueError(f"{path}: no block accesses in this event log (were datasets persisted?)")
    app = _start(events)
    capacity = memory or app.get("memory")
    if not capacity:
        raise ValueError(f"{path}: the log does not say the memory size; give --memory")
    return Trace(os.path.basename(str(path)), ops, int(capacity), _fraction(app, storage_fraction),
                 {"source": "event-log"}, logged)


def executor_traces(path: str | os.PathLike, memory: int | None = None,
                    storage_fraction: float | None = None) -> list[Trace]:
    """One trace per executor that read a cached block: its own reads (``executor`` of
    each ``BlockAccess``) against its own memory, as the run had them. ``memory`` is the
    whole budget, shared evenly as ``Context(memory=...)`` shares it (default: the log's
    ``executor_memory``, else its ``memory`` over its ``executors``). Reads another
    executor served (``peer``) are in no executor's trace: no executor's cache served
    them. A log without executors on its reads gives one trace, as ``from_event_log``.
    Raises ValueError as ``from_event_log`` does."""
    events = _load(path)
    sizes = _sizes(events)
    ids = list(dict.fromkeys(_executor(ev) for ev in events if _is_read(ev, True)))
    if not ids:
        raise ValueError(f"{path}: no block accesses in this event log (were datasets persisted?)")
    if ids == [None]:
        return [from_event_log(path, memory, storage_fraction)]
    ids = [i for i in ids if i is not None]
    app = _start(events)
    n = int(app.get("executors") or len(ids))
    if memory:
        capacity = int(memory) // n
    elif app.get("executor_memory"):
        capacity = int(app["executor_memory"])
    elif app.get("memory"):
        capacity = int(app["memory"]) // n
    else:
        raise ValueError(f"{path}: the log does not say the memory size; give --memory")
    order = sorted(ids, key=lambda e: (not e.isdigit(), int(e) if e.isdigit() else 0, e))
    name = os.path.basename(str(path))
    out = []
    for ex in order:
        ops, logged = _ops(events, ex, sizes)
        out.append(Trace(f"{name} executor {ex}", ops, capacity, _fraction(app, storage_fraction),
                         {"source": "event-log", "executor": ex}, logged))
    return out


def run_settings(path: str | os.PathLike) -> dict:
    """What the log says of the run's cache: its ``policy`` and, with asynchronous
    eviction, its ``eviction_watermarks`` (None where the log does not say)."""
    app = _start(_load(path))
    marks = app.get("eviction_watermarks")
    return {"policy": app.get("policy"), "eviction_watermarks": tuple(marks) if marks else None,
            "executors": app.get("executors")}
