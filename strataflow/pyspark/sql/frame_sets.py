"""Set operations of :class:`DataFrame` (a mixin): ``intersect``, ``subtract``,
``exceptAll``, ``intersectAll`` and ``unpivot``, and the small reshapings beside them.

Both inputs are matched by position and cast to common types (as ``union``), then rows
are exchanged by the hash of every column, so equal rows of both sides meet in one
partition, where DuckDB's ``INTERSECT``/``EXCEPT`` (``ALL`` or distinct) runs. Nulls
compare equal there, as in Spark's set operations.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.column import spark_name
from strataflow.pyspark.sql.dialect import duck_type
from strataflow.pyspark.sql.engine import run_query
from strataflow.pyspark.sql.plan import Plan
from strataflow.pyspark.sql.resolve import Field, field_of
from strataflow.pyspark.sql.task_memory import zip_queries
from strataflow.pyspark.sql.tasks import offset_rows, set_op

if TYPE_CHECKING:
    from strataflow.pyspark.sql.dataframe import DataFrame

__all__ = ["DataFrameSets", "aligned"]


def aligned(lp: Plan, rp: Plan, what: str) -> tuple[Plan, Plan, list[Field]]:
    """Both plans with the left's names and both sides' common types (SQL's rule for
    ``UNION``), and the fields of the result."""
    if len(lp.fields) != len(rp.fields):
        raise AnalysisException(f"[NUM_COLUMNS_MISMATCH] {what} can only be performed on inputs with the same "
                                f"number of columns, but the first input has {len(lp.fields)} columns and the "
                                f"second input has {len(rp.fields)} columns.", "NUM_COLUMNS_MISMATCH")
    r_as_l = pa.schema([pa.field(a.phys, b.type) for a, b in zip(lp.fields, rp.fields)])
    both = run_query("SELECT * FROM __l UNION ALL SELECT * FROM __r",
                     {"__l": lp.schema.empty_table(), "__r": r_as_l.empty_table()}).schema
    sides = []
    for p in (lp, rp):
        items = [(_cast(exp.column(f.phys, quoted=True), None if f.type == t.type else duck_type(t.type)),
                  lf.name, lf.origins) for f, t, lf in zip(p.fields, both, lp.fields)]
        sides.append(p.project(items))
    return sides[0], sides[1], [Field(f.name, f.phys, t.type, f.origins) for f, t in zip(lp.fields, both)]


def _cast(e: exp.Expression, to: str | None) -> exp.Expression:
    return e if to is None else exp.cast(e, to)


class DataFrameSets:
    """The set operations of :class:`DataFrame` (a mixin)."""

    _current: Plan
    _new: Callable[[Plan], "DataFrame"]
    _shuffle_partitions: Callable[[], int]

    def _set(self, other: "DataFrame", op: str, what: str) -> "DataFrame":
        left, right, fields = aligned(self._current, other._current, what)
        n = self._shuffle_partitions()
        lx = left.exchange_hash([exp.column(f.phys, quoted=True) for f in left.fields], n)
        rx = right.exchange_hash([exp.column(f.phys, quoted=True) for f in right.fields], n)
        ds = zip_queries(lx.dataset(), rx.dataset(), functools.partial(
            set_op, f"SELECT * FROM __l {op} SELECT * FROM __r", lx.schema, rx.schema))
        return self._new(Plan(left.session, ds, pa.schema([pa.field(f.phys, f.type) for f in fields]), fields))

    def intersect(self, other: "DataFrame") -> "DataFrame":
        """The distinct rows in both (SQL's ``INTERSECT``).

        >>> a = spark.createDataFrame([("a", 1), ("a", 1), ("b", 3), ("c", 4)], ["k", "v"])
        >>> b = spark.createDataFrame([("a", 1), ("b", 3), (None, 0)], ["k", "v"])
        >>> sorted(a.intersect(b).collect())
        [Row(k='a', v=1), Row(k='b', v=3)]
        """
        return self._set(other, "INTERSECT", "INTERSECT")

    def intersectAll(self, other: "DataFrame") -> "DataFrame":
        """The rows in both, each as many times as it is in both (SQL's ``INTERSECT ALL``).

        >>> a = spark.createDataFrame([(1,), (1,), (1,), (2,)], ["n"])
        >>> b = spark.createDataFrame([(1,), (1,), (3,)], ["n"])
        >>> sorted(r.n for r in a.intersectAll(b).collect())
        [1, 1]
        """
        return self._set(other, "INTERSECT ALL", "INTERSECT ALL")

    def subtract(self, other: "DataFrame") -> "DataFrame":
        """The distinct rows of this that are not in ``other`` (SQL's ``EXCEPT``).

        >>> a = spark.createDataFrame([(1,), (1,), (2,), (None,)], "n int")
        >>> b = spark.createDataFrame([(2,)], "n int")
        >>> sorted(a.subtract(b).collect(), key=str)
        [Row(n=1), Row(n=None)]
        """
        return self._set(other, "EXCEPT", "EXCEPT")

    def exceptAll(self, other: "DataFrame") -> "DataFrame":
        """The rows of this less those of ``other``, duplicates counted (SQL's ``EXCEPT ALL``).

        >>> a = spark.createDataFrame([(1,), (1,), (1,), (2,)], ["n"])
        >>> sorted(r.n for r in a.exceptAll(spark.createDataFrame([(1,)], ["n"])).collect())
        [1, 1, 2]
        """
        return self._set(other, "EXCEPT ALL", "EXCEPT ALL")

    def offset(self, num: int) -> "DataFrame":
        """All rows but the first ``num``.

        >>> [r.id for r in spark.range(5, numPartitions=2).offset(3).collect()]
        [3, 4]
        """
        plan = self._current
        schema = plan.schema
        one = plan.dataset().coalesce(1).map_partitions(functools.partial(offset_rows, schema, int(num)))
        return self._new(Plan(plan.session, one, schema, plan.fields))

    def unpivot(self, ids: Any, values: Any, variableColumnName: str, valueColumnName: str) -> "DataFrame":
        """Columns ``values`` turned into rows: one per row and value column, holding the
        ``ids``, the value column's name and its value (all values cast to one type).

        >>> df = spark.createDataFrame([(1, 11, 1.5)], ["id", "a", "b"])
        >>> df.unpivot("id", ["a", "b"], "var", "val").collect()
        [Row(id=1, var='a', val=11.0), Row(id=1, var='b', val=1.5)]
        """
        from strataflow.pyspark.sql import functions as F
        from strataflow.pyspark.sql.column import Column

        ids = [ids] if isinstance(ids, (str, Column)) else list(ids or [])
        id_names = [c if isinstance(c, str) else None for c in ids]
        if values is None:
            values = [c for c in self.columns if c not in id_names]  # type: ignore[attr-defined]
        values = [values] if isinstance(values, (str, Column)) else list(values)
        if not values:
            raise AnalysisException("[UNPIVOT_REQUIRES_VALUE_COLUMNS] At least one value column needs to be specified "
                                    "for UNPIVOT, all columns specified as ids.", "UNPIVOT_REQUIRES_VALUE_COLUMNS")
        names = [v if isinstance(v, str) else spark_name(v._expr) for v in values]
        for n in names:
            field_of(n, "", self._current.fields)  # a clear error for a missing value column
        pairs = F.array(*[F.struct(F.lit(n).alias(variableColumnName), F.col(n).alias(valueColumnName))
                          for n in names])
        exploded = self.select(*ids, F.explode(pairs).alias("__kv"))  # type: ignore[attr-defined]
        return exploded.select(*ids, f"__kv.{variableColumnName}", f"__kv.{valueColumnName}")

    melt = unpivot
