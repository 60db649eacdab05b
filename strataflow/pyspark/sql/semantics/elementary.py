"""Spark's elementary functions of doubles: trigonometric and hyperbolic functions as
Spark's ``MathExpression``s compute them (``atanh`` by Spark's formula over ``log1p``),
reciprocal functions (``cot``, ``csc``,
``sec`` as ``1 / f(x)``: ±inf at ±0.0), ``log1p``/``expm1``/``hypot`` (in Python, libm's,
which DuckDB lacks), ``rint`` (ties to even), ``factorial`` (null outside [0, 20]) and the constants.
Every argument is read as a double, as Spark's implicit cast does.
"""

from __future__ import annotations

import math

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.kernels import expm1_value, hypot_value, log1p_value, python_call
from strataflow.pyspark.sql.semantics.template import fill
from strataflow.pyspark.sql.semantics.types import integral_bits

__all__ = ["KEEP", "RULES", "ANONYMOUS", "REFUSE", "atanh_value", "sql_named"]

_X = "CAST({x} AS DOUBLE)"


def _double(template: str):
    """A rule: ``template`` over the argument read as a double (``{d}``), a double."""

    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        return typed(fill(template.replace("{d}", _X), x=node.this), pa.float64())

    return rule


def atanh_value(v: object) -> float | None:
    """Spark's ``atanh``: ``(log1p(x) - log1p(-x)) / 2`` (NaN outside [-1, 1])."""
    if v is None:
        return None
    x = float(v)

    def lp(y: float) -> float:
        if y != y or y < -1:
            return math.nan
        return -math.inf if y == -1 else math.inf if y == math.inf else math.log1p(y)

    return 0.5 * (lp(x) - lp(-x))


def sql_named(node: exp.Expression, rules: Rules, shown: str) -> None:
    """Refuses a call Spark SQL text names otherwise than strataflow does: a function
    sqlglot has no kind for keeps its written name, where Spark shows ``shown``
    (``EXPM1(x)``); the DataFrame form (``functions``) is named as Spark names it."""
    if isinstance(node, exp.Anonymous) and not (node._meta and node.meta.get("call")) and node.name != shown:
        raise rules.refuse(node, f"Spark names this SQL call {shown}(...), strataflow {node.name}(...)",
                           f"pyspark.sql.functions.{shown.lower()}")


def _python(func, name: str):
    """A rule: ``func`` (Python, row by row) over the arguments read as doubles, a double."""

    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        sql_named(node, rules, name.upper())
        args = list(node.expressions) if isinstance(node, exp.Anonymous) else [node.this]
        return typed(python_call(name, func, "double", *[fill(_X, x=a) for a in args]), pa.float64())

    return rule


def atan2_rule(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``atan2``: Spark adds 0.0 to each argument first (-0.0 is read as 0.0)."""
    return typed(fill("atan2(CAST({y} AS DOUBLE) + 0.0, CAST({x} AS DOUBLE) + 0.0)", y=node.this, x=node.expression),
                 pa.float64())


def factorial_rule(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``factorial``: of an int (a bigint cast to int as Spark's implicit cast does: wrapped,
    or ANSI's CAST_OVERFLOW), null outside [0, 20]."""
    x = node.this
    bits = integral_bits(rules.type_of(x))
    if bits is None:
        raise rules.refuse(node, f"an argument of type {rules.type_of(x)}", "factorial of an integer")
    if bits == 64 and rules.conf.ansi:
        x = fill("CASE WHEN {x} < -2147483648 OR {x} > 2147483647 THEN error('[CAST_OVERFLOW] The value ' || "
                 "CAST({x} AS VARCHAR) || 'L of the type \"BIGINT\" cannot be cast to \"INT\" due to an overflow. "
                 "Use `try_cast` to tolerate overflow and return NULL instead. If necessary set "
                 "\"spark.sql.ansi.enabled\" to \"false\" to bypass this error.') ELSE CAST({x} AS INTEGER) END", x=x)
    elif bits == 64:
        x = fill("CAST((((CAST({x} AS HUGEINT) + 2147483648) % 4294967296) + 4294967296) % 4294967296 - 2147483648 "
                 "AS INTEGER)", x=x)
    return typed(fill("CASE WHEN {x} < 0 OR {x} > 20 THEN NULL ELSE CAST(factorial(CAST({x} AS INTEGER)) AS BIGINT) END",
                      x=x), pa.int64())


def _constant(value: str):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        sql_named(node, rules, "E")
        return typed(fill(f"CAST('{value}' AS DOUBLE)"), pa.float64())

    return rule


KEEP: frozenset[type] = frozenset()
RULES: dict = {
    exp.Acos: _double("acos({d})"), exp.Asin: _double("asin({d})"), exp.Atan: _double("atan({d})"),
    exp.Atan2: atan2_rule,
    exp.Acosh: _double("acosh({d})"), exp.Asinh: _double("asinh({d})"),
    exp.Atanh: _python(atanh_value, "atanh"),
    exp.Cosh: _double("cosh({d})"), exp.Sinh: _double("sinh({d})"), exp.Tanh: _double("tanh({d})"),
    exp.Cot: _double("1.0 / tan({d})"), exp.Csc: _double("1.0 / sin({d})"), exp.Sec: _double("1.0 / cos({d})"),
    exp.Rint: _double("round_even({d}, 0)"),
    exp.Factorial: factorial_rule,
    exp.Pi: _constant(repr(math.pi)),
}
ANONYMOUS: dict = {
    "e": _constant(repr(math.e)),
    "expm1": _python(expm1_value, "expm1"),
    "log1p": _python(log1p_value, "log1p"),
    "hypot": _python(hypot_value, "hypot"),
}
REFUSE: dict = {}
