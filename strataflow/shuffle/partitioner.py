"""Partitioners: which reduce partition a key goes to, and which partitioner a shuffle
given no partition count uses (``default_partitioner``, Spark's rule).

``portable_hash`` (``key_hash.py``) is equal for equal keys in every process (Python's own
``hash`` of a string, a date or an Enum is salted per process, which would send one key to
different partitions in different worker processes), and the vectorized form for integer
key columns gives exactly the partition the scalar form gives, so a batch and a list of
records co-partition.
"""

from __future__ import annotations

import abc
import bisect
import math
import sys
from typing import Any, Sequence

import numpy as np

from strataflow.shuffle.key_hash import UnportableKeyError, is_portable, portable_hash

__all__ = ["portable_hash", "is_portable", "UnportableKeyError", "Partitioner", "HashPartitioner", "RangePartitioner", "default_partitioner"]

_MASK = sys.maxsize
_MODULUS = (1 << 61) - 1  # CPython's hash modulus for integers on 64-bit builds


def hash_int_array(keys: np.ndarray) -> np.ndarray:
    """``portable_hash`` of each element of an integer array, vectorized (CPython's rule:
    ``hash(k) == sign(k) * (|k| mod (2**61 - 1))`` with -1 mapped to -2)."""
    if keys.dtype.kind == "u":  # uint64 above 2**63 would wrap negative as int64: reduce first
        return (keys.astype(np.uint64, copy=False) % np.uint64(_MODULUS)).astype(np.int64)
    k = keys.astype(np.int64, copy=False)
    if k.size and k.min() >= 0 and k.max() < _MODULUS:  # the common case: hash(k) is k itself
        return k
    res = k % _MODULUS  # floor modulo: in [0, M) for every k, no overflow (unlike abs)
    mag = np.where(k < 0, (_MODULUS - res) % _MODULUS, res)  # |k| mod M
    h = np.where(k < 0, -mag, mag)
    h[h == -1] = -2
    return h


class Partitioner(abc.ABC):
    num_partitions: int

    @abc.abstractmethod
    def partition(self, key: Any) -> int:
        """The partition, in ``range(num_partitions)``, that ``key`` belongs to."""

    def partition_array(self, keys: np.ndarray) -> np.ndarray | None:
        """Partition of each key of an array, or None when it cannot be vectorized."""
        return None

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.num_partitions))


class HashPartitioner(Partitioner):
    """``portable_hash(key) % n``, optionally through a user ``partition_func``."""

    def __init__(self, num_partitions: int, partition_func=None):
        self.num_partitions = num_partitions
        self.partition_func = partition_func

    def partition(self, key: Any) -> int:
        h = (self.partition_func or portable_hash)(key)
        return h % self.num_partitions

    def partition_array(self, keys: np.ndarray) -> np.ndarray | None:
        if self.partition_func is not None or keys.dtype.kind not in "iub":
            return None
        return hash_int_array(keys) % self.num_partitions

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, HashPartitioner)
            and other.num_partitions == self.num_partitions
            and other.partition_func is self.partition_func
        )

    __hash__ = Partitioner.__hash__


class RangePartitioner(Partitioner):
    """Keys ``<= bounds[i]`` (and above ``bounds[i-1]``) go to partition ``i``; equal keys
    always land together, so ties never straddle partitions."""

    def __init__(self, bounds: Sequence[Any], ascending: bool = True, key_func=None):
        self.bounds = list(bounds)
        self.ascending = ascending
        self.key_func = key_func
        self.num_partitions = len(self.bounds) + 1

    @classmethod
    def from_sample(cls, sample: list, num_partitions: int, ascending: bool = True,
                    key_func=None) -> "RangePartitioner":
        """Bounds cut from a sample of (already ``key_func``-mapped) keys."""
        sample = sorted(sample)
        if num_partitions <= 1 or not sample:
            return cls([], ascending, key_func)
        bounds: list = []
        for i in range(1, num_partitions):
            b = sample[min(len(sample) - 1, (i * len(sample)) // num_partitions)]
            if not bounds or b > bounds[-1]:
                bounds.append(b)
        return cls(bounds, ascending, key_func)

    def partition(self, key: Any) -> int:
        p = bisect.bisect_left(self.bounds, self.key_func(key) if self.key_func else key)
        return p if self.ascending else self.num_partitions - 1 - p

    def partition_array(self, keys: np.ndarray) -> np.ndarray | None:
        if self.key_func is not None or keys.dtype.kind not in "iufUSb" or keys.ndim != 1:
            return None
        # Bounds come from every partition's keys, so this batch's dtype may not hold them
        # (int8 keys, bound -200; int keys, bound 1.5): then place the keys one by one.
        try:
            with np.errstate(all="ignore"):
                bounds = np.asarray(self.bounds, dtype=keys.dtype if keys.dtype.kind != "b" else None)
        except (TypeError, ValueError, OverflowError):
            return None
        if bounds.tolist() != list(self.bounds):
            return None
        p = np.searchsorted(bounds, keys, side="left") if len(bounds) else np.zeros(len(keys), np.int64)
        return p if self.ascending else self.num_partitions - 1 - p


def default_partitioner(inputs: Sequence[Any], default_num: int | None) -> Partitioner:
    """The partitioner of a cogroup-like shuffle of ``inputs`` (datasets: anything with
    ``num_partitions`` and ``partitioner``) called without a partition count: Spark's
    ``Partitioner.defaultPartitioner``.

    The partition count is ``default_num`` (``spark.default.parallelism``) when set, else
    the largest input's, the least likely to run a reduce task out of memory. An input's
    existing partitioner (that of the input with the most partitions among those that have
    one) is kept instead when it is not an order of magnitude smaller than the largest
    input, or when it has at least the default count of partitions: keeping it spares that
    input a shuffle, and a join of a partitioned dataset stays partitioned alike.
    """
    if not inputs:
        raise ValueError("default_partitioner: give at least one dataset")
    largest = max(ds.num_partitions for ds in inputs)
    n = largest if default_num is None else default_num
    partitioned = [ds for ds in inputs if ds.partitioner is not None and ds.partitioner.num_partitions > 0]
    if partitioned:
        best = max(partitioned, key=lambda ds: ds.num_partitions)  # the first of the largest, as Spark's maxBy
        within_tenfold = math.log10(largest) - math.log10(best.num_partitions) < 1
        if within_tenfold or n <= best.num_partitions:
            return best.partitioner
    return HashPartitioner(n)
