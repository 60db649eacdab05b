"""``spark.sql``: a Spark SQL query, parsed by sqlglot's Spark dialect, run as DataFrame
operations, so that it is planned as they are (shuffles, the cache, the executors).

Supported: ``SELECT`` over temporary views and subqueries, ``WITH``, every join kind with
``ON``/``USING`` (comma joins and their ``WHERE`` equalities too), ``WHERE``, ``GROUP
BY``, ``HAVING``, ``ORDER BY`` (by output names, positions or expressions over the
output), ``LIMIT``, ``DISTINCT``, window functions, ``UNION [ALL]``; expressions are
Spark's (``CASE``, ``LIKE``, ``EXTRACT``, intervals, ``IN`` lists). Subqueries inside
expressions (``EXISTS``, ``IN (SELECT ...)``, scalar subqueries) are not yet supported:
they raise an AnalysisException saying so.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.column import Column

__all__ = ["run_sql"]


def run_sql(session: Any, text: str) -> Any:
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.ParseError as exc:
        raise AnalysisException(f"[PARSE_SYNTAX_ERROR] {exc}", "PARSE_SYNTAX_ERROR") from None
    return _query(session, tree, {})


def _query(session: Any, q: exp.Expression, scope: dict) -> Any:
    scope = dict(scope)
    with_ = q.args.get("with") or q.args.get("with_")
    if with_ is not None:
        for cte in with_.expressions:
            scope[cte.alias.lower()] = _query(session, cte.this, scope)
    if isinstance(q, exp.Union):
        left, right = _query(session, q.left, scope), _query(session, q.right, scope)
        out = left.union(right)
        return out if not q.args.get("distinct") else out.distinct()
    if isinstance(q, exp.Subquery):
        return _query(session, q.this, scope)
    if not isinstance(q, exp.Select):
        raise AnalysisException(f"[UNSUPPORTED_FEATURE] spark.sql supports queries (SELECT, WITH, UNION); got "
                                f"{q.key.upper()}", "UNSUPPORTED_FEATURE")
    for sub in q.find_all(exp.Select):
        if sub is not q and not _in_from(sub, q):
            raise AnalysisException("[UNSUPPORTED_FEATURE] subqueries inside expressions (EXISTS, IN (SELECT ...), "
                                    "scalar subqueries) are not supported yet", "UNSUPPORTED_FEATURE")
    df = _from(session, q, scope)
    where = q.args.get("where")
    if where is not None:
        df = df.filter(Column(where.this))
    items = [Column(e) for e in q.expressions]
    group = q.args.get("group")
    having = q.args.get("having")
    from strataflow.pyspark.sql.frame_relational import has_agg

    if group is not None or any(has_agg(e) for e in q.expressions):
        keys = [Column(_position(k, q.expressions)) for k in (group.expressions if group is not None else [])]
        df = _grouped(df, keys, items, having.this if having is not None else None)
    else:
        df = df.select(*items)
    if q.args.get("distinct"):
        df = df.distinct()
    order = q.args.get("order")
    if order is not None:
        orders = [Column(exp.Ordered(this=_position(o.this, q.expressions), desc=bool(o.args.get("desc")),
                                     nulls_first=_nulls_first(o))) for o in order.expressions]
        try:
            df = df.orderBy(*orders)
        except AnalysisException:  # ORDER BY a column the select leaves out: order first, then select
            if group is not None or q.args.get("distinct"):
                raise
            df = _from(session, q, scope)
            if where is not None:
                df = df.filter(Column(where.this))
            df = df.orderBy(*[Column(
                exp.Ordered(this=o.this, desc=bool(o.args.get("desc")), nulls_first=_nulls_first(o)))
                for o in order.expressions]).select(*items)
    limit = q.args.get("limit")
    if limit is not None:
        df = df.limit(int(limit.expression.this))
    return df


def _nulls_first(o: exp.Ordered) -> bool:
    nf = o.args.get("nulls_first")
    return (not o.args.get("desc")) if nf is None else bool(nf)


def _position(e: exp.Expression, select: list) -> exp.Expression:
    """``GROUP BY 1``/``ORDER BY 2``: the select item at that position; an output alias stays a name."""
    if isinstance(e, exp.Literal) and not e.is_string:
        item = select[int(e.this) - 1]
        return exp.column(item.alias, quoted=True) if isinstance(item, exp.Alias) else item
    return e


def _in_from(sub: exp.Expression, top: exp.Select) -> bool:
    """True if ``sub`` is a derived table or CTE of ``top`` (or inside one), not an expression's subquery."""
    node = sub
    while node is not None and node is not top:
        if isinstance(node, (exp.From, exp.Join, exp.CTE, exp.With)) or (isinstance(node, exp.Union)):
            return True
        if isinstance(node, exp.Subquery) and isinstance(node.parent, (exp.From, exp.Join)):
            return True
        node = node.parent
    return False


def _source(session: Any, t: exp.Expression, scope: dict) -> Any:
    if isinstance(t, exp.Table):
        name = t.name.lower()
        df = scope[name] if name in scope else session.table(t.name)
        return df.alias(t.alias_or_name)
    if isinstance(t, exp.Subquery):
        df = _query(session, t.this, scope)
        return df.alias(t.alias) if t.alias else df
    raise AnalysisException(f"[UNSUPPORTED_FEATURE] FROM {t.sql('spark')}", "UNSUPPORTED_FEATURE")


def _from(session: Any, q: exp.Select, scope: dict) -> Any:
    frm = q.args.get("from") or q.args.get("from_")
    if frm is None:
        return session.range(1).select()
    df = _source(session, frm.this, scope)
    for j in q.args.get("joins") or []:
        right = _source(session, j.this, scope)
        side, kind = (j.side or "").lower(), (j.kind or "").lower()
        how = {"left": "left", "right": "right", "full": "full"}.get(side, "inner")
        if kind in ("semi", "anti"):
            how = ("left_" if True else "") + kind
        if kind == "cross" or (j.args.get("on") is None and not j.args.get("using")):
            how = "cross" if how == "inner" else how
        using = j.args.get("using")
        if using:
            df = df.join(right, [u.name for u in using], how)
        elif j.args.get("on") is not None:
            df = df.join(right, Column(j.args["on"]), how)
        else:
            df = df.join(right, how=how)
    return df


def _grouped(df: Any, keys: list[Column], items: list[Column], having: exp.Expression | None) -> Any:
    """``SELECT items ... GROUP BY keys HAVING having`` over ``df``; the select list is the output."""
    from strataflow.pyspark.sql.column import spark_name

    plan = df._current
    key_items = df._items(tuple(keys))
    key_exprs = [e for e, _, _ in key_items]
    out = df._items(tuple(items))
    extra = []
    if having is not None:
        names = {spark_name(i._expr).lower(): i._expr.this if isinstance(i._expr, exp.Alias) else i._expr
                 for i in items}
        having = having.copy().transform(
            lambda n: names[n.name.lower()].copy() if isinstance(n, exp.Column) and not n.table
            and n.name.lower() in names and not df._has_column(n.name) else n)
        extra = [(df._items((Column(having),))[0][0], "__having", frozenset())]
    ex = plan.exchange_hash(key_exprs, df._shuffle_partitions()) if key_exprs else plan.exchange_single()
    agg = ex.project(out + extra, group_by=key_exprs or None)
    if having is not None:
        from strataflow.pyspark.sql.plan import Plan

        cond = exp.column(agg.fields[-1].phys, quoted=True)
        agg = Plan.project(agg, agg.identity_items()[:-1], where=cond)
    return df._new(agg)
