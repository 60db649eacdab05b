"""The dynamic memory split: one executor's budget shared between the *heap* (execution
and cached values: the memory manager's total) and the *pages of mapped blocks* (the
bound on their page cache), moved while running toward the use that saves more time per
byte.

Why. With a fixed ``mmap_memory`` the user must guess how much memory the mapped levels'
pages deserve, and the right answer changes with the phase of the job: a loop over a
mapped numeric dataset wants its pages resident (every released page is read from the
device again), a loop over Python records cached in memory wants heap (every block that
does not fit is read back and deserialized, or recomputed). TeraCache resizes its DRAM
between the execution heap (DR1) and the page cache of its mapped heap (DR2) at run time
for the same reason, from minor-GC and page-fault rates; this module does it from the
seconds each side's misses cost, which the block manager measures.

Evidence, gathered per *window* (between two evaluations), for each side:

- **misses** it would have avoided with more bytes, with the seconds they cost. Heap: a
  block of a memory level read from the disk tiers (read and deserialize), a block
  recomputed after it left memory (compute), and an aggregation's spill (its bytes at the
  measured serialized round trip). Mapped: a mapped block read after this bound released
  its pages (the read: faults, or readahead from the device);
- **hits**: bytes it served.

At an evaluation the side with misses is offered ``step`` bytes (1/16 of the budget):

- *saving* of the taker = seconds its misses cost / bytes of the distinct blocks missed
  (what a byte of those blocks, resident, would have saved in the window);
- *cost* to the giver = zero if it had that many bytes idle (its limit minus the most it
  used in the window), else its hit bytes per resident byte times its cost per missed
  byte (measured, or the disk costs' priors): what its marginal bytes were saving.

The step moves when the giver's bytes were idle (they saved nothing: any saving wins), or
when the saving beats the cost by ``MARGIN`` and is worth at least ``MIN_GAIN_S`` per
window; always within the user's bounds on the mapped share. A move shrinks
the giver first (the heap evicts blocks, never execution memory; the mapped bound
releases pages), then grows the taker by what was given: heap total + mapped limit never
exceeds the budget, at any instant. Every move is a ``MemorySplitMoved`` event and counts
in ``memory_split_moves`` and ``memory_split_bytes_to_heap`` / ``_to_mapped``.

Garbage collection is not in the model: Python's collector runs on allocation counts, not
on how much memory the heap may use, so more heap does not mean fewer collections (unlike
TeraCache's DR1, a JVM young generation); and the collection cost of cached records is
removed by freezing them (``gc_free_cache``), not by moving memory.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["MemorySplit", "SideWindow", "MARGIN", "MIN_GAIN_S", "STEPS", "WINDOW_MISSES", "MEMORY_COUNTS"]

#: what ``memory=`` counts, for every level (docs/caching.md, "What memory= counts"): said
#: once here for the outputs that print it (``bench auto``)
MEMORY_COUNTS = ("memory= counts, for every level alike: the heap's cached blocks and execution buffers, and "
                 "the mapped blocks' pages resident in the process (the memory split divides it between them); "
                 "not counted, for any level: the kernel's page cache of files (the disk tiers' block files, "
                 "mapped blocks' pages released from the process, the job's input files)")

#: the taker's saving must beat the giver's cost by this factor (timings are noisy)
MARGIN = 1.5
#: a step must save at least this many seconds per window to be worth a move
MIN_GAIN_S = 0.002
#: the budget is moved in steps of 1/STEPS
STEPS = 16
#: an evaluation is due after this many misses in a window (and at every stage's start)
WINDOW_MISSES = 32
_EWMA = 0.3
SIDES = ("heap", "mapped")


@dataclass
class SideWindow:
    """One side's evidence since the last evaluation."""

    miss_s: float = 0.0
    missed: dict = field(default_factory=dict)  # block (or spill number) -> bytes
    misses: int = 0
    hit_bytes: int = 0

    @property
    def missed_bytes(self) -> int:
        return sum(self.missed.values())

    def saving_per_byte(self) -> float:
        """Seconds a resident byte of the missed blocks would have saved in the window."""
        n = self.missed_bytes
        return self.miss_s / n if n > 0 else 0.0


