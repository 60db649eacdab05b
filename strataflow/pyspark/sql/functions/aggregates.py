"""``pyspark.sql.functions``: aggregate functions and window value functions (PySpark's Aggregate and Window Functions).

Each function is defined with PySpark's signature and an example; ``call`` builds the
node by Spark's name, and ``sql/semantics`` gives it Spark's meaning or refuses it.
"""

from __future__ import annotations

from typing import Any, Sequence

from sqlglot import exp as sx

from strataflow.pyspark.sql.column import Column, spark_name
from strataflow.pyspark.sql.functions.builtin import arg, call

__all__ = ["percentile_approx", "approx_percentile", "percentile", "mode", "skewness", "kurtosis", "std", "every",
           "some", "bit_and", "bit_or", "bit_xor", "array_agg", "listagg", "string_agg", "listagg_distinct",
           "string_agg_distinct", "first_value", "last_value", "nth_value", "regr_avgx", "regr_avgy",
           "regr_count", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy",
           "grouping", "grouping_id", "approxCountDistinct", "histogram_numeric", "count_min_sketch",
           "collect_union", "try_sum", "try_avg"]


def _percentages(percentage: Any) -> sx.Expression:
    if isinstance(percentage, (list, tuple)):
        return sx.Array(expressions=[arg(float(p), "l") for p in percentage])
    return arg(percentage, "l")


def percentile_approx(col: "Column | str", percentage: "Column | float | Sequence[float]",
                      accuracy: "Column | int" = 10000) -> Column:
    """The smallest value of ``col`` whose rank reaches ``percentage`` of the non-null values
    (an array of them for an array of percentages), as Spark's quantile summary with
    ``accuracy`` gives it: the input's type, not interpolated.

    >>> df = spark.createDataFrame([(v,) for v in [1, 2, 3, 4, 10]], "x int")
    >>> df.select(F.percentile_approx("x", 0.5), F.percentile_approx("x", [0.1, 0.9])).first()
    Row(percentile_approx(x, 0.5, 10000)=3, percentile_approx(x, array(0.1, 0.9), 10000)=[1, 10])
    """
    return call("percentile_approx", arg(col, "c"), _percentages(percentage), arg(accuracy, "l"))


def approx_percentile(col: "Column | str", percentage: "Column | float | Sequence[float]",
                      accuracy: "Column | int" = 10000) -> Column:
    """``percentile_approx`` by its other name.

    >>> spark.createDataFrame([(1,), (2,), (9,)], "x int").select(F.approx_percentile("x", 0.5)).first()
    Row(approx_percentile(x, 0.5, 10000)=2)
    """
    return call("approx_percentile", arg(col, "c"), _percentages(percentage), arg(accuracy, "l"))


def percentile(col: "Column | str", percentage: "Column | float | Sequence[float]",
               frequency: "Column | int" = 1) -> Column:
    """The exact ``percentage`` percentile of the non-null values of ``col``, a double,
    interpolated linearly between the two nearest ranks (an array for an array of them).

    >>> df = spark.createDataFrame([(v,) for v in [1, 2, 3, 4]], "x int")
    >>> df.select(F.percentile("x", 0.5), F.percentile("x", [0.0, 0.25])).first()
    Row(percentile(x, 0.5, 1)=2.5, percentile(x, array(0.0, 0.25), 1)=[1.0, 1.75])
    """
    parts = [arg(col, "c"), _percentages(percentage)]
    if not (isinstance(frequency, int) and frequency == 1):
        parts.append(arg(frequency, "c"))
    return call("percentile", *parts, shown=[*parts[:2], arg(frequency, "c")])


