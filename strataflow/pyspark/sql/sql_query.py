"""A Spark SQL query (parsed by sqlglot's Spark dialect, names qualified and subqueries
decorrelated by its optimizer: ``sql_statements.py``) run as DataFrame operations, so
that it is planned as they are (shuffles, the cache, the executors).

Supported: ``SELECT`` over temporary views and subqueries, ``WITH``, every join kind with
``ON``/``USING`` (comma joins and their ``WHERE`` equalities too), ``WHERE``, ``GROUP
BY``, ``HAVING``, ``ORDER BY`` (by output names, positions or expressions over the
output), ``LIMIT``, ``DISTINCT``, window functions, ``UNION [ALL]``; expressions are
Spark's (``CASE``, ``LIKE``, ``EXTRACT``, intervals, ``IN`` lists). Subqueries inside
expressions (``EXISTS``, ``IN (SELECT ...)``, scalar subqueries) run as the joins
sqlglot's optimizer rewrites them to; one it cannot rewrite is an AnalysisException.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.frame_relational import has_agg
from strataflow.pyspark.sql.sql_exists import exists_joins

__all__ = ["query_frame"]


def query_frame(session: Any, q: exp.Expression, scope: dict) -> Any:
    """The DataFrame of an optimized query ``q``; ``scope``: the CTEs it may name."""
    return _query(session, q, scope)


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
    where = q.args.get("where")
    conds = _conjuncts(where.this) if where is not None else []
    semis = [(c, _in_subquery(c)) for c in conds]
    handled = {id(sel) for _, sel_info in semis if sel_info for sel in sel_info[2].find_all(exp.Select)}
    for sub in q.find_all(exp.Select):
        if sub is not q and not _in_from(sub, q) and id(sub) not in handled:
            raise AnalysisException("[UNSUPPORTED_FEATURE] subqueries inside expressions (EXISTS, IN (SELECT ...), "
                                    "scalar subqueries) that sqlglot's optimizer cannot rewrite as joins are not "
                                    "supported yet", "UNSUPPORTED_FEATURE")
    pushed = _pushed_semis(q)
    late = exists_joins(q)
    if pushed or late:
        where = q.args.get("where")
        conds = _conjuncts(where.this) if where is not None else []
        semis = [(c, None) for c in conds]
    for alias, filters in _pushed_filters(q).items():
        pushed.setdefault(alias, []).extend(filters)
    df = _from(session, q, scope, pushed)
    for how, sub, cond in late:  # EXISTS / NOT EXISTS with a non-equality (``sql_exists.py``)
        df = df.join(_one_source(session, sub, scope), Column(cond), how)
    rest = [c for c, info in semis if info is None and not (isinstance(c, exp.Boolean) and c.this is True)]
    for _, info in semis:
        if info is not None:
            df = _semi_join(session, df, *info, scope)
    if rest:
        df = df.filter(Column(exp.and_(*rest)))
    items = [Column(e) for e in q.expressions]
    group = q.args.get("group")
    having = q.args.get("having")

    order = q.args.get("order")
    grouped = group is not None or any(has_agg(e) for e in q.expressions)
    if grouped:
        keys = [Column(_position(k, q.expressions)) for k in (group.expressions if group is not None else [])]
        hidden = _hidden_orders(df, q, items) if order is not None else []
        df = _grouped(df, keys, items, having.this if having is not None else None, hidden)
        if hidden:  # ORDER BY what the select leaves out (a grouping key by its input name): order, then drop
            df = df.orderBy(*[Column(exp.Ordered(this=exp.column(f"__o{i}", quoted=True), desc=bool(o.args.get("desc")),
                                                 nulls_first=_nulls_first(o)))
                              for i, o in enumerate(order.expressions)])
            df = df.drop(*[f"__o{i}" for i in range(len(hidden))])
            order = None
    else:
        df = df.select(*items)
    if q.args.get("distinct"):
        df = df.distinct()
    if order is not None:
        orders = [Column(exp.Ordered(this=_position(o.this, q.expressions), desc=bool(o.args.get("desc")),
                                     nulls_first=_nulls_first(o))) for o in order.expressions]
        try:
            df = df.orderBy(*orders)
        except AnalysisException:  # ORDER BY a column the select leaves out: order first, then select
            if grouped or q.args.get("distinct"):
                raise
            df = _from(session, q, scope, pushed)
            if where is not None:
                df = df.filter(Column(where.this))
            df = df.orderBy(*[Column(
                exp.Ordered(this=o.this, desc=bool(o.args.get("desc")), nulls_first=_nulls_first(o)))
                for o in order.expressions]).select(*items)
    limit = q.args.get("limit")
    if limit is not None:
        df = df.limit(int(limit.expression.this))
    return df


def _conjuncts(e: exp.Expression) -> list[exp.Expression]:
    e = e.unnest()
    if isinstance(e, exp.And):
        return _conjuncts(e.this) + _conjuncts(e.expression)
    return [e]


def _in_subquery(c: exp.Expression) -> tuple[bool, exp.Expression, exp.Expression] | None:
    """``(negated, value, subquery)`` of a ``value [NOT] IN (SELECT ...)`` condition whose
    subquery names nothing of the outer query, else None."""
    negated = isinstance(c, exp.Not)
    inner = c.this.unnest() if negated else c
    if not isinstance(inner, exp.In) or inner.args.get("query") is None:
        return None
    sub = inner.args["query"]
    sub = sub.this if isinstance(sub, exp.Subquery) else sub
    own = {t.alias_or_name for t in sub.find_all(exp.Table)} | {s.alias for s in sub.find_all(exp.Subquery)}
    if any(col.table and col.table not in own for col in sub.find_all(exp.Column)):
        return None
    return negated, inner.this, sub


def _semi_join(session: Any, df: Any, negated: bool, value: exp.Expression, sub: exp.Expression, scope: dict) -> Any:
    """``value IN (sub)`` as a left semi join; ``NOT IN`` as a null-aware anti join: no row
    when the subquery holds a null, and never a row whose value is null (SQL's three values)."""
    from strataflow.pyspark.sql import functions as F

    right = _query(session, sub, scope)
    right = right.toDF("__in", *right.columns[1:]).select("__in")
    cond = Column(exp.EQ(this=value, expression=exp.column("__in", quoted=True)))
    if not negated:
        return df.join(right, cond, "left_semi")
    if not right.filter(F.col("__in").isNull()).isEmpty():
        return df.filter(F.lit(False))
    return df.filter(Column(exp.Not(this=exp.Is(this=value, expression=exp.Null())))).join(right, cond, "left_anti")


def _pushed_semis(q: exp.Select) -> dict[str, list[exp.Join]]:
    """sqlglot writes ``x IN (SELECT k ...)`` and ``EXISTS (... WHERE k = x)`` as ``LEFT JOIN
    (SELECT k ... GROUP BY k) AS _u ON _u.k = x`` and ``NOT _u.k IS NULL`` in WHERE: with the
    subquery one row per key and its columns used nowhere else, that is a left semi join of
    x's source. Each such join (and its test) leaves ``q``; the result maps the source's
    alias to its joins, which ``_source`` applies to that source before any other join, so
    a selective subquery cuts its source down first (TPC-H q18: 1.5M orders to 57)."""
    where = q.args.get("where")
    if where is None:
        return {}
    conds = _conjuncts(where.this)
    out: dict[str, list[exp.Join]] = {}
    for j in list(q.args.get("joins") or []):
        sub, on = j.this, j.args.get("on")
        if _how(j) != "left" or not isinstance(sub, exp.Subquery) or not sub.alias or on is None:
            continue
        alias = sub.alias
        tests = [c for c in conds if isinstance(c, exp.Not) and isinstance(c.this.unnest(), exp.Is)
                 and isinstance(c.this.unnest().this, exp.Column) and c.this.unnest().this.table == alias
                 and isinstance(c.this.unnest().expression, exp.Null)]
        allowed = {id(c) for c in on.find_all(exp.Column)} | {id(t.this.unnest().this) for t in tests}
        eqs = _conjuncts(on)
        others = {c.table for c in on.find_all(exp.Column) if c.table != alias}
        keys = {c.name for e in eqs for c in e.find_all(exp.Column) if c.table == alias}
        if not tests or len(others) != 1 or not all(isinstance(e, exp.EQ) for e in eqs) or not _unique_on(sub.this, keys) \
                or any(c.table == alias and id(c) not in allowed for c in q.find_all(exp.Column)):
            continue
        out.setdefault(others.pop(), []).append(j.pop())
        conds = [c for c in conds if all(c is not t for t in tests)]
    if out:
        q.set("where", exp.Where(this=exp.and_(*conds)) if conds else None)
    return out


def _pushed_filters(q: exp.Select) -> dict[str, list[exp.Expression]]:
    """Conditions that need only one source of the leading inner joins, to apply to that
    source before it is joined (so no shuffle moves a row they drop): the WHERE's and the
    joins' conjuncts that name only it, and, from a disjunction whose every branch has
    conjuncts that do (TPC-H q19's ``(p = l AND l.q <= 11 AND p.b = 'x') OR ...``), the
    disjunction of those parts, as Spark's optimizer derives it. They stay where they are
    as well; only a source joined by an outer join is never filtered early."""
    frm = q.args.get("from") or q.args.get("from_")
    if frm is None:
        return {}
    joins = list(q.args.get("joins") or [])
    inner = 0
    while inner < len(joins) and _how(joins[inner]) in ("inner", "cross") and not joins[inner].args.get("using"):
        inner += 1
    group = {frm.this.alias_or_name} | {j.this.alias_or_name for j in joins[:inner]}
    where = q.args.get("where")
    conds = (_conjuncts(where.this) if where is not None else []) + \
        [c for j in joins[:inner] if j.args.get("on") is not None for c in _conjuncts(j.args["on"])]
    out: dict[str, list[exp.Expression]] = {}

    def only(c: exp.Expression) -> str | None:
        tables = {col.table for col in c.find_all(exp.Column)}
        if len(tables) == 1 and c.find(exp.Subquery, exp.Select) is None and not has_agg(c):
            alias = tables.pop()
            return alias if alias in group else None
        return None

    for c in conds:
        if (alias := only(c)) is not None:
            out.setdefault(alias, []).append(c.copy())
        elif isinstance(c, exp.Or):
            branches = [_conjuncts(b) for b in c.flatten()]
            for alias in group:
                parts = [[x for x in b if only(x) == alias] for b in branches]
                if all(parts):
                    out.setdefault(alias, []).append(exp.or_(*[exp.and_(*[x.copy() for x in p]) for p in parts]))
    return out


def _unique_on(sub: exp.Expression, keys: set[str]) -> bool:
    """True if ``sub`` (a SELECT) gives one row per value of its output columns ``keys``,
    which are all of its outputs: it groups by exactly them."""
    if not isinstance(sub, exp.Select) or sub.args.get("group") is None:
        return False
    outs = {e.alias_or_name for e in sub.expressions}
    group = {g.sql() for g in sub.args["group"].expressions}
    inner = {(e.this if isinstance(e, exp.Alias) else e).sql() for e in sub.expressions}
    return outs == keys and inner == group


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


def _source(session: Any, t: exp.Expression, scope: dict, pushed: dict | None = None) -> Any:
    df = _one_source(session, t, scope)
    filters = [c for c in (pushed or {}).get(t.alias_or_name, []) if not isinstance(c, exp.Join)]
    if filters:  # its own conditions (``_pushed_filters``): before its columns are pruned and it is joined
        df = df.filter(Column(exp.and_(*filters)))
    if isinstance(t, exp.Table):  # only the columns the query names (sqlglot qualified them all), so that
        top = t.parent_select  # no shuffle and no join carries a column nothing reads
        ons = [j.args["on"] for j in (pushed or {}).get(t.alias_or_name, []) if isinstance(j, exp.Join)]
        named = [c for n in [top, *ons] if n is not None for c in n.find_all(exp.Column)]
        used = {c.name.lower() for c in named if c.table == t.alias_or_name}
        used |= {name for table, name in (top.meta.get("keep_columns", ()) if top is not None else ())
                 if table == t.alias_or_name}
        keep = [c for c in df.columns if c.lower() in used]
        if top is not None and len(keep) < len(df.columns):
            df = df.select(*(keep or df.columns[:1])).alias(t.alias_or_name)
    for j in (pushed or {}).get(t.alias_or_name, []):  # its semi joins (``_pushed_semis``), before any other join
        if isinstance(j, exp.Join):
            df = df.join(_one_source(session, j.this, scope), Column(j.args["on"]), "left_semi")
    return df


def _one_source(session: Any, t: exp.Expression, scope: dict) -> Any:
    if isinstance(t, exp.Table):
        name = t.name.lower()
        df = scope[name] if name in scope else session.table(t.name)
        return df.alias(t.alias_or_name)
    if isinstance(t, exp.Subquery):
        df = _query(session, t.this, scope)
        return df.alias(t.alias) if t.alias else df
    raise AnalysisException(f"[UNSUPPORTED_FEATURE] FROM {t.sql('spark')}", "UNSUPPORTED_FEATURE")


def _how(j: exp.Join) -> str:
    side, kind = (j.side or "").lower(), (j.kind or "").lower()
    how = {"left": "left", "right": "right", "full": "full"}.get(side, "inner")
    if kind in ("semi", "anti"):
        how = "left_" + kind
    if kind == "cross" or (j.args.get("on") is None and not j.args.get("using")):
        how = "cross" if how == "inner" else how
    return how


def _from(session: Any, q: exp.Select, scope: dict, pushed: dict | None = None) -> Any:
    frm = q.args.get("from") or q.args.get("from_")
    if frm is None:
        return session.range(1)
    joins = list(q.args.get("joins") or [])
    inner = 0  # the leading inner and cross joins, which may run in any order
    while inner < len(joins) and _how(joins[inner]) in ("inner", "cross") and not joins[inner].args.get("using"):
        inner += 1
    df = _inner_joins(session, frm.this, joins[:inner], scope, pushed)
    for j in joins[inner:]:
        right = _source(session, j.this, scope, pushed)
        how, using = _how(j), j.args.get("using")
        if using:
            df = df.join(right, [u.name for u in using], how)
        elif j.args.get("on") is not None:
            df = df.join(right, Column(j.args["on"]), how)
        else:
            df = df.join(right, how=how)
    return df


def _inner_joins(session: Any, first: exp.Expression, joins: list[exp.Join], scope: dict,
                 pushed: dict | None = None) -> Any:
    """``first`` inner-joined with the joins' sources. The largest source (by its row bound,
    ``estimated_bytes``) comes first, so that each small one can be broadcast onto it
    without shuffling it (a star query's fact table never moves); then, in the order the
    query names them, each next source that a join condition connects to those before it
    (so no source is crossed with another when a condition could join them: ``a, b, c
    WHERE a.x = c.x AND c.y = b.y`` joins c before b). Conditions apply as soon as their
    sources are joined."""
    from strataflow.pyspark.sql.plan import estimated_bytes

    sources = [(first.alias_or_name, first)] + [(j.this.alias_or_name, j.this) for j in joins]
    frames = {alias: _source(session, t, scope, pushed) for alias, t in sources}
    size = {alias: estimated_bytes(df._current) for alias, df in frames.items()}
    known = [alias for alias, _ in sources if size[alias] is not None]
    start = max(known, key=lambda a: size[a]) if known else sources[0][0]
    df, seen = frames[start], {start}
    todo = [alias for alias, _ in sources if alias != start]
    pending = [c for j in joins if j.args.get("on") is not None for c in _conjuncts(j.args["on"])]

    def tables(c: exp.Expression) -> set[str]:
        return {col.table for col in c.find_all(exp.Column) if col.table}

    def connected(alias: str) -> bool:
        return any(alias in tables(c) and tables(c) - {alias} and tables(c) <= seen | {alias} for c in pending)

    while todo:
        pick = next((a for a in todo if connected(a)), todo[0])
        todo.remove(pick)
        seen.add(pick)
        ready = [c for c in pending if tables(c) <= seen]
        pending = [c for c in pending if not tables(c) <= seen]
        df = df.join(frames[pick], Column(exp.and_(*ready))) if ready else df.join(frames[pick], how="cross")
    if pending:
        df = df.filter(Column(exp.and_(*pending)))
    return df


def _hidden_orders(df: Any, q: exp.Select, items: list[Column]) -> list[Column]:
    """The ORDER BY keys of a grouped query as extra output columns ``__o0``..., when one of
    them is not an output name, position or alias (else none: the output is ordered as it is)."""
    from strataflow.pyspark.sql.column import spark_name

    names = {spark_name(i._expr).lower() for i in items}
    order = q.args["order"].expressions
    plain = all((isinstance(o.this, exp.Column) and not o.this.table and o.this.name.lower() in names)
                or (isinstance(o.this, exp.Literal) and not o.this.is_string) for o in order)
    if plain:
        return []
    return [Column(exp.alias_(_position(o.this, q.expressions), f"__o{i}", quoted=True)) for i, o in enumerate(order)]


def _grouped(df: Any, keys: list[Column], items: list[Column], having: exp.Expression | None,
             hidden: list[Column] | None = None) -> Any:
    """``SELECT items ... GROUP BY keys HAVING having`` over ``df``; the select list is the output."""
    from strataflow.pyspark.sql.column import spark_name
    from strataflow.pyspark.sql.plan import Plan, aggregate

    plan = df._current
    key_items = df._items(tuple(keys))
    out = df._items(tuple(items) + tuple(hidden or ()))
    extra = []
    if having is not None:
        names = {spark_name(i._expr).lower(): i._expr.this if isinstance(i._expr, exp.Alias) else i._expr
                 for i in items}
        having = having.copy().transform(
            lambda n: names[n.name.lower()].copy() if isinstance(n, exp.Column) and not n.table
            and n.name.lower() in names and not df._has_column(n.name) else n)
        extra = [(df._items((Column(having),))[0][0], "__having", frozenset())]
    agg = aggregate(plan, key_items, out + extra, df._shuffle_partitions())
    if having is not None:
        cond = exp.column(agg.fields[-1].phys, quoted=True)
        agg = Plan.project(agg, agg.identity_items()[:-1], where=cond)
    return df._new(agg)
