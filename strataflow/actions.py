"""Actions: the operations that run a job and bring a result to the caller.

Partial results are combined in partition order on the caller's side, so ``reduce``,
``fold`` and ``aggregate`` are deterministic even for operations that are not
commutative. Batches take fast paths where the answer is the same (``count`` is the row
count, ``sum`` of an ndarray partition is ``a.sum(axis=0)``).
"""

from __future__ import annotations

import copy
import functools
import math
import operator
import os
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .batch import iter_rows, num_rows, rows_list

if TYPE_CHECKING:
    from .dataset import Dataset

__all__ = ["ActionOps"]

class _Empty:
    """The result of an empty partition's reduce: one object in every process, since it
    comes back from executors pickled (``object()`` would not survive the trip)."""

    def __reduce__(self):
        return "_EMPTY"

    def __repr__(self) -> str:
        return "<empty partition>"


_EMPTY = _Empty()


def _fold_rows(value, zero, op):
    acc = zero
    for x in iter_rows(value):
        acc = op(acc, x)
    return acc


class ActionOps:
    def _run(self, func: Callable[[Any], Any], partitions=None, description: str | None = None) -> list:
        return self.ctx.scheduler.run_job(self, lambda tc, v: func(v), partitions,
                                          description or f"{func.__name__ if hasattr(func, '__name__') else 'job'}")

    # -- bringing records back --------------------------------------------------------------
    def collect(self) -> list:
        """Every record, in partition order."""
        out: list = []
        for part in self._run(rows_list, description=f"collect {self.label}"):
            out.extend(part)
        return out

    def collect_partitions(self) -> list:
        """Each partition's value as it is (a list or a batch), in partition order."""
        return self._run(lambda v: v, description=f"collect_partitions {self.label}")

    def count(self) -> int:
        return sum(self._run(num_rows, description=f"count {self.label}"))

    def take(self, num: int) -> list:
        """The first ``num`` records, scanning one partition first and then four times as
        many at each round, as Spark does, so ``take`` on a huge dataset stays cheap."""
        if num <= 0:
            return []
        out: list = []
        scanned, total, batch = 0, self.num_partitions, 1
        while len(out) < num and scanned < total:
            parts = list(range(scanned, min(total, scanned + batch)))
            need = num - len(out)
            for rows in self._run(lambda v, need=need: rows_list(v)[:need], parts, f"take {self.label}"):
                out.extend(rows)
            scanned += len(parts)
            batch *= 4
        return out[:num]

    def first(self) -> Any:
        rows = self.take(1)
        if not rows:
            raise ValueError(f"first: dataset {self.label} is empty")
        return rows[0]

    def foreach(self, f: Callable[[Any], None]) -> None:
        def run(v):
            for x in iter_rows(v):
                f(x)

        self._run(run, description=f"foreach {self.label}")

    def foreach_partition(self, f: Callable[[Any], None]) -> None:
        """``f`` receives an iterator over the partition's records (as in PySpark)."""
        self._run(lambda v: f(iter_rows(v)), description=f"foreach_partition {self.label}")

    # -- folding ------------------------------------------------------------------------------
    def reduce(self, f: Callable[[Any, Any], Any]) -> Any:
        def part(v):
            it = iter_rows(v)
            acc = next(it, _EMPTY)
            if acc is _EMPTY:
                return _EMPTY
            for x in it:
                acc = f(acc, x)
            return acc

        vals = [r for r in self._run(part, description=f"reduce {self.label}") if r is not _EMPTY]
        if not vals:
            raise ValueError(f"reduce: dataset {self.label} is empty")
        return functools.reduce(f, vals)

    def fold(self, zero_value: Any, op: Callable[[Any, Any], Any]) -> Any:
        parts = self._run(lambda v: _fold_rows(v, copy.deepcopy(zero_value), op), description=f"fold {self.label}")
        return functools.reduce(op, parts, copy.deepcopy(zero_value))

    def aggregate(self, zero_value: Any, seq_op: Callable, comb_op: Callable) -> Any:
        parts = self._run(lambda v: _fold_rows(v, copy.deepcopy(zero_value), seq_op),
                          description=f"aggregate {self.label}")
        return functools.reduce(comb_op, parts, copy.deepcopy(zero_value))

    def tree_aggregate(self, zero_value: Any, seq_op: Callable, comb_op: Callable, depth: int = 2) -> Any:
        """``aggregate`` whose partial results are combined in ``depth`` levels of tasks
        (contiguous groups, so partition order is kept) instead of all on the caller."""
        if depth < 1:
            raise ValueError(f"tree_aggregate: depth must be >= 1, got {depth}")
        if self.num_partitions == 0:
            return copy.deepcopy(zero_value)
        partial = self.map_partitions(lambda v: [_fold_rows(v, copy.deepcopy(zero_value), seq_op)])
        num = partial.num_partitions
        scale = max(int(math.ceil(num ** (1.0 / depth))), 2)
        while num > scale + math.ceil(num / scale):
            num = int(math.ceil(num / scale))
            partial = partial.coalesce(num).map_partitions(lambda v: [functools.reduce(comb_op, v)])
        parts = partial._run(rows_list, description=f"tree_aggregate {self.label}")
        return functools.reduce(comb_op, [p for part in parts for p in part], copy.deepcopy(zero_value))

    def sum(self) -> Any:
        def part(v):
            if isinstance(v, np.ndarray):
                return v.sum(axis=0) if len(v) else 0
            return sum(iter_rows(v))

        return sum(self._run(part, description=f"sum {self.label}"), 0)

    def mean(self) -> float:
        def part(v):
            if isinstance(v, np.ndarray):
                return (len(v), v.sum(axis=0) if len(v) else 0)
            rows = rows_list(v)
            return (len(rows), sum(rows))

        parts = self._run(part, description=f"mean {self.label}")
        n = sum(c for c, _ in parts)
        return sum((s for _, s in parts), 0) / n if n else float("nan")

    def count_by_key(self) -> dict:
        return self.map(operator.itemgetter(0)).count_by_value()

    def count_by_value(self) -> dict:
        counts: Counter = Counter()
        for part in self._run(lambda v: Counter(iter_rows(v)), description=f"count_by_value {self.label}"):
            counts.update(part)
        return dict(counts)

    # -- output ---------------------------------------------------------------------------------
    def save_as_text_file(self, path: str | os.PathLike) -> None:
        """One ``part-NNNNN`` file per partition (``str`` of each record, a line each) and
        ``_SUCCESS`` when all are written; fails if ``path`` exists, as Spark does."""
        path = os.fspath(path)
        if os.path.exists(path):
            raise FileExistsError(f"save_as_text_file: output path {path!r} already exists")
        os.makedirs(path)

        def write(i, v):
            final = os.path.join(path, f"part-{i:05d}")
            tmp = os.path.join(path, f".part-{i:05d}.tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                for x in iter_rows(v):
                    f.write(f"{x}\n")
            os.replace(tmp, final)
            return [1]

        self.map_partitions_with_index(write)._run(len, description=f"save_as_text_file {self.label}")
        open(os.path.join(path, "_SUCCESS"), "w").close()
