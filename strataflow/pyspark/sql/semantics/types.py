"""Spark's types of the Arrow types a partition holds, and the DuckDB SQL that builds them."""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

__all__ = ["integral_bits", "is_integral", "is_fractional", "is_decimal", "decimal_of", "duck", "cast_to",
           "sql", "bounded_decimal", "error_call"]

_BITS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}
_DUCK = {8: "TINYINT", 16: "SMALLINT", 32: "INTEGER", 64: "BIGINT"}


def integral_bits(t: pa.DataType | None) -> int | None:
    return _BITS.get(t) if t is not None else None


def is_integral(t: pa.DataType | None) -> bool:
    return integral_bits(t) is not None


def is_decimal(t: pa.DataType | None) -> bool:
    return t is not None and pa.types.is_decimal(t)


def is_fractional(t: pa.DataType | None) -> bool:
    return t is not None and pa.types.is_floating(t)


def decimal_of(t: pa.DataType) -> tuple[int, int] | None:
    """(precision, scale) of a decimal, or of the decimal Spark widens an integral type to."""
    if is_decimal(t):
        return t.precision, t.scale
    return {8: (3, 0), 16: (5, 0), 32: (10, 0), 64: (20, 0)}.get(integral_bits(t))


def bounded_decimal(precision: int, scale: int) -> tuple[int, int]:
    """Spark's ``DecimalType.adjustPrecisionScale`` (precision loss allowed, the default):
    a result wider than 38 digits keeps its integral digits and at least 6 of its scale."""
    if precision <= 38:
        return precision, scale
    int_digits = precision - scale
    min_scale = min(scale, 6)
    return 38, max(38 - int_digits, min_scale)


def duck(t: pa.DataType) -> str:
    """DuckDB's name of an Arrow type."""
    bits = integral_bits(t)
    if bits:
        return _DUCK[bits]
    if is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if t == pa.float32():
        return "FLOAT"
    if t == pa.float64():
        return "DOUBLE"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "VARCHAR"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_date32(t):
        return "DATE"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    if pa.types.is_binary(t):
        return "BLOB"
    raise TypeError(f"no DuckDB type for {t}")


def sql(text: str) -> exp.Expression:
    """A DuckDB SQL fragment as a tree (the pass writes its rewrites in DuckDB's dialect)."""
    import sqlglot

    return sqlglot.parse_one(text, read="duckdb")


def cast_to(node: exp.Expression, duck_type: str) -> exp.Expression:
    c = exp.Cast(this=node.copy(), to=exp.DataType.build(duck_type, dialect="duckdb"))
    c.meta["internal"] = True
    return c


def error_call(error_class: str, message: str) -> exp.Expression:
    """DuckDB's ``error()``: the query fails with Spark's error class in brackets, which
    the engine turns into PySpark's exception (``spark_errors.py``)."""
    e = exp.Anonymous(this="error", expressions=[exp.Literal.string(f"[{error_class}] {message}")])
    e.meta["internal"] = True
    return e
