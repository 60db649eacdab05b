"""Belady's clairvoyant optimum (``opt``) on the same memory and the same rules.

It knows every future read. On a read of a block not in memory it caches the block only
if it can make room by evicting blocks whose next use comes later (bypass otherwise: the
block is served from, or written to, disk); execution memory evicts the blocks used
furthest in the future; memory that is free is filled with the disk blocks used soonest
(the same prefetch-into-free-memory the policies may do, never evicting for it). With
blocks of one size this is the optimum of the memory byte-hit ratio (Belady 1966, with
bypass); with mixed sizes it is the usual Belady heuristic, an estimate of the bound.

Its traffic is counted as the policies' (``model.Tally``), so ``bytes_moved`` and
``est_s`` compare too.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from typing import Any

from strataflow.simulate.model import Tally
from strataflow.simulate.trace import Trace

__all__ = ["BeladyModel"]

INF = math.inf


class BeladyModel:
    def __init__(self, capacity: int, storage_fraction: float = 0.5, prefetch: bool = True) -> None:
        self.total = int(capacity)
        self.storage_region = int(capacity * storage_fraction)
        self.prefetch = prefetch
        self.mem: dict[Any, int] = {}
        self.disk: dict[Any, int] = {}
        self.nxt: dict[Any, float] = {}
        self.storage_used = 0
        self.exec_used = 0
        self.grants: deque = deque()
        self.seen: set = set()
        self._seq = itertools.count()
        self._far: list = []   # (-next use, seq, block): residents, furthest first (lazy)
        self._near: list = []  # (next use, seq, block): disk blocks, soonest first (lazy)
        self.t = Tally()

    @property
    def free(self) -> int:
        return self.total - self.storage_used - self.exec_used

    def run(self, trace: Trace) -> Tally:
        ops = trace.ops
        next_at: list[float] = [INF] * len(ops)
        later: dict = {}
        for i in range(len(ops) - 1, -1, -1):
            if ops[i][0] == "read":
                bid = ops[i][1]
                next_at[i] = later.get(bid, INF)
                later[bid] = i
        for i, op in enumerate(ops):
            kind = op[0]
            if kind == "read":
                self._read(op[1], op[2], next_at[i])
            elif kind == "exec":
                self._exec(op[1])
            elif kind == "free":
                if self.grants:
                    self.exec_used -= self.grants.popleft()
            elif kind == "unpersist":
                for bid in [b for b in self.mem if getattr(b, "dataset_id", None) == op[1]]:
                    self.storage_used -= self.mem.pop(bid)
                for bid in [b for b in self.disk if getattr(b, "dataset_id", None) == op[1]]:
                    del self.disk[bid]
            if self.prefetch:
                self._prefetch()
        return self.t

    # -- bookkeeping of the two heaps ------------------------------------------------------------
    def _set_next(self, bid: Any, when: float) -> None:
        self.nxt[bid] = when
        if bid in self.mem:
            heapq.heappush(self._far, (-when, next(self._seq), bid))
        elif bid in self.disk and when < INF:
            heapq.heappush(self._near, (when, next(self._seq), bid))

    def _put(self, bid: Any, size: int) -> None:
        self.mem[bid] = size
        self.storage_used += size
        heapq.heappush(self._far, (-self.nxt.get(bid, INF), next(self._seq), bid))

    def _drop(self, bid: Any) -> None:
        size = self.mem.pop(bid)
        self.storage_used -= size
        self.t.dropped_bytes += size
        if bid not in self.disk:
            self.disk[bid] = size
            self.t.drop_write_bytes += size
        when = self.nxt.get(bid, INF)
        if when < INF:
            heapq.heappush(self._near, (when, next(self._seq), bid))

    def _victims(self, space: int, later_than: float) -> list | None:
        """Residents used after ``later_than``, furthest first, freeing ``space``; None if
        they cannot (all or nothing)."""
        chosen, freed, keep, seen = [], 0, [], set()
        while self._far and freed < space:
            neg, seq, bid = heapq.heappop(self._far)
            if bid in seen or bid not in self.mem or self.nxt.get(bid, INF) != -neg:
                continue  # stale or duplicate entry
            seen.add(bid)
            keep.append((neg, seq, bid))
            if -neg <= later_than:
                break
            chosen.append(bid)
            freed += self.mem[bid]
        for entry in keep:
            heapq.heappush(self._far, entry)
        return chosen if freed >= space else None

    # -- operations -----------------------------------------------------------------------------------
    def _read(self, bid: Any, size: int, when: float) -> None:
        t = self.t
        t.reads += 1
        t.read_bytes += size
        if bid not in self.seen:
            self.seen.add(bid)
            t.compulsory_bytes += size
        if bid in self.mem:
            t.memory_hit_bytes += self.mem[bid]
            self._set_next(bid, when)
            return
        on_disk = bid in self.disk
        if on_disk:
            t.disk_hit_bytes += size
        else:
            t.computed_bytes += size
        self.nxt[bid] = when
        cached = False
        if when < INF and size <= self.total - self.exec_used:
            short = size - self.free
            victims = [] if short <= 0 else self._victims(short, when)
            if victims is not None:
                for v in victims:
                    self._drop(v)
                self._put(bid, size)
                cached = True
                if on_disk:
                    t.recache_bytes += size
        if not cached:
            if not on_disk:
                self.disk[bid] = size
                t.spill_write_bytes += size
            if when < INF:
                heapq.heappush(self._near, (when, next(self._seq), bid))

    def _exec(self, n: int) -> None:
        reclaimable = self.storage_used - self.storage_region
        if self.free < n and reclaimable > 0:
            victims = self._victims(min(n - self.free, reclaimable), -INF) or []
            for v in victims:
                self._drop(v)
        grant = max(0, min(n, self.free))
        self.exec_used += grant
        self.grants.append(grant)
        self.t.exec_shortfall_bytes += n - grant

    def _prefetch(self) -> None:
        skipped = []
        while self._near and self.free > 0:
            when, seq, bid = heapq.heappop(self._near)
            if bid in self.mem or bid not in self.disk or self.nxt.get(bid, INF) != when:
                continue
            size = self.disk[bid]
            if size > self.free:
                skipped.append((when, seq, bid))
                continue
            self._put(bid, size)
            self.t.prefetch_bytes += size
        for entry in skipped:
            heapq.heappush(self._near, entry)
