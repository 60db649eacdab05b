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
  processes backend, a request the driver relays to the holder and answers); so is a
  ``StorageLevel.STORE`` block in the store of the holder's node, on a Ray cluster
  (``SharedBlocks.located``: there the block master knows where they lie).

A location is a hint reported with an earlier task: the holder may have evicted, moved
or removed the block since. Every such read is verified (the file's checksum) and a block
that is gone is recomputed from lineage, as Spark does after a failed remote fetch. A
block read from a peer is not cached again here: it stays where it is (no duplicates in
the budget); the next stage places its task on the holder again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from strataflow.storage.blocks.block import MISS
from strataflow.storage.blocks.location import BlockLocation
from strataflow.storage.blocks.serde import SerializationError
from strataflow.storage.blocks.sizing import estimate_size
from strataflow.storage.memory.store import readonly
from strataflow.storage.stores import store_class_of
from strataflow.storage.tier_store import BlockUnavailable, StoreEntry

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.storage.blocks.block import BlockId
    from strataflow.storage.manager import BlockManager

__all__ = ["BlockLocation", "PeerBlock", "Fetch", "locate", "read_peer", "serve_peer"]

#: ``fetch(executor_id, block_id)``: the value of a block in another executor's memory,
#: or raises BlockUnavailable (the holder no longer has it, or is gone)
Fetch = Callable[[str, "BlockId"], Any]

#: a store's entry (``tier_store.StoreEntry``: a tier kind's or the region store's)
Source = Optional[StoreEntry]


@dataclass(frozen=True)
class PeerBlock:
    """A block of another executor: its id, ``where`` it is (in memory or on disk)
    and, when it is on that executor's disk, the file's description (``source``)."""

    executor_id: str
    where: BlockLocation
    source: Source = None


def locate(bm: "BlockManager", bid: "BlockId") -> tuple[BlockLocation, Source] | None:
    """Where this executor holds the block (``memory`` first) and the description of its
    disk copy, if it has one; None if it does not hold it."""
    source: Source = bm.disk.entry(bid)
    if source is None and bm.regions is not None:
        source = bm.regions.entry(bid)
    if bid in bm.memory_store:
        return BlockLocation.MEMORY, source
    if source is None and _in_located_store(bm, bid):
        return BlockLocation.DISK, None  # in this executor's node's store: read there, fetched through it elsewhere
    return (BlockLocation.DISK, source) if source is not None else None


def _in_located_store(bm: "BlockManager", bid: "BlockId") -> bool:
    """Whether ``bid`` is a ``STORE`` block this executor put in a store of its own node
    (``SharedBlocks.located``: on a Ray cluster; on one machine every executor maps every
    block, so none is reported)."""
    shared = bm.shared
    return shared is not None and getattr(shared, "located", False) and bid.split in shared.blocks(bid.dataset_id)


def read_peer(bm: "BlockManager", bid: "BlockId", peer: PeerBlock) -> Any:
    """The block from another executor, or MISS when it is not there any more (the task
    then computes it). A file is read by the store class whose entry it is
    (``TierStore.load_entry``); a block only in the holder's memory is fetched."""
    try:
        if peer.source is not None:
            store = store_class_of(peer.source)
            if store is None:
                raise BlockUnavailable(f"no store here reads a {type(peer.source).__name__}")
            value, nbytes = store.load_entry(peer.source, lambda payload, ser: bm.codec.decode(payload, ser, bid))
        elif bm.fetch_peer is not None:
            value = bm.fetch_peer(peer.executor_id, bid)
            nbytes = estimate_size(value)
        else:
            return MISS
    except (BlockUnavailable, SerializationError) as exc:
        bm.events.post("BlockAccess", block=str(bid), dataset_id=bid.dataset_id, split=bid.split,
                       result="peer-miss", executor_held=peer.executor_id, reason=str(exc))
        return MISS
    bm.metrics.add(peer_hits=1, peer_bytes_read=nbytes)
    bm.events.post("BlockAccess", block=str(bid), dataset_id=bid.dataset_id, split=bid.split,
                   result="peer", bytes=nbytes, executor_held=peer.executor_id, where=BlockLocation(peer.where).value,
                   file=peer.source is not None)
    return readonly(value)


def serve_peer(bm: "BlockManager", bid: "BlockId") -> Any:
    """The block for another executor's task: from memory, else from disk; MISS if
    it is not here. Not counted as a hit here, and nothing is re-cached."""
    with bm.memory.lock:
        entry = bm.memory_store.get(bid)
    if entry is not None:
        value = entry.value if entry.deserialized else bm.codec.decode(entry.data(), entry.serializer, bid)
    else:
        try:
            if bm.regions is not None and bid in bm.regions:
                value = bm.regions.get(bid)
            elif bid in bm.disk:
                payload, ser_name, _ = bm.disk.read(bid)
                value = bm.codec.decode(payload, ser_name, bid)
            elif _in_located_store(bm, bid):
                value = _from_located_store(bm, bid)
            else:
                return MISS
        except (BlockUnavailable, SerializationError):
            return MISS
        if value is MISS:
            return MISS
    bm.metrics.add(peer_blocks_served=1)
    return value


def _from_located_store(bm: "BlockManager", bid: "BlockId") -> Any:
    """A ``STORE`` block from this node's store, for another node's task; MISS if the
    store has no whole copy (gone, or failing its keyed tag or checksum: never served)."""
    info = bm.info(bid.dataset_id)
    try:
        got = bm.shared.get(bid, info.label()) if info is not None else None  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001 - a bad copy is refused, as ``read_shared`` refuses it
        return MISS
    return MISS if got is None else got[0]
