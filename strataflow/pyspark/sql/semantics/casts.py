"""Casts between Spark's atomic types with Spark's results, or a refusal naming the pair.

Each pair has Spark's non-ANSI value (``lenient``: a string that is not a number is
null, a double out of an int's range saturates, an integer too wide for a narrower type
wraps around) and, for ANSI mode, the condition under which Spark raises instead, with
Spark's error class (CAST_INVALID_INPUT, CAST_OVERFLOW, NUMERIC_VALUE_OUT_OF_RANGE).
``try_cast`` is the lenient value with null wherever ANSI would raise. Timestamps are
instants held as UTC wall clock; the session time zone turns them into local dates and
text and back (``datetime.local``/``from_local``).
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.template import fill
from strataflow.pyspark.sql.semantics.types import integral_bits, is_decimal, is_fractional, is_integral
from strataflow.pyspark.sql.semantics.zones import from_local, local, parse_timestamp

__all__ = ["cast_rule", "spark_kind"]

T = exp.DataType.Type
_KIND = {T.BOOLEAN: "boolean", T.TINYINT: "tinyint", T.SMALLINT: "smallint", T.INT: "int", T.BIGINT: "bigint",
         T.FLOAT: "float", T.DOUBLE: "double", T.DECIMAL: "decimal", T.TEXT: "string", T.VARCHAR: "string",
         T.DATE: "date", T.TIMESTAMPTZ: "timestamp", T.TIMESTAMP: "timestamp", T.TIMESTAMPLTZ: "timestamp",
         T.BINARY: "binary", T.VARBINARY: "binary", T.BLOB: "binary"}
_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_DUCK_INT = {8: "TINYINT", 16: "SMALLINT", 32: "INTEGER", 64: "BIGINT"}
_ARROW_INT = {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}
_NUMERIC = {"tinyint", "smallint", "int", "bigint", "float", "double", "decimal"}
_WS = r"^[\x00-\x20]+|[\x00-\x20]+$"


def spark_kind(t: pa.DataType | None) -> str | None:
    """Spark's name of an Arrow type's kind (``decimal`` for any decimal)."""
    if t is None:
        return None
    bits = integral_bits(t)
    if bits:
        return {8: "tinyint", 16: "smallint", 32: "int", 64: "bigint"}[bits]
    if t == pa.float32():
        return "float"
    if t == pa.float64():
        return "double"
    if is_decimal(t):
        return "decimal"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is None or True else "timestamp"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_null(t):
        return "void"
    return None


#: pairs Spark refuses to analyse (DATATYPE_MISMATCH), in either mode
_INVALID = {("binary", k) for k in ("boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal",
                                    "date", "timestamp")} | \
           {(k, "date") for k in ("boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal")} | \
           {("date", "binary")} | \
           {(k, "binary") for k in ("boolean", "float", "double", "decimal", "date", "timestamp")} | \
           {("timestamp", "binary")}
#: pairs valid only without ANSI
_INVALID_ANSI = {(k, "binary") for k in ("tinyint", "smallint", "int", "bigint")} | \
                {("date", k) for k in ("boolean", "tinyint", "smallint", "int", "bigint", "float", "double",
                                       "decimal")} | \
                {("boolean", "timestamp"), ("timestamp", "boolean")}


def _mismatch(src: str, dst: str, x: exp.Expression) -> AnalysisException:
    return AnalysisException(f"[DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION] Cannot resolve \"CAST({x.sql()} AS "
                             f"{dst.upper()})\" due to data type mismatch: cannot cast \"{src.upper()}\" to "
                             f"\"{dst.upper()}\".", "DATATYPE_MISMATCH")


def _target(to: exp.DataType) -> tuple[str | None, int, int]:
    kind = _KIND.get(to.this)
    if kind == "decimal":
        params = [int(e.name if isinstance(e, exp.DataTypeParam) else e.sql()) for e in to.expressions]
        p, s = (params + [10, 0])[:2] if params else (10, 0)
        return kind, p, s
    return kind, 0, 0


def cast_rule(node: exp.Expression, rules: Rules) -> exp.Expression:
    """A cast (``Column.cast``/``CAST``: ANSI-dependent; ``try_cast``/``TRY_CAST``: null
    on failure) with Spark's result."""
    x = node.this
    dst, p, s = _target(node.to)
    t = rules.type_of(x)
    src = spark_kind(t)
    # try_cast / TRY_CAST; sqlglot reads Spark's CAST as a TryCast too, without ``safe``
    trying = isinstance(node, exp.TryCast) and bool(node.args.get("safe") or node.meta.get("try_cast"))
    strict = rules.conf.ansi and not trying
    if dst is None or src is None:
        raise rules.refuse(node, f"a cast from {t} to {node.to.sql('spark')}", "a cast between Spark's atomic types")
    if src == "void":
        return typed(fill(f"CAST(NULL AS {_duck(dst, p, s)})"), _arrow(dst, p, s))
    if (src, dst) in _INVALID or ((src, dst) in _INVALID_ANSI and rules.conf.ansi and not trying):
        raise _mismatch(src, dst, x)
    built = _pair(src, dst, p, s, x, t, rules)
    if built is None:
        raise rules.refuse(node, f"a cast from {src} to {dst}", "cast through string or double")
    lenient, valid, error_class = built
    if valid is None or not (strict or trying):
        out = lenient
    elif trying:
        out = fill("CASE WHEN {v} THEN {l} ELSE NULL END", v=valid, l=lenient)
    else:
        out = fill(f"CASE WHEN {{x}} IS NOT NULL AND NOT ({{v}}) THEN error('[{error_class}] The value of type "
                   f"\"{src.upper()}\" cannot be cast to \"{dst.upper()}\". Use `try_cast` to tolerate it and "
                   f"return NULL instead.') ELSE {{l}} END", x=x, v=valid, l=lenient)
    if isinstance(x, (exp.Literal, exp.Null, exp.Boolean)) or (isinstance(x, exp.Neg) and isinstance(x.this, exp.Literal)):
        out = _folded(out, dst, p, s)
    return typed(out, _arrow(dst, p, s))


