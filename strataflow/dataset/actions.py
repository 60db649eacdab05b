"""Actions: the operations that run a job and bring a result to the caller.

Partial results are combined in partition order on the caller's side, so ``reduce``,
``fold`` and ``aggregate`` are deterministic even for operations that are not
commutative.

Every action sees a dataset as its records, whatever its partitions hold: a batch's
records are its rows (``batch.py``), so an answer never depends on whether the data came
as records, ndarrays, Tables or DataFrames. Batches take fast paths where the answer is
the same: ``count`` is the row count, ``sum`` of an ndarray partition is
``a.sum(axis=0)``, and ``reduce`` with ``np.add``, ``np.multiply``, ``np.maximum``,
``np.minimum`` (``fmax``, ``fmin``) or ``operator.add``/``operator.mul`` on a numeric
ndarray partition is ``f.reduce(a, axis=0)`` in the array's dtype: the fold of ``f`` over
the rows, vectorized (floating-point sums may differ in the last bits from a row-by-row
fold, as ``sum``'s do; ``reduce`` asks for an associative ``f``). To fold whole batches instead, say so:
``ds.map_partitions(lambda a: [a]).reduce(f)``.

A value that cannot be read as rows fails the job at once (no retries) with a
:class:`DatasetRowsError`, a TypeError naming the dataset and the value's type.
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

from strataflow.common.batch import RowsTypeError, is_dataframe, iter_rows, num_rows, rows_list, slice_rows
from strataflow.io.frames import combine_arrow, combine_pandas, require_pandas, value_to_arrow
from strataflow.io.manifest import SUCCESS, new_output_dir
from strataflow.io.paths import OutputDir
from strataflow.io.reach import check_reachable
from strataflow.io.compression import codec_name
from strataflow.shuffle import Aggregator
from strataflow.io.writers import finish_npy, finish_parquet, npy_part, parquet_part, text_part
from strataflow.scheduler.dag import TaskFailedError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["ActionOps", "DatasetRowsError", "EmptyDatasetError"]


class EmptyDatasetError(ValueError):
    """An action that needs at least one record (``first``, ``reduce``, ``min``...) met an
    empty dataset."""


class DatasetRowsError(TaskFailedError, RowsTypeError):
    """A job failed because a partition of a dataset could not be read as rows: a
    TypeError (the user's fault, like ``len(5)``) and a TaskFailedError (``dataset``,
    ``partition``; the task's error is its ``__cause__``)."""


#: functions whose fold over an ndarray's rows is ``ufunc.reduce(a, axis=0, dtype=a.dtype)``
#: exactly (up to floating-point rounding): same values, same dtype
_VECTOR_REDUCE = {operator.add: np.add, operator.mul: np.multiply, np.add: np.add, np.multiply: np.multiply,
                  np.maximum: np.maximum, np.minimum: np.minimum, np.fmax: np.fmax, np.fmin: np.fmin}


def _vector_reduce(f: Callable) -> "np.ufunc | None":
    """The ufunc whose ``reduce`` folds ``f`` over an ndarray's rows, if ``f`` has one."""
    try:
        return _VECTOR_REDUCE.get(f)
    except TypeError:  # an unhashable callable
        return None

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
    def _run(self, func: Callable[[Any], Any], partitions=None, description: str | None = None,
             with_task: bool = False) -> list:
        """``func(value)`` on each partition (``func(tc, value)`` ``with_task``: a function
        that builds a work structure within the task's execution memory)."""
        try:
            return self.ctx.scheduler.run_job(self, func if with_task else lambda tc, v: func(v), partitions,
                                              description or f"{func.__name__ if hasattr(func, '__name__') else 'job'}")
        except TaskFailedError as exc:
            cause = exc.__cause__
            if not isinstance(cause, RowsTypeError) or isinstance(exc, DatasetRowsError):
                raise
            raise DatasetRowsError(f"dataset {exc.dataset.label}, partition {exc.partition}: {cause}",
                                   exc.dataset, exc.partition, exc.attempts) from cause

    # -- bringing records back --------------------------------------------------------------
    def collect(self) -> list:
        """Every record, in partition order.

        >>> ctx.parallelize([3, 1, 2], 2).collect()
        [3, 1, 2]
        """
        out: list = []
        for part in self._run(rows_list, description=f"collect {self.label}"):
            out.extend(part)
        return out

    def collect_partitions(self) -> list:
        """Each partition's value as it is (a list or a batch), in partition order.

        >>> ctx.parallelize(range(4), 2).collect_partitions()
        [[0, 1], [2, 3]]
        """
        return self._run(lambda v: v, description=f"collect_partitions {self.label}")

    def count(self) -> int:
        """The number of records (rows of batch partitions), counted on the executors.

        >>> ctx.parallelize(range(10), 3).count()
        10
        """
        return sum(self._run(num_rows, description=f"count {self.label}"))

    def take(self, num: int) -> list:
        """The first ``num`` records, scanning one partition first and then four times as
        many at each round, as Spark does, so ``take`` on a huge dataset stays cheap.

        >>> ctx.parallelize(range(100), 10).take(3)
        [0, 1, 2]
        """
        if num <= 0:
            return []
        out: list = []
        scanned, total, batch = 0, self.num_partitions, 1
        while len(out) < num and scanned < total:
            parts = list(range(scanned, min(total, scanned + batch)))
            need = num - len(out)
            for rows in self._run(lambda v, need=need: rows_list(slice_rows(v, 0, need)), parts, f"take {self.label}"):
                out.extend(rows)
            scanned += len(parts)
            batch *= 4
        return out[:num]

    def first(self) -> Any:
        """The first record, reading as few partitions as it can (``take(1)``); EmptyDatasetError, a
        ValueError, when there is none.

        >>> ctx.parallelize([5, 6, 7]).first()
        5
        """
        rows = self.take(1)
        if not rows:
            raise EmptyDatasetError(f"first: dataset {self.label} is empty")
        return rows[0]

    def foreach(self, f: Callable[[Any], None]) -> None:
        """Calls ``f`` on every record for its side effects (on the executors: use an accumulator to
        bring a result back).

        >>> acc = ctx.accumulator(0)
        >>> ctx.parallelize([1, 2, 3]).foreach(lambda x: acc.add(x))
        >>> acc.value
        6
        """
        def run(v):
            for x in iter_rows(v):
                f(x)

        self._run(run, description=f"foreach {self.label}")

    def foreach_partition(self, f: Callable[[Any], None]) -> None:
        """``f`` receives an iterator over the partition's records (as in PySpark).

        >>> acc = ctx.accumulator(0)
        >>> ctx.parallelize(range(6), 3).foreach_partition(lambda records: acc.add(1))
        >>> acc.value
        3
        """
        self._run(lambda v: f(iter_rows(v)), description=f"foreach_partition {self.label}")

    # -- folding ------------------------------------------------------------------------------
    def reduce(self, f: Callable[[Any, Any], Any]) -> Any:
        """``f`` folded over the records (rows of batches), partition by partition, then
        over the partitions' results in order; ``ValueError`` if there are none. ``np.add``,
        ``np.maximum``... (or ``operator.add``/``mul``) on numeric ndarray partitions are
        vectorized (see the module docstring).

        >>> ctx.parallelize([1, 2, 3, 4], 2).reduce(lambda a, b: a + b)
        10
        """
        ufunc = _vector_reduce(f)

        def part(v):
            if ufunc is not None and isinstance(v, np.ndarray) and v.ndim and v.dtype.kind in "iufc":
                return ufunc.reduce(v, axis=0, dtype=v.dtype) if len(v) else _EMPTY
            it = iter_rows(v)
            acc = next(it, _EMPTY)
            if acc is _EMPTY:
                return _EMPTY
            for x in it:
                acc = f(acc, x)
            return acc

        vals = [r for r in self._run(part, description=f"reduce {self.label}") if r is not _EMPTY]
        if not vals:
            raise EmptyDatasetError(f"reduce: dataset {self.label} is empty")
        return functools.reduce(f, vals)

    def fold(self, zero_value: Any, op: Callable[[Any, Any], Any]) -> Any:
        """Folds each partition into ``zero_value`` with ``op``, then the partitions' results
        (``zero_value`` counts once per partition and once more, as in Spark).

        >>> ctx.parallelize([1, 2, 3, 4], 2).fold(0, lambda a, b: a + b)
        10
        """
        parts = self._run(lambda v: _fold_rows(v, copy.deepcopy(zero_value), op), description=f"fold {self.label}")
        return functools.reduce(op, parts, copy.deepcopy(zero_value))

    def aggregate(self, zero_value: Any, seq_op: Callable, comb_op: Callable) -> Any:
        """Folds each partition's records into ``zero_value`` with ``seq_op``, then the partitions'
        results with ``comb_op`` (the result may be of another type than the records).

        >>> ctx.parallelize([1, 2, 3, 4], 2).aggregate((0, 0), lambda acc, x: (acc[0] + x, acc[1] + 1),
        ...                                             lambda a, b: (a[0] + b[0], a[1] + b[1]))
        (10, 4)
        """
        parts = self._run(lambda v: _fold_rows(v, copy.deepcopy(zero_value), seq_op),
                          description=f"aggregate {self.label}")
        return functools.reduce(comb_op, parts, copy.deepcopy(zero_value))

    def tree_aggregate(self, zero_value: Any, seq_op: Callable, comb_op: Callable, depth: int = 2) -> Any:
        """``aggregate`` whose partial results are combined in ``depth`` levels of tasks
        (contiguous groups, so partition order is kept) instead of all on the caller.

        >>> ctx.parallelize(range(10), 4).tree_aggregate(0, lambda a, x: a + x, lambda a, b: a + b)
        45
        """
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
        """The sum of the records (0 when empty; vectorized on numeric ndarray partitions).

        >>> ctx.parallelize(range(5)).sum()
        10
        """
        def part(v):
            if isinstance(v, np.ndarray):
                return v.sum(axis=0) if len(v) else 0
            return sum(iter_rows(v))

        return sum(self._run(part, description=f"sum {self.label}"), 0)

    def mean(self) -> float:
        """The arithmetic mean of the records (vectorized on numeric ndarray partitions); NaN
        when empty (the mean of nothing; PySpark's ``RDD.mean`` says 0.0, as its layer does).

        >>> ctx.parallelize([1, 2, 3, 4]).mean()
        2.5
        """
        def part(v):
            if isinstance(v, np.ndarray):
                return (len(v), v.sum(axis=0) if len(v) else 0)
            rows = rows_list(v)
            return (len(rows), sum(rows))

        parts = self._run(part, description=f"mean {self.label}")
        n = sum(c for c, _ in parts)
        return sum((s for _, s in parts), 0) / n if n else float("nan")

    def count_by_key(self) -> dict:
        """How many pairs each key has, as a dict on the caller (one job, no shuffle).

        >>> ctx.parallelize([("a", 1), ("b", 1), ("a", 9)]).count_by_key()
        {'a': 2, 'b': 1}
        """
        return self.map(operator.itemgetter(0)).count_by_value()

    def count_by_value(self) -> dict:
        """How many times each distinct record occurs, as a dict on the caller (one job, no shuffle).
        Each task counts in its aggregator, which spills within the task's execution memory.

        >>> sorted(ctx.parallelize([1, 2, 1, 1]).count_by_value().items())
        [(1, 3), (2, 1)]
        """
        counts: Counter = Counter()
        for part in self._run(_count_partition, description=f"count_by_value {self.label}", with_task=True):
            counts.update(part)
        return dict(counts)

    # -- conversions -------------------------------------------------------------------------
    def to_arrow(self) -> "pa.Table":
        """All records as one pyarrow Table, partitions in order (each converted on its
        executor by ``io/frames.py``'s rules: a DataFrame without its index, a 2-D
        ndarray's columns ``"0"``..., tuples ``_1``..., dicts by key). Partitions whose
        schemas cannot be made one raise a TypeError naming the first that differs.

        >>> ctx.parallelize([(1, "a"), (2, "b")]).to_arrow().to_pydict()
        {'_1': [1, 2], '_2': ['a', 'b']}
        """
        tables = self._run(value_to_arrow, description=f"to_arrow {self.label}")
        return combine_arrow(tables, f"to_arrow of dataset {self.label}")

    def to_pandas(self) -> Any:
        """All records as one pandas DataFrame, partitions in order. DataFrame partitions
        are concatenated as they are (index labels and dtypes kept: ``from_pandas(df)``
        gives ``df`` back); others go through ``to_arrow``'s rules, with a fresh index.

        >>> ctx.parallelize([(1, "a"), (2, "b")]).to_pandas()
           _1 _2
        0   1  a
        1   2  b
        """
        require_pandas("to_pandas")
        parts = self._run(lambda v: v if is_dataframe(v) else value_to_arrow(v), description=f"to_pandas {self.label}")
        if not any(is_dataframe(p) for p in parts):
            return combine_arrow(parts, f"to_pandas of dataset {self.label}").to_pandas()
        frames = [p if is_dataframe(p) else p.to_pandas() for p in parts]
        return combine_pandas(frames, keep_index=all(is_dataframe(p) for p in parts))

    # -- output ---------------------------------------------------------------------------------
    def _output_dir(self, path: str | os.PathLike, op: str) -> OutputDir:
        """The new output directory of a ``save_as_*``, refused first where the executors
        that write its parts cannot reach it (``io/reach.py``)."""
        check_reachable(path, self.ctx.config.backend, op, writing=True)
        return new_output_dir(path, op)

    def _write_parts(self, out: OutputDir, write: Callable[[OutputDir, int, Any], dict], op: str) -> list[dict]:
        return self.map_partitions_with_index(lambda i, v: [write(out, i, v)])._run(
            lambda v: v[0], description=f"{op} {self.label}")

    def save_as_text_file(self, path: str | os.PathLike, compression: str | None = None) -> None:
        """One ``part-NNNNN`` file per partition (a line per record: ``str`` of it, an
        ndarray row on one line and never shortened) and ``_SUCCESS`` when all are
        written; fails if ``path`` exists, as Spark does. ``compression``: ``gzip``,
        ``bzip2``, ``deflate`` or ``xz`` (or Hadoop's codec class name): ``part-NNNNN.gz``...,
        which ``text_file`` reads back (``io/compression.py``). ``path``: a local path, a
        ``file://`` URI or any fsspec URL (``s3://bucket/out``; ``io/paths.py``), as for
        every ``save_as_*``.

        >>> ctx.parallelize(["one", "two"]).save_as_text_file(tmp_dir + "/lines", compression="gzip")
        >>> ctx.text_file(tmp_dir + "/lines").collect()
        ['one', 'two']
        """
        codec = codec_name(compression) if compression is not None else None
        out = self._output_dir(path, "save_as_text_file")
        self._write_parts(out, lambda o, i, v: text_part(o, i, v, codec), "save_as_text_file")
        out.touch(SUCCESS)

    def save_as_parquet(self, path: str | os.PathLike) -> None:
        """A directory of ``part-NNNNN.parquet`` files (one per partition with rows, each
        partition as ``to_arrow`` makes it), a ``_manifest.json`` and ``_SUCCESS``;
        ``Context.parquet_file(path)`` reads it back in order. Fails if ``path`` exists,
        or (before the manifest) if the partitions' schemas cannot be made one.

        >>> ctx.parallelize([(1, "a"), (2, "b")]).save_as_parquet(tmp_dir + "/table")
        >>> ctx.parquet_file(tmp_dir + "/table").collect()
        [(1, 'a'), (2, 'b')]
        """
        out = self._output_dir(path, "save_as_parquet")
        finish_parquet(out, self._write_parts(out, parquet_part, "save_as_parquet"), self.label)

    def save_as_npy(self, path: str | os.PathLike) -> None:
        """A directory of ``part-NNNNN.npy`` files (one per partition with rows: an
        ndarray as it is, a table's columns side by side, records as ``np.asarray``), a
        ``_manifest.json`` and ``_SUCCESS``; ``Context.npy_file(path)`` reads them back
        as one array. Every part must hold numbers of one dtype and row shape.

        >>> import numpy as np
        >>> ctx.from_numpy(np.arange(6.0).reshape(3, 2)).save_as_npy(tmp_dir + "/points")
        >>> ctx.npy_file(tmp_dir + "/points").count()
        3
        """
        out = self._output_dir(path, "save_as_npy")
        finish_npy(out, self._write_parts(out, npy_part, "save_as_npy"), self.label)


def _one(_: Any) -> int:
    return 1


def _plus_one(count: int, _: Any) -> int:
    return count + 1


_COUNTING = Aggregator(_one, _plus_one, operator.add)


def _count_partition(tc: Any, value: Any) -> dict:
    """A partition's records counted by value in the task's aggregator (bounded memory)."""
    counter = tc.aggregator(_COUNTING)
    counter.insert_values((r, None) for r in iter_rows(value))
    return dict(counter.items())
