"""The DataFrame's wide transformations: aggregates, joins, sorting, set operations.

Each ends its input's query where rows must move (``Plan.exchange_*``) and starts a new
one on the other side of the shuffle:

- ``groupBy().agg`` hashes rows by the grouping keys and aggregates each partition;
- ``join`` hashes both sides by its equality keys, or sends a small side whole to every
  partition of the other (``join_plan.py``);
- ``orderBy`` exchanges by sampled ranges of its first key, then sorts each partition;
- ``distinct``/``dropDuplicates`` hash by the columns that decide duplicates.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.column import Column, spark_name, to_expr
from strataflow.pyspark.sql.engine import as_table
from strataflow.pyspark.sql.frame_sets import aligned
from strataflow.pyspark.sql.join_plan import equi_pairs, join_plan
from strataflow.pyspark.sql.plan import Plan, aggregate
from strataflow.pyspark.sql.resolve import field_of, resolve

if TYPE_CHECKING:
    from strataflow.pyspark.sql.dataframe import DataFrame

__all__ = ["DataFrameRelational", "has_agg", "has_window"]

_JOIN_KINDS = {"inner": "inner", "cross": "cross", "outer": "full", "full": "full", "fullouter": "full",
               "full_outer": "full", "left": "left", "leftouter": "left", "left_outer": "left", "right": "right",
               "rightouter": "right", "right_outer": "right", "semi": "semi", "leftsemi": "semi",
               "left_semi": "semi", "anti": "anti", "leftanti": "anti", "left_anti": "anti"}
def has_agg(e: exp.Expression) -> bool:
    """True if ``e`` aggregates rows (outside any window function)."""
    return any(isinstance(n, exp.AggFunc) and not any(isinstance(p, exp.Window) for p in _up(n, e))
               for n in e.walk())


def has_window(e: exp.Expression) -> bool:
    return any(isinstance(n, exp.Window) for n in e.walk())


def _up(n: exp.Expression, top: exp.Expression):
    while n is not None and n is not top:
        n = n.parent
        if n is not None:
            yield n


class DataFrameRelational:
    """The wide transformations of :class:`DataFrame` (a mixin)."""

    _current: Plan
    _id: int

    def _shuffle_partitions(self) -> int:
        return self.sparkSession._shuffle_partitions()  # type: ignore[attr-defined]

    # -- aggregates --------------------------------------------------------------------------------------
    def _aggregate(self, keys: list, aggs: list) -> "DataFrame":
        plan = self._current
        key_exprs = [e for e, _, _ in keys]
        for e, name, _ in aggs:
            if not has_agg(e) and not any(e == k for k in key_exprs):
                raise AnalysisException(f"[MISSING_AGGREGATION] The non-aggregating expression `{name}` is based on "
                                        f"columns which are not participating in the GROUP BY clause.",
                                        "MISSING_AGGREGATION")
        return self._new(aggregate(plan, keys, keys + aggs, self._shuffle_partitions()))  # type: ignore[attr-defined]

    def groupBy(self, *cols: "Column | str") -> Any:
        """Groups rows by ``cols`` for an aggregate (``agg``, ``count``, ``sum``...).

        >>> from strataflow.pyspark.sql import functions as F
        >>> df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], ["k", "v"])
        >>> sorted(df.groupBy("k").agg(F.sum("v"), F.count("*")).collect())
        [Row(k='a', sum(v)=3, count(1)=2), Row(k='b', sum(v)=5, count(1)=1)]
        """
        from strataflow.pyspark.sql.group import GroupedData

        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        cols = tuple(self._by_ordinal(c)[0] for c in cols)
        return GroupedData(self, self._items(cols))  # type: ignore[attr-defined]

    groupby = groupBy

    def _grouped_sets(self, cols: tuple, sets: list[list[int]], kind: str) -> Any:
        from strataflow.pyspark.sql.group import GroupedData

        cols = tuple(self._by_ordinal(c)[0] for c in (cols[0] if len(cols) == 1 and isinstance(cols[0], list) else cols))
        return GroupedData(self, self._items(cols), sets=sets, kind=kind)  # type: ignore[attr-defined]

    def rollup(self, *cols: "Column | str") -> Any:
        """Groups by ``cols``, then by each leading part of them, then over all rows (the
        keys left out are null in those rows).

        >>> df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], ["k", "v"])
        >>> sorted(df.rollup("k").count().collect(), key=str)
        [Row(k='a', count=2), Row(k='b', count=1), Row(k=None, count=3)]
        """
        n = len(cols[0]) if len(cols) == 1 and isinstance(cols[0], list) else len(cols)
        return self._grouped_sets(cols, [list(range(i)) for i in range(n, -1, -1)], "Rollup")

    def cube(self, *cols: "Column | str") -> Any:
        """Groups by every subset of ``cols`` (the keys left out are null in those rows).

        >>> df = spark.createDataFrame([("a", "x", 1), ("b", "x", 2)], ["k", "j", "v"])
        >>> sorted(df.cube("k", "j").count().collect(), key=str)  # (k, j), (k), (j), ()
        [Row(k='a', j='x', count=1), Row(k='a', j=None, count=1), Row(k='b', j='x', count=1), Row(k='b', j=None, count=1), Row(k=None, j='x', count=2), Row(k=None, j=None, count=2)]
        """
        n = len(cols[0]) if len(cols) == 1 and isinstance(cols[0], list) else len(cols)
        sets = [[i for i in range(n) if mask >> (n - 1 - i) & 1] for mask in range(2 ** n - 1, -1, -1)]
        return self._grouped_sets(cols, sets, "Cube")

    def groupingSets(self, groupingSets: Any, *cols: "Column | str") -> Any:
        """Groups by each of ``groupingSets`` (each a list of some of ``cols``).

        >>> df = spark.createDataFrame([("a", "x", 1), ("b", "x", 2)], ["k", "j", "v"])
        >>> sorted(df.groupingSets([["k"], []], "k", "j").sum("v").collect(), key=str)
        [Row(k='a', j=None, sum(v)=1), Row(k='b', j=None, sum(v)=2), Row(k=None, j=None, sum(v)=3)]
        """
        names = [c if isinstance(c, str) else spark_name(to_expr(c)) for c in cols]
        sets = []
        for gs in groupingSets:
            gs = [gs] if isinstance(gs, (str, Column)) else list(gs)
            sets.append([names.index(g if isinstance(g, str) else spark_name(to_expr(g))) for g in gs])
        return self._grouped_sets(cols, sets, "GroupingSets")

    def agg(self, *exprs: Any) -> "DataFrame":
        """An aggregate over all rows (``groupBy().agg``).

        >>> from strataflow.pyspark.sql import functions as F
        >>> spark.range(5).agg(F.max("id"), F.avg("id")).collect()
        [Row(max(id)=4, avg(id)=2.0)]
        """
        return self.groupBy().agg(*exprs)

    def _window_exchange(self, items: list[exp.Expression]) -> Plan:
        windows = [w for e in items for w in e.find_all(exp.Window)]
        parts = {tuple(p.sql() for p in (w.args.get("partition_by") or [])) for w in windows}
        plan = self._current
        if len(parts) == 1 and next(iter(parts)):
            return plan.exchange_hash(list(windows[0].args["partition_by"]), self._shuffle_partitions())
        return plan.exchange_single()

    # -- joins ---------------------------------------------------------------------------------------------
    def join(self, other: "DataFrame", on: Any = None, how: str | None = None) -> "DataFrame":
        """Rows of this and ``other`` that match: ``on`` a column name or list of them
        (each once in the result), or a Column condition; ``how`` one of inner, left,
        right, full (outer), semi, anti, cross.

        >>> people = spark.createDataFrame([(1, "Ann"), (2, "Bo")], ["id", "name"])
        >>> ages = spark.createDataFrame([(1, 30), (3, 5)], ["id", "age"])
        >>> people.join(ages, "id").collect()
        [Row(id=1, name='Ann', age=30)]
        >>> sorted(people.join(ages, people.id == ages.id, "left").select(people.name, "age").collect())
        [Row(name='Ann', age=30), Row(name='Bo', age=None)]
        """
        kind = _JOIN_KINDS.get((how or "inner").lower().replace(" ", ""))
        if kind is None:
            raise ValueError(f"Unsupported join type '{how}'. Supported join types include: 'inner', 'outer', "
                             "'full', 'fullouter', 'full_outer', 'leftouter', 'left', 'left_outer', 'rightouter', "
                             "'right', 'right_outer', 'leftsemi', 'left_semi', 'semi', 'leftanti', 'left_anti', "
                             "'anti', 'cross'.")
        if on is None and kind == "inner":
            kind = "cross"
        lp, rp = self._current, other._current
        sides = {"__l": lp.fields, "__r": rp.fields}
        pairs: list[tuple[exp.Expression, exp.Expression]] = []
        using: list[str] = []
        if isinstance(on, str) or (isinstance(on, list) and on and all(isinstance(x, str) for x in on)):
            using = [on] if isinstance(on, str) else list(on)
            cond = None
            for name in using:
                lk, rk = field_of(name, "", lp.fields), field_of(name, "", rp.fields)
                l_e, r_e = exp.column(lk.phys, table="__l", quoted=True), exp.column(rk.phys, table="__r", quoted=True)
                pairs.append((l_e, r_e))
                eq = exp.EQ(this=l_e, expression=r_e)
                cond = eq if cond is None else exp.And(this=cond, expression=eq)
        elif on is not None:
            conds = on if isinstance(on, list) else [on]
            cond = None
            for c in conds:
                r = resolve(c._expr, [], sides)
                cond = r if cond is None else exp.And(this=cond, expression=r)
            pairs = equi_pairs(cond)
        else:
            cond = None
        # the output's columns
        if kind in ("semi", "anti"):
            out = [(exp.column(f.phys, table="__l", quoted=True), f.name, f.origins) for f in lp.fields]
        elif using:
            keys_l = {field_of(n, "", lp.fields).phys for n in using}
            keys_r = {field_of(n, "", rp.fields).phys for n in using}
            out = []
            for n, (l_e, r_e) in zip(using, pairs):
                lk = field_of(n, "", lp.fields)
                val = exp.Coalesce(this=l_e, expressions=[r_e]) if kind == "full" else r_e if kind == "right" else l_e
                out.append((val, lk.name, lk.origins | field_of(n, "", rp.fields).origins))
            out += [(exp.column(f.phys, table="__l", quoted=True), f.name, f.origins) for f in lp.fields
                    if f.phys not in keys_l]
            out += [(exp.column(f.phys, table="__r", quoted=True), f.name, f.origins) for f in rp.fields
                    if f.phys not in keys_r]
        else:
            out = [(exp.column(f.phys, table="__l", quoted=True), f.name, f.origins) for f in lp.fields]
            out += [(exp.column(f.phys, table="__r", quoted=True), f.name, f.origins) for f in rp.fields]
        return self._new(join_plan(self, other, kind, cond, pairs, out))  # type: ignore[attr-defined]

    def crossJoin(self, other: "DataFrame") -> "DataFrame":
        """Every row of this with every row of ``other``.

        >>> spark.range(2).crossJoin(spark.range(3).withColumnRenamed("id", "j")).count()
        6
        """
        return self.join(other, how="cross")

    def _broadcast_hint(self) -> "DataFrame":
        df = self._new(self._current)  # type: ignore[attr-defined]
        df._hint = "broadcast"
        return df

    def hint(self, name: str, *parameters: Any) -> "DataFrame":
        """A hint for the planner: ``"broadcast"`` (others are accepted and ignored).

        >>> spark.range(2).hint("broadcast").count()
        2
        """
        return self._broadcast_hint() if name.lower() in ("broadcast", "broadcastjoin", "mapjoin") else self

    # -- order ----------------------------------------------------------------------------------------------
    def _by_ordinal(self, c: Any, asc: bool = True) -> tuple[Any, bool]:
        """Spark's column ordinals: ``1`` is the first column, ``-1`` the first descending."""
        if isinstance(c, bool) or not isinstance(c, int):
            return c, asc
        names = self.columns  # type: ignore[attr-defined]
        if c == 0 or abs(c) > len(names):
            raise AnalysisException(f"[ORDER_BY_POS_OUT_OF_RANGE] Column ordinal {c} is out of range: the DataFrame "
                                    f"has {len(names)} columns {names}; ordinals start at 1.", "ORDER_BY_POS_OUT_OF_RANGE")
        return Column(exp.column(names[abs(c) - 1], quoted=True)), (c > 0) == asc

    def _orders(self, cols: tuple, ascending: Any) -> list[exp.Ordered]:
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        if ascending is None:
            ascending = True
        asc = ascending if isinstance(ascending, list) else [ascending] * len(cols)
        orders = []
        for c, a in zip(cols, asc):
            c, a = self._by_ordinal(c, a)
            e = to_expr(c)
            if not isinstance(e, exp.Ordered):
                e = exp.Ordered(this=e, desc=not a, nulls_first=bool(a))
            e = exp.Ordered(this=self._items((Column(e.this),))[0][0], desc=e.args.get("desc", False),
                            nulls_first=e.args.get("nulls_first", False))
            orders.append(e)
        return orders

    def orderBy(self, *cols: "Column | str", ascending: Any = None) -> "DataFrame":
        """Rows in order of ``cols`` (ascending nulls first, unless a column says ``desc()``).

        >>> [r.id for r in spark.range(5).orderBy("id", ascending=False).collect()]
        [4, 3, 2, 1, 0]
        """
        orders = self._orders(cols, ascending)
        plan = self._current
        if plan.num_partitions > 1:
            plan = plan.exchange_range(orders, self._shuffle_partitions())
        return self._new(plan.project(plan.identity_items(), order=orders))  # type: ignore[attr-defined]

    sort = orderBy

    def sortWithinPartitions(self, *cols: "Column | str", ascending: Any = None) -> "DataFrame":
        """Each partition's rows in order of ``cols`` (no shuffle).

        >>> spark.range(4, numPartitions=1).sortWithinPartitions("id", ascending=False).first().id
        3
        """
        plan = self._current
        return self._new(plan.project(plan.identity_items(), order=self._orders(cols, ascending)))  # type: ignore

    def limit(self, num: int) -> "DataFrame":
        """The first ``num`` rows.

        >>> spark.range(10).limit(3).count()
        3
        """
        plan = self._current
        first = plan.project(plan.identity_items(), limit=num)
        one = Plan(plan.session, first.dataset().coalesce(1), first.schema, first.fields)
        return self._new(one.project(one.identity_items(), limit=num))  # type: ignore[attr-defined]

    # -- duplicates and sets ----------------------------------------------------------------------------------
    def distinct(self) -> "DataFrame":
        """The distinct rows.

        >>> spark.createDataFrame([(1,), (1,), (2,)], ["a"]).distinct().count()
        2
        """
        plan = self._current
        ex = plan.exchange_hash([exp.column(f.phys, quoted=True) for f in plan.fields], self._shuffle_partitions())
        return self._new(ex.project(ex.identity_items(), distinct=True))  # type: ignore[attr-defined]

    def dropDuplicates(self, subset: list[str] | None = None) -> "DataFrame":
        """One row of each set of rows equal in ``subset`` (all columns: ``distinct``).

        >>> spark.createDataFrame([(1, "a"), (1, "b")], ["k", "v"]).dropDuplicates(["k"]).count()
        1
        """
        if not subset:
            return self.distinct()
        plan = self._current
        keys = [exp.column(field_of(n, "", plan.fields).phys, quoted=True) for n in subset]
        ex = plan.exchange_hash(keys, self._shuffle_partitions())
        rn = exp.Window(this=exp.RowNumber(), partition_by=keys)
        items = ex.identity_items()
        ranked = ex.project(items + [(rn, "__rn", frozenset())])
        return self._new(ranked.project(ranked.identity_items()[:-1],  # type: ignore[attr-defined]
                                        where=exp.EQ(this=exp.column("__rn", quoted=True),
                                                     expression=exp.Literal.number(1))))

    drop_duplicates = dropDuplicates

    def union(self, other: "DataFrame") -> "DataFrame":
        """The rows of both, matched by position (duplicates kept, as SQL's UNION ALL).

        >>> spark.range(2).union(spark.range(3)).count()
        5
        """
        left, right, fields = aligned(self._current, other._current, "UNION")
        schema = pa.schema([pa.field(f.phys, f.type) for f in fields])
        return self._new(Plan(left.session, left.dataset().union(right.dataset()), schema, fields))  # type: ignore

    unionAll = union

    def unionByName(self, other: "DataFrame", allowMissingColumns: bool = False) -> "DataFrame":
        """The rows of both, matched by column name (missing ones null if ``allowMissingColumns``).

        >>> a = spark.createDataFrame([(1, "x")], ["n", "s"]); b = spark.createDataFrame([("y", 2)], ["s", "n"])
        >>> a.unionByName(b).collect()
        [Row(n=1, s='x'), Row(n=2, s='y')]
        """
        from strataflow.pyspark.sql import functions as F

        mine, theirs = self.columns, other.columns  # type: ignore[attr-defined]
        low = {c.lower(): c for c in theirs}
        missing = [c for c in mine if c.lower() not in low]
        if missing and not allowMissingColumns:
            raise AnalysisException(f"[UNRESOLVED_COLUMN] Cannot resolve column name `{missing[0]}` among "
                                    f"({', '.join(theirs)})", "UNRESOLVED_COLUMN")
        extra = [c for c in theirs if c.lower() not in {m.lower() for m in mine}]
        if extra and not allowMissingColumns:
            raise AnalysisException(f"[NUM_COLUMNS_MISMATCH] the second input has columns {extra} the first lacks",
                                    "NUM_COLUMNS_MISMATCH")
        left = self.select(*mine, *[F.lit(None).alias(c) for c in extra])  # type: ignore[attr-defined]
        right = other.select(*[F.col(low[c.lower()]) if c.lower() in low else F.lit(None).alias(c) for c in mine],
                             *extra)
        return left.union(right)

    def repartition(self, numPartitions: Any, *cols: "Column | str") -> "DataFrame":
        """``numPartitions`` partitions (by the hash of ``cols`` if given, else evenly).

        >>> spark.range(10).repartition(3).rdd.getNumPartitions()
        3
        """
        plan = self._current
        if not isinstance(numPartitions, int):
            cols, numPartitions = (numPartitions, *cols), self._shuffle_partitions()
        if cols:
            keys = [e for e, _, _ in self._items(cols)]  # type: ignore[attr-defined]
            return self._new(plan.exchange_hash(keys, numPartitions))  # type: ignore[attr-defined]
        schema = plan.schema
        ds = plan.dataset().repartition(numPartitions).map_partitions(functools.partial(_table_of, schema))
        return self._new(Plan(plan.session, ds, schema, plan.fields))  # type: ignore[attr-defined]

    def coalesce(self, numPartitions: int) -> "DataFrame":
        """At most ``numPartitions`` partitions, by joining neighbours (no shuffle).

        >>> spark.range(10, numPartitions=4).coalesce(2).rdd.getNumPartitions()
        2
        """
        plan = self._current
        return self._new(Plan(plan.session, plan.dataset().coalesce(numPartitions), plan.schema, plan.fields))  # type: ignore


def _table_of(schema: pa.Schema, value: Any) -> pa.Table:
    return as_table(value, schema)
