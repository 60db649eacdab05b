"""Numeric summaries of a dataset: ``stats``, ``min``/``max``, ``variance``, ``histogram``.

Every partition is summarized where it lives (a :class:`StatCounter`, or a list of bucket
counts) and only the summaries travel to the caller, who merges them in partition order:
one job, no records shipped. The counter merges by Chan et al.'s parallel formula (Spark's
``StatCounter``), so the result does not depend on how the records were partitioned beyond
floating-point rounding. A 1-D numeric ndarray partition is summarized with numpy.
"""

from __future__ import annotations

import bisect
import math
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from strataflow.dataset.actions import EmptyDatasetError
from strataflow.common.batch import iter_rows

__all__ = ["StatCounter", "StatisticsOps"]


class StatCounter:
    """Count, mean, variance numerator, min and max of numbers, mergeable (Spark's
    StatCounter): ``merge`` adds one value, ``merge_stats`` another counter."""

    def __init__(self, values: Iterable[float] | None = None) -> None:
        self.n = 0
        self.mu = 0.0
        self.m2 = 0.0  # sum of squared differences from the mean
        self.max_value = float("-inf")
        self.min_value = float("inf")
        for v in values or ():
            self.merge(v)

    @classmethod
    def of_array(cls, a: np.ndarray) -> "StatCounter":
        """The counter of a 1-D numeric array, computed vectorized.

        >>> StatCounter.of_array(np.array([1, 2, 3, 4])).mean()
        2.5
        """
        out = cls()
        if len(a):
            a = a.astype(np.float64, copy=False)
            out.n = int(a.shape[0])
            out.mu = float(a.mean())
            out.m2 = float(((a - out.mu) ** 2).sum())
            out.max_value = float(a.max())
            out.min_value = float(a.min())
        return out

    def merge(self, value: float) -> "StatCounter":
        """Adds one value (Welford's update); returns this counter.

        >>> StatCounter([1, 2]).merge(6).mean()
        3.0
        """
        delta = value - self.mu
        self.n += 1
        self.mu += delta / self.n
        self.m2 += delta * (value - self.mu)
        self.max_value = max(self.max_value, float(value))
        self.min_value = min(self.min_value, float(value))
        return self

    def merge_stats(self, other: "StatCounter") -> "StatCounter":
        """Adds the values another counter has seen (Chan et al.'s parallel formula); returns
        this counter.

        >>> s = StatCounter([1, 2]).merge_stats(StatCounter([3, 4]))
        >>> s.count(), s.mean(), s.min(), s.max()
        (4, 2.5, 1.0, 4.0)
        """
        if not isinstance(other, StatCounter):
            raise TypeError(f"merge_stats: can only merge a StatCounter, got {type(other).__name__}")
        if other is self:
            other = self.copy()
        if other.n == 0:
            return self
        if self.n == 0:
            self.n, self.mu, self.m2 = other.n, other.mu, other.m2
            self.max_value, self.min_value = other.max_value, other.min_value
            return self
        delta = other.mu - self.mu
        total = self.n + other.n
        if other.n * 10 < self.n:
            self.mu = self.mu + delta * other.n / total
        elif self.n * 10 < other.n:
            self.mu = other.mu - delta * self.n / total
        else:
            self.mu = (self.mu * self.n + other.mu * other.n) / total
        self.m2 += other.m2 + delta * delta * self.n * other.n / total
        self.n = total
        self.max_value = max(self.max_value, other.max_value)
        self.min_value = min(self.min_value, other.min_value)
        return self

    def copy(self) -> "StatCounter":
        """An independent copy: merging into one leaves the other as it was.

        >>> a = StatCounter([1, 2]); b = a.copy().merge(9)
        >>> a.count(), b.count()
        (2, 3)
        """
        out = type(self)()
        out.__dict__.update(self.__dict__)
        return out

    def count(self) -> int:
        """How many values were merged.

        >>> StatCounter([5, 5, 5]).count()
        3
        """
        return int(self.n)

    def mean(self) -> float:
        """The mean of the values (0.0 when empty).

        >>> StatCounter([1, 2, 6]).mean()
        3.0
        """
        return self.mu

    def sum(self) -> float:
        """The sum of the values (count times mean).

        >>> StatCounter([1, 2, 6]).sum()
        9.0
        """
        return self.n * self.mu

    def min(self) -> float:
        """The smallest value; inf when empty.

        >>> StatCounter([3, 9, 4]).min()
        3.0
        """
        return self.min_value

    def max(self) -> float:
        """The largest value; -inf when empty.

        >>> StatCounter([3, 9, 4]).max()
        9.0
        """
        return self.max_value

    def variance(self) -> float:
        """Population variance (divides by n); NaN when empty.

        >>> StatCounter([1, 2, 3, 4]).variance()
        1.25
        """
        return self.m2 / self.n if self.n else float("nan")

    def sample_variance(self) -> float:
        """Sample variance (divides by n - 1, unbiased); NaN for fewer than two values.

        >>> StatCounter([1, 2, 3]).sample_variance(), StatCounter([1]).sample_variance()
        (1.0, nan)
        """
        return self.m2 / (self.n - 1) if self.n > 1 else float("nan")

    def stdev(self) -> float:
        """The population standard deviation (divides by n); NaN when empty.

        >>> StatCounter([2, 4, 4, 4, 5, 5, 7, 9]).stdev()
        2.0
        """
        return math.sqrt(self.variance())

    def sample_stdev(self) -> float:
        """The sample standard deviation (divides by n - 1); NaN for fewer than two values.

        >>> StatCounter([2, 4, 6]).sample_stdev()
        2.0
        """
        return math.sqrt(self.sample_variance())

    def as_dict(self, sample: bool = False) -> dict[str, float]:
        """The figures as a dict. As Spark's ``asDict``, ``stdev`` and ``variance`` are the
        *sample* figures unless ``sample`` is true (Spark's inverted flag, kept).

        >>> StatCounter([1, 2, 3]).as_dict(sample=True)["variance"]  # doctest: +ELLIPSIS
        0.666666...
        """
        return {"count": self.count(), "mean": self.mean(), "sum": self.sum(), "min": self.min(),
                "max": self.max(), "stdev": self.stdev() if sample else self.sample_stdev(),
                "variance": self.variance() if sample else self.sample_variance()}

    def __repr__(self) -> str:
        return (f"(count: {self.count()}, mean: {self.mean()}, stdev: {self.stdev()}, "
                f"max: {self.max()}, min: {self.min()})")


