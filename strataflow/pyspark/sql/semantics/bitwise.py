"""Bits and bases as Spark computes them: shifts of an int or bigint with Java's shift
distance (taken modulo the width) and wrap-around, ``bit_count`` of the value widened to a
bigint (a negative int counts its sign-extended bits), ``bit_get`` (an error outside the
type's width), ``~``, ``&``, ``|``, ``^`` of integers, ``bin`` (two's complement),
``conv`` (Spark's ``NumberConverter``) and ``unhex`` (an odd length padded with a 0,
null for a non-hexadecimal string).
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import SparkRuntimeException
from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.elementary import sql_named
from strataflow.pyspark.sql.semantics.kernels import OVERFLOW, bound, conv_value, python_call
from strataflow.pyspark.sql.semantics.template import fill
from strataflow.pyspark.sql.semantics.types import integral_bits, is_integral

__all__ = ["wrap", "KEEP", "RULES", "ANONYMOUS", "REFUSE"]

_DUCK = {8: "TINYINT", 16: "SMALLINT", 32: "INTEGER", 64: "BIGINT"}
_ARROW = {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}


def wrap(value: str, bits: int) -> str:
    """SQL text of a HUGEINT ``value`` wrapped into a signed integer of ``bits`` (Java's)."""
    lo, span = -(1 << (bits - 1)), 1 << bits
    return f"CAST((((CAST({value} AS HUGEINT) - ({lo})) % {span}) + {span}) % {span} + ({lo}) AS {_DUCK[bits]})"


def _shift_bits(node: exp.Expression, rules: Rules) -> int:
    bits = integral_bits(rules.type_of(node.this))
    if bits is None:
        raise rules.refuse(node, f"an argument of type {rules.type_of(node.this)}", "a shift of an int or bigint")
    return 64 if bits == 64 else 32


def shift_left(node: exp.Expression, rules: Rules) -> exp.Expression:
    bits = _shift_bits(node, rules)
    out = wrap(f"CAST({{x}} AS HUGEINT) * (CAST(1 AS HUGEINT) << (CAST({{n}} AS INTEGER) & {bits - 1}))", bits)
    return typed(fill(out, x=node.this, n=node.expression), _ARROW[bits])


def shift_right(node: exp.Expression, rules: Rules) -> exp.Expression:
    bits = _shift_bits(node, rules)
    return typed(fill(f"CAST(CAST({{x}} AS BIGINT) >> (CAST({{n}} AS INTEGER) & {bits - 1}) AS {_DUCK[bits]})",
                      x=node.this, n=node.expression), _ARROW[bits])


def shift_right_unsigned(node: exp.Expression, rules: Rules) -> exp.Expression:
    sql_named(node, rules, "shiftrightunsigned")
    x, n = node.expressions[0], node.expressions[1]
    bits = integral_bits(rules.type_of(x))
    if bits is None:
        raise rules.refuse(node, f"an argument of type {rules.type_of(x)}", "a shift of an int or bigint")
    bits = 64 if bits == 64 else 32
    mask = (1 << bits) - 1
    out = wrap(f"((CAST({{x}} AS HUGEINT) & {mask}) >> (CAST({{n}} AS INTEGER) & {bits - 1}))", bits)
    return typed(fill(out, x=x, n=n), _ARROW[bits])


def bitwise_not(node: exp.Expression, rules: Rules) -> exp.Expression:
    t = rules.type_of(node.this)
    if not is_integral(t):
        raise rules.refuse(node, f"an argument of type {t}", "~ of an integer")
    return typed(fill(f"CAST(~CAST({{x}} AS BIGINT) AS {_DUCK[integral_bits(t)]})", x=node.this), t)


def bitwise_binary(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``&``, ``|``, ``^`` of integers: of the wider type."""
    ta, tb = rules.type_of(node.this), rules.type_of(node.expression)
    if not (is_integral(ta) and is_integral(tb)):
        raise rules.refuse(node, f"arguments of types {ta} and {tb}", "a bitwise operator on integers")
    bits = max(integral_bits(ta), integral_bits(tb))
    fn = {exp.BitwiseAnd: "({a} & {b})", exp.BitwiseOr: "({a} | {b})", exp.BitwiseXor: "xor({a}, {b})"}[type(node)]
    body = fn.format(a="CAST({a} AS BIGINT)", b="CAST({b} AS BIGINT)")
    return typed(fill(f"CAST({body} AS {_DUCK[bits]})", a=node.this, b=node.expression), _ARROW[bits])


def bit_count(node: exp.Expression, rules: Rules) -> exp.Expression:
    t = rules.type_of(node.this)
    if t is not None and pa.types.is_boolean(t):
        return typed(fill("CAST(CASE WHEN {x} THEN 1 WHEN NOT {x} THEN 0 END AS INTEGER)", x=node.this), pa.int32())
    if not is_integral(t):
        raise rules.refuse(node, f"an argument of type {t}", "bit_count of an integer or boolean")
    return typed(fill("CAST(bit_count(CAST({x} AS BIGINT)) AS INTEGER)", x=node.this), pa.int32())


def bit_get(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``bit_get``/``getbit``: a tinyint; a position outside the type's width is Spark's
    INVALID_PARAMETER_VALUE.BIT_POSITION_RANGE error."""
    x, pos = node.this, node.expression
    bits = integral_bits(rules.type_of(x))
    if bits is None:
        raise rules.refuse(node, f"an argument of type {rules.type_of(x)}", "bit_get of an integer")
    fn = str(node.meta.get("fn") or node.meta.get("written") or "bit_get") if node._meta else "bit_get"
    message = (f"[INVALID_PARAMETER_VALUE.BIT_POSITION_RANGE] The value of parameter(s) `pos` in `{fn}` is invalid: "
               f"expects an integer value in [0, {bits}), but got ")
    if isinstance(pos, exp.Literal) and pos.is_int or isinstance(pos, exp.Neg) and isinstance(pos.this, exp.Literal):
        value = int(pos.this) if isinstance(pos, exp.Literal) else -int(pos.this.this)
        if not 0 <= value < bits:  # the error Spark raises at the first row, raised as the plan is made
            raise SparkRuntimeException(f"{message}{value}.", "INVALID_PARAMETER_VALUE")
    escaped = message.replace("'", "''")
    return typed(fill(f"CASE WHEN {{x}} IS NULL OR {{p}} IS NULL THEN NULL WHEN {{p}} < 0 OR {{p}} >= {bits} "
                      f"THEN error('{escaped}' || CAST({{p}} AS VARCHAR) || '.') "
                      f"ELSE CAST((CAST({{x}} AS BIGINT) >> CAST({{p}} AS INTEGER)) & 1 AS TINYINT) END",
                      x=x, p=pos), pa.int8())


def bin_rule(node: exp.Expression, rules: Rules) -> exp.Expression:
    x = node.expressions[0]
    if not is_integral(rules.type_of(x)):
        raise rules.refuse(node, f"an argument of type {rules.type_of(x)}", "bin(CAST(x AS BIGINT))")
    return typed(fill("bin(CAST({x} AS BIGINT))", x=x), pa.string())


def conv_rule(node: exp.Expression, rules: Rules) -> exp.Expression:
    num, from_base, to_base = node.expressions
    args = [fill("CAST({x} AS VARCHAR)", x=num), fill("CAST({x} AS INTEGER)", x=from_base),
            fill("CAST({x} AS INTEGER)", x=to_base)]
    out = python_call("conv", bound(conv_value, rules.conf.ansi), "string", *args)
    if rules.conf.ansi:  # the kernel marks an overflow; the query fails with Spark's error there
        out = fill(f"CASE WHEN {{r}} = '{OVERFLOW}' THEN error('[ARITHMETIC_OVERFLOW] Overflow in function conv(). "
                   f"If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error.') "
                   f"ELSE {{r}} END", r=out)
    return typed(out, pa.string())


def unhex_rule(node: exp.Expression, rules: Rules) -> exp.Expression:
    return typed(fill("CASE WHEN regexp_full_match(CAST({x} AS VARCHAR), '[0-9a-fA-F]*') THEN "
                      "unhex(CASE WHEN length(CAST({x} AS VARCHAR)) % 2 = 1 THEN '0' || CAST({x} AS VARCHAR) "
                      "ELSE CAST({x} AS VARCHAR) END) END", x=node.this), pa.binary())


KEEP: frozenset[type] = frozenset()
RULES: dict = {
    exp.BitwiseLeftShift: shift_left, exp.BitwiseRightShift: shift_right, exp.BitwiseNot: bitwise_not,
    exp.BitwiseAnd: bitwise_binary, exp.BitwiseOr: bitwise_binary, exp.BitwiseXor: bitwise_binary,
    exp.BitwiseCount: bit_count, exp.Getbit: bit_get, exp.Unhex: unhex_rule,
}
ANONYMOUS: dict = {"shiftrightunsigned": shift_right_unsigned, "bin": bin_rule, "conv": conv_rule}
REFUSE: dict = {}
