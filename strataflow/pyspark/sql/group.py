"""``GroupedData``: what ``df.groupBy(...)`` returns, until an aggregate makes a DataFrame."""

from __future__ import annotations

from typing import Any

from strataflow.pyspark.sql.column import Column

__all__ = ["GroupedData"]


class GroupedData:
    """Rows grouped by keys: ``agg`` (Columns, or a dict of column -> function name),
    ``count``, ``sum``, ``avg``/``mean``, ``min``, ``max``.

    >>> df = spark.createDataFrame([("a", 1), ("b", 2), ("a", 3)], ["k", "v"])
    >>> sorted(df.groupBy("k").agg({"v": "max"}).collect())
    [Row(k='a', max(v)=3), Row(k='b', max(v)=2)]
    """

    def __init__(self, df: Any, keys: list) -> None:
        self._df, self._keys = df, keys

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
        return self._df._aggregate(self._keys, self._df._items(exprs))

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
