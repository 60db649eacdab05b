"""The DataFrame members that hand rows to the user's Python code (a mixin):
``transform``, ``foreach``/``foreachPartition``, ``mapInArrow``/``mapInPandas``, and
``checkpoint``/``localCheckpoint``, ``to`` and ``colRegex`` beside them.

``mapInArrow`` gives the function each partition's Arrow record batches as they are (no
copy, no rows made); ``mapInPandas`` the same batches as pandas DataFrames. Both run in
the executors, as strataflow's ``map_partitions``; the result is a DataFrame of the
schema the user names, checked against what the function yields.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.engine import as_table
from strataflow.pyspark.sql.plan import Plan

if TYPE_CHECKING:
    from strataflow.pyspark.sql.dataframe import DataFrame

__all__ = ["DataFrameFunctional", "COL_REGEX"]

#: the function name a ``colRegex`` Column carries until ``select`` expands it
COL_REGEX = "__col_regex"


def _arrow_schema(schema: Any) -> pa.Schema:
    """A StructType or a DDL string (``"id long, age long"``) as an Arrow schema."""
    from strataflow.pyspark.sql.types import StructType, _parse_ddl

    st = _parse_ddl(schema) if isinstance(schema, str) else schema
    if not isinstance(st, StructType):
        raise TypeError(f"schema should be a StructType or a DDL string, got {type(schema).__name__}")
    return st.to_arrow()


def _conform(batch: Any, schema: pa.Schema, what: str) -> pa.Table:
    """A batch the user's function yielded, as a Table of ``schema`` (by column name)."""
    table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    missing = [n for n in schema.names if n not in table.column_names]
    if missing:
        raise AnalysisException(f"[RESULT_COLUMNS_MISSING_IN_ARROW_OR_PANDAS] {what}: the function's result lacks "
                                f"the columns {missing} of the schema; it has {table.column_names}.",
                                "RESULT_COLUMNS_MISSING_IN_ARROW_OR_PANDAS")
    try:
        return table.select(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise AnalysisException(f"[RESULT_TYPE_MISMATCH] {what}: the function's result does not fit the schema "
                                f"{schema}: {exc}", "RESULT_TYPE_MISMATCH") from None


def _map_batches(fn: Callable, names: list[str], in_schema: pa.Schema, out: pa.Schema, pandas: bool,
                 value: Any) -> pa.Table:
    table = as_table(value, in_schema).rename_columns(names)
    batches: Iterator[Any] = iter(table.to_batches())
    if pandas:
        batches = (b.to_pandas() for b in batches)
    what = "mapInPandas" if pandas else "mapInArrow"
    made = []
    for b in fn(batches):
        made.append(_conform(pa.Table.from_pandas(b, preserve_index=False) if pandas else b, out, what))
    return pa.concat_tables(made) if made else out.empty_table()


def _each_row(fn: Callable, rows: Any) -> list:
    for r in rows:
        fn(r)
    return []


def _each_partition(fn: Callable, rows: Any) -> list:
    fn(iter(rows))
    return []


class DataFrameFunctional:
    """The DataFrame members that run the user's Python functions (a mixin)."""

    _current: Plan
    _new: Callable[[Plan], "DataFrame"]
    columns: list[str]
    sparkSession: Any

    def transform(self, func: Callable[..., "DataFrame"], *args: Any, **kwargs: Any) -> "DataFrame":
        """``func(self, *args, **kwargs)``: chains a user's DataFrame-to-DataFrame steps.

        >>> def doubled(df, col):
        ...     return df.withColumn(col, df[col] * 2)
        >>> spark.range(3).transform(doubled, "id").collect()
        [Row(id=0), Row(id=2), Row(id=4)]
        """
        result = func(self, *args, **kwargs)
        if not hasattr(result, "_current"):
            raise TypeError(f"[INVALID_TYPE] the function given to transform should return a DataFrame, "
                            f"got {type(result).__name__}")
        return result

    def foreach(self, f: Callable[[Any], None]) -> None:
        """Calls ``f`` on each :class:`Row`, in the executors.

        >>> spark.range(3).foreach(lambda row: None)
        """
        self.rdd.mapPartitions(functools.partial(_each_row, f)).count()  # type: ignore[attr-defined]

    def foreachPartition(self, f: Callable[[Iterator[Any]], None]) -> None:
        """Calls ``f`` on an iterator of each partition's :class:`Row` s, in the executors.

        >>> spark.range(3).foreachPartition(lambda rows: None)
        """
        self.rdd.mapPartitions(functools.partial(_each_partition, f)).count()  # type: ignore[attr-defined]

    def _map_in(self, func: Callable, schema: Any, pandas: bool) -> "DataFrame":
        plan = self._current
        out = _arrow_schema(schema)
        ds = plan.dataset().map_partitions(functools.partial(
            _map_batches, func, [f.name for f in plan.fields], plan.schema, out, pandas))
        return self.sparkSession._frame_of(ds, out, "mapInPandas" if pandas else "mapInArrow")

    def mapInArrow(self, func: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]], schema: Any,
                   barrier: bool = False, profile: Any = None) -> "DataFrame":
        """``func`` over each partition's Arrow record batches; it yields batches of ``schema``
        (a StructType or a DDL string).

        >>> import pyarrow.compute as pc
        >>> def adults(batches):
        ...     for b in batches:
        ...         yield b.filter(pc.greater_equal(b["age"], 18))
        >>> df = spark.createDataFrame([(1, 21), (2, 9)], ["id", "age"])
        >>> df.mapInArrow(adults, df.schema).collect()
        [Row(id=1, age=21)]
        """
        return self._map_in(func, schema, pandas=False)

    def mapInPandas(self, func: Callable[[Iterator[Any]], Iterator[Any]], schema: Any,
                    barrier: bool = False, profile: Any = None) -> "DataFrame":
        """``func`` over each partition's rows as pandas DataFrames; it yields pandas
        DataFrames of ``schema`` (a StructType or a DDL string).

        >>> def older(frames):
        ...     for pdf in frames:
        ...         yield pdf.assign(age=pdf.age + 1)
        >>> spark.createDataFrame([(1, 21)], ["id", "age"]).mapInPandas(older, "id long, age long").collect()
        [Row(id=1, age=22)]
        """
        return self._map_in(func, schema, pandas=True)

    def checkpoint(self, eager: bool = True) -> "DataFrame":
        """A DataFrame of this one's computed partitions, kept on disk, its lineage cut
        (``eager``: computed now).

        >>> df = spark.range(4).checkpoint(); df.count(), df.is_cached
        (4, True)
        """
        return self._kept("DISK_ONLY", eager)

    def localCheckpoint(self, eager: bool = True, storageLevel: Any = None) -> "DataFrame":
        """As ``checkpoint``, kept in the executors' cache (memory, then disk).

        >>> spark.range(4).localCheckpoint().count()
        4
        """
        return self._kept(storageLevel or "MEMORY_AND_DISK", eager)

    def _kept(self, level: Any, eager: bool) -> "DataFrame":
        from strataflow.pyspark.storagelevel import StorageLevel

        df = self._new(self._current).persist(getattr(StorageLevel, level) if isinstance(level, str) else level)
        if eager:
            df.count()
        return df

    def to(self, schema: Any) -> "DataFrame":
        """The columns of ``schema`` (a StructType), matched by name, in its order and cast
        to its types; a column it names that is missing is an AnalysisException.

        >>> from strataflow.pyspark.sql.types import StructType, StructField, StringType
        >>> df = spark.createDataFrame([("a", 1)], ["i", "j"])
        >>> df.to(StructType([StructField("j", StringType()), StructField("i", StringType())])).collect()
        [Row(j='1', i='a')]
        """
        from strataflow.pyspark.sql import functions as F

        have = {c.lower() for c in self.columns}
        for f in schema.fields:
            if f.name.lower() not in have:
                raise AnalysisException(f"[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column or function parameter with "
                                        f"name `{f.name}` cannot be resolved. Did you mean one of the following? "
                                        f"{self.columns}.", "UNRESOLVED_COLUMN.WITH_SUGGESTION")
        return self.select(*[F.col(f.name).cast(f.dataType).alias(f.name)  # type: ignore[attr-defined]
                             for f in schema.fields])

    def colRegex(self, colName: str) -> Column:
        """The columns whose names match the regular expression ``colName`` (in backquotes,
        as Spark's), for ``select``.

        >>> df = spark.createDataFrame([("a", 1, 2)], ["Col1", "Col2", "other"])
        >>> df.select(df.colRegex("`Col.*`")).columns
        ['Col1', 'Col2']
        """
        if not isinstance(colName, str):
            raise TypeError(f"colName should be a string, got {type(colName).__name__}")
        pattern = colName[1:-1] if len(colName) > 1 and colName[0] == colName[-1] == "`" else colName
        return Column(exp.Anonymous(this=COL_REGEX, expressions=[exp.Literal.string(pattern)]))
