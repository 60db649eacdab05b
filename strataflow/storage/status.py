"""What the cache holds, asked from outside: per persisted dataset and per tier
(``Context.storage_status()``, ``Context.metrics()``, the scheduler's plan). Read-only
queries over a block manager's stores; nothing here changes a store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.storage.manager import BlockManager

__all__ = ["DatasetStorage", "StorageStatus", "blocks_of", "location_of", "tier_bytes", "tier_hits", "storage_status",
           "merge_status", "merge_metrics"]


@dataclass(frozen=True)
class DatasetStorage:
    name: str
    level: str
    num_partitions: int
    memory_partitions: int
    disk_partitions: int
    memory_bytes: int
    disk_bytes: int
    serializer: str = "auto"
    layout: str = ""  # mapped levels: the blocks' zero-copy kinds, or the pickle fallback
    tier_bytes: dict = field(default_factory=dict)  # disk tier name -> bytes of this dataset there


def _mb(n: int) -> str:
    return f"{n / 2**20:,.1f}"


class StorageStatus(list):
    """A list of :class:`DatasetStorage`; ``str()`` renders it as a table. ``tiers`` lists
    the disk tiers (name, capacity, used, blocks, hits, bandwidth), ``tier_bytes`` and
    ``tier_hits`` map ``memory`` and each tier to bytes held and blocks served."""

    tiers: list = []
    tier_bytes: dict = {}
    tier_hits: dict = {}
    #: the dynamic memory split now (``budget``, ``heap``, ``mapped`` bytes, ``moves``),
    #: summed over executors; empty when the split is fixed
    split: dict = {}

    def _split_lines(self) -> list[str]:
        s = self.split
        if not s or not (s["moves"] or s["mapped"]):
            return []  # fixed, or never moved from all-heap (the default for every level): nothing to say
        return ["", f"memory split: heap {_mb(s['heap'])} MiB, mapped pages {_mb(s['mapped'])} MiB "
                    f"of {_mb(s['budget'])} MiB ({s['moves']} moves)"]

    def _tier_lines(self) -> list[str]:
        if not self.tiers or [t["name"] for t in self.tiers] == ["disk"]:
            return []  # one untiered disk: the table above says it all
        lines = ["", "tier      used MiB  capacity MiB  blocks  hits  read MiB/s"]
        lines.append(f"{'memory':<8}  {_mb(self.tier_bytes.get('memory', 0)):>8}  {'':>12}  {'':>6}  "
                     f"{self.tier_hits.get('memory', 0):>4}")
        for t in self.tiers:
            cap = "-" if t["capacity"] is None else _mb(t["capacity"])
            bw = "?" if t["bandwidth"] is None else f"{t['bandwidth'] / 2**20:,.0f}"
            lines.append(f"{t['name']:<8}  {_mb(t['used']):>8}  {cap:>12}  {t['blocks']:>6}  {t['hits']:>4}  {bw:>10}")
        return lines

    def __str__(self) -> str:
        head = ("dataset", "level", "serializer", "in memory", "on disk", "memory MiB", "disk MiB")
        rows = [(d.name, d.level, d.serializer, f"{d.memory_partitions}/{d.num_partitions}",
                 f"{d.disk_partitions}/{d.num_partitions}", _mb(d.memory_bytes), _mb(d.disk_bytes)) for d in self]
        notes = [f"  {d.name}: {d.layout}" for d in self if d.layout]
        if not rows:
            return "\n".join(["no persisted datasets", *self._tier_lines(), *self._split_lines()])
        widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
        fmt = lambda r: "  ".join(str(c).ljust(w) if i < 3 else str(c).rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(r, widths)))
        return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, rows), *notes, *self._tier_lines(),
                          *self._split_lines()])


def blocks_of(bm: "BlockManager", dataset_id: int) -> tuple[dict, dict]:
    """Sizes of the dataset's blocks in memory and on disk (tiers and mapped), by split."""
    with bm.memory.lock:
        mem = {b.split: e.size for b, e in bm.memory_store.items() if b.dataset_id == dataset_id}
    disk = {b.split: e.size for b, e in bm.disk.items() if b.dataset_id == dataset_id}
    if bm.regions is not None:
        disk.update({b.split: e.size for b, e in bm.regions.items() if b.dataset_id == dataset_id})
    if bm.shared is not None:  # STORE: the blocks this executor put in the shared store
        disk.update(bm.shared.blocks(dataset_id))
    return mem, disk


def location_of(bm: "BlockManager", bid) -> str | None:
    """Where the block is now: ``memory``, ``disk`` (a tier or the region store), or None."""
    if bid in bm.memory_store:
        return "memory"
    if bid in bm.disk or (bm.regions is not None and bid in bm.regions):
        return "disk"
    if bm.shared is not None and bid.split in bm.shared.blocks(bid.dataset_id):
        return "disk"
    return None


def tier_bytes(bm: "BlockManager") -> dict[str, int]:
    """Bytes held in memory and on each disk tier, fastest first."""
    return {"memory": bm.memory.storage_used, **{t.name: t.used for t in bm.disk.tiers}}


