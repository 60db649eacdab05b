"""Writing a block below memory: to the top disk tier, or once in the mapped layout (the
region store), and what happens when that cannot be done.

Every failure path states its guarantee: a write that fails (disk full, unwritable
directory, a value the serializer refuses) is reported (``BlockNotStored``, a counted
metric and a warning on the ``strataflow.storage`` logger, once per cause per stage) and
the caller keeps its value, uncached; with ``strict`` (the
background eviction writer's writes) it raises instead, and the block stays in memory.
A block no level can hold at all raises :class:`BlockStoreError` naming the dataset and
the serializer."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from strataflow.common.logs import StageWarnings
from strataflow.metrics import EventBus
from strataflow.storage.blocks.block import BlockId, BlockStoreError, DatasetInfo
from strataflow.storage.blocks.codec import BlockCodec
from strataflow.storage.cache_metrics import CacheMetrics
from strataflow.storage.cost_clock import CostClock, MeasuredClock
from strataflow.storage.memory.store import MemoryEntry
from strataflow.storage.mapped.region_store import RegionStore
from strataflow.storage.blocks.serde import SerializationError
from strataflow.storage.disk.tiers import TieredStore

__all__ = ["DiskWriter"]

_log = logging.getLogger("strataflow.storage")


class DiskWriter:
    def __init__(self, disk: TieredStore, regions: "RegionStore | None", codec: BlockCodec, metrics: CacheMetrics,
                 events: EventBus, on_write: Callable[[], None]) -> None:
        self.disk, self.regions, self.codec = disk, regions, codec
        self.metrics, self.events = metrics, events
        self.on_write = on_write  # a block landed on disk (the prefetch scan may look again)
        self.costs: Any = None  # the block manager's DiskCosts: every timed write is counted
        #: ``(dataset_id, split, seconds)`` for each spill of an AUTO dataset's block (its ledger)
        self.on_auto_spill: Callable[[int, int, float], None] | None = None
        self.clock: CostClock = MeasuredClock()  # the block manager's (declared costs in tests)
        #: blocks not cached are logged once per cause per stage (the manager starts stages)
        self.warnings = StageWarnings(_log)
        #: dataset -> bytes in memory per byte on disk of its deserialized blocks' spills (a
        #: moving average): what a block read back will take in memory (see ``in_memory``)
        self._inflation: dict[int, float] = {}
        #: ``(block, bytes in memory, bytes on disk)`` of each deserialized block spilled to the
        #: tiers, told before the write's cost is observed, so that the choices the observation
        #: revises price the spill on its bytes on disk (``cost_admission.py``)
        self.on_spill_sizes: Callable[[BlockId, int, int], None] | None = None

    def in_memory(self, bid: BlockId, disk_bytes: int) -> int:
        """The bytes a block that takes ``disk_bytes`` on disk will take in memory once
        read back and deserialized, as its dataset's spills measured (else ``disk_bytes``).
        Why: a pickled record takes several times fewer bytes than its objects; a prefetch
        or promotion that checks for room by the bytes on disk reads and decodes a block
        (the GIL held, beside the tasks) only to find it does not fit."""
        return int(disk_bytes * self._inflation.get(bid.dataset_id, 1.0))

    def _measured(self, bid: BlockId, memory_bytes: int | None, disk_bytes: int) -> None:
        if memory_bytes and disk_bytes > 0:
            r, old = memory_bytes / disk_bytes, self._inflation.get(bid.dataset_id)
            self._inflation[bid.dataset_id] = r if old is None else 0.7 * old + 0.3 * r
            if self.on_spill_sizes is not None:
                self.on_spill_sizes(bid, memory_bytes, disk_bytes)

    def not_stored(self, bid: BlockId, reason: str, warn: bool = True, **fields: Any) -> None:
        self.metrics.add(blocks_not_stored=1)
        self.events.post("BlockNotStored", block=str(bid), dataset_id=bid.dataset_id, reason=reason, **fields)
        if warn:  # the cause: the reason without its block's particulars
            self.warnings.warn("block not cached: " + reason.split(":")[0], f"block {bid} not cached: {reason}")

    def write_disk(self, bid: BlockId, frames: list, size: int, ser_name: str, strict: bool = False,
                   memory_bytes: int | None = None) -> bool:
        """The block's frames to the top tier (full tiers push their LRU blocks down).
        ``memory_bytes``: the block's size deserialized in memory, when known."""
        t0 = time.perf_counter()
        try:
            entry = self.disk.put(bid, frames, size, ser_name)
        except OSError as exc:
            if strict:
                raise
            self.not_stored(bid, f"cannot write block to disk: {exc}")
            return False
        self.metrics.add(disk_bytes_written=entry.size, disk_write_s=time.perf_counter() - t0)
        self._measured(bid, memory_bytes, entry.size)
        self.on_write()
        return True

    def write_mapped(self, bid: BlockId, value: Any, info: DatasetInfo) -> bool:
        """The block, once, in the zero-copy mapped layout."""
        if self.regions is None:
            raise BlockStoreError(f"dataset {info.label()}: level {info.level.name} needs a region store")
        t0 = time.perf_counter()
        try:
            entry = self.regions.put(bid, value)
        except SerializationError as exc:
            if not info.level.use_memory:
                raise BlockStoreError(self.codec.failure(bid, info, exc)) from exc
            self.not_stored(bid, self.codec.failure(bid, info, exc), warn=False)
            return False
        except OSError as exc:  # DiskFull or an unwritable directory
            self.not_stored(bid, f"cannot write block to its region: {exc}")
            return False
        seconds = time.perf_counter() - t0
        self.metrics.add(disk_bytes_written=entry.length, serialize_s=seconds)
        cost = self.clock.io("mapped", "write", entry.length, seconds)
        if self.costs is not None:
            self.costs.observe("mapped", "write", entry.length, cost)
        self._auto_spilled(bid, info, cost)
        return True

    def _auto_spilled(self, bid: BlockId, info: DatasetInfo, seconds: float) -> None:
        if info.auto is not None and self.on_auto_spill is not None:
            self.on_auto_spill(bid.dataset_id, bid.split, seconds)

    def not_copied(self, bid: BlockId) -> str:
        """``none``: a block whose value is mapped from the store's input cache, which serves
        it again, is not written here (``storage/backed.py``)."""
        self.metrics.add(blocks_backed_by_store=1)
        self.not_stored(bid, "its value is mapped from the store's input cache, which serves it again (no second "
                             "copy on disk)", warn=False)
        return "none"

    def write_entry(self, bid: BlockId, entry: MemoryEntry, info: DatasetInfo, strict: bool = False) -> str:
        """A memory block's disk copy at its level, unless it has one (Spark's
        dropFromMemory): ``disk`` (written, or there already) or ``discarded`` (its level
        has no disk, or the write failed and was reported). A serialized entry is written
        as it is, without serializing again. A block mapped from the store's input cache
        (``entry.backed``) is discarded: the store serves it again."""
        if entry.backed:
            self.metrics.add(blocks_backed_by_store=1)
            return "discarded"
        if info.level.mmap:
            ok = (self.regions is not None and bid in self.regions) or self.write_mapped(bid, entry.value, info)
            return "disk" if ok else "discarded"
        if not info.level.use_disk:
            return "discarded"
        if bid in self.disk:
            return "disk"
        t0 = time.perf_counter()
        try:
            if entry.deserialized:
                frames, size, ser = self.codec.encode(entry.value, info, bid)
                ser_name = ser.name
            else:
                frames, size, ser_name = [entry.data()], entry.size, entry.serializer
        except SerializationError as exc:
            if strict:
                raise
            self.events.post("BlockNotStored", block=str(bid), dataset_id=bid.dataset_id,
                             reason=self.codec.failure(bid, info, exc))
            return "discarded"
        if not self.write_disk(bid, frames, size, ser_name, strict=strict,
                               memory_bytes=entry.size if entry.deserialized else None):
            return "discarded"
        if entry.deserialized:
            self._timed_spill(bid, info, size, time.perf_counter() - t0)
        return "disk"

    def write_value(self, bid: BlockId, value: Any, info: DatasetInfo, encoded: tuple | None = None,
                    memory_bytes: int | None = None) -> str:
        """A computed block that memory could not take, to the top tier: ``disk`` or
        ``none`` (not stored, reported; the task keeps its value). ``encoded``: its
        ``(frames, size, serializer name)`` when serialized already; else it is serialized
        here, and the serializing and the write are timed as a spill (AUTO's costs and
        ledger see every write to the tiers, not only evictions'). A value no serializer
        takes raises :class:`BlockStoreError` at a serialized level (nothing can hold it)."""
        t0 = time.perf_counter()
        if encoded is None:
            try:
                frames, size, ser = self.codec.encode(value, info, bid)
            except SerializationError as exc:
                if not info.level.deserialized:
                    raise BlockStoreError(self.codec.failure(bid, info, exc)) from exc
                self.not_stored(bid, self.codec.failure(bid, info, exc))
                return "none"
            encoded = (frames, size, ser.name)
        if not self.write_disk(bid, *encoded, memory_bytes=memory_bytes):
            return "none"
        if memory_bytes:
            self._timed_spill(bid, info, encoded[1], time.perf_counter() - t0)
        return "disk"

    def _timed_spill(self, bid: BlockId, info: DatasetInfo, size: int, seconds: float) -> None:
        """A deserialized block serialized and written to the tiers in ``seconds``: what a
        spill costs (serializing included), for AUTO's disk costs and the dataset's ledger."""
        if self.costs is not None:
            cost = self.clock.io("serialized", "write", size, seconds)
            self.costs.observe("serialized", "write", size, cost)
            self._auto_spilled(bid, info, cost)