def _partition_stats(value: Any) -> StatCounter:
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "iufb":
        return StatCounter.of_array(value)
    return StatCounter(iter_rows(value))


def _comparable(x: Any) -> bool:
    """Records a histogram can place: not None, not NaN."""
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _even_buckets(lo: Any, hi: Any, n: int) -> tuple[list, Any]:
    """``n`` equal buckets from ``lo`` to ``hi``: integer bounds when they divide evenly."""
    try:
        inc = (hi - lo) / n
    except TypeError:
        raise TypeError("histogram: cannot make buckets of records that are not numbers") from None
    if math.isinf(inc):
        raise ValueError("histogram: cannot make buckets with an infinite value")
    if int(inc) * n == hi - lo:
        inc = int(inc)
    bounds = [i * inc + lo for i in range(n)]
    bounds.append(hi)  # the last bound exactly, whatever the rounding
    return bounds, inc


class StatisticsOps:
    """Numeric actions, a mixin of Dataset."""

    def stats(self) -> StatCounter:
        """Count, mean, population stdev, max and min of the records, in one job.

        >>> s = ctx.parallelize([1, 2, 3, 4]).stats()
        >>> s.count(), s.mean(), s.max(), s.min()
        (4, 2.5, 4.0, 1.0)
        """
        parts = self._run(_partition_stats, description=f"stats {self.label}")
        out = StatCounter()
        for p in parts:
            out.merge_stats(p)
        return out

    def variance(self) -> float:
        """Population variance (divides by n).

        >>> ctx.parallelize([1, 2, 3, 4]).variance()
        1.25
        """
        return self.stats().variance()

    def stdev(self) -> float:
        """Population standard deviation.

        >>> ctx.parallelize([1, 2, 3, 4]).stdev()  # doctest: +ELLIPSIS
        1.118033...
        """
        return self.stats().stdev()

    def sample_variance(self) -> float:
        """Unbiased variance (divides by n - 1).

        >>> ctx.parallelize([1, 2, 3, 4]).sample_variance()  # doctest: +ELLIPSIS
        1.666666...
        """
        return self.stats().sample_variance()

    def sample_stdev(self) -> float:
        """The sample standard deviation (divides by n - 1; ``stdev`` divides by n).

        >>> ctx.parallelize([1, 2, 3, 4]).sample_stdev()  # doctest: +ELLIPSIS
        1.290994...
        """
        return self.stats().sample_stdev()

    def max(self, key: Callable[[Any], Any] | None = None) -> Any:
        """The largest record (by ``key(record)`` when given); ValueError when empty.

        >>> ctx.parallelize([3, 9, 4]).max(), ctx.parallelize(["bb", "a"]).max(key=len)
        (9, 'bb')
        """
        return self._extreme(max, key, "max")

    def min(self, key: Callable[[Any], Any] | None = None) -> Any:
        """The smallest record (by ``key(record)`` when given); ValueError when empty.

        >>> ctx.parallelize([3, 9, 4]).min()
        3
        """
        return self._extreme(min, key, "min")

    def _extreme(self, pick: Callable, key: Callable | None, what: str) -> Any:
        def part(v):
            rows = list(iter_rows(v))
            return [pick(rows, key=key)] if rows else []

        found = [x for p in self._run(part, description=f"{what} {self.label}") for x in p]
        if not found:
            raise EmptyDatasetError(f"{what}: dataset {self.label} is empty")
        return pick(found, key=key)

    def histogram(self, buckets: int | Sequence[Any]) -> tuple[Sequence[Any], list[int]]:
        """Counts of records per bucket, as ``(bounds, counts)``.

        ``buckets`` is either a count (that many equal buckets between the smallest and
        the largest record, found by one more job) or the sorted bounds themselves, e.g.
        ``[1, 10, 20, 50]`` means ``[1, 10) [10, 20) [20, 50]``: every bucket is open on
        the right but the last, which is closed. Records outside the bounds, None and NaN
        are not counted.

        >>> ctx.parallelize([1, 2, 3, 9, 10]).histogram([0, 5, 10])
        ([0, 5, 10], [3, 2])
        """
        if isinstance(buckets, bool) or not isinstance(buckets, (int, list, tuple)):
            raise TypeError(f"histogram: buckets must be a count or a list or tuple of bounds, "
                            f"got {type(buckets).__name__}")
        if isinstance(buckets, int):
            if buckets < 1:
                raise ValueError(f"histogram: the number of buckets must be >= 1, got {buckets}")
            kept = self.filter(_comparable)

            def part(v):
                rows = list(iter_rows(v))
                return [(min(rows), max(rows))] if rows else []

            found = [x for p in kept._run(part, description=f"histogram range {self.label}") for x in p]
            if not found:
                raise ValueError(f"histogram: cannot make buckets for dataset {self.label}: it is empty")
            lo, hi = min(x[0] for x in found), max(x[1] for x in found)
            if lo == hi or buckets == 1:
                return [lo, hi], [kept.count()]
            bounds, inc = _even_buckets(lo, hi, buckets)
            even = True
        else:
            bounds = buckets
            if len(bounds) < 2:
                raise ValueError("histogram: buckets need at least two bounds")
            if any(not _comparable(b) for b in bounds):
                raise ValueError("histogram: bounds cannot be None or NaN")
            if sorted(bounds) != list(bounds):
                raise ValueError(f"histogram: bounds must be sorted, got {bounds!r}")
            if len(set(bounds)) != len(bounds):
                raise ValueError(f"histogram: bounds must not repeat, got {bounds!r}")
            lo, hi = bounds[0], bounds[-1]
            even, inc = False, None
            try:
                steps = [bounds[i + 1] - bounds[i] for i in range(len(bounds) - 1)]
            except TypeError:
                pass  # bounds that do not subtract (strings): placed by bisection
            else:
                if max(steps) - min(steps) < 1e-10:
                    even, inc = True, (hi - lo) / (len(bounds) - 1)
        width = len(bounds) - 1

        def count(v):
            counts = [0] * (width + 1)
            for x in iter_rows(v):
                if not _comparable(x) or x > hi or x < lo:
                    continue
                counts[int((x - lo) / inc) if even else bisect.bisect_right(bounds, x) - 1] += 1
            last = counts.pop()
            counts[-1] += last  # the last bucket is closed: its upper bound counts
            return counts

        totals = [0] * width
        for part_counts in self._run(count, description=f"histogram {self.label}"):
            totals = [a + b for a, b in zip(totals, part_counts)]
        return bounds, totals