def mode(col: "Column | str", deterministic: bool = False) -> Column:
    """The most frequent non-null value of ``col`` (of several as frequent: the smallest
    with ``deterministic``; without it Spark's hash order picks one, which is refused).

    >>> spark.createDataFrame([(1,), (2,), (2,), (None,)], "x int").select(F.mode("x")).first()
    Row(mode(x)=2)
    """
    c = arg(col, "c")
    if deterministic:
        e = call("mode", c, sx.true())
        e._expr.meta["shown"] = f"mode() WITHIN GROUP (ORDER BY {spark_name(c)} DESC)"
        return e
    return call("mode", c, shown=[c])


def skewness(col: "Column | str") -> Column:
    """The population skewness of ``col``: sqrt(n) * m3 / m2^1.5 over the central moments
    (null for no values or no spread).

    >>> spark.createDataFrame([(1.0,), (2.0,), (6.0,)], "x double").select(F.skewness("x")).first()[0]
    0.5951700641394974
    """
    return call("skewness", arg(col, "c"))


def kurtosis(col: "Column | str") -> Column:
    """The population excess kurtosis of ``col``: n * m4 / m2^2 - 3 (null for no values or
    no spread).

    >>> spark.createDataFrame([(1.0,), (2.0,), (6.0,)], "x double").select(F.kurtosis("x")).first()[0]
    -1.5
    """
    return call("kurtosis", arg(col, "c"))


def std(col: "Column | str") -> Column:
    """The sample standard deviation of ``col`` (``stddev``'s other name).

    >>> spark.createDataFrame([(1.0,), (3.0,)], "x double").select(F.std("x")).first()
    Row(std(x)=1.4142135623730951)
    """
    return call("std", arg(col, "c"))


def every(col: "Column | str") -> Column:
    """True if every non-null value of the boolean ``col`` is true (``bool_and``).

    >>> spark.createDataFrame([(True,), (False,), (None,)], "b boolean").select(F.every("b")).first()
    Row(every(b)=False)
    """
    return call("every", arg(col, "c"))


def some(col: "Column | str") -> Column:
    """True if some non-null value of the boolean ``col`` is true (``bool_or``).

    >>> spark.createDataFrame([(True,), (False,), (None,)], "b boolean").select(F.some("b")).first()
    Row(some(b)=True)
    """
    return call("some", arg(col, "c"))


def bit_and(col: "Column | str") -> Column:
    """The bitwise AND of the non-null values of the integral ``col``, of its type.

    >>> spark.createDataFrame([(7,), (13,)], "x int").select(F.bit_and("x")).first()
    Row(bit_and(x)=5)
    """
    return call("bit_and", arg(col, "c"))


def bit_or(col: "Column | str") -> Column:
    """The bitwise OR of the non-null values of the integral ``col``, of its type.

    >>> spark.createDataFrame([(4,), (1,)], "x int").select(F.bit_or("x")).first()
    Row(bit_or(x)=5)
    """
    return call("bit_or", arg(col, "c"))


def bit_xor(col: "Column | str") -> Column:
    """The bitwise XOR of the non-null values of the integral ``col``, of its type.

    >>> spark.createDataFrame([(7,), (2,)], "x int").select(F.bit_xor("x")).first()
    Row(bit_xor(x)=5)
    """
    return call("bit_xor", arg(col, "c"))


def array_agg(col: "Column | str") -> Column:
    """The non-null values of ``col`` as an array (``collect_list``; ``[]`` for none).

    >>> spark.createDataFrame([(1,), (None,), (2,)], "x int").select(F.array_agg("x")).first()
    Row(collect_list(x)=[1, 2])
    """
    return call("array_agg", arg(col, "c"))


def _listagg(name: str, col: "Column | str", delimiter: Any, distinct: bool) -> Column:
    c = arg(col, "c")
    this = sx.Distinct(expressions=[c]) if distinct else c
    d = None if delimiter is None else _bytes(delimiter) if isinstance(delimiter, bytes) else arg(delimiter, "l")
    e = sx.GroupConcat(this=this, separator=d)
    e.meta["fn"] = name
    shown = [this] + ([d] if d is not None else [sx.Null()])
    e.meta["call"] = (name, shown)
    return Column(e)


