"""AUTO: the engine chooses, per dataset, where its blocks go when they leave memory.

Why: the right level depends on things a user cannot judge before running (Zhang 2017's
central finding, and TeraCache's): whether recomputing a partition is cheaper than a disk
round trip, whether the value has a zero-copy layout (numeric batches map without
deserializing; Python records do not), and what this machine's disks cost. The block
manager measures all of them as the job runs, so it decides.

What AUTO does. A block of an AUTO dataset is kept in memory, deserialized, as long as
it fits (nothing is faster to read). What happens when it must leave memory is chosen per
dataset, and revised as measurements come in:

- **drop** (``MEMORY_ONLY``) when recomputing the block costs less than writing it and
  reading it back: its measured compute time (the task's time in ``compute()``, parents'
  reads included: what a recomputation would cost now) against the round trip of its
  bytes at the measured disk costs. How often the block will be read again weighs in:
  a block the policy sees read in a loop (the ``lineage`` policy's reuse distance, from
  the plan and the loop's past) is read ``LOOP_READS`` times for one write, so it is
  dropped only when ``LOOP_READS`` recomputations cost less than one write and that many
  reads (nearly: when a recomputation costs less than a read); a block with no known
  reuse is weighed for one read back;
- else **the mapped layout** (``MEMORY_AND_DISK_MMAP``) for a value with a zero-copy
  layout (an ndarray of a plain dtype, an Arrow table): evicted once, then served by
  mapping, no deserialization and never re-cached;
- else **serialized to the disk tiers** (``MEMORY_AND_DISK``) with the dataset's
  serializer (by default ``auto``, the fastest that round-trips each value: pickle5 for
  batches, pickle for records), re-cached as the policy decides.

The spill form (mapped or tiers) is fixed by the dataset's first block, so a block is
always found where its form puts it; the drop/spill choice may flip either way. Blocks
spilled before a switch to drop stay on disk and are read from there.

Two regimes. Until a block of the dataset is needed again after leaving memory, the choice
is :func:`choose`'s, on one block's estimates (above), with a hysteresis
(``SWITCH_MARGIN``) so that noise in the timings does not make it flap. From then on it is
the dataset's ledger's (``auto_ledger.py``): each recompute and each read back is priced on
both sides from what was measured (the recompute's time including the copy out of a mapped
source; the reads as they came, warm mapped reads nearly free), and the choice switches when
its accumulated excess passes ``MARGIN`` (5%) of the dataset's cost so far plus one block:
a bound on the loss it can lock in. Where the loop is known (``looped``), a dropped
dataset's returns also price the reads ahead on both sides at the measured costs (as many
as the block came back so far, at most ``LOOP_READS``), and switch to spill at once when that is cheaper by more than ``MARGIN``
(the ledger's forecast, audited by it: see ``auto_ledger.py`` for the bound with it); the
forecast is priced again as its writes are timed, and undone when they cost more than it
assumed by enough to reverse it.

Disk costs are seconds per byte of (serialize +) write and of read (+ deserialize), per
form: priors until this executor has timed its own writes and reads, then a moving
average of what it measured (the tiers' configured or measured bandwidth, when known,
replaces the read prior). Every choice and change is a ``AutoLevelChosen`` event and
counts in ``auto_level_changes``.

**Explore before trusting a prior.** The priors are an SSD's figures; the page cache
that takes a mapped write is often several times faster (2.6 GB/s on our 2-core VM
against the 400 MB/s prior). A drop chosen on a prior is the one choice that cannot be
corrected cheaply: every block evicted under it is lost and recomputed. So while a
form's write has not been timed, a dataset that the priors would drop spills instead
(the reason says "exploring"): its first victim is written, which times the form. Every
timed write or read revises all AUTO datasets' choices at once (a choice made on priors
without the hysteresis), so the victims after the first are dropped or spilled on what
this executor measured. The exploration costs one block's write per form per task
running at once on an executor (victims evicted while the first write is under way spill
too), and nothing when nothing is evicted. (Measured on ALS at 2x pressure: AUTO
dropped "ratings by user" on the prior, discarded 8 blocks and recomputed them; see
docs/lab-notes/benchmarks-history.md.)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from strataflow.storage.auto_ledger import MARGIN, Ledger
from strataflow.storage.mapped.layout import zero_copy_layout
from strataflow.storage.level import StorageLevel

__all__ = ["AutoLevels", "DatasetFacts", "DiskCosts", "choose", "SWITCH_MARGIN", "LOOP_READS", "MARGIN"]

MB = 1 << 20
#: before any block was needed again (no evidence for the ledger): a choice changes only
#: when the other side's estimate wins by this factor (timings are noisy)
SWITCH_MARGIN = 1.5
#: reads of one spilled block that a loop is expected to make (the write is paid once)
LOOP_READS = 4
_EWMA = 0.3  # weight of a new observation
#: seconds per byte until measured: serialized (pickle + write to a tier / read + unpickle)
#: and mapped (layout + write / map, no decoding); conservative figures for an SSD
PRIORS = {"serialized": (1 / (250 * MB), 1 / (500 * MB)), "mapped": (1 / (400 * MB), 1 / (2000 * MB))}

DROP, MAPPED, SERIALIZED = StorageLevel.MEMORY_ONLY, StorageLevel.MEMORY_AND_DISK_MMAP, StorageLevel.MEMORY_AND_DISK


def _mix(old: float | None, new: float) -> float:
    return new if old is None else (1 - _EWMA) * old + _EWMA * new


class DiskCosts:
    """Seconds per byte of a block's way to disk and back, per form (``serialized``,
    ``mapped``), as this executor measured them (priors until then)."""

    def __init__(self, read_bandwidth: float | None = None) -> None:
        self._lock = threading.Lock()
        self._write: dict[str, float | None] = {"serialized": None, "mapped": None}
        self._read: dict[str, float | None] = {"serialized": None, "mapped": None}
        self._read_prior = dict((k, v[1]) for k, v in PRIORS.items())
        #: every read of a spilled block as it came (a warm mapped read included: nearly
        #: free), not only device reads: what a spill's read costs on this executor now
        self._served: dict[str, float | None] = {"serialized": None, "mapped": None}
        self._timings: dict[tuple[str, str], int] = {}  # (op, form) -> counted observations
        if read_bandwidth:  # the top tier's configured or measured bandwidth
            self._read_prior["serialized"] = 1 / read_bandwidth
        #: called (no lock held) after each counted observation: the choices made on the
        #: old costs are revised (``AutoLevels`` sets it)
        self.on_change: Callable[[], None] | None = None

    def observe(self, form: str, op: str, nbytes: int, seconds: float) -> None:
        """One timed write or read of ``nbytes`` (blocks under 64 kB are not counted:
        their time is fixed cost, not bytes). The first of a form and op in a process is a
        warm-up: it stands until the second replaces it, mixed from then on. It carries
        one-time costs that later ones do not pay (a region file's first pages, lazy
        imports): measured on this VM, a 40 MB mapped write's first 100 ms against 12-16 ms
        for the next ones, which the moving average would have carried for many writes,
        pricing every block's write at several times its cost."""
        if nbytes < (64 << 10) or seconds <= 0:
            return
        table = self._write if op == "write" else self._read
        with self._lock:
            n = self._timings.get((op, form), 0)
            self._timings[(op, form)] = n + 1
            table[form] = seconds / nbytes if n == 1 else _mix(table[form], seconds / nbytes)
        if self.on_change is not None:
            self.on_change()

    def served(self, form: str, nbytes: int, seconds: float) -> None:
        """One read of a spilled block in ``form``, whatever it cost (warm or cold)."""
        if nbytes < (64 << 10) or seconds < 0:
            return
        with self._lock:
            self._served[form] = _mix(self._served[form], seconds / nbytes)

    def served_per_byte(self, form: str) -> float:
        """Seconds per byte of a read as this executor's reads of ``form`` came (else the
        read estimate: device reads measured, or the prior)."""
        with self._lock:
            s = self._served[form]
        return self.per_byte(form)[1] if s is None else s

    def timed(self, form: str) -> bool:
        """Whether a write in ``form`` has been timed (else its cost is a prior)."""
        with self._lock:
            return self._write[form] is not None

    def per_byte(self, form: str) -> tuple[float, float]:
        with self._lock:
            w, r = self._write[form], self._read[form]
        return (PRIORS[form][0] if w is None else w, self._read_prior[form] if r is None else r)

    def round_trip_s(self, form: str, nbytes: int, reads: int = 1) -> float:
        """Writing ``nbytes`` in ``form`` and reading them back ``reads`` times."""
        w, r = self.per_byte(form)
        return nbytes * (w + reads * r)

    def measured(self) -> dict:
        with self._lock:
            return {f"{op}_{form}_mb_per_s": (None if v is None else 1 / v / MB)
                    for op, table in (("write", self._write), ("read", self._read)) for form, v in table.items()}


