"""Java's number and string formatting as Spark uses it, in DuckDB SQL.

``format_number``: Java's DecimalFormat ``#,##0.00`` with HALF_EVEN rounding of the
value itself — a decimal's digits, or a double's exact binary value (split into a product
and its exact error, Dekker's two-product, so a tie is told from a near-tie); a double
too large for that is written from its shortest digits, as Java's ``FloatingDecimal``
gives them, and refused where those would need rounding.

``format_string``/``printf``: ``java.util.Formatter`` for ``%s`` (strings, integers,
booleans), ``%d``, ``%x``, ``%f`` (HALF_UP of a double's shortest digits, as Java's),
``%%`` and ``%n``, with a width, ``-``, ``0`` and ``,``; other conversions and flags (and
``%f`` of a decimal, which Spark fails on) are refused. Java pads to a width in UTF-16 units, so a character outside the Basic
Multilingual Plane counts twice, and writes a null argument as ``null``.
"""

from __future__ import annotations

import re

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.substrings import unsupported
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["RULES", "ANONYMOUS"]

_INTS = (pa.int8(), pa.int16(), pa.int32(), pa.int64())


def _grouped(digits: str) -> str:
    """SQL text: a string of digits with a comma every three from the right."""
    first = f"(CASE WHEN length({digits}) % 3 = 0 THEN 3 ELSE length({digits}) % 3 END)"
    return f"(substr({digits}, 1, {first}) || regexp_replace(substr({digits}, {first} + 1), '(\\d{{3}})', ',\\1', 'g'))"


def _with_fraction(int_digits: str, frac_digits: str, d: int) -> str:
    return _grouped(int_digits) + (f" || '.' || {frac_digits}" if d > 0 else "")


def _split(v: float) -> tuple[float, float]:
    c = 134217729.0 * v
    hi = c - (c - v)
    return hi, v - hi


def _number_double(d: int) -> str:
    """SQL text over ``{x}`` (a double): format_number's digits without the sign."""
    p = float(10 ** d)
    ph, pl = _split(p)
    a = "abs({x})"
    c = f"(134217729.0 * {a})"
    ah = f"({c} - ({c} - {a}))"
    al = f"({a} - {ah})"
    prod = f"({a} * {p!r})"
    err = f"((({ah} * {ph!r} - {prod}) + {ah} * {pl!r} + {al} * {ph!r}) + {al} * {pl!r})"
    fl = f"floor({prod})"
    fr = f"({prod} - {fl})"
    n = (f"CAST({fl} + CASE WHEN {fr} > 0.5 THEN 1 WHEN {fr} < 0.5 THEN 0 WHEN {err} > 0 THEN 1 WHEN {err} < 0 "
         f"THEN 0 WHEN CAST({fl} AS HUGEINT) % 2 = 0 THEN 0 ELSE 1 END AS HUGEINT)")
    small = _with_fraction(f"CAST({n} // {10 ** d} AS VARCHAR)", f"lpad(CAST({n} % {10 ** d} AS VARCHAR), {d}, '0')", d)
    # the shortest digits of a large value: int part, fraction, exponent
    t = f"CAST({a} AS VARCHAR)"
    rx = "'^([0-9]+)(?:\\.([0-9]+))?(?:e([+-][0-9]+))?$'"
    digits = f"(regexp_extract({t}, {rx}, 1) || regexp_extract({t}, {rx}, 2))"
    point = f"(length(regexp_extract({t}, {rx}, 1)) + coalesce(TRY_CAST(regexp_extract({t}, {rx}, 3) AS INTEGER), 0))"
    ltrimmed = f"coalesce(nullif(ltrim(rpad({digits}, CAST(greatest({point}, 1) AS INTEGER), '0'), '0'), ''), '0')"
    whole = f"(CASE WHEN {point} >= length({digits}) THEN {ltrimmed} ELSE NULL END)"
    frac_len = f"(length({digits}) - {point})"
    bad = unsupported("format_number", "a double of 15 or more digits whose rounding Java does on its own digits",
                      "format_number of the value cast to decimal(38, 2)")
    large_int = f"ltrim(substr({digits}, 1, {point}), '0')"
    large_frac = f"rpad(substr({digits}, {point} + 1), {d}, '0')"
    large = (f"CASE WHEN {point} >= length({digits}) THEN {_with_fraction(whole, repr('0' * d), d)} "
             f"WHEN {frac_len} <= {d} AND {point} > 0 THEN "
             f"{_with_fraction(large_int, large_frac, d)} ELSE {bad} END")
    # below 1e-3 Java's digits of a double come by another path, and a tie in them is not rounded as here
    tie = (f"{a} < 1e-3 AND {a} > 0 AND (CAST(CAST({a} AS VARCHAR) AS DECIMAL(38, 30)) * {10 ** d}) % 1 = 0.5")
    tiny = unsupported("format_number", "a double below 0.001 whose shortest digits end in a 5 at the rounding place",
                       "format_number of the value cast to decimal")
    return (f"CASE WHEN isnan({{x}}) THEN 'NaN' WHEN isinf({{x}}) THEN '∞' WHEN {tie} THEN {tiny} "
            f"WHEN {a} * {p!r} < 1e15 THEN {small} "
            f"ELSE {large} END")


