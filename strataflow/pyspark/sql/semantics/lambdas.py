"""Higher-order functions as Spark computes them: ``transform``, ``filter``, ``exists``,
``forall``, ``aggregate``/``reduce``, ``zip_with``, ``array_sort`` with a comparator, and
the map ones (``map_filter``, ``transform_keys``, ``transform_values``, ``map_zip_with``).

A lambda's variables are typed before its body's rules run (the pass gives children
first, so the variable's own rule, on ``exp.Column``, looks up the function that binds
it): ``x + 1`` over an int array then wraps around (or fails, ANSI) as Spark's int does.
Each variable is renamed apart (``__lv1_x``) so that neither a column of the table nor
DuckDB's own lambda names capture it. DuckDB's lambdas count the index from 1, Spark's
from 0; its ``list_reduce`` takes the zero last; it has no ``zip_with``, no comparator
sort and no map lambdas, so those are built from ``list_transform`` over positions and
``map_from_entries``.
"""

from __future__ import annotations

import itertools

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["RULES", "ANONYMOUS", "lambda_variable", "parts_of", "spark_error", "checked_map"]

_RENAMES = itertools.count(1)


def spark_error(error_class: str, message: str, fn: str) -> str:
    """DuckDB's ``error(...)`` failing the query as Spark's does, where the engine knows
    Spark's ``error_class`` (``spark_errors``); elsewhere the failure is strataflow's
    refusal naming the function and Spark's class (never another answer)."""
    from strataflow.pyspark.sql.spark_errors import _KINDS

    if error_class in _KINDS:
        text = f"[{error_class}] {message}"
    else:
        text = (f"[STRATAFLOW_UNSUPPORTED] strataflow does not run `{fn}` on this input: Spark fails with "
                f"[{error_class}] {message}")
    return "error('" + text.replace("'", "''") + "')"


def parts_of(node: exp.Expression) -> list[exp.Expression]:
    """A call's arguments in Spark's order, whatever node kind sqlglot made of it."""
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    if isinstance(node, exp.Reduce):
        return [node.this, node.args.get("initial"), node.args.get("merge"), node.args.get("finish")]
    out = [v for k, v in node.args.items() if isinstance(v, exp.Expression)]
    out += [x for v in node.args.values() if isinstance(v, list) for x in v]
    return out


def _binder(node: exp.Expression, name: str) -> "tuple[exp.Lambda, int] | None":
    """The Lambda that binds variable ``name`` where ``node`` is (the innermost with that
    name) and the variable's position in it."""
    p = node.parent
    while p is not None:
        if isinstance(p, exp.Lambda):
            names = [i.name for i in p.expressions]
            renamed = p.meta.get("renamed", {}) if p._meta else {}
            for pos, n in enumerate(names):
                if n == name or renamed.get(name) == n:  # renamed: the written name -> the fresh one
                    return p, pos
        p = p.parent
    return None


def _element(t: "pa.DataType | None") -> "pa.DataType | None":
    return t.value_type if t is not None and (pa.types.is_list(t) or pa.types.is_large_list(t)) else None


def _variable_types(fn: exp.Expression, lam: exp.Expression, rules: Rules) -> list:
    """The Arrow types of ``lam``'s variables as higher-order function ``fn`` binds them."""
    args = parts_of(fn)
    name = str(fn.name).lower() if isinstance(fn, exp.Anonymous) else fn.key
    lambdas = [a for a in args if isinstance(a, exp.Lambda)]
    first = rules.type_of(args[0]) if args and args[0] is not lam else None
    if name in ("map_filter", "transform_keys", "transform_values"):
        return [first.key_type, first.item_type] if first is not None and pa.types.is_map(first) else []
    if name == "map_zip_with":
        second = rules.type_of(args[1])
        if first is None or second is None or not pa.types.is_map(first) or not pa.types.is_map(second):
            return []
        return [first.key_type, first.item_type, second.item_type]
    if name == "zip_with":
        return [_element(first), _element(rules.type_of(args[1]))]
    if isinstance(fn, exp.Reduce):
        zero = rules.type_of(args[1])
        return [zero, _element(first)] if lam is lambdas[0] else [zero]
    if isinstance(fn, exp.ArraySort):
        return [_element(first), _element(first)]
    return [_element(first), pa.int32()]


