"""How a join runs: a shuffled hash join, or a broadcast of one side.

With equality keys, both sides are hashed by them (keys cast alike, so a bigint 1 meets
an int 1) and partition i joins partition i; a side that is small enough is instead
gathered on the driver and joined with every partition of the other, with no shuffle
(Spark's broadcast hash join: the ``broadcast`` hint, or a row bound from the Parquet
footers under ``spark.sql.autoBroadcastJoinThreshold``). Without equality keys the right
side is gathered (a right or full join: both sides meet in one partition).
"""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa
from sqlglot import exp

from strataflow.common.checks import parse_size
from strataflow.pyspark.sql.engine import as_table, run_query
from strataflow.pyspark.sql.frame_sets import _cast
from strataflow.pyspark.sql.plan import Plan, estimated_bytes, to_sql
from strataflow.pyspark.sql.resolve import Field, physical_names
from strataflow.pyspark.sql.task_memory import map_queries, zip_queries
from strataflow.pyspark.sql.tasks import joined, with_left_table, with_right_table

__all__ = ["join_plan", "equi_pairs"]

_SQL_JOIN = {"inner": "JOIN", "cross": "CROSS JOIN", "full": "FULL OUTER JOIN", "left": "LEFT JOIN",
             "right": "RIGHT JOIN", "semi": "SEMI JOIN", "anti": "ANTI JOIN"}


def _hash_type(a: pa.DataType, b: pa.DataType) -> str | None:
    """The type both sides' keys are cast to before hashing, so equal values hash alike."""
    ints = pa.types.is_integer(a) and pa.types.is_integer(b)
    if ints:
        return "BIGINT"
    num = [pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) for t in (a, b)]
    if all(num):
        return "DOUBLE"
    if a == b or (pa.types.is_string(a) and pa.types.is_string(b)):
        return None
    return "VARCHAR"


def equi_pairs(cond: exp.Expression) -> list[tuple[exp.Expression, exp.Expression]]:
    """``(left key, right key)`` of each ``__l.x = __r.y`` conjunct of a join condition."""
    pairs = []
    for c in cond.flatten() if isinstance(cond, exp.And) else [cond]:
        c = c.unnest()
        if isinstance(c, exp.EQ):
            a, b = c.this.unnest(), c.expression.unnest()
            ta = {x.table for x in a.find_all(exp.Column)}
            tb = {x.table for x in b.find_all(exp.Column)}
            if ta == {"__l"} and tb == {"__r"}:
                pairs.append((a, b))
            elif ta == {"__r"} and tb == {"__l"}:
                pairs.append((b, a))
    return pairs


