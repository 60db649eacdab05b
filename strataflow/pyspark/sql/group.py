"""``GroupedData``: what ``df.groupBy(...)`` returns, until an aggregate makes a DataFrame."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.column import Column, spark_name

__all__ = ["GroupedData"]


class GroupedData:
    """Rows grouped by keys: ``agg`` (Columns, or a dict of column -> function name),
    ``count``, ``sum``, ``avg``/``mean``, ``min``, ``max``.

    >>> df = spark.createDataFrame([("a", 1), ("b", 2), ("a", 3)], ["k", "v"])
    >>> sorted(df.groupBy("k").agg({"v": "max"}).collect())
    [Row(k='a', max(v)=3), Row(k='b', max(v)=2)]
    """

    def __init__(self, df: Any, keys: list, sets: list[list[int]] | None = None, kind: str = "GroupBy",
                 pivot: tuple[Any, list] | None = None) -> None:
        self._df, self._keys = df, keys
        self._sets = sets  # rollup, cube, grouping sets: the indexes of ``keys`` each set groups by
        self._kind, self._pivot = kind, pivot

    def __repr__(self) -> str:
        keys = ", ".join(name for _, name, _ in self._keys)
        value = ", ".join(f"{n}: {t}" for n, t in self._df.dtypes)
        return f"GroupedData[grouping expressions: [{keys}], value: [{value}], type: {self._kind}]"

    def pivot(self, pivot_col: str, values: list | None = None) -> "GroupedData":
        """Each value of ``pivot_col`` (``values``, or its distinct values in order) becomes a
        column of the aggregate that follows, computed over that value's rows.

        >>> df = spark.createDataFrame([(2012, "Java", 20), (2012, "dotNET", 5), (2013, "Java", 30)],
        ...                            ["year", "course", "earnings"])
        >>> df.groupBy("year").pivot("course").sum("earnings").orderBy("year").collect()
        [Row(year=2012, Java=20, dotNET=5), Row(year=2013, Java=30, dotNET=None)]
        """
        if self._sets is not None or self._pivot is not None:
            raise AnalysisException("[UNSUPPORTED_FEATURE] pivot follows groupBy only, once", "UNSUPPORTED_FEATURE")
        if values is None:
            values = sorted((r[0] for r in self._df.select(pivot_col).distinct().collect()),
                            key=lambda v: (v is not None, v))
        return GroupedData(self._df, self._keys, kind="Pivot", pivot=(pivot_col, list(values)))

    def _pivoted(self, exprs: tuple) -> tuple:
        """Each aggregate once per pivot value, over the rows with that value only."""
        from strataflow.pyspark.sql import functions as F

        col, values = self._pivot  # type: ignore[misc]
        out = []
        for v in values:
            cond = F.col(col).eqNullSafe(v)._expr
            for e in exprs:
                inner = e._expr.this if isinstance(e._expr, exp.Alias) else e._expr
                label = str(v) if v is not None else "null"
                name = label if len(exprs) == 1 else f"{label}_{spark_name(e._expr)}"
                agg = _only_where(inner.copy(), cond)
                if any(not isinstance(a, _NULL_WHEN_EMPTY) for a in agg.find_all(exp.AggFunc)):
                    # count and collect give 0 and [] over no rows; a pivot cell with no rows is null
                    seen = exp.Count(this=exp.Case(ifs=[exp.If(this=cond.copy(), true=exp.Literal.number(1))]))
                    agg = exp.Case(ifs=[exp.If(this=exp.GT(this=seen, expression=exp.Literal.number(0)), true=agg)])
                out.append(Column(agg).alias(name))
        return tuple(out)

    def _grouping_sets(self, items: list) -> Any:
        """The union of one aggregate per grouping set; a key a set leaves out is null."""
        from strataflow.pyspark.sql import functions as F
        from strataflow.pyspark.sql.types import from_arrow

        df, parts = self._df, []
        names = [n for _, n, _ in self._keys] + [n for _, n, _ in items]
        full = df._aggregate(self._keys, items)._current.fields
        types = [from_arrow(f.type) for f in full[:len(self._keys)]]
        for s in self._sets:  # type: ignore[union-attr]
            agg = df._aggregate([self._keys[i] for i in s], items)
            cols = agg.columns
            pos = {i: j for j, i in enumerate(s)}
            parts.append(agg.select(*[F.col(f"`{cols[pos[i]]}`") if i in pos else F.lit(None).cast(types[i])
                                      for i in range(len(self._keys))], *[F.col(f"`{c}`") for c in cols[len(s):]]))
        out = parts[0]
        for p in parts[1:]:
            out = out.union(p)
        return out.toDF(*names)

    def agg(self, *exprs: Any) -> Any:
        """The grouping keys and the aggregates, one row per group.

        >>> from strataflow.pyspark.sql import functions as F
        >>> df = spark.createDataFrame([("a", 1), ("a", 3)], ["k", "v"])
        >>> df.groupBy("k").agg(F.avg("v").alias("mean"), F.collect_list("v").alias("all")).collect()
        [Row(k='a', mean=2.0, all=[1, 3])]
        """
        from strataflow.pyspark.sql import functions as F

        if len(exprs) == 1 and isinstance(exprs[0], dict):
            cols = []
            for name, fn in exprs[0].items():
                fn = {"mean": "avg", "stddev": "stddev"}.get(fn, fn)
                cols.append(F.count(name) if fn == "count" else getattr(F, fn)(name))
            exprs = tuple(cols)
        if not exprs or not all(isinstance(e, Column) for e in exprs):
            raise TypeError("agg takes Columns, or one dict of column name -> aggregate function name")
        if self._pivot is not None:
            exprs = self._pivoted(exprs)
        items = self._df._items(exprs)
        if self._sets is not None:
            return self._grouping_sets(items)
        return self._df._aggregate(self._keys, items)

    def count(self) -> Any:
        """Rows per group, as column ``count``.

        >>> spark.createDataFrame([("a",), ("a",)], ["k"]).groupBy("k").count().collect()
        [Row(k='a', count=2)]
        """
        from strataflow.pyspark.sql import functions as F

        return self.agg(F.count("*").alias("count"))

    def _each(self, fn: str, cols: tuple) -> Any:
        from strataflow.pyspark.sql import functions as F
        import pyarrow as pa

        if not cols:
            keys = {n.lower() for _, n, _ in self._keys}
            cols = tuple(f.name for f in self._df._current.fields if f.name.lower() not in keys
                         and (pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type)))
        return self.agg(*[getattr(F, fn)(c) for c in cols])

    def sum(self, *cols: str) -> Any:
        """Each numeric column's (or the named columns') sum per group.

        >>> spark.createDataFrame([("a", 1), ("a", 2)], ["k", "v"]).groupBy("k").sum("v").collect()
        [Row(k='a', sum(v)=3)]
        """
        return self._each("sum", cols)

    def avg(self, *cols: str) -> Any:
        """Each numeric column's mean per group.

        >>> spark.createDataFrame([("a", 1), ("a", 2)], ["k", "v"]).groupBy("k").avg().collect()
        [Row(k='a', avg(v)=1.5)]
        """
        return self._each("avg", cols)

    mean = avg

    def min(self, *cols: str) -> Any:
        """Each numeric column's least value per group.

        >>> spark.createDataFrame([("a", 1), ("a", 2)], ["k", "v"]).groupBy("k").min("v").collect()
        [Row(k='a', min(v)=1)]
        """
        return self._each("min", cols)

    def max(self, *cols: str) -> Any:
        """Each numeric column's greatest value per group.

        >>> spark.createDataFrame([("a", 1), ("a", 2)], ["k", "v"]).groupBy("k").max("v").collect()
        [Row(k='a', max(v)=2)]
        """
        return self._each("max", cols)


#: aggregates that are null over no rows already
_NULL_WHEN_EMPTY = (exp.Sum, exp.Min, exp.Max, exp.Avg, exp.Stddev, exp.StddevPop, exp.StddevSamp, exp.Variance,
                    exp.VariancePop, exp.First, exp.Last, exp.AnyValue)


def _only_where(agg: exp.Expression, cond: exp.Expression) -> exp.Expression:
    """``agg`` with each aggregate function's arguments null where ``cond`` is false
    (``count(*)`` counts the rows where it holds)."""
    def guard(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.AggFunc):
            for key in ("this", "expression"):
                arg = node.args.get(key)
                if isinstance(arg, exp.Distinct):
                    arg.set("expressions", [exp.Case(ifs=[exp.If(this=cond.copy(), true=a)]) for a in arg.expressions])
                elif isinstance(arg, exp.Expression):
                    val = exp.Literal.number(1) if isinstance(arg, exp.Star) else arg
                    node.set(key, exp.Case(ifs=[exp.If(this=cond.copy(), true=val)]))
            return node
        return node

    return agg.transform(guard, copy=False)
