"""AUTO's drop-or-spill choice from what both sides measurably cost, per dataset, with a
hysteresis whose locked-in loss is bounded.

Why. ``auto_level.choose`` makes a dataset's first choice from one block's estimates: its
compute time against a write and a read at this executor's disk costs (priors until
timed), weighted by a guess at how often it will be read again (``LOOP_READS`` in a loop).
That is all there is before any block is needed again; afterwards it is a guess where a
measurement exists. The issue-43 case: K-means on an ``.npy`` source, whose "recompute" is
a copy out of the page cache, dropped (1.2-1.3x the best fixed level) where mapping the
points once and reading them zero-copy is cheaper, and the 1.5x ratio on noisy point
estimates kept it so.

What the ledger does. Once a block of the dataset is needed again after it left memory,
every such event is priced on both sides, with what was measured:

- a **recompute** (the block was dropped): the drop side paid the measured compute time
  (the block manager times ``compute()`` *and* the copy that makes the value its own, so a
  view of a mapped source pays for its copy out of the page cache); the spill side would
  have paid a read of the block's bytes at the dataset's measured read cost (its own reads,
  warm or cold as they came, else this executor's reads of that form) and, the first time
  the block comes back, its write;
- a **disk read** (the block was spilled): the spill side paid the measured read (a warm
  mapped read costs what it measures: nearly nothing) and, the first time, the block's
  measured write; the drop side would have paid a recompute at the dataset's measured
  compute cost per byte.

A write is charged when its block is first needed again, on both sides alike: a write is
worth paying only for the reads it serves, and no rule that cannot see the future can tell
at eviction whether there will be any (the ski-rental problem). The first choice (from
``choose``, which weighs the reads the lineage policy predicts) decides about those.

The hysteresis. ``regret_s`` is what the current choice cost beyond the other side since
the last switch, summed over the events (each block's write charged on its first return
after the switch: the other choice, made then, would have had to write it), and the choice
switches when it exceeds ``MARGIN`` (5%) of everything the dataset cost so far (first
computations, writes, reads, recomputes: ``paid_s``) plus one block's cost (so that the first
few events, on a small ``paid_s``, do not flap it). A credit (the current choice cheaper) is
kept only down to minus that bound, so a change of costs is followed within twice the bound.
Bound: the sum is at most the (floored) ``regret_s``, so **since the last switch the current
choice never cost more than the other would have by more than 5% of the dataset's cost so
far plus two blocks' costs** (the threshold's one block and the event that crossed it),
apart from the writes of blocks not yet needed again. 5% because it is the target AUTO is
held to against the best fixed level (``bench auto``); noise in single timings averages out
in the sum instead of tripping a ratio of point estimates. (A suffix-only rule, such as a
CUSUM floored at zero, would be wrong here: a stretch after the writes were paid always
favours the side that wrote, whose writes were charged before it.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Ledger", "MARGIN"]

#: a choice switches once its accumulated excess cost exceeds this fraction of the dataset's cost so far
MARGIN = 0.05
_EWMA = 0.3


@dataclass
class Ledger:
    """One AUTO dataset's evidence on one executor; not thread-safe (``AutoLevels``
    holds its lock around every call). ``spill`` is whether the current choice keeps
    blocks that leave memory (set by the caller on every switch)."""

    spill: bool = False
    regret_s: float = 0.0  # the current choice's accumulated excess (CUSUM, >= 0)
    paid_s: float = 0.0  # everything the dataset cost so far
    events: int = 0  # re-accesses priced (0: no evidence yet, ``choose`` rules)
    read_s_per_byte: float | None = None  # measured reads of this dataset's blocks
    spill_s: float = 0.0  # what the spill side cost, over the priced events (for reports)
    drop_s: float = 0.0  # what the drop side cost, over the priced events
    _seen: set = field(default_factory=set)  # splits computed once
    _written: dict = field(default_factory=dict)  # split -> measured write seconds, not yet charged
    _charged: set = field(default_factory=set)  # splits whose write (real or not) is charged

    @property
    def blocks(self) -> int:
        """Distinct blocks computed here so far."""
        return len(self._seen)

    # -- what happened -------------------------------------------------------------------------
    def computed(self, split: int | None, nbytes: int, seconds: float, write_s: float,
                 read_s: float) -> bool:
        """A block was computed in ``seconds``; returns True if it was a recompute (priced:
        ``write_s``/``read_s`` are what the spill side would have paid for its bytes)."""
        self.paid_s += max(0.0, seconds)
        if split is None:
            return False
        if split not in self._seen:
            self._seen.add(split)
            return False
        self._price(spill=read_s + self._write_of(split, write_s), drop=seconds)
        return True

    def written(self, split: int | None, seconds: float) -> None:
        """A block of the dataset was written to disk (it left memory) in ``seconds``:
        paid now, charged to the spill side when the block is needed again."""
        self.paid_s += max(0.0, seconds)
        if split is not None and split not in self._charged:
            self._written[split] = max(0.0, seconds)

    def read(self, split: int | None, nbytes: int, seconds: float, compute_s: float) -> None:
        """A spilled block was read back in ``seconds`` (``compute_s``: a recompute of its
        bytes at the dataset's measured cost, what the drop side would have paid)."""
        seconds = max(0.0, seconds)
        self.paid_s += seconds
        if nbytes > 0:
            per_byte = seconds / nbytes
            self.read_s_per_byte = per_byte if self.read_s_per_byte is None else \
                (1 - _EWMA) * self.read_s_per_byte + _EWMA * per_byte
        if split is None:
            return
        self._price(spill=seconds + self._write_of(split, 0.0), drop=compute_s)

    # -- the choice ----------------------------------------------------------------------------
    def should_switch(self, block_s: float, margin: float = MARGIN) -> bool:
        """Whether the current choice's excess since the last switch is over the bound:
        ``margin`` of the dataset's cost so far plus one block's cost (``block_s``). A
        credit (the current choice cheaper) is kept down to minus the bound, so that a
        change of costs is followed within twice the bound."""
        bound = margin * self.paid_s + max(0.0, block_s)
        self.regret_s = max(self.regret_s, -bound)
        return self.events > 0 and self.regret_s > bound

    def switched(self, spill: bool) -> None:
        """The choice is now ``spill`` (or drop): its excess starts from zero, and each
        block's write is charged again on its first return (the other choice, had it been
        made now, would have written the blocks that leave memory from now on)."""
        self.spill, self.regret_s = spill, 0.0
        self._charged.clear()

    def _write_of(self, split: int, estimate: float) -> float:
        """The block's write, the first time it is needed again (measured if it was
        written, else ``estimate``); 0 afterwards."""
        if split in self._charged:
            return 0.0
        self._charged.add(split)
        return self._written.pop(split, estimate)

    def _price(self, spill: float, drop: float) -> None:
        self.events += 1
        self.spill_s += spill
        self.drop_s += drop
        self.regret_s += spill - drop if self.spill else drop - spill