def join_plan(left: Any, right: Any, kind: str, cond: exp.Expression | None,
               pairs: list[tuple[exp.Expression, exp.Expression]], out: list) -> Plan:
    """The plan of a join whose output items (over ``__l`` and ``__r``) are ``out``."""
    lp, rp = left._current, right._current
    phys = physical_names([n for _, n, _ in out])
    sel = exp.select(*[exp.alias_(e, p, quoted=True) for (e, _, _), p in zip(out, phys)])
    on = f" ON {to_sql(cond)}" if cond is not None and kind != "cross" else (" ON TRUE" if kind not in ("cross",) else "")
    sql = f"{to_sql(sel)} FROM __l {_SQL_JOIN[kind]} __r{on}"
    types = _column_types([e for e, _, _ in out], lp, rp)
    if types is None:
        got = run_query(sql, {"__l": lp.schema.empty_table(), "__r": rp.schema.empty_table()}).schema
        types = [got.field(i).type for i in range(len(out))]
    fields = [Field(n, p, t, o) for t, ((_, n, o), p) in zip(types, zip(out, phys))]
    schema = pa.schema([pa.field(f.phys, f.type) for f in fields])
    rows = lp.rows if kind in ("semi", "anti") else None
    small = _broadcast_side(left, right, kind)
    gathered: dict[str, pa.Table] = {}
    if pairs and small is None:  # Spark's adaptive join: a filtered side, computed first, may turn out small
        small, gathered, lp, rp = _adaptive(left, right, kind, lp, rp)
    if pairs and small == "left":  # each partition of the right side joins all of the (small) left one
        ltable = gathered.get("left") or _gathered(lp)
        ds = map_queries(rp.dataset(), functools.partial(with_left_table, sql, rp.schema, _shipped(lp, ltable)))
        return Plan(lp.session, ds, schema, fields)
    if pairs and small == "right" and "right" in gathered:
        ds = map_queries(lp.dataset(), functools.partial(with_right_table, sql, lp.schema,
                                                         _shipped(lp, gathered["right"])))
        return _narrowed(Plan(lp.session, ds, schema, fields, rows=rows), kind)
    if pairs and small is None:
        n = left._shuffle_partitions()
        casts = [_hash_type(_type_of(a, lp), _type_of(b, rp)) for a, b in pairs]
        lkeys = [_cast(_strip(a), t) for (a, _), t in zip(pairs, casts)]
        rkeys = [_cast(_strip(b), t) for (_, b), t in zip(pairs, casts)]
        lx, rx = lp.exchange_hash(lkeys, n), rp.exchange_hash(rkeys, n)
        ds = zip_queries(lx.dataset(), rx.dataset(), functools.partial(joined, sql, lx.schema, rx.schema))
        out_plan = _narrowed(Plan(lp.session, ds, schema, fields, rows=rows), kind)
        by = rx if kind == "right" else lx  # a right join's left keys may be null where its right ones are not
        if kind != "full" and by.hashed is not None:
            side = "__r" if by is rx else "__l"
            names = {e.name: p for (e, _, _), p in zip(out, phys) if isinstance(e, exp.Column) and e.table == side}
            sig, n = by.hashed
            if all(col in names for col, _ in sig):
                out_plan.hashed = (tuple((names[col], t) for col, t in sig), n)
        return out_plan
    if kind in ("right", "full"):  # every right row must meet every left row in one place
        lx, rx = lp.exchange_single(), rp.exchange_single()
        ds = zip_queries(lx.dataset(), rx.dataset(), functools.partial(joined, sql, lx.schema, rx.schema))
        return Plan(lp.session, ds, schema, fields)
    rtable = _gathered(rp)
    ds = map_queries(lp.dataset(), functools.partial(with_right_table, sql, lp.schema, _shipped(lp, rtable)))
    return _narrowed(Plan(lp.session, ds, schema, fields, rows=rows), kind)


def _column_types(exprs: list[exp.Expression], lp: Plan, rp: Plan) -> list[pa.DataType] | None:
    """The output types of a join whose every item is a column of one side, as they are
    there (a join changes no column's type); None when some item is an expression, which
    DuckDB types over empty inputs (5-8 ms a join on the driver, 65 of them in TPC-H)."""
    sides = {"__l": {f.phys: f.type for f in lp.fields}, "__r": {f.phys: f.type for f in rp.fields}}
    if not all(isinstance(e, exp.Column) and e.table in sides and e.name in sides[e.table] for e in exprs):
        return None
    return [sides[e.table][e.name] for e in exprs]


def _narrowed(plan: Plan, kind: str) -> Plan:
    plan.narrowed = kind in ("semi", "anti")
    return plan


#: join kinds that may send the right side to every left partition, and the left to every right one
_RIGHT_BROADCAST = ("inner", "left", "semi", "anti", "cross")
_LEFT_BROADCAST = ("inner", "right", "cross")


def _broadcast_side(left: Any, right: Any, kind: str) -> str | None:
    """Which side of an equi-join goes whole to every partition of the other: one with a
    ``broadcast`` hint, else one that is at most ``spark.sql.autoBroadcastJoinThreshold``
    bytes (10 MB, as Spark's; -1: never) by its row bound (``estimated_bytes``), the
    smaller if both are; None: shuffle both sides by the keys."""
    if right._hint == "broadcast" and kind in _RIGHT_BROADCAST:
        return "right"
    if left._hint == "broadcast" and kind in _LEFT_BROADCAST:
        return "left"
    limit = _threshold(left.sparkSession)
    sizes = {side: estimated_bytes(df._current) for side, df in (("left", left), ("right", right))
             if kind in (_LEFT_BROADCAST if side == "left" else _RIGHT_BROADCAST)}
    fits = {side: b for side, b in sizes.items() if b is not None and 0 <= b <= limit}
    return min(fits, key=lambda side: fits[side]) if fits else None