def lambda_variable(node: exp.Expression, rules: Rules) -> "exp.Expression | None":
    """A lambda's variable (a column its Lambda binds): renamed apart and typed as the
    function binding it gives it; any other column is left as it is."""
    if node._meta and node.meta.get("lambda_var"):
        return None
    if isinstance(node, exp.Identifier):  # Spark SQL's parser writes a variable as an identifier
        parent = node.parent
        if parent is None or isinstance(parent, (exp.Column, exp.Lambda, exp.Alias, exp.Table, exp.DataType)) \
                or (isinstance(parent, (exp.Dot, exp.PropertyEQ)) and node.arg_key != "this") \
                or isinstance(parent, exp.PropertyEQ):
            return None
    elif not isinstance(node, exp.Column) or node.args.get("db") is not None:
        return None
    field = None
    if isinstance(node, exp.Column) and node.table:  # Spark SQL's x.f: field f of variable x
        found = _binder(node, node.table)
        field = node.name
    else:
        found = _binder(node, node.name)
    if found is None:
        return None
    lam, pos = found
    if not lam.meta.get("renamed"):
        fresh = {i.name: f"__lv{next(_RENAMES)}_{i.name}" for i in lam.expressions}
        lam.meta["renamed"] = fresh
        lam.set("expressions", [exp.to_identifier(fresh[i.name]) for i in lam.expressions])
        fn = lam.parent
        lam.meta["types"] = _variable_types(fn, lam, rules) if fn is not None else []
        for ident, t in zip(lam.expressions, lam.meta["types"]):
            if t is not None:  # a probe of an expression over the variable (type_of) sees it as a column
                rules.schema = rules.schema.append(pa.field(ident.name, t))
    new_name = lam.expressions[pos].name
    types = lam.meta.get("types") or []
    if field is not None:
        var = exp.to_identifier(new_name)
        var.meta["lambda_var"] = True
        if pos < len(types) and types[pos] is not None:
            typed(var, types[pos])
        return exp.Dot(this=var, expression=exp.to_identifier(field))
    node.set("this", new_name if isinstance(node, exp.Identifier) else exp.to_identifier(new_name))
    node.meta["lambda_var"] = True
    if pos < len(types) and types[pos] is not None:
        typed(node, types[pos])
    return None


# -- helpers ---------------------------------------------------------------------------------------------

def _params(lam: exp.Lambda) -> list[str]:
    return [i.name for i in lam.expressions]


def _substitute(body: exp.Expression, values: dict[str, exp.Expression]) -> exp.Expression:
    """``body`` with each variable named in ``values`` replaced by a copy of its value."""
    body = body.copy()
    for col in list(body.find_all(exp.Column, exp.Identifier)):
        if isinstance(col, exp.Identifier) and isinstance(col.parent, (exp.Column, exp.Lambda)):
            continue
        if not (isinstance(col, exp.Column) and col.table) and col.name in values:
            new = values[col.name].copy()
            if col is body:
                return new
            col.replace(new)
    return body


def _duck_lambda(params: list[str], body: exp.Expression) -> exp.Expression:
    return exp.Lambda(this=body.copy(), expressions=[exp.to_identifier(p) for p in params])


def _indexed(lam: exp.Lambda) -> exp.Expression:
    """The body of a lambda whose second variable is Spark's 0-based index, over
    DuckDB's 1-based one."""
    x, i = _params(lam)[:2]
    zero_based = fill("CAST({i} - 1 AS INTEGER)", i=exp.column(i))
    zero_based.meta.pop("internal", None)
    return _duck_lambda([x, i], _substitute(lam.this, {i: zero_based}))


def _fresh(stem: str) -> str:
    return f"__lv{next(_RENAMES)}_{stem}"


# -- arrays ----------------------------------------------------------------------------------------------

def _transform(node: exp.Expression, rules: Rules) -> exp.Expression:
    a, lam = parts_of(node)[:2]
    f = _indexed(lam) if len(_params(lam)) == 2 else lam
    return fill("list_transform({a}, {f})", a=a, f=f)


def _filter(node: exp.Expression, rules: Rules) -> exp.Expression:
    if isinstance(node, exp.ArrayFilter):
        a, lam = node.this, node.expression
    else:
        a, lam = parts_of(node)[:2]
    f = _indexed(lam) if len(_params(lam)) == 2 else lam
    return fill("list_filter({a}, {f})", a=a, f=f)


