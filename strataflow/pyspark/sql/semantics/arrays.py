"""Arrays as Spark treats them: ``size`` an int (-1 for null without ANSI), ``collect_list``
of no values ``[]``, ``element_at`` from 1 (null or ANSI's error out of bounds; a map's
value by key), ``array_contains`` null where the array holds a null and not the value,
``sort_array`` with its order argument, ``array_sort`` nulls last.

The tables of the ``functions.arrays_maps`` family: this module's, with those of
``lambdas`` (higher-order functions), ``maps`` and ``collections`` (the other array
functions) merged in, as ``registry`` reads this module's only.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics import collections, lambdas, maps
from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["KEEP", "RULES", "ANONYMOUS", "REFUSE"]


def _size(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``size``/``cardinality``: an int, -1 for null without ANSI; ``array_size``: null for null."""
    t = rules.type_of(node.this)
    if t is not None and pa.types.is_map(t):
        return maps.map_size(node.this, rules)
    if node.meta.get("fn") == "array_size" or str(node.meta.get("written", "")).lower() == "array_size":
        return typed(fill("CAST(len({x}) AS INTEGER)", x=node.this), pa.int32())
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
    if isinstance(node.expression, exp.Lambda):
        return lambdas.SORT_WITH(node, rules)
    fn = node.meta.get("fn") or str(node.meta.get("written", "")).lower()
    if fn != "sort_array":  # array_sort(a): ascending, nulls last
        return fill("list_sort({x}, 'ASC', 'NULLS LAST')", x=node.this)
    descending = isinstance(asc, exp.Boolean) and not asc.this
    if asc is not None and not isinstance(asc, exp.Boolean):
        raise rules.refuse(node, "a non-literal order", "sort_array(col, True) or sort_array(col, False)")
    body = ("list_sort({x}, 'DESC', 'NULLS LAST')" if descending else "list_sort({x}, 'ASC', 'NULLS FIRST')")
    return fill(body, x=node.this)


def _element_at(node: exp.Expression, rules: Rules) -> exp.Expression:
    fn = node.meta.get("fn") or str(node.meta.get("written", "")).lower()
    if fn not in ("element_at", "try_element_at"):
        return node
    a, i = node.this, node.expressions[0]
    t = rules.type_of(a)
    if t is not None and pa.types.is_map(t):
        return typed(maps.map_value(a, i), t.item_type)
    if t is None or not pa.types.is_list(t):
        raise rules.refuse(node, "its argument is not known to be an array or a map", "col[key]")
    out = "list_extract({a}, {i})"
    if rules.conf.ansi and fn == "element_at":
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


_DISTINCT = "list_filter({a}, (x, i) -> list_position({a}, x) = i)"  # first occurrences, one null kept


def _distinct(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``array_distinct``: Spark keeps each value's first occurrence, in order, and one null
    (DuckDB's ``list_distinct`` drops nulls and reorders)."""
    return fill(_DISTINCT, a=node.this)


def _set_op(kind: str):
    """``array_union``/``array_intersect``/``array_except``: distinct elements in the first
    array's order (then the second's, for a union); a null element counts as a value;
    null when either array is null."""
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        a, b = node.expressions[:2] if isinstance(node, exp.Anonymous) or node.args.get("this") is None \
            else (node.this, node.expression)
        if kind == "union":
            body = _DISTINCT.replace("{a}", "list_concat({a}, {b})")
        elif kind == "intersect":
            body = f"list_filter({_DISTINCT}, y -> list_position({{b}}, y) IS NOT NULL)"
        else:
            body = f"list_filter({_DISTINCT}, y -> list_position({{b}}, y) IS NULL)"
        return fill(f"CASE WHEN {{a}} IS NULL OR {{b}} IS NULL THEN NULL ELSE {body} END", a=a, b=b)

    return rule


def _collect_set(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``collect_set``: the distinct non-null values, ``[]`` for none (DuckDB: null)."""
    return fill("coalesce(list_distinct(list({x})), [])", x=node.this)


RULES[exp.ArrayDistinct] = _distinct
RULES[exp.ArrayIntersect] = _set_op("intersect")
RULES[exp.ArrayExcept] = _set_op("except")
RULES[exp.ArrayUniqueAgg] = _collect_set
ANONYMOUS["array_union"] = _set_op("union")

RULES.update(lambdas.RULES)
ANONYMOUS.update(lambdas.ANONYMOUS)

RULES.update(maps.RULES)
ANONYMOUS.update(maps.ANONYMOUS)
ANONYMOUS["cardinality"] = lambda node, rules: _size(exp.ArraySize(this=node.expressions[0]), rules)
RULES.update(collections.RULES)
ANONYMOUS.update(collections.ANONYMOUS)
REFUSE.update(collections.REFUSE)

#: kinds whose DuckDB answer the suite found equal to Spark's (merged by ``registry``)
KEEP: frozenset[type] = frozenset()
