"""``Context.storage_status()``: what the cache holds, per persisted dataset."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DatasetStorage", "StorageStatus"]


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

    def _tier_lines(self) -> list[str]:
        if not self.tiers or [t["name"] for t in self.tiers] == ["disk"]:
            return []  # one untiered disk: the table above says it all
        lines = ["", "tier      used MB  capacity MB  blocks  hits  read MB/s"]
        lines.append(f"{'memory':<8}  {_mb(self.tier_bytes.get('memory', 0)):>7}  {'':>11}  {'':>6}  "
                     f"{self.tier_hits.get('memory', 0):>4}")
        for t in self.tiers:
            cap = "-" if t["capacity"] is None else _mb(t["capacity"])
            bw = "?" if t["bandwidth"] is None else f"{t['bandwidth'] / 2**20:,.0f}"
            lines.append(f"{t['name']:<8}  {_mb(t['used']):>7}  {cap:>11}  {t['blocks']:>6}  {t['hits']:>4}  {bw:>9}")
        return lines

    def __str__(self) -> str:
        head = ("dataset", "level", "serializer", "in memory", "on disk", "memory MB", "disk MB")
        rows = [(d.name, d.level, d.serializer, f"{d.memory_partitions}/{d.num_partitions}",
                 f"{d.disk_partitions}/{d.num_partitions}", _mb(d.memory_bytes), _mb(d.disk_bytes)) for d in self]
        notes = [f"  {d.name}: {d.layout}" for d in self if d.layout]
        if not rows:
            return "\n".join(["no persisted datasets", *self._tier_lines()])
        widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
        fmt = lambda r: "  ".join(str(c).ljust(w) if i < 3 else str(c).rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(r, widths)))
        return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, rows), *notes, *self._tier_lines()])
