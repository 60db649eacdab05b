"""The core of ``pyspark.sql.functions`` (columns, literals, ``when``, windows' ranking
functions) and the functions made from the spec table; the other modules of this package
define a family each, explicitly, with ``call`` and ``arg`` below.

Each is a sqlglot node built by Spark's name (``sx.func(name, ..., dialect="spark")``),
so its meaning is Spark's and its DuckDB spelling sqlglot's transpiler's; the spec table
says which arguments are columns (a string is a column name) and which are literals (a
string is a string), as PySpark's signatures do.
"""

from __future__ import annotations

import builtins
import sys
from typing import Any

from sqlglot import exp as sx

from strataflow.pyspark.sql.column import Column, isnan_expr, lit_expr, to_expr
from strataflow.pyspark.sql.spark_sql_dialect import SparkSQL
from strataflow.pyspark.sql.udf import pandas_udf, udf

__all__ = ["col", "column", "lit", "expr", "when", "broadcast", "count", "countDistinct", "count_distinct",
           "sum_distinct", "sumDistinct", "raise_error", "isnan", "asc", "desc", "struct", "array", "row_number",
           "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "current_date",
           "current_timestamp"]


def col(name: str) -> Column:
    """A column by name (``"a"``, ``"t.a"``, ``"*"``).

    >>> spark.createDataFrame([(1, 2)], ["a", "b"]).select(col("b")).first()
    Row(b=2)
    """
    return Column(to_expr(name))


column = col


def lit(value: Any) -> Column:
    """A literal value (a Column is returned as it is).

    >>> spark.range(1).select(lit(5).alias("five"), lit("x")).first()
    Row(five=5, x='x')
    """
    return value if isinstance(value, Column) else Column(lit_expr(value))


def expr(text: str) -> Column:
    """A column from Spark SQL text.

    >>> spark.createDataFrame([(2,)], ["a"]).select(expr("a * 10 AS b")).first()
    Row(b=20)
    """
    import sqlglot

    return Column(sqlglot.parse_one(text, read=SparkSQL))


def when(condition: Column, value: Any) -> Column:
    """``CASE WHEN condition THEN value`` (add ``.when`` and ``.otherwise``).

    >>> spark.range(3).select(when(col("id") > 1, "big").otherwise("small").alias("s")).collect()
    [Row(s='small'), Row(s='small'), Row(s='big')]
    """
    return Column(sx.Case(ifs=[sx.If(this=condition._expr, true=_arg(value, "l"))]))


def raise_error(errMsg: "Column | str") -> Column:
    """Fails the query with ``errMsg`` where it is evaluated (a branch of ``when`` that no
    row reaches never fails).

    >>> spark.range(2).select(when(col("id") >= 0, 1).otherwise(raise_error("unreachable")).alias("w")).collect()
    [Row(w=1), Row(w=1)]
    """
    e = sx.Anonymous(this="ERROR", expressions=[_arg(errMsg, "l")])
    e.meta["fn"] = "raise_error"
    return Column(e)


def isnan(c: "Column | str") -> Column:
    """True where ``c`` is NaN; false elsewhere, null included, as Spark's.

    >>> df = spark.createDataFrame([(1.0,), (float("nan"),), (None,)], "h double")
    >>> [r[0] for r in df.select(isnan("h")).collect()]
    [False, True, False]
    """
    return Column(isnan_expr(_arg(c, "c")))


def broadcast(df: Any) -> Any:
    """Marks a DataFrame as small enough to copy to every partition of a join.

    >>> small = spark.createDataFrame([(1, "x")], ["k", "v"])
    >>> spark.range(3).join(broadcast(small), col("id") == col("k")).count()
    1
    """
    return df._broadcast_hint()


def count(c: "Column | str") -> Column:
    """Rows where ``c`` is not null (``"*"``: all rows, named ``count(1)``).

    >>> spark.createDataFrame([(1,), (None,)], "a int").select(count("a"), count("*")).first()
    Row(count(a)=1, count(1)=2)
    """
    e = sx.Star() if isinstance(c, str) and c == "*" else to_expr(c)
    return Column(sx.Count(this=e))


