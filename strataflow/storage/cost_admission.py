"""Cost-aware admission for AUTO: a block that is cheap to get back does not push out
blocks that are dearer to get back.

Why (issue 43). AUTO drops a dataset whose blocks cost less to recompute than a disk
round trip. But a dropped block that is read again is recomputed *and cached again*, and
that put evicts whatever the policy names: on the mixed pipeline the recomputed blocks of
the cheap ``signals`` (a copy and scale of an ``.npy`` row range) came back into memory
at the assignment pass, 12-36 MiB of them, and pushed out Python records and an Arrow
table whose loss costs a parse or a serialized spill and read each; the query rounds went
from 0.02 s to 0.04-0.10 s. Caching a block is only worth what its loss would cost, and
displacing another is only worth it when the other costs less to get back.

The price of a loss, per byte (from what ``AutoLevels`` measured on this executor):

- a block of an AUTO dataset whose current choice is drop: its dataset's measured
  compute seconds per byte (a recomputation, parents' reads and the copy out of a mapped
  source included);
- a block of an AUTO dataset that spills: a read back at the dataset's read cost
  (``AutoLevels.read_per_byte``: its own reads as measured, else this executor's for its
  form), plus its write at the measured write cost unless it is on disk already (a
  serialized block re-cached from the tiers). Those costs are per byte *on disk*; a
  serialized block is several times smaller there than in memory (Python records: 0.33
  MiB pickled for 2.7 MiB in memory), so they are scaled by the dataset's measured ratio
  of the two (``spilled``: each serialized spill of its blocks; 1 until one is measured,
  which errs towards keeping the block);
- any other block (a fixed level; an AUTO dataset with nothing measured yet): unknown,
  counted as dearer than anything.

The rule, for a block of an AUTO dataset being put into memory (computed, or read back
from disk where it was spilled before a switch): it takes free memory as any block does,
and it may evict only its own dataset's blocks and blocks of other datasets whose loss
costs less per byte than its own by ``MARGIN`` (the policy's own rules still choose among
them, all or nothing). When those cannot free enough it is not cached: a dropped
dataset's block is used and dropped (one recomputation when it is read again), a spilled
dataset's goes to its spill form at once (its write and one read back). Either way that
costs exactly what its loss would have, whereas the eviction would have cost the dearer
block's price. Per byte, because memory is what the blocks compete for: the bytes a victim
frees are the bytes the new block needs.

Spilled datasets came under the rule in issue 52. Inside a machine whose page cache is
full (a mapped write waits for write-back: 50-150 ms for a 48 MB block), the mixed
pipeline's cheap ``signals`` went mapped on measured costs; its blocks, recomputed for
the assignment pass, took memory from the Python ``records`` (serialized: 1.16 s to
pickle 195 MB, and every query round then read them back at about 1.1 s), where writing
the 48 MB blocks in their mapped form would have cost about 0.05 s each. A bypass of a
spilled block is not free (its write), but it is priced, and the rule takes it only where
the victims' loss is dearer by the margin. Between spilled peers of about the same price
too: a bypass and an eviction then cost the same, and the eviction churns. Letting the
policy choose among such peers by next use was measured and taken back (the mixed
pipeline at 8x in a machine: 2.5x the bytes dropped, the features pushed out of memory,
K-means iterations 0.63-0.70 s against 0.35-0.43 s; AUTO / MEMORY_AND_DISK 1.01 against
0.80).

Why a margin (1.5x, as ``auto_level.SWITCH_MARGIN``, for the same reason): a dataset's
price rests on timings of a few blocks, and one block's parse was measured at 3.3 and at
16.7 ms on this machine. Between blocks of about the same price an eviction gains nothing
(it moves the loss to another block and pays for the move), and in a loop over more bytes
than memory it is the churn that turns every read into a miss: on the mixed pipeline at
8x, recomputed records and events blocks (1.8-3.9 ns a byte each) evicted one another
round after round. Without the margin a block always takes the memory of a peer; with it,
the blocks in memory stay and serve their reads.

What it leaves alone, and why:

- Blocks of fixed levels are put by the policy's rules, unchanged; they may evict a cheap
  AUTO block (which then costs its price). A fixed level keeps Spark's semantics exactly
  (the ``spark`` policy is the faithful baseline).
- A fixed-level block is never evicted *for* an AUTO block (its cost is not measured, so
  it counts as dear): a dataset whose level the engine chooses cannot push out a dataset
  whose level the user chose.
- When execution memory asks (no block), nothing is restricted: it is not a block's
  admission. The background writer (``async_eviction``) picks its victims "as for the
  block put last", so while that is an AUTO block it too sees only cheaper ones (its
  candidates are blocks with a disk copy to write; a dropped dataset's never are).
- The next use is the policy's business (``lineage``'s Belady order): this rule narrows
  the victims it may name by cost, never widens them.

Thread safety: ``victims_for`` is called under the memory manager's lock (eviction's
first phase) and reads AUTO's facts without AUTO's lock: each figure is one attribute
read, and a figure a moment stale only shifts one decision the next put makes again.
The disk store's ``in`` takes its own leaf lock (as the prefetch offer does under the
memory lock already).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from strataflow.storage.auto_level import DROP, SWITCH_MARGIN, AutoLevels

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.storage.blocks.block import DatasetInfo

__all__ = ["CostAdmission", "MARGIN"]

INF = math.inf
#: a cheap block evicts another dataset's block only if that one is cheaper by this factor
MARGIN = SWITCH_MARGIN
_EWMA = 0.3  # weight of a new ratio


class CostAdmission:
    """Prices a block's loss per byte and narrows the victims an AUTO block may
    evict (see the module's docstring). ``disk``: anything answering ``block in disk``
    (the tiers), to tell a serialized block that is on disk already (no write to pay)."""

    def __init__(self, datasets: "Mapping[int, DatasetInfo]", auto: AutoLevels, disk: Any = ()) -> None:
        self._datasets, self._auto, self._disk = datasets, auto, disk

    def loss_per_byte(self, dataset_id: int, on_disk: bool = False) -> float:
        """Seconds per byte to get a block of the dataset back once it left memory now
        (``inf``: not measured, or not an AUTO dataset)."""
        info = self._datasets.get(dataset_id)
        f = None if info is None else info.auto
        if f is None or f.level is None:
            return INF
        if f.level is DROP:
            c = f.compute_s_per_byte
            return INF if c is None else c
        read = self._auto.read_per_byte(dataset_id)
        if read is None:
            return INF
        return (read + (0.0 if on_disk else self._auto.costs.per_byte(f.form)[0])) * f.disk_per_byte

    def spilled(self, block_id: Any, memory_bytes: int, disk_bytes: int | None) -> None:
        """A block left memory for the tiers, ``memory_bytes`` there and ``disk_bytes`` on
        disk: an AUTO dataset's ratio of the two moves towards it (a moving average)."""
        info = self._datasets.get(getattr(block_id, "dataset_id", None))
        f = None if info is None else info.auto
        if f is None or f.zero_copy or not disk_bytes or memory_bytes <= 0:
            return
        r = disk_bytes / memory_bytes
        f.disk_ratio = r if f.disk_ratio is None else (1 - _EWMA) * f.disk_ratio + _EWMA * r

    def own_price(self, block_id: Any) -> float | None:
        """The block's loss per byte if its dataset is AUTO and priced (the blocks this rule
        weighs: dropped, its recompute; spilled, its write unless on disk already, and a
        read back), else None."""
        dataset_id = getattr(block_id, "dataset_id", None)
        info = self._datasets.get(dataset_id) if dataset_id is not None else None
        f = None if info is None else info.auto
        if f is None or f.level is None:
            return None
        price = self.loss_per_byte(dataset_id, self._serialized_on_disk(info, block_id))
        return None if price == INF else price

    def _serialized_on_disk(self, info: "DatasetInfo | None", block_id: Any) -> bool:
        """A serialized spill of an AUTO dataset already in the tiers (its loss is a read)."""
        f = None if info is None else info.auto
        return (f is not None and f.level is not DROP and not f.zero_copy and block_id in self._disk)

    def victims_for(self, for_block: Any, entries: Mapping[Any, int]) -> Mapping[Any, int]:
        """``entries`` (evictable block -> size) as the policy may see them for a put of
        ``for_block``: all of them, unless ``for_block`` is a priced AUTO block, for which
        only its own dataset's and those cheaper per byte to get back by ``MARGIN`` (a live
        view)."""
        own = None if for_block is None else self.own_price(for_block)
        if own is None:
            return entries
        return _NoDearer(entries, self, own, for_block.dataset_id)


class _NoDearer(Mapping):
    """A view of ``entries`` without other datasets' blocks that are not cheaper to get back
    than ``own`` seconds a byte by ``MARGIN``; each dataset is priced once per view (one eviction's question). ``excluded``:
    whether it left out any block (the put was kept out by cost, if no victims follow)."""

    def __init__(self, entries: Mapping[Any, int], prices: CostAdmission, own: float, own_dataset: Any) -> None:
        self._entries, self._prices, self._own, self._own_dataset = entries, prices, own, own_dataset
        self._price: dict[tuple, float] = {}
        self.excluded = False

    def _allowed(self, block_id: Any) -> bool:
        dataset_id = getattr(block_id, "dataset_id", None)
        if dataset_id == self._own_dataset:
            return True
        serialized_on_disk = self._prices._serialized_on_disk(self._prices._datasets.get(dataset_id), block_id)
        key = (dataset_id, serialized_on_disk)
        price = self._price.get(key)
        if price is None:
            price = self._price[key] = self._prices.loss_per_byte(dataset_id, serialized_on_disk)
        if price * MARGIN <= self._own:
            return True
        self.excluded = True
        return False

    def __getitem__(self, block_id: Any) -> int:
        if block_id not in self:
            raise KeyError(block_id)
        return self._entries[block_id]

    def __contains__(self, block_id: object) -> bool:
        return block_id in self._entries and self._allowed(block_id)

    def __iter__(self) -> Iterator[Any]:
        return (b for b in list(self._entries) if self._allowed(b))

    def __len__(self) -> int:
        return sum(1 for _ in self)
