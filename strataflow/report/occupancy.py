"""Where the cached bytes were, over time: blocks' whereabouts replayed from the log.

The log names most moves of a block: ``BlockStored`` (into memory), ``BlockDropped``
(out of memory, to disk or discarded), ``BlockRecached`` and ``BlockPrefetched`` (disk to
memory), ``BlockMoved`` (between disk tiers), ``BlockLost``, ``DatasetUnpersisted``,
``ExecutorLost``. One it does not: a computed block put straight on disk (no room in
memory, or a disk-only level) posts nothing. It is inferred: a ``miss`` whose block is
neither stored in memory nor reported ``BlockNotStored`` by the end of its task is on
the top disk tier (in the mapped region files, for a dataset read through maps). Its
size is the one a later read of it reports, else its size in memory, else the median of
its dataset's blocks; such guesses are counted (``estimated_blocks``) so the page can say.

Each read also corrects the replay: a block read from a tier is on that tier, at the
size read. Bytes moved (dropped, re-cached, prefetched, promoted, demoted) are summed as
the events report them, so their totals match the run's metrics. ``MemorySplitMoved``
events (the dynamic split of ``mmap_memory="auto"``) give each executor's heap and mapped
shares; their sum over executors is the split over time.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

__all__ = ["Series", "Occupancy", "fold_occupancy", "MOVES", "block_dataset"]

MEMORY, MAPPED = "memory", "mapped"
MOVES = ("dropped", "re-cached", "prefetched", "promoted (tier up)", "demoted (tier down)")


@dataclass
class Series:
    """A step function: the value is ``v[i]`` from time ``t[i]`` until ``t[i+1]``."""

    t: list[float] = field(default_factory=list)
    v: list[float] = field(default_factory=list)

    def add(self, t: float, v: float) -> None:
        if self.t and self.t[-1] == t:
            self.v[-1] = v
        else:
            self.t.append(t)
            self.v.append(v)

    @property
    def last(self) -> float:
        return self.v[-1] if self.v else 0.0

    @property
    def peak(self) -> float:
        return max(self.v, default=0.0)


@dataclass
class Occupancy:
    locations: list[str]                          # memory, disk tiers top first, mapped
    datasets: dict[int, str]                      # id -> name#id (StageStart's ``persisted``)
    held: dict[tuple[str, int], Series]           # (location, dataset) -> bytes held
    moves: dict[str, Series]                      # MOVES -> cumulative bytes
    budget: int | None                            # the unified memory budget, all executors
    split: dict[str, Series] | None               # heap, mapped, budget (bytes) when the split moved
    estimated_blocks: int = 0
    auto_levels: list[dict] = field(default_factory=list)
    #: (executors, bytes each) when the budget was shared among several executors
    shares: tuple[int, int] | None = None

    def total(self, location: str) -> Series:
        """Bytes held at ``location`` over time, all datasets."""
        keys = [k for k in self.held if k[0] == location]
        times = sorted({t for k in keys for t in self.held[k].t})
        out = Series()
        for t in times:
            v = 0.0
            for k in keys:
                s = self.held[k]
                i = _index(s.t, t)
                v += s.v[i] if i >= 0 else 0.0
            out.add(t, v)
        return out


def _index(ts: list[float], t: float) -> int:
    import bisect

    return bisect.bisect_right(ts, t) - 1


def block_dataset(ev: dict) -> int | None:
    """The dataset of an event's block: its ``dataset_id``, else parsed from ``rdd_D_S``."""
    if isinstance(ev.get("dataset_id"), int):
        return ev["dataset_id"]
    parts = str(ev.get("block", "")).split("_")
    if len(parts) == 3 and parts[0] == "rdd" and parts[1].isdigit():
        return int(parts[1])
    return None


def _split_of(block: str) -> int | None:
    parts = block.split("_")
    return int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else None


def _tier_order(events: list[dict]) -> list[str]:
    """Disk tiers, fastest first: ``BlockMoved`` says which is above which; a lone tier
    is the top one; with no tier named, the single default tier ``disk``."""
    names: list[str] = []
    above: set[tuple[str, str]] = set()
    for ev in events:
        kind = ev["event"]
        if kind == "BlockMoved":
            a, b = ev.get("from"), ev.get("to")
            for n in (a, b):
                if n and n not in names:
                    names.append(n)
            if a and b:
                above.add((a, b) if ev.get("direction") == "down" else (b, a))
        elif kind in ("BlockAccess", "BlockPrefetched", "BlockLost") and ev.get("tier") and not ev.get("mapped"):
            if ev["tier"] not in names:
                names.append(ev["tier"])
    if not names:
        return ["disk"]
    rank = {n: sum(1 for a, b in above if b == n) for n in names}  # tiers above each
    return sorted(names, key=lambda n: (rank[n], names.index(n)))


