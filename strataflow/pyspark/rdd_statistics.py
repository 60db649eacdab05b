"""``RDD``'s numeric summaries: ``sum``, ``mean``, ``max``/``min``, ``stats`` and the
variances, ``histogram`` and the approximate counts and sums.

A mixin of :class:`~strataflow.pyspark.rdd.RDD`, apart because these are the actions that
compute over numbers (a StatCounter with PySpark's method names, BoundedFloats) rather
than return the records.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence, TypeVar

from strataflow.dataset.approximate import BoundedFloat
from strataflow.pyspark.statcounter import StatCounter
from strataflow.pyspark.rdd_group import RDDGroup


T = TypeVar("T")


class RDDStatistics(RDDGroup[T]):
    """Numeric summaries of the records (a mixin of ``RDD``)."""

    def sum(self) -> Any:
        """The sum of the records (0 when empty).

        >>> sc.parallelize(range(5)).sum()
        10
        """
        return self.dataset.sum()

    def mean(self) -> float:
        """The arithmetic mean of the records; 0.0 when empty, as PySpark's (its ``stats().mean()``).

        >>> sc.parallelize([1, 2, 3, 4]).mean()
        2.5
        >>> sc.parallelize([]).mean()
        0.0
        """
        value = self.dataset.mean()
        return 0.0 if math.isnan(value) and self.dataset.is_empty() else value

    def max(self, key: Callable[[T], Any] | None = None) -> T:
        """The largest record (by ``key(record)`` when given).

        >>> sc.parallelize([3, 9, 4]).max(), sc.parallelize(["bb", "a"]).max(key=len)
        (9, 'bb')
        """
        return self.dataset.max(key)

    def min(self, key: Callable[[T], Any] | None = None) -> T:
        """The smallest record (by ``key(record)`` when given).

        >>> sc.parallelize([3, 9, 4]).min()
        3
        """
        return self.dataset.min(key)

    def stats(self) -> StatCounter:
        """Count, mean, stdev, max and min of the records in one job, as a StatCounter.

        >>> sc.parallelize([1, 2, 3, 4]).stats()  # doctest: +ELLIPSIS
        (count: 4, mean: 2.5, stdev: 1.118..., max: 4.0, min: 1.0)
        """
        return StatCounter.from_native(self.dataset.stats())

    def variance(self) -> float:
        """The population variance (divides by n).

        >>> sc.parallelize([1, 2, 3, 4]).variance()
        1.25
        """
        return self.dataset.variance()

    def stdev(self) -> float:
        """The population standard deviation (divides by n).

        >>> sc.parallelize([1, 2, 3, 4]).stdev()  # doctest: +ELLIPSIS
        1.118033...
        """
        return self.dataset.stdev()

    def sampleVariance(self) -> float:
        """The sample variance (divides by n - 1).

        >>> sc.parallelize([1, 2, 3, 4]).sampleVariance()  # doctest: +ELLIPSIS
        1.666666...
        """
        return self.dataset.sample_variance()

    def sampleStdev(self) -> float:
        """The sample standard deviation (divides by n - 1).

        >>> sc.parallelize([1, 2, 3, 4]).sampleStdev()  # doctest: +ELLIPSIS
        1.290994...
        """
        return self.dataset.sample_stdev()

    def histogram(self, buckets: int | Sequence[Any]) -> tuple[Sequence[Any], list[int]]:
        """Counts per bucket as ``(bounds, counts)``; ``buckets`` is a count of even buckets or the
        sorted bounds.

        >>> sc.parallelize([1, 2, 3, 9, 10]).histogram([0, 5, 10])
        ([0, 5, 10], [3, 2])
        """
        return self.dataset.histogram(buckets)

    def countApprox(self, timeout: int, confidence: float = 0.95) -> int:
        """The record count (exact here: strataflow waits for every task; ``timeout`` in ms is checked
        and unused).

        >>> sc.parallelize(range(100), 4).countApprox(1000)
        100
        """
        return self.dataset.count_approx(timeout, confidence)

    def sumApprox(self, timeout: int, confidence: float = 0.95) -> BoundedFloat:
        """The sum as a BoundedFloat (exact here: low == high).

        >>> sc.parallelize([1, 2, 3]).sumApprox(1000)
        6.0
        """
        return self.dataset.sum_approx(timeout, confidence)

    def meanApprox(self, timeout: int, confidence: float = 0.95) -> BoundedFloat:
        """The mean as a BoundedFloat (exact here: low == high).

        >>> sc.parallelize([1, 2, 3, 4]).meanApprox(1000)
        2.5
        """
        return self.dataset.mean_approx(timeout, confidence)

    def countApproxDistinct(self, relativeSD: float = 0.05) -> int:
        """About how many distinct records there are, within ``relativeSD``, by HyperLogLog.

        >>> 900 < sc.parallelize([i % 1000 for i in range(5000)], 4).countApproxDistinct() < 1100
        True
        """
        return self.dataset.count_approx_distinct(relativeSD)
