"""Spark's positional string functions in DuckDB SQL: ``substringSQL``'s positions (1-based,
0 as 1, negative from the end) as ``overlay`` uses them, ``locate``/``position`` with a
start, ``substring_index``, ``split_part``, ``find_in_set``, ``elt``, ``btrim``, ``chr``,
the byte and bit lengths. Spark counts characters as code points, as DuckDB does.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["RULES", "ANONYMOUS", "is_text", "need_text", "unsupported", "substring_sql", "from_sql_text"]


def is_text(rules: Rules, node: exp.Expression) -> bool:
    """True where ``node`` is a string (or a null literal, which Spark types as one here)."""
    t = rules.type_of(node)
    return t is None and isinstance(node, exp.Null) or t is not None and (pa.types.is_string(t) or
                                                                           pa.types.is_large_string(t) or
                                                                           pa.types.is_null(t))


def need_text(rules: Rules, node: exp.Expression, *parts: exp.Expression) -> None:
    """Refuses ``node`` unless every part is a string: Spark casts other types to string
    by its own rules first (a double's text is Java's), which these rules do not repeat."""
    for p in parts:
        if not is_text(rules, p):
            raise rules.refuse(node, f"an argument of type {rules.type_of(p)} (Spark casts it to a string first)",
                               "cast the argument to string yourself")


def unsupported(fn: str, why: str, instead: str) -> str:
    """DuckDB SQL that fails the query with strataflow's refusal, for a row Spark answers
    with an error strataflow cannot raise by Spark's class."""
    text = (f"[STRATAFLOW_UNSUPPORTED] strataflow does not run `{fn}` here: {why}, so its answer could differ from "
            f"Spark's. Instead: {instead}.").replace("'", "''")
    return f"error('{text}')"


def substring_sql(s: str, pos: str, length: str | None) -> str:
    """Spark's ``UTF8String.substringSQL(pos, length)`` as DuckDB SQL text over SQL texts."""
    start = f"(CASE WHEN {pos} > 0 THEN {pos} - 1 WHEN {pos} < 0 THEN length({s}) + {pos} ELSE 0 END)"
    if length is None:
        return f"(CASE WHEN {pos} IS NULL THEN NULL ELSE substring({s}, greatest({start}, 0) + 1) END)"
    return (f"(CASE WHEN {s} IS NULL OR {pos} IS NULL OR {length} IS NULL THEN NULL "
            f"WHEN greatest({start}, 0) >= {start} + {length} THEN '' ELSE "
            f"substring({s}, greatest({start}, 0) + 1, {start} + {length} - greatest({start}, 0)) END)")


def _overlay(node: exp.Expression, rules: Rules) -> exp.Expression:
    src, rep = node.this, node.expression
    pos, n = node.args.get("from_"), node.args.get("for_")
    need_text(rules, node, src, rep)
    n = n if n is not None else exp.Literal.number(-1)
    length = "(CASE WHEN {n} >= 0 THEN {n} ELSE length({r}) END)"
    body = (f"{substring_sql('{s}', '1', '({p}) - 1')} || {{r}} || "
            f"{substring_sql('{s}', '({p}) + ' + length, None)}")
    return typed(fill(body, s=src, r=rep, p=pos, n=n), pa.string())


