"""What every rule sees: the session's settings, the types of an expression's parts, and the refusal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException

__all__ = ["SqlConf", "Rules", "refusal", "typed", "spark_name_of", "REFUSED"]

REFUSED = "STRATAFLOW_UNSUPPORTED"


@dataclass(frozen=True)
class SqlConf:
    """The session settings that change an expression's meaning."""

    ansi: bool = True
    tz: str = "UTC"

    @classmethod
    def of(cls, session: Any) -> "SqlConf":
        """The settings of ``session`` (a SparkSession; None: the defaults)."""
        if session is None:
            return cls()
        get = session.conf.get
        ansi = str(get("spark.sql.ansi.enabled", "true")).strip().lower() != "false"
        return cls(ansi=ansi, tz=str(get("spark.sql.session.timeZone", "UTC") or "UTC"))


def spark_name_of(node: exp.Expression) -> str:
    """The Spark function a node stands for, for messages."""
    if node._meta and node.meta.get("fn"):
        return str(node.meta["fn"])
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.key


def refusal(fn: str, why: str, instead: str) -> AnalysisException:
    """The error for a function (or a case of it) whose answer could differ from Spark's."""
    return AnalysisException(f"[{REFUSED}] strataflow does not run `{fn}` here: {why}, so its answer could differ "
                             f"from Spark's. Instead: {instead}.", REFUSED)


@dataclass
class Rules:
    """What a rule sees: the session's settings and the types of the expression's parts."""

    conf: SqlConf
    schema: pa.Schema
    table: str
    _types: dict = field(default_factory=dict)

    def type_of(self, node: exp.Expression) -> pa.DataType | None:
        """The Arrow type of ``node`` over the table (None where DuckDB cannot type it)."""
        if isinstance(node, exp.Column) and node.table in ("", self.table) \
                and self.schema.get_field_index(node.name) >= 0:
            return self.schema.field(node.name).type
        if isinstance(node, exp.Paren):
            return self.type_of(node.this)
        known = node.meta.get("arrow") if node._meta else None
        if known is not None:
            return known
        if isinstance(node, exp.Literal):  # no query for the common literals
            if node.is_string:
                return pa.string()
            if node.is_int:
                return pa.int32() if -(1 << 31) <= int(node.this) < (1 << 31) else pa.int64()
        key = node.sql()
        if key in self._types:
            return self._types[key]
        from strataflow.pyspark.sql.dialect import to_sql
        from strataflow.pyspark.sql.engine import run_query

        try:
            t = run_query(to_sql(exp.select(node.copy()).from_(self.table)),
                          {self.table: self.schema.empty_table()}).schema.types[0]
        except Exception:  # noqa: BLE001 - the query itself will say what is wrong, naming it
            t = None
        self._types[key] = t
        return t

    def refuse(self, node: exp.Expression, why: str, instead: str) -> AnalysisException:
        return refusal(spark_name_of(node), why, instead)


Rule = Callable[[exp.Expression, Rules], "exp.Expression | None"]


def typed(node: exp.Expression, t: pa.DataType) -> exp.Expression:
    """``node`` marked with its Arrow type, so a parent's rule need not probe for it."""
    node.meta["arrow"] = t
    return node
