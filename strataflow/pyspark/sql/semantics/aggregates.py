"""Aggregate functions and window value functions as Spark computes them: the rules of
the ``functions.aggregates`` family (merged by ``registry``).

``skewness``/``kurtosis`` run Spark's one-pass moment updates over the values in order
(its population formulas, not DuckDB's sample-corrected ones); ``percentile`` interpolates
as Spark does (``lo + (pos - floor) * (hi - lo)`` over values sorted NaN last);
``percentile_approx`` gives the element of Spark's quantile summary, which is exact while
``2 * count / accuracy < 1`` (beyond that the summary's answer depends on Spark's merges,
so the query fails naming it); ``mode`` gives the most frequent value (the smallest of
several with ``deterministic``; without it Spark's hash order decides, refused).
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.semantics import numeric
from strataflow.pyspark.sql.semantics.core import REFUSED, Rules, typed
from strataflow.pyspark.sql.semantics.regression import REGRESSION
from strataflow.pyspark.sql.semantics.template import fill
from strataflow.pyspark.sql.semantics.types import is_decimal, is_fractional, is_integral

__all__ = ["KEEP", "RULES", "ANONYMOUS", "REFUSE"]

#: the non-null values of ``{x}`` as doubles, in the order the rows come
_DOUBLES = "list_filter(list(CAST({x} AS DOUBLE)), __v -> __v IS NOT NULL)"


def _moments(order: int) -> str:
    """Spark's ``CentralMomentAgg`` update, one value at a time, as a ``list_reduce`` to a
    struct of n, avg, m2 (m3, m4): the same operations in the same order, so the same
    doubles (Spark's merge of partitions' buffers is not needed: the rows meet in one)."""
    d, dn = "(__v - __a.avg)", "((__v - __a.avg) / (__a.n + 1.0))"
    m2 = f"(__a.m2 + {d} * ({d} - {dn}))"
    d2, dn2 = f"({d} * {d})", f"({dn} * {dn})"
    m3 = f"((__a.m3 - 3.0 * {dn} * {m2}) + {d} * ({d2} - {dn2}))"
    m4 = f"(((__a.m4 - 4.0 * {dn} * {m3}) - 6.0 * {dn2} * {m2}) + {d} * ({d} * {d2} - {dn} * {dn2}))"
    fields = {"n": "(__a.n + 1.0)", "avg": f"(__a.avg + {dn})", "m2": m2, "m3": m3 if order >= 3 else "0.0",
              "m4": m4 if order >= 4 else "0.0"}
    step = "{" + ", ".join(f"'{k}': CAST({v} AS DOUBLE)" for k, v in fields.items()) + "}"
    zero = "{" + ", ".join(f"'{k}': CAST(0 AS DOUBLE)" for k in fields) + "}"
    return f"list_reduce({_DOUBLES}, (__a, __v) -> {step}, {zero})"


def _moment_rule(order: int, formula: str):
    """``skewness`` (order 3) or ``kurtosis`` (order 4): null for no values and for no
    spread (Spark's default, ``spark.sql.legacy.statisticalAggregate`` false)."""
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        body = (f"list_transform([{_moments(order)}], __s -> CASE WHEN __s.n = 0 OR __s.m2 = 0 "
                f"THEN CAST(NULL AS DOUBLE) ELSE {formula} END)[1]")
        return typed(fill(body, x=node.this), pa.float64())

    return rule


_SKEWNESS = _moment_rule(3, "sqrt(__s.n) * __s.m3 / sqrt(__s.m2 * __s.m2 * __s.m2)")
_KURTOSIS = _moment_rule(4, "__s.n * __s.m4 / (__s.m2 * __s.m2) - 3.0")


def _number(e: "exp.Expression | None") -> float | None:
    """A literal number's value (``0.5``, ``0.5D``, ``-1``; a literal cast to a number, as
    the cast's rule has rewritten it), else None."""
    if e is not None and not isinstance(e, (exp.Literal, exp.Neg, exp.Paren)) and e.find(exp.Column) is None:
        found = [n for n in e.find_all(exp.Literal) if not n.is_string]
        if len(found) == 1 and not any(isinstance(n, exp.Neg) for n in e.walk()):
            return _number(found[0])
    if isinstance(e, exp.Paren):
        return _number(e.this)
    if isinstance(e, exp.Neg):
        v = _number(e.this)
        return None if v is None else -v
    if isinstance(e, (exp.Cast, exp.TryCast)):
        if isinstance(e.this, exp.Literal) and e.this.is_string and e.to.is_type(*exp.DataType.REAL_TYPES):
            try:
                return float(e.this.this)  # a literal the cast's rule folded: CAST('0.5' AS DOUBLE)
            except ValueError:
                return None
        return _number(e.this)
    if isinstance(e, exp.Literal) and not e.is_string:
        try:
            return float(e.this)
        except ValueError:
            return None
    return None


def _percentages(node: exp.Expression, q: "exp.Expression | None", rules: Rules) -> "list[float] | float":
    """The literal percentage (or array of them) ``q``, each in [0, 1]; refused otherwise."""
    if isinstance(q, exp.Array):
        got = [_number(x) for x in q.expressions]
        if got and all(v is not None and 0.0 <= v <= 1.0 for v in got):
            return [float(v) for v in got]  # type: ignore[arg-type]
    else:
        v = _number(q)
        if v is not None and 0.0 <= v <= 1.0:
            return v
    raise rules.refuse(node, "its percentage is not a literal in [0, 1] (or an array of them)",
                       "a literal percentage such as 0.5, or a list of them")


def _each(qs: "list[float] | float", one: str) -> str:
    """``one`` (text with ``__q`` for the percentage) for a percentage, or the array of it
    for each of a list of them."""
    if isinstance(qs, list):
        return f"list_transform([{', '.join(repr(q) for q in qs)}], __q -> {one})"
    return one.replace("__q", f"CAST({qs!r} AS DOUBLE)")


def _named(node: exp.Expression) -> bool:
    """True if the node knows the name it was called by (a DataFrame function's call, SQL
    text's written name, an Anonymous node's own): sqlglot's SQL parser builds some kinds
    (ApproxQuantile, GroupConcat, Quantile) from two spellings without keeping which."""
    return isinstance(node, exp.Anonymous) or bool(node._meta and (node.meta.get("call") or node.meta.get("written")))


def _percentile(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``percentile``: Spark's exact percentile of the values as doubles (each counted
    ``frequency`` times; a row with a null value or frequency not at all): position
    ``(n - 1) * q``, ``lo + (pos - floor(pos)) * (hi - lo)`` between the two keys around it
    (the lower key alone where they are equal), values sorted NaN last; null for none."""
    if not isinstance(node, exp.Anonymous):
        raise rules.refuse(node, "the SQL parser keeps no third argument (a frequency) of percentile, so one "
                                 "would be dropped unseen", "F.percentile(col, percentage) in a DataFrame")
    if len(node.expressions) not in (2, 3):
        raise rules.refuse(node, "a wrong number of arguments", "percentile(col, percentage[, frequency])")
    x, q = node.expressions[:2]
    freq = node.expressions[2] if len(node.expressions) == 3 else None
    values = _DOUBLES
    if freq is not None and _number(freq) != 1:
        if not is_integral(rules.type_of(freq)):
            raise rules.refuse(node, "a frequency that is not an integer", "an integral frequency column")
        negative = (f"error('[{REFUSED}] strataflow does not run `percentile` here: a negative frequency, which "
                    f"Spark fails with its own error. Instead: frequencies of 0 or more.')")
        values = (f"flatten(list(CASE WHEN {{x}} IS NULL OR {{f}} IS NULL THEN [] WHEN {{f}} < 0 THEN {negative} "
                  f"ELSE list_transform(range(CAST({{f}} AS BIGINT)), __i -> CAST({{x}} AS DOUBLE)) END))")
    t = rules.type_of(x)
    if not (is_integral(t) or is_fractional(t) or is_decimal(t)):
        raise rules.refuse(node, f"its argument is of type {t}", "percentile of a number")
    qs = _percentages(node, q, rules)
    one = ("list_transform([CAST(len(__s) - 1 AS DOUBLE) * __q], __p -> list_transform("
           "[{'lk': __s[CAST(floor(__p) AS BIGINT) + 1], 'hk': __s[CAST(ceil(__p) AS BIGINT) + 1]}], "
           "__k -> CASE WHEN floor(__p) = ceil(__p) OR __k.lk = __k.hk THEN __k.lk "
           "ELSE __k.lk + (__p - floor(__p)) * (__k.hk - __k.lk) END)[1])[1]")
    body = f"list_transform([list_sort({values})], __s -> CASE WHEN len(__s) = 0 THEN NULL ELSE {_each(qs, one)} END)[1]"
    parts = {"x": x} if freq is None or values == _DOUBLES else {"x": x, "f": freq}
    return typed(fill(body, **parts), pa.list_(pa.float64()) if isinstance(qs, list) else pa.float64())


_NEG_ZERO = "(CAST({x} AS DOUBLE) = 0 AND starts_with(CAST(CAST({x} AS DOUBLE) AS VARCHAR), '-'))"


def _approx_percentile(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``percentile_approx``: the element of rank ``ceil(q * n)`` of the values in Spark's
    order as doubles (-0.0 before 0.0, NaN last), the first for ``q <= 1/accuracy`` and
    the last for ``q >= 1 - 1/accuracy``; the input's type (a bigint through its double, as
    Spark's). Spark's summary holds every value exactly while ``2 * n / accuracy < 1``;
    beyond that the query fails, naming the function."""
    if not (node._meta and node.meta.get("fn")):
        node.meta["fn"] = "percentile_approx"
    if not _named(node):
        raise rules.refuse(node, "the SQL parser keeps no written name of percentile_approx/approx_percentile, "
                                 "which Spark's column name shows", "F.percentile_approx in a DataFrame")
    if isinstance(node, exp.Anonymous):
        args = node.expressions
        x, q, acc = args[0], args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else None
    else:
        x, q, acc = node.this, node.args.get("quantile"), node.args.get("accuracy")
    accuracy = 10000.0 if acc is None else _number(acc)
    if accuracy is None or accuracy != int(accuracy) or not 0 < accuracy <= 2147483647:
        raise rules.refuse(node, "its accuracy is not a literal positive integer", "an integer accuracy")
    qs = _percentages(node, q, rules)
    t = rules.type_of(x)
    if is_decimal(t) and t.precision > 15:
        raise rules.refuse(node, "a decimal of more than 15 digits goes through a double in Spark's summary",
                           "percentile_approx of the column cast to double")
    if not (is_integral(t) or is_fractional(t) or is_decimal(t) or pa.types.is_date32(t)
            or pa.types.is_timestamp(t)):
        raise rules.refuse(node, f"its argument is of type {t}", "percentile_approx of a number, date or timestamp")
    key = "epoch_us({x})" if pa.types.is_timestamp(t) else \
        "CAST(date_diff('day', DATE '1970-01-01', {x}) AS DOUBLE)" if pa.types.is_date32(t) else "CAST({x} AS DOUBLE)"
    neg = _NEG_ZERO if is_fractional(t) else "false"
    rel = f"(CAST(1 AS DOUBLE) / {int(accuracy)})"
    pick = (f"__s[CASE WHEN __q <= {rel} THEN 1 WHEN __q >= 1 - {rel} THEN len(__s) "
            f"ELSE least(CAST(ceil(__q * len(__s)) AS BIGINT), len(__s)) END]")
    value = f"{pick}.v"
    if t == pa.int64():
        value = (f"CASE WHEN {pick}.k >= 9.223372036854775807e18 THEN 9223372036854775807 "
                 f"ELSE CAST({pick}.k AS BIGINT) END")
    guard = ""
    if pa.types.is_timestamp(t):
        guard = f"WHEN list_bool_or(list_transform(__s, __e -> abs(__e.k) > 9007199254740992)) THEN {_too_big('a timestamp beyond 2^53 microseconds')} "
    entry = "{'k': " + key + ", 'z': NOT " + neg + ", 'v': {x}}"
    body = (f"list_transform([list_sort(list_filter(list({entry}), __e -> __e.v IS NOT NULL))], "
            f"__s -> CASE WHEN len(__s) = 0 THEN NULL "
            f"WHEN floor(2 * {rel} * len(__s)) >= 1 THEN {_too_big('more values than accuracy / 2')} "
            f"{guard}ELSE {_each(qs, value)} END)[1]")
    out_t = pa.list_(t) if isinstance(qs, list) else t
    return typed(fill(body, x=x), out_t)


def _too_big(what: str) -> str:
    return (f"error('[{REFUSED}] strataflow does not run `percentile_approx` here: {what} make Spark''s quantile "
            f"summary approximate (its answer depends on how Spark merges it), so its answer could differ from "
            f"Spark''s. Instead: percentile for the exact percentile, or a larger accuracy.')")


def _mode(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``mode``: the most frequent non-null value; of several as frequent, the smallest with
    ``deterministic`` (Spark's ordering), and without it a failure naming the function
    (Spark's hash map decides); null for no values."""
    flag = node.args.get("deterministic")
    deterministic = isinstance(flag, exp.Boolean) and flag.this
    if flag is not None and not isinstance(flag, exp.Boolean):
        raise rules.refuse(node, "its deterministic argument is not a literal", "mode(col, True) or mode(col)")
    if deterministic and not (node._meta and node.meta.get("shown")):
        raise rules.refuse(node, "Spark names this column mode() WITHIN GROUP (ORDER BY col DESC), which "
                                 "the SQL form's naming does not give yet", "F.mode(col, True), or an alias")
    entries = "map_entries(histogram({x}))"
    if deterministic:
        body = (f"list_transform([list_sort(list_transform({entries}, __e -> {{'c': -CAST(__e.value AS BIGINT), 'k': __e.key}}))], "
                f"__s -> __s[1].k)[1]")
    else:
        tie = (f"error('[{REFUSED}] strataflow does not run `mode` here: several values are the most frequent and "
               f"Spark''s hash map picks one, so its answer could differ from Spark''s. Instead: mode(col, True) "
               f"for the smallest of them.')")
        body = (f"list_transform([{entries}], __s -> CASE WHEN len(__s) = 0 THEN NULL "
                f"WHEN len(list_filter(__s, __e -> __e.value = list_max(list_transform(__s, __f -> __f.value)))) > 1 "
                f"THEN {tie} ELSE list_filter(__s, __e -> __e.value = list_max(list_transform(__s, __f -> __f.value)))"
                f"[1].key END)[1]")
    t = rules.type_of(node.this)
    x = node.this
    if is_fractional(t):  # Spark's map counts -0.0 as 0.0
        x = fill(f"CASE WHEN {{x}} = 0 THEN CAST(0 AS {'FLOAT' if t == pa.float32() else 'DOUBLE'}) ELSE {{x}} END",
                 x=x)
    out = _as_aggregate(fill(body, x=x), "histogram")
    return typed(out, t) if t is not None else out


def _as_aggregate(tree: exp.Expression, name: str) -> exp.Expression:
    """``tree`` with DuckDB's aggregate ``name`` (which sqlglot reads as a plain function)
    marked an aggregate, so that the plan groups the rows for it."""
    for node in list(tree.find_all(exp.Anonymous)):
        if str(node.name).lower() == name:
            agg = exp.AnonymousAggFunc(this=node.name, expressions=node.expressions)
            agg.meta["internal"] = True
            node.replace(agg)
    return tree


def _listagg(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``listagg``/``string_agg``: the non-null values joined by the delimiter ('' when
    none is given) in the rows' order, the distinct ones by first occurrence; null for no
    values; binary values joined as bytes."""
    if not _named(node):
        node.meta["fn"] = "listagg"
        raise rules.refuse(node, "the SQL parser keeps no written name of listagg/string_agg, which Spark's column "
                                 "name shows", "F.listagg(col, delimiter) or F.string_agg in a DataFrame")
    this, sep = node.this, node.args.get("separator")
    if isinstance(this, exp.Order):
        raise rules.refuse(node, "WITHIN GROUP (ORDER BY ...)", "listagg over rows sorted first")
    distinct = isinstance(this, exp.Distinct)
    x = this.expressions[0] if distinct else this
    if sep is None or isinstance(sep, exp.Null):
        sep = exp.Literal.string("")
    elif not (isinstance(sep, exp.Literal) and sep.is_string or sep._meta and sep.meta.get("binary_literal")):
        raise rules.refuse(node, "its delimiter is not a literal string", "a literal delimiter")
    t = rules.type_of(x)
    if sep._meta and sep.meta.get("binary_literal") and not (t is not None and pa.types.is_binary(t)):
        raise rules.refuse(node, "a binary delimiter of strings", "a string delimiter")
    values = "list_filter(list({x}), __v -> __v IS NOT NULL)"
    if distinct:
        values = f"list_transform([{values}], __l -> list_filter(__l, (__y, __i) -> list_position(__l, __y) = __i))[1]"
    if t is not None and pa.types.is_binary(t):
        body = (f"list_transform([{values}], __l -> CASE WHEN len(__l) = 0 THEN NULL "
                f"ELSE list_reduce(__l, (__a, __b) -> __a || CAST({{d}} AS BLOB) || __b) END)[1]")
        return typed(fill(body, x=x, d=sep), pa.binary())
    if t is not None and not pa.types.is_string(t) and not pa.types.is_large_string(t):
        raise rules.refuse(node, f"its argument is of type {t}", "listagg of a string column (cast it)")
    body = f"list_transform([{values}], __l -> CASE WHEN len(__l) = 0 THEN NULL ELSE array_to_string(__l, {{d}}) END)[1]"
    return typed(fill(body, x=x, d=sep), pa.string())


def _value_fn(node: exp.Expression, rules: Rules) -> exp.Expression | None:
    """``first_value``/``last_value`` outside a window: Spark's ``first``/``last``."""
    if isinstance(node.parent, (exp.Window, exp.IgnoreNulls)):
        return None
    return fill("first({x})" if isinstance(node, exp.FirstValue) else "last({x})", x=node.this)


def _ignore_nulls(node: exp.Expression, rules: Rules) -> exp.Expression | None:
    """``first_value(x) IGNORE NULLS`` (and ``last_value``, ``nth_value``): the window form
    as DuckDB gives it (the same frame), the aggregate form the first (last) non-null value;
    other functions' IGNORE NULLS go to their family's rule."""
    inner = node.this
    if isinstance(inner, (exp.FirstValue, exp.LastValue, exp.NthValue)):
        if isinstance(node.parent, exp.Window):
            return None
        if not node._meta and inner._meta and inner.meta.get("written"):  # first_value(x) IGNORE NULLS
            inner.meta["fn"] = inner.meta["written"]
            raise rules.refuse(inner, "Spark names this aggregate first(x)/last(x), which the SQL form's naming "
                                      "does not give yet", "first_value(x, true) or an alias")
        if isinstance(inner, exp.FirstValue):
            return fill("any_value({x})", x=inner.this)
        if isinstance(inner, exp.LastValue):
            return fill("list_extract(list_filter(list({x}), e -> e IS NOT NULL), -1)", x=inner.this)
        raise rules.refuse(node, "nth_value outside a window", "nth_value(col, n).over(window)")
    from strataflow.pyspark.sql.semantics import arrays

    return arrays.RULES[exp.IgnoreNulls](node, rules)


def _nth_value(node: exp.Expression, rules: Rules) -> exp.Expression | None:
    if not isinstance(node.parent, (exp.Window, exp.IgnoreNulls)):
        raise rules.refuse(node, "nth_value outside a window", "nth_value(col, n).over(window)")
    off = _number(node.args.get("offset"))
    if off is None or off != int(off) or off < 1:
        raise rules.refuse(node, "its offset is not a literal positive integer", "nth_value(col, 2)")
    first = node.args.get("from_first")
    if first is not None and not (isinstance(first, exp.Boolean) and first.this):
        raise rules.refuse(node, "FROM LAST (Spark counts from the frame's first row)", "nth_value(col, n)")
    node.set("from_first", None)
    return None


def _try_sum(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``try_sum``: integral values summed as a bigint in the rows' order, null from the
    first overflow on (Spark's TryEval of each addition); a decimal(p, s)'s sum a
    decimal(p + 10, s), null on overflow; floating values as ``sum``; null for no values."""
    if len(node.expressions) != 1:
        raise rules.refuse(node, "a wrong number of arguments", "try_sum(col)")
    x = node.expressions[0]
    t = rules.type_of(x)
    if is_integral(t):
        body = ("CASE WHEN count({x}) = 0 THEN NULL ELSE CAST(list_reduce(list_filter(list(CAST({x} AS HUGEINT)), "
                "__v -> __v IS NOT NULL), (__a, __v) -> CASE WHEN __a + __v > 9223372036854775807 "
                "OR __a + __v < -9223372036854775808 THEN NULL ELSE __a + __v END, CAST(0 AS HUGEINT)) AS BIGINT) END")
        return typed(fill(body, x=x), pa.int64())
    if is_decimal(t) and t.precision > 28:
        raise rules.refuse(node, "a sum that can pass 38 digits (Spark's null on overflow is not detected there)",
                           "try_sum of the column cast to a decimal of at most 28 digits, or to double")
    if is_decimal(t):
        p, sc = min(t.precision + 10, 38), t.scale
        return typed(fill(f"TRY_CAST(sum({{x}}) AS DECIMAL({p},{sc}))", x=x), pa.decimal128(p, sc))
    if is_fractional(t):
        return typed(fill("sum(CAST({x} AS DOUBLE))", x=x), pa.float64())
    raise rules.refuse(node, f"its argument is of type {t}", "try_sum of a number")


def _try_avg(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``try_avg``: Spark's ``avg`` (integral and floating values as doubles; a decimal's
    exact average, null where it overflows its type)."""
    if len(node.expressions) != 1:
        raise rules.refuse(node, "a wrong number of arguments", "try_avg(col)")
    x = node.expressions[0]
    t = rules.type_of(x)
    if not (is_integral(t) or is_fractional(t) or is_decimal(t)):
        raise rules.refuse(node, f"its argument is of type {t}", "try_avg of a number")
    if is_decimal(t) and t.precision > 28:
        raise rules.refuse(node, "a sum that can pass 38 digits (Spark's null on overflow is not detected there)",
                           "try_avg of the column cast to a decimal of at most 28 digits, or to double")
    avg = exp.Avg(this=x.copy())
    return numeric.avg_rule(avg, rules) or avg


def _renamed(duck: str):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        args = node.expressions
        if len(args) != 1:
            raise rules.refuse(node, "a wrong number of arguments", f"{node.name}(col)")
        return fill(f"{duck}({{x}})", x=args[0])

    return rule


def _unresolved(node: exp.Expression, rules: Rules) -> exp.Expression:
    raise AnalysisException(f"[UNRESOLVED_ROUTINE] Cannot resolve routine `{node.name}` on search path "
                            f"[`system`.`builtin`, `system`.`session`, `spark_catalog`.`default`].",
                            "UNRESOLVED_ROUTINE")


def _refuse(why: str, instead: str):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        raise rules.refuse(node, why, instead)

    return rule


#: kinds whose DuckDB answer the suite found equal to Spark's
KEEP: frozenset[type] = frozenset({exp.BitwiseAndAgg, exp.BitwiseOrAgg, exp.BitwiseXorAgg})
#: kinds rewritten to Spark's meaning
RULES: dict = {
    exp.Skewness: _SKEWNESS, exp.Kurtosis: _KURTOSIS, exp.Quantile: _percentile, exp.ApproxQuantile: _approx_percentile,
    exp.Mode: _mode, exp.GroupConcat: _listagg, exp.FirstValue: _value_fn, exp.LastValue: _value_fn,
    exp.NthValue: _nth_value, exp.IgnoreNulls: _ignore_nulls, **REGRESSION,
}
#: Anonymous functions (no sqlglot kind) by name: rules
ANONYMOUS: dict = {
    "try_sum": _try_sum, "try_avg": _try_avg, "std": _renamed("stddev_samp"), "every": _renamed("bool_and"), "some": _renamed("bool_or"),
    "percentile": _percentile, "percentile_approx": _approx_percentile, "approx_percentile": _approx_percentile,
    **{name: _unresolved for name in ("listagg_distinct", "string_agg_distinct", "approxcountdistinct")},
    "histogram_numeric": _refuse("Spark's histogram bins come from its streaming merge of partitions' bins",
                                 "a histogram from floor(col / width) and count"),
    "count_min_sketch": _refuse("the sketch's bytes are Spark's hashes and serialization",
                                "an exact count per value with groupBy().count()"),
    "collect_union": _refuse("the element order is Spark's hash set's",
                             "array_distinct(flatten(collect_list(col))), sorted with sort_array"),
}
#: kinds refused: (why, instead)
REFUSE: dict[type, tuple[str, str]] = {
    exp.Grouping: ("cube, rollup and grouping sets run as a union of aggregates, which does not tell a key "
                   "aggregated away from a null key", "a column of your own per grouping set (lit(0)/lit(1)), "
                   "then union"),
    exp.GroupingId: ("cube, rollup and grouping sets run as a union of aggregates, which does not tell a key "
                     "aggregated away from a null key", "a column of your own per grouping set, then union"),
}