def _folded(out: exp.Expression, dst: str, p: int, s: int) -> exp.Expression:
    """A cast of a literal, evaluated once as the plan is made (``CAST('1998-09-02' AS DATE)``
    must stay a constant, or DuckDB neither folds it nor prunes Parquet row groups with it).
    A value that fails to convert keeps the expression: the query raises as Spark's would."""
    if dst == "binary":
        return out
    from strataflow.pyspark.sql.dialect import to_sql
    from strataflow.pyspark.sql.engine import run_query

    try:
        value = run_query(f"SELECT CAST(({to_sql(out)}) AS VARCHAR) AS v", {}).column(0)[0].as_py()
    except Exception:  # noqa: BLE001 - an error Spark raises too, when the query runs
        return out
    if value is None:
        return fill(f"CAST(NULL AS {_duck(dst, p, s)})")
    text = value.replace("'", "''")
    return fill(f"CAST('{text}' AS {_duck(dst, p, s)})")


def _duck(kind: str, p: int, s: int) -> str:
    return {"boolean": "BOOLEAN", "tinyint": "TINYINT", "smallint": "SMALLINT", "int": "INTEGER", "bigint": "BIGINT",
            "float": "FLOAT", "double": "DOUBLE", "decimal": f"DECIMAL({p},{s})", "string": "VARCHAR",
            "date": "DATE", "timestamp": "TIMESTAMP", "binary": "BLOB"}[kind]


def _arrow(kind: str, p: int, s: int) -> pa.DataType:
    return {"boolean": pa.bool_(), "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(),
            "bigint": pa.int64(), "float": pa.float32(), "double": pa.float64(), "string": pa.string(),
            "date": pa.date32(), "timestamp": pa.timestamp("us"), "binary": pa.binary()}.get(kind) \
        or pa.decimal128(p, s)


def _wrap(v: str, bits: int) -> str:
    lo, span = -(1 << (bits - 1)), 1 << bits
    return f"CAST((((CAST({v} AS HUGEINT) - ({lo})) % {span}) + {span}) % {span} + ({lo}) AS {_DUCK_INT[bits]})"


def _in_range(v: str, bits: int) -> str:
    lo = -(1 << (bits - 1))
    return f"({v} >= {lo} AND {v} <= {-lo - 1})"


