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

The forecast. Looking back alone is slow to leave a drop: each block returns once per pass
of a loop, and the spill side's writes are charged at those returns before the reads that
would pay for them, so the evidence passes the bound only after most of a pass (issue 43:
K-means on an ``.npy`` source mapped its points from the third iteration). Where the future
is known, it is priced: when a block of a dataset the lineage policy sees read in a loop
returns while the choice is drop, the caller prices the ``reads`` expected from now on both
sides with what was measured: drop, ``reads`` recomputes; spill, one write and ``reads``
reads. The reads expected are as many as the returning block came back so far, at most
``LOOP_READS`` (:meth:`Ledger.expected_reads`): the policy calls a dataset looped once it
knows one reuse distance, which a dataset read by two passes only has too, so one return
is evidence of one more read, not of four (issue 52: the mixed pipeline's ``signals``,
read once more by its last pass, was forecast four reads, mapped, and its recomputed
blocks pushed the Python records out of memory). When spill is cheaper by more than ``MARGIN``
(:meth:`Ledger.forecast`), the choice switches at once (a *forecast switch*), and the ledger
audits it: each block's write is then charged over the block's first ``reads`` returns
(``1/reads`` of it a return: the terms the forecast was made on) instead of all at its first
return, so the forecast is checked against the reads and recomputes as they come, and
switched back by the same bound when it proves wrong (reads dearer than measured). One
forecast per dataset: a forecast the auditor overturned is not made again (the same
measurements would make it again). Only drop is forecast away from: a drop loses each block
it evicts, every time round, and it is the choice the backward ledger is slow to leave; a
spill's excess shows at once in its reads.

