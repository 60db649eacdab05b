"""Numbers as Spark computes them: ``round``/``bround`` of a double by its decimal text
(HALF_UP: 2.675 -> 2.68), division and remainder by zero (null, or ANSI's error), integer
overflow (wraps, or ANSI's error), decimal result types (Spark's precision and scale),
``floor``/``ceil`` to bigint, logarithms of non-positive numbers (null), ``avg`` of
integers over doubles.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.semantics import bitwise, elementary, hashing, nulls
from strataflow.pyspark.sql.semantics.core import Rules, SqlConf, typed
from strataflow.pyspark.sql.semantics.template import fill
from strataflow.pyspark.sql.semantics.types import (bounded_decimal, cast_to, decimal_of, duck, integral_bits,
                                                    is_decimal, is_fractional, is_integral)

__all__ = ["log_rule", "pmod", "negative", "positive", "width_bucket", "round_rule", "bround_rule", "divide", "remainder", "arithmetic", "abs_rule", "floor_ceil",
           "signum", "logarithm", "avg_rule", "to_integral", "KEEP", "RULES", "ANONYMOUS", "REFUSE"]

_MIN = {8: -(1 << 7), 16: -(1 << 15), 32: -(1 << 31), 64: -(1 << 63)}
_DUCK = {8: "TINYINT", 16: "SMALLINT", 32: "INTEGER", 64: "BIGINT"}
_ARROW = {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}


def to_integral(value: exp.Expression, bits: int, rules: Rules, what: str) -> exp.Expression:
    """A HUGEINT-valued expression as Spark's integral type of ``bits``: wrapped around
    (non-ANSI, as Java's arithmetic) or an ARITHMETIC_OVERFLOW error (ANSI)."""
    lo, span = _MIN[bits], 1 << bits
    if rules.conf.ansi:
        cls = "BINARY_ARITHMETIC_OVERFLOW" if bits <= 16 else "ARITHMETIC_OVERFLOW"
        out = fill(f"CASE WHEN {{v}} < {lo} OR {{v}} > {-lo - 1} THEN error('[{cls}] {what} caused "
                   f"overflow. Use ''try_'' variants to tolerate overflow and return NULL instead. If necessary "
                   f"set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error.') "
                   f"ELSE CAST({{v}} AS {_DUCK[bits]}) END", v=value)
    else:
        out = fill(f"CAST((((CAST({{v}} AS HUGEINT) - ({lo})) % {span}) + {span}) % {span} + ({lo}) AS {_DUCK[bits]})",
                   v=value)
    return typed(out, _ARROW[bits])


def _scale_arg(node: exp.Expression, rules: Rules) -> int | None:
    s = node.args.get("decimals")
    if s is None:
        return 0
    if isinstance(s, exp.Neg) and isinstance(s.this, exp.Literal) and s.this.is_int:
        return -int(s.this.this)
    if isinstance(s, exp.Literal) and s.is_int:
        return int(s.this)
    return None


def _rounding(node: exp.Expression, rules: Rules, fn: str) -> exp.Expression:
    x, s = node.this, _scale_arg(node, rules)
    if s is None:
        raise rules.refuse(node, "its scale is not a literal integer", f"{fn}(col, <an integer literal>)")
    t = rules.type_of(x)
    duck_fn = "round" if fn == "round" else "round_even"
    if is_integral(t):
        if s >= 0:
            return typed(cast_to(x, duck(t)), t)
        v = fill(f"CAST({duck_fn}(CAST({{x}} AS DECIMAL(38,0)), {s}) AS HUGEINT)", x=x)
        return to_integral(v, integral_bits(t), rules, fn)
    if is_fractional(t):
        text = "CAST(CAST({x} AS DOUBLE) AS VARCHAR)"  # Spark's BigDecimal(value.toDouble): its shortest text
        out = "DOUBLE" if t == pa.float64() else "FLOAT"
        r = fill(f"CASE WHEN isnan({{x}}) OR isinf({{x}}) THEN CAST({{x}} AS {out}) "
                 f"WHEN abs({{x}}) < 1e13 THEN CAST({duck_fn}(CAST({text} AS DECIMAL(38,24)), {s}) AS {out}) "
                 f"WHEN abs({{x}}) < 1e29 THEN CAST({duck_fn}(CAST({text} AS DECIMAL(38,8)), {s}) AS {out}) "
                 f"ELSE CAST({{x}} AS {out}) END", x=x)
        if s < -8:
            raise rules.refuse(node, "a scale below -8 of a floating-point number", f"{fn} of a decimal")
        return typed(r, t)
    if is_decimal(t):
        p, sc = t.precision, t.scale
        least = p - sc + 1
        if s < 0:
            rp, rs = min(max(least, -s + 1), 38), 0
        else:
            rs = min(sc, s)
            rp = min(least + rs, 38)
        return typed(cast_to(fill(f"{duck_fn}({{x}}, {s})", x=x), f"DECIMAL({rp},{rs})"), pa.decimal128(rp, rs))
    raise rules.refuse(node, f"its argument is of type {t}", f"{fn} of a number")


def round_rule(node: exp.Expression, rules: Rules) -> exp.Expression:
    return _rounding(node, rules, "round")


def bround_rule(node: exp.Expression, rules: Rules) -> exp.Expression:
    args = node.expressions
    fake = exp.Round(this=args[0], decimals=args[1] if len(args) > 1 else None)
    fake.meta["fn"] = "bround"
    return _rounding(fake, rules, "bround")


def _zero_guard(den: exp.Expression, rules: Rules, error_class: str, body: exp.Expression) -> exp.Expression:
    if rules.conf.ansi:
        return fill(f"CASE WHEN {{d}} = 0 THEN error('[{error_class}] Division by zero. Use `try_divide` to tolerate "
                    f"divisor being 0 and return NULL instead. If necessary set \"spark.sql.ansi.enabled\" to "
                    f"\"false\" to bypass this error.') ELSE {{b}} END", d=den, b=body)
    return fill("CASE WHEN {d} = 0 THEN NULL ELSE {b} END", d=den, b=body)


def _decimal_div_type(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    (p1, s1), (p2, s2) = a, b
    scale = max(6, s1 + p2 + 1)
    return bounded_decimal(p1 - s1 + s2 + scale, scale)


def divide(node: exp.Expression, rules: Rules) -> exp.Expression:
    """Spark's ``/``: doubles for integral and floating operands, Spark's exact decimal
    division (HALF_UP at the result's scale) when either is a decimal; null (or ANSI's
    DIVIDE_BY_ZERO) for a zero divisor."""
    a, b = node.this, node.expression
    ta, tb = rules.type_of(a), rules.type_of(b)
    if (is_decimal(ta) or is_decimal(tb)) and decimal_of(ta) and decimal_of(tb):
        (p1, s1), (p2, s2) = decimal_of(ta), decimal_of(tb)
        p, s = _decimal_div_type((p1, s1), (p2, s2))
        k = s + s2 - s1  # the quotient's unscaled value: round(a_u * 10^k / b_u)
        num = f"(CAST({{a}} * {10 ** s1} AS HUGEINT))"
        den = f"(CAST({{b}} * {10 ** s2} AS HUGEINT))"
        if k >= 0:
            num = f"({num} * CAST({10 ** k} AS HUGEINT))"
        else:
            den = f"({den} * CAST({10 ** -k} AS HUGEINT))"
        q = (f"(sign({num}) * sign({den}) * ((abs({num}) * 2 + abs({den})) // (abs({den}) * 2)))")
        unit = f"CAST('1e-{s}' AS DECIMAL({s + 1},{s}))" if s > 0 else "1"
        body = fill(f"TRY_CAST(CAST({q} AS DECIMAL(38,0)) * {unit} AS DECIMAL({p},{s}))", a=a, b=b)
        return typed(_zero_guard(b, rules, "DIVIDE_BY_ZERO", body), pa.decimal128(p, s))
    if ta is not None and tb is not None and not all(
            is_integral(t) or is_fractional(t) or is_decimal(t) or pa.types.is_null(t) for t in (ta, tb)):
        return None  # strings: the coercions already cast them; others: DuckDB says what is wrong
    body = fill("CAST({a} AS DOUBLE) / CAST({b} AS DOUBLE)", a=a, b=b)
    return typed(_zero_guard(b, rules, "DIVIDE_BY_ZERO", body), pa.float64())


def remainder(node: exp.Expression, rules: Rules) -> exp.Expression:
    """Spark's ``%``: the dividend's sign, null (or ANSI's REMAINDER_BY_ZERO) for a zero divisor."""
    a, b = node.this, node.expression
    ta, tb = rules.type_of(a), rules.type_of(b)
    if is_integral(ta) and is_integral(tb):
        bits = max(integral_bits(ta), integral_bits(tb))
        body = fill(f"CAST(CAST({{a}} AS HUGEINT) % CAST({{b}} AS HUGEINT) AS {_DUCK[bits]})", a=a, b=b)
        return typed(_zero_guard(b, rules, "REMAINDER_BY_ZERO", body), _ARROW[bits])
    if (is_decimal(ta) or is_decimal(tb)) and decimal_of(ta) and decimal_of(tb):
        (p1, s1), (p2, s2) = decimal_of(ta), decimal_of(tb)
        s = max(s1, s2)
        p, s = bounded_decimal(min(p1 - s1, p2 - s2) + s, s)
        body = fill(f"TRY_CAST(CAST({{a}} AS DECIMAL(38,{s1})) % CAST({{b}} AS DECIMAL(38,{s2})) AS DECIMAL({p},{s}))",
                    a=a, b=b)
        return typed(_zero_guard(b, rules, "REMAINDER_BY_ZERO", body), pa.decimal128(p, s))
    if (is_fractional(ta) or is_integral(ta)) and (is_fractional(tb) or is_integral(tb)):
        out = "FLOAT" if pa.float64() not in (ta, tb) else "DOUBLE"
        body = fill(f"CAST(CAST({{a}} AS DOUBLE) % CAST({{b}} AS DOUBLE) AS {out})", a=a, b=b)
        return typed(_zero_guard(b, rules, "REMAINDER_BY_ZERO", body), pa.float32() if out == "FLOAT" else pa.float64())
    return None


_SYMBOL = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*"}


def arithmetic(node: exp.Expression, rules: Rules) -> exp.Expression | None:
    """``+``, ``-``, ``*``: integers wrap around on overflow (or raise, ANSI); a decimal
    result has Spark's precision and scale."""
    a, b = node.this, node.expression
    ta, tb = rules.type_of(a), rules.type_of(b)
    op = _SYMBOL[type(node)]
    if is_integral(ta) and is_integral(tb):
        bits = max(integral_bits(ta), integral_bits(tb))
        v = fill(f"CAST({{a}} AS HUGEINT) {op} CAST({{b}} AS HUGEINT)", a=a, b=b)
        names = {"+": "addition", "-": "subtraction", "*": "multiplication"}
        return to_integral(v, bits, rules, f"Integer {names[op]}")
    if (is_decimal(ta) or is_decimal(tb)) and decimal_of(ta) and decimal_of(tb):
        (p1, s1), (p2, s2) = decimal_of(ta), decimal_of(tb)
        if op == "*":
            p, s = bounded_decimal(p1 + p2 + 1, s1 + s2)
        else:
            s = max(s1, s2)
            p, s = bounded_decimal(max(p1 - s1, p2 - s2) + s + 1, s)
        wide = fill(f"CAST({{a}} AS DECIMAL(38,{s1})) {op} CAST({{b}} AS DECIMAL(38,{s2}))", a=a, b=b)
        if rules.conf.ansi:
            out = fill(f"CAST({{w}} AS DECIMAL({p},{s}))", w=wide)
        else:
            out = fill(f"TRY_CAST({{w}} AS DECIMAL({p},{s}))", w=wide)
        return typed(out, pa.decimal128(p, s))
    return None


def abs_rule(node: exp.Expression, rules: Rules) -> exp.Expression | None:
    t = rules.type_of(node.this)
    if is_integral(t):
        return to_integral(fill("abs(CAST({x} AS HUGEINT))", x=node.this), integral_bits(t), rules, "abs")
    return None


def floor_ceil(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``floor``/``ceil``: a bigint of an integral or floating argument (NaN 0, ±inf the
    bigint's bounds, as Scala's ``toLong``), ``decimal(p - s + 1, 0)`` of a decimal."""
    fn = "floor" if isinstance(node, exp.Floor) else "ceil"
    if node.args.get("decimals") is not None:
        raise rules.refuse(node, "a scale argument", f"{fn}(col) or round")
    x = node.this
    t = rules.type_of(x)
    if is_integral(t):
        return typed(cast_to(x, "BIGINT"), pa.int64())
    if is_fractional(t) and rules.conf.ansi:
        return typed(fill(f"CASE WHEN isnan({{x}}) OR {fn}({{x}}) >= 9223372036854775807 OR "
                          f"{fn}({{x}}) < -9223372036854775808 THEN error('[ARITHMETIC_OVERFLOW] Overflow in "
                          f"{fn}. If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error.') "
                          f"ELSE CAST({fn}({{x}}) AS BIGINT) END", x=x), pa.int64())
    if is_fractional(t):
        return typed(fill(f"CASE WHEN isnan({{x}}) THEN 0 WHEN {fn}({{x}}) >= 9223372036854775807 "
                          f"THEN 9223372036854775807 WHEN {fn}({{x}}) <= -9223372036854775808 "
                          f"THEN -9223372036854775808 ELSE CAST({fn}({{x}}) AS BIGINT) END", x=x), pa.int64())
    if is_decimal(t):
        p = min(t.precision - t.scale + 1, 38)
        return typed(cast_to(fill(f"{fn}({{x}})", x=x), f"DECIMAL({p},0)"), pa.decimal128(p, 0))
    raise rules.refuse(node, f"its argument is of type {t}", f"{fn} of a number")


def signum(node: exp.Expression, rules: Rules) -> exp.Expression:
    """Java's ``Math.signum``: a double; NaN and ±0.0 are returned as they are."""
    return typed(fill("CASE WHEN isnan(CAST({x} AS DOUBLE)) OR CAST({x} AS DOUBLE) = 0 THEN CAST({x} AS DOUBLE) "
                      "ELSE CAST(sign(CAST({x} AS DOUBLE)) AS DOUBLE) END", x=node.this), pa.float64())


def logarithm(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``ln``/``log10``/``log2``: null where the argument is not positive (Spark), and
    ``log2`` as Spark computes it, ``ln(x) / ln(2)``."""
    if isinstance(node, exp.Ln):
        x, body = node.this, "ln(CAST({x} AS DOUBLE))"
    else:
        base, x = node.this, node.expression
        if x is None:
            x, body = base, "ln(CAST({x} AS DOUBLE))"
        elif isinstance(base, exp.Literal) and base.this == "10":
            body = "log10(CAST({x} AS DOUBLE))"
        elif isinstance(base, exp.Literal) and base.this == "2":
            body = "ln(CAST({x} AS DOUBLE)) / ln(2.0)"
        else:
            raise rules.refuse(node, "a logarithm of another base", "ln(x) / ln(base)")
    return typed(fill(f"CASE WHEN CAST({{x}} AS DOUBLE) <= 0 THEN NULL ELSE {body} END", x=x), pa.float64())


def avg_rule(node: exp.Expression, rules: Rules) -> exp.Expression | None:
    """``avg``: of integral and floating values a double (Spark sums them as doubles); of a
    decimal(p, s) a decimal(p + 4, s + 4), the exact sum divided HALF_UP."""
    x = node.this
    if isinstance(x, exp.Distinct):
        raise rules.refuse(node, "avg of distinct values", "avg over a distinct select")
    t = rules.type_of(x)
    if is_integral(t) or is_fractional(t):
        node.set("this", cast_to(x, "DOUBLE"))
        return typed(node, pa.float64())
    if is_decimal(t):
        p, s = bounded_decimal(t.precision + 4, t.scale + 4)
        sp, ss = bounded_decimal(t.precision + 10, t.scale)
        total = typed(cast_to(exp.Sum(this=x.copy()), f"DECIMAL({sp},{ss})"), pa.decimal128(sp, ss))
        count = typed(exp.Count(this=x.copy()), pa.int64())
        k = s - ss  # quotient's unscaled value: round(sum_u * 10^k / count)
        out = fill(f"CASE WHEN {{c}} = 0 THEN NULL ELSE TRY_CAST(CAST(sign(CAST({{t}} * {10 ** ss} AS HUGEINT)) * "
                   f"((abs(CAST({{t}} * {10 ** ss} AS HUGEINT)) * CAST({10 ** k} AS HUGEINT) * 2 + {{c}}) // "
                   f"(2 * {{c}})) AS DECIMAL(38,0)) * CAST('1e-{s}' AS DECIMAL({s + 1},{s})) AS DECIMAL({p},{s})) END",
                   t=total, c=count)
        return typed(out, pa.decimal128(p, s))
    return None


def sum_rule(node: exp.Expression, rules: Rules) -> exp.Expression | None:
    """``sum`` of a decimal(p, s) is a decimal(p + 10, s) (null on overflow without ANSI)."""
    x = node.this
    if isinstance(x, exp.Distinct):
        inner = x.expressions[0] if x.expressions else None
    else:
        inner = x
    t = rules.type_of(inner) if inner is not None else None
    if is_decimal(t):
        p, s = bounded_decimal(t.precision + 10, t.scale)
        return typed(cast_to(node, f"DECIMAL({p},{s})"), pa.decimal128(p, s))
    if is_integral(t):
        return typed(_long_sum(node, inner, rules), pa.int64())
    return None


_LONG = 2 ** 63
_OVERFLOW = ("error('[ARITHMETIC_OVERFLOW] overflow. Use ''try_add'' to tolerate overflow and return NULL instead. "
             "If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error.')")
_ORDERED = ("error('[STRATAFLOW_UNSUPPORTED] strataflow does not run `sum` here: a sum of bigints that fits while the "
            "sum of its positive (or negative) values does not, where Spark''s ANSI mode fails or not by the order "
            "it adds the rows in, so its answer could differ from Spark''s. Instead: sum of the values cast to "
            "decimal(38,0).')")


def _long_sum(node: exp.Expression, inner: exp.Expression, rules: Rules) -> exp.Expression:
    """Spark adds integers in a long: without ANSI the sum wraps around (the exact sum
    modulo 2^64), under ANSI a sum past the long's range is ARITHMETIC_OVERFLOW. The sum is
    taken exactly, as a decimal with a fractional digit (DuckDB's HUGEINT sum reaches Arrow
    as decimal(38,0), which the engine narrows to a bigint, failing between partial and
    final aggregation). Spark's ANSI sum also fails where a running total overflows and
    the sum comes back in range: where the positive or negative values alone overflow,
    that depends on the rows' order, and is refused."""
    def total(value: exp.Expression) -> exp.Expression:
        out = node.copy()
        wide = exp.cast(value.copy(), exp.DataType.build("DECIMAL(38,1)", dialect="duckdb"))
        if isinstance(out.this, exp.Distinct):
            out.this.set("expressions", [wide])
        else:
            out.set("this", wide)
        return out

    exact = total(inner)
    if not rules.conf.ansi:  # the exact sum modulo 2^64, as a signed long
        return fill(f"CAST(((CAST({{s}} AS HUGEINT) + {_LONG}) % {2 * _LONG} + {2 * _LONG}) % {2 * _LONG} - {_LONG} "
                    f"AS BIGINT)", s=exact)
    bounds = f"NOT __total BETWEEN {-_LONG} AND {_LONG - 1}"
    if isinstance(node.parent, exp.Window):  # one aggregate under a window (``walk``): each frame's total checked
        return fill(f"CAST(list_transform([{{s}}], lambda __total: CASE WHEN {bounds} THEN {_OVERFLOW} "
                    f"ELSE __total END)[1] AS BIGINT)", s=exact)
    bounds = bounds.replace("__total", "{s}")
    pos = total(fill("CASE WHEN {x} > 0 THEN {x} END", x=inner))
    neg = total(fill("CASE WHEN {x} < 0 THEN {x} END", x=inner))
    return fill(f"CAST(CASE WHEN {bounds} THEN {_OVERFLOW} WHEN {{p}} > {_LONG - 1} OR {{n}} < {-_LONG} THEN "
                f"{_ORDERED} ELSE {{s}} END AS BIGINT)", s=exact, p=pos, n=neg)


def nanvl(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``nanvl(a, b)``: ``b`` where ``a`` is NaN (doubles)."""
    return typed(fill("CASE WHEN isnan(CAST({a} AS DOUBLE)) THEN CAST({b} AS DOUBLE) ELSE CAST({a} AS DOUBLE) END",
                      a=node.this, b=node.expression), pa.float64())


def max_by(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``max_by``: Spark orders NaN above every number; DuckDB's arg_max does not."""
    if is_fractional(rules.type_of(node.expression)):
        raise rules.refuse(node, "an ordering column of floating-point numbers (Spark puts NaN above all)",
                           "max_by over a decimal or integral ordering column")
    return node


def log_rule(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``log(base, x)``: ``ln(x) / ln(base)`` (Spark's ``Logarithm``), null where either is
    not positive; ``log10``, ``log2`` and ``ln`` as ``logarithm`` gives them. SQL's
    one-argument ``log(x)`` is refused: Spark names it ``LOG(E(), x)``."""
    if isinstance(node, exp.Ln) and node._meta and str(node.meta.get("written", "")).lower() == "log":
        raise rules.refuse(node, "Spark names SQL's one-argument log(x) LOG(E(), x), strataflow log(x)",
                           "ln(x)")
    if isinstance(node, exp.Log) and node.expression is not None:
        base = node.this
        if not (isinstance(base, exp.Literal) and base.this in ("10", "2")):
            return typed(fill("CASE WHEN CAST({b} AS DOUBLE) <= 0 OR CAST({x} AS DOUBLE) <= 0 THEN NULL "
                              "ELSE ln(CAST({x} AS DOUBLE)) / ln(CAST({b} AS DOUBLE)) END",
                              b=base, x=node.expression), pa.float64())
    return logarithm(node, rules)


def _relaxed(rules: Rules) -> Rules:
    """``rules`` with ANSI off: a ``try_`` function's null where ANSI would fail."""
    return Rules(SqlConf(ansi=False, tz=rules.conf.tz), rules.schema, rules.table, rules._types)


def pmod(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``pmod(a, n)``: Spark's ``r = a % n; if (r < 0) (r + n) % n else r``, of ``%``'s type,
    with Java's wrap-around in ``r + n``; null (ANSI: REMAINDER_BY_ZERO) for a zero ``n``."""
    a, n = [fill("CAST({x} AS DOUBLE)", x=x) if isinstance(x, exp.Literal) and not x.is_string and not x.is_int
            else x for x in node.expressions]  # a Python float is a Spark double, not a decimal
    r = remainder(exp.Mod(this=a.copy(), expression=n.copy()), rules)
    if r is None:
        raise rules.refuse(node, f"arguments of types {rules.type_of(a)} and {rules.type_of(n)}", "pmod of numbers")
    t = r.meta["arrow"]
    if is_integral(t):
        bits = integral_bits(t)
        again = bitwise.wrap(f"CAST({bitwise.wrap('CAST({r} AS HUGEINT) + CAST({n} AS HUGEINT)', bits)} AS HUGEINT)"
                             f" % CAST({{n}} AS HUGEINT)", bits)
    elif is_decimal(t):
        again = f"CAST((CAST({{r}} AS DECIMAL(38,{t.scale})) + {{n}}) % {{n}} AS {duck(t)})"
    else:
        again = f"CAST((CAST({{r}} AS DOUBLE) + CAST({{n}} AS DOUBLE)) % CAST({{n}} AS DOUBLE) AS {duck(t)})"
    return typed(fill(f"CASE WHEN {{r}} < 0 THEN {again} ELSE {{r}} END", r=r, n=n), t)


def _try(op: type):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        a, b = (node.expressions if isinstance(node, exp.Anonymous) else [node.this, node.expression])
        ta, tb = rules.type_of(a), rules.type_of(b)
        fake = op(this=a.copy(), expression=b.copy())
        if op in (exp.Add, exp.Sub, exp.Mul) and is_integral(ta) and is_integral(tb):
            bits = max(integral_bits(ta), integral_bits(tb))
            lo = _MIN[bits]
            v = fill(f"CAST({{a}} AS HUGEINT) {_SYMBOL[op]} CAST({{b}} AS HUGEINT)", a=a, b=b)
            return typed(fill(f"CASE WHEN {{v}} < {lo} OR {{v}} > {-lo - 1} THEN NULL ELSE CAST({{v}} AS {_DUCK[bits]}) "
                              f"END", v=v), _ARROW[bits])
        if op in (exp.Add, exp.Sub) and ta is not None and pa.types.is_date32(ta) and is_integral(tb) \
                and integral_bits(tb) <= 32:
            return typed(fill(f"{{a}} {_SYMBOL[op]} CAST({{b}} AS INTEGER)", a=a, b=b), pa.date32())
        numeric = all(is_integral(t) or is_fractional(t) or is_decimal(t) for t in (ta, tb))
        if not numeric:
            raise rules.refuse(node, f"arguments of types {ta} and {tb}", "try_ arithmetic of numbers")
        rule_of = {exp.Add: arithmetic, exp.Sub: arithmetic, exp.Mul: arithmetic, exp.Div: divide,
                   exp.Mod: remainder}[op]
        out = rule_of(fake, _relaxed(rules))
        if out is None:  # floating-point operands: DuckDB's answer is IEEE's, as Spark's
            out = typed(fake, pa.float32() if pa.float64() not in (ta, tb) and pa.float32() in (ta, tb)
                        else pa.float64())
            for part in out.walk():
                part.meta["internal"] = True
        return out

    return rule


def negative(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``negative``: an integer's minimum wraps to itself (ANSI: ARITHMETIC_OVERFLOW)."""
    x = node.this
    t = rules.type_of(x)
    if is_integral(t):
        bits = integral_bits(t)
        lo = _MIN[bits]
        if rules.conf.ansi:
            return typed(fill(f"CASE WHEN {{x}} = {lo} THEN error('[ARITHMETIC_OVERFLOW] {_DUCK[bits].lower()} "
                              f"overflow. If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this "
                              f"error.') ELSE CAST(-CAST({{x}} AS HUGEINT) AS {_DUCK[bits]}) END", x=x), t)
        return typed(fill(f"CASE WHEN {{x}} = {lo} THEN {{x}} ELSE CAST(-CAST({{x}} AS HUGEINT) AS {_DUCK[bits]}) END",
                          x=x), t)
    if is_fractional(t) or is_decimal(t):
        return typed(fill("-{x}", x=x), t)
    raise rules.refuse(node, f"an argument of type {t}", "negative of a number")


def positive(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``positive``: the number itself (its SQL form is refused: Spark names it ``(+ x)``)."""
    if not (node._meta and node.meta.get("shown")):
        raise rules.refuse(node, "Spark names SQL's positive(x) (+ x), strataflow positive(x)", "x itself")
    x = node.expressions[0]
    t = rules.type_of(x)
    if not (is_integral(t) or is_fractional(t) or is_decimal(t)):
        raise rules.refuse(node, f"an argument of type {t}", "positive of a number")
    return typed(x.copy(), t)


def width_bucket(node: exp.Expression, rules: Rules) -> exp.Expression:
    """Spark's ``WidthBucket.computeBucketNumber``: null for a NaN value, equal or infinite
    bounds, or a bucket count that is not positive; 0 below the range, n + 1 above."""
    v, lo, hi, n = (node.this, node.args.get("min_value"), node.args.get("max_value"), node.args.get("num_buckets"))
    d = {k: fill("CAST({x} AS DOUBLE)", x=e) for k, e in (("v", v), ("a", lo), ("b", hi))}
    body = ("CASE WHEN {v} IS NULL OR {a} IS NULL OR {b} IS NULL OR {n} IS NULL THEN NULL "
            "WHEN {n} <= 0 OR {n} = 9223372036854775807 OR isnan({v}) OR {a} = {b} OR isnan({a}) OR isinf({a}) "
            "OR isnan({b}) OR isinf({b}) THEN NULL "
            "WHEN {a} < {b} THEN (CASE WHEN {v} < {a} THEN 0 WHEN {v} >= {b} THEN {n} + 1 "
            "ELSE CAST(trunc(CAST({n} AS DOUBLE) * ({v} - {a}) / ({b} - {a})) AS BIGINT) + 1 END) "
            "ELSE (CASE WHEN {v} > {a} THEN 0 WHEN {v} <= {b} THEN {n} + 1 "
            "ELSE CAST(trunc(CAST({n} AS DOUBLE) * ({a} - {v}) / ({a} - {b})) AS BIGINT) + 1 END) END")
    return typed(fill(body, n=fill("CAST({x} AS BIGINT)", x=n), **d), pa.int64())


def _unresolved(node: exp.Expression, rules: Rules) -> exp.Expression:
    """A PySpark function name that is no SQL function (``negate``, ``toDegrees``)."""
    raise AnalysisException(f"[UNRESOLVED_ROUTINE] Cannot resolve routine `{node.name}` on search path "
                            f"[`system`.`builtin`, `system`.`session`, `spark_catalog`.`default`].",
                            "UNRESOLVED_ROUTINE")


#: the family's tables, merged by ``registry``: kinds kept as DuckDB computes them, kinds
#: and Anonymous names rewritten, kinds refused (why, instead); the concepts' modules
#: (``elementary``, ``bitwise``, ``hashing``, ``nulls``) add theirs
_PARTS = (elementary, bitwise, hashing, nulls)
KEEP: frozenset[type] = frozenset().union(*(p.KEEP for p in _PARTS))
RULES: dict = {
    exp.Ln: log_rule, exp.Log: log_rule, exp.Negative: negative, exp.WidthBucket: width_bucket,
    exp.SafeAdd: _try(exp.Add), exp.SafeSubtract: _try(exp.Sub), exp.SafeMultiply: _try(exp.Mul),
    exp.SafeDivide: _try(exp.Div),
    **{k: v for p in _PARTS for k, v in p.RULES.items()},
}
ANONYMOUS: dict = {
    "pmod": pmod, "try_mod": _try(exp.Mod), "positive": positive,
    **{name: _unresolved for name in ("negate", "todegrees", "toradians", "bitwise_not", "bitwisenot")},
    **{k: v for p in _PARTS for k, v in p.ANONYMOUS.items()},
}
REFUSE: dict[type, tuple[str, str]] = {k: v for p in _PARTS for k, v in p.REFUSE.items()}
