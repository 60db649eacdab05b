"""Python user-defined functions: ``functions.udf``, ``functions.pandas_udf`` (scalar) and
``spark.udf.register`` for SQL.

A call of a UDF is a function node in the expression (``__udf7(a, b)``). Once the
argument types are known (``bind_udfs``, as a column is resolved) it is bound to a DuckDB
Python function of those types, registered on every connection that runs the query: the
driver's, for the result's types, and each executor's, from the definitions the
partition's task carries (``tasks.run_partition``). DuckDB calls it with a batch of Arrow
arrays: a ``udf`` runs row by row on Python values (None for null, as PySpark's), a
``pandas_udf`` once per batch on pandas Series.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, Callable

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.column import Column, to_expr
from strataflow.pyspark.sql.dialect import duck_type, to_sql
from strataflow.pyspark.sql.engine import UdfDef, register_udfs, run_query

__all__ = ["UserDefinedFunction", "UDFRegistration", "UdfDef", "udf", "pandas_udf", "bind_udfs", "udf_defs"]

_ids = itertools.count(1)
PREFIX = "__udf"


class UserDefinedFunction:
    """A Python function over columns, as PySpark's ``udf`` makes it.

    >>> from strataflow.pyspark.sql import functions as F
    >>> shout = F.udf(lambda s: None if s is None else s.upper() + "!")
    >>> spark.createDataFrame([("hi",), (None,)], ["s"]).select(shout("s").alias("x")).collect()
    [Row(x='HI!'), Row(x=None)]
    """

    def __init__(self, func: Callable, returnType: Any = "string", name: str | None = None,
                 vectorized: bool = False) -> None:
        from strataflow.pyspark.sql.types import DataType, _parse_type

        if not callable(func):
            raise TypeError(f"[NOT_CALLABLE] a udf needs a function, got {type(func).__name__}")
        self.func = func
        self.returnType = returnType if isinstance(returnType, DataType) else _parse_type(returnType or "string")
        self._name = name or getattr(func, "__name__", "udf")
        self._id = next(_ids)
        self.vectorized = vectorized
        self.deterministic = True

    def __call__(self, *cols: Any) -> Column:
        node = exp.Anonymous(this=f"{PREFIX}{self._id}", expressions=[to_expr(c) for c in cols])
        node.meta["udf"] = self
        node.meta["fn"] = self._name if self._name != "<lambda>" else "<lambda>"
        return Column(node)

    def asNondeterministic(self) -> "UserDefinedFunction":
        """Marks the UDF non-deterministic (kept for PySpark programs; nothing is cached by it).

        >>> from strataflow.pyspark.sql import functions as F
        >>> F.udf(lambda: 1, "int").asNondeterministic().deterministic
        False
        """
        self.deterministic = False
        return self


def udf(f: Any = None, returnType: Any = "string", *, useArrow: bool | None = None) -> Any:
    """A UDF of ``f`` returning ``returnType`` (a DataType or its DDL name; default string);
    as a decorator too (``@udf("int")`` or ``@udf(returnType=...)``).

    >>> from strataflow.pyspark.sql import functions as F
    >>> @F.udf("long")
    ... def plus_one(x):
    ...     return None if x is None else x + 1
    >>> [r[0] for r in spark.range(3).select(plus_one("id")).collect()]
    [1, 2, 3]
    """
    if _is_type(f):  # @udf, @udf("int"), @udf(returnType=...): the function comes next
        return functools.partial(UserDefinedFunction, returnType=f if f is not None else returnType)
    return UserDefinedFunction(f, returnType)


def pandas_udf(f: Any = None, returnType: Any = None, functionType: Any = None) -> Any:
    """A vectorized UDF: ``f`` takes pandas Series (a batch of rows each) and returns a
    Series as long; as a decorator too (``@pandas_udf("double")``). Only scalar UDFs.

    >>> from strataflow.pyspark.sql import functions as F
    >>> @F.pandas_udf("double")
    ... def half(s):
    ...     return s / 2
    >>> [r[0] for r in spark.range(3).select(half("id")).collect()]
    [0.0, 0.5, 1.0]
    """
    if _is_type(f):
        return functools.partial(UserDefinedFunction, returnType=f if f is not None else returnType, vectorized=True)
    return UserDefinedFunction(f, returnType, vectorized=True)


def _is_type(f: Any) -> bool:
    """True if a UDF maker's first argument is a return type (or nothing): the decorator form."""
    from strataflow.pyspark.sql.types import DataType

    return f is None or isinstance(f, (str, DataType))


class UDFRegistration:
    """``spark.udf``: ``register`` names a Python function (or a UDF) for ``spark.sql``.

    >>> _ = spark.udf.register("strlen", lambda s: len(s), "int")
    >>> spark.sql("SELECT strlen('four') AS n").first().n
    4
    """

    def __init__(self, session: Any) -> None:
        self._session = session

    def register(self, name: str, f: Any, returnType: Any = None) -> UserDefinedFunction:
        """Names ``f`` for SQL in this session; returns the UDF, callable on Columns too.

        >>> plus = spark.udf.register("plus_two", lambda x: x + 2, "long")
        >>> spark.range(1).select(plus("id")).first()[0]
        2
        """
        u = f if isinstance(f, UserDefinedFunction) else UserDefinedFunction(f, returnType or "string", name)
        self._session._udfs[name.lower()] = u
        return u


def sql_udfs(session: Any, tree: exp.Expression) -> None:
    """In a parsed query, calls of the session's registered UDF names made UDF calls."""
    known = getattr(session, "_udfs", {})
    for node in list(tree.find_all(exp.Anonymous)):
        u = known.get(node.name.lower())
        if u is not None:
            node.replace(u(*[Column(a) for a in node.expressions])._expr)


def bind_udfs(e: exp.Expression, schema: pa.Schema, table: str) -> exp.Expression:
    """Each UDF call in ``e`` (resolved over ``table`` of ``schema``) bound to a DuckDB
    function of its argument types, and registered on this thread's connection."""
    from strataflow.pyspark.sql.types import _nested

    calls = [n for n in e.find_all(exp.Anonymous) if n.meta.get("udf") is not None and "udf_def" not in n.meta]
    for node in reversed(calls):  # inner calls first: an outer one's argument types need them
        u = node.meta["udf"]
        defs = udf_defs(node)
        if node.expressions:
            probe = exp.select(*[a.copy() for a in node.expressions]).from_(table)
            register_udfs(defs)
            types = run_query(to_sql(probe), {table: schema.empty_table()}).schema.types
        else:
            types = []
        params = tuple(duck_type(t) for t in types)
        arrow = _nested(u.returnType)
        name = f"{PREFIX}{u._id}_{abs(hash(params)) % 10 ** 8}"
        d = UdfDef(name, u.func, params, duck_type(arrow), arrow, u.vectorized)
        node.set("this", name)
        node.meta["udf_def"] = d
        register_udfs((d,))
    return e


def udf_defs(e: exp.Expression | None) -> tuple[UdfDef, ...]:
    """The bound UDFs a query calls (what a task registers before running it)."""
    if e is None:
        return ()
    return tuple(n.meta["udf_def"] for n in e.find_all(exp.Anonymous) if n.meta.get("udf_def") is not None)
