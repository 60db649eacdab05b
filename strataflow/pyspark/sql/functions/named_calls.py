"""Spark functions built as ``Anonymous`` calls by Spark's name: the node ``spark.sql``
text gives for a name sqlglot has no class for, so one rule serves both forms."""

from __future__ import annotations

from typing import Any

from sqlglot import exp as sx

from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.functions.builtin import arg

__all__ = ["named", "columns"]


def named(name: str, *parts: sx.Expression, shown: "list[sx.Expression] | None" = None,
          called: str | None = None) -> Column:
    """Spark's function ``name`` of ``parts`` as an ``Anonymous`` node (named ``called``
    in the column's name where Spark shows another name)."""
    e = sx.Anonymous(this=name, expressions=list(parts))
    e.meta["fn"] = name
    e.meta["call"] = (called or name, list(parts if shown is None else shown))
    return Column(e)


def columns(*parts: Any) -> list[sx.Expression]:
    """The arguments given (None: left out) as column nodes (a string names a column)."""
    return [arg(p, "c") for p in parts if p is not None]
