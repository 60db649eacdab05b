"""Spark's hash functions and random numbers.

``hash`` (Murmur3 x86 32, seed 42) and ``xxhash64`` (XXH64, seed 42) hash each non-null
argument with the hash so far as its seed, over the bytes Spark feeds for its type: an
int (also a tinyint, smallint, date's day number and boolean's 0/1) as 4 bytes, a bigint
(and a timestamp's microseconds) as 8, a float's or double's bits (-0.0 as 0.0, one NaN),
a decimal's unscaled value (a bigint up to 18 digits, else its two's complement bytes), a
string's UTF-8 bytes; computed in Python (``kernels``: numpy arrays for the fixed-width
kinds). Nested types are refused.

``rand``/``randn``/``uniform`` without a seed draw from DuckDB's generator; with a seed,
Spark's answer is its XORShiftRandom sequence seeded by the seed plus the partition's
index, over the partition's rows in Spark's order, which strataflow's partitions do not
reproduce: a seed is refused.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.kernels import bound, crc32_value, hash_batch, python_call
from strataflow.pyspark.sql.semantics.template import fill
from strataflow.pyspark.sql.semantics.types import integral_bits

__all__ = ["KEEP", "RULES", "ANONYMOUS", "REFUSE"]


def _fed(node: exp.Expression, a: exp.Expression, rules: Rules) -> tuple[exp.Expression, tuple[str, int]]:
    """The argument as the kernel reads it, and its (kind, decimal scale)."""
    t = rules.type_of(a)
    bits = integral_bits(t)
    if bits is not None:
        return a, ("long" if bits == 64 else "int", 0)
    if t is None or pa.types.is_null(t):
        return fill("CAST({x} AS INTEGER)", x=a), ("int", 0)
    if pa.types.is_boolean(t):
        return a, ("bool", 0)
    if t == pa.float32():
        return a, ("float", 0)
    if t == pa.float64():
        return a, ("double", 0)
    if pa.types.is_decimal(t):
        return a, ("decimal_long" if t.precision <= 18 else "decimal_bytes", t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        return a, ("bytes", 0)
    if pa.types.is_date32(t):
        return fill("CAST({x} - DATE '1970-01-01' AS INTEGER)", x=a), ("int", 0)
    if pa.types.is_timestamp(t):
        return fill("epoch_us({x})", x=a), ("long", 0)
    raise rules.refuse(node, f"an argument of type {t}", "hash of the fields of atomic types")


def _hash_rule(name: str, xx: bool, returns: str, arrow: pa.DataType):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        if not node.expressions:
            raise rules.refuse(node, "no arguments (Spark requires at least one)", f"{name}(col, ...)")
        if any(isinstance(a, exp.Star) or isinstance(a, exp.Column) and isinstance(a.this, exp.Star)
               for a in node.expressions):
            raise rules.refuse(node, "a * argument (Spark hashes every column, named one by one)",
                               f"{name} of the columns named")
        fed = [_fed(node, a, rules) for a in node.expressions]
        kinds = tuple(k for _, k in fed)
        columns = []
        for a, (kind, _) in fed:  # each value (a fixed-width one with its null replaced) and its null flag
            fixed = kind in ("int", "long", "float", "double", "bool")
            columns += [fill("coalesce({x}, false)" if kind == "bool" else "coalesce({x}, 0)", x=a) if fixed else a,
                        fill("({x} IS NULL)", x=a)]
        return typed(python_call(name, bound(hash_batch, xx, kinds), returns, *columns, vectorized=True), arrow)

    return rule


def crc32_rule(node: exp.Expression, rules: Rules) -> exp.Expression:
    x = node.expressions[0]
    t = rules.type_of(x)
    if t is not None and not (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
                              or pa.types.is_null(t)):
        raise AnalysisException(f"[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"crc32\" due to data type "
                                f"mismatch: the first parameter requires the \"BINARY\" type, however it has the "
                                f"type {t}.", "DATATYPE_MISMATCH")
    return typed(python_call("crc32", crc32_value, "bigint", x), pa.int64())


def _seeded(node: exp.Expression) -> bool:
    if isinstance(node, exp.Uniform):
        return node.args.get("seed") is not None or node.args.get("gen") is not None
    return node.this is not None


def _random_rule(node: exp.Expression, rules: Rules) -> exp.Expression:
    fn = {exp.Rand: "rand", exp.Randn: "randn", exp.Uniform: "uniform"}[type(node)]
    if _seeded(node):
        raise rules.refuse(node, "a seed: Spark's numbers are its XORShiftRandom sequence seeded per partition "
                           "(seed + the partition's index), which strataflow's partitions do not reproduce",
                           f"{fn}() without a seed, or a column of numbers made in Python (F.udf)")
    if isinstance(node, exp.Rand):
        return typed(fill("random()"), pa.float64())
    if isinstance(node, exp.Randn):  # Box-Muller over two uniforms in (0, 1]
        return typed(fill("sqrt(-2.0 * ln(1.0 - random())) * cos(2.0 * pi() * random())"), pa.float64())
    lo, hi = node.this, node.expression
    tl, th = rules.type_of(lo), rules.type_of(hi)
    if integral_bits(tl) and integral_bits(th):
        bits = max(integral_bits(tl), integral_bits(th))
        duck, arrow = ("BIGINT", pa.int64()) if bits == 64 else ("INTEGER", pa.int32())
        return typed(fill(f"CAST(floor({{a}} + random() * ({{b}} - {{a}})) AS {duck})", a=lo, b=hi), arrow)
    return typed(fill("CAST({a} AS DOUBLE) + random() * (CAST({b} AS DOUBLE) - CAST({a} AS DOUBLE))", a=lo, b=hi),
                 pa.float64())


KEEP: frozenset[type] = frozenset()
RULES: dict = {exp.Rand: _random_rule, exp.Randn: _random_rule, exp.Uniform: _random_rule}
ANONYMOUS: dict = {"hash": _hash_rule("hash", False, "int", pa.int32()),
                   "xxhash64": _hash_rule("xxhash64", True, "bigint", pa.int64()),
                   "crc32": crc32_rule}
REFUSE: dict = {}
