"""PySpark's ``StatCounter`` names over strataflow's (``strataflow.statistics``)."""

from __future__ import annotations

from ..statistics import StatCounter as NativeStatCounter

__all__ = ["StatCounter"]


class StatCounter(NativeStatCounter):
    """strataflow's counter with PySpark's method names (``sampleStdev``, ``mergeStats``...)."""

    @classmethod
    def from_native(cls, native: NativeStatCounter) -> "StatCounter":
        out = cls()
        out.__dict__.update(native.__dict__)
        return out

    @property
    def maxValue(self) -> float:
        return self.max_value

    @property
    def minValue(self) -> float:
        return self.min_value

    def mergeStats(self, other: NativeStatCounter) -> "StatCounter":
        return self.merge_stats(other)

    def sampleVariance(self) -> float:
        return self.sample_variance()

    def sampleStdev(self) -> float:
        return self.sample_stdev()

    def asDict(self, sample: bool = False) -> dict[str, float]:
        return self.as_dict(sample)
