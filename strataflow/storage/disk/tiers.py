"""Storage tiers below memory: a stack of tier stores (``tier_store.StackedStore``; the
``disk`` kind is :class:`DiskStore`), fastest first (ssd above hdd, or a
tmpfs on /dev/shm above a disk), after Tachyon/Alluxio's tiered storage.

Why tiers: a cache larger than memory spills to disk, but not all disk is alike; a small
fast device should hold the blocks that are read most, the large slow one the rest. The
rules, each small enough to reason about and each tested:

- A block leaving memory is written to the top tier. A tier that is full (its
  ``capacity`` reached, or ENOSPC) makes room by moving its least recently used blocks
  down one tier (LRU within the tier; a read counts as a use); if they cannot move (the
  tiers below are full too), the block itself goes to the next tier down. The bottom
  tier's capacity is enforced: a block that fits nowhere raises :class:`DiskFull`, and
  the block manager posts ``BlockNotStored`` (the block is recomputed from lineage
  when read again; nothing is lost silently).
- A block read from a lower tier moves up one tier when the upper tier has room, never
  evicting anything to do so (the thrash the ``adaptive`` policy avoids in memory would
  otherwise reappear between disks).
- Capacity is enforced by accounting (each tier's store counts the bytes of
  its files, headers included), not by asking the device.
- Moving a block copies it verified (checksum) to the lower tier before it is removed
  from the upper, so a crash or a failed write never loses it; a reader racing a move
  simply reads it again from where it went. A block whose file went bad while being
  moved is dropped with ``BlockLost`` (and recomputed on its next read).
- Writes to one tier are bounded in parallelism (a semaphore per tier, default 2):
  more concurrent writers than a device has queues only make each of them slower.

Mapped levels (``DISK_MMAP``, ``MEMORY_AND_DISK_MMAP``) are not stored here: their zero-copy
segments stay in the region store on the application's ``local_dirs``, because blocks
laid out for mapping cannot move between files without breaking the views readers hold.

Without a ``tiers`` configuration the stack has one tier, ``disk``, on ``local_dirs`` with
``disk_capacity``: exactly the single disk store the cache had before. The ``tiers`` option
itself is read into :class:`~strataflow.storage.disk.tier_spec.TierSpec` objects by
:mod:`strataflow.storage.disk.tier_spec`, when the configuration is validated.
"""

from __future__ import annotations

import errno
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from strataflow.storage.disk.probe import probe_bandwidth
from strataflow.storage.disk.tier_spec import DEFAULT_WRITE_PARALLELISM
from strataflow.storage.tier_store import BlockUnavailable, DiskFull, StackedStore, StoreEntry

__all__ = ["Tier", "TieredStore"]


@dataclass
class Tier:
    """One level of the stack: its store, its write slots and its LRU order."""

    name: str
    store: StackedStore
    bandwidth: float | None = None  # read bytes/s: given, or measured by measure()
    write_parallelism: int = DEFAULT_WRITE_PARALLELISM
    measured: dict | None = None
    lru: "OrderedDict[Any, int]" = field(default_factory=OrderedDict)  # least recently used first

    def __post_init__(self) -> None:
        self.write_slots = threading.BoundedSemaphore(self.write_parallelism)

    @property
    def capacity(self) -> int | None:
        return self.store.capacity

    @property
    def used(self) -> int:
        return self.store.used

    def measure(self, size: int = 64 << 20, probe: Callable[..., dict] | None = None) -> dict:
        """Measures the tier's sequential bandwidth, cold (from the device) and warm (page
        cache), with the same probe as ``strataflow probe DIR``; sets ``bandwidth`` to the
        cold read figure unless one was configured. Done on demand only: it writes
        ``size`` bytes to the tier and takes a second or more."""
        probe = probe or probe_bandwidth
        cold = probe(self.store.dirs[0], size, cold=True)
        warm = probe(self.store.dirs[0], size, cold=False)
        self.measured = {"cold": cold, "warm": warm}
        if self.bandwidth is None:
            self.bandwidth = cold["read_mb_per_s"] * (1 << 20)
        return self.measured


Post = Callable[..., Any]
Count = Callable[..., None]


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


