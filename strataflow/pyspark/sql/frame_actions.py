"""The DataFrame's actions (jobs that bring rows back or write them) and its cache.

``cache``/``persist`` keep the DataFrame's Arrow partitions at any strataflow storage
level (AUTO and the mapped levels included): a cached DataFrame is a plan whose source
is the persisted Dataset, so every query over it starts from the cache. ``show``,
``head`` and ``first`` read as few partitions as they can (one, then four times as many),
as Spark does.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa

from strataflow.pyspark.sql.catalog import register
from strataflow.pyspark.sql.engine import as_table
from strataflow.pyspark.sql.plan import Plan
from strataflow.pyspark.sql.row import Row
from strataflow.pyspark.sql.show import show_string, to_rows, zone_of
from strataflow.pyspark.sql.tasks import head_rows, row_count, same

if TYPE_CHECKING:
    from strataflow.pyspark.sql.dataframe import DataFrame

__all__ = ["DataFrameActions"]


class DataFrameActions:
    """Actions, cache and output of :class:`DataFrame` (a mixin)."""

    _current: Plan

    def _names(self) -> list[str]:
        return [f.name for f in self._current.fields]

    def _logical(self, table: pa.Table) -> pa.Table:
        return table.rename_columns(self._names())

    def _tables(self) -> list[pa.Table]:
        plan = self._current
        return [as_table(v, plan.schema) for v in plan.dataset().collect_partitions()]

    def _head_table(self, n: int) -> pa.Table:
        """The first ``n`` rows, reading one partition, then four times as many each round."""
        plan = self._current
        ds, schema = plan.dataset(), plan.schema
        got: list[pa.Table] = []
        rows, scanned, batch, total = 0, 0, 1, ds.num_partitions
        while rows < n and scanned < total:
            parts = list(range(scanned, min(total, scanned + batch)))
            for t in ds._run(functools.partial(head_rows, schema, n - rows), parts, "head"):
                got.append(t)
                rows += t.num_rows
            scanned += len(parts)
            batch *= 4
        table = pa.concat_tables(got) if got else schema.empty_table()
        return self._logical(table.slice(0, n))

    def toArrow(self) -> pa.Table:
        """All rows as one pyarrow Table.

        >>> spark.createDataFrame([(1, "x")], ["id", "s"]).toArrow().column_names
        ['id', 's']
        """
        tables = self._tables()
        one = pa.concat_tables(tables).combine_chunks() if tables else self._current.schema.empty_table()
        return self._logical(one)

    def toPandas(self) -> Any:
        """All rows as a pandas DataFrame.

        >>> spark.createDataFrame([(1, "x")], ["id", "s"]).toPandas().shape
        (1, 2)
        """
        table = self.toArrow()
        if len(set(table.column_names)) != table.num_columns:
            import pandas as pd

            return pd.DataFrame({i: c.to_pandas() for i, c in enumerate(table.columns)}).set_axis(
                table.column_names, axis=1)
        return table.to_pandas()

    def collect(self) -> list[Row]:
        """All rows, as :class:`Row` objects.

        >>> spark.createDataFrame([(1, "x")], ["id", "s"]).collect()
        [Row(id=1, s='x')]
        """
        return to_rows(self.toArrow(), self._names())

    def toLocalIterator(self, prefetchPartitions: bool = False) -> Iterator[Row]:
        """The rows, one partition at a time.

        >>> [r.id for r in spark.range(3).toLocalIterator()]
        [0, 1, 2]
        """
        plan = self._current
        ds, schema = plan.dataset(), plan.schema
        for i in range(ds.num_partitions):
            for t in ds._run(functools.partial(head_rows, schema, 1 << 62), [i], "toLocalIterator"):
                yield from to_rows(t, self._names())

    def count(self) -> int:
        """The number of rows.

        >>> spark.range(7).count()
        7
        """
        plan = self._current
        return sum(plan.dataset().map_partitions(functools.partial(row_count, plan.schema)).collect())

    def head(self, n: int | None = None) -> Any:
        """The first row (None if there is none), or a list of the first ``n``.

        >>> spark.range(5).head(), spark.range(5).head(2)
        (Row(id=0), [Row(id=0), Row(id=1)])
        """
        if n is None:
            rows = to_rows(self._head_table(1), self._names())
            return rows[0] if rows else None
        return to_rows(self._head_table(n), self._names())

    def first(self) -> Row | None:
        """The first row, or None.

        >>> spark.range(3).first()
        Row(id=0)
        """
        return self.head()

    def take(self, num: int) -> list[Row]:
        """The first ``num`` rows.

        >>> spark.range(9).take(2)
        [Row(id=0), Row(id=1)]
        """
        return self.head(num)

    def tail(self, num: int) -> list[Row]:
        """The last ``num`` rows.

        >>> spark.range(9).tail(2)
        [Row(id=7), Row(id=8)]
        """
        t = self.toArrow()
        return to_rows(t.slice(max(0, t.num_rows - num)), self._names())

    def isEmpty(self) -> bool:
        """True if there are no rows.

        >>> spark.range(0).isEmpty(), spark.range(1).isEmpty()
        (True, False)
        """
        return self._head_table(1).num_rows == 0

    def show(self, n: int = 20, truncate: "bool | int" = True, vertical: bool = False) -> None:
        """Prints the first ``n`` rows as a table, as PySpark does.

        >>> spark.createDataFrame([(1, "Alice"), (2, None)], ["id", "name"]).show()
        +---+-----+
        | id| name|
        +---+-----+
        |  1|Alice|
        |  2| NULL|
        +---+-----+
        <BLANKLINE>
        """
        table = self._head_table(n + 1)
        print(show_string(table.slice(0, n), self._names(), n, truncate, vertical, table.num_rows > n,
                          zone_of(self.sparkSession)))

    # -- cache ------------------------------------------------------------------------------------------
    def persist(self, storageLevel: Any = None) -> "DataFrame":
        """Keeps the computed partitions at ``storageLevel`` (a PySpark StorageLevel or a
        strataflow level, AUTO included; default MEMORY_AND_DISK_DESER, as Spark's DataFrames:
        partitions are Arrow tables, held as they are in memory).

        >>> from strataflow.pyspark import StorageLevel
        >>> df = spark.range(4).persist(StorageLevel.DISK_ONLY)
        >>> df.count(), df.is_cached, df.storageLevel == StorageLevel.DISK_ONLY
        (4, True, True)
        """
        from strataflow.pyspark.storagelevel import StorageLevel, as_pyspark, to_native

        level = StorageLevel.MEMORY_AND_DISK_DESER if storageLevel is None else storageLevel
        if self._cached_plan is None:  # type: ignore[attr-defined]
            plan = self._plan  # type: ignore[attr-defined]
            ds = plan.dataset()
            if plan.query is None:  # the source itself: cache a Dataset of this DataFrame's own, so that
                ds = ds.map_partitions(same)  # another DataFrame over that source keeps its own level
            ds = ds.persist(to_native(level))
            self._cached_plan = Plan(plan.session, ds, plan.schema, plan.fields)
            self._level = as_pyspark(level)
        return self  # type: ignore[return-value]

    def cache(self) -> "DataFrame":
        """``persist()`` at MEMORY_AND_DISK_DESER.

        >>> df = spark.range(3).cache(); df.count(), df.is_cached, df.storageLevel
        (3, True, StorageLevel(True, True, False, True, 1))
        """
        return self.persist()

    def unpersist(self, blocking: bool = False) -> "DataFrame":
        """Drops the cached partitions; the DataFrame is computed from its sources again.

        >>> spark.range(3).cache().unpersist().is_cached
        False
        """
        if self._cached_plan is not None:  # type: ignore[attr-defined]
            self._cached_plan.source.unpersist(blocking)  # type: ignore[attr-defined]
            self._cached_plan = None
            self._level = None
        return self  # type: ignore[return-value]

    @property
    def is_cached(self) -> bool:
        """True after ``cache``/``persist``.

        >>> spark.range(1).is_cached
        False
        """
        return self._cached_plan is not None  # type: ignore[attr-defined]

    @property
    def storageLevel(self) -> Any:
        """The storage level (StorageLevel.NONE when not cached).

        >>> from strataflow.pyspark import StorageLevel
        >>> spark.range(1).storageLevel == StorageLevel.NONE
        True
        """
        from strataflow.pyspark.storagelevel import StorageLevel

        return self._level or StorageLevel.NONE  # type: ignore[attr-defined]

    # -- views, plans and output --------------------------------------------------------------------------
    def createOrReplaceTempView(self, name: str) -> None:
        """Names this DataFrame for ``spark.sql`` and ``spark.table``.

        >>> spark.range(3).createOrReplaceTempView("nums")
        >>> spark.sql("SELECT sum(id) AS s FROM nums").first().s
        3
        """
        register(self.sparkSession, name, self, replace=True)  # type: ignore[attr-defined]

    def createTempView(self, name: str) -> None:
        """As ``createOrReplaceTempView``, but an existing name is an AnalysisException.

        >>> spark.range(1).createTempView("once_only_view")
        """
        register(self.sparkSession, name, self, replace=False)  # type: ignore[attr-defined]

    def registerTempTable(self, name: str) -> None:
        """The old name of ``createOrReplaceTempView``.

        >>> spark.range(2).registerTempTable("two_rows"); spark.table("two_rows").count()
        2
        """
        register(self.sparkSession, name, self, replace=True)  # type: ignore[attr-defined]

    def createGlobalTempView(self, name: str) -> None:
        """Names this DataFrame for every session of the application, as ``global_temp.name``
        (an existing name is an AnalysisException).

        >>> spark.range(2).createGlobalTempView("shared2")
        >>> spark.newSession().sql("SELECT count(*) AS n FROM global_temp.shared2").first().n
        2
        >>> spark.catalog.dropGlobalTempView("shared2")
        True
        """
        register(self.sparkSession, name, self, replace=False, global_=True)  # type: ignore[attr-defined]

    def createOrReplaceGlobalTempView(self, name: str) -> None:
        """As ``createGlobalTempView``, replacing a view of that name.

        >>> spark.range(3).createOrReplaceGlobalTempView("shared3")
        >>> spark.table("global_temp.shared3").count()
        3
        """
        register(self.sparkSession, name, self, replace=True, global_=True)  # type: ignore[attr-defined]

    def explain(self, extended: Any = None, mode: str | None = None) -> None:
        """Prints the plan: each partition's query (DuckDB's SQL) and the strataflow stages.

        >>> spark.range(3).filter("id > 0").explain()
        == Physical Plan ==
        ...
        """
        plan = self._current
        print("== Physical Plan ==")
        print(f"per-partition query: {plan.sql() or '(none: the source as it is)'}")
        print(plan.dataset().explain())

    @property
    def rdd(self) -> Any:
        """The rows as an RDD of :class:`Row`.

        >>> spark.createDataFrame([(1,), (2,)], ["a"]).rdd.map(lambda r: r.a * 10).collect()
        [10, 20]
        """
        from strataflow.pyspark.rdd import RDD

        plan = self._current
        ds = plan.dataset().map_partitions(functools.partial(_rows_of, plan.schema, self._names()))
        return RDD(ds, self.sparkSession.sparkContext)  # type: ignore[attr-defined]

    @property
    def write(self) -> Any:
        """A :class:`DataFrameWriter` for this DataFrame.

        >>> spark.range(3).write.mode("overwrite").parquet(tmp_dir + "/nums")
        >>> spark.read.parquet(tmp_dir + "/nums").count()
        3
        """
        from strataflow.pyspark.sql.readwriter import DataFrameWriter

        return DataFrameWriter(self)


def _rows_of(schema: pa.Schema, names: list[str], value: Any) -> list[Row]:
    return to_rows(as_table(value, schema), names)
