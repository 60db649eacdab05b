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

Memory: a task's queries run under a :class:`QueryBudget` (``task_memory.py`` makes one
from the task's share of its executor's execution memory). DuckDB's ``memory_limit`` is
set to it before each query, and the connection's ``temp_directory`` lies in the
executor's spill directory of the application, so hash aggregates, joins, windows and
sorts over a partition larger than the share spill there and finish; the bytes DuckDB
spilled are read back from its profiler and counted as the task's. A query that cannot
run even so (some plans pin several operators' state at once) asks the budget to grow
and runs again; one that outgrows all the executor may give fails with
:class:`QueryOutOfMemory`, which names the sizes. Queries outside a task (the driver
asks DuckDB for result types, over empty tables) run without a limit.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Protocol

import pyarrow as pa

__all__ = ["run_query", "run_on_view", "empty_like", "normalize", "as_table", "register_udfs", "UdfDef",
           "QueryBudget", "QueryOutOfMemory", "under_budget", "connection_settings"]

_local = threading.local()

#: what DuckDB's profiler is asked to keep: the two figures a budget reads, nothing else
_METRICS = "SET tracked_metrics=['system.total_bytes_spilled', 'system.peak_buffer_memory']"


class QueryBudget(Protocol):
    """The memory one task's queries may use (``task_memory.TaskMemory``)."""

    #: bytes DuckDB may hold (its ``memory_limit``)
    limit: int
    #: the directory under which this thread's connection keeps its spill files
    spill_dir: str
    #: bytes DuckDB wrote to spill files, and the most it held at once, over the queries
    spilled: int
    peak: int

    def owns(self, directory: str) -> bool:
        """Whether a connection spilling to ``directory`` may serve this budget (the
        directory is the same application's): else a new connection is opened."""

    def grow(self) -> bool:
        """Raises ``limit`` for a query that could not run under it; False when it
        cannot grow (then the query fails)."""


class QueryOutOfMemory(MemoryError):
    """A partition's query needs more memory than its executor may give it."""


@contextmanager
def under_budget(budget: "QueryBudget") -> Iterator[None]:
    """This thread's queries run under ``budget`` inside the block."""
    prev = getattr(_local, "budget", None)
    _local.budget = budget
    try:
        yield
    finally:
        _local.budget = prev


def _connect(temp_directory: str | None) -> Any:
    try:
        import duckdb
    except ImportError:
        raise ImportError("strataflow's DataFrames need duckdb and sqlglot: pip install 'strataflow[sql]'") from None
    config: dict[str, Any] = {"threads": 1}  # the executor gives each task one core
    if temp_directory is not None:
        config["temp_directory"] = temp_directory  # made by DuckDB at its first spill, removed when it closes
    con = duckdb.connect(config=config)
    if temp_directory is not None:
        con.execute("SET enable_profiling='no_output'")  # the spilled bytes, read after each query
        con.execute(_METRICS)
    return con


def _connection() -> Any:
    """This thread's connection, under the thread's budget when it has one: spilling to
    the budget's directory and limited to its bytes."""
    con = getattr(_local, "con", None)
    budget: QueryBudget | None = getattr(_local, "budget", None)
    temp = getattr(_local, "temp", None)
    if con is not None and budget is not None and (temp is None or not budget.owns(temp)):
        con.close()  # a connection of another application (or none's): its settings cannot move
        con = _local.con = None
        _local.udfs = set()
    if con is None:
        temp = None
        if budget is not None:
            temp = os.path.join(budget.spill_dir, f"duckdb-{os.getpid()}-{threading.get_ident()}")
        con = _local.con = _connect(temp)
        _local.temp, _local.limit = temp, None
    if budget is not None and _local.limit != budget.limit:
        con.execute(f"SET memory_limit='{int(budget.limit)}B'")
        _local.limit = budget.limit
    return con


def connection_settings() -> dict[str, str]:
    """This thread's connection's ``memory_limit`` and ``temp_directory``, as DuckDB reports them."""
    row = _connection().execute("SELECT current_setting('memory_limit'), current_setting('temp_directory')").fetchall()[0]
    return {"memory_limit": row[0], "temp_directory": row[1]}


def _run(con: Any, sql: str) -> pa.Table:
    """``sql`` on ``con`` under the thread's budget: its spill counted, and run again with a
    grown budget while DuckDB runs out of memory and the budget can grow."""
    import duckdb

    budget: QueryBudget | None = getattr(_local, "budget", None)
    while True:
        try:
            table = con.sql(sql).to_arrow_table()
        except duckdb.OutOfMemoryException as exc:
            if budget is None or getattr(_local, "temp", None) is None:
                raise
            tried = budget.limit
            if not budget.grow():
                raise QueryOutOfMemory(
                    f"a DataFrame partition's query needs more than {tried / 2**20:.0f} MiB, all the execution "
                    f"memory its executor may give one task: give the executors more memory (memory=, "
                    f"executor_memory=) or the data more partitions (repartition, spark.sql.shuffle.partitions). "
                    f"DuckDB said: {str(exc).splitlines()[0]}") from None
            con = _connection()  # the grown limit
            continue
        except duckdb.Error as exc:  # Spark's error classes as PySpark's exceptions (spark_errors.py)
            from strataflow.pyspark.sql.spark_errors import engine_error

            mapped = engine_error(exc)
            if mapped is None:
                raise
            raise mapped from None
        if budget is not None and getattr(_local, "temp", None) is not None:
            figures = json.loads(con.get_profiling_information(format="json")).get("system", {})
            budget.spilled += int(figures.get("total_bytes_spilled", 0))
            budget.peak = max(budget.peak, int(figures.get("peak_buffer_memory", 0)))
        return normalize(table)


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


class UdfFailed(Exception):
    """A UDF's own exception, carried through DuckDB (which keeps only an exception's
    type and message) as the traceback of the user's frames: the driver raises it as
    PySpark's ``PythonException`` (``spark_errors``), with the user's line in it."""


def _user_traceback(exc: BaseException) -> str:
    """``exc``'s traceback as Python prints it, without this module's frames (the user's
    function and what it called)."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    return ("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
            + "".join(traceback.format_exception_only(type(exc), exc)))


def _row_by_row(func: Callable, arrow: pa.DataType, *arrays: Any) -> pa.Array:
    values = [a.to_pylist() for a in arrays]
    try:
        out = [func(*row) for row in zip(*values)]
    except Exception as exc:  # noqa: BLE001 - any error of the user's function, with its traceback
        raise UdfFailed(_user_traceback(exc)) from None
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
    try:
        out = func(*[a.to_pandas() for a in arrays])
    except Exception as exc:  # noqa: BLE001 - any error of the user's function, with its traceback
        raise UdfFailed(_user_traceback(exc)) from None
    return pa.array(out, type=arrow, from_pandas=True)


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
        return _run(con, sql)
    finally:
        con.execute(f"DROP VIEW IF EXISTS {name}")


def run_query(sql: str, tables: dict[str, pa.Table]) -> pa.Table:
    """``sql`` (DuckDB's dialect) over ``tables`` (name -> Table), as a normalized Table."""
    con = _connection()
    for name, table in tables.items():
        con.register(name, table)
    try:
        return _run(con, sql)
    finally:
        for name in tables:
            con.unregister(name)
