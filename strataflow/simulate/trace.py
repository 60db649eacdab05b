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

``from_event_log`` rebuilds a trace from a run's JSON-lines event log (``Context(event_log=
...)``): each ``BlockAccess`` (memory, disk or miss) is a read, each stage's reads form its
plan, ``DatasetUnpersisted`` removes, and the memory budget is the ``ApplicationStart``
event's ``memory`` unless given. Block sizes are the in-memory sizes the log reports
(``BlockStored``, ``BlockDropped``, ``BlockRecached``, memory hits), else the disk bytes.
Execution memory is not in the log, so a replayed log has no ``exec`` operations.
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..storage.manager import BlockId

__all__ = ["Trace", "from_event_log", "compulsory", "last_application"]


@dataclass
class Trace:
    """Operations and the memory they run against (``capacity`` bytes of unified memory,
    of which ``storage_fraction`` is protected from execution, as ``MemoryManager``)."""

    name: str
    ops: list[tuple]
    capacity: int
    storage_fraction: float = 0.5
    meta: dict = field(default_factory=dict)

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


def from_event_log(path: str | os.PathLike, memory: int | None = None, storage_fraction: float = 0.5) -> Trace:
    """The trace of a recorded run (see the module docstring for what is taken from it).
    Raises ValueError when the log has no block accesses or no memory size is known."""
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
    events = last_application(events)
    mem_size: dict = {}
    disk_size: dict = {}
    for ev in events:
        kind = ev.get("event")
        if kind in ("BlockStored", "BlockDropped", "BlockRecached") or (
                kind == "BlockAccess" and ev.get("result") == "memory"):
            bid = _block_id(ev)
            if bid is not None and ev.get("bytes"):
                mem_size[bid] = int(ev["bytes"])
        elif kind == "BlockAccess" and ev.get("result") == "disk" and ev.get("bytes"):
            bid = _block_id(ev)
            if bid is not None:
                disk_size.setdefault(bid, int(ev["bytes"]))
    known = list(mem_size.values()) or list(disk_size.values())
    default = int(statistics.median(known)) if known else 1

    ops: list[tuple] = []
    stage: list | None = None
    stage_at = 0
    capacity = memory
    for ev in events:
        kind = ev.get("event")
        if kind == "ApplicationStart" and capacity is None and ev.get("memory"):
            capacity = int(ev["memory"])
        elif kind == "StageStart":
            stage, stage_at = [], len(ops)
            ops.append(("plan", ()))
        elif kind == "StageEnd":
            if stage is not None:
                ops[stage_at] = ("plan", tuple(stage))
            stage = None
        elif kind == "BlockAccess" and not ev.get("mapped"):
            bid = _block_id(ev)
            if bid is None:
                continue
            size = mem_size.get(bid) or disk_size.get(bid) or default
            ops.append(("read", bid, size))
            if stage is not None:
                stage.append(bid)
        elif kind == "DatasetUnpersisted" and ev.get("dataset_id") is not None:
            ops.append(("unpersist", int(ev["dataset_id"])))
    if stage is not None:
        ops[stage_at] = ("plan", tuple(stage))
    ops = [op for op in ops if op != ("plan", ())]
    if not any(op[0] == "read" for op in ops):
        raise ValueError(f"{path}: no block accesses in this event log (were datasets persisted?)")
    if not capacity:
        raise ValueError(f"{path}: the log does not say the memory size; give --memory")
    return Trace(os.path.basename(str(path)), ops, int(capacity), storage_fraction, {"source": "event-log"})
