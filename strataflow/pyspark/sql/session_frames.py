"""The DataFrame side of ``SparkSession``: ``createDataFrame``, ``range``, ``read``,
``sql``, ``table`` and the temporary views (a mixin of :class:`SparkSession`).

``createDataFrame`` types Python values as PySpark does (``types._infer``: all rows are
looked at; a column of only None cannot be typed, as in PySpark) and builds one Arrow
table, cut into ``defaultParallelism`` partitions.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyarrow as pa

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.types import _nested

__all__ = ["SessionFrames"]


def _range_part(step: int, bounds: list) -> pa.Table:
    lo, hi = bounds[0] if bounds else (0, 0)
    return pa.table({"id": pa.array(np.arange(lo, hi, step, dtype=np.int64))})


def _arrow_value(v: Any) -> Any:
    from strataflow.pyspark.sql.row import Row

    if isinstance(v, Row) and hasattr(v, "__fields__"):
        return {k: _arrow_value(x) for k, x in zip(v.__fields__, v)}
    if isinstance(v, dict):
        return [(_arrow_value(k), _arrow_value(x)) for k, x in v.items()]
    if isinstance(v, tuple):  # a struct (PySpark infers a tuple as one) or an array: Arrow takes either
        return tuple(_arrow_value(x) for x in v)
    if isinstance(v, list):
        return [_arrow_value(x) for x in v]
    return v


def _table_from_rows(rows: list, schema: Any) -> pa.Table:
    """``rows`` (tuples, Rows, dicts) as a Table of ``schema`` (a StructType)."""
    names = schema.names
    cols: list[list] = [[] for _ in names]
    for r in rows:
        if isinstance(r, dict):
            values = [r.get(n) for n in names]
        elif isinstance(r, (tuple, list)):
            values = list(r)
        else:
            values = [r]
        if len(values) != len(names):
            raise ValueError(f"[LENGTH_SHOULD_BE_THE_SAME] obj and fields should be of the same length, got "
                             f"{len(values)} and {len(names)}: {r!r}")
        for c, v in zip(cols, values):
            c.append(v)
    arrays = []
    for c, f in zip(cols, schema.fields):
        t = _nested(f.dataType)
        try:
            arrays.append(pa.array([_arrow_value(v) for v in c], type=t))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            raise TypeError(f"[FIELD_DATA_TYPE_UNACCEPTABLE] field {f.name}: {f.dataType.simpleString()} can not "
                            f"accept the values given ({exc})") from None
    return pa.Table.from_arrays(arrays, schema=pa.schema([pa.field(n, a.type) for n, a in zip(names, arrays)]))


def _infer_schema(rows: list, names: list[str] | None) -> Any:
    from strataflow.pyspark.sql.row import Row
    from strataflow.pyspark.sql.types import StructField, StructType, _infer, _merge, NullType

    if not rows:
        raise ValueError("[CANNOT_INFER_EMPTY_SCHEMA] Can not infer schema from an empty dataset.")
    first = rows[0]
    if isinstance(first, dict):
        keys = sorted(first)
        rows = [tuple(r.get(k) for k in keys) for r in rows]
        names = names or keys
    elif isinstance(first, Row) and hasattr(first, "__fields__"):
        names = names or list(first.__fields__)
    elif not isinstance(first, (tuple, list)):
        rows = [(r,) for r in rows]
    width = len(rows[0])
    names = list(names or [f"_{i + 1}" for i in range(width)])
    if len(names) < width:
        names += [f"_{i + 1}" for i in range(len(names), width)]
    types = [_merge([_infer(r[i]) for r in rows]) for i in range(width)]
    for n, t in zip(names, types):
        if isinstance(t, NullType):
            raise ValueError(f"[CANNOT_DETERMINE_TYPE] Some of types cannot be determined after inferring "
                             f"(column {n!r} holds only None); give a schema")
    return StructType([StructField(n, t) for n, t in zip(names, types)]), rows


class SessionFrames:
    """DataFrame entry points of :class:`SparkSession` (a mixin)."""

    _views: dict

    def _shuffle_partitions(self) -> int:
        """Partitions after a shuffle: ``spark.sql.shuffle.partitions`` if set, else the
        default parallelism (Spark's 200 is for clusters; adaptive execution then merges
        them, which strataflow does not)."""
        value = self.conf.get("spark.sql.shuffle.partitions")  # type: ignore[attr-defined]
        return int(value) if value else max(1, self.sparkContext.defaultParallelism)  # type: ignore[attr-defined]

    def _frame_of(self, ds: Any, schema: pa.Schema, origin: str, rescan: Any = None) -> Any:
        """A DataFrame of a Dataset whose partitions are Tables of ``schema`` (``rescan``:
        the Dataset of some of its columns only, for a file source)."""
        from strataflow.pyspark.sql.dataframe import DataFrame
        from strataflow.pyspark.sql.plan import Plan

        return DataFrame(Plan.of(self, ds, schema, origin, rescan), self)

    def _frame(self, table: pa.Table, num_partitions: int | None = None) -> Any:
        from strataflow.pyspark.sql.dataframe import DataFrame
        from strataflow.pyspark.sql.plan import Plan

        n = num_partitions or max(1, min(self.sparkContext.defaultParallelism, table.num_rows))  # type: ignore
        ds = self.sparkContext.ctx.from_arrow(table, n)  # type: ignore[attr-defined]
        return DataFrame(Plan.of(self, ds, table.schema, "local"), self)

    def createDataFrame(self, data: Any, schema: Any = None, samplingRatio: float | None = None,
                        verifySchema: bool = True) -> Any:
        """A DataFrame of local data: a list of tuples, Rows, dicts or values, a pandas
        DataFrame, a pyarrow Table or an RDD; ``schema`` a list of names, a DDL string
        (``"id INT, name STRING"``) or a StructType.

        >>> spark.createDataFrame([(1, "Ann")], "id INT, name STRING").dtypes
        [('id', 'int'), ('name', 'string')]
        >>> spark.createDataFrame([{"b": 2, "a": 1}]).collect()
        [Row(a=1, b=2)]
        """
        from strataflow.pyspark.sql.types import DataType, StructField, StructType, _parse_ddl

        if isinstance(schema, str):
            schema = _parse_ddl(schema) if ":" in schema or " " in schema.strip() else StructType(
                [StructField("value", _parse_ddl(f"value {schema}")["value"].dataType)])
        elif isinstance(schema, DataType) and not isinstance(schema, StructType):
            schema = StructType([StructField("value", schema)])
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        if isinstance(data, pa.Table):
            table = data
        elif type(data).__name__ == "DataFrame" and hasattr(data, "to_records"):
            table = pa.Table.from_pandas(data, preserve_index=False)
        elif hasattr(data, "collect") and hasattr(data, "dataset"):  # an RDD
            data = data.collect()
            table = None
        else:
            table = None
        if table is not None:
            if isinstance(schema, StructType):
                table = table.rename_columns(schema.names).cast(schema.to_arrow())
            elif isinstance(schema, (list, tuple)):
                table = table.rename_columns(list(schema))
            return self._frame(table.replace_schema_metadata(None))
        rows = list(data)
        if isinstance(schema, StructType):
            if rows and not isinstance(rows[0], (tuple, list, dict)):
                rows = [(r,) for r in rows]
            table = _table_from_rows(rows, schema)
        else:
            if not rows and isinstance(schema, (list, tuple)):
                raise ValueError("[CANNOT_INFER_EMPTY_SCHEMA] Can not infer schema from an empty dataset.")
            struct, rows = _infer_schema(rows, list(schema) if schema else None)
            table = _table_from_rows(rows, struct)
        return self._frame(table)

    def range(self, start: int, end: int | None = None, step: int = 1, numPartitions: int | None = None) -> Any:
        """A DataFrame of one bigint column ``id``: ``start`` to ``end`` (exclusive) by ``step``.

        >>> spark.range(1, 7, 2).collect()
        [Row(id=1), Row(id=3), Row(id=5)]
        """
        from strataflow.pyspark.sql.dataframe import DataFrame
        from strataflow.pyspark.sql.plan import Plan

        if end is None:
            start, end = 0, start
        if step == 0:
            raise ValueError("range: step must not be 0")
        ids = np.arange(start, end, step, dtype=np.int64)
        n = max(1, numPartitions or self.sparkContext.defaultParallelism)  # type: ignore[attr-defined]
        cuts = [(len(ids) * i) // n for i in range(n + 1)]
        bounds = [(int(start + a * step), int(start + b * step)) for a, b in zip(cuts, cuts[1:])]
        ctx = self.sparkContext.ctx  # type: ignore[attr-defined]
        ds = ctx.parallelize(bounds, n).map_partitions(functools.partial(_range_part, step))
        return DataFrame(Plan.of(self, ds, pa.schema([("id", pa.int64())]), "range"), self)

    @property
    def read(self) -> Any:
        """A :class:`DataFrameReader`: ``spark.read.parquet(path)``, ``.csv``, ``.json``, ``.text``.

        >>> spark.range(2).write.parquet(tmp_dir + "/r")
        >>> spark.read.parquet(tmp_dir + "/r").count()
        2
        """
        from strataflow.pyspark.sql.readwriter import DataFrameReader

        return DataFrameReader(self)

    def table(self, tableName: str) -> Any:
        """The temporary view ``tableName``.

        >>> spark.range(2).createOrReplaceTempView("two")
        >>> spark.table("two").count()
        2
        """
        from strataflow.pyspark.sql.catalog import global_views, split_global

        name = split_global(tableName)
        df = self._views.get(tableName.lower()) if name is None else global_views(self.sparkContext).get(name)
        if df is None:
            raise AnalysisException(f"[TABLE_OR_VIEW_NOT_FOUND] The table or view `{tableName}` cannot be found. "
                                    f"Views: {sorted(self._views) or 'none'}.", "TABLE_OR_VIEW_NOT_FOUND")
        return df

    def sql(self, sqlQuery: str, args: Any = None, **kwargs: Any) -> Any:
        """A query in Spark's SQL over the temporary views, as a DataFrame. ``args`` binds
        parameter markers (a dict for ``:name``, a list for ``?``) to values; keyword
        arguments fill ``{name}`` in the text (a DataFrame as a view, a string quoted).

        >>> spark.createDataFrame([("a", 1), ("a", 2), ("b", 3)], ["k", "v"]).createOrReplaceTempView("kv")
        >>> spark.sql("SELECT k, sum(v) AS s FROM kv GROUP BY k HAVING s > 2 ORDER BY k").collect()
        [Row(k='a', s=3), Row(k='b', s=3)]
        >>> spark.sql("SELECT * FROM {t} WHERE v > :low", {"low": 1}, t=spark.table("kv")).count()
        2
        """
        from strataflow.pyspark.sql.sql_statements import run_sql

        return run_sql(self, sqlQuery, args, kwargs)

    def dropTempView(self, viewName: str) -> bool:
        """Forgets a temporary view; True if there was one.

        >>> spark.range(1).createOrReplaceTempView("gone"); spark.dropTempView("gone")
        True
        """
        return self._views.pop(viewName.lower(), None) is not None