def _exists(node: exp.Expression, rules: Rules) -> "exp.Expression | None":
    """Spark's three-valued ``exists``: true if the predicate is true for an element, else
    null if it is null for one, else false."""
    lam = node.args.get("expression")
    if not isinstance(lam, exp.Lambda):
        return None  # EXISTS (subquery)
    e = _fresh("e")
    bools = fill("list_transform({a}, {f})", a=node.this, f=lam)
    return typed(fill(f"CASE WHEN {{a}} IS NULL THEN NULL WHEN list_contains({{b}}, true) THEN true "
                      f"WHEN list_contains(list_transform({{b}}, lambda {e}: {e} IS NULL), true) THEN NULL "
                      f"ELSE false END", a=node.this, b=bools), pa.bool_())


def _forall(node: exp.Expression, rules: Rules) -> exp.Expression:
    a, lam = parts_of(node)[:2]
    e = _fresh("e")
    bools = fill("list_transform({a}, {f})", a=a, f=lam)
    return typed(fill(f"CASE WHEN {{a}} IS NULL THEN NULL WHEN list_contains({{b}}, false) THEN false "
                      f"WHEN list_contains(list_transform({{b}}, lambda {e}: {e} IS NULL), true) THEN NULL "
                      f"ELSE true END", a=a, b=bools), pa.bool_())


