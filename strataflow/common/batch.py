"""Partition values: a list of records, or a batch (numpy ndarray, pyarrow Table or
RecordBatch, pandas DataFrame).

Every transformation and action accepts both kinds, so these few helpers are the only
place that knows the difference. A batch iterates by rows: an ndarray yields its rows
(scalars for 1-D arrays), a Table or a DataFrame yields one tuple per row in column
order, so that pair operations (``k, v = row``) work on a two-column table as they do on
``(k, v)`` records.

Python's own iteration is wrong for columnar values: iterating a DataFrame yields its
column names, a Table its columns, so ``count()`` of 1,000 rows in 4 columns would say 4.
Such a value is therefore either known here (and iterated by rows) or refused with a
:class:`RowsTypeError` naming its type; it is never iterated the Python way.

pandas is optional: it is never imported here. A value can only be a DataFrame if pandas
is already loaded, so ``sys.modules`` tells without paying for the import.
"""

from __future__ import annotations

import sys
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

__all__ = ["PartitionValue", "RowsTypeError", "is_batch", "is_dataframe", "iter_rows", "num_rows", "materialize",
           "concat", "rows_list", "take_rows", "mask_rows", "slice_rows", "nbytes", "iter_values", "check_rows"]

PartitionValue = Any  # list | np.ndarray | pa.Table | pa.RecordBatch | pandas.DataFrame


class RowsTypeError(TypeError):
    """A value that cannot be read as rows (a columnar object of an unknown kind, a
    scalar). Every attempt would fail the same way, so the task is not retried; the
    driver re-raises it naming the dataset (``ActionOps._run``)."""

    retryable = False


def is_dataframe(value: object) -> bool:
    """True for a pandas DataFrame (without importing pandas: if it is not loaded, no
    value can be one). While another thread is still importing pandas, the module is in
    ``sys.modules`` without ``DataFrame`` yet, and no value can be one either."""
    frame = getattr(sys.modules.get("pandas"), "DataFrame", None)
    return frame is not None and isinstance(value, frame)


def is_batch(value: object) -> bool:
    """True for a columnar partition: numpy ndarray, pyarrow Table/RecordBatch, or
    pandas DataFrame."""
    return isinstance(value, (np.ndarray, pa.Table, pa.RecordBatch)) or is_dataframe(value)


def _looks_columnar(value: object) -> bool:
    """Objects whose Python iteration gives columns or chunks, not rows: a data frame of
    another library (anything with columns that speaks the Arrow C stream or dataframe
    interchange protocol: polars, cuDF, ...) and pyarrow's stream reader. One-dimensional
    ones (a pandas Series, a pyarrow ChunkedArray) iterate their values and are fine."""
    if isinstance(value, pa.RecordBatchReader):
        return True
    cls = type(value)
    if hasattr(cls, "__dataframe__"):
        return True
    return hasattr(value, "columns") and (hasattr(cls, "__arrow_c_stream__") or len(getattr(value, "shape", ())) == 2)


def _not_rows(value: object, what: str) -> RowsTypeError:
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    return RowsTypeError(
        f"{what} is a {kind}, which strataflow cannot read as rows (iterating it would give columns, not "
        "records); convert it to a list of records, a numpy array, a pyarrow Table or a pandas DataFrame "
        "(e.g. pyarrow.table(x) or x.to_pandas())")


def check_rows(value: object, what: str = "the value") -> None:
    """Raises :class:`RowsTypeError` if ``value`` is not a batch and iterating it would
    not give rows (``what`` names it in the message)."""
    if not is_batch(value) and _looks_columnar(value):
        raise _not_rows(value, what)


def iter_rows(value: PartitionValue) -> Iterator[Any]:
    """The records of a partition, whatever its kind."""
    if isinstance(value, list):
        return iter(value)
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        if value.num_columns == 0:
            return iter(())
        return zip(*(col.to_pylist() for col in value.columns))
    if isinstance(value, np.ndarray):
        return iter((value[()],)) if value.ndim == 0 else iter(value)
    if is_dataframe(value):
        return value.itertuples(index=False, name=None)
    check_rows(value, "a partition")
    return iter(value)


def num_rows(value: PartitionValue) -> int:
    """Rows (records) of a partition: never its columns."""
    if isinstance(value, list):
        return len(value)
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        return value.num_rows
    if isinstance(value, np.ndarray):
        return int(value.shape[0]) if value.ndim else 1
    if is_dataframe(value):
        return len(value.index)
    check_rows(value, "a partition")
    return len(value)


def materialize(result: Any) -> PartitionValue:
    """What a user function returned, as a partition value: batches and lists stay as they
    are, any other iterable (a generator, a tuple, a map object) becomes a list; a
    columnar value of an unknown kind is refused (its iteration is not its rows)."""
    if isinstance(result, list) or is_batch(result):
        return result
    if result is None:
        raise RowsTypeError("a partition function returned None; return a list, a batch or an iterable")
    check_rows(result, "the value a partition function returned")
    try:
        return list(result)
    except TypeError:
        raise RowsTypeError(
            f"a partition function returned {type(result).__name__}, which is neither a list, "
            "a batch (numpy ndarray, pyarrow Table, pandas DataFrame) nor an iterable"
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
    if all(is_dataframe(v) for v in values) and len({tuple(v.columns) for v in values}) == 1:
        return sys.modules["pandas"].concat(values)
    out: list = []
    for v in values:
        out.extend(iter_rows(v))
    return out


def rows_list(value: PartitionValue) -> list:
    """The records of a partition as a list (the list itself when it already is one)."""
    return value if isinstance(value, list) else list(iter_rows(value))


def take_rows(value: PartitionValue, indices: np.ndarray) -> PartitionValue:
    """Rows at ``indices`` (positions) as a value of the same kind."""
    if isinstance(value, np.ndarray):
        return value[indices]
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        return value.take(pa.array(indices, type=pa.int64()))
    if is_dataframe(value):
        return value.iloc[np.asarray(indices, dtype=np.int64)]
    rows = rows_list(value)
    return [rows[i] for i in indices]


def mask_rows(value: PartitionValue, mask: np.ndarray) -> PartitionValue:
    """The rows where ``mask`` (one bool per row) is true, as a value of the same kind
    (``filter``'s vectorized half: a DataFrame must not be given to its own ``filter``,
    which selects columns by label)."""
    mask = np.asarray(mask, dtype=bool)
    if isinstance(value, np.ndarray):
        return value[mask]
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        return value.filter(pa.array(mask))
    if is_dataframe(value):
        return value.iloc[mask]
    return [x for x, keep in zip(iter_rows(value), mask) if keep]


def slice_rows(value: PartitionValue, start: int, stop: int) -> PartitionValue:
    """Rows ``[start, stop)`` as a value of the same kind (views where the kind has them)."""
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        start = min(start, value.num_rows)
        return value.slice(start, max(0, min(stop, value.num_rows) - start))
    if is_dataframe(value):
        return value.iloc[start:stop]
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.reshape(1)[start:stop]
    if isinstance(value, (list, np.ndarray)):
        return value[start:stop]
    return rows_list(value)[start:stop]


def nbytes(value: PartitionValue) -> int:
    """Bytes held by a batch (exact); for records, 0 (the cache issue adds sampled sizes)."""
    if isinstance(value, (np.ndarray, pa.Table, pa.RecordBatch)):
        return int(value.nbytes)
    if is_dataframe(value):
        return int(value.memory_usage(index=True, deep=True).sum())
    return 0


def iter_values(values: Iterable[PartitionValue]) -> Iterator[Any]:
    for v in values:
        yield from iter_rows(v)
