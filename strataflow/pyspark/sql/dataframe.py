"""``DataFrame``: PySpark's DataFrame over partitions of Arrow tables, planned lazily.

A DataFrame is a :class:`~strataflow.pyspark.sql.plan.Plan` (a strataflow Dataset and the
query its partitions run) and the session. This module holds its identity, schema and
the narrow transformations (one more query per partition, no shuffle); the mixins add
the wide ones (``frame_relational``: joins, aggregates, sorting, set operations) and the
actions (``frame_actions``: collect, show, cache, write).
"""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.column import Column, spark_name, to_expr
from strataflow.pyspark.sql.spark_sql_dialect import SparkSQL
from strataflow.pyspark.sql.frame_actions import DataFrameActions
from strataflow.pyspark.sql.frame_functional import COL_REGEX, DataFrameFunctional
from strataflow.pyspark.sql.frame_sets import DataFrameSets
from strataflow.pyspark.sql.frame_stat import DataFrameStat, DataFrameStatFunctions  # noqa: F401  (pyspark.sql.dataframe has it)
from strataflow.pyspark.sql.frame_relational import DataFrameRelational, has_agg, has_window
from strataflow.pyspark.sql.plan import Plan
from strataflow.pyspark.sql.resolve import field_of, qualifier, resolve
from strataflow.pyspark.sql.types import StructType, from_arrow

__all__ = ["DataFrame", "DataFrameNaFunctions"]

_ids = itertools.count(1)