def _number_decimal(scale: int, d: int) -> str:
    """SQL text over ``{x}`` (a decimal of ``scale``): format_number's digits without the sign."""
    u = f"abs(CAST({{x}} * {10 ** scale} AS HUGEINT))"
    if d >= scale:
        return _with_fraction(f"CAST({u} // {10 ** scale} AS VARCHAR)",
                              f"rpad(lpad(CAST({u} % {10 ** scale} AS VARCHAR), {scale}, '0'), {d}, '0')"
                              if scale else repr("0" * d), d)
    div = 10 ** (scale - d)
    q, r = f"({u} // {div})", f"({u} % {div})"
    n = f"({q} + CASE WHEN 2 * {r} > {div} THEN 1 WHEN 2 * {r} < {div} THEN 0 WHEN {q} % 2 = 0 THEN 0 ELSE 1 END)"
    return _with_fraction(f"CAST({n} // {10 ** d} AS VARCHAR)", f"lpad(CAST({n} % {10 ** d} AS VARCHAR), {d}, '0')"
                          if d else "''", d)


def _format_number(node: exp.Expression, rules: Rules) -> exp.Expression:
    x, dn = node.expressions[:2]
    if isinstance(dn, exp.Neg) and isinstance(dn.this, exp.Literal) and dn.this.is_int:
        return typed(fill("CAST(NULL AS VARCHAR)"), pa.string())
    if not (isinstance(dn, exp.Literal) and dn.is_int):
        raise rules.refuse(node, "a scale that is not a literal integer (or a DecimalFormat pattern)",
                           "format_number(col, d) with a literal d")
    d = int(dn.this)
    t = rules.type_of(x)
    if t in _INTS:
        body = f"CASE WHEN {{x}} < 0 THEN '-' ELSE '' END || " + _with_fraction(
            "CAST(abs(CAST({x} AS HUGEINT)) AS VARCHAR)", repr("0" * d), d)
    elif t is not None and pa.types.is_decimal(t):
        body = f"CASE WHEN {{x}} < 0 THEN '-' ELSE '' END || " + _number_decimal(t.scale, d)
    elif t in (pa.float64(), pa.float32()):
        if d > 15:
            raise rules.refuse(node, f"{d} decimal places of a double", "format_number with at most 15 places")
        xd = fill("CAST({x} AS DOUBLE)", x=x)
        body = "CASE WHEN signbit({x}) AND NOT isnan({x}) THEN '-' ELSE '' END || (" + _number_double(d) + ")"
        return typed(fill(f"CASE WHEN {{x}} IS NULL THEN NULL ELSE {body} END", x=xd), pa.string())
    else:
        raise rules.refuse(node, f"a value of type {t}", "format_number of a number")
    return typed(fill(f"CASE WHEN {{x}} IS NULL THEN NULL ELSE {body} END", x=x), pa.string())


_SPEC = re.compile(r"%(\d+\$)?([-#+ 0,(<]*)(\d+)?(\.\d+)?([a-zA-Z%])")
_NON_BMP = "'[^\\x{10000}-\\x{10FFFF}]'"


def _pad(text: str, width: int | None, left: bool) -> str:
    if not width:
        return text
    units = f"(length({text}) + length(regexp_replace({text}, {_NON_BMP}, '', 'g')))"
    pad = f"repeat(' ', greatest({width} - {units}, 0))"
    return f"({text} || {pad})" if left else f"({pad} || {text})"


