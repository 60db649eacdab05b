"""The seam through which a storage level keeps its blocks outside the executor: in the
machine's shared store (``StorageLevel.STORE``; Spark 1.x's ``OFF_HEAP`` was Tachyon).

The store (``strataflow/store/``) sits on a higher floor than storage/, so the block
manager only names what it needs of it, :class:`SharedBlocks`; the executor's runtime
gives its block manager one (``BlockManager.shared``), made by the store package. A block
manager with none (one built bare, in a test) keeps a ``STORE`` dataset's blocks in its
disk tiers, as ``DISK_ONLY`` does.

What the level promises: a block, once written, is in the store, not in the executor, so
an executor killed with ``kill -9`` loses none of them; the task that reads the partition
next, on any executor of the application, maps it from the store instead of recomputing
it. A block the store cannot give back whole (gone, damaged: the store checks its keyed
tag and checksum) is a miss, counted as lost, and recomputed from lineage, like a disk
block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from strataflow.storage.blocks.block import MISS, BlockId

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.storage.blocks.block import DatasetInfo
    from strataflow.storage.manager import BlockManager

__all__ = ["SharedBlocks", "read_shared", "write_shared"]


class SharedBlocks(Protocol):
    """Blocks kept in a store that outlives the executor (the store package's
    ``level_blocks.StoreLevelBlocks``). One that has ``located = True`` (a Ray node's:
    ``store/ray_level.py``) is a store only the executors of its node read: its blocks are
    reported to the block master as this executor's (``peer_blocks.locate``), so tasks go
    to them and a task elsewhere fetches them from it."""

    def get(self, bid: BlockId, label: str) -> tuple[Any, int] | None:
        """The block's value and its size in the store; None if the store has no copy.
        Raises (any exception) if the copy it has is not authentic or whole."""

    def put(self, bid: BlockId, value: Any, label: str) -> int:
        """Writes the block; returns the bytes it takes. Raises OSError when no tier has room."""

    def remove_dataset(self, dataset_id: int) -> int:
        """Removes every block of the dataset; returns how many there were."""

    def blocks(self, dataset_id: int) -> dict[int, int]:
        """Split -> bytes of the dataset's blocks this executor put in the store: what it
        reports as its own (every executor of the machine can read every block; each is
        counted once, where it was computed; a lost executor's are served, not counted)."""


def read_shared(bm: "BlockManager", bid: BlockId, info: "DatasetInfo") -> Any:
    """The block from the shared store (a hit below memory: ``disk_hits``, and ``store_hits``), or MISS."""
    shared = bm.shared
    try:
        got = shared.get(bid, info.label())  # type: ignore[union-attr]
    except Exception as exc:  # noqa: BLE001 - a bad copy is recomputed, never served
        bm._lost(bid, exc)
        return MISS
    if got is None:
        return MISS
    value, nbytes = got
    bm.metrics.add(disk_hits=1, store_hits=1, store_bytes_read=nbytes)  # below memory, as a mapped hit
    bm.metrics.hit("store")
    bm.events.post("BlockAccess", block=str(bid), dataset_id=bid.dataset_id, split=bid.split, result="store",
                   bytes=nbytes)
    return value


def write_shared(bm: "BlockManager", bid: BlockId, value: Any, info: "DatasetInfo") -> str:
    """Puts a computed block in the shared store: ``disk`` when it is there, ``none``
    when the store could not take it (the task keeps its value; the next read recomputes)."""
    try:
        nbytes = bm.shared.put(bid, value, info.label())  # type: ignore[union-attr]
    except Exception as exc:  # noqa: BLE001 - full, unwritable: not cached, said so
        bm.writes.not_stored(bid, f"the shared store did not take it: {type(exc).__name__}: {exc}")
        return "none"
    bm.metrics.add(store_puts=1, store_bytes_written=nbytes)
    bm.events.post("BlockStored", block=str(bid), dataset_id=bid.dataset_id, where="store", bytes=nbytes)
    return "disk"
