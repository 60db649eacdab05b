"""Partition values: a list of records, or a batch (numpy ndarray or pyarrow Table).

Every transformation and action accepts both kinds, so these few helpers are the only
place that knows the difference. A batch iterates by rows: an ndarray yields its rows
(scalars for 1-D arrays), a Table yields one tuple per row in column order, so that pair
operations (``k, v = row``) work on a two-column table as they do on ``(k, v)`` records.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

__all__ = ["PartitionValue", "is_batch", "iter_rows", "num_rows", "materialize", "concat", "nbytes"]

PartitionValue = Any  # list | np.ndarray | pa.Table


def is_batch(value: object) -> bool:
    """True for a numpy ndarray or pyarrow Table (a columnar partition)."""
    return isinstance(value, (np.ndarray, pa.Table, pa.RecordBatch))


def iter_rows(value: PartitionValue) -> Iterator[Any]:
    """The records of a partition, whatever its kind."""
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        if value.num_columns == 0:
            return iter(())
        return zip(*(col.to_pylist() for col in value.columns))
    return iter(value)


def num_rows(value: PartitionValue) -> int:
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        return value.num_rows
    if isinstance(value, np.ndarray):
        return int(value.shape[0]) if value.ndim else 1
    return len(value)


def materialize(result: Any) -> PartitionValue:
    """What a user function returned, as a partition value: batches and lists stay as they
    are, any other iterable (a generator, a tuple, a map object) becomes a list."""
    if isinstance(result, list) or is_batch(result):
        return result
    if result is None:
        raise TypeError("a partition function returned None; return a list, a batch or an iterable")
    try:
        return list(result)
    except TypeError:
        raise TypeError(
            f"a partition function returned {type(result).__name__}, which is neither a list, "
            "a batch (numpy ndarray, pyarrow Table) nor an iterable"
        ) from None


def concat(values: Sequence[PartitionValue]) -> PartitionValue:
    """One partition value from several: batches of one kind concatenate as batches,
    anything else becomes a list of all their records."""
    values = [v for v in values if num_rows(v) > 0] or list(values[:1])
    if not values:
        return []
    if len(values) == 1:
        return values[0]
    if all(isinstance(v, np.ndarray) for v in values):
        try:
            return np.concatenate(values)
        except ValueError:
            pass
    if all(isinstance(v, pa.Table) for v in values):
        try:
            return pa.concat_tables(values)
        except pa.ArrowInvalid:
            pass
    out: list = []
    for v in values:
        out.extend(iter_rows(v))
    return out


def rows_list(value: PartitionValue) -> list:
    """The records of a partition as a list (the list itself when it already is one)."""
    return value if isinstance(value, list) else list(iter_rows(value))


def take_rows(value: PartitionValue, indices: np.ndarray) -> PartitionValue:
    """Rows at ``indices`` as a value of the same kind."""
    if isinstance(value, np.ndarray):
        return value[indices]
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        return value.take(pa.array(indices, type=pa.int64()))
    return [value[i] for i in indices]


def nbytes(value: PartitionValue) -> int:
    """Bytes held by a batch (exact); for records, 0 (the cache issue adds sampled sizes)."""
    if isinstance(value, (np.ndarray, pa.Table, pa.RecordBatch)):
        return int(value.nbytes)
    return 0


def iter_values(values: Iterable[PartitionValue]) -> Iterator[Any]:
    for v in values:
        yield from iter_rows(v)
