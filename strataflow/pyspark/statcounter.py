"""PySpark's ``StatCounter`` names over strataflow's (``strataflow.dataset.statistics``)."""

from __future__ import annotations

from strataflow.dataset.statistics import StatCounter as NativeStatCounter

__all__ = ["StatCounter"]


class StatCounter(NativeStatCounter):
    """strataflow's counter with PySpark's method names (``sampleStdev``, ``mergeStats``...)."""

    @classmethod
    def from_native(cls, native: NativeStatCounter) -> "StatCounter":
        """A copy of a strataflow counter (``Dataset.stats()``'s) with PySpark's names.

        >>> StatCounter.from_native(ctx.parallelize([1, 2, 3]).stats()).sampleStdev()
        1.0
        """
        out = cls()
        out.__dict__.update(native.__dict__)
        return out

    @property
    def maxValue(self) -> float:
        """The largest value (``max()``); -inf when empty.

        >>> StatCounter([3, 9, 4]).maxValue
        9.0
        """
        return self.max_value

    @property
    def minValue(self) -> float:
        """The smallest value (``min()``); inf when empty.

        >>> StatCounter([3, 9, 4]).minValue
        3.0
        """
        return self.min_value

    def mergeStats(self, other: NativeStatCounter) -> "StatCounter":
        """Adds the values another counter has seen (``merge_stats``); returns this one.

        >>> StatCounter([1, 2]).mergeStats(StatCounter([3, 4])).mean()
        2.5
        """
        return self.merge_stats(other)

    def sampleVariance(self) -> float:
        """The sample variance (divides by n - 1; ``variance()`` divides by n).

        >>> StatCounter([1, 2, 3]).sampleVariance()
        1.0
        """
        return self.sample_variance()

    def sampleStdev(self) -> float:
        """The sample standard deviation (divides by n - 1; ``stdev()`` divides by n).

        >>> StatCounter([2, 4, 6]).sampleStdev()
        2.0
        """
        return self.sample_stdev()

    def asDict(self, sample: bool = False) -> dict[str, float]:
        """The figures as a dict (``as_dict``: ``stdev`` and ``variance`` are the sample ones
        unless ``sample`` is true, Spark's inverted flag).

        >>> StatCounter([1, 2, 3]).asDict()
        {'count': 3, 'mean': 2.0, 'sum': 6.0, 'min': 1.0, 'max': 3.0, 'stdev': 1.0, 'variance': 1.0}
        """
        return self.as_dict(sample)
