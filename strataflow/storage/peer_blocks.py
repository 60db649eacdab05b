"""Blocks another executor holds: where they are, and reading them (Spark's remote reads).

A task runs where its partition's block is cached whenever delay scheduling can place it
there; when it cannot (the holder stays busy past ``locality_wait``, or the holder was
lost and its blocks with it), the driver hands the task the other executors' locations of
the blocks it will read (:class:`PeerBlock`), and the block manager reads one of them
instead of recomputing it:

- a block on the holder's disk (a tier file or a mapped extent) is read straight from its
  file, as every executor of a machine can (Spark reads a NODE_LOCAL disk block from the
  other executor's directory); the file's description came with the holder's report;
- a block only in the holder's memory is fetched from the holder (``fetch``: in the
  processes backend, a request the driver relays to the holder and answers).

A location is a hint reported with an earlier task: the holder may have evicted, moved
or removed the block since. Every such read is verified (the file's checksum) and a block
that is gone is recomputed from lineage, as Spark does after a failed remote fetch. A
block read from a peer is not cached again here: it stays where it is (no duplicates in
the budget); the next stage places its task on the holder again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Union

from strataflow.storage.disk.disk_store import DiskEntry
from strataflow.storage.mapped.region_store import RegionEntry

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.storage.blocks.block import BlockId
    from strataflow.storage.manager import BlockManager

__all__ = ["PeerBlock", "Fetch", "locate"]

#: ``fetch(executor_id, block_id)``: the value of a block in another executor's memory,
#: or raises BlockUnavailable (the holder no longer has it, or is gone)
Fetch = Callable[[str, "BlockId"], Any]

Source = Union[DiskEntry, RegionEntry, None]


@dataclass(frozen=True)
class PeerBlock:
    """A block of another executor: its id, ``where`` it is (``memory`` or ``disk``)
    and, when it is on that executor's disk, the file's description (``source``)."""

    executor_id: str
    where: str
    source: Source = None


def locate(bm: "BlockManager", bid: "BlockId") -> tuple[str, Source] | None:
    """Where this executor holds the block (``memory`` first) and the description of its
    disk copy, if it has one; None if it does not hold it."""
    source: Source = bm.disk.entry(bid)
    if source is None and bm.regions is not None:
        source = bm.regions.entry(bid)
    if bid in bm.memory_store:
        return "memory", source
    return ("disk", source) if source is not None else None
