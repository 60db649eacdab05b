"""A cache model that drives a real policy object through the block manager's semantics.

The point of the simulator is to judge the policies we ship, so it runs the *same* policy
classes (``strataflow.storage.policies``) through the same contract (``policies/base.py``:
the calls, the ``Promotion`` answers, the capability flags, the ``reserve`` the block
manager owns, set here from the writer's own ``headroom`` rule), with bytes instead of
values:

- a memory hit: ``record_access(b, "memory")``;
- a disk hit: ``record_access(b, "disk")``, then ``promote(b, size)``; a memory put that
  may evict on ``Promotion.MAY_EVICT``, into free memory only on ``INTO_FREE``;
- a miss: the block is computed; ``admit(b, size)`` and a memory put that may evict, else a
  write to disk; with ``recache_after_spill`` the spilled block is read back and put in
  memory again, evicting (Spark's ``getOrElseUpdate``);
- a memory put: if free memory is short, ``select_victims(short, b, sizes)`` names blocks to
  drop (all or nothing); each dropped block is written to disk unless already there
  (blocks stay on disk once written: MEMORY_AND_DISK), then ``record_remove``;
- execution memory: a request evicts ``select_victims(min(short, reclaimable), None, ...)``
  down to the protected storage region, and takes what is free;
- after every operation, for a policy that ``prefetches``, ``prefetch_candidates(free -
  reserve, on_disk)`` blocks are read into free memory without evicting (what the block
  manager's writer does off the critical path);
- a plan: ``plan(blocks)`` (for a policy that ``plans``).

Counted (``Tally``): bytes of reads served from memory, from disk, and computed; bytes
written to disk on drops and by puts that went to disk; bytes re-cached (promotions) and
prefetched. A first read of a block is compulsory (every cache misses it) and is left out
of the hit ratio, so an unbounded cache scores 1.0.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from strataflow.storage.eviction_writer import headroom
from strataflow.storage.policies import Policy, Promotion
from strataflow.simulate.trace import Trace

__all__ = ["CacheModel", "Tally"]


@dataclass
class Tally:
    reads: int = 0
    read_bytes: int = 0            # bytes of all reads
    compulsory_bytes: int = 0      # bytes of first reads (computed by every cache)
    memory_hit_bytes: int = 0
    disk_hit_bytes: int = 0
    computed_bytes: int = 0
    drop_write_bytes: int = 0      # memory -> disk on eviction (blocks not yet on disk)
    spill_write_bytes: int = 0     # computed blocks put on disk (no room or not admitted)
    recache_bytes: int = 0         # disk -> memory on a read (promotion, Spark's re-caching)
    prefetch_bytes: int = 0        # disk -> memory ahead of the read
    dropped_bytes: int = 0         # all bytes evicted from memory (written or not)
    exec_shortfall_bytes: int = 0  # execution memory asked for and not granted

    def __add__(self, other: "Tally") -> "Tally":
        """Two caches' counts together (executors replayed apart, summed)."""
        return Tally(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    @property
    def byte_hit_ratio(self) -> float:
        """Memory-hit bytes over the bytes of reads that are not compulsory misses."""
        denom = self.read_bytes - self.compulsory_bytes
        return self.memory_hit_bytes / denom if denom > 0 else 1.0

    @property
    def bytes_moved(self) -> int:
        """Bytes moved between memory and disk: drops written, re-caches, prefetches."""
        return self.drop_write_bytes + self.recache_bytes + self.prefetch_bytes

    def foreground_s(self, mem_bw: float, disk_bw: float) -> float:
        """Seconds the reading tasks wait for data: memory hits and re-cache copies at
        ``mem_bw``; disk hits, drops (synchronous eviction) and spills at ``disk_bw``.
        Compute of the compulsory misses is the same for every policy and left out."""
        mem = self.memory_hit_bytes + self.recache_bytes
        disk = self.disk_hit_bytes + self.drop_write_bytes + self.spill_write_bytes
        return mem / mem_bw + disk / disk_bw

    def disk_busy_s(self, disk_bw: float) -> float:
        """Seconds the disk is busy, prefetches (off the critical path) included."""
        return (self.disk_hit_bytes + self.drop_write_bytes + self.spill_write_bytes + self.prefetch_bytes) / disk_bw

    def est_s(self, mem_bw: float, disk_bw: float) -> float:
        """Estimated seconds of data movement: the tasks' waiting time, but never less than
        the time the disk needs for all its traffic (a prefetch hides a read's latency,
        not its bandwidth)."""
        return max(self.foreground_s(mem_bw, disk_bw), self.disk_busy_s(disk_bw))

    def as_dict(self, mem_bw: float, disk_bw: float) -> dict:
        out = {"byte_hit_ratio": round(self.byte_hit_ratio, 6), "bytes_moved": self.bytes_moved,
               "est_s": round(self.est_s(mem_bw, disk_bw), 6),
               "foreground_s": round(self.foreground_s(mem_bw, disk_bw), 6),
               "disk_busy_s": round(self.disk_busy_s(disk_bw), 6)}
        out.update({f.name: getattr(self, f.name) for f in fields(self)})
        return out


class CacheModel:
    """Memory (``capacity`` bytes, ``storage_fraction`` protected) and an unbounded disk,
    run by ``policy``."""

    def __init__(self, policy: Policy, capacity: int, storage_fraction: float = 0.5, prefetch: bool = True,
                 watermarks: tuple[float, float] | None = None) -> None:
        self.policy = policy
        self.watermarks = watermarks  # (low, high): a background writer keeps use under high
        self.reserve = 0 if watermarks is None else headroom(capacity, watermarks)
        policy.reserve = self.reserve  # as the block manager does: the writer's headroom is not free
        self.total = int(capacity)
        self.storage_region = int(capacity * storage_fraction)
        self.prefetch = prefetch
        self.mem: dict[Any, int] = {}
        self.disk: dict[Any, int] = {}
        self.storage_used = 0
        self.exec_used = 0
        self.seen: set = set()
        self.grants: deque = deque()  # execution memory granted, oldest first
        self.last_put: Any = None     # the writer evicts as if for the block put last
        self.t = Tally()
        self._prefetching = prefetch and policy.prefetches

    @property
    def free(self) -> int:
        return self.total - self.storage_used - self.exec_used

    # -- replay ----------------------------------------------------------------------------------
    def run(self, trace: Trace) -> Tally:
        for op in trace.ops:
            kind = op[0]
            if kind == "read":
                self.read(op[1], op[2])
            elif kind == "plan":
                if self.policy.plans:
                    self.policy.plan(list(op[1]))
            elif kind == "exec":
                self.acquire_execution(op[1])
            elif kind == "free":
                self.release_execution()
            elif kind == "unpersist":
                self.unpersist(op[1])
            else:
                raise ValueError(f"unknown trace operation {kind!r}")
            if self._prefetching:
                self._prefetch()
            if self.watermarks is not None:
                self._keep_headroom()
        return self.t

    def _keep_headroom(self) -> None:
        """The asynchronous writer (``eviction_writer.py``): past ``high`` x total in use,
        it asks the policy for victims *for the block put last* (so a put's rules hold)
        until use is under ``low``; if all or nothing names none, for one block's worth."""
        low, high = self.watermarks
        used = self.storage_used + self.exec_used
        if used > high * self.total and self.mem:
            need = min(int(used - low * self.total), self.storage_used)
            if not self._evict(need, self.last_put):
                self._evict(min(self.mem.values()), self.last_put)

    def read(self, bid: Any, size: int) -> None:
        t, p = self.t, self.policy
        t.reads += 1
        t.read_bytes += size
        first = bid not in self.seen
        if first:
            self.seen.add(bid)
            t.compulsory_bytes += size
        if bid in self.mem:
            p.record_access(bid, "memory")
            t.memory_hit_bytes += self.mem[bid]
            return
        if bid in self.disk:
            t.disk_hit_bytes += size
            p.record_access(bid, "disk")
            decision = p.promote(bid, size)
            if decision is Promotion.INTO_FREE and size > self.free - self.reserve:
                return  # into free memory only, and the writer's headroom is not free
            if decision and self._store(bid, size, evict=decision is Promotion.MAY_EVICT):
                t.recache_bytes += size
            return
        t.computed_bytes += size
        if p.admit(bid, size) and self._store(bid, size, evict=True):
            return
        self.disk[bid] = size
        t.spill_write_bytes += size
        if p.recache_after_spill and self._store(bid, size, evict=True):
            t.recache_bytes += size  # read back and cached again, evicting

    def _store(self, bid: Any, size: int, evict: bool) -> bool:
        """``MemoryManager.acquire_storage`` + the memory store put."""
        if bid in self.mem:
            return True
        if size > self.total - self.exec_used:
            return False
        short = size - self.free
        if short > 0 and evict:
            self._evict(short, bid)
        if size <= self.free:
            self.mem[bid] = size
            self.storage_used += size
            self.policy.record_access(bid, "put")
            self.last_put = bid
            return True
        return False

    def _evict(self, space: int, for_block: Any) -> int:
        victims = self.policy.select_victims(space, for_block, MappingProxyType(self.mem)) or []
        freed = 0
        for v in victims:
            size = self.mem.pop(v, None)
            if size is None:
                continue
            self.storage_used -= size
            self.policy.record_remove(v)
            self.t.dropped_bytes += size
            if v not in self.disk:
                self.disk[v] = size
                self.t.drop_write_bytes += size
            freed += size
        return freed

    def acquire_execution(self, n: int) -> None:
        """``MemoryManager.acquire_execution`` for one task: evicts blocks only down to the
        protected storage region, then takes what is free."""
        reclaimable = self.storage_used - self.storage_region
        if self.free < n and reclaimable > 0:
            self._evict(min(n - self.free, reclaimable), None)
        grant = max(0, min(n, self.free))
        self.exec_used += grant
        self.grants.append(grant)
        self.t.exec_shortfall_bytes += n - grant

    def release_execution(self) -> None:
        """Gives back the oldest execution grant still held."""
        if self.grants:
            self.exec_used -= self.grants.popleft()

    def unpersist(self, dataset_id: int) -> None:
        for bid in [b for b in self.mem if getattr(b, "dataset_id", None) == dataset_id]:
            self.storage_used -= self.mem.pop(bid)
            self.policy.record_remove(bid)
        for bid in [b for b in self.disk if getattr(b, "dataset_id", None) == dataset_id]:
            del self.disk[bid]

    def _prefetch(self) -> None:
        free = self.free - self.reserve
        if free <= 0:
            return
        on_disk = {b: s for b, s in self.disk.items() if b not in self.mem}
        if not on_disk:
            return
        for bid in self.policy.prefetch_candidates(free, on_disk):
            size = on_disk.get(bid)
            if size is not None and bid not in self.mem and size <= self.free:
                self.mem[bid] = size
                self.storage_used += size
                self.policy.record_access(bid, "put")
                self.last_put = bid
                self.t.prefetch_bytes += size