def _bytes(value: bytes) -> sx.Expression:
    """A binary literal (DuckDB's BLOB), named as Spark names one (``X'42'``)."""
    e = sx.Cast(this=sx.Literal.string("".join(f"\\x{b:02x}" for b in value)), to=sx.DataType.build("BLOB"))
    e.meta.update(internal=True, binary_literal=True, shown=f"X'{value.hex().upper()}'")
    return e


def listagg(col: "Column | str", delimiter: "Column | str | bytes | None" = None) -> Column:
    """The non-null values of the string ``col`` joined with ``delimiter`` (none: ''),
    null for no values.

    >>> spark.createDataFrame([("a",), (None,), ("b",)], "s string").select(F.listagg("s", "-")).first()[0]
    'a-b'
    """
    return _listagg("listagg", col, delimiter, False)


def string_agg(col: "Column | str", delimiter: "Column | str | bytes | None" = None) -> Column:
    """``listagg`` by its other name.

    >>> spark.createDataFrame([("a",), ("b",)], "s string").select(F.string_agg("s", ",")).first()[0]
    'a,b'
    """
    return _listagg("string_agg", col, delimiter, False)


def listagg_distinct(col: "Column | str", delimiter: "Column | str | bytes | None" = None) -> Column:
    """``listagg`` of the distinct non-null values.

    >>> spark.createDataFrame([("a",), ("a",), ("b",)], "s string").select(F.listagg_distinct("s")).first()[0]
    'ab'
    """
    return _listagg("listagg", col, delimiter, True)


def string_agg_distinct(col: "Column | str", delimiter: "Column | str | bytes | None" = None) -> Column:
    """``string_agg`` of the distinct non-null values.

    >>> spark.createDataFrame([("a",), ("a",)], "s string").select(F.string_agg_distinct("s", ",")).first()[0]
    'a'
    """
    return _listagg("string_agg", col, delimiter, True)


def _value_fn(name: str, kind: type, col: "Column | str", ignoreNulls: "bool | Column | None") -> Column:
    c = arg(col, "c")
    e: sx.Expression = kind(this=c)
    if isinstance(ignoreNulls, Column):
        e = sx.Anonymous(this=name, expressions=[c, ignoreNulls._expr])  # refused: not a literal
    elif ignoreNulls:
        e = sx.IgnoreNulls(this=e)
    e.meta["fn"] = name
    e.meta["call"] = (name, [c])
    return Column(e)


def first_value(col: "Column | str", ignoreNulls: "bool | Column | None" = None) -> Column:
    """The first value of ``col`` (the first non-null with ``ignoreNulls``), in a window
    frame or a group.

    >>> spark.createDataFrame([(None,), (2,)], "x int").select(F.first_value("x", True)).first()[0]
    2
    """
    return _value_fn("first_value", sx.FirstValue, col, ignoreNulls)


def last_value(col: "Column | str", ignoreNulls: "bool | Column | None" = None) -> Column:
    """The last value of ``col`` (the last non-null with ``ignoreNulls``), in a window
    frame or a group.

    >>> spark.createDataFrame([(1,), (None,)], "x int").select(F.last_value("x", True)).first()[0]
    1
    """
    return _value_fn("last_value", sx.LastValue, col, ignoreNulls)


def nth_value(col: "Column | str", offset: int, ignoreNulls: "bool | None" = False) -> Column:
    """The value of ``col`` at row ``offset`` (from 1) of the window frame, null before
    the frame reaches it (the ``offset``-th non-null with ``ignoreNulls``).

    >>> from strataflow.pyspark.sql import Window
    >>> w = Window.orderBy("x")
    >>> [r[0] for r in spark.createDataFrame([(1,), (2,), (3,)], "x int").select(F.nth_value("x", 2).over(w)).collect()]
    [None, 2, 2]
    """
    c, n = arg(col, "c"), arg(offset, "l")
    e: sx.Expression = sx.NthValue(this=c, offset=n)
    if ignoreNulls:
        e = sx.IgnoreNulls(this=e)
    e.meta["fn"] = "nth_value"
    e.meta["call"] = ("nth_value", [c, n])
    return Column(e)


