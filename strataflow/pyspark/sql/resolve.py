"""Names to columns: a Column's references resolved against a DataFrame's fields.

A DataFrame's partitions hold each column under a *physical* name that is unique in the
table (its own name, or ``name#2`` when a join leaves two columns of one name), so that
DuckDB sees no clash; users see *logical* names. Resolution rewrites every column
reference to the physical name, case-insensitively as Spark does by default, and a
reference that names no column, or two, is an :class:`AnalysisException` naming it and
listing the columns there are, as PySpark's ``UNRESOLVED_COLUMN`` and ``AMBIGUOUS_REFERENCE``.

``df["a"]`` and ``df.a`` carry their DataFrame (the qualifier ``__df<id>``); every field
remembers the DataFrames it belonged to (``origins``), so after a join ``left.id`` and
``right.id`` name different columns. ``df.alias("x")`` adds ``x`` to the origins.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.coercion import spark_coercions
from strataflow.pyspark.sql.column_names import expand_struct_ops
from strataflow.pyspark.sql.semantics import SqlConf, spark_semantics
from strataflow.pyspark.sql.udf import bind_udfs

__all__ = ["Field", "resolve", "physical_names", "qualifier"]


@dataclass(frozen=True)
class Field:
    """One column of a DataFrame: its name, its name in the partitions' tables, its Arrow
    type, and the DataFrames (ids and aliases) it came through."""

    name: str
    phys: str
    type: pa.DataType
    origins: frozenset = frozenset()

    def with_origin(self, *tags: object) -> "Field":
        return replace(self, origins=self.origins | frozenset(tags))


def qualifier(df_id: int) -> str:
    """The qualifier a DataFrame's own Column references carry (``df["a"]``)."""
    return f"__df{df_id}"


def physical_names(names: Iterable[str]) -> list[str]:
    """A unique physical name for each logical one (case-insensitively unique, as DuckDB needs)."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        k = n.lower()
        seen[k] = seen.get(k, 0) + 1
        out.append(n if seen[k] == 1 else f"{n}#{seen[k]}")
    return out


def _tag(table: str) -> object:
    return int(table[4:]) if table.startswith("__df") and table[4:].isdigit() else table


def lookup(name: str, table: str, fields: list[Field]) -> list[Field]:
    """The fields ``table.name`` may mean (``table`` empty: any)."""
    hits = [f for f in fields if f.name.lower() == name.lower()]
    if table:
        tag = _tag(table)
        hits = [f for f in hits if tag in f.origins or (isinstance(tag, str) and tag.lower() in
                                                          {str(o).lower() for o in f.origins})]
    return hits


def unresolved(name: str, fields: list[Field]) -> AnalysisException:
    names = ", ".join(f"`{f.name}`" for f in fields)
    return AnalysisException(f"[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column or function parameter with name "
                             f"`{name}` cannot be resolved. Did you mean one of the following? [{names}].",
                             "UNRESOLVED_COLUMN")


def field_of(name: str, table: str, fields: list[Field]) -> Field:
    """The one field ``table.name`` names, else AnalysisException."""
    hits = lookup(name, table, fields)
    if not hits and table and not table.startswith("__df"):
        hits = []
    if not hits:
        raise unresolved(f"{table}.{name}" if table and not table.startswith("__df") else name, fields)
    if len(hits) > 1:
        raise AnalysisException(f"[AMBIGUOUS_REFERENCE] Reference `{name}` is ambiguous, could be: "
                                f"[{', '.join(f'`{h.name}`' for h in hits)}].", "AMBIGUOUS_REFERENCE")
    return hits[0]


def resolve(e: exp.Expression, fields: list[Field], sides: dict[str, list[Field]] | None = None,
            session: object = None) -> exp.Expression:
    """A copy of ``e`` whose column references are physical names. With ``sides`` (a
    join's ``{"__l": left fields, "__r": right fields}``) each reference is qualified with
    its side's table name. A ``table.name`` that is not a DataFrame's qualifier or alias
    but a struct column reads that struct's field. Over a partition's own columns the
    expression then gets Spark's meaning under ``session``'s settings, or is refused
    (``semantics``)."""
    e = expand_struct_ops(e, fields if sides is None else [f for fs in sides.values() for f in fs]).copy()
    columns = [c for c in e.find_all(exp.Column) if not isinstance(c.this, exp.Star)
               and not any(isinstance(p, (exp.Subquery, exp.Select)) for p in _parents(c, e))]
    for c in columns:
        new = _resolve_column(c, fields, sides)
        if c is e:
            return new
        c.replace(new)
    if sides is not None and any(n.meta.get("udf") is not None for n in e.find_all(exp.Anonymous)):
        raise AnalysisException("[UNSUPPORTED_FEATURE] a Python UDF in a join condition is not supported yet: "
                                "compute it as a column of one side (withColumn), then join on that column",
                                "UNSUPPORTED_FEATURE")
    if sides is None:  # a partition's own columns: Spark's implicit conversions, now that types are known
        schema = pa.schema([pa.field(f.phys, f.type) for f in fields])
        conf = SqlConf.of(session)
        e = spark_semantics(spark_coercions(e, schema, "__t", conf.ansi), schema, "__t", conf)
        e = bind_udfs(e, schema, "__t")
    return e


def _parents(node: exp.Expression, top: exp.Expression) -> Iterable[exp.Expression]:
    """The nodes between ``node`` and ``top`` (a copy of a part of a query keeps its parents)."""
    p = node
    while p is not None and p is not top:
        p = p.parent
        if p is not None and p is not top:
            yield p


def _resolve_column(c: exp.Column, fields: list[Field], sides: dict[str, list[Field]] | None) -> exp.Expression:
    name, table = c.name, c.table
    if sides is None:
        hits = lookup(name, table, fields)
        if not hits and table and not table.startswith("__df") and lookup(table, "", fields):
            struct = field_of(table, "", fields)  # "s.b": field b of struct column s
            return exp.Dot(this=exp.column(struct.phys, quoted=True), expression=exp.to_identifier(name, quoted=True))
        f = field_of(name, table, fields)
        return exp.column(f.phys, quoted=True)
    found = [(side, f) for side, fs in sides.items() for f in lookup(name, table, fs)]
    if not found:
        raise unresolved(name, [f for fs in sides.values() for f in fs])
    if len(found) > 1:
        raise AnalysisException(f"[AMBIGUOUS_REFERENCE] Reference `{name}` is ambiguous, could be: "
                                f"[{', '.join(f'`{f.name}`' for _, f in found)}].", "AMBIGUOUS_REFERENCE")
    side, f = found[0]
    return exp.column(f.phys, table=side, quoted=True)
