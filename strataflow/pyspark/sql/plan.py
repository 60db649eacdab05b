"""A DataFrame's physical side: a strataflow Dataset of Arrow Table partitions and the
query each partition still has to run.

A :class:`Plan` is an input Dataset (``source``, of tables with schema ``in_schema``) and
a DuckDB query over it as table ``__t`` (None: the input as it is). Narrow operations
(``select``, ``filter``, ``withColumn``...) wrap the query in another one, so a chain of
them is one query per partition, which DuckDB optimizes as a whole. Wide operations end
the query where a shuffle must happen (``exchange``): each row goes to the partition its
key hashes to (DuckDB's ``hash``, the same in every process), through strataflow's
shuffle, as Arrow; the reduce side starts a new query. Sorting exchanges by ranges of
the first key, sampled first, so the partitions are in order and each sorts its own.

The output's types come from DuckDB itself: the query runs once on the driver over an
empty table of the input's schema, so a plan knows its schema without running a job.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
import pyarrow as pa
from sqlglot import exp

from strataflow.dataset import Dataset
from strataflow.io.parquet import ParquetSource
from strataflow.pyspark.sql.dialect import to_sql
from strataflow.pyspark.sql.engine import normalize, run_query
from strataflow.pyspark.sql.parquet_scan import ParquetQuery, direct_views
from strataflow.pyspark.sql.resolve import Field, physical_names
from strataflow.pyspark.sql.udf import udf_defs
from strataflow.pyspark.sql.task_memory import map_queries
from strataflow.pyspark.sql.tasks import (T, assign_and_tag, hash_assign, normalized, range_assign, renamed,
                                          run_partition, sample_key, untag_schema, zeros)

__all__ = ["Plan", "to_sql", "estimated_bytes"]



class Plan:
    """An input Dataset of Table partitions and the query each partition runs over it."""

    def __init__(self, session: Any, source: Any, in_schema: pa.Schema, fields: list[Field],
                 query: exp.Select | None = None, rescan: Callable[[list[str]], Any] | None = None,
                 rows: int | None = None, widths: dict[str, float] | None = None) -> None:
        self.session, self.source, self.in_schema, self.fields, self.query = session, source, in_schema, fields, query
        self.rescan = rescan  # a file source: the Dataset of only the named columns (None: any other source)
        self.rows = rows  # at most this many rows (from a source's footers or its data), None if not known
        self.widths = widths or {}  # a source's string columns: bytes per value, about (``estimated_bytes``)
        #: ``((column, type the hash reads it as), ...), n``: rows with equal values of those output
        #: columns are in one of the n partitions, as ``exchange_hash`` put them (None: not known)
        self.hashed: tuple[tuple[tuple[str, str], ...], int] | None = None
        #: True if rows were dropped on the way (a filter, a semi or anti join): fewer than
        #: ``rows`` may be left, so a join may compute it first to see (``join_plan._adaptive``)
        self.narrowed = False
        #: a plain Parquet source (``Plan.of``): the first query over it may read it directly (``parquet_scan.py``)
        self.parquet: Any = None

    @classmethod
    def of(cls, session: Any, dataset: Any, schema: pa.Schema, origin: object,
           rescan: Callable[[list[str]], Any] | None = None) -> "Plan":
        """A plan of a Dataset whose partitions are Tables of ``schema`` (logical names: made
        physical here). ``rescan(columns)``, for a file source, reads only those columns: the
        first query over the plan reads no column it does not name."""
        node = dataset.node
        rows, widths = _source_rows(node), getattr(node, "value_bytes", None)
        plain = normalize(schema.empty_table()).schema  # string views, nanoseconds: as queries give them
        if [f.type for f in plain] != [f.type for f in schema]:
            dataset = dataset.map_partitions(normalized)
            schema = plain
            rescan = rescan and functools.partial(_normalized_scan, rescan)
        phys = physical_names(schema.names)
        if phys != schema.names:
            rescan = None
        if phys != schema.names:
            schema = pa.schema([f.with_name(p) for f, p in zip(schema, phys)])
            dataset = dataset.map_partitions(functools.partial(renamed, phys))
        fields = [Field(f.name, p, f.type, frozenset([origin])) for f, p in zip(schema, phys)]
        out = cls(session, dataset, schema, fields, rescan=rescan, rows=rows, widths=widths)
        out.parquet = node if isinstance(node, ParquetSource) and rescan is not None else None  # its names as read
        return out

    @property
    def schema(self) -> pa.Schema:
        """The output's schema (physical names)."""
        return pa.schema([pa.field(f.phys, f.type) for f in self.fields])

    @property
    def num_partitions(self) -> int:
        return self.source.num_partitions

    def sql(self) -> str | None:
        return None if self.query is None else to_sql(self.query)

    def dataset(self) -> Any:
        """The Dataset of output Tables (physical names)."""
        if self.query is None:
            return self.source
        udfs = udf_defs(self.query)
        if self.parquet is not None and not udfs:
            views = direct_views(self.parquet, self.in_schema)
            if views is not None:
                node = ParquetQuery(self.parquet, views, self.sql(), self.in_schema)
                return Dataset(self.session.sparkContext.ctx, node, "parquet_query")
        source, schema = self.source, self.in_schema
        if self.rescan is not None and not _selects_all(self.query):  # read only the columns the query names
            named = {c.name for c in self.query.find_all(exp.Column)}
            keep = [f for f in schema if f.name in named]
            if keep and len(keep) < len(schema):
                source, schema = self.rescan([f.name for f in keep]), pa.schema(keep)
        return map_queries(source, functools.partial(run_partition, self.sql(), schema, udfs))

    def _from(self) -> exp.Expression:
        if self.query is None:
            return exp.to_table(T)
        return exp.Subquery(this=self.query.copy(), alias=exp.TableAlias(this=exp.to_identifier(T)))

    def with_origin(self, *tags: object) -> "Plan":
        out = Plan(self.session, self.source, self.in_schema, [f.with_origin(*tags) for f in self.fields], self.query,
                   self.rescan, self.rows, self.widths)
        out.hashed, out.narrowed, out.parquet = self.hashed, self.narrowed, self.parquet
        return out

    # -- narrow: one more query over this one ---------------------------------------------------------
    def project(self, items: list[tuple[exp.Expression, str, frozenset]], where: exp.Expression | None = None,
                group_by: list[exp.Expression] | None = None, distinct: bool = False,
                order: list[exp.Expression] | None = None, limit: int | None = None) -> "Plan":
        """``SELECT items WHERE where GROUP BY ... ORDER BY ... LIMIT`` over this plan's output;
        ``items`` are resolved expressions with their logical names and origins."""
        phys = physical_names([name for _, name, _ in items])
        frm, where = self._from(), where
        if self.query is not None and _plain_filter(self.query):  # fold a filter into this query: the
            frm = (self.query.args.get("from") or self.query.args.get("from_")).this.copy()  # scan then
            before = self.query.args.get("where")  # reads only the columns that are used
            if before is not None:
                where = before.this.copy() if where is None else exp.and_(before.this.copy(), where)
        sel = exp.select(*[exp.alias_(e, p, quoted=True) for (e, _, _), p in zip(items, phys)]).from_(frm)
        if where is not None:
            sel = sel.where(where)
        if group_by:
            sel = sel.group_by(*group_by)
        if distinct:
            sel = sel.distinct()
        if order:
            sel = sel.order_by(*order)
        if limit is not None:
            sel = sel.limit(limit)
        types = self._item_types([e for e, _, _ in items], sel)
        fields = [Field(name, p, t, origins) for t, (_, name, origins), p in zip(types, items, phys)]
        rows = self.rows if limit is None or self.rows is None else min(self.rows, limit)
        out = Plan(self.session, self.source, self.in_schema, fields, sel, self.rescan, rows, self.widths)
        out.hashed = _renamed_hashing(self.hashed, [(e, p) for (e, _, _), p in zip(items, phys)])
        out.narrowed = self.narrowed or sel.args.get("where") is not None
        out.parquet = self.parquet
        return out

    def _item_types(self, exprs: list[exp.Expression], sel: exp.Select) -> list[pa.DataType]:
        """The output types of ``sel``'s items: a column this plan outputs keeps its type; any
        other item is typed by DuckDB, running ``sel`` over an empty input (about 5 ms a
        query, most of the planning time of a filter or a pruning select when all were)."""
        known = {f.phys: f.type for f in self.fields}
        if all(isinstance(e, exp.Column) and not e.table and e.name in known for e in exprs):
            return [known[e.name] for e in exprs]
        out = run_query(to_sql(sel), {T: self.in_schema.empty_table()}).schema
        return [out.field(i).type for i in range(len(exprs))]

    def identity_items(self) -> list[tuple[exp.Expression, str, frozenset]]:
        return [(exp.column(f.phys, quoted=True), f.name, f.origins) for f in self.fields]

    def filter(self, cond: exp.Expression) -> "Plan":
        return self.project(self.identity_items(), where=cond)

    # -- wide: a shuffle, then a new source ----------------------------------------------------------
    def _exchange(self, assign: Callable[[pa.Table], np.ndarray], n: int) -> "Plan":
        schema = self.schema
        tagged = self.dataset().map_partitions(functools.partial(assign_and_tag, assign, schema))
        with_p = pa.schema([pa.field("__p", pa.int64()), *schema])
        out = tagged.partition_by(n).map_partitions(functools.partial(untag_schema, with_p, schema))
        return Plan(self.session, out, schema, self.fields, rows=self.rows, widths=self.widths)

    def exchange_hash(self, keys: list[exp.Expression], n: int) -> "Plan":
        """Rows with equal ``keys`` (resolved expressions, cast alike on both sides of a
        join) in one of ``n`` partitions; this plan itself when its rows already are (an
        aggregate's output joined by its keys, a join's grouped by its keys: no shuffle)."""
        if not keys:
            return self.exchange_single()
        types = {f.phys: f.type for f in self.fields}
        keys = [exp.cast(k, "BIGINT") if isinstance(k, exp.Column) and not k.table and k.name in types
                and pa.types.is_integer(types[k.name]) and types[k.name] != pa.int64() else k
                for k in keys]  # every integer hashed as a bigint: an int key's rows meet a bigint key's
        sig = _hash_signature(keys, self.fields)
        if sig is not None and self.hashed == (sig, n):
            return self
        h = exp.Anonymous(this="hash", expressions=keys)
        sql = to_sql(exp.select(exp.Mod(this=h, expression=exp.Literal.number(n))).from_(T))
        out = self._exchange(functools.partial(hash_assign, sql), n)
        out.hashed = None if sig is None else (sig, n)
        return out

    def exchange_single(self) -> "Plan":
        """Every row in one partition (a global aggregate, a window over everything)."""
        if self.num_partitions == 1:
            return Plan(self.session, self.dataset(), self.schema, self.fields, rows=self.rows, widths=self.widths)
        return self._exchange(zeros, 1)

    def exchange_range(self, order: list[exp.Ordered], n: int) -> "Plan":
        """Partitions in the order of ``order``'s first key: bounds from a sample of it."""
        first = order[0]
        key_sql = to_sql(exp.select(first.this).from_(T))
        per_part = max(20, 60 * n // max(1, self.num_partitions))
        samples = self.dataset().map_partitions(functools.partial(sample_key, key_sql, per_part)).collect_partitions()
        arrays = [a for part in samples for a in part if len(a)]
        if not arrays or n == 1:
            return self.exchange_single()
        values = np.sort(pa.concat_arrays(arrays).to_numpy(zero_copy_only=False))
        bounds = np.unique(values[[len(values) * i // n for i in range(1, n)]]) if len(values) else values
        m = len(bounds) + 1
        assign = functools.partial(range_assign, key_sql, bounds, bool(first.args.get("desc")),
                                   bool(first.args.get("nulls_first")), m)
        return self._exchange(assign, m)


def _hash_signature(keys: list[exp.Expression], fields: list[Field]) -> tuple[tuple[str, str], ...] | None:
    """``(column, type)`` of each key that is a column (cast or not) of ``fields``: two hash
    exchanges with equal signatures put equal rows in equal partitions. None: a key is an
    expression of another kind."""
    types = {f.phys: f.type for f in fields}
    sig = []
    for k in keys:
        cast = k.to.sql("duckdb").upper() if isinstance(k, exp.Cast) else None
        col = k.this if isinstance(k, exp.Cast) else k
        if not isinstance(col, exp.Column) or col.table or col.name not in types:
            return None
        own = str(types[col.name])
        sig.append((col.name, _CAST_AS_ARROW.get(cast, cast) if cast else own))
    return tuple(sig)


#: DuckDB cast targets of join keys (``join_plan._hash_type``) as the Arrow types they equal
_CAST_AS_ARROW = {"BIGINT": "int64", "DOUBLE": "double", "VARCHAR": "string", "TEXT": "string"}


def _renamed_hashing(hashed: Any, items: list[tuple[exp.Expression, str]]) -> Any:
    """A plan's hashing after a projection: its columns under their new names, if each is
    passed through as it is; else None."""
    if hashed is None:
        return None
    names = {}
    for e, out in items:
        if isinstance(e, exp.Column) and not e.table and e.name not in names:
            names[e.name] = out
    sig, n = hashed
    if not all(col in names for col, _ in sig):
        return None
    return tuple((names[col], t) for col, t in sig), n


def _source_rows(node: Any) -> int | None:
    """The rows a source holds, if known before reading it: Parquet footers, driver tables."""
    rows = getattr(node, "num_rows", None)
    if isinstance(rows, int):
        return rows
    slices = getattr(node, "slices", None)
    if isinstance(slices, list) and all(isinstance(t, pa.Table) for t in slices):
        return sum(t.num_rows for t in slices)
    return None


def estimated_bytes(plan: Plan) -> int | None:
    """At most about how many bytes ``plan``'s rows take in memory (None if not known):
    its row bound times a row's width, a string as wide as its source column's statistics
    say (24 bytes if they say nothing)."""
    if plan.rows is None:
        return None
    width = 0
    for f in plan.fields:
        try:
            width += f.type.bit_width // 8
        except ValueError:  # strings (as the source's statistics say, else 24 bytes), binaries, nested values
            width += plan.widths.get(f.phys, 24) if not pa.types.is_nested(f.type) else 64
    return int(plan.rows * max(1, width))


def _selects_all(q: exp.Expression) -> bool:
    """True if ``q`` selects ``*`` somewhere (``count(*)`` reads no column)."""
    return any(not isinstance(s.parent, exp.Count) for s in q.find_all(exp.Star))


def _plain_filter(q: exp.Select) -> bool:
    """True if ``q`` only filters: every item a column under its own name, nothing grouped,
    ordered, limited or made distinct; a query over it may read its input directly."""
    if any(q.args.get(k) for k in ("group", "having", "distinct", "order", "limit", "qualify", "joins")):
        return False
    return all(isinstance(e, exp.Alias) and isinstance(e.this, exp.Column) and not e.this.table
               and e.this.name == e.alias for e in q.expressions)


def _normalized_scan(rescan: Callable[[list[str]], Any], columns: list[str]) -> Any:
    return rescan(columns).map_partitions(normalized)


def _pruned(plan: Plan, exprs: list[exp.Expression]) -> Plan:
    """``plan`` with only the columns ``exprs`` name, so that a shuffle carries no other
    (kept as it is when a column is named by ``*`` or pruning would rename one)."""
    if any(e.find(exp.Star) is not None for e in exprs):
        return plan
    named = {c.name for e in exprs for c in e.find_all(exp.Column)}
    kept = [f for f in plan.fields if f.phys in named]
    if not kept or len(kept) == len(plan.fields) or physical_names([f.name for f in kept]) != [f.phys for f in kept]:
        return plan
    return plan.project([(exp.column(f.phys, quoted=True), f.name, f.origins) for f in kept])


_PARTIAL = (exp.Sum, exp.Count, exp.Min, exp.Max, exp.Avg)


def _decomposable(items: list[exp.Expression]) -> bool:
    """True if every aggregate in ``items`` can be computed in two steps (partial sums,
    counts, minima and maxima per map partition, combined after the shuffle)."""
    for e in items:
        for n in e.walk():
            if isinstance(n, exp.Window):
                return False
            if isinstance(n, exp.AggFunc):
                if not isinstance(n, _PARTIAL) or n.find(exp.Distinct) is not None:
                    return False
    return True


def aggregate(plan: Plan, keys: list[tuple[exp.Expression, str, frozenset]],
              items: list[tuple[exp.Expression, str, frozenset]], n: int) -> Plan:
    """``SELECT items GROUP BY keys`` over ``plan``'s rows, across partitions: rows with
    equal keys meet in one partition after a shuffle. Sums, counts, minima, maxima and
    means are first aggregated within each map partition (Spark's partial aggregation), so
    the shuffle moves a row per group and partition, not every row."""
    key_exprs = [e for e, _, _ in keys]
    if not _decomposable([e for e, _, _ in items]):
        plan = _pruned(plan, key_exprs + [e for e, _, _ in items])
        ex = plan.exchange_hash(key_exprs, n) if keys else plan.exchange_single()
        return ex.project(items, group_by=key_exprs or None)
    partial: list[tuple[exp.Expression, str, frozenset]] = [(k, f"__k{i}", frozenset()) for i, k in enumerate(key_exprs)]
    finals: dict[str, exp.Expression] = {}

    def part(e: exp.Expression) -> exp.Expression:
        name = f"__p{len(partial)}"
        partial.append((e, name, frozenset()))
        return exp.column(name, quoted=True)

    for e, _, _ in items:
        for node in e.find_all(exp.AggFunc):
            key = node.sql()
            if key in finals:
                continue
            if isinstance(node, exp.Avg):
                s = part(exp.Sum(this=node.this.copy()))
                c = part(exp.Count(this=node.this.copy()))
                finals[key] = exp.Div(this=exp.cast(exp.Sum(this=s), "DOUBLE"), expression=exp.Sum(this=c))
            elif isinstance(node, exp.Count):
                finals[key] = exp.Sum(this=part(node.copy()))
                finals[key] = exp.Coalesce(this=finals[key], expressions=[exp.Literal.number(0)])
            else:
                finals[key] = type(node)(this=part(node.copy()))
    pre = plan.project(partial, group_by=key_exprs or None)
    pkeys = [exp.column(f"__k{i}", quoted=True) for i in range(len(keys))]
    ex = pre.exchange_hash(pkeys, n) if keys else pre.exchange_single()
    by_key = {k.sql(): pk for k, pk in zip(key_exprs, pkeys)}

    def final(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.AggFunc) and node.sql() in finals:
            return finals[node.sql()].copy()
        if node.sql() in by_key and not isinstance(node, exp.Literal):
            return by_key[node.sql()].copy()
        return node

    out = [(e.transform(final, copy=True), name, origins) for e, name, origins in items]
    return ex.project(out, group_by=pkeys or None)