def tier_hits(bm: "BlockManager") -> dict[str, int]:
    """Blocks served from memory and each disk tier (and ``mapped``, the region store's,
    outside the tiers, when it served any)."""
    got = bm.metrics.tier_hits()
    out = {name: got.get(name, 0) for name in ["memory", *bm.disk.names]}
    if got.get("mapped"):
        out["mapped"] = got["mapped"]
    return out


def _tier_bytes_of(bm: "BlockManager", dataset_id: int) -> dict[str, int]:
    return {name: sum(e.size for b, e in items if b.dataset_id == dataset_id)
            for name, items in bm.disk.items_by_tier().items()}


def _layout_of(bm: "BlockManager", dataset_id: int) -> str:
    """How a mapped dataset's blocks are laid out: zero-copy kinds, or the pickle
    fallback (plain Python records are loaded, not mapped)."""
    if bm.regions is None:
        return ""
    kinds = {(e.kind, e.zero_copy) for b, e in bm.regions.entries() if b.dataset_id == dataset_id}
    return ", ".join(sorted(f"{k}{'' if z else ' (pickle fallback: loaded, not mapped)'}" for k, z in kinds))


def storage_status(bm: "BlockManager") -> StorageStatus:
    """One entry per persisted dataset, and the tiers (see ``Context.storage_status``)."""
    out = StorageStatus()
    for info in bm.datasets():
        mem, disk = blocks_of(bm, info.dataset_id)
        out.append(DatasetStorage(info.label(), info.level_name, info.num_partitions, len(mem), len(disk),
                                  sum(mem.values()), sum(disk.values()), info.serializer.name,
                                  _layout_of(bm, info.dataset_id) if info.mapped else "",
                                  _tier_bytes_of(bm, info.dataset_id)))
    hits = tier_hits(bm)
    out.tiers = [{**t, "hits": hits.get(t["name"], 0)} for t in bm.disk.describe()]
    out.tier_bytes = tier_bytes(bm)
    out.tier_hits = hits
    if bm.split is not None:
        snap = bm.split.snapshot()
        out.split = {k: snap[k] for k in ("budget", "heap", "mapped", "moves")}
    return out


def _sum_dicts(dicts: list[dict]) -> dict:
    """Numbers summed by key; dicts within summed the same way (per input path); text
    (a reason) kept from the last that has it."""
    out: dict = {}
    for d in dicts:
        for k, v in d.items():
            if isinstance(v, dict):
                out[k] = _sum_dicts([out.get(k, {}), v])
            elif isinstance(v, str):
                out[k] = v
            else:
                out[k] = out.get(k, 0) + v
    return out


def merge_status(parts: list[StorageStatus], registered: list[tuple[int, str, str, int]]) -> StorageStatus:
    """The executors' storage statuses as one: a dataset's partitions and bytes summed
    over executors (a partition cached on two executors counts twice), tiers merged by
    name (capacities summed: each executor has its share). ``registered`` (id, label,
    level, partitions) lists the persisted datasets in the driver's order, so that one
    not computed yet shows with nothing stored."""
    by_name: dict[str, list[DatasetStorage]] = {}
    for part in parts:
        for d in part:
            by_name.setdefault(d.name, []).append(d)
    out = StorageStatus()
    names = [label for _, label, _, _ in registered] + [n for n in by_name if n not in {r[1] for r in registered}]
    for name in names:
        got = by_name.get(name)
        if not got:
            reg = next(r for r in registered if r[1] == name)
            out.append(DatasetStorage(name, reg[2], reg[3], 0, 0, 0, 0))
            continue
        first = got[0]
        layouts = sorted({d.layout for d in got if d.layout})
        out.append(DatasetStorage(name, first.level, first.num_partitions,
                                  sum(d.memory_partitions for d in got), sum(d.disk_partitions for d in got),
                                  sum(d.memory_bytes for d in got), sum(d.disk_bytes for d in got), first.serializer,
                                  ", ".join(layouts), _sum_dicts([d.tier_bytes for d in got])))
    tiers: dict[str, dict] = {}
    for part in parts:
        for t in part.tiers:
            m = tiers.setdefault(t["name"], {**t, "used": 0, "blocks": 0, "hits": 0, "capacity": 0})
            for k in ("used", "blocks", "hits"):
                m[k] += t[k]
            m["capacity"] = None if t["capacity"] is None or m["capacity"] is None else m["capacity"] + t["capacity"]
    out.tiers = list(tiers.values())
    out.tier_bytes = _sum_dicts([p.tier_bytes for p in parts])
    out.tier_hits = _sum_dicts([p.tier_hits for p in parts])
    out.split = _sum_dicts([p.split for p in parts])
    return out


def merge_metrics(parts: list[dict], retired: dict | None = None) -> dict:
    """The executors' ``metrics()`` as one: numbers summed, per-tier dicts summed by key,
    plus the counters of executors lost (``retired``)."""
    out: dict = {}
    for part in parts:
        for k, v in part.items():
            if isinstance(v, dict):
                out[k] = _sum_dicts([out.get(k, {}), v])
            else:
                out[k] = out.get(k, 0) + v
    for k, v in (retired or {}).items():
        out[k] = out.get(k, 0) + v
    return out