@dataclass
class DatasetFacts:
    """What an executor measured of one AUTO dataset's blocks."""

    compute_s_per_byte: float | None = None
    block_bytes: float | None = None
    zero_copy: bool | None = None  # fixed by the first block: the spill form
    computed: int = 0
    level: Any = None  # the current choice (None: nothing computed yet)
    reason: str = ""
    changes: int = 0
    looped: bool = False  # the policy saw its blocks read again in a loop
    on_priors: bool = False  # the choice was made before its spill form's write was timed
    info: Any = None  # the dataset's DatasetInfo, whose level a revision sets
    #: bytes on disk per byte in memory of its serialized spills (None: none measured);
    #: the disk costs are per byte on disk (``cost_admission.py`` converts with it)
    disk_ratio: float | None = None
    #: both sides' measured costs once its blocks are needed again (``auto_ledger.py``)
    ledger: Ledger = field(default_factory=Ledger)

    @property
    def form(self) -> str:
        return "mapped" if self.zero_copy else "serialized"

    @property
    def disk_per_byte(self) -> float:
        """Bytes on disk per byte in memory of a spill (1 for the mapped layout, or before a
        serialized spill was measured). The disk costs are per byte on disk and the compute
        cost per byte in memory; a pickled record takes several times fewer bytes on disk than
        its objects in memory, so a round trip priced on memory bytes would be several times
        too dear, and a recompute priced on disk bytes as much too cheap."""
        return 1.0 if self.zero_copy or self.disk_ratio is None else self.disk_ratio