class _Replay:
    def __init__(self, events: list[dict], t0: float) -> None:
        self.t0 = t0
        self.tiers = _tier_order(events)
        self.top = self.tiers[0]
        self.where: dict[str, dict[str, int]] = defaultdict(dict)    # block -> location -> bytes
        self.owner: dict[str, str | None] = {}
        self.level: dict[tuple[str, int], int] = defaultdict(int)
        self.held: dict[tuple[str, int], Series] = {}
        self.moved = {m: Series([0.0], [0.0]) for m in MOVES}
        self.pending: dict[str, tuple[int, str | None]] = {}        # missed block -> (dataset, executor)
        self.estimated = 0
        self.mapped_datasets = {block_dataset(e) for e in events if e["event"] == "BlockAccess" and e.get("mapped")}
        self.sizes = self._known_sizes(events)

    @staticmethod
    def _known_sizes(events: list[dict]) -> dict[str, dict]:
        disk: dict[str, int] = {}
        mem: dict[str, int] = {}
        for ev in events:
            b, n = ev.get("block"), ev.get("bytes")
            if not b or not isinstance(n, int) or n <= 0:
                continue
            kind = ev["event"]
            if (kind == "BlockAccess" and ev.get("result") == "disk") or kind == "BlockMoved":
                disk.setdefault(b, n)
            elif kind in ("BlockStored", "BlockDropped", "BlockRecached") or (
                    kind == "BlockAccess" and ev.get("result") == "memory"):
                mem.setdefault(b, n)
        by_ds: dict[int | None, list[int]] = defaultdict(list)
        for b, n in {**mem, **disk}.items():
            by_ds[block_dataset({"block": b})].append(n)
        median = {d: int(statistics.median(v)) for d, v in by_ds.items()}
        return {"disk": disk, "mem": mem, "median": median}

    # -- state changes ---------------------------------------------------------------------
    def _set(self, t: float, loc: str, ds: int, delta: int) -> None:
        key = (loc, ds)
        self.level[key] += delta
        self.held.setdefault(key, Series([0.0], [0.0])).add(t - self.t0, self.level[key])

    def place(self, t: float, block: str, ds: int, loc: str, size: int, executor: str | None = None) -> None:
        old = self.where[block].get(loc)
        if old == size:
            return
        self.where[block][loc] = size
        self._set(t, loc, ds, size - (old or 0))
        if executor is not None:
            self.owner[block] = executor

    def remove(self, t: float, block: str, ds: int, loc: str) -> None:
        size = self.where.get(block, {}).pop(loc, None)
        if size is not None:
            self._set(t, loc, ds, -size)

    def remove_all(self, t: float, block: str, ds: int) -> None:
        for loc in list(self.where.get(block, {})):
            self.remove(t, block, ds, loc)

    def disk_size(self, block: str, ds: int) -> int:
        n = self.sizes["disk"].get(block) or self.sizes["mem"].get(block)
        if n:
            return n
        self.estimated += 1
        return self.sizes["median"].get(ds, 0)

    def on_disk(self, t: float, block: str, ds: int, tier: str, size: int, ex: str | None) -> None:
        """A block known to be on ``tier`` now: off any other disk tier."""
        for other in self.tiers:
            if other != tier:
                self.remove(t, block, ds, other)
        self.place(t, block, ds, tier, size, ex)

    def settle(self, t: float, block: str) -> None:
        """A missed block neither put in memory nor refused: it went to disk."""
        ds, ex = self.pending.pop(block)
        if MEMORY in self.where.get(block, {}):
            return
        loc = MAPPED if ds in self.mapped_datasets else self.top
        if loc == MAPPED or not any(t_ in self.where.get(block, {}) for t_ in self.tiers):
            self.place(t, block, ds, loc, self.disk_size(block, ds), ex)

    def move(self, t: float, kind: str, n: int) -> None:
        s = self.moved[kind]
        s.add(t - self.t0, s.last + n)