#: the most bytes (by its row bound) a filtered side may have to be computed first, to see
#: whether it is small enough to broadcast (``_adaptive``)
_ADAPTIVE_BOUND = 64 << 20


def _adaptive(left: Any, right: Any, kind: str, lp: Plan, rp: Plan) -> tuple[str | None, dict, Plan, Plan]:
    """A side that filters its rows and is at most 64 MB by its row bound is computed
    first (gathered on the driver): if it is at most the broadcast threshold it is
    broadcast, as Spark's adaptive execution turns a shuffled join into a broadcast one
    once the small side's size is known (TPC-H's orders filtered to a year: a fifth of
    its rows); so is one whose copies, one per partition of the other side, are no more
    than that side's bytes by its bound (sending them costs less than shuffling it).
    Else its rows are the input of the shuffle, not computed again.
    ``(side to broadcast or None, gathered tables by side, left plan, right plan)``."""
    limit = _threshold(left.sparkSession)
    if limit < 0:
        return None, {}, lp, rp
    sides = [(side, plan) for side, plan in (("right", rp), ("left", lp))
             if kind in (_LEFT_BROADCAST if side == "left" else _RIGHT_BROADCAST) and plan.narrowed
             and (estimated_bytes(plan) or _ADAPTIVE_BOUND + 1) <= _ADAPTIVE_BOUND]
    if not sides:
        return None, {}, lp, rp
    side, plan = min(sides, key=lambda sp: estimated_bytes(sp[1]) or 0)
    other = rp if side == "left" else lp
    table = _gathered(plan)
    other_bytes = estimated_bytes(other)
    if table.nbytes <= limit or (other_bytes is not None and table.nbytes * other.num_partitions <= other_bytes):
        return side, {side: table}, lp, rp
    ctx = plan.session.sparkContext.ctx
    again = Plan(plan.session, ctx.from_arrow(table, max(1, plan.num_partitions)), plan.schema, plan.fields,
                 rows=table.num_rows)
    return None, {}, (again if side == "left" else lp), (again if side == "right" else rp)


def _threshold(session: Any) -> int:
    raw = session.conf.get("spark.sql.autoBroadcastJoinThreshold", "10MB") or "10MB"
    raw = raw.strip()
    if raw.lstrip("-").isdigit():
        return int(raw)
    return parse_size(raw)


def _gathered(plan: Plan) -> pa.Table:
    """All of ``plan``'s rows in one table, on the driver (a broadcast side)."""
    parts = plan.dataset().collect_partitions()
    return pa.concat_tables([as_table(v, plan.schema) for v in parts]) if parts else plan.schema.empty_table()


def _shipped(plan: Plan, table: pa.Table) -> Any:
    """A broadcast side as a broadcast variable (``shipping/broadcast.py``): written once
    and loaded once by each executor, rather than pickled into the closure of every stage
    downstream of the join and sent with it to every executor. In the closure, TPC-H's
    q21 sent its 10 MB side 5 stages x 16 executors times at ``local[16]``, serially from
    the driver: each stage took 0.3 s more than its slowest task."""
    return plan.session.sparkContext.ctx.broadcast(table)


def _strip(e: exp.Expression) -> exp.Expression:
    """A key over one side, its ``__l.``/``__r.`` qualifiers dropped (the side's own query is over ``__t``)."""
    e = e.copy()
    for c in e.find_all(exp.Column):
        c.set("table", None)
    return e


def _type_of(e: exp.Expression, plan: Plan) -> pa.DataType:
    sql = to_sql(exp.select(_strip(e)).from_("__t"))
    return run_query(sql, {"__t": plan.schema.empty_table()}).schema.field(0).type

