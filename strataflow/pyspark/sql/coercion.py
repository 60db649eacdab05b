"""Spark's implicit conversions that DuckDB makes differently, written into a resolved
expression once its input types are known.

- Spark's string functions take any value and read it as a string (``upper(1.5)`` is
  ``'1.5'``); DuckDB has no ``upper(DOUBLE)``. A non-string input is cast to a string.
- Arithmetic reads a string operand as a double (``'2' + 1`` is 3.0) without ANSI, as the
  other operand's type with it (Spark 4's ANSI rules; two strings as doubles); DuckDB has
  no ``VARCHAR + INTEGER``. The casts are Spark's (``semantics.casts`` writes them out).

The input types come from probe queries over an empty table of the DataFrame's schema,
made only when the expression holds such a cast, function or operator.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.dialect import to_sql
from strataflow.pyspark.sql.engine import run_query

__all__ = ["spark_coercions"]


#: string functions whose first argument Spark reads as a string
_STRING_FUNCS = (exp.Upper, exp.Lower, exp.Length, exp.Substring, exp.Trim, exp.Initcap, exp.Pad, exp.Reverse)


#: arithmetic, where Spark reads a string operand as a number (``'2' + 1`` is 3)
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)


def spark_coercions(e: exp.Expression, schema: pa.Schema, table: str, ansi: bool = True) -> exp.Expression:
    """``e`` (resolved over ``table``, whose columns are ``schema``) with Spark's
    conversions written in, innermost first (each input's type is probed after the ones
    inside it are fixed); ``e`` itself when none applies."""
    todo = [n for n in e.walk(bfs=False) if isinstance(n, (*_STRING_FUNCS, *_ARITHMETIC))]
    if not todo:
        return e
    empty = {table: schema.empty_table()}

    def type_of(node: exp.Expression) -> pa.DataType | None:
        if isinstance(node, exp.Column) and node.table in ("", table) and schema.get_field_index(node.name) >= 0:
            return schema.field(node.name).type  # a column's own type: no query
        try:
            return run_query(to_sql(exp.select(node.copy()).from_(table)), empty).schema.types[0]
        except Exception:  # the query itself will say what is wrong, naming it
            return None

    for node in reversed(todo):  # children before their parents
        if isinstance(node, _ARITHMETIC):
            sides = [node.this, node.expression]
            types = [type_of(x) for x in sides]
            for side, t, other in zip(sides, types, reversed(types)):
                if _stringy(t):  # the other side's type (Spark 4's ANSI rule); two strings: double
                    to = _duck_type(other) if ansi and other is not None and not _stringy(other) else "DOUBLE"
                    side.replace(exp.Cast(this=side.copy(), to=exp.DataType.build(to, dialect="duckdb")))
        elif isinstance(node.this, exp.Expression) and not isinstance(node.this, exp.Literal):
            t = type_of(node.this)
            if t is not None and not (_stringy(t) or pa.types.is_null(t) or pa.types.is_binary(t)
                                      or pa.types.is_list(t)):
                node.this.replace(exp.cast(node.this.copy(), "VARCHAR"))
    return e


def _duck_type(t: pa.DataType) -> str:
    """DuckDB's name of a numeric (or date) Arrow type."""
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    return {pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INTEGER", pa.int64(): "BIGINT",
            pa.float32(): "FLOAT", pa.date32(): "DATE"}.get(t, "DOUBLE")


def _stringy(t: pa.DataType | None) -> bool:
    return t is not None and (pa.types.is_string(t) or pa.types.is_large_string(t))
