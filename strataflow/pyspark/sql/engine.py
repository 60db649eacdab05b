"""One partition's work: a SQL query run by DuckDB over the partition's Arrow table(s).

strataflow plans the partitions, the shuffles between them, the cache and the executors;
what happens inside one partition (projections, filters, aggregates, joins, window
functions, sorts) is a query that DuckDB runs over the partition's pyarrow Tables, read
in place (no copy in) and returned as Arrow. DuckDB rather than Polars or pyarrow's
Acero: it runs SQL, so a DataFrame expression, a Spark SQL string (transpiled by sqlglot)
and the planner's own partial queries are one kind of thing, with correlated subqueries,
windows and every join kind included; Acero has no windows (docs/dataframes.md).

A connection is opened once per thread (an executor's task threads each have one) and
tables are registered by name for one query only.
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable, Iterable, NamedTuple

import pyarrow as pa

__all__ = ["run_query", "run_on_view", "empty_like", "normalize", "as_table", "register_udfs", "UdfDef"]

_local = threading.local()


def _connection() -> Any:
    con = getattr(_local, "con", None)
    if con is None:
        try:
            import duckdb
        except ImportError:
            raise ImportError("strataflow's DataFrames need duckdb and sqlglot: pip install 'strataflow[sql]'") from None
        con = duckdb.connect(config={"threads": 1})  # the executor gives each task one core
        _local.con = con
    return con


def as_table(value: Any, schema: pa.Schema) -> pa.Table:
    """A partition's value as a Table of ``schema``: an empty partition (a list, after a
    shuffle that sent it nothing) is an empty table, a RecordBatch its table."""
    if isinstance(value, pa.Table):
        return value
    if isinstance(value, pa.RecordBatch):
        return pa.Table.from_batches([value])
    if isinstance(value, list) and not value:
        return schema.empty_table()
    raise TypeError(f"a DataFrame partition must be a pyarrow Table, got {type(value).__name__}")


def empty_like(schema: pa.Schema) -> pa.Table:
    return schema.empty_table()


def normalize(table: pa.Table) -> pa.Table:
    """DuckDB's Arrow output in the types Spark would give: a sum of integers (DuckDB's
    HUGEINT, which reaches Arrow as decimal(38,0)) is a bigint, a string view a string."""
    cols, changed = [], False
    for col in table.columns:
        t = col.type
        if pa.types.is_decimal(t) and t.precision == 38 and t.scale == 0:
            col, changed = col.cast(pa.int64()), True
        elif t in (pa.string_view(), pa.large_string()):
            col, changed = col.cast(pa.string()), True
        elif pa.types.is_timestamp(t) and t.unit != "us":
            col, changed = col.cast(pa.timestamp("us", t.tz)), True
        cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names) if changed else table


class UdfDef(NamedTuple):
    """A Python UDF bound to argument types (``udf.py``): what a connection registers."""

    name: str
    func: Callable
    params: tuple[str, ...]
    returns: str
    arrow: pa.DataType
    vectorized: bool


def _row_by_row(func: Callable, arrow: pa.DataType, *arrays: Any) -> pa.Array:
    values = [a.to_pylist() for a in arrays]
    out = [func(*row) for row in zip(*values)]
    try:
        return pa.array(out, type=arrow)
    except (pa.ArrowTypeError, pa.ArrowInvalid):  # as PySpark: a string type takes str(value), a value
        if pa.types.is_string(arrow):  # another type cannot hold is null
            return pa.array([None if v is None else str(v) for v in out], type=arrow)
        return pa.array([_or_null(v, arrow) for v in out], type=arrow)


def _or_null(v: Any, arrow: pa.DataType) -> Any:
    try:
        pa.array([v], type=arrow)
        return v
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return None


def _batch(func: Callable, arrow: pa.DataType, *arrays: Any) -> pa.Array:
    return pa.array(func(*[a.to_pandas() for a in arrays]), type=arrow, from_pandas=True)


def register_udfs(defs: Iterable[UdfDef]) -> None:
    """Registers the UDFs this thread's connection does not have yet: DuckDB calls each
    with a batch of Arrow arrays (a ``udf`` then runs row by row on Python values, None
    for null; a ``pandas_udf`` once on pandas Series)."""
    con = _connection()
    done = getattr(_local, "udfs", None)
    if done is None:
        done = _local.udfs = set()
    for d in defs:
        if d.name not in done:
            call = functools.partial(_batch if d.vectorized else _row_by_row, d.func, d.arrow)
            call.__signature__ = inspect.Signature(  # DuckDB counts the parameters it is given
                [inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(len(d.params))])
            con.create_function(d.name, call, list(d.params), d.returns, type="arrow", null_handling="special",
                                side_effects=False)
            done.add(d.name)


def run_on_view(sql: str, name: str, view: str) -> pa.Table:
    """``sql`` over ``name`` defined as the query ``view`` (DuckDB's dialect: a
    ``read_parquet``, ``parquet_scan.py``), as a normalized Table; duckdb.Error as DuckDB
    raises it."""
    con = _connection()
    con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {view}")
    try:
        return normalize(con.sql(sql).to_arrow_table())
    finally:
        con.execute(f"DROP VIEW IF EXISTS {name}")


def run_query(sql: str, tables: dict[str, pa.Table]) -> pa.Table:
    """``sql`` (DuckDB's dialect) over ``tables`` (name -> Table), as a normalized Table."""
    con = _connection()
    for name, table in tables.items():
        con.register(name, table)
    try:
        return normalize(con.sql(sql).to_arrow_table())
    finally:
        for name in tables:
            con.unregister(name)
