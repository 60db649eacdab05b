"""Spark's null-handling functions of the maths family: ``nullifzero`` (null for 0, -0.0
included), ``zeroifnull`` (``coalesce(x, 0)``, of the type Spark widens ``x`` and an int
to: a decimal(p, s) to decimal(max(p - s, 10) + s, s), a float to a double under ANSI), ``equal_null`` (``<=>``),
``nvl2`` and ``isnotnull``.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.template import fill
from strataflow.pyspark.sql.semantics.types import bounded_decimal, duck, integral_bits, is_decimal, is_fractional

__all__ = ["KEEP", "RULES", "ANONYMOUS", "REFUSE"]


def nullifzero(node: exp.Expression, rules: Rules) -> exp.Expression:
    x = node.expressions[0]
    t = rules.type_of(x)
    if not (integral_bits(t) or is_fractional(t) or is_decimal(t)):
        raise rules.refuse(node, f"an argument of type {t}", "nullifzero of a number")
    return typed(fill("CASE WHEN {x} = 0 THEN NULL ELSE {x} END", x=x), t)


def zeroifnull(node: exp.Expression, rules: Rules) -> exp.Expression:
    x = node.expressions[0]
    t = rules.type_of(x)
    if t is None or pa.types.is_null(t):
        t = pa.int32()
    elif integral_bits(t):
        t = pa.int64() if integral_bits(t) == 64 else pa.int32()
    elif is_decimal(t):
        p, s = bounded_decimal(max(t.precision - t.scale, 10) + t.scale, t.scale)
        t = pa.decimal128(p, s)
    elif t == pa.float32() and rules.conf.ansi:
        t = pa.float64()  # ANSI's coercion widens a float and an int to a double
    elif not is_fractional(t):
        raise rules.refuse(node, f"an argument of type {t}", "zeroifnull of a number")
    return typed(fill(f"CAST(coalesce({{x}}, 0) AS {duck(t)})", x=x), t)


def equal_null(node: exp.Expression, rules: Rules) -> exp.Expression:
    return typed(fill("({a} IS NOT DISTINCT FROM {b})", a=node.this, b=node.expression), pa.bool_())


def nvl2(node: exp.Expression, rules: Rules) -> exp.Expression:
    return fill("CASE WHEN {a} IS NOT NULL THEN {b} ELSE {c} END", a=node.this, b=node.args["true"],
                c=node.args.get("false") or exp.Null())


def isnotnull(node: exp.Expression, rules: Rules) -> exp.Expression:
    raise rules.refuse(node, "Spark names SQL's isnotnull(x) (x IS NOT NULL), strataflow isnotnull(x)",
                       "x IS NOT NULL")


KEEP: frozenset[type] = frozenset()
RULES: dict = {exp.EqualNull: equal_null, exp.Nvl2: nvl2}
ANONYMOUS: dict = {"nullifzero": nullifzero, "zeroifnull": zeroifnull, "isnotnull": isnotnull}
REFUSE: dict = {}
