"""``Context.storage_status()``: what the cache holds, per persisted dataset."""

from __future__ import annotations

from dataclasses import dataclass

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


def _mb(n: int) -> str:
    return f"{n / 2**20:,.1f}"


class StorageStatus(list):
    """A list of :class:`DatasetStorage`; ``str()`` renders it as a table."""

    def __str__(self) -> str:
        head = ("dataset", "level", "serializer", "in memory", "on disk", "memory MB", "disk MB")
        rows = [(d.name, d.level, d.serializer, f"{d.memory_partitions}/{d.num_partitions}",
                 f"{d.disk_partitions}/{d.num_partitions}", _mb(d.memory_bytes), _mb(d.disk_bytes)) for d in self]
        notes = [f"  {d.name}: {d.layout}" for d in self if d.layout]
        if not rows:
            return "no persisted datasets"
        widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
        fmt = lambda r: "  ".join(str(c).ljust(w) if i < 3 else str(c).rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(r, widths)))
        return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, rows), *notes])
