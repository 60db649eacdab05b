"""Approximate actions: ``count_approx``, ``sum_approx``, ``mean_approx`` and
``count_approx_distinct``.

strataflow has no partial-result jobs, so the first three run the job to the end and
return the exact figure (Spark returns what it has when ``timeout`` passes: an exact figure
is within any bound it would give). ``count_approx_distinct`` is truly approximate: each
partition fills a HyperLogLog sketch of ``2**p`` one-byte registers, the sketches are merged
by maximum on the caller, so memory stays small whatever the number of distinct records.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from strataflow.common.batch import iter_rows
from strataflow.shuffle.partitioner import portable_hash

__all__ = ["ApproxOps", "BoundedFloat", "hll_registers", "hll_estimate"]

_MASK64 = (1 << 64) - 1


class BoundedFloat(float):
    """A float with the confidence and bounds of an approximation (PySpark's); strataflow's
    approximate actions are exact, so ``low`` and ``high`` equal the value.

    >>> total = ctx.parallelize([1, 2, 3]).sum_approx(timeout=1000)
    >>> total, total.confidence, total.low, total.high
    (6.0, 0.95, 6.0, 6.0)
    """

    confidence: float
    low: float
    high: float

    def __new__(cls, mean: float, confidence: float, low: float, high: float) -> "BoundedFloat":
        obj = float.__new__(cls, mean)
        obj.confidence, obj.low, obj.high = confidence, low, high
        return obj

    def __reduce__(self):
        return BoundedFloat, (float(self), self.confidence, self.low, self.high)


def _mix64(x: int) -> int:
    """splitmix64's finalizer: spreads an integer hash over all 64 bits."""
    x &= _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _hash64(x: Any) -> int:
    """A 64-bit hash, equal in every process (strings and bytes by BLAKE2b, since
    ``portable_hash`` gives them only 32 bits)."""
    if isinstance(x, str):
        x = x.encode("utf-8", "surrogatepass")
    if isinstance(x, (bytes, bytearray, memoryview)):
        return int.from_bytes(hashlib.blake2b(x, digest_size=8).digest(), "little")
    return _mix64(portable_hash(x))


def _precision(relative_sd: float) -> int:
    if not 0.000017 <= relative_sd:
        raise ValueError(f"count_approx_distinct: relative_sd must be >= 0.000017, got {relative_sd}")
    return max(4, math.ceil(2.0 * math.log2(1.054 / relative_sd)))


def hll_registers(values, p: int) -> bytearray:
    """The HyperLogLog registers of ``values``: register ``h >> (64 - p)`` keeps the
    largest rank (leading zeros + 1) of the remaining bits seen."""
    regs = bytearray(1 << p)
    rest = 64 - p
    low_mask = (1 << rest) - 1
    for x in values:
        h = _hash64(x)
        w = h & low_mask
        rank = rest - w.bit_length() + 1
        j = h >> rest
        if rank > regs[j]:
            regs[j] = rank
    return regs


def hll_estimate(regs: bytearray) -> int:
    """The distinct count the registers estimate, with linear counting for small counts."""
    m = len(regs)
    alpha = {16: 0.673, 32: 0.697, 64: 0.709}.get(m, 0.7213 / (1 + 1.079 / m))
    est = alpha * m * m / sum(2.0 ** -r for r in regs)
    zeros = regs.count(0)
    if est <= 2.5 * m and zeros:
        est = m * math.log(m / zeros)
    return int(round(est))


class ApproxOps:
    """Approximate actions, a mixin of Dataset."""

    def count_approx(self, timeout: int, confidence: float = 0.95) -> int:
        """The record count (exact: see the module's note). ``timeout`` (ms) and
        ``confidence`` are checked and otherwise unused.

        >>> ctx.parallelize(range(100), 4).count_approx(timeout=1000)
        100
        """
        _check_confidence(confidence, "count_approx")
        return self.count()

    def sum_approx(self, timeout: int, confidence: float = 0.95) -> BoundedFloat:
        """The sum of the records as a :class:`BoundedFloat` (exact: low == high).

        >>> ctx.parallelize([1, 2, 3]).sum_approx(timeout=1000)
        6.0
        """
        _check_confidence(confidence, "sum_approx")
        s = float(self.sum())
        return BoundedFloat(s, confidence, s, s)

    def mean_approx(self, timeout: int, confidence: float = 0.95) -> BoundedFloat:
        """The mean of the records as a :class:`BoundedFloat` (exact: low == high).

        >>> ctx.parallelize([1, 2, 3, 4]).mean_approx(timeout=1000)
        2.5
        """
        _check_confidence(confidence, "mean_approx")
        m = float(self.mean())
        return BoundedFloat(m, confidence, m, m)

    def count_approx_distinct(self, relative_sd: float = 0.05) -> int:
        """About how many distinct records there are, within ``relative_sd`` (relative
        standard deviation) of the truth, by HyperLogLog (2**p registers, p from
        ``relative_sd``: 512 bytes per partition at the default).

        >>> 900 < ctx.parallelize([i % 1000 for i in range(5000)], 4).count_approx_distinct() < 1100
        True
        """
        p = _precision(relative_sd)
        parts = self._run(lambda v: hll_registers(iter_rows(v), p), description=f"count_approx_distinct {self.label}")
        merged = bytearray(1 << p)
        for regs in parts:
            merged = bytearray(map(max, merged, regs))
        return hll_estimate(merged)


def _check_confidence(confidence: float, what: str) -> None:
    if not 0.0 <= confidence <= 1.0:
        raise ValueError(f"{what}: confidence must be in [0, 1], got {confidence}")
