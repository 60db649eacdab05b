"""Arrays as Spark treats them: ``size`` an int (-1 for null without ANSI), ``collect_list``
of no values ``[]``, ``element_at`` from 1 (null or ANSI's error out of bounds),
``array_contains`` null where the array holds a null and not the value, ``sort_array``
with its order argument.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["RULES", "ANONYMOUS", "REFUSE"]


def _size(node: exp.Expression, rules: Rules) -> exp.Expression:
    if rules.conf.ansi:
        return typed(fill("CAST(len({x}) AS INTEGER)", x=node.this), pa.int32())
    return typed(fill("CAST(coalesce(len({x}), -1) AS INTEGER)", x=node.this), pa.int32())


def _collect_list(node: exp.Expression, rules: Rules) -> exp.Expression:
    if node.args.get("order") is not None:
        return node
    return fill("coalesce({a}, [])", a=node)


def _contains(node: exp.Expression, rules: Rules) -> exp.Expression:
    return typed(fill("CASE WHEN {a} IS NULL OR {v} IS NULL THEN NULL WHEN list_contains({a}, {v}) THEN true "
                      "WHEN list_contains(list_transform({a}, e -> e IS NULL), true) THEN NULL ELSE false END",
                      a=node.this, v=node.expression), pa.bool_())


def _sort(node: exp.Expression, rules: Rules) -> exp.Expression:
    asc = node.args.get("asc")
    if node.meta.get("fn") == "array_sort" or asc is None and node.meta.get("fn") != "sort_array":
        raise rules.refuse(node, "array_sort's comparator", "sort_array(col)")
    descending = isinstance(asc, exp.Boolean) and not asc.this
    if asc is not None and not isinstance(asc, exp.Boolean):
        raise rules.refuse(node, "a non-literal order", "sort_array(col, True) or sort_array(col, False)")
    body = ("list_sort({x}, 'DESC', 'NULLS LAST')" if descending else "list_sort({x}, 'ASC', 'NULLS FIRST')")
    return fill(body, x=node.this)


def _element_at(node: exp.Expression, rules: Rules) -> exp.Expression:
    if node.meta.get("fn") != "element_at" and node.meta.get("written", "").lower() != "element_at":
        return node
    a, i = node.this, node.expressions[0]
    t = rules.type_of(a)
    if t is None or not pa.types.is_list(t):
        raise rules.refuse(node, "element_at of a map", "col[key]")
    out = "list_extract({a}, {i})"
    if rules.conf.ansi:
        body = ("CASE WHEN {i} = 0 THEN error('[INVALID_INDEX_OF_ZERO] The index 0 is invalid.') "
                "WHEN {a} IS NOT NULL AND abs({i}) > len({a}) THEN error('[INVALID_ARRAY_INDEX_IN_ELEMENT_AT] The "
                "index is out of bounds.') ELSE " + out + " END")
    else:
        body = ("CASE WHEN {i} = 0 THEN error('[INVALID_INDEX_OF_ZERO] The index 0 is invalid.') ELSE " + out
                + " END")
    return typed(fill(body, a=a, i=i), t.value_type)


RULES = {
    exp.ArraySize: _size, exp.ArrayAgg: _collect_list, exp.ArrayContains: _contains, exp.ArraySort: _sort,
    exp.Bracket: _element_at,
}
ANONYMOUS: dict = {}
REFUSE = {
    exp.ArrayDistinct: ("DuckDB's list_distinct drops nulls and does not keep first-seen order",
                        "array_sort(array_distinct) is refused too; use a Python UDF"),
    exp.ArrayUniqueAgg: ("DuckDB's set aggregate of only nulls is null, Spark's []", "collect_list then a UDF"),
    exp.ArrayIntersect: ("DuckDB's list_intersect drops nulls and reorders", "a Python UDF"),
    exp.ArrayExcept: ("DuckDB's list operations drop nulls and reorder", "a Python UDF"),
    exp.ArraysZip: ("the struct's field names differ", "struct and arrays of structs"),
    exp.GenerateSeries: ("the element type differs", "sequence of bigint columns, cast"),
    exp.Flatten: ("unchecked", "a Python UDF"),
}


def _ignore_nulls(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``first(x, true)``/``last(x, true)``: the first (last) non-null value, as DuckDB's
    ``any_value`` and a list of the non-null values give them."""
    inner = node.this
    if isinstance(inner, exp.First):
        return fill("any_value({x})", x=inner.this)
    if isinstance(inner, exp.Last):
        return fill("list_extract(list_filter(list({x}), e -> e IS NOT NULL), -1)", x=inner.this)
    raise rules.refuse(node, "IGNORE NULLS of this function", "first(col, True) or last(col, True)")


def _first_last(node: exp.Expression, rules: Rules) -> exp.Expression:
    flag = node.args.get("expression")
    if isinstance(flag, exp.Boolean):
        node.set("expression", None)
        return _ignore_nulls(exp.IgnoreNulls(this=node.copy()), rules) if flag.this else node
    if flag is not None:
        raise rules.refuse(node, "an ignorenulls argument that is not a literal", "True or False")
    return node


RULES[exp.IgnoreNulls] = _ignore_nulls
RULES[exp.First] = _first_last
RULES[exp.Last] = _first_last