class MemorySplit:
    """See the module's docstring. ``memory`` is the memory manager (its total is the
    heap side), ``pages`` the mapped blocks' ``MappedPageBound`` (its limit is the mapped
    side); ``bounds`` the least and most fraction of ``budget`` the mapped side may hold;
    ``prior(side)`` a cost per missed byte before one was measured; ``post`` and
    ``count`` the block manager's event and metric sinks; ``spill_s_per_byte()`` what an
    aggregation's spilled byte costs (written and read back)."""

    def __init__(self, memory: Any, pages: Any, budget: int, bounds: tuple[float, float],
                 prior: Callable[[str], float], post: Callable[..., None], count: Callable[..., None],
                 spill_s_per_byte: Callable[[], float] = lambda: 0.0) -> None:
        lo, hi = bounds
        self.memory, self.pages, self.budget = memory, pages, int(budget)
        self.lo, self.hi = int(lo * budget), int(hi * budget)
        self.step = max(1, self.budget // STEPS)
        self._prior, self._post, self._count = prior, post, count
        self._spill_s_per_byte = spill_s_per_byte
        self._lock = threading.Lock()
        self._evaluating = threading.Lock()
        self._window = {s: SideWindow() for s in SIDES}
        self._cost: dict[str, float | None] = dict.fromkeys(SIDES)  # seconds per missed byte
        self._left: dict[Any, int] = {}  # heap: blocks that left memory, and their size there
        self._spills = 0
        self.moves = 0
        pages.set_limit(self.lo)
        memory.resize(self.budget - self.lo)

    # -- figures ------------------------------------------------------------------------
    @property
    def heap_bytes(self) -> int:
        return self.memory.total

    @property
    def mapped_bytes(self) -> int:
        return self.pages.limit

    def snapshot(self) -> dict:
        """The split now, for ``storage_status`` and events."""
        return {"budget": self.budget, "heap": self.heap_bytes, "mapped": self.mapped_bytes,
                "mapped_bounds": (self.lo, self.hi), "moves": self.moves}

    # -- evidence (any thread) -------------------------------------------------------------
    def left_memory(self, block_id: Any, nbytes: int) -> None:
        """A block left memory (evicted) or found no room there: a later read of it is a
        heap miss of ``nbytes``."""
        with self._lock:
            self._left[block_id] = int(nbytes)

    def heap_size(self, block_id: Any) -> int | None:
        """The memory size of a block that left memory (None: it never did)."""
        with self._lock:
            return self._left.get(block_id)

    def forget_dataset(self, dataset_id: Any) -> None:
        with self._lock:
            for bid in [b for b in self._left if b.dataset_id == dataset_id]:
                del self._left[bid]

    def hit(self, side: str, nbytes: int) -> None:
        with self._lock:
            self._window[side].hit_bytes += int(nbytes)

    def miss(self, side: str, block_id: Any, nbytes: int, seconds: float) -> None:
        """A read that ``side`` would have served with more bytes cost ``seconds``."""
        nbytes = max(1, int(nbytes))
        with self._lock:
            w = self._window[side]
            w.miss_s += max(0.0, seconds)
            w.misses += 1
            if block_id is None:
                self._spills += 1
                block_id = ("spill", self._spills)
            w.missed[block_id] = nbytes
            old = self._cost[side]
            per_byte = max(0.0, seconds) / nbytes
            self._cost[side] = per_byte if old is None else (1 - _EWMA) * old + _EWMA * per_byte

    def spill_cost(self, nbytes: int) -> float:
        """Seconds an aggregation's spill of ``nbytes`` costs: written and read back at
        the serialized form's measured round trip (set by the block manager)."""
        return nbytes * self._spill_s_per_byte()

    @property
    def due(self) -> bool:
        """Enough misses gathered for an evaluation."""
        with self._lock:
            return sum(w.misses for w in self._window.values()) >= WINDOW_MISSES

    # -- the decision ----------------------------------------------------------------------
    def cost_per_byte(self, side: str) -> float:
        c = self._cost[side]
        return self._prior(side) if c is None else c

    def evaluate(self) -> dict | None:
        """Moves one step toward the side whose misses cost more per byte than the other
        side's marginal bytes save, if any; the window starts over when there was evidence.
        Returns the move's event fields (None: no move). Never call with the memory lock
        held: shrinking the heap writes blocks."""
        if not self._evaluating.acquire(blocking=False):
            return None  # another thread is evaluating
        try:
            with self._lock:
                window, self._window = self._window, {s: SideWindow() for s in SIDES}
            heap_peak = self.memory.take_window_peak()
            if not any(w.misses for w in window.values()):
                with self._lock:  # nothing to go on yet: keep gathering (hits included)
                    for s in SIDES:
                        self._window[s].hit_bytes += window[s].hit_bytes
                return None
            idle = {"heap": self.memory.total - heap_peak, "mapped": self.pages.limit - self.pages.held_bytes}
            resident = {"heap": max(1, self.memory.storage_used), "mapped": max(1, self.pages.held_bytes)}
            best = None
            for taker, giver in (("mapped", "heap"), ("heap", "mapped")):
                room = self._room(taker)
                if room <= 0:
                    continue
                saving = window[taker].saving_per_byte()
                cost = 0.0 if idle[giver] >= room else \
                    window[giver].hit_bytes / resident[giver] * self.cost_per_byte(giver)
                worth = saving > 0 if cost == 0 else saving > MARGIN * cost and saving * room >= MIN_GAIN_S
                if worth and (best is None or saving > best[2]):
                    best = (taker, giver, saving, cost, room)
            if best is None:
                return None
            return self._move(*best, window)
        finally:
            self._evaluating.release()

    def _room(self, taker: str) -> int:
        """How far one step may go toward ``taker`` within the bounds."""
        if taker == "mapped":
            return min(self.step, self.hi - self.pages.limit)
        return min(self.step, self.pages.limit - self.lo)

    def _move(self, taker: str, giver: str, saving: float, cost: float, room: int, window: dict) -> dict | None:
        """Shrinks the giver, then grows the taker by what the giver gave."""
        if giver == "heap":
            before = self.memory.total
            given = before - self.memory.resize(before - room)  # evicts; never execution memory
            if given <= 0:
                return None
            released = self.pages.set_limit(self.pages.limit + given)
        else:
            given = room
            released = self.pages.set_limit(self.pages.limit - given)
            self.memory.resize(self.memory.total + given)
        self.moves += 1
        self._count(memory_split_moves=1, **{f"memory_split_bytes_to_{taker}": given})
        fields = dict(to=taker, bytes=given, heap=self.memory.total, mapped=self.pages.limit, budget=self.budget,
                      saving_us_per_mb=round(saving * (1 << 20) * 1e6, 1),
                      cost_us_per_mb=round(cost * (1 << 20) * 1e6, 1),
                      heap_misses=window["heap"].misses, mapped_misses=window["mapped"].misses,
                      pages_released=released)
        self._post("MemorySplitMoved", **fields)
        return fields
