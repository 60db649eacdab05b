"""Random samples of a dataset: ``take_sample``, ``random_split``, ``sample_by_key``.

Every random choice is made where the partition is, from a generator seeded by ``(seed,
partition index)``, so a sample is the same whenever a partition is computed again (a
lost block recomputed from lineage, or the several datasets of one ``random_split``, each
reading the same partition and keeping its own share of the same draws: the splits are
disjoint and together hold every record exactly once).
"""

from __future__ import annotations

import math
import random
import sys
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from strataflow.common.batch import iter_rows, num_rows, take_rows
from strataflow.lineage import MapPartitionsNode
from strataflow.common.checks import ConfigError, physical_memory

if TYPE_CHECKING:
    from strataflow.dataset import Dataset

__all__ = ["SamplingOps", "MissingFractionError", "fraction_for_sample_size"]

_SEED_RANGE = 1 << 62


def _seed(seed: int | None) -> int:
    """A non-negative seed for numpy's SeedSequence (a new random one for None)."""
    return random.randrange(_SEED_RANGE) if seed is None else int(seed) % _SEED_RANGE


class MissingFractionError(KeyError):
    """``sample_by_key`` met a key its ``fractions`` do not name: every attempt would
    fail the same way, so the task is not retried."""

    retryable = False


def _most_sample_rows() -> int:
    """The largest sample with replacement the driver could hold: a list slot is 8 bytes."""
    return physical_memory() // 8


def fraction_for_sample_size(num: int, total: int, with_replacement: bool) -> float:
    """The sampling fraction that yields at least ``num`` of ``total`` records with
    probability about 0.9999 (Spark's ``SamplingUtils.computeFractionForSampleSize``), so
    ``take_sample`` rarely needs a second pass."""
    fraction = num / total
    if with_replacement:
        stdevs = 9 if num < 12 else 5
        return fraction + stdevs * math.sqrt(fraction / total)
    gamma = -math.log(0.00005) / total
    return min(1.0, max(1e-10, fraction + gamma + math.sqrt(gamma * gamma + 2 * gamma * fraction)))


class SamplingOps:
    """Sampling transformations and actions, a mixin of Dataset."""

    def take_sample(self, with_replacement: bool, num: int, seed: int | None = None) -> list:
        """``num`` records drawn at random (fewer only when sampling without replacement
        from a smaller dataset), in random order; reproducible for a seed. Counts the
        dataset first, then samples with a fraction chosen to overshoot, as Spark does.

        >>> picked = ctx.parallelize(range(10)).take_sample(False, 3, seed=1)
        >>> len(picked), len(set(picked)), all(0 <= x < 10 for x in picked)
        (3, 3, True)
        """
        if not isinstance(num, int) or isinstance(num, bool):
            raise TypeError(f"take_sample: num must be an int, got {type(num).__name__}")
        if num < 0:
            raise ValueError(f"take_sample: num must be >= 0, got {num}")
        if num > sys.maxsize - int(10 * math.sqrt(sys.maxsize)):
            raise ValueError(f"take_sample: sample size cannot be greater than "
                             f"{sys.maxsize - int(10 * math.sqrt(sys.maxsize))}, got num={num}")
        if with_replacement and num > _most_sample_rows():
            raise ConfigError(f"take_sample: num={num:,} records drawn with replacement is above the bound of "
                              f"{_most_sample_rows():,} (this machine's physical memory / 8 bytes, the least a "
                              f"record of the result list holds): the driver could not hold the sample")
        if num == 0:
            return []
        total = self.count()
        if total == 0:
            return []
        rng = random.Random(seed)
        if not with_replacement and num >= total:
            rows = self.collect()
            rng.shuffle(rows)
            return rows
        fraction = fraction_for_sample_size(num, total, with_replacement)
        rows = self.sample(with_replacement, fraction, rng.randrange(_SEED_RANGE)).collect()
        while len(rows) < num:  # rare by the fraction's choice: draw again with a new seed
            rows = self.sample(with_replacement, fraction, rng.randrange(_SEED_RANGE)).collect()
        rng.shuffle(rows)
        return rows[:num]

    def random_split(self, weights: Sequence[float], seed: int | None = None) -> list["Dataset"]:
        """Datasets that split the records at random in proportion to ``weights``
        (normalized to sum 1): disjoint, and together every record once.

        >>> parts = ctx.parallelize(range(100)).random_split([0.5, 0.5], seed=1)
        >>> sorted(parts[0].collect() + parts[1].collect()) == list(range(100))
        True
        """
        if not weights or any(w < 0 for w in weights):
            raise ValueError(f"random_split: weights must be non-negative numbers, got {list(weights)!r}")
        s = float(sum(weights))
        if s <= 0:
            raise ValueError(f"random_split: the weights must not all be zero, got {list(weights)!r}")
        cum = [0.0]
        for w in weights:
            cum.append(cum[-1] + w / s)
        cum[-1] = 1.0 + 1e-12  # a draw of exactly 1 - epsilon always lands in the last split
        base = _seed(seed)

        def split(lo: float, hi: float):
            def keep(i, v):
                u = np.random.default_rng([base, i]).random(num_rows(v))
                return take_rows(v, np.flatnonzero((u >= lo) & (u < hi)))

            return keep

        return [self._derive(MapPartitionsNode(self, split(cum[j], cum[j + 1]), True), "random_split")
                for j in range(len(weights))]

    def sample_by_key(self, with_replacement: bool, fractions: Mapping[Any, float],
                      seed: int | None = None) -> "Dataset":
        """A sample of pair records keeping each key's own fraction (stratified
        sampling): ``fractions[key]`` is the probability to keep a record without
        replacement, or the expected number of copies with it. Every key in the data
        must be in ``fractions``.

        >>> pairs = ctx.parallelize([("keep", i) for i in range(5)] + [("drop", i) for i in range(5)])
        >>> pairs.sample_by_key(False, {"keep": 1.0, "drop": 0.0}, seed=1).count_by_key()
        {'keep': 5}
        """
        for k, f in fractions.items():
            if f < 0:
                raise ValueError(f"sample_by_key: fraction of key {k!r} must be >= 0, got {f}")
        fractions = dict(fractions)
        base = _seed(seed)

        def pick(i, v):
            rng = np.random.default_rng([base, i])
            out = []
            for kv in iter_rows(v):
                try:
                    f = fractions[kv[0]]
                except KeyError:
                    raise MissingFractionError(f"sample_by_key: no fraction for key {kv[0]!r}") from None
                if with_replacement:
                    out.extend([kv] * int(rng.poisson(f)))
                elif rng.random() < f:
                    out.append(kv)
            return out

        return self._derive(MapPartitionsNode(self, pick, True), "sample_by_key")
