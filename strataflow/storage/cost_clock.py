"""Where the seconds that AUTO and the memory split weigh come from: the wall clock, or
costs declared in advance (a test seam).

Why: AUTO's choices (``auto_level.py``) and the memory split's moves (``storage/memory/split.py``)
rest on seconds the block manager times: a block's compute time, a disk write's, a read's.
That is what they are for on a real job. But it makes a test that asserts a choice depend
on the machine's load: on a busy machine a write of a cheap dataset's victim can take
longer than usual, or its recomputation can, and the choice flips. So every timing the cost
model uses is taken through a ``CostClock``:

- :class:`MeasuredClock` (always, unless the seam below is set): ``time.perf_counter``;
- :class:`DeclaredCosts`: no clock at all. A task declares what its computation costs
  with :func:`spend` (instead of doing work or sleeping), and a disk write or read of
  ``n`` bytes costs ``n`` at the bandwidth declared for its form (``serialized``:
  serialize and write to a tier / read and deserialize; ``mapped``: write in the mapped
  layout / read a mapped block's pages again). Nothing else costs anything: the same job
  gives the same seconds, so the same choices, on an idle machine and a busy one.

The seam is the environment variable ``STRATAFLOW_DECLARED_COSTS``, read when a block
manager is built (so executor processes, which inherit the driver's environment, see it
too): JSON mapping each form to its ``[write, read]`` bandwidth in MB/s, e.g.
``{"serialized": [100, 200], "mapped": [400, 1000]}``. It is meant for tests (and for
reproducing a choice seen elsewhere); it is not a Context option because a job has no use
for costs that are not its own.
"""

from __future__ import annotations

import json
import os
import threading
import time
from abc import ABC, abstractmethod
from typing import Mapping

__all__ = ["CostClock", "MeasuredClock", "DeclaredCosts", "ENV", "from_environment", "spend"]

ENV = "STRATAFLOW_DECLARED_COSTS"
MB = 1 << 20
FORMS = ("serialized", "mapped")

_thread = threading.local()  # each task thread's declared seconds so far


def spend(seconds: float) -> None:
    """The calling task's computation costs ``seconds`` more (under declared costs: its
    thread's clock moves on by that much; under the measured clock this does nothing, and
    the task's own running time is what counts)."""
    if seconds < 0:
        raise ValueError(f"spend: seconds must be >= 0, got {seconds!r}")
    _thread.now = getattr(_thread, "now", 0.0) + seconds


class CostClock(ABC):
    """Reads the seconds the cost model uses. ``now()`` brackets a computation (its
    difference is the computation's cost, parents' reads included); ``io()`` gives the cost
    of one disk write or read, given what the wall clock measured."""

    declared = False

    @abstractmethod
    def now(self) -> float:
        """Seconds on this clock."""

    @abstractmethod
    def io(self, form: str, op: str, nbytes: int, measured_s: float) -> float:
        """The cost of one disk ``op`` (write or read) of ``nbytes`` in ``form``."""


class MeasuredClock(CostClock):
    """The wall clock: what the block manager timed is what it weighs."""

    def now(self) -> float:
        return time.perf_counter()

    def io(self, form: str, op: str, nbytes: int, measured_s: float) -> float:
        return measured_s


class DeclaredCosts(CostClock):
    """Costs declared in advance: a computation costs what its tasks :func:`spend`, a write
    or read ``nbytes`` at its form's declared bandwidth (which the calling thread's clock
    also moves by, so a computation that reads its parent from disk pays for the read)."""

    declared = True

    def __init__(self, mb_per_s: Mapping[str, tuple[float, float]]) -> None:
        #: seconds per byte of (write, read), per form
        self.per_byte = {form: (1 / (w * MB), 1 / (r * MB)) for form, (w, r) in mb_per_s.items()}

    def now(self) -> float:
        return getattr(_thread, "now", 0.0)

    def io(self, form: str, op: str, nbytes: int, measured_s: float) -> float:
        seconds = max(0, nbytes) * self.per_byte[form][0 if op == "write" else 1]
        spend(seconds)
        return seconds


def parse(text: str) -> DeclaredCosts:
    """``STRATAFLOW_DECLARED_COSTS``'s value; a ValueError names the variable and what is wrong."""
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict) or sorted(raw) != sorted(FORMS):
            raise ValueError(f"expected an object with exactly the forms {', '.join(FORMS)}")
        rates = {}
        for form, pair in raw.items():
            write, read = (float(v) for v in pair)
            if not (write > 0 and read > 0):
                raise ValueError(f"{form}: bandwidths must be > 0 MB/s, got {pair!r}")
            rates[form] = (write, read)
    except (TypeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise ValueError(f"{ENV}={text!r}: {exc} (e.g. '{{\"serialized\": [100, 200], "
                         f"\"mapped\": [400, 1000]}}': [write, read] MB/s per form)") from None
    return DeclaredCosts(rates)


def from_environment() -> CostClock:
    """The declared costs when ``STRATAFLOW_DECLARED_COSTS`` is set, else the wall clock."""
    text = os.environ.get(ENV)
    return MeasuredClock() if not text else parse(text)