def _regr(name: str, y: "Column | str", x: "Column | str") -> Column:
    return call(name, arg(y, "c"), arg(x, "c"))


def regr_avgx(y: "Column | str", x: "Column | str") -> Column:
    """The average of ``x`` over the rows where neither ``y`` nor ``x`` is null.

    >>> spark.createDataFrame([(1, 2), (None, 4), (3, 6)], "y int, x int").select(F.regr_avgx("y", "x")).first()
    Row(regr_avgx(y, x)=4.0)
    """
    return _regr("regr_avgx", y, x)


def regr_avgy(y: "Column | str", x: "Column | str") -> Column:
    """The average of ``y`` over the rows where neither ``y`` nor ``x`` is null.

    >>> spark.createDataFrame([(1, 2), (None, 4), (3, 6)], "y int, x int").select(F.regr_avgy("y", "x")).first()
    Row(regr_avgy(y, x)=2.0)
    """
    return _regr("regr_avgy", y, x)


def regr_count(y: "Column | str", x: "Column | str") -> Column:
    """The number of rows where neither ``y`` nor ``x`` is null.

    >>> spark.createDataFrame([(1, 2), (None, 4), (3, 6)], "y int, x int").select(F.regr_count("y", "x")).first()
    Row(regr_count(y, x)=2)
    """
    return _regr("regr_count", y, x)


def regr_intercept(y: "Column | str", x: "Column | str") -> Column:
    """The intercept of the least-squares line of ``y`` on ``x`` (rows with both non-null).

    >>> spark.createDataFrame([(1, 1), (3, 2), (5, 3)], "y int, x int").select(F.regr_intercept("y", "x")).first()
    Row(regr_intercept(y, x)=-1.0)
    """
    return _regr("regr_intercept", y, x)


def regr_r2(y: "Column | str", x: "Column | str") -> Column:
    """The coefficient of determination of the least-squares line of ``y`` on ``x``.

    >>> spark.createDataFrame([(1, 1), (3, 2), (5, 3)], "y int, x int").select(F.regr_r2("y", "x")).first()
    Row(regr_r2(y, x)=1.0)
    """
    return _regr("regr_r2", y, x)


def regr_slope(y: "Column | str", x: "Column | str") -> Column:
    """The slope of the least-squares line of ``y`` on ``x`` (rows with both non-null).

    >>> spark.createDataFrame([(1, 1), (3, 2), (5, 3)], "y int, x int").select(F.regr_slope("y", "x")).first()
    Row(regr_slope(y, x)=2.0)
    """
    return _regr("regr_slope", y, x)


def regr_sxx(y: "Column | str", x: "Column | str") -> Column:
    """The sum of squares of ``x``'s deviations from its mean (rows with both non-null).

    >>> spark.createDataFrame([(1, 1), (3, 2), (5, 3)], "y int, x int").select(F.regr_sxx("y", "x")).first()
    Row(regr_sxx(y, x)=2.0)
    """
    return _regr("regr_sxx", y, x)


def regr_sxy(y: "Column | str", x: "Column | str") -> Column:
    """The sum of products of ``y``'s and ``x``'s deviations (rows with both non-null).

    >>> spark.createDataFrame([(1, 1), (3, 2), (5, 3)], "y int, x int").select(F.regr_sxy("y", "x")).first()
    Row(regr_sxy(y, x)=4.0)
    """
    return _regr("regr_sxy", y, x)


def regr_syy(y: "Column | str", x: "Column | str") -> Column:
    """The sum of squares of ``y``'s deviations from its mean (rows with both non-null).

    >>> spark.createDataFrame([(1, 1), (3, 2), (5, 3)], "y int, x int").select(F.regr_syy("y", "x")).first()
    Row(regr_syy(y, x)=8.0)
    """
    return _regr("regr_syy", y, x)


