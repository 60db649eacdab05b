"""pandas and Arrow in and out: partition values as pyarrow Tables and pandas DataFrames.

One set of rules for every way out (``to_arrow``, ``to_pandas``, ``save_as_parquet``), so
the same dataset gives the same columns whichever is used:

- a Table is itself, a RecordBatch its Table, a DataFrame ``pa.Table.from_pandas`` without
  its index (the index is not data: Spark has none; the pandas dtypes travel in the
  schema's metadata, so ``to_pandas`` gives them back);
- a structured ndarray has its fields as columns, a 2-D one columns ``"0"``, ``"1"``...,
  a 1-D one a column ``"value"``;
- records: dicts give their keys as columns, tuples ``_1``, ``_2``... (PySpark's ``toDF``
  names), anything else one column ``"value"``.

pandas is optional and imported only here, and only when a DataFrame is asked for.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from strataflow.common.batch import RowsTypeError, is_dataframe, rows_list
from strataflow.lineage import ListSource
from strataflow.io.sources import slice_bounds

__all__ = ["require_pandas", "arrow_source", "pandas_source", "value_to_arrow", "value_to_pandas",
           "combine_arrow", "combine_pandas"]


def require_pandas(what: str):
    """The pandas module, or an ImportError that says how to get it."""
    try:
        import pandas
    except ImportError:
        raise ImportError(f"{what} needs pandas, which is not installed: pip install 'strataflow[pandas]'") from None
    return pandas


def arrow_source(table: "pa.Table | pa.RecordBatch", num_slices: int) -> ListSource:
    """Contiguous row slices of ``table``, each copied into buffers of its own when there
    are several: a slice of a Table pickles all of the table's buffers, so every
    partition would carry the whole table to the executors."""
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise TypeError(f"from_arrow needs a pyarrow Table or RecordBatch, got {type(table).__name__}")
    bounds = slice_bounds(table.num_rows, num_slices)
    if len(bounds) == 1:
        return ListSource([table])
    return ListSource([table.take(pa.array(np.arange(a, b), type=pa.int64())) for a, b in bounds])


def pandas_source(df: Any, num_slices: int) -> ListSource:
    """Contiguous row slices of ``df`` (positional, so any index works; its labels are kept)."""
    if not is_dataframe(df):
        raise TypeError(f"from_pandas needs a pandas DataFrame, got {type(df).__name__}")
    return ListSource([df.iloc[a:b] for a, b in slice_bounds(len(df.index), num_slices)])


def _records_to_arrow(rows: list) -> pa.Table:
    if not rows:
        return pa.table({})
    try:
        if all(isinstance(r, dict) for r in rows):
            return pa.Table.from_pylist(rows)
        if all(isinstance(r, tuple) for r in rows):
            width = {len(r) for r in rows}
            if len(width) != 1:
                raise RowsTypeError(f"records are tuples of different lengths {sorted(width)}; "
                                    "a table needs one width")
            cols = list(zip(*rows))
            return pa.table({f"_{i + 1}": pa.array(list(c)) for i, c in enumerate(cols)})
        return pa.table({"value": pa.array(rows)})
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise RowsTypeError(f"records cannot be made a table: {exc}") from None


def _array_to_arrow(a: np.ndarray) -> pa.Table:
    if a.dtype.names:
        return pa.table({name: a[name] for name in a.dtype.names})
    if a.ndim == 1:
        return pa.table({"value": a})
    if a.ndim == 2:
        return pa.table({str(i): a[:, i] for i in range(a.shape[1])})
    raise RowsTypeError(f"a {a.ndim}-d ndarray has no table form (rows of a table are 1-d); reshape it first")


def value_to_arrow(value: Any) -> pa.Table:
    """A partition value as a pyarrow Table (the rules in the module's docstring)."""
    if isinstance(value, pa.Table):
        return value
    if isinstance(value, pa.RecordBatch):
        return pa.Table.from_batches([value])
    if is_dataframe(value):
        return pa.Table.from_pandas(value, preserve_index=False)
    if isinstance(value, np.ndarray):
        return _array_to_arrow(value)
    return _records_to_arrow(rows_list(value))


def value_to_pandas(value: Any):
    """A partition value as a pandas DataFrame (a DataFrame stays itself, with its index)."""
    if is_dataframe(value):
        return value
    return value_to_arrow(value).to_pandas()


def combine_arrow(tables: Sequence[pa.Table], what: str) -> pa.Table:
    """One Table from the partitions' tables, in order: empty ones are left out (an empty
    list has no columns), numeric types are widened (int64 and double give double); schemas
    that cannot be made one raise a TypeError naming the first partition that differs."""
    parts = [t for t in tables if t.num_rows]
    if not parts:
        return next((t for t in tables if t.num_columns), tables[0] if tables else pa.table({}))
    try:
        return pa.concat_tables(parts, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        first = parts[0].schema
        bad = next((i for i, t in enumerate(tables) if t.num_rows and not t.schema.equals(first)), None)
        raise TypeError(f"{what}: partitions have different schemas that cannot be made one (partition "
                        f"{bad}: {tables[bad].schema if bad is not None else '?'} against {first}): {exc}") from None


def combine_pandas(frames: Sequence[Any], keep_index: bool):
    """One DataFrame from the partitions' frames, in order; ``keep_index``: the frames'
    own index labels (all partitions were DataFrames), else a fresh RangeIndex."""
    pd = require_pandas("to_pandas")
    parts = [f for f in frames if len(f.index)]
    if not parts:
        return next((f for f in frames if len(f.columns)), frames[0] if frames else pd.DataFrame())
    return pd.concat(parts, ignore_index=not keep_index)