def fold_occupancy(events: list[dict], t0: float) -> Occupancy:
    """Replays the log's block events (sorted by time) into bytes held per location and
    dataset, bytes moved and the memory split; times in seconds since ``t0``."""
    r = _Replay(events, t0)
    names: dict[int, str] = {}
    budget = None
    shares = None
    split_state = _split_before(events)
    split: dict[str, Series] | None = None
    if split_state:
        split = {"heap": Series(), "mapped": Series(), "budget": Series()}
        _split_point(split, split_state, 0.0)
    autos: list[dict] = []
    for ev in events:
        kind, t = ev["event"], ev["time"]
        block = ev.get("block")
        ds = block_dataset(ev)
        ex = None if ev.get("executor") is None else str(ev["executor"])
        if kind == "ApplicationStart" and ev.get("memory"):
            budget = int(ev["memory"])
            if (ev.get("executors") or 1) > 1 and ev.get("executor_memory"):
                shares = (int(ev["executors"]), int(ev["executor_memory"]))
        elif kind == "BlockAccess" and block and ds is not None:
            result, n = ev.get("result"), ev.get("bytes")
            if result == "miss":
                if block in r.pending:
                    r.settle(t, block)
                r.pending[block] = (ds, ex)
            elif result == "memory" and isinstance(n, int) and MEMORY not in r.where.get(block, {}):
                r.place(t, block, ds, MEMORY, n, ex)
            elif result == "disk" and isinstance(n, int):
                if ev.get("mapped"):
                    r.place(t, block, ds, MAPPED, n, ex)
                elif ev.get("tier"):
                    r.on_disk(t, block, ds, ev["tier"], n, ex)
        elif kind == "BlockStored" and block and ds is not None:
            r.pending.pop(block, None)
            if ev.get("where", MEMORY) == MEMORY:
                r.place(t, block, ds, MEMORY, int(ev.get("bytes") or 0), ex)
        elif kind == "BlockNotStored" and block:
            r.pending.pop(block, None)
        elif kind == "BlockDropped" and block and ds is not None:
            r.remove(t, block, ds, MEMORY)
            r.move(t, "dropped", int(ev.get("bytes") or 0))
            if ev.get("to") == "disk":
                here = r.where.get(block, {})
                if ds in r.mapped_datasets:
                    if MAPPED not in here:
                        r.place(t, block, ds, MAPPED, r.disk_size(block, ds), ex)
                elif not any(x in here for x in r.tiers):
                    r.place(t, block, ds, r.top, r.disk_size(block, ds), ex)
        elif kind in ("BlockRecached", "BlockPrefetched") and block and ds is not None:
            r.place(t, block, ds, MEMORY, int(ev.get("bytes") or 0), ex)
            r.move(t, "re-cached" if kind == "BlockRecached" else "prefetched", int(ev.get("bytes") or 0))
        elif kind == "BlockMoved" and block and ds is not None:
            n = int(ev.get("bytes") or 0)
            r.remove(t, block, ds, ev.get("from") or "")
            r.on_disk(t, block, ds, ev.get("to") or r.top, n, ex)
            r.move(t, "promoted (tier up)" if ev.get("direction") == "up" else "demoted (tier down)", n)
        elif kind == "BlockLost" and block and ds is not None:
            r.pending.pop(block, None)
            if ev.get("tier"):
                r.remove(t, block, ds, ev["tier"])
            else:
                for loc in [*r.tiers, MAPPED]:
                    r.remove(t, block, ds, loc)
        elif kind == "TaskEnd":
            part = ev.get("partition")
            for b in [b for b, (_, bex) in r.pending.items()
                      if _split_of(b) == part and (bex is None or ex is None or bex == ex)]:
                r.settle(t, b)
        elif kind == "StageEnd":
            for b in list(r.pending):
                r.settle(t, b)
        elif kind == "DatasetUnpersisted" and ev.get("dataset_id") is not None:
            gone = int(ev["dataset_id"])
            names.setdefault(gone, str(ev.get("name") or f"dataset {gone}"))
            for b in [b for b in r.where if block_dataset({"block": b}) == gone
                      and (ex is None or r.owner.get(b) in (None, ex))]:
                r.remove_all(t, b, gone)
        elif kind == "ExecutorLost" and ev.get("executor") is not None:
            lost = str(ev["executor"])
            for b in [b for b, o in r.owner.items() if o == lost]:
                r.remove_all(t, b, block_dataset({"block": b}))
        elif kind == "StageStart":
            for d in ev.get("persisted") or []:  # name#id, as the CLI and errors name datasets
                if isinstance(d, dict) and d.get("dataset_id") is not None and d.get("name"):
                    names[int(d["dataset_id"])] = str(d["name"])
        elif kind == "AutoLevelChosen":
            if ev.get("dataset_id") is not None and ev.get("name"):
                names.setdefault(int(ev["dataset_id"]), str(ev["name"]))
            autos.append({**ev, "t": t - t0})
        elif kind == "MemorySplitMoved" and split is not None:
            split_state[ex or "driver"] = {k: int(ev.get(k) or 0) for k in ("heap", "mapped", "budget")}
            _split_point(split, split_state, t - t0)
    for b in list(r.pending):
        r.settle(events[-1]["time"], b)
    datasets = sorted({ds for _, ds in r.held})
    used = {loc for loc, _ in r.held}
    locations = [MEMORY] + [x for x in r.tiers if x in used or x == r.top] + ([MAPPED] if MAPPED in used else [])
    return Occupancy(locations, {d: names.get(d, f"dataset {d}") for d in datasets}, r.held, r.moved, budget,
                     split, r.estimated, autos, shares)


def _split_before(events: list[dict]) -> dict[str, dict]:
    """Each executor's heap and mapped shares before its first ``MemorySplitMoved`` (the
    move's result less the bytes it moved)."""
    state: dict[str, dict] = {}
    for ev in events:
        if ev["event"] != "MemorySplitMoved":
            continue
        key = "driver" if ev.get("executor") is None else str(ev["executor"])
        if key not in state:
            n = int(ev.get("bytes") or 0)
            sign = 1 if ev.get("to") == "mapped" else -1
            state[key] = {"heap": int(ev.get("heap") or 0) + sign * n,
                          "mapped": int(ev.get("mapped") or 0) - sign * n, "budget": int(ev.get("budget") or 0)}
    return state


def _split_point(split: dict[str, Series], state: dict[str, dict], t: float) -> None:
    for k in ("heap", "mapped", "budget"):
        split[k].add(t, sum(s[k] for s in state.values()))
