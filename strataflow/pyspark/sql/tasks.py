"""What an executor runs for a DataFrame: each partition's query, a shuffle's routing,
a join's per-partition query. Kept apart from the planner (sqlglot, the DataFrame API),
so that an executor imports only pyarrow, numpy and DuckDB to run them: its first task
starts sooner.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pyarrow as pa

from strataflow.pyspark.sql.engine import as_table, normalize, register_udfs, run_query

__all__ = ["T", "run_partition", "assign_and_tag", "untag", "untag_schema", "hash_assign", "range_assign", "zeros",
           "sample_key", "normalized", "renamed", "joined", "with_right_table", "with_left_table", "same", "head_rows",
           "row_count", "set_op", "offset_rows"]

#: the name a partition's table has in its query
T = "__t"


def run_partition(sql: str, in_schema: pa.Schema, udfs: tuple, value: Any) -> pa.Table:
    """One partition's query (the Python UDFs it calls registered first)."""
    if udfs:
        register_udfs(udfs)
    return run_query(sql, {T: as_table(value, in_schema)})


def assign_and_tag(assign: Callable[[pa.Table], np.ndarray], in_schema: pa.Schema, value: Any) -> pa.Table:
    """The table with a first column ``__p``, the partition each row goes to: strataflow's
    shuffle routes a batch by an integer first column, vectorized (an int k to partition k)."""
    t = as_table(value, in_schema)
    return t.add_column(0, "__p", pa.array(assign(t), type=pa.int64()))


def untag(schema: pa.Schema, value: Any) -> pa.Table:
    if isinstance(value, list) and not value:
        return schema.empty_table()
    t = as_table(value, schema)
    return t.remove_column(0) if t.num_columns and t.column_names[0] == "__p" else t


def hash_assign(sql: str, value: pa.Table) -> np.ndarray:
    return run_query(sql, {T: value}).column(0).to_numpy(zero_copy_only=False).astype(np.int64)


def range_assign(key_sql: str, bounds: np.ndarray, desc: bool, nulls_first: bool, n: int, t: pa.Table) -> np.ndarray:
    key = run_query(key_sql, {T: t}).column(0)
    null = key.is_null().to_numpy(zero_copy_only=False)
    idx = np.zeros(len(t), dtype=np.int64)
    idx[~null] = np.searchsorted(bounds, key.drop_null().to_numpy(zero_copy_only=False), side="right")
    if desc:
        idx = (n - 1) - idx
    idx[null] = 0 if nulls_first else n - 1
    return idx


def zeros(t: pa.Table) -> np.ndarray:
    return np.zeros(t.num_rows, dtype=np.int64)


def sample_key(key_sql: str, per_part: int, value: Any) -> list:
    """Up to ``per_part`` evenly spaced non-null values of the sort key (as one Arrow array in a list)."""
    t = value if isinstance(value, pa.Table) else None
    if t is None or t.num_rows == 0:
        return []
    key = run_query(key_sql, {T: t}).column(0).drop_null().combine_chunks()
    step = max(1, len(key) // per_part)
    return [key.take(pa.array(np.arange(0, len(key), step)))]


def untag_schema(with_p: pa.Schema, schema: pa.Schema, value: Any) -> pa.Table:
    if isinstance(value, list) and not value:
        return schema.empty_table()
    return untag(with_p, value)


def normalized(value: Any) -> Any:
    return normalize(value) if isinstance(value, pa.Table) else value


def renamed(names: list[str], value: Any) -> Any:
    return value.rename_columns(names) if isinstance(value, pa.Table) else value


def joined(sql: str, left_schema: pa.Schema, right_schema: pa.Schema, left: Any, right: Any) -> pa.Table:
    return run_query(sql, {"__l": as_table(left, left_schema), "__r": as_table(right, right_schema)})


def with_right_table(sql: str, left_schema: pa.Schema, right: Any, left: Any) -> pa.Table:
    """A partition of the left side joined with all of the right (a table, or a broadcast of one)."""
    return run_query(sql, {"__l": as_table(left, left_schema), "__r": _value(right)})


def with_left_table(sql: str, right_schema: pa.Schema, left: Any, right: Any) -> pa.Table:
    return run_query(sql, {"__l": _value(left), "__r": as_table(right, right_schema)})


def _value(table: Any) -> pa.Table:
    """A broadcast side's table: a Broadcast's value (loaded once per executor), or the table."""
    return table if isinstance(table, pa.Table) else table.value


def same(value: Any) -> Any:
    return value


def head_rows(schema: pa.Schema, n: int, value: Any) -> pa.Table:
    return as_table(value, schema).slice(0, n)


def row_count(schema: pa.Schema, value: Any) -> list[int]:
    return [as_table(value, schema).num_rows]


def set_op(sql: str, left_schema: pa.Schema, right_schema: pa.Schema, left: Any, right: Any) -> pa.Table:
    return run_query(sql, {"__l": as_table(left, left_schema), "__r": as_table(right, right_schema)})


def offset_rows(schema: pa.Schema, n: int, value: Any) -> pa.Table:
    return as_table(value, schema).slice(n)