class TieredStore:
    """Disk tiers behind the interface of one store (``put``, ``get``,
    ``remove``, ``entry``, ``items``, ``used``, ``in``), so the block manager sees one disk.

    One lock guards the index (which tier holds a block, each tier's LRU order, the
    blocks being moved); file reads and writes happen outside it, so a read never waits
    for another block's write. ``post`` and ``count`` report moves (``BlockMoved``) and
    blocks found bad while moving (``BlockLost``) to the block manager's events and metrics.
    """

    def __init__(self, tiers: Sequence[Tier], post: Post | None = None, count: Count | None = None) -> None:
        if not tiers:
            raise ValueError("a tiered store needs at least one tier")
        self.tiers = list(tiers)
        self.post: Post = post or _nothing
        self.count: Count = count or _nothing
        self._lock = threading.Lock()
        self._where: dict[Any, int] = {}
        self._busy: set = set()  # blocks being moved between tiers
        #: moves committed per block: a reader that raced a move down and back up (the same
        #: tier again, a new file) tells it from a bad file by this count
        self._moves: dict[Any, int] = {}

    @classmethod
    def single(cls, store: StackedStore, name: str = "disk") -> "TieredStore":
        """One tier over an existing store: the cache without a tiers configuration."""
        return cls([Tier(name, store)])

    # -- what is where ------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tiers]

    @property
    def used(self) -> int:
        return sum(t.used for t in self.tiers)

    def __contains__(self, block_id: Any) -> bool:
        with self._lock:
            return block_id in self._where

    def tier_of(self, block_id: Any) -> str | None:
        with self._lock:
            t = self._where.get(block_id)
        return None if t is None else self.tiers[t].name

    def entry(self, block_id: Any) -> StoreEntry | None:
        with self._lock:
            t = self._where.get(block_id)
        return None if t is None else self.tiers[t].store.entry(block_id)

    def items(self) -> list[tuple[Any, StoreEntry]]:
        """Every block on any tier, each once (a block being moved: where it is indexed)."""
        with self._lock:
            where = dict(self._where)
        out = []
        for bid, t in where.items():
            e = self.tiers[t].store.entry(bid)
            if e is not None:
                out.append((bid, e))
        return out

    def items_by_tier(self) -> dict[str, list[tuple[Any, StoreEntry]]]:
        with self._lock:
            where = dict(self._where)
        out: dict[str, list] = {t.name: [] for t in self.tiers}
        for bid, t in where.items():
            e = self.tiers[t].store.entry(bid)
            if e is not None:
                out[self.tiers[t].name].append((bid, e))
        return out

    def describe(self) -> list[dict]:
        """Per tier: name, directories, capacity, bytes used, blocks, bandwidth (bytes/s)."""
        with self._lock:
            blocks = [len(t.lru) for t in self.tiers]
        return [{"name": t.name, "dirs": list(t.store.dirs), "capacity": t.capacity, "used": t.used,
                 "blocks": n, "bandwidth": t.bandwidth, "write_parallelism": t.write_parallelism}
                for t, n in zip(self.tiers, blocks)]

    # -- writes -------------------------------------------------------------------------------
    def put(self, block_id: Any, frames: list, payload_size: int, serializer: str) -> StoreEntry:
        """Writes a block to the highest tier that has or can make room (see the module's
        rules); returns its entry. Raises DiskFull when no tier can take it, OSError when
        a directory cannot be written."""
        with self._lock:
            t = self._where.get(block_id)
        if t is not None:
            entry = self.tiers[t].store.entry(block_id)
            if entry is not None:
                return entry
        entry, t = self._place(block_id, frames, payload_size, serializer, 0)
        with self._lock:
            self._where[block_id] = t
            self.tiers[t].lru[block_id] = entry.size
            self.tiers[t].lru.move_to_end(block_id)
        return entry

    def _place(self, block_id: Any, frames: list, payload_size: int, serializer: str,
               top: int) -> tuple[StoreEntry, int]:
        """Writes the block into tier ``top`` or below (not indexed yet); returns where."""
        last: OSError | None = None
        for t in range(top, len(self.tiers)):
            tier = self.tiers[t]
            need = tier.store.footprint(payload_size, serializer)
            if tier.capacity is not None and need > tier.capacity:
                last = DiskFull(errno.ENOSPC, f"block {block_id} ({need} bytes) is larger than the capacity "
                                              f"of tier {tier.name!r} ({tier.capacity} bytes)")
                continue
            for attempt in (0, 1):
                try:
                    with tier.write_slots:
                        return tier.store.put(block_id, frames, payload_size, serializer), t
                except DiskFull as exc:
                    last = DiskFull(exc.errno, f"tier {tier.name!r}: {exc.strerror or exc}")
                    if attempt == 0 and t + 1 < len(self.tiers) and self._make_room(t, need):
                        continue  # victims moved down: try this tier again
                    break  # the next tier down
        raise last if last is not None else DiskFull(errno.ENOSPC, f"no tier has room for block {block_id}")

    def _make_room(self, t: int, need: int) -> bool:
        """Moves tier ``t``'s least recently used blocks down until ``need`` bytes are free
        (all or nothing in the choice; a failed move stops early). True if any moved."""
        tier = self.tiers[t]
        with self._lock:
            free = tier.store.free
            short = need - (free if free is not None else 0)
            victims, freed = [], 0
            for bid, n in tier.lru.items():
                if freed >= short:
                    break
                if bid not in self._busy:
                    victims.append(bid)
                    freed += n
            if freed < short or not victims:
                return False
            self._busy.update(victims)
        moved = False
        try:
            for bid in victims:
                if not self._move(bid, t):
                    break
                moved = True
        finally:
            with self._lock:
                self._busy.difference_update(victims)
        return moved

    def _move(self, block_id: Any, src: int) -> bool:
        """Copies a block from tier ``src`` to a tier below (verified), then removes the
        upper copy. False if no tier below could take it (it stays where it was)."""
        store = self.tiers[src].store
        try:
            payload, ser = store.get(block_id)
        except BlockUnavailable as exc:  # bad file: drop it, its partition is recomputed when read
            with self._lock:
                if self._where.get(block_id) == src:
                    del self._where[block_id]
                    self._moves.pop(block_id, None)
                self.tiers[src].lru.pop(block_id, None)
            store.remove(block_id)
            self.count(blocks_lost=1)
            self.post("BlockLost", block=str(block_id), reason=str(exc), action="recompute from lineage",
                      tier=self.tiers[src].name)
            return True
        try:
            entry, dst = self._place(block_id, [payload], payload.nbytes, ser, src + 1)
        except OSError:
            return False
        finally:
            del payload
        self._commit_move(block_id, src, dst, entry, "down")
        return True

    def _commit_move(self, block_id: Any, src: int, dst: int, entry: StoreEntry, direction: str) -> None:
        with self._lock:
            live = self._where.get(block_id) == src
            if live:
                self._where[block_id] = dst
                self._moves[block_id] = self._moves.get(block_id, 0) + 1
                self.tiers[src].lru.pop(block_id, None)
                self.tiers[dst].lru[block_id] = entry.size
        if not live:  # removed (unpersisted) while it was being copied: drop the copy too
            self.tiers[dst].store.remove(block_id)
            return
        self.tiers[src].store.remove(block_id)
        self.count(bytes_moved_between_tiers=entry.size, **{f"blocks_moved_{direction}": 1})
        self.post("BlockMoved", block=str(block_id), bytes=entry.size, direction=direction,
                  **{"from": self.tiers[src].name, "to": self.tiers[dst].name})

    def promote(self, block_id: Any, payload: memoryview, serializer: str) -> bool:
        """Moves a block just read from a lower tier up one tier if that tier has room now,
        evicting nothing; the payload is the one the reader already has (no second read)."""
        with self._lock:
            src = self._where.get(block_id)
            if not src or block_id in self._busy:  # None, or already in the top tier
                return False
            up = self.tiers[src - 1]
            free = up.store.free
            if free is not None and free < up.store.footprint(payload.nbytes, serializer):
                return False
            self._busy.add(block_id)
        try:
            try:
                with up.write_slots:
                    entry = up.store.put(block_id, [payload], payload.nbytes, serializer)
            except OSError:  # full after all (a concurrent write took the room), or unwritable
                return False
            self._commit_move(block_id, src, src - 1, entry, "up")
            return True
        finally:
            with self._lock:
                self._busy.discard(block_id)

    # -- reads and removal --------------------------------------------------------------------------
    def read(self, block_id: Any) -> tuple[memoryview, str, str]:
        """The verified payload, its serializer and the name of the tier it came from. A
        read that races a move of the same block reads it again where it went."""
        for _ in range(4):
            with self._lock:
                t = self._where.get(block_id)
                if t is None:
                    raise BlockUnavailable(f"block {block_id} is not on disk")
                moves = self._moves.get(block_id, 0)
                self.tiers[t].lru.move_to_end(block_id)
            try:
                payload, ser = self.tiers[t].store.get(block_id)
                return payload, ser, self.tiers[t].name
            except BlockUnavailable:
                with self._lock:  # a block moved down and back up meanwhile is where it was: moved all the same
                    if self._where.get(block_id) == t and self._moves.get(block_id, 0) == moves:
                        raise  # still indexed there, never moved: the file itself is bad
        raise BlockUnavailable(f"block {block_id} kept moving between tiers while being read")

    def get(self, block_id: Any) -> tuple[memoryview, str]:
        payload, ser, _ = self.read(block_id)
        return payload, ser

    def remove(self, block_id: Any) -> StoreEntry | None:
        with self._lock:
            t = self._where.pop(block_id, None)
            self._moves.pop(block_id, None)
            if t is not None:
                self.tiers[t].lru.pop(block_id, None)
        return None if t is None else self.tiers[t].store.remove(block_id)