def grouping(col: "Column | str") -> Column:
    """1 where ``col`` is aggregated away in the row's grouping set (cube, rollup), else 0:
    refused, the grouping sets run as a union of aggregates that cannot tell it.

    >>> try:
    ...     spark.range(1).cube("id").agg(F.grouping("id")).collect()
    ... except Exception as e:
    ...     print(type(e).__name__)
    AnalysisException
    """
    return call("grouping", arg(col, "c"))


def grouping_id(*cols: "Column | str") -> Column:
    """The bits of ``grouping`` of each of ``cols`` as one number: refused, as ``grouping``.

    >>> try:
    ...     spark.range(1).cube("id").agg(F.grouping_id()).collect()
    ... except Exception as e:
    ...     print(type(e).__name__)
    AnalysisException
    """
    return call("grouping_id", *[arg(c, "c") for c in cols])


def approxCountDistinct(col: "Column | str", rsd: "float | None" = None) -> Column:
    """``approx_count_distinct`` by its old name: refused, DuckDB's HyperLogLog is not
    Spark's HLL++.

    >>> try:
    ...     spark.range(3).select(F.approxCountDistinct("id")).collect()
    ... except Exception as e:
    ...     print(type(e).__name__)
    AnalysisException
    """
    parts = [arg(col, "c")] + ([] if rsd is None else [arg(rsd, "l")])
    return call("approx_count_distinct", *parts)


def histogram_numeric(col: "Column | str", nBins: "Column | int") -> Column:
    """A histogram of ``col`` in ``nBins`` bins as Spark's streaming algorithm builds it:
    refused (its bins depend on Spark's merge order).

    >>> try:
    ...     spark.range(3).select(F.histogram_numeric("id", F.lit(2))).collect()
    ... except Exception as e:
    ...     print(type(e).__name__)
    AnalysisException
    """
    return call("histogram_numeric", arg(col, "c"), arg(nBins, "l"))


def count_min_sketch(col: "Column | str", eps: "Column | float", confidence: "Column | float",
                     seed: "Column | int | None" = None) -> Column:
    """Spark's serialized count-min sketch of ``col``: refused (its hashes and bytes are Spark's).

    >>> try:
    ...     spark.range(3).select(F.count_min_sketch("id", F.lit(0.5), F.lit(0.5), F.lit(1))).collect()
    ... except Exception as e:
    ...     print(type(e).__name__)
    AnalysisException
    """
    parts = [arg(col, "c"), arg(eps, "l"), arg(confidence, "l")] + ([] if seed is None else [arg(seed, "l")])
    return call("count_min_sketch", *parts)


def collect_union(col: "Column | str") -> Column:
    """The distinct values of the array column ``col``'s arrays, together: refused (the
    element order is Spark's hash set's).

    >>> try:
    ...     spark.createDataFrame([([1],)], "a array<int>").select(F.collect_union("a")).collect()
    ... except Exception as e:
    ...     print(type(e).__name__)
    AnalysisException
    """
    return call("collect_union", arg(col, "c"))


def try_sum(col: "Column | str") -> Column:
    """The sum of ``col`` as ``sum`` gives it, but null where it overflows (integral values:
    from the first overflowing addition on).

    >>> spark.createDataFrame([(9223372036854775807,), (1,)], "x bigint").select(F.try_sum("x")).first()
    Row(try_sum(x)=None)
    """
    return call("try_sum", arg(col, "c"))


def try_avg(col: "Column | str") -> Column:
    """The average of ``col`` as ``avg`` gives it, but null where it overflows.

    >>> spark.createDataFrame([(1,), (2,)], "x int").select(F.try_avg("x")).first()
    Row(try_avg(x)=1.5)
    """
    return call("try_avg", arg(col, "c"))