def _locate(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``locate``/``position``/``instr``: 1-based, 0 where not found; with a start, 0 for a
    start below 1 or a null start, and 1 for an empty substring at any start from 1."""
    s, sub, start = node.this, node.args["substr"], node.args.get("position")
    need_text(rules, node, s, sub)
    if start is None:
        return typed(fill("CAST(strpos({s}, {sub}) AS INTEGER)", s=s, sub=sub), pa.int32())
    body = ("CASE WHEN {p} IS NULL THEN 0 WHEN {s} IS NULL OR {sub} IS NULL THEN NULL WHEN {p} < 1 THEN 0 "
            "WHEN {sub} = '' THEN 1 WHEN strpos(substring({s}, {p}), {sub}) = 0 THEN 0 "
            "ELSE strpos(substring({s}, {p}), {sub}) + {p} - 1 END")
    return typed(fill(f"CAST({body} AS INTEGER)", s=s, sub=sub, p=start), pa.int32())


def _overlaps_itself(d: str) -> bool:
    return any(d[:k] == d[-k:] for k in range(1, len(d)))


def _substring_index(node: exp.Expression, rules: Rules) -> exp.Expression:
    delim, count = node.args.get("delimiter"), node.args.get("count")
    need_text(rules, node, node.this)
    if not (isinstance(delim, exp.Literal) and delim.is_string):
        raise rules.refuse(node, "a delimiter that is not a literal string", "a literal delimiter")
    if _overlaps_itself(delim.this):
        raise rules.refuse(node, f"the delimiter '{delim.this}', whose occurrences can overlap (Spark counts "
                                 "overlapping ones)", "a delimiter that cannot overlap itself")
    if isinstance(count, exp.Neg) and isinstance(count.this, exp.Literal):
        n = -int(count.this.this)
    elif isinstance(count, exp.Literal) and count.is_int:
        n = int(count.this)
    else:
        raise rules.refuse(node, "a count that is not a literal integer", "a literal count")
    if n == 0 or delim.this == "":
        return typed(fill("CASE WHEN {x} IS NULL THEN NULL ELSE '' END", x=node.this), pa.string())
    parts = "string_split({x}, {d})"
    picked = f"{parts}[1:{n}]" if n > 0 else f"{parts}[{n}:]"
    return typed(fill(f"array_to_string({picked}, {{d}})", x=node.this, d=delim), pa.string())


def _split_part(node: exp.Expression, rules: Rules) -> exp.Expression:
    s, d, n = node.this, node.args["delimiter"], node.args["part_index"]
    need_text(rules, node, s, d)
    index = "CAST({n} AS INTEGER)"
    body = (f"CASE WHEN {index} = 0 THEN error('[INVALID_INDEX_OF_ZERO] The index 0 is invalid. An index shall be "
            f"either < 0 or > 0 (the first element has index 1).') WHEN {{s}} IS NULL OR {{d}} IS NULL OR {{n}} IS NULL "
            f"THEN NULL ELSE coalesce((CASE WHEN {{d}} = '' THEN [{{s}}] ELSE string_split({{s}}, {{d}}) END)"
            f"[{index}], '') END")
    return typed(fill(body, s=s, d=d, n=n), pa.string())


def _find_in_set(node: exp.Expression, rules: Rules) -> exp.Expression:
    a, b = node.expressions[:2]
    need_text(rules, node, a, b)
    body = ("CAST(CASE WHEN {a} IS NULL OR {b} IS NULL THEN NULL WHEN contains({a}, ',') THEN 0 "
            "ELSE coalesce(list_position(string_split({b}, ','), {a}), 0) END AS INTEGER)")
    return typed(fill(body, a=a, b=b), pa.int32())


def _elt(node: exp.Expression, rules: Rules) -> exp.Expression:
    n, inputs = node.this, node.expressions
    need_text(rules, node, *inputs)
    k = len(inputs)
    holes = {f"v{i}": v for i, v in enumerate(inputs)}
    values = "[" + ", ".join(f"{{v{i}}}" for i in range(k)) + "]"
    index = "CAST({n} AS INTEGER)"
    if rules.conf.ansi:
        bad = unsupported("elt", "an index out of range under ANSI mode (Spark fails with INVALID_ARRAY_INDEX, "
                                 "an error class strataflow does not raise yet)", "an index from 1 to the inputs' count")
        body = f"CASE WHEN {index} < 1 OR {index} > {k} THEN {bad} ELSE {values}[{index}] END"
    else:
        body = f"CASE WHEN {index} < 1 OR {index} > {k} THEN NULL ELSE {values}[{index}] END"
    return typed(fill(body, n=n, **holes), pa.string())


def _btrim(node: exp.Expression, rules: Rules) -> exp.Expression:
    args = node.expressions
    need_text(rules, node, *args)
    if len(args) == 1:
        return typed(fill("trim({x}, ' ')", x=args[0]), pa.string())
    return typed(fill("trim({x}, {t})", x=args[0], t=args[1]), pa.string())


_INTEGRAL = (pa.int8(), pa.int16(), pa.int32(), pa.int64())


def from_sql_text(node: exp.Expression) -> bool:
    """True where ``node`` was parsed from Spark SQL text rather than built by ``functions``."""
    return not (node._meta and node.meta.get("call"))


def _chr(node: exp.Expression, rules: Rules) -> exp.Expression:
    n = node.expressions[0]
    if from_sql_text(node) and not node.meta.get("written"):
        raise rules.refuse(node, "Spark names the column after the spelling, char( or chr(, which the SQL parser "
                                 "does not keep", "F.char or F.chr")
    if rules.type_of(n) not in _INTEGRAL:
        raise rules.refuse(node, f"a code of type {rules.type_of(n)} (Spark casts it to bigint first)",
                           "cast the code to bigint")
    body = "CASE WHEN {n} < 0 THEN '' ELSE chr(CAST(CAST({n} AS BIGINT) % 256 AS INTEGER)) END"
    return typed(fill(body, n=n), pa.string())


def _bit_length(node: exp.Expression, rules: Rules) -> exp.Expression:
    return _bytes(node, node.this, rules, 8)


def _octet_length(node: exp.Expression, rules: Rules) -> exp.Expression:
    return _bytes(node, node.expressions[0], rules, 1)


def _bytes(node: exp.Expression, x: exp.Expression, rules: Rules, scale: int) -> exp.Expression:
    t = rules.type_of(x)
    if t is not None and pa.types.is_binary(t):
        return typed(fill(f"CAST(octet_length({{x}}) * {scale} AS INTEGER)", x=x), pa.int32())
    need_text(rules, node, x)
    return typed(fill(f"CAST(strlen({{x}}) * {scale} AS INTEGER)", x=x), pa.int32())


def _quote(node: exp.Expression, rules: Rules) -> exp.Expression:
    x = node.expressions[0]
    need_text(rules, node, x)
    return typed(fill("'''' || replace(replace({x}, '\\', '\\\\'), '''', '\\''') || ''''", x=x), pa.string())


def _is_binary(rules: Rules, node: exp.Expression) -> bool:
    t = rules.type_of(node)
    return t is not None and pa.types.is_binary(t)


def _affix(node: exp.Expression, rules: Rules) -> exp.Expression | None:
    """``contains``/``startswith``/``endswith``: strings as DuckDB has them; binaries by
    their hex digits, matched at whole bytes."""
    a, b = node.this, node.expression
    if not (_is_binary(rules, a) or _is_binary(rules, b)):
        need_text(rules, node, a, b)
        return None
    if not (_is_binary(rules, a) and _is_binary(rules, b)):
        raise rules.refuse(node, "a binary and a string together", "cast both to the same type")
    body = {exp.Contains: "regexp_matches(hex({a}), '^(..)*?' || hex({b}))",
            exp.StartsWith: "starts_with(hex({a}), hex({b}))", exp.EndsWith: "ends_with(hex({a}), hex({b}))"}
    return typed(fill(body[type(node)], a=a, b=b), pa.bool_())


RULES = {exp.Contains: _affix, exp.StartsWith: _affix, exp.EndsWith: _affix, exp.Overlay: _overlay, exp.StrPosition: _locate, exp.SubstringIndex: _substring_index,
         exp.SplitPart: _split_part, exp.Elt: _elt, exp.Chr: _chr, exp.BitLength: _bit_length}
ANONYMOUS = {"find_in_set": _find_in_set, "btrim": _btrim, "octet_length": _octet_length, "quote": _quote}