The forecast's premise is checked as its writes come, too. A forecast rests on a block's
write as measured before it, and a write can cost much more than the one before it (on our
VM a write that needs fresh pages runs at 400 MB/s, one onto pages just freed at memory
speed, and a dataset's exploring write is usually the cheap kind: a K-means ``.npy`` run
mapped its points on a 15 ms write, then paid 50 ms a block). Once two blocks were written
since a forecast switch, the forecast is priced again with their mean write in place of the
one it assumed (:meth:`Ledger.premise_failed`); when drop then wins by more than ``MARGIN``
the choice goes back to drop at once, before the returns that the auditor waits for. Two
writes, because one can be an outlier; the recompute and the reads stay as the forecast
priced them (the reads are the auditor's to check, as they come).

Bound with the forecast: the bound above holds since a forecast switch too, apart from the
writes not yet charged. A loop that ends early (the forecast wrong about the future) leaves
those uncharged, so **the locked-in loss is at most the bound above plus one write of each
block written under a forecast that proved wrong** (the part of its write that no return
came to pay for).
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
    forecast_made: bool = False  # a forecast switch was made (one per dataset)
    forecast_prices: tuple = (0.0, 0.0, 0.0)  # the block's (recompute, write, read) the forecast was made on
    forecast_writes: list = field(default_factory=list)  # writes measured since a forecast switch (in force)
    _amortize: int = 1  # returns over which each block's write is charged (``reads`` after a forecast)
    _on_forecast: bool = False  # the choice in force was made by a forecast
    _seen: set = field(default_factory=set)  # splits computed once
    _returns: dict = field(default_factory=dict)  # split -> times it was needed again (recomputed or read back)
    last_returns: int = 0  # the returns of the block priced last (what a forecast may count on)
    _written: dict = field(default_factory=dict)  # split -> measured write seconds, not yet all charged
    _charged: dict = field(default_factory=dict)  # split -> returns that charged its write (real or not)

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
        self._returned(split)
        self._price(spill=read_s + self._write_of(split, write_s), drop=seconds)
        return True

    def written(self, split: int | None, seconds: float) -> None:
        """A block of the dataset was written to disk (it left memory) in ``seconds``:
        paid now, charged to the spill side when the block is needed again."""
        self.paid_s += max(0.0, seconds)
        if self.spill and self._on_forecast:  # a forecast switch is in force: its premise's evidence
            self.forecast_writes.append(max(0.0, seconds))
        if split is not None and self._charged.get(split, 0) < self._amortize:
            self._written[split] = max(0.0, seconds)  # its shares still to charge: at the measured cost

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
        self._returned(split)
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

    def forecast(self, reads: int, recompute_s: float, write_s: float, read_s: float,
                 margin: float = MARGIN) -> bool:
        """Whether to switch from drop to spill now, on the future: ``reads`` more returns
        of each block, priced at the measured ``recompute_s`` (drop) against one
        ``write_s`` and ``reads`` times ``read_s`` (spill), for one block. True (the caller
        then switches with ``switched(True, amortize=reads)``) when spill is cheaper by
        more than ``margin`` of the drop side, the choice is drop, and no forecast was made
        for this dataset before."""
        if self.spill or self.forecast_made or reads < 1:
            return False
        drop, spill = reads * max(0.0, recompute_s), max(0.0, write_s) + reads * max(0.0, read_s)
        if spill * (1 + margin) >= drop:
            return False
        self.forecast_made = True
        self.forecast_prices = (max(0.0, recompute_s), max(0.0, write_s), max(0.0, read_s))
        return True

    def premise_failed(self, margin: float = MARGIN) -> float | None:
        """The mean of the writes measured since the forecast switch in force (two at least),
        when the forecast priced again with it in place of the write it assumed says drop
        by more than ``margin`` (its recompute and reads as it priced them: the reads are
        the auditor's to check, as they come); None otherwise."""
        if not (self.spill and self._on_forecast) or len(self.forecast_writes) < 2:
            return None
        reads, (recompute, _, read) = self._amortize, self.forecast_prices
        write = sum(self.forecast_writes) / len(self.forecast_writes)
        return write if write + reads * read > reads * recompute * (1 + margin) else None

    def switched(self, spill: bool, amortize: int = 1, forecast: bool = False) -> None:
        """The choice is now ``spill`` (or drop): its excess starts from zero, and each
        block's write is charged again from its next return (the other choice, had it been
        made now, would have written the blocks that leave memory from now on): all of it
        on that return, or ``1/amortize`` of it on each of its next ``amortize`` returns
        (after a forecast switch: the reads the forecast counted on). ``forecast``: the
        switch is a forecast's, whose premise the writes that follow check."""
        self.spill, self.regret_s = spill, 0.0
        self._amortize = max(1, int(amortize))
        self._on_forecast = forecast
        self._charged.clear()
        self.forecast_writes = []

    @property
    def forecast_reads(self) -> int:
        """The reads ahead the forecast switch in force counted on (1 when none is)."""
        return self._amortize

    def uncharged_write_s(self) -> float:
        """The measured writes not yet charged to the spill side (blocks not needed again
        as often as their write is spread over): the part of the loss outside the bound."""
        return sum(w * (1 - self._charged.get(s, 0) / self._amortize) for s, w in self._written.items())

    def _write_of(self, split: int, estimate: float) -> float:
        """The block's share of its write on this return (measured if it was written, else
        ``estimate``): all of it on the first return after a switch, or ``1/amortize`` on
        each of the first ``amortize`` after a forecast switch; 0 afterwards."""
        k = self._charged.get(split, 0)
        if k >= self._amortize:
            return 0.0
        self._charged[split] = k + 1
        # a block recomputed on its first return is written after it: its later shares are of
        # the estimate charged first until ``written`` puts the measured write in its place
        write = self._written.setdefault(split, estimate) if k == 0 else self._written.get(split, estimate)
        if k + 1 >= self._amortize:
            self._written.pop(split, None)
        return write / self._amortize

    def _returned(self, split: int) -> None:
        self.last_returns = self._returns[split] = self._returns.get(split, 0) + 1

    def expected_reads(self, cap: int) -> int:
        """The reads ahead a forecast may count on for the block priced last: as many as it
        came back so far, at most ``cap`` (see the module's docstring: the evidence for a
        loop is its returns)."""
        return max(0, min(cap, self.last_returns))

    def _price(self, spill: float, drop: float) -> None:
        self.events += 1
        self.spill_s += spill
        self.drop_s += drop
        self.regret_s += spill - drop if self.spill else drop - spill