def countDistinct(c: "Column | str", *cols: "Column | str") -> Column:
    """Distinct non-null values of ``c`` (of the tuple, with more columns).

    >>> spark.createDataFrame([(1,), (1,), (2,)], ["a"]).select(countDistinct("a")).first()
    Row(count(DISTINCT a)=2)
    """
    return Column(sx.Count(this=sx.Distinct(expressions=[to_expr(x) for x in (c, *cols)])))


count_distinct = countDistinct


def sum_distinct(c: "Column | str") -> Column:
    """The sum of the distinct values of ``c``.

    >>> spark.createDataFrame([(1,), (1,), (2,)], ["a"]).select(sum_distinct("a").alias("s")).first().s
    3
    """
    return Column(sx.Sum(this=sx.Distinct(expressions=[to_expr(c)])))


sumDistinct = sum_distinct


def asc(c: str) -> Column:
    """Ascending order of column ``c``.

    >>> [r.id for r in spark.range(3).orderBy(asc("id")).collect()]
    [0, 1, 2]
    """
    return col(c).asc()


def desc(c: str) -> Column:
    """Descending order of column ``c``.

    >>> [r.id for r in spark.range(3).orderBy(desc("id")).collect()]
    [2, 1, 0]
    """
    return col(c).desc()


def struct(*cols: "Column | str") -> Column:
    """A struct of the columns, fields named after them.

    >>> spark.createDataFrame([(1, "x")], ["a", "b"]).select(struct("a", "b").alias("s")).first().s
    Row(a=1, b='x')
    """
    from strataflow.pyspark.sql.column import spark_name

    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    parts = [to_expr(c) for c in cols]
    # a column or an alias gives its field its name; anything else is col1, col2... by
    # position, as Spark's CreateStruct names what is not a named expression
    names = [spark_name(p) if isinstance(p, (sx.Alias, sx.Column)) else f"col{i + 1}" for i, p in enumerate(parts)]
    return Column(sx.Struct(expressions=[sx.PropertyEQ(this=sx.to_identifier(name, quoted=True),
                                                         expression=p.this if isinstance(p, sx.Alias) else p)
                                          for name, p in zip(names, parts)]))


def array(*cols: "Column | str") -> Column:
    """An array of the columns' values.

    >>> spark.createDataFrame([(1, 2)], ["a", "b"]).select(array("a", "b").alias("v")).first().v
    [1, 2]
    """
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    return Column(sx.Array(expressions=[to_expr(c) for c in cols]))


def _window_fn(name: str, *args: sx.Expression) -> Column:
    e = sx.func(name, *args, dialect="spark")
    e.meta["fn"] = name
    return Column(e)


def row_number() -> Column:
    """1, 2, 3... within a window partition, in its order.

    >>> from strataflow.pyspark.sql import Window
    >>> [r.n for r in spark.range(3).select(row_number().over(Window.orderBy("id")).alias("n")).collect()]
    [1, 2, 3]
    """
    return _window_fn("row_number")


def rank() -> Column:
    """Rank with gaps after ties.

    >>> from strataflow.pyspark.sql import Window
    >>> df = spark.createDataFrame([(1,), (1,), (2,)], ["a"])
    >>> [r.r for r in df.select(rank().over(Window.orderBy("a")).alias("r")).collect()]
    [1, 1, 3]
    """
    return _window_fn("rank")


def dense_rank() -> Column:
    """Rank without gaps after ties.

    >>> from strataflow.pyspark.sql import Window
    >>> df = spark.createDataFrame([(1,), (1,), (2,)], ["a"])
    >>> [r.r for r in df.select(dense_rank().over(Window.orderBy("a")).alias("r")).collect()]
    [1, 1, 2]
    """
    return _window_fn("dense_rank")


def percent_rank() -> Column:
    """(rank - 1) / (rows in the partition - 1).

    >>> from strataflow.pyspark.sql import Window
    >>> [r.p for r in spark.range(3).select(percent_rank().over(Window.orderBy("id")).alias("p")).collect()]
    [0.0, 0.5, 1.0]
    """
    return _window_fn("percent_rank")