def choose(facts: DatasetFacts, costs: DiskCosts, current: Any = None,
           margin: float = SWITCH_MARGIN, explore: bool = True) -> tuple[Any, str, float, float]:
    """(level, reason, compute seconds, round-trip seconds) for a block of the dataset's
    average size: drop when recomputing it for each expected read (one, or ``LOOP_READS``
    in a loop) is cheaper than writing it once in its spill form and reading it back that
    often; ``current``, when given, is kept unless the other side wins by ``margin``.
    ``explore``: a drop that rests on the spill form's write prior (never timed) becomes
    a spill, so that the first victim times it (see the module's docstring)."""
    nbytes = facts.block_bytes or 0.0
    spill = MAPPED if facts.zero_copy else SERIALIZED
    reads = LOOP_READS if facts.looped else 1
    compute_s = (facts.compute_s_per_byte or 0.0) * nbytes * reads
    trip_s = costs.round_trip_s(facts.form, int(nbytes * facts.disk_per_byte), reads)
    if current is DROP:
        drop = compute_s <= trip_s * margin
    elif current is spill:
        drop = compute_s * margin < trip_s
    else:
        drop = compute_s < trip_s
    times = f" for {reads} reads (a loop)" if reads > 1 else ""
    if drop and explore and not costs.timed(facts.form):
        return spill, f"exploring: recomputing ({compute_s * 1e3:.2f} ms) looks cheaper than a disk round " \
                      f"trip ({trip_s * 1e3:.2f} ms){times}, but the {facts.form} write's cost is a prior: " \
                      f"the first victim is written to time it", compute_s, trip_s
    if drop:
        return DROP, f"recomputing ({compute_s * 1e3:.2f} ms) is cheaper than a disk round trip " \
                     f"({trip_s * 1e3:.2f} ms){times}", compute_s, trip_s
    form = "zero-copy layout: mapped" if facts.zero_copy else "no zero-copy layout: serialized to the tiers"
    return spill, f"recomputing ({compute_s * 1e3:.2f} ms) costs more than a disk round trip " \
                  f"({trip_s * 1e3:.2f} ms){times}; {form}", compute_s, trip_s


