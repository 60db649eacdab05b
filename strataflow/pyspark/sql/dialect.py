"""Spark SQL expressions written in DuckDB's dialect with Spark's meaning.

sqlglot's transpiler does most of it; ``to_sql`` adds what it would otherwise change:
the result types of date arithmetic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["to_sql", "duck_type"]


def _spark_types(node: exp.Expression) -> exp.Expression:
    """Spark's result types where sqlglot's DuckDB spelling would change them: ``date_add``
    and ``date_sub`` give a date (DuckDB's date + interval is a timestamp)."""
    if isinstance(node, (exp.TsOrDsAdd, exp.DateAdd, exp.DateSub)) and not isinstance(node.parent, exp.Cast):
        return exp.Cast(this=node, to=exp.DataType.build("DATE"))
    return node


def to_sql(e: exp.Expression) -> str:
    """An expression or query in DuckDB's dialect, with Spark's meaning."""
    return e.transform(_spark_types, copy=True).sql(dialect="duckdb")


def duck_type(t: "pa.DataType") -> str:
    """DuckDB's name of the Spark type an Arrow type stands for (a cast's target, a UDF's
    parameter or result)."""
    from strataflow.pyspark.sql.types import from_arrow

    return exp.DataType.build(from_arrow(t).simpleString(), dialect="spark").sql("duckdb")