def cume_dist() -> Column:
    """The fraction of the partition's rows at or before this one.

    >>> from strataflow.pyspark.sql import Window
    >>> [r.c for r in spark.range(2).select(cume_dist().over(Window.orderBy("id")).alias("c")).collect()]
    [0.5, 1.0]
    """
    return _window_fn("cume_dist")


def ntile(n: int) -> Column:
    """The bucket, 1 to ``n``, of the row in its window partition.

    >>> from strataflow.pyspark.sql import Window
    >>> [r.t for r in spark.range(4).select(ntile(2).over(Window.orderBy("id")).alias("t")).collect()]
    [1, 1, 2, 2]
    """
    return _window_fn("ntile", sx.Literal.number(n))


def lag(c: "Column | str", offset: int = 1, default: Any = None) -> Column:
    """The value ``offset`` rows before in the window (``default`` before the first).

    >>> from strataflow.pyspark.sql import Window
    >>> [r.p for r in spark.range(3).select(lag("id").over(Window.orderBy("id")).alias("p")).collect()]
    [None, 0, 1]
    """
    args = [to_expr(c), sx.Literal.number(offset)] + ([lit_expr(default)] if default is not None else [])
    return _window_fn("lag", *args)


def lead(c: "Column | str", offset: int = 1, default: Any = None) -> Column:
    """The value ``offset`` rows after in the window (``default`` after the last).

    >>> from strataflow.pyspark.sql import Window
    >>> [r.n for r in spark.range(3).select(lead("id", 1, -1).over(Window.orderBy("id")).alias("n")).collect()]
    [1, 2, -1]
    """
    args = [to_expr(c), sx.Literal.number(offset)] + ([lit_expr(default)] if default is not None else [])
    return _window_fn("lead", *args)


def current_date() -> Column:
    """Today's date.

    >>> import datetime; spark.range(1).select(current_date().alias("d")).first().d == datetime.date.today()
    True
    """
    e = sx.CurrentDate()
    e.meta["call"] = ("current_date", [])  # Spark's name: current_date()
    return Column(e)


def current_timestamp() -> Column:
    """The current time.

    >>> import datetime; isinstance(spark.range(1).select(current_timestamp().alias("t")).first().t, datetime.datetime)
    True
    """
    e = sx.CurrentTimestamp()
    e.meta["call"] = ("current_timestamp", [])  # Spark's name: current_timestamp()
    return Column(e)


def _arg(v: Any, kind: str) -> sx.Expression:
    if isinstance(v, Column):
        return v._expr
    if kind == "c" and isinstance(v, str):
        return to_expr(v)
    return lit_expr(v)


