"""Array functions without lambdas as Spark computes them: ``array_append`` and
``array_prepend`` (null for a null array, a null value kept), ``array_compact``,
``array_insert`` (1-based, from the end if negative, padded with nulls past either end,
0 an error), ``array_position`` (a bigint, 0 where absent, null for a null argument),
``array_remove`` (nulls stay), ``array_repeat``, ``arrays_overlap`` (three-valued), ``get``
(0-based, null outside); ``shuffle`` is refused (Spark's random generator is not DuckDB's),
and so are the generators of several columns (``inline``, ``stack``, ``posexplode_outer``,
``explode`` of a map).
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["RULES", "ANONYMOUS", "REFUSE"]


def _append(node: exp.Expression, rules: Rules) -> exp.Expression:
    return fill("CASE WHEN {a} IS NULL THEN NULL ELSE list_append({a}, {v}) END", a=node.this, v=node.expression)


def _prepend(node: exp.Expression, rules: Rules) -> exp.Expression:
    return fill("CASE WHEN {a} IS NULL THEN NULL ELSE list_prepend({v}, {a}) END", a=node.this, v=node.expression)


def _compact(node: exp.Expression, rules: Rules) -> exp.Expression:
    return fill("list_filter({a}, lambda __c: __c IS NOT NULL)", a=node.this)


def _insert(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``array_insert(a, pos, v)``: Spark 3.5's positions (``-1`` puts ``v`` last)."""
    a, p, v = node.this, node.args["position"], node.expression
    body = ("CASE WHEN {a} IS NULL OR {p} IS NULL THEN NULL "
            "WHEN {p} = 0 THEN error('[INVALID_INDEX_OF_ZERO] The index 0 is invalid. An index shall be either "
            "< 0 or > 0 (the first element has index 1).') "
            "WHEN {p} > len({a}) THEN list_append(list_resize({a}, {p} - 1), {v}) "
            "WHEN {p} > 0 THEN list_concat({a}[1:{p} - 1], [{v}], {a}[{p}:]) "
            "WHEN len({a}) + {p} + 2 >= 1 THEN list_concat({a}[1:len({a}) + {p} + 1], [{v}], {a}[len({a}) + {p} + 2:]) "
            "ELSE list_concat(list_resize([{v}], 1 - (len({a}) + {p} + 1)), {a}) END")
    return fill(body, a=a, p=p, v=v)


def _position(node: exp.Expression, rules: Rules) -> exp.Expression:
    return typed(fill("CASE WHEN {a} IS NULL OR {v} IS NULL THEN NULL ELSE CAST(coalesce(list_position({a}, {v}), 0) "
                      "AS BIGINT) END", a=node.this, v=node.expression), pa.int64())


def _remove(node: exp.Expression, rules: Rules) -> exp.Expression:
    return fill("CASE WHEN {a} IS NULL OR {v} IS NULL THEN NULL ELSE list_filter({a}, lambda __r: __r IS NULL OR "
                "__r <> {v}) END", a=node.this, v=node.expression)


def _repeat(node: exp.Expression, rules: Rules) -> exp.Expression:
    x, n = node.expressions[:2]
    t = rules.type_of(x)
    from strataflow.pyspark.sql.semantics.types import duck

    try:
        nulls = f"CAST(NULL AS {duck(t)})" if t is not None else "NULL"
    except TypeError:
        nulls = "NULL"
    return fill(f"CASE WHEN {{n}} IS NULL THEN NULL WHEN {{x}} IS NULL THEN list_transform(range(greatest({{n}}, 0)), "
                f"lambda __i: {nulls}) ELSE list_transform(range(greatest({{n}}, 0)), lambda __i: {{x}}) END", x=x, n=n)


def _overlap(node: exp.Expression, rules: Rules) -> exp.Expression:
    a, b = node.expressions[:2]
    return typed(fill("CASE WHEN {a} IS NULL OR {b} IS NULL THEN NULL "
                      "WHEN len(list_filter({a}, lambda __o: __o IS NOT NULL AND list_contains({b}, __o))) > 0 THEN true "
                      "WHEN len({a}) > 0 AND len({b}) > 0 AND (len(list_filter({a}, lambda __o: __o IS NULL)) > 0 OR "
                      "len(list_filter({b}, lambda __o: __o IS NULL)) > 0) THEN NULL ELSE false END", a=a, b=b),
                 pa.bool_())


def _get(node: exp.Expression, rules: Rules) -> exp.Expression:
    a, i = node.expressions[:2]
    t = rules.type_of(a)
    out = fill("CASE WHEN {i} < 0 THEN NULL ELSE list_extract({a}, {i} + 1) END", a=a, i=i)
    return typed(out, t.value_type) if t is not None and pa.types.is_list(t) else out


_GENERATOR = ("a generator of several columns (or of outer rows): strataflow's select makes one column of each "
              "expression", "explode of the array (or map_entries of the map), then select the struct's fields")


def _generator(node: exp.Expression, rules: Rules) -> exp.Expression:
    raise rules.refuse(node, *_GENERATOR)


def _explode(node: exp.Expression, rules: Rules) -> None:
    """``explode`` of a map (``key`` and ``value`` columns) is refused; of an array it is
    left to the select (one column, ``col``)."""
    t = rules.type_of(node.this)
    if t is not None and pa.types.is_map(t):
        raise rules.refuse(node, *_GENERATOR)
    return None


RULES = {exp.Explode: _explode, exp.ArrayAppend: _append, exp.ArrayPrepend: _prepend, exp.ArrayCompact: _compact,
         exp.ArrayInsert: _insert, exp.ArrayPosition: _position, exp.ArrayRemove: _remove}
ANONYMOUS = {"array_repeat": _repeat, "arrays_overlap": _overlap, "get": _get, "inline_outer": _generator}
REFUSE = {exp.Inline: _GENERATOR, exp.Stack: _GENERATOR, exp.PosexplodeOuter: _GENERATOR,
          exp.Shuffle: ("Spark's random permutation (its XORShift generator, seeded per partition) is not DuckDB's",
                        "a Python UDF with random.shuffle, or sort by rand() over an explode")}
