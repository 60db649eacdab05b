"""The pass that gives each node of a resolved expression to its rule (see the package)."""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, SqlConf, refusal, spark_name_of
from strataflow.pyspark.sql.semantics.registry import rule_for

__all__ = ["spark_semantics"]


def spark_semantics(e: exp.Expression, schema: pa.Schema, table: str, conf: SqlConf) -> exp.Expression:
    """``e`` (resolved over ``table`` of ``schema``) with every node given to its rule,
    children before parents; AnalysisException (``STRATAFLOW_UNSUPPORTED``) for a node
    whose answer could differ from Spark's."""
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
