"""PySpark's names for accumulators: ``AccumulatorParam`` with ``zero`` and
``addInPlace`` over strataflow's (``strataflow/accumulators.py``, snake_case)."""

from __future__ import annotations

from typing import TypeVar

from .. import accumulators as _native
from ..accumulators import Accumulator

__all__ = ["Accumulator", "AccumulatorParam"]

T = TypeVar("T")


class AccumulatorParam(_native.AccumulatorParam[T]):
    """Subclass it with ``zero(value)`` and ``addInPlace(value1, value2)``, as in PySpark."""

    def zero(self, value: T) -> T:
        raise NotImplementedError

    def addInPlace(self, value1: T, value2: T) -> T:  # noqa: N802 - PySpark's name
        raise NotImplementedError

    def add_in_place(self, value1: T, value2: T) -> T:
        return self.addInPlace(value1, value2)
