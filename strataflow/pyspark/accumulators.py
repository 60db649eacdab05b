"""PySpark's names for accumulators: ``AccumulatorParam`` with ``zero`` and
``addInPlace`` over strataflow's (``strataflow/shipping/accumulators.py``, snake_case)."""

from __future__ import annotations

from typing import TypeVar

from strataflow.shipping import accumulators as _native
from strataflow.shipping.accumulators import Accumulator

__all__ = ["Accumulator", "AccumulatorParam"]

T = TypeVar("T")


class AccumulatorParam(_native.AccumulatorParam[T]):
    """Subclass it with ``zero(value)`` and ``addInPlace(value1, value2)``, as in PySpark."""

    def zero(self, value: T) -> T:
        """The identity to start a task's updates from, for values like ``value`` (override it).

        >>> class Concat(AccumulatorParam):
        ...     def zero(self, value): return []
        ...     def addInPlace(self, value1, value2): return value1 + value2
        >>> seen = sc.accumulator([], Concat())
        >>> sc.parallelize(["a", "b"], 2).foreach(lambda x: seen.add([x]))
        >>> sorted(seen.value)
        ['a', 'b']
        """
        raise NotImplementedError

    def addInPlace(self, value1: T, value2: T) -> T:  # noqa: N802 - PySpark's name
        """Combines two values, returning the result (it may update ``value1``); override it.

        >>> class Maximum(AccumulatorParam):
        ...     def zero(self, value): return float("-inf")
        ...     def addInPlace(self, value1, value2): return max(value1, value2)
        >>> top = sc.accumulator(float("-inf"), Maximum())
        >>> sc.parallelize([3, 9, 4], 3).foreach(top.add)
        >>> top.value
        9
        """
        raise NotImplementedError

    def add_in_place(self, value1: T, value2: T) -> T:
        """strataflow's name, which the engine calls: ``addInPlace`` (override that one).

        >>> class Maximum(AccumulatorParam):
        ...     def zero(self, value): return 0
        ...     def addInPlace(self, value1, value2): return max(value1, value2)
        >>> Maximum().add_in_place(3, 9)
        9
        """
        return self.addInPlace(value1, value2)
