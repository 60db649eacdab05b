"""``lineage``: future-aware eviction, Belady's rule with predicted next uses.

Belady's optimum evicts the block whose next use is furthest away and, when it may bypass
the cache, does not admit a block that will be used later than everything it would push
out. LRU and Spark's re-caching are bad approximations of it exactly where Spark spends its
time: a loop over cached data larger than memory, where the least recently used block is
the one needed *soonest*. Published Spark policies (LRC, MRD) get close to Belady by
reading the future off the DAG. This policy does the same with two sources of knowledge:

1. The scheduler's plan: when a stage is submitted, ``plan(accesses)`` lists the persisted
   blocks its tasks will read, in task order. A block at position ``i`` of the plan is used
   about ``i - consumed`` accesses from now; a block absent from the rest of the plan is
   not used before the stage ends.
2. The loop itself: iterative programs read the same blocks in the same order every
   iteration, so the distance between a block's last two accesses predicts the next one
   (``next = last + distance``). A block seen only once borrows the distance last seen for
   its dataset. A prediction overdue by three distances is dropped: the loop ended.

Time is a logical clock that ticks once per access (memory hit, disk hit, or miss: the
``admit`` of a computed block). With those predictions:

- Victims (``select_victims``) are taken furthest-next-use first; blocks without any
  prediction count as furthest, least recently used first among them.
- A new block is admitted only if it is used sooner than every block it would evict;
  otherwise ``select_victims`` returns None and the block goes to disk (bypass). A new
  block without a prediction may evict only blocks without one, by ``adaptive``'s rule.
- A block read from disk is promoted into free memory (as ``adaptive``), or by evicting
  blocks only when its predicted next use comes before theirs by a margin, and only blocks
  that have a prediction themselves. In a loop every resident block is due before the
  block just read (which is due a whole iteration later), so nothing bounces: the
  re-caching thrash of LRU cannot occur.
- ``prefetch_candidates`` offers the disk blocks with the nearest predicted use that fit in
  free memory, so memory freed later (execution memory given back, an unpersisted
  dataset) is refilled with the blocks about to be read, not with whatever is read next.
  A block due after everything in memory is not promoted even into free memory (it would
  be the next victim; prefetch brings it when its turn comes), a prefetched block evicted
  before anyone read it is not prefetched again until read, and the headroom an
  asynchronous eviction writer keeps free (``reserve``, the block manager's) is not used: with it, promoting
  into "free" memory is what makes ``adaptive`` bounce every block under that writer.
  When execution memory evicts periodically (a shuffle every few tasks), only blocks due
  before its next eviction are prefetched: the rest would be loaded to be evicted again.

Without any knowledge (a first pass, unknown blocks) every decision is ``adaptive``'s:
LRU victims of other datasets, all or nothing, promotion only into free memory, no
prefetch. The simulator (``strataflow simulate``) measures it against Belady's ``opt``.

Cost: evictions and disk hits ask about every block in memory. From 64 blocks they ask
the ``NextUseTable`` (the same predictions as columns, one numpy pass); below that,
``_next`` block by block. ``benchmarks/policy_cost.py`` (a loop at 4x): per read, 29 us
at 32 blocks, 58 us at 2,048 and 0.16 ms at 16,384, where the loop over Python objects
took 19 us, 0.51 ms and 2.9 ms. It stays linear in the blocks in memory, with numpy's
constant.

Thread safety: the calls the contract (``base.py``) makes under the memory manager's lock
and those it makes without it all take one re-entrant lock of the policy's own; it never
calls back into the block manager, so there is no lock-order cycle. Whether a promotion
may evict is the answer itself (``Promotion.MAY_EVICT``), read by the caller in the same
call: no state is shared between ``promote`` and the put that follows but
``_promoting``, which ``select_victims`` consults to apply the promotion's rule.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from typing import Any, Mapping, Sequence

import numpy as np

from strataflow.storage.policies.adaptive import AdaptivePolicy
from strataflow.storage.policies.base import Promotion
from strataflow.storage.policies.next_use import NextUseTable

__all__ = ["LineagePolicy"]

INF = math.inf
_STALE_PLAN = 16  # a planned access this far behind the consumed ones was skipped
# Distances a prediction may be overdue before it is dropped. One was too few: when a
# dataset joins a loop (K-means' norms, cached in the first iteration) the loop's period
# doubles, and every points block looked overdue by the end of that iteration, "unknown",
# so a norms put evicted one (41 MB dropped, then prefetched back, at 4x).
_OVERDUE = 3
_VECTOR_FROM = 64  # blocks from which a question about many is asked of the table, vectorized


class LineagePolicy(AdaptivePolicy):
    name = "lineage"
    plans = True
    prefetches = True
    recache_after_spill = False

    def __init__(self) -> None:
        super().__init__()
        self._mu = threading.RLock()
        self._clock = 0
        # per block: last access, distance between its last two, first planned position,
        # size, LRU stamp; per dataset: the last distance seen for its blocks
        self._t = NextUseTable()
        self._plan_pos: dict[Any, deque] = {}
        self._plan_len = 0
        self._consumed = 0
        self._promoting: set = set()         # blocks between promote() and their memory put
        self._offered: set = set()           # named by prefetch_candidates, not accessed since
        self._unused: set = set()            # prefetched into memory, not accessed since
        self._wasted: set = set()            # prefetched, then evicted unused: not again until read
        self._pending: set = set()           # planned, never accessed nor sized: still to be computed
        self._pending_n: dict[int, int] = {}  # dataset row -> blocks of it in _pending
        self._exec_last: int | None = None   # clock of the last eviction for execution memory
        self._exec_gap: int | None = None    # clock distance between the last two

    # -- knowledge ------------------------------------------------------------------------------------
    def plan(self, accesses: Sequence[Any]) -> None:
        """The stage being submitted reads ``accesses`` in this order; it replaces the last
        plan (whose unread rest is stale once a new stage starts)."""
        pos: dict[Any, deque] = {}
        for i, bid in enumerate(accesses):
            pos.setdefault(bid, deque()).append(i)
        with self._mu:
            self._plan_pos = pos
            self._plan_len = len(accesses)
            self._consumed = 0
            self._t.set_plan(pos)
            t = self._t
            self._pending = {b for b in pos if b not in t.row
                             or (t.last[t.row[b]] < 0 and t.size[t.row[b]] < 0)}
            self._pending_n = {}
            for b in self._pending:
                j = t.dataset_row(getattr(b, "dataset_id", None))
                self._pending_n[j] = self._pending_n.get(j, 0) + 1

    def _row(self, bid: Any) -> int:
        i = self._t.row.get(bid)
        if i is None:
            q = self._plan_pos.get(bid)
            i = self._t.of(bid, q[0] if q else -1)
        return i

    def _not_pending(self, bid: Any) -> None:
        if bid in self._pending:
            self._pending.discard(bid)
            self._pending_n[self._t.ds[self._row(bid)]] -= 1

    def _set_size(self, bid: Any, size: int) -> None:
        self._t.size[self._row(bid)] = int(size)
        self._not_pending(bid)

    def _touch(self, bid: Any) -> None:
        """One access of ``bid`` now: tick the clock, learn its distance, consume the plan."""
        self._clock += 1
        now = self._clock
        i = self._row(bid)
        self._t.touch(i, now)
        q = self._plan_pos.get(bid)
        if q:
            q.popleft()
            self._consumed += 1
            if not q:
                del self._plan_pos[bid]
            self._t.pos0[i] = q[0] if q else -1
        self._not_pending(bid)
        self._promoting.discard(bid)
        self._offered.discard(bid)
        self._unused.discard(bid)
        self._wasted.discard(bid)

    def _own_distance(self, bid: Any) -> int | None:
        """The distance between ``bid``'s last two accesses, if it has had two."""
        i = self._t.row.get(bid)
        d = -1 if i is None else int(self._t.dist[i])
        return None if d < 0 else d

    def _distance(self, bid: Any) -> int | None:
        """Its own distance, else the last one seen for its dataset's blocks."""
        d = self._own_distance(bid)
        if d is None:
            j = self._t.dataset_row(getattr(bid, "dataset_id", None))  # may grow ds_dist: index after
            d = int(self._t.ds_dist[j])
        return None if d < 0 else d

    def rereads(self, bid: Any) -> bool:
        """A reuse distance is known for the block or its dataset: it is read in a loop."""
        with self._mu:
            return self._distance(bid) is not None

    def next_use(self, bid: Any) -> float:
        """The predicted clock of ``bid``'s next access; ``inf`` when nothing is known."""
        with self._mu:
            return self._next(bid, self._clock)

    def _next(self, bid: Any, now: int) -> float:
        q = self._plan_pos.get(bid)
        if q and q[0] < self._consumed - _STALE_PLAN:
            while q and q[0] < self._consumed - _STALE_PLAN:
                q.popleft()
            i = self._t.row.get(bid)
            if i is not None:
                self._t.pos0[i] = q[0] if q else -1
        if q:
            return now + max(0, q[0] - self._consumed)
        i = self._t.row.get(bid)
        last = -1 if i is None else int(self._t.last[i])
        d = self._distance(bid)
        if last < 0 or d is None:
            return INF
        est = last + d
        if now - est > _OVERDUE * d:
            return INF  # overdue by several distances: the loop that used it has ended
        return max(est, now, now + self._plan_len - self._consumed)

    def _margin(self, bid: Any) -> int:
        """How much sooner a block must be needed to displace another: tasks running in
        parallel reorder accesses by a few positions, which must not look like a gain."""
        return 2 + (self._distance(bid) or 0) // 16

    # -- the interface ------------------------------------------------------------------------------------
    def record_access(self, block_id: Any, where: str) -> None:
        with self._mu:
            if where in ("memory", "disk"):
                self._touch(block_id)
            elif where == "put":
                self._promoting.discard(block_id)
                if block_id in self._offered:
                    self._offered.discard(block_id)
                    self._unused.add(block_id)
            super().record_access(block_id, where)
            if where in ("memory", "put"):
                self._t.to_memory(self._row(block_id))

    def forget_dataset(self, dataset_id: Any) -> None:
        """Drops the unpersisted dataset's rows (``NextUseTable.drop_dataset``) and its
        blocks from the plan and the prefetch sets; the per-dataset pending counts are
        keyed by dataset row, which the drop renumbers, so they are counted again."""
        with self._mu:
            super().forget_dataset(dataset_id)
            mine = lambda b: getattr(b, "dataset_id", None) == dataset_id  # noqa: E731
            for s in (self._promoting, self._offered, self._unused, self._wasted, self._pending):
                s.difference_update([b for b in s if mine(b)])
            for b in [b for b in self._plan_pos if mine(b)]:
                del self._plan_pos[b]
            self._t.drop_dataset(dataset_id)
            self._pending_n = {}
            for b in self._pending:
                j = self._t.dataset_row(getattr(b, "dataset_id", None))
                self._pending_n[j] = self._pending_n.get(j, 0) + 1

    def sizes(self) -> dict[str, int]:
        with self._mu:
            out = {**super().sizes(), **self._t.sizes()}
            out["policy_sets"] = sum(len(s) for s in (self._promoting, self._offered, self._unused,
                                                        self._wasted, self._pending))
            out["policy_plan"] = len(self._plan_pos)
            return out

    def record_remove(self, block_id: Any) -> None:
        with self._mu:
            self._promoting.discard(block_id)
            if block_id in self._unused:
                self._unused.discard(block_id)
                self._wasted.add(block_id)
            super().record_remove(block_id)
            i = self._t.row.get(block_id)
            if i is not None:
                self._t.from_memory(i)

    def admit(self, block_id: Any, size: int) -> bool:
        """A miss: the block was just computed. Counted as its access; whether it enters
        memory is decided by ``select_victims`` when it does not fit in free memory."""
        with self._mu:
            self._touch(block_id)
            self._set_size(block_id, size)
        return True

    def promote(self, block_id: Any, size: int) -> Promotion:
        """Into free memory (``adaptive``), or by evicting when blocks with a later
        predicted use can make room (checked again in ``select_victims``). Not at all when
        the block is known to be used after every block in memory: it would be the first
        victim of the next eviction (a background writer's, or execution memory's), and
        when its turn comes ``prefetch_candidates`` loads it into whatever is free. Nor,
        when a background writer keeps headroom (``reserve``), a block nothing is known
        about: the free memory it would take is the headroom, and it would bounce. Nor into
        free memory while the stage still has blocks to compute and put: they will need it
        (K-means at 8x: a points block promoted beside the first norms was dropped again
        by the next norms put)."""
        with self._mu:
            self._set_size(block_id, size)
            now = self._clock
            t = self._next(block_id, now)
            grant, evict = True, False
            if t == INF:
                grant = self.reserve <= 0
            else:
                rows = self._t.memory_rows()
                if len(rows):
                    est = self._next_rows(rows, now)
                    sizes = self._t.size[rows]  # -1: not known, counted as 0 bytes
                    room = int(sizes[self._displaceable(block_id, t, rows, est) & (sizes > 0)].sum())
                    grant = bool(est.max() > t)
                    evict = grant and room >= size
            if grant and not evict and self._pending_puts() > 0:
                grant = False  # the free memory is the stage's own puts' (see _pending_puts)
            if evict:
                self._promoting.add(block_id)
            else:
                self._promoting.discard(block_id)
        if not grant:
            return Promotion.NO
        return Promotion.MAY_EVICT if evict else Promotion.INTO_FREE

    def _next_rows(self, rows: np.ndarray, now: int) -> np.ndarray:
        """``_next`` of many blocks at once: the table's vectorized form of it, or for a few
        blocks ``_next`` itself (numpy's per-call cost is more than the loop's below ~64)."""
        if len(rows) < _VECTOR_FROM:
            keys = self._t.keys
            return np.array([self._next(keys[i], now) for i in rows.tolist()], dtype=np.float64)
        for i in self._t.stale(rows, self._consumed, _STALE_PLAN):
            self._next(self._t.keys[i], now)  # drops the stale planned positions
        return self._t.next_uses(rows, now, self._consumed, self._plan_len, _OVERDUE)

    def _displaceable(self, promoted: Any, t: float, rows: np.ndarray, est: np.ndarray) -> np.ndarray:
        """May a block read from disk take these victims' places? Only where the victim is
        due later (by the margin) *and* is reused less often. Sooner alone is not enough:
        a block read twice in a row (K-means reads a partition, then derives a persisted
        dataset from it) would evict one due next iteration to win one hit now and lose
        one then, moving bytes for nothing; a block reused more often keeps winning after
        its next use (a hot set against a scan)."""
        d_new = self._own_distance(promoted)
        if d_new is None:
            return np.zeros(len(rows), dtype=bool)
        d_victim = self._t.distance(rows)
        bar = t + self._margin(promoted)
        return (bar < est) & (est < INF) & (d_victim >= 0) & (d_new < d_victim)

    def select_victims(self, space: int, for_block: Any, entries: Mapping[Any, int]) -> list | None:
        """Over the blocks in memory that are in ``entries`` (the others are skipped: the
        writer's candidates leave out blocks being written)."""
        with self._mu:
            now = self._clock
            t_ = self._t
            rows = t_.memory_rows()
            i = t_.row.get(for_block)
            if i is not None:
                rows = rows[rows != i]
            est = self._next_rows(rows, now)
            if for_block is None:  # execution memory (or headroom) wants bytes: any block may go
                if self._exec_last is not None and now > self._exec_last:
                    self._exec_gap = now - self._exec_last
                self._exec_last = now
                if not (est < INF).any():
                    return super().select_victims(space, for_block, entries)
                return self._take(space, rows, est, entries)
            t = self._next(for_block, now)
            if for_block in self._promoting:
                if t == INF:
                    return None
                keep = self._displaceable(for_block, t, rows, est)
                return self._take(space, rows[keep], est[keep], entries)
            if t == INF:  # a new block nothing is known about: adaptive, over blocks alike
                keep = est == INF
                dataset_id = getattr(for_block, "dataset_id", None)
                if dataset_id is not None:  # Spark's rule: not a block of the dataset being put
                    keep &= t_.ds[rows] != t_.dataset_row(dataset_id)
                return self._take(space, rows[keep], est[keep], entries)  # all inf: LRU order
            keep = est > t + self._margin(for_block)
            return self._take(space, rows[keep], est[keep], entries)

    def _take(self, space: int, rows: np.ndarray, est: np.ndarray, entries: Mapping[Any, int]) -> list | None:
        """Furthest predicted use first (no prediction = furthest, least recently used
        first); all or nothing, as Spark's eviction."""
        if space <= 0:
            return []
        keys = self._t.keys
        chosen, freed = [], 0
        for k in np.lexsort((self._t.stamp[rows], -est)):
            if freed >= space:
                break
            bid = keys[rows[k]]
            size = entries.get(bid)
            if size is None:
                continue
            self._t.size[rows[k]] = size
            chosen.append(bid)
            freed += size
        return chosen if freed >= space and chosen else None

    def _next_exec(self, now: int) -> float:
        """When execution memory will evict again, if it has been doing so periodically:
        a block loaded now and due only after that would be loaded for nothing (a shuffle
        takes the memory back, evicting what is due last)."""
        last, gap = self._exec_last, self._exec_gap
        if last is None or gap is None or now - last > 4 * gap:
            return INF
        return last + gap * (1 + (now - last) // gap)

    def _pending_puts(self) -> float:
        """Bytes the rest of the current plan will put into memory: planned blocks neither
        accessed yet nor stored anywhere are still to be computed (K-means' norms, in its first iteration),
        each the mean size of its dataset's known blocks; ``inf`` when a dataset's size is
        unknown. Prefetching into memory those puts will need only makes them evict the
        prefetched block again: measured, one extra block dropped per run (2.8x the bytes
        moved of ``no-recache`` on K-means at 4x and 8x)."""
        if not self._pending:
            return 0
        means = self._t.mean_sizes()
        total = 0.0
        for j, n in self._pending_n.items():
            if n:
                if j not in means:
                    return INF
                total += n * means[j]
        return total

    def prefetch_candidates(self, free: int, on_disk: Mapping[Any, int]) -> list:
        """The disk blocks with the nearest predicted use that fit in ``free`` bytes,
        nearest first. Blocks with no prediction are never prefetched, nor is a block that
        was prefetched and then evicted before anyone read it (until it is read): if
        something keeps evicting what we load (a background writer keeping headroom free,
        a shuffle taking the memory back), loading it again would only move bytes. ``free``
        is already less the block manager's ``reserve``."""
        if free <= 0 or not on_disk:
            return []
        with self._mu:
            now = self._clock
            bids = list(on_disk)
            sizes = np.fromiter(on_disk.values(), dtype=np.int64, count=len(bids))
            rows = np.fromiter((self._row(b) for b in bids), dtype=np.int64, count=len(bids))
            self._t.size[rows] = sizes
            if self._pending:
                for bid in bids:
                    self._not_pending(bid)
            free -= self._pending_puts()
            if free <= 0:
                return []
            est = self._next_rows(rows, now)
            ok = (self._t.stamp[rows] < 0) & (est < self._next_exec(now))
            if self._wasted:
                ok &= np.fromiter((b not in self._wasted for b in bids), dtype=bool, count=len(bids))
            cand = np.flatnonzero(ok)
            cand = cand[np.argsort(est[cand], kind="stable")]
            fit = sizes[cand]
            smallest_after = np.minimum.accumulate(fit[::-1])[::-1]  # to stop once nothing fits
            chosen, used = [], 0
            for k, size in enumerate(fit.tolist()):
                if free - used < smallest_after[k]:
                    break
                if used + size <= free:
                    chosen.append(bids[cand[k]])
                    used += size
            self._offered.update(chosen)
        return chosen