def _piece(node: exp.Expression, rules: Rules, spec: re.Match, v: exp.Expression, hole: str) -> str:
    index, flags, width, precision, conv = spec.groups()
    w = int(width) if width else None
    left = "-" in flags
    if index or set(flags) - set("-0,") or ("0" in flags and (left or not w)):
        raise rules.refuse(node, f"the format specifier '{spec.group(0)}'", "%s, %d, %x, %f with a width, - or 0")
    t = rules.type_of(v)
    h = "{" + hole + "}"
    word = "'NULL'" if conv.isupper() else "'null'"  # an upper-case conversion writes its whole text in capitals
    null = _pad(word if not precision else f"left({word}, {precision[1:]})", w, left)
    if conv == "s" and not precision and "0" not in flags and "," not in flags:
        if not (t is None or pa.types.is_string(t) or pa.types.is_boolean(t) or t in _INTS or pa.types.is_null(t)):
            raise rules.refuse(node, f"%s of a value of type {t} (Java writes it by its own toString)",
                               "cast the value to string first")
        return f"coalesce({_pad(f'CAST({h} AS VARCHAR)', w, left)}, {null})"
    if conv in "dxX" and not precision and t in _INTS:
        if "," in flags and (conv != "d" or "0" in flags):
            raise rules.refuse(node, f"the format specifier '{spec.group(0)}'", "%,d or %0Nd")
        bits = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32}.get(t)
        if conv in "xX" and bits:  # Java writes a negative value's two's complement in its type's width
            h = f"(CASE WHEN {h} < 0 THEN CAST({h} AS BIGINT) + {1 << bits} ELSE {h} END)"
        if "," in flags:
            text = f"format('{{:,}}', {h})"
        elif "0" in flags:
            text = f"printf('%0{w}{conv}', {h})"
        else:
            text = f"printf('%{conv}', {h})"
        return f"coalesce({_pad(text, w, left)}, {null})"
    if conv == "f" and not set(flags) - {"-"} and t == pa.float64():
        p = int(precision[1:]) if precision else 6
        if p > 15:
            raise rules.refuse(node, f"%f with {p} places", "at most 15 places")
        bad = unsupported("format_string", "%f of a double of 15 or more digits", "cast it to decimal first")
        digits = (f"CASE WHEN isnan({h}) THEN 'NaN' WHEN isinf({h}) THEN 'Infinity' WHEN abs({h}) >= 1e15 THEN {bad} "
                  f"ELSE CAST(CAST(round(CAST(CAST(abs({h}) AS VARCHAR) AS DECIMAL(38, 20)), {p}) AS DECIMAL(38, {p}))"
                  f" AS VARCHAR) END")
        sign = f"CASE WHEN signbit({h}) AND NOT isnan({h}) THEN '-' ELSE '' END"
        return f"coalesce({_pad(f'({sign} || {digits})', w, left)}, {null})"
    raise rules.refuse(node, f"the format specifier '{spec.group(0)}' for a value of type {t}",
                       "%s, %d, %x or %f of a value of their type")


def _format_string(node: exp.Expression, rules: Rules) -> exp.Expression:
    if isinstance(node, exp.Anonymous):
        fmt, args = node.expressions[0], list(node.expressions[1:])
    else:
        fmt, args = node.this, list(node.expressions)
    if not (isinstance(fmt, exp.Literal) and fmt.is_string):
        raise rules.refuse(node, "a format that is not a literal string", "a literal format")
    text, pieces, holes, pos, used = fmt.this, [], {}, 0, 0
    for m in _SPEC.finditer(text):
        if m.start() > pos:
            pieces.append(exp.Literal.string(text[pos:m.start()]).sql("duckdb"))
        pos = m.end()
        if m.group(5) in "%n":
            pieces.append("'%'" if m.group(5) == "%" else "chr(10)")
            continue
        if used >= len(args):
            raise rules.refuse(node, "fewer arguments than the format's specifiers (Java fails)",
                               "an argument for each specifier")
        hole = f"a{used}"
        holes[hole] = args[used]
        pieces.append(_piece(node, rules, m, args[used], hole))
        used += 1
    if "%" in re.sub(_SPEC, "", text):
        raise rules.refuse(node, "a % that starts no specifier Java knows", "%% for a percent sign")
    if pos < len(text):
        pieces.append(exp.Literal.string(text[pos:]).sql("duckdb"))
    body = " || ".join(pieces) if pieces else "''"
    return typed(fill(f"({body})", **holes), pa.string())


RULES = {exp.Format: _format_string}
ANONYMOUS = {"printf": _format_string, "format_number": _format_number}
