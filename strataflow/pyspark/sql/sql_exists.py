"""``EXISTS``/``NOT EXISTS`` subqueries correlated by more than equalities, as semi and
anti joins.

sqlglot's optimizer decorrelates ``EXISTS (SELECT * FROM t WHERE t.k = o.k AND t.c <> o.c)``
into a left join with ``SELECT k, COLLECT_LIST(c) AS l FROM t GROUP BY k`` and a test on
the list (``SIZE(FILTER(l, _x -> o.c <> _x)) <> 0``): every group's list is built and
shuffled. Spark runs it as a left semi join on ``k`` whose condition also holds
``o.c <> t.c``; so does this rewrite (``NOT EXISTS``: a left anti join), and a null ``c``
then counts as SQL says (no row), which the list test does not.
"""

from __future__ import annotations

from sqlglot import exp

__all__ = ["exists_joins"]


def _conjuncts(e: exp.Expression) -> list[exp.Expression]:
    e = e.unnest()
    if isinstance(e, exp.And):
        return _conjuncts(e.this) + _conjuncts(e.expression)
    return [e]


def _list_test(e: exp.Expression, alias: str, lst: str) -> exp.Expression | None:
    """The predicate P of ``ARRAY_ANY(a.l, _x -> P)`` (written ``SIZE(a.l) = 0 OR
    SIZE(FILTER(a.l, _x -> P)) <> 0``), else None."""
    e = e.unnest()
    if isinstance(e, exp.ArrayAny) and _is_col(e.this, alias, lst):  # sqlglot's own node for the test
        fn = e.expression
    elif isinstance(e, exp.Or):
        empty, some = e.this.unnest(), e.expression.unnest()
        if not (isinstance(empty, exp.EQ) and isinstance(empty.this, exp.ArraySize)
                and _is_col(empty.this.this, alias, lst)):
            return None
        if not (isinstance(some, exp.NEQ) and isinstance(some.this, exp.ArraySize)
                and isinstance(some.this.this, exp.ArrayFilter) and _is_col(some.this.this.this, alias, lst)):
            return None
        fn = some.this.this.expression
    else:
        return None
    if not isinstance(fn, exp.Lambda) or len(fn.expressions) != 1:
        return None
    var = fn.expressions[0].name
    body = fn.this.copy()
    for ref in list(body.find_all(exp.Column, exp.Identifier)):
        if isinstance(ref, exp.Column) and not ref.table and ref.name == var:
            ref.replace(exp.column(lst, table=alias, quoted=True))
        elif isinstance(ref, exp.Identifier) and ref.name == var and not isinstance(ref.parent, exp.Column):
            ref.replace(exp.column(lst, table=alias, quoted=True))
    return body


def _is_col(e: exp.Expression, table: str, name: str) -> bool:
    return isinstance(e, exp.Column) and e.table == table and e.name == name


def _is_null_test(e: exp.Expression, alias: str, negated: bool) -> bool:
    e = e.unnest()
    if negated:
        if not isinstance(e, exp.Not):
            return False
        e = e.this.unnest()
    return isinstance(e, exp.Is) and isinstance(e.expression, exp.Null) and isinstance(e.this, exp.Column) \
        and e.this.table == alias


def exists_joins(q: exp.Select) -> list[tuple[str, exp.Subquery, exp.Expression]]:
    """The EXISTS and NOT EXISTS that sqlglot wrote as ``LEFT JOIN (... COLLECT_LIST ...)``
    with list tests, taken out of ``q`` (its join and its WHERE tests): ``(how, subquery
    giving the keys and the values row by row, join condition)`` for each, ``how`` being
    ``left_semi`` or ``left_anti``. The columns of ``q``'s sources the conditions name are
    recorded in ``q.meta["keep_columns"]``, so that no source drops them."""
    where = q.args.get("where")
    if where is None:
        return []
    conds = _conjuncts(where.this)
    out = []
    for j in list(q.args.get("joins") or []):
        sub, on = j.this, j.args.get("on")
        if (j.side or "").upper() != "LEFT" or not isinstance(sub, exp.Subquery) or not sub.alias or on is None:
            continue
        sel, alias = sub.this, sub.alias
        if not isinstance(sel, exp.Select) or sel.args.get("group") is None:
            continue
        lists = [e for e in sel.expressions if isinstance(e, exp.Alias) and isinstance(e.this, exp.ArrayAgg)]
        if len(lists) != 1:
            continue
        lst = lists[0].alias
        found = None
        for c in conds:
            inner = c.unnest()
            if (pred := _list_test(c, alias, lst)) is not None:  # EXISTS: with NOT alias.k IS NULL beside it
                nulls = [n for n in conds if _is_null_test(n, alias, negated=True)]
                if nulls:
                    found = ("left_semi", pred, [c, nulls[0]])
            elif isinstance(inner, exp.Or) and isinstance(inner.this.unnest(), exp.Not) \
                    and _is_null_test(inner.expression, alias, negated=False):  # NOT EXISTS
                pred = _list_test(inner.this.unnest().this, alias, lst)
                if pred is not None:
                    found = ("left_anti", pred, [c])
            if found:
                break
        used = [col for col in q.find_all(exp.Column) if col.table == alias]
        tested = {id(col) for c in (found[2] if found else []) for col in c.find_all(exp.Column)}
        if not found or any(id(col) not in tested and not any(col is x for x in on.find_all(exp.Column))
                            for col in used):
            continue
        how, pred, tests = found
        rows = sel.copy()
        rows.set("group", None)
        rows.set("expressions", [e.copy() if e is not lists[0] else exp.alias_(lists[0].this.this.copy(), lst)
                                 for e in sel.expressions])
        cond = exp.and_(on.copy(), pred)
        keep = q.meta.setdefault("keep_columns", set())
        keep |= {(col.table, col.name.lower()) for col in cond.find_all(exp.Column) if col.table != alias}
        out.append((how, exp.Subquery(this=rows, alias=exp.TableAlias(this=exp.to_identifier(alias))), cond))
        j.pop()
        conds = [c for c in conds if all(c is not t for t in tests)]
    if out:
        q.set("where", exp.Where(this=exp.and_(*conds)) if conds else None)
    return out