@dataclass
class AutoLevels:
    """The AUTO datasets of one block manager: their facts and current choices. ``post``
    and ``count`` are the manager's event and metric sinks."""

    costs: DiskCosts
    post: Any
    count: Any
    #: the bound on mapped blocks' resident pages now (None: no bound): whether a dataset's
    #: mapped blocks could stay warm, for a read it has not measured yet
    mapped_limit: Callable[[], int | None] = lambda: None
    _facts: dict[int, DatasetFacts] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.costs.on_change = self.revise

    def register(self, dataset_id: int) -> DatasetFacts:
        with self._lock:
            return self._facts.setdefault(dataset_id, DatasetFacts())

    def forget(self, dataset_id: int) -> None:
        with self._lock:
            self._facts.pop(dataset_id, None)

    def facts(self, dataset_id: int) -> DatasetFacts | None:
        return self._facts.get(dataset_id)

    def computed(self, info: Any, value: Any, nbytes: int, seconds: float, looped: bool = False,
                 split: int | None = None) -> Any:
        """A block of ``info``'s dataset was computed in ``seconds`` and holds ``nbytes``:
        the facts are updated, the choice revised, and ``info.level`` set to it (returned).
        ``looped``: the policy predicts its blocks are read again in a loop (stays so).
        ``split``: the block's partition; a second computation of one on this executor is
        a recompute, priced on both sides in the dataset's ledger (None: not tracked)."""
        f = self.register(info.dataset_id)
        with self._lock:
            f.info = info
            f.looped = f.looped or looped
            if f.zero_copy is None:
                f.zero_copy = zero_copy_layout(value)
            f.computed += 1
            nbytes = max(1, nbytes)
            w, _ = self.costs.per_byte(f.form)
            on_disk = nbytes * f.disk_per_byte
            f.ledger.computed(split, nbytes, seconds, w * on_disk, self._read_per_byte(f) * on_disk)
            f.block_bytes = _mix(f.block_bytes, float(nbytes))
            f.compute_s_per_byte = _mix(f.compute_s_per_byte, seconds / nbytes)
            change = self._choose(f)
        if change is not None:
            self._announce(f, *change)
        return info.level

    def read(self, dataset_id: int, split: int | None, nbytes: int, seconds: float) -> None:
        """A spilled block of the dataset was read back (from its region or the tiers) in
        ``seconds``, as measured (a warm mapped read: nearly nothing); priced against a
        recompute at the dataset's measured cost, and the choice revised."""
        f = self._facts.get(dataset_id)
        if f is None or f.info is None:
            return
        with self._lock:
            f.ledger.read(split, nbytes, seconds, (f.compute_s_per_byte or 0.0) * nbytes / f.disk_per_byte)
            change = self._choose(f)
        if change is not None:
            self._announce(f, *change)

    def written(self, dataset_id: int, split: int | None, seconds: float) -> None:
        """A block of the dataset was written to disk (spilled) in ``seconds``."""
        f = self._facts.get(dataset_id)
        if f is None:
            return
        with self._lock:
            f.ledger.written(split, seconds)
            change = self._choose(f) if f.info is not None and f.level is not None else None
        if change is not None:
            self._announce(f, *change)

    def read_per_byte(self, dataset_id: int) -> float | None:
        """What a read back of the dataset's spilled bytes costs now, per byte (None: not
        an AUTO dataset here); ``cost_admission.py`` prices a spilled block's loss by it."""
        f = self._facts.get(dataset_id)
        return None if f is None else self._read_per_byte(f)

    def _read_per_byte(self, f: DatasetFacts) -> float:
        """What a read of the dataset's spilled bytes costs: its own reads as measured;
        else, for mapped blocks that could not all keep their pages under the bound (a loop
        over more bytes than the bound reads every one from the device), a device read;
        else this executor's reads of its form as they came."""
        own = f.ledger.read_s_per_byte
        if own is not None:
            return own
        limit = self.mapped_limit()
        if f.zero_copy and limit is not None and f.ledger.blocks * (f.block_bytes or 0.0) > limit:
            return self.costs.per_byte(f.form)[1]
        return self.costs.served_per_byte(f.form)

    def revise(self) -> None:
        """The disk costs moved: every dataset's choice is made again on them (one made on
        priors without the hysteresis), and each change posted."""
        changes = []
        with self._lock:
            for f in self._facts.values():
                if f.info is not None and f.level is not None:
                    change = self._choose(f)
                    if change is not None:
                        changes.append((f, change))
        for f, change in changes:
            self._announce(f, *change)

    def _choose(self, f: DatasetFacts) -> tuple | None:
        """(level, before, reason, compute_s, trip_s) if the choice changed (lock held):
        the ledger's forecast for a looped, dropped dataset once a block came back; else
        the ledger's evidence, once it has some (a block needed again); else ``choose``'s."""
        ledger, amortize = f.ledger, 1
        forecast = self._forecast(f) if ledger.events and f.level is DROP and f.looped else None
        premise = self._premise(f) if forecast is None and f.level is not DROP else None
        if premise is not None:
            level, reason, compute_s, trip_s = premise
            f.on_priors = False
        elif forecast is not None:
            level, reason, compute_s, trip_s, amortize = forecast
            f.on_priors = False
        elif ledger.events and f.level is not None:
            block = f.block_bytes or 0.0
            block_s = block * max(f.compute_s_per_byte or 0.0, self.costs.per_byte(f.form)[0] * f.disk_per_byte)
            if not ledger.should_switch(block_s):
                return None
            spill = MAPPED if f.zero_copy else SERIALIZED
            level = DROP if ledger.spill else spill
            reason = (f"measured over {ledger.events} blocks needed again: dropping cost "
                      f"{ledger.drop_s * 1e3:.2f} ms, spilling {ledger.spill_s * 1e3:.2f} ms; "
                      f"{'spilling' if ledger.spill else 'dropping'} cost {ledger.regret_s * 1e3:.2f} ms more, "
                      f"over {MARGIN:.0%} of the dataset's {ledger.paid_s * 1e3:.2f} ms so far and one block")
            compute_s, trip_s = ledger.drop_s, ledger.spill_s
            f.on_priors = False
        else:
            level, reason, compute_s, trip_s = choose(f, self.costs, None if f.on_priors else f.level)
            f.on_priors = not self.costs.timed(f.form)
        if level is f.level:
            return None
        ledger.switched(spill=level is not DROP, amortize=amortize, forecast=forecast is not None)
        before, f.level, f.reason = f.level, level, reason
        f.changes += 1
        f.info.level = level
        return level, before, reason, compute_s, trip_s

    def _forecast(self, f: DatasetFacts) -> tuple | None:
        """(level, reason, compute_s, trip_s, reads) when the ledger's forecast switches a
        looped, dropped dataset to spill now: as many more returns of a block as the block
        came back so far, up to ``LOOP_READS`` (``Ledger.expected_reads``), priced on both
        sides at what was measured (``Ledger.forecast``); None otherwise (lock held)."""
        reads = f.ledger.expected_reads(LOOP_READS)
        block = f.block_bytes or 0.0
        recompute_s = (f.compute_s_per_byte or 0.0) * block
        on_disk = block * f.disk_per_byte
        write_s, read_s = self.costs.per_byte(f.form)[0] * on_disk, self._read_per_byte(f) * on_disk
        if not f.ledger.forecast(reads, recompute_s, write_s, read_s):
            return None
        drop_s, spill_s = reads * recompute_s, write_s + reads * read_s
        form = "mapped" if f.zero_copy else "serialized to the tiers"
        ahead = f"{reads} more read{'s' if reads > 1 else ''}, as its block came back so far, at most {LOOP_READS}"
        return (MAPPED if f.zero_copy else SERIALIZED,
                f"forecast for a loop ({ahead}; measured costs): recomputing costs {drop_s * 1e3:.2f} ms, "
                f"one write and the reads "
                f"{spill_s * 1e3:.2f} ms, over {MARGIN:.0%} less; {form}, audited by the ledger",
                drop_s, spill_s, reads)

    def _premise(self, f: DatasetFacts) -> tuple | None:
        """(DROP, reason, compute_s, trip_s) when the forecast switch in force failed its
        premise: priced again with the writes measured since it (``Ledger.premise_failed``),
        drop wins; None otherwise (lock held)."""
        ledger = f.ledger
        write_s = ledger.premise_failed()
        if write_s is None:
            return None
        recompute_s, assumed_s, read_s = ledger.forecast_prices
        reads = ledger.forecast_reads
        drop_s, spill_s = reads * recompute_s, write_s + reads * read_s
        return (DROP, f"the forecast's premise failed: the {len(ledger.forecast_writes)} writes since it cost "
                      f"{write_s * 1e3:.2f} ms a block, not the {assumed_s * 1e3:.2f} ms it was made on; "
                      f"recomputing for {reads} reads costs {drop_s * 1e3:.2f} ms, one write and the reads "
                      f"{spill_s * 1e3:.2f} ms: dropped again (no second forecast)", drop_s, spill_s)

    def _announce(self, f: DatasetFacts, level: Any, before: Any, reason: str, compute_s: float,
                  trip_s: float) -> None:
        info = f.info
        self.count(auto_level_changes=1)
        self.post("AutoLevelChosen", dataset_id=info.dataset_id, name=info.label(), level=level.name,
                  before=None if before is None else before.name, reason=reason,
                  compute_ms=round(compute_s * 1e3, 3), round_trip_ms=round(trip_s * 1e3, 3),
                  block_bytes=int(f.block_bytes or 0), looped=f.looped)