class DataFrame(DataFrameRelational, DataFrameSets, DataFrameFunctional, DataFrameStat, DataFrameActions):
    """Rows with named, typed columns, computed lazily in partitions.

    >>> df = spark.createDataFrame([(1, "Alice"), (2, "Bob")], ["id", "name"])
    >>> df.filter(df.id > 1).select("name").collect()
    [Row(name='Bob')]
    """

    def __init__(self, plan: Plan, session: Any) -> None:
        self._id = next(_ids)
        self._plan = plan.with_origin(self._id)
        self.sparkSession = session
        self._hint: str | None = None
        self._level: Any = None
        self._cached_plan: Plan | None = None

    def _new(self, plan: Plan) -> "DataFrame":
        return DataFrame(plan, self.sparkSession)

    @property
    def _current(self) -> Plan:
        return self._cached_plan or self._plan

    # -- schema -----------------------------------------------------------------------------------------
    @property
    def columns(self) -> list[str]:
        """The column names, in order.

        >>> spark.createDataFrame([(1, "x")], ["id", "name"]).columns
        ['id', 'name']
        """
        return [f.name for f in self._current.fields]

    @property
    def schema(self) -> StructType:
        """The schema, a :class:`StructType`.

        >>> spark.createDataFrame([(1, "x")], ["id", "name"]).schema.simpleString()
        'struct<id:bigint,name:string>'
        """
        from strataflow.pyspark.sql.types import StructField

        return StructType([StructField(f.name, from_arrow(f.type)) for f in self._current.fields])

    @property
    def dtypes(self) -> list[tuple[str, str]]:
        """``(name, type)`` of each column, types as Spark spells them.

        >>> spark.createDataFrame([(1, 2.0)], ["a", "b"]).dtypes
        [('a', 'bigint'), ('b', 'double')]
        """
        return [(f.name, from_arrow(f.type).simpleString()) for f in self._current.fields]

    def printSchema(self, level: int | None = None) -> None:
        """Prints the schema as a tree.

        >>> spark.createDataFrame([(1, "x")], ["id", "name"]).printSchema()
        root
         |-- id: long (nullable = true)
         |-- name: string (nullable = true)
        <BLANKLINE>
        """
        print(self.schema.treeString(level))

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, str):
            return self._col(item)
        if isinstance(item, int):
            return self._col(self.columns[item])
        if isinstance(item, Column):
            return self.filter(item)
        if isinstance(item, (list, tuple)):
            return self.select(*item)
        raise TypeError(f"unexpected item type: {type(item).__name__}")

    def __getattr__(self, name: str) -> Column:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in {c.lower() for c in self.columns} and name.lower() not in {c.lower() for c in self.columns}:
            raise AttributeError(f"'DataFrame' object has no attribute '{name}'")
        return self._col(name)

    def _col(self, name: str) -> Column:
        if name == "*":
            return Column(exp.Column(this=exp.Star(), table=exp.to_identifier(qualifier(self._id))))
        field_of(name, "", self._current.fields)  # a clear error now, as PySpark's
        return Column(exp.column(name, table=qualifier(self._id), quoted=True))

    # -- narrow transformations ---------------------------------------------------------------------------
    def _items(self, cols: tuple) -> list[tuple[exp.Expression, str, frozenset]]:
        """Resolved select items (expression, name, origins) of columns, names or ``*``."""
        plan = self._current
        out: list[tuple[exp.Expression, str, frozenset]] = []
        for c in cols:
            e = to_expr(c) if not isinstance(c, Column) else c._expr
            if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
                tag = e.table if isinstance(e, exp.Column) else ""
                from strataflow.pyspark.sql.resolve import lookup

                fields = [f for f in plan.fields if not tag or lookup(f.name, tag, [f])]
                out += [(exp.column(f.phys, quoted=True), f.name, f.origins) for f in fields]
                continue
            if isinstance(e, exp.Anonymous) and e.name == COL_REGEX:  # df.colRegex: the columns that match
                import re

                pattern = re.compile(e.expressions[0].this)
                out += [(exp.column(f.phys, quoted=True), f.name, f.origins) for f in plan.fields
                        if pattern.fullmatch(f.name)]
                continue
            inner = e.this if isinstance(e, exp.Alias) else e
            if isinstance(inner, exp.Column) and not isinstance(e, exp.Alias):
                try:
                    f = field_of(inner.name, inner.table, plan.fields)
                except AnalysisException:
                    out.append((resolve(inner, plan.fields, session=plan.session), spark_name(e, fields=plan.fields), frozenset()))  # a field
                    continue
                out.append((exp.column(f.phys, quoted=True), f.name, f.origins))
            else:
                out.append((resolve(inner, plan.fields, session=plan.session), spark_name(e, fields=plan.fields), frozenset()))
        return out

    def select(self, *cols: "Column | str") -> "DataFrame":
        """The given columns or expressions (aggregates make one row; window functions
        exchange rows by their partition keys first).

        >>> df = spark.createDataFrame([(1, 2)], ["a", "b"])
        >>> df.select("b", (df.a + 1).alias("c"), "*").collect()
        [Row(b=2, c=2, a=1, b=2)]
        """
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        items = self._items(cols)
        plan = self._current
        if any(has_agg(e) for e, _, _ in items):
            return self._aggregate([], items)
        if any(has_window(e) for e, _, _ in items):
            plan = self._window_exchange([e for e, _, _ in items])
        return self._new(plan.project(items))

    def selectExpr(self, *exprs: str) -> "DataFrame":
        """``select`` of Spark SQL expressions.

        >>> spark.createDataFrame([(3,)], ["a"]).selectExpr("a * 2 AS b", "a + 1").collect()
        [Row(b=6, (a + 1)=4)]
        """
        if len(exprs) == 1 and isinstance(exprs[0], list):
            exprs = tuple(exprs[0])
        return self.select(*[Column(sqlglot.parse_one(e, read=SparkSQL)) for e in exprs])

    def filter(self, condition: "Column | str") -> "DataFrame":
        """The rows where ``condition`` (a Column or Spark SQL text) is true.

        >>> spark.range(5).filter("id % 2 = 0").count()
        3
        """
        e = sqlglot.parse_one(condition, read=SparkSQL) if isinstance(condition, str) else condition._expr
        return self._new(self._current.filter(resolve(e, self._current.fields, session=self._current.session)))

    where = filter

    def withColumn(self, colName: str, col: Column) -> "DataFrame":
        """This DataFrame with column ``colName`` added (or replaced, in its place).

        >>> from strataflow.pyspark.sql import functions as F
        >>> spark.createDataFrame([(1, 2)], ["a", "b"]).withColumn("a", F.col("a") * 10).collect()
        [Row(a=10, b=2)]
        """
        return self.withColumns({colName: col})

    def withColumns(self, *colsMap: dict[str, Column]) -> "DataFrame":
        """This DataFrame with several columns added or replaced.

        >>> from strataflow.pyspark.sql import functions as F
        >>> spark.range(1).withColumns({"x": F.lit(1), "y": F.lit(2)}).columns
        ['id', 'x', 'y']
        """
        mapping = colsMap[0] if colsMap else {}
        if not isinstance(mapping, dict):
            raise TypeError("withColumns takes a dict of column name -> Column")
        plan = self._current
        lowered = {k.lower(): k for k in mapping}
        items: list[tuple[exp.Expression, str, frozenset]] = []
        for f in plan.fields:
            name = lowered.pop(f.name.lower(), None)
            if name is None:
                items.append((exp.column(f.phys, quoted=True), f.name, f.origins))
            else:
                items.append((self._items((_as_column(mapping[name]),))[0][0], name, frozenset()))
        items += [(self._items((_as_column(mapping[n]),))[0][0], n, frozenset()) for n in lowered.values()]
        if any(has_window(e) for e, _, _ in items):
            plan = self._window_exchange([e for e, _, _ in items])
        return self._new(plan.project(items))

    def withColumnRenamed(self, existing: str, new: str) -> "DataFrame":
        """This DataFrame with column ``existing`` named ``new`` (no-op if there is none).

        >>> spark.createDataFrame([(1,)], ["a"]).withColumnRenamed("a", "b").columns
        ['b']
        """
        return self.withColumnsRenamed({existing: new})

    def withColumnsRenamed(self, colsMap: dict[str, str]) -> "DataFrame":
        """This DataFrame with columns renamed by ``colsMap``.

        >>> spark.createDataFrame([(1, 2)], ["a", "b"]).withColumnsRenamed({"a": "x", "b": "y"}).columns
        ['x', 'y']
        """
        low = {k.lower(): v for k, v in colsMap.items()}
        items = [(exp.column(f.phys, quoted=True), low.get(f.name.lower(), f.name), f.origins)
                 for f in self._current.fields]
        return self._new(self._current.project(items))

    def toDF(self, *cols: str) -> "DataFrame":
        """This DataFrame with all its columns renamed.

        >>> spark.createDataFrame([(1, 2)], ["a", "b"]).toDF("x", "y").columns
        ['x', 'y']
        """
        fields = self._current.fields
        if len(cols) != len(fields):
            raise ValueError(f"toDF: {len(cols)} names for {len(fields)} columns")
        return self._new(self._current.project([(exp.column(f.phys, quoted=True), n, f.origins)
                                                for f, n in zip(fields, cols)]))

    def drop(self, *cols: "Column | str") -> "DataFrame":
        """This DataFrame without the given columns (a name that is not a column is ignored).

        >>> spark.createDataFrame([(1, 2)], ["a", "b"]).drop("a", "zzz").columns
        ['b']
        """
        gone = set()
        for c in cols:
            e = to_expr(c)
            if isinstance(c, str):
                gone |= {f.phys for f in self._current.fields if f.name.lower() == c.lower()}
            elif isinstance(e, exp.Column):
                whole = f"{e.table}.{e.name}" if e.table and not e.table.startswith("__df") else None
                try:
                    gone.add(field_of(e.name, e.table, self._current.fields).phys)
                except AnalysisException:  # col("a.b.c") names a column called "a.b.c", if there is one
                    if whole is None or not self._has_column(whole):
                        raise
                    gone.add(field_of(whole, "", self._current.fields).phys)
        items = [(exp.column(f.phys, quoted=True), f.name, f.origins) for f in self._current.fields if f.phys not in gone]
        return self._new(self._current.project(items))

    def alias(self, alias: str) -> "DataFrame":
        """This DataFrame under a name its columns can be qualified by (``"x.id"``).

        >>> from strataflow.pyspark.sql import functions as F
        >>> a = spark.createDataFrame([(1,)], ["id"]).alias("a")
        >>> a.select(F.col("a.id")).collect()
        [Row(id=1)]
        """
        return self._new(self._current.with_origin(alias))

    @property
    def na(self) -> "DataFrameNaFunctions":
        """Null handling: ``df.na.fill(...)``, ``df.na.drop(...)``.

        >>> spark.createDataFrame([(None,)], "a int").na.fill(0).first().a
        0
        """
        return DataFrameNaFunctions(self)

    def fillna(self, value: Any, subset: Any = None) -> "DataFrame":
        """Nulls replaced by ``value`` (a dict: per column), in columns of a matching type.

        >>> spark.createDataFrame([(None, None)], "a int, b string").fillna({"a": 1, "b": "x"}).first()
        Row(a=1, b='x')
        """
        from strataflow.pyspark.sql import functions as F

        if isinstance(value, dict):
            mapping = value
        else:
            names = [subset] if isinstance(subset, str) else list(subset or self.columns)
            mapping = {n: value for n in names if _fill_fits(value, self._field_type(n))}
        return self.withColumns({k: F.coalesce(F.col(k), F.lit(v).cast(from_arrow(self._field_type(k))))
                                 for k, v in mapping.items() if k.lower() in {c.lower() for c in self.columns}})

    def dropna(self, how: str = "any", thresh: int | None = None, subset: Any = None) -> "DataFrame":
        """Rows without nulls (``how="all"``: without all nulls; ``thresh``: with at least that many non-nulls).

        >>> spark.createDataFrame([(1, None), (2, 3)], "a int, b int").dropna().count()
        1
        """
        names = [subset] if isinstance(subset, str) else list(subset or self.columns)
        fields = [field_of(n, "", self._current.fields) for n in names]
        nonnull = exp.Add(this=exp.Literal.number(0), expression=exp.Literal.number(0))
        for f in fields:  # NaN counts as null here, as Spark's na.drop counts it
            c = exp.column(f.phys, quoted=True)
            missing: exp.Expression = exp.Is(this=c, expression=exp.Null())
            if pa.types.is_floating(f.type):
                missing = exp.or_(missing, exp.Anonymous(this="isnan", expressions=[c.copy()]))
            nonnull = exp.Add(this=nonnull, expression=exp.Case(
                ifs=[exp.If(this=exp.Not(this=exp.paren(missing)), true=exp.Literal.number(1))],
                default=exp.Literal.number(0)))
        need = thresh if thresh is not None else (len(fields) if how == "any" else 1)
        return self._new(self._current.filter(exp.GTE(this=exp.paren(nonnull), expression=exp.Literal.number(need))))

    def replace(self, to_replace: Any, value: Any = ..., subset: Any = None) -> "DataFrame":
        """Values replaced: ``to_replace`` (a value, a list, or a dict of old -> new) by
        ``value`` (one, or a list as long), in the columns of ``subset`` (default: all) whose
        type fits the old values (numbers for numbers, strings for strings); the new value
        takes the column's type.

        >>> df = spark.createDataFrame([(10, "Alice"), (5, None)], ["age", "name"])
        >>> df.na.replace(10, 20).collect()
        [Row(age=20, name='Alice'), Row(age=5, name=None)]
        >>> df.replace({"Alice": "A"}).first().name
        'A'
        """
        from strataflow.pyspark.sql import functions as F

        if isinstance(to_replace, dict):
            mapping = dict(to_replace)
        else:
            if value is ...:
                raise TypeError("value argument is required when to_replace is not a dictionary.")
            olds = list(to_replace) if isinstance(to_replace, (list, tuple)) else [to_replace]
            news = list(value) if isinstance(value, (list, tuple)) else [value] * len(olds)
            if len(olds) != len(news):
                raise ValueError(f"to_replace and value lists should be of the same length. "
                                 f"Got {len(olds)} and {len(news)}")
            mapping = dict(zip(olds, news))
        names = [subset] if isinstance(subset, str) else list(subset or self.columns)
        changes = {}
        for n in names:
            t = self._field_type(n)
            pairs = [(k, v) for k, v in mapping.items() if k is not None and _fill_fits(k, t)]
            if pairs:
                e = F.when(F.col(n) == F.lit(pairs[0][0]), F.lit(pairs[0][1]))
                for k, v in pairs[1:]:
                    e = e.when(F.col(n) == F.lit(k), F.lit(v))
                changes[n] = e.otherwise(F.col(n)).cast(from_arrow(t))
        return self.withColumns(changes) if changes else self

    def _has_column(self, name: str) -> bool:
        from strataflow.pyspark.sql.resolve import lookup

        return bool(lookup(name, "", self._current.fields))

    def _field_type(self, name: str) -> Any:
        return field_of(name, "", self._current.fields).type

    def __repr__(self) -> str:
        return "DataFrame[" + ", ".join(f"{n}: {t}" for n, t in self.dtypes) + "]"