def _aggregate(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``aggregate(a, zero, merge, finish)``: DuckDB's ``list_reduce`` from the zero (cast
    to its type, as Spark keeps the accumulator's), ``finish`` of the result; null for a
    null array."""
    a, zero, merge, finish = parts_of(node)
    zt = rules.type_of(zero)
    if zt is None:
        raise rules.refuse(node, "the type of its zero value is not known", "a literal zero, cast")
    mt = rules.type_of(merge.this)
    if mt is not None and mt != zt:  # Spark fails the analysis (DATATYPE_MISMATCH), DuckDB would cast
        raise rules.refuse(node, f"its merge function gives {mt}, not its zero's type {zt}",
                           "a zero of the merge function's type (cast it)")
    from strataflow.pyspark.sql.semantics.types import duck

    try:
        folded = fill(f"CAST(list_reduce({{a}}, {{m}}, CAST({{z}} AS {duck(zt)})) AS {duck(zt)})", a=a, m=merge, z=zero)
    except TypeError:  # a nested zero: DuckDB keeps its type
        folded = fill("list_reduce({a}, {m}, {z})", a=a, m=merge, z=zero)
    if finish is not None and not (isinstance(finish.this, exp.Column) and finish.this.name == _params(finish)[0]):
        folded = _substitute(finish.this, {_params(finish)[0]: folded})
    return fill("CASE WHEN {a} IS NULL THEN NULL ELSE {r} END", a=a, r=folded)


def _zip_with(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``zip_with``: the function of the elements at each position up to the longer
    array's length (the shorter gives nulls); null if either array is null."""
    a, b, lam = parts_of(node)[:3]
    i = _fresh("i")
    x, y = _params(lam)[:2]
    body = _substitute(lam.this, {x: fill(f"list_extract({{a}}, {i})", a=a), y: fill(f"list_extract({{b}}, {i})", b=b)})
    return fill(f"CASE WHEN {{a}} IS NULL OR {{b}} IS NULL THEN NULL ELSE list_transform(range(1, "
                f"greatest(len({{a}}), len({{b}})) + 1), lambda {i}: {{f}}) END", a=a, b=b, f=body)


def _sort_with(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``array_sort(a, comparator)``: a stable sort by the comparator (as Java's TimSort
    gives for a consistent comparator): each element's place is the number of elements
    before it in the order, ties kept in the array's order. A null comparison is an error."""
    a, lam = node.this, node.expression
    i, j, p = _fresh("i"), _fresh("j"), _fresh("p")
    left, right = _params(lam)[:2]
    cmp = _substitute(lam.this, {left: fill(f"list_extract({{a}}, {j})", a=a),
                                 right: fill(f"list_extract({{a}}, {i})", a=a)})
    null = spark_error("COMPARATOR_RETURNS_NULL", "The comparator has returned a NULL for a comparison between "
                       "elements.", "array_sort")
    checked = fill(f"coalesce({{c}}, {null})", c=cmp)
    ranks = fill(f"list_transform(range(1, len({{a}}) + 1), lambda {i}: len(list_filter(range(1, len({{a}}) + 1), "
                 f"lambda {j}: {{c}} < 0 OR ({{c}} = 0 AND {j} < {i}))))", a=a, c=checked)
    return fill(f"CASE WHEN {{a}} IS NULL THEN NULL ELSE list_transform(range(len({{a}})), lambda {p}: "
                f"list_extract({{a}}, list_position({{r}}, {p}))) END", a=a, r=ranks)


# -- maps ------------------------------------------------------------------------------------------------

def _entries(lam: exp.Lambda, e: str) -> dict:
    """The key and value variables of a map lambda, as fields of entry ``e``."""
    k, v = _params(lam)[:2]
    return {k: fill(f"{e}.key"), v: fill(f"{e}.value")}


def _map_filter(node: exp.Expression, rules: Rules) -> exp.Expression:
    m, lam = parts_of(node)[:2]
    e = _fresh("e")
    pred = _substitute(lam.this, _entries(lam, e))
    return fill(f"map_from_entries(list_filter(map_entries({{m}}), lambda {e}: {{p}}))", m=m, p=pred)


def _transform_values(node: exp.Expression, rules: Rules) -> exp.Expression:
    m, lam = parts_of(node)[:2]
    e = _fresh("e")
    body = _substitute(lam.this, _entries(lam, e))
    return fill(f"map_from_entries(list_transform(map_entries({{m}}), lambda {e}: struct_pack(key := {e}.key, "
                f"value := {{f}})))", m=m, f=body)


NULL_KEY = ("NULL_MAP_KEY", "Cannot use null as map key.")
DUPLICATE_KEY = ("DUPLICATED_MAP_KEY", "Duplicate map key was found, please check the input data. If you want to "
                 "remove the duplicated keys, you can set \"spark.sql.mapKeyDedupPolicy\" to \"LAST_WIN\" so that "
                 "the key inserted at last takes precedence.")


def checked_map(entries: exp.Expression, fn: str) -> exp.Expression:
    """``map_from_entries`` of a list of key/value structs with Spark's checks: a null key
    is NULL_MAP_KEY, a key twice DUPLICATED_MAP_KEY (the default ``mapKeyDedupPolicy``)."""
    e = _fresh("e")
    return fill(f"CASE WHEN list_contains(list_transform({{l}}, lambda {e}: {e}.key IS NULL), true) THEN "
                f"{spark_error(*NULL_KEY, fn)} "
                f"WHEN len(list_distinct(list_transform({{l}}, lambda {e}: {e}.key))) < len({{l}}) THEN "
                f"{spark_error(*DUPLICATE_KEY, fn)} ELSE map_from_entries({{l}}) END", l=entries)


def _transform_keys(node: exp.Expression, rules: Rules) -> exp.Expression:
    m, lam = parts_of(node)[:2]
    e = _fresh("e")
    body = _substitute(lam.this, _entries(lam, e))
    entries = fill(f"list_transform(map_entries({{m}}), lambda {e}: struct_pack(key := {{f}}, value := {e}.value))",
                   m=m, f=body)
    return fill("CASE WHEN {m} IS NULL THEN NULL ELSE {r} END", m=m, r=checked_map(entries, "transform_keys"))


def _map_zip_with(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``map_zip_with``: the first map's keys in its order, then the second's new ones,
    each to the function of the key and both values (null where a map lacks the key)."""
    m1, m2, lam = parts_of(node)[:3]
    k = _fresh("k")
    kv, v1, v2 = _params(lam)[:3]
    key = exp.column(k)
    body = _substitute(lam.this, {kv: key, v1: fill(f"map_extract({{m}}, {k})[1]", m=m1),
                                  v2: fill(f"map_extract({{m}}, {k})[1]", m=m2)})
    keys = fill(f"list_concat(map_keys({{a}}), list_filter(map_keys({{b}}), lambda {k}: NOT list_contains("
                f"map_keys({{a}}), {k})))", a=m1, b=m2)
    return fill(f"CASE WHEN {{a}} IS NULL OR {{b}} IS NULL THEN NULL ELSE map_from_entries(list_transform({{ks}}, "
                f"lambda {k}: struct_pack(key := {k}, value := {{f}}))) END", a=m1, b=m2, ks=keys, f=body)


RULES = {exp.Transform: _transform, exp.ArrayFilter: _filter, exp.Exists: _exists, exp.Reduce: _aggregate,
         exp.Column: lambda_variable, exp.Identifier: lambda_variable}
ANONYMOUS = {"forall": _forall, "zip_with": _zip_with, "map_filter": _map_filter,
             "transform_values": _transform_values, "transform_keys": _transform_keys,
             "map_zip_with": _map_zip_with, "filter": _filter}
SORT_WITH = _sort_with
