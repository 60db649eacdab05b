"""The pass that gives each node of a resolved expression to its rule (see the package)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException

__all__ = ["SqlConf", "Rules", "refusal", "spark_semantics", "REFUSED"]

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
        from strataflow.pyspark.sql.dialect import to_sql
        from strataflow.pyspark.sql.engine import run_query

        try:
            t = run_query(to_sql(exp.select(node.copy()).from_(self.table)),
                          {self.table: self.schema.empty_table()}).schema.types[0]
        except Exception:  # noqa: BLE001 - the query itself will say what is wrong, naming it
            return None
        return t

    def refuse(self, node: exp.Expression, why: str, instead: str) -> AnalysisException:
        return refusal(spark_name_of(node), why, instead)


Rule = Callable[[exp.Expression, Rules], "exp.Expression | None"]


def typed(node: exp.Expression, t: pa.DataType) -> exp.Expression:
    """``node`` marked with its Arrow type, so a parent's rule need not probe for it."""
    node.meta["arrow"] = t
    return node


def spark_semantics(e: exp.Expression, schema: pa.Schema, table: str, conf: SqlConf) -> exp.Expression:
    """``e`` (resolved over ``table`` of ``schema``) with every node given to its rule,
    children before parents; AnalysisException (``STRATAFLOW_UNSUPPORTED``) for a node
    whose answer could differ from Spark's."""
    from strataflow.pyspark.sql.semantics.registry import rule_for

    rules = Rules(conf, schema, table)
    todo = [n for n in e.walk(bfs=False)]
    for node in reversed(todo):  # children before their parents
        if node.parent is None and node is not e:
            continue  # replaced with its parent already
        rule = rule_for(node)
        if rule is None:
            continue
        window = node.parent  # before the rule: a rule may build its result round the node
        new = rule(node, rules)
        if new is None or new is node:
            continue
        if isinstance(window, exp.Window) and window.this is node:
            new, node = _over(new, window, rules), window  # the window goes round the aggregate alone
        if node is e:
            e = new
        else:
            node.replace(new)
    return e


def _over(new: exp.Expression, window: exp.Expression, rules: "Rules") -> exp.Expression:
    """An aggregate's rewrite ``new`` under ``window``: the window moved onto the one
    aggregate inside it (``CAST(sum(x) AS ...) OVER w`` is ``CAST(sum(x) OVER w AS ...)``)."""
    aggs = list(new.find_all(exp.AggFunc))
    if len(aggs) != 1:
        raise refusal(spark_name_of(window.this), "this aggregate's rewrite has several parts", "compute it "
                      "without a window, then join")
    agg = aggs[0]
    over = window.copy()
    over.set("this", agg.copy())
    if agg is new:
        return over
    agg.replace(over)
    return new