def _pair(src: str, dst: str, p: int, s: int, x: exp.Expression, t: pa.DataType,
          rules: Rules) -> tuple[exp.Expression, exp.Expression | None, str] | None:
    f = lambda text, **kw: fill(text, x=x, **kw)  # noqa: E731
    if src == dst and dst != "decimal":
        return f("{x}"), None, ""
    if src == "date" and dst in _NUMERIC | {"boolean"}:
        return fill(f"CAST(NULL AS {_duck(dst, p, s)})"), None, ""  # Spark without ANSI: null
    if dst == "string":
        if src in ("tinyint", "smallint", "int", "bigint", "boolean", "decimal", "string"):
            return f("CAST({x} AS VARCHAR)"), None, ""
        if src in ("float", "double"):
            return f("CASE WHEN isnan({x}) THEN 'NaN' WHEN {x} = 'inf'::DOUBLE THEN 'Infinity' "
                     "WHEN {x} = '-inf'::DOUBLE THEN '-Infinity' WHEN {x} = 0 OR (abs({x}) >= 0.001 AND "
                     "abs({x}) < 10000000) THEN CAST({x} AS VARCHAR) ELSE error('[STRATAFLOW_UNSUPPORTED] "
                     "strataflow does not run `cast` of a floating-point number outside [1e-3, 1e7) to string: "
                     "Java writes it in its own exponent form. Instead: format_number or cast to decimal "
                     "first.') END"), None, ""
        if src == "date":
            return f("CAST({x} AS VARCHAR)"), None, ""
        if src == "timestamp":
            return fill("CAST({l} AS VARCHAR)", l=local(x, rules)), None, ""
        if src == "binary":
            return f("CASE WHEN {x} IS NULL THEN NULL WHEN try(decode({x})) IS NULL THEN "
                     "error('[STRATAFLOW_UNSUPPORTED] strataflow does not run `cast` of binary that is not UTF-8 "
                     "to string: Spark replaces the bad bytes. Instead: decode it with a UDF.') "
                     "ELSE decode({x}) END"), None, ""
        return None
    if dst in _BITS:
        bits = _BITS[dst]
        if src in _BITS:
            if bits >= _BITS[src]:
                return f(f"CAST({{x}} AS {_DUCK_INT[bits]})"), None, ""
            return f(_wrap("{x}", bits)), f(_in_range("{x}", bits)), "CAST_OVERFLOW"
        if src == "boolean":
            return f(f"CAST({{x}} AS {_DUCK_INT[bits]})"), None, ""
        if src in ("float", "double"):
            wide = 64 if bits == 64 else 32  # Scala's toLong / toInt saturate, then narrow types wrap
            lo, hi = -(1 << (wide - 1)), (1 << (wide - 1)) - 1
            sat = (f"(CASE WHEN isnan({{x}}) THEN 0 WHEN {{x}} >= {hi} THEN {hi} WHEN {{x}} <= {lo} THEN {lo} "
                   f"ELSE CAST(trunc({{x}}) AS HUGEINT) END)")
            lenient = sat if bits == wide else _wrap(sat, bits)
            lenient = lenient if bits != wide else f"CAST({sat} AS {_DUCK_INT[bits]})"
            valid = f(f"NOT isnan({{x}}) AND NOT isinf({{x}}) AND {_in_range('trunc({x})', bits)}")
            return f(lenient), valid, "CAST_OVERFLOW"
        if src == "decimal":
            return (f(_wrap("CAST(trunc({x}) AS HUGEINT)", bits)), f(_in_range("trunc({x})", bits)),
                    "CAST_OVERFLOW")
        if src == "string":
            trimmed = f"regexp_replace({{x}}, '{_WS}', '', 'g')"
            lenient = (f"CASE WHEN regexp_full_match({trimmed}, '[+-]?[0-9]+(\\.[0-9]*)?') THEN "
                       f"TRY_CAST(regexp_extract({trimmed}, '^[+-]?[0-9]+') AS {_DUCK_INT[bits]}) ELSE NULL END")
            valid = f(f"regexp_full_match({trimmed}, '[+-]?[0-9]+') AND TRY_CAST({trimmed} AS {_DUCK_INT[bits]}) "
                      f"IS NOT NULL")
            return f(lenient), valid, "CAST_INVALID_INPUT"
        if src == "timestamp":
            secs = "(CAST(floor(epoch_us({x}) / 1000000) AS HUGEINT))"
            if bits == 64:
                return f(f"CAST({secs} AS BIGINT)"), None, ""
            return f(f"CASE WHEN {_in_range(secs, bits)} THEN CAST({secs} AS {_DUCK_INT[bits]}) ELSE NULL END"), \
                f(_in_range(secs, bits)), "CAST_OVERFLOW"
        return None
    if dst in ("float", "double"):
        if src in _BITS or src == "boolean" or src == "decimal":
            return f(f"CAST({{x}} AS {dst.upper()})"), None, ""
        if src == "double" and dst == "float":
            return f("CASE WHEN abs({x}) > 3.4028234663852886e38 AND NOT isinf({x}) THEN "
                     "CAST(sign({x}) * 'inf'::DOUBLE AS FLOAT) ELSE CAST({x} AS FLOAT) END"), None, ""
        if src == "float":
            return f("CAST({x} AS DOUBLE)"), None, ""
        if src == "string":
            trimmed = f"regexp_replace({{x}}, '{_WS}', '', 'g')"
            number = "[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?[dDfF]?"
            special = "[+-]?(inf|infinity|nan)"
            lenient = (f"CASE WHEN regexp_full_match({trimmed}, '{number}') THEN "
                       f"CAST(rtrim({trimmed}, 'dDfF') AS {dst.upper()}) "
                       f"WHEN regexp_full_match(lower({trimmed}), '{special}') THEN "
                       f"CAST(lower({trimmed}) AS {dst.upper()}) ELSE NULL END")
            return f(lenient), f(f"({lenient}) IS NOT NULL"), "CAST_INVALID_INPUT"
        if src == "timestamp":
            return f(f"CAST(epoch_us({{x}}) / 1000000.0 AS {dst.upper()})"), None, ""
        return None
    if dst == "decimal":
        target = f"DECIMAL({p},{s})"
        if src in _BITS or src == "decimal" or src == "boolean":
            lenient = f(f"TRY_CAST({{x}} AS {target})")
            return lenient, fill("{l} IS NOT NULL", l=lenient), "NUMERIC_VALUE_OUT_OF_RANGE"
        if src in ("float", "double"):
            lenient = f(f"TRY_CAST(CAST(CAST({{x}} AS DOUBLE) AS VARCHAR) AS {target})")
            return lenient, fill("{l} IS NOT NULL", l=lenient), "NUMERIC_VALUE_OUT_OF_RANGE"
        if src == "string":
            trimmed = f"regexp_replace({{x}}, '{_WS}', '', 'g')"
            number = "[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?"
            lenient = f(f"CASE WHEN regexp_full_match({trimmed}, '{number}') THEN TRY_CAST({trimmed} AS {target}) "
                        f"ELSE NULL END")
            return lenient, fill("{l} IS NOT NULL", l=lenient), "CAST_INVALID_INPUT"
        return None
    if dst == "boolean":
        if src in _BITS or src in ("decimal", "float", "double"):
            return f("{x} <> 0"), None, ""
        if src == "string":
            trimmed = f"lower(regexp_replace({{x}}, '{_WS}', '', 'g'))"
            lenient = f(f"CASE WHEN {trimmed} IN ('t', 'true', 'y', 'yes', '1') THEN true "
                        f"WHEN {trimmed} IN ('f', 'false', 'n', 'no', '0') THEN false ELSE NULL END")
            return lenient, fill("{l} IS NOT NULL", l=lenient), "CAST_INVALID_INPUT"
        return None
    if dst == "date":
        if src == "string":
            trimmed = f"regexp_replace({{x}}, '{_WS}', '', 'g')"
            pattern = "^([0-9]{4})(-([0-9]{1,2})(-([0-9]{1,2})([T ].*)?)?)?$"
            lenient = f(f"CASE WHEN regexp_full_match({trimmed}, '{pattern}') THEN try(make_date("
                        f"CAST(regexp_extract({trimmed}, '{pattern}', 1) AS BIGINT), "
                        f"CAST(coalesce(nullif(regexp_extract({trimmed}, '{pattern}', 3), ''), '1') AS BIGINT), "
                        f"CAST(coalesce(nullif(regexp_extract({trimmed}, '{pattern}', 5), ''), '1') AS BIGINT))) "
                        f"ELSE NULL END")
            return lenient, fill("{l} IS NOT NULL", l=lenient), "CAST_INVALID_INPUT"
        if src == "timestamp":
            return fill("CAST({l} AS DATE)", l=local(x, rules)), None, ""
        return None
    if dst == "timestamp":
        if src == "date":
            return from_local(f("CAST({x} AS TIMESTAMP)"), rules), None, ""
        if src in _BITS:
            return f("CASE WHEN abs(CAST({x} AS HUGEINT)) > 9223372036854 THEN error('[STRATAFLOW_UNSUPPORTED] "
                     "strataflow does not run `cast` to timestamp of seconds beyond the year 294247. Instead: "
                     "filter them first.') ELSE make_timestamp(CAST({x} AS BIGINT) * 1000000) END"), None, ""
        if src in ("float", "double", "decimal"):
            valid = f("NOT isnan(CAST({x} AS DOUBLE)) AND NOT isinf(CAST({x} AS DOUBLE))")
            return f("CASE WHEN isnan(CAST({x} AS DOUBLE)) OR isinf(CAST({x} AS DOUBLE)) THEN NULL "
                     "WHEN abs(CAST({x} AS DOUBLE)) > 9223372036854 THEN error('[STRATAFLOW_UNSUPPORTED] strataflow "
                     "does not run `cast` to timestamp of seconds beyond the year 294247. Instead: filter them "
                     "first.') ELSE make_timestamp(CAST(trunc(CAST({x} AS DECIMAL(38,6)) * 1000000) AS BIGINT)) "
                     "END"), valid, "CAST_INVALID_INPUT"
        if src == "string":
            lenient = parse_timestamp(x, rules)
            return lenient, fill("{l} IS NOT NULL", l=lenient), "CAST_INVALID_INPUT"
        return None
    if dst == "binary":
        if src == "string":
            return f("encode({x})"), None, ""
        return None
    return None
