"""``pyspark.sql.functions``: JSON, CSV and XML functions, sort-order helpers and the rest of PySpark's Misc Functions.

Each function is defined with PySpark's signature and an example; ``call`` builds the
node by Spark's name, and ``sql/semantics`` gives it Spark's meaning or refuses it.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp as sx

from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.functions.builtin import arg, call

__all__: list[str] = ["typeof"]


class NotExpectedType(TypeError):
    """PySpark's ``PySparkTypeError`` of class ``NOT_EXPECTED_TYPE``: an argument PySpark
    wants a Column or a column name for was given something else."""

    def getCondition(self) -> str:
        return "NOT_EXPECTED_TYPE"

    getErrorClass = getCondition


def _col(v: Any, param: str = "col") -> sx.Expression:
    """A ``ColumnOrName`` argument: a Column, or a string naming one (anything else is
    PySpark's NOT_EXPECTED_TYPE)."""
    if not isinstance(v, (Column, str)):
        raise NotExpectedType(f"[NOT_EXPECTED_TYPE] Argument `{param}` should be a Column or str, "
                              f"got {type(v).__name__}.")
    return arg(v, "c")


def typeof(col: "Column | str") -> Column:
    """The Spark type of ``col`` as its DDL text (``simpleString``: ``int``, ``decimal(10,2)``, ``array<string>``).

    >>> spark.createDataFrame([(1, 1.5)], "a int, b double").select(F.typeof("a"), F.typeof("b")).first()
    Row(typeof(a)='int', typeof(b)='double')
    """
    return call("typeof", _col(col))