#: Spark function name -> its arguments: c a column (a string names one), l a literal;
#: a final * repeats the kind before it
_SPECS = {
    # aggregates
    "sum": "c", "avg": "c", "mean": "c", "min": "c", "max": "c", "first": "cl", "last": "cl",
    "collect_list": "c", "collect_set": "c", "stddev": "c", "stddev_samp": "c", "stddev_pop": "c",
    "variance": "c", "var_samp": "c", "var_pop": "c", "approx_count_distinct": "c", "any_value": "c",
    "count_if": "c", "product": "c", "median": "c", "corr": "cc",
    "covar_pop": "cc", "covar_samp": "cc", "max_by": "cc", "min_by": "cc", "bool_and": "c", "bool_or": "c",
    # math
    "abs": "c", "sqrt": "c", "exp": "c", "log10": "c", "log2": "c", "ln": "c", "pow": "cc", "power": "cc",
    "round": "cl", "bround": "cl", "floor": "c", "ceil": "c", "ceiling": "c", "signum": "c", "sin": "c",
    "cos": "c", "tan": "c", "greatest": "c*", "least": "c*", "nanvl": "cc", "cbrt": "c",
    "degrees": "c", "radians": "c",
    # strings
    "upper": "c", "lower": "c", "length": "c", "trim": "c", "ltrim": "c", "rtrim": "c", "reverse": "c",
    "concat": "c*", "concat_ws": "lc*", "substring": "cll", "instr": "cl", "locate": "lcl", "lpad": "cll",
    "rpad": "cll", "repeat": "cl", "split": "cll", "regexp_replace": "cll", "regexp_extract": "cll",
    "initcap": "c", "ascii": "c", "translate": "cll", "md5": "c", "sha1": "c",
    "sha2": "cl", "base64": "c", "hex": "c", "left": "cl", "right": "cl", "replace": "cll",
    # null handling
    "coalesce": "c*", "isnull": "c", "nvl": "cc", "ifnull": "cc", "nullif": "cc",
    # dates
    "year": "c", "month": "c", "dayofmonth": "c", "day": "c", "dayofweek": "c", "dayofyear": "c",
    "hour": "c", "minute": "c", "second": "c", "quarter": "c", "weekofyear": "c", "last_day": "c",
    "date_add": "cl", "date_sub": "cl", "add_months": "cl", "datediff": "cc",
    "to_date": "cl", "to_timestamp": "cl", "date_format": "cl", "date_trunc": "lc", "trunc": "cl",
    "unix_timestamp": "cl", "from_unixtime": "cl", "make_date": "ccc",
    # arrays and maps
    "size": "c", "array_contains": "cl", "explode": "c", "explode_outer": "c", "posexplode": "c",
    "array_distinct": "c", "sort_array": "cl", "array_max": "c", "array_min": "c",
    "array_join": "cl", "flatten": "c",
    "array_union": "cc", "array_intersect": "cc", "array_except": "cc",
    "arrays_zip": "c*", "slice": "cll", "sequence": "ccc",
}
#: the function PySpark's wrapper calls, where it is not the wrapper's own name (F.pow calls power)
_CALLED = {"pow": "power", "mean": "avg"}
_ALIASES = {"mean": "avg", "ceiling": "ceil", "day": "dayofmonth", "power": "pow", "ifnull": "nvl",
            "create_map": "map"}


def _make(name: str, spec: str):
    def f(*args: Any) -> Column:
        kinds = spec[:-1] + spec[-2] * builtins.max(0, len(args) - len(spec) + 1) if spec.endswith("*") else spec
        if len(args) > len(kinds):
            raise TypeError(f"{name}() takes at most {len(kinds)} arguments ({len(args)} given)")
        parts = [_arg(a, k) for a, k in zip(args, kinds)]
        sql_name = _ALIASES.get(name, name)
        e = sx.func(sql_name, *parts, dialect="spark")
        e.meta["fn"] = sql_name
        e.meta["call"] = (_CALLED.get(name, name), parts)  # Spark's name of the column (column_names.call_name)
        return Column(e)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Spark's ``{name}`` ({', '.join({'c': 'column', 'l': 'literal'}.get(k, 'more') for k in spec)})."
    return f


_module = sys.modules[__name__]
for _name, _spec in _SPECS.items():
    setattr(_module, _name, _make(_name, _spec))
__all__ += list(_SPECS) + ["udf", "pandas_udf"]


def call(name: str, *parts: sx.Expression, shown: "list[sx.Expression] | None" = None) -> Column:
    """The Column of Spark's function ``name`` applied to ``parts`` (sqlglot nodes: use
    ``arg(v, "c")`` for a column argument, ``arg(v, "l")`` for a literal one). sqlglot
    builds the node by Spark's name, so the semantics rules (``sql/semantics``) see the
    same node the ``spark.sql`` form gives; ``shown``: the arguments Spark shows in the
    column's name, where they are not ``parts``."""
    e = sx.func(name, *parts, dialect="spark")
    e.meta["fn"] = name
    e.meta["call"] = (name, list(parts if shown is None else shown))
    return Column(e)


def arg(v: Any, kind: str) -> sx.Expression:
    """An argument as a sqlglot node: ``kind`` ``"c"`` reads a string as a column name
    (PySpark's ``ColumnOrName``), ``"l"`` as a literal."""
    return _arg(v, kind)