def _as_column(c: Any) -> Column:
    if not isinstance(c, Column):
        raise TypeError(f"col should be Column, got {type(c).__name__}")
    return c


def _fill_fits(value: Any, t: Any) -> bool:
    import pyarrow as pa

    if isinstance(value, bool):
        return pa.types.is_boolean(t)
    if isinstance(value, (int, float)):
        return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
    if isinstance(value, str):
        return pa.types.is_string(t) or pa.types.is_large_string(t)
    return False


class DataFrameNaFunctions:
    """``df.na``: ``fill``, ``drop`` and ``replace`` of nulls.

    >>> spark.createDataFrame([(None,), (1,)], "a int").na.drop().count()
    1
    """

    def __init__(self, df: DataFrame) -> None:
        self._df = df

    def fill(self, value: Any, subset: Any = None) -> DataFrame:
        """As ``DataFrame.fillna``.

        >>> spark.createDataFrame([(None,)], "s string").na.fill("?").first().s
        '?'
        """
        return self._df.fillna(value, subset)

    def replace(self, to_replace: Any, value: Any = ..., subset: Any = None) -> DataFrame:
        """As ``DataFrame.replace``.

        >>> spark.createDataFrame([("a",)], ["s"]).na.replace("a", "b").first().s
        'b'
        """
        return self._df.replace(to_replace, value, subset)

    def drop(self, how: str = "any", thresh: int | None = None, subset: Any = None) -> DataFrame:
        """As ``DataFrame.dropna``.

        >>> spark.createDataFrame([(None, None), (1, None)], "a int, b int").na.drop(how="all").count()
        1
        """
        return self._df.dropna(how, thresh, subset)
