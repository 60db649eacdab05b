"""Strings as Spark (Java) treats them: ``upper``/``lower`` with Java's special casing,
``substring`` from position 0 as from 1, ``regexp_replace``'s ``$1`` group references,
``split``'s limit, lengths and positions as ``int``.
"""

from __future__ import annotations

import unicodedata

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics import codes, regexps, substrings
from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["KEEP", "RULES", "ANONYMOUS", "REFUSE"]


def _special(method: str) -> str:
    """The characters whose Java case mapping is not one character to one (``'ß'.upper()``
    is 'SS'; 'İ'.lower() is 'i̇'): a regex class of them."""
    chars = []
    for cp in range(0x80, 0x10000):
        c = chr(cp)
        if unicodedata.category(c) == "Cs":
            continue
        mapped = getattr(c, method)()
        if len(mapped) != 1:
            chars.append(c)
    return "[" + "".join(chars) + "]"


_UPPER_SPECIAL = None
_LOWER_SPECIAL = None


def _case(method: str, duck_fn: str):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        global _UPPER_SPECIAL, _LOWER_SPECIAL
        if method == "upper":
            _UPPER_SPECIAL = _UPPER_SPECIAL or _special("upper")
            special = _UPPER_SPECIAL
        else:
            _LOWER_SPECIAL = _LOWER_SPECIAL or _special("lower")
            special = _LOWER_SPECIAL
        x = node.this
        fixed = fill(f"{duck_fn}(replace({{x}}, 'ß', 'SS'))" if method == "upper" else
                     f"{duck_fn}(replace({{x}}, 'İ', 'i\u0307'))", x=x)
        rest = special.replace("ß", "") if method == "upper" else special.replace("İ", "")
        if rest == "[]":
            return typed(fixed, pa.string())
        return typed(fill(f"CASE WHEN regexp_matches({{x}}, '{rest}') THEN error('[STRATAFLOW_UNSUPPORTED] "
                          f"strataflow does not run `{method}` of a string with a character whose case mapping is "
                          f"not one character (Java maps it by its special-casing rules). Instead: a Python UDF "
                          f"with str.{method}.') ELSE {{f}} END", x=x, f=fixed), pa.string())

    return rule


def _substring(node: exp.Expression, rules: Rules) -> exp.Expression | None:
    """Spark counts position 0 as 1 (``substring('abc', 0, 2)`` is 'ab')."""
    start = node.args.get("start")
    t = rules.type_of(node.this)
    if t is not None and pa.types.is_binary(t):
        raise rules.refuse(node, "substring of binary", "substring of cast(col AS string)")
    length = node.args.get("length")
    if not (isinstance(start, exp.Literal) and start.is_int) or \
            (length is not None and not (isinstance(length, exp.Literal) and length.is_int)):
        return typed(fill(substrings.substring_sql("{x}", "{p}", "{n}" if length is not None else None),
                          x=node.this, p=start, **({"n": length} if length is not None else {})), pa.string())
    if isinstance(start, exp.Literal) and start.is_int and int(start.this) == 0:
        node.set("start", exp.Literal.number(1))
        return node
    if start is not None and not isinstance(start, (exp.Literal, exp.Neg)):
        node.set("start", fill("CASE WHEN {s} = 0 THEN 1 ELSE {s} END", s=start))
    return node


def _java_replacement(text: str) -> str | None:
    """A Java regex replacement (``$1``, ``\\$``) as RE2's (``\\1``, ``$``); None where it
    uses what RE2 has not (named groups ``${name}``)."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append("\\\\" if nxt == "\\" else nxt)
            i += 2
            continue
        if c == "$":
            j = i + 1
            while j < len(text) and text[j].isdigit():
                j += 1
            if j == i + 1:
                return None
            out.append("\\" + text[i + 1:j])
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _regexp_replace(node: exp.Expression, rules: Rules) -> exp.Expression:
    rep = node.args.get("replacement")
    pos = node.args.get("position")
    if pos is not None and not (isinstance(pos, exp.Literal) and pos.this == "1"):
        raise rules.refuse(node, "a position argument", "regexp_replace(str, pattern, replacement)")
    if not (isinstance(rep, exp.Literal) and rep.is_string):
        raise rules.refuse(node, "a replacement that is not a literal string", "a literal replacement")
    converted = _java_replacement(rep.this)
    if converted is None:
        raise rules.refuse(node, f"the replacement '{rep.this}' ($ not followed by a group number)",
                           "\\$ for a literal $")
    pattern = node.expression
    return typed(fill(f"regexp_replace({{x}}, {{p}}, '{converted.replace(chr(39), chr(39) * 2)}', 'g')",
                      x=node.this, p=pattern), pa.string())


def _split(node: exp.Expression, rules: Rules) -> exp.Expression:
    limit = node.args.get("limit")
    n = -1
    if limit is not None:
        if isinstance(limit, exp.Neg) and isinstance(limit.this, exp.Literal):
            n = -int(limit.this.this)
        elif isinstance(limit, exp.Literal) and limit.is_int:
            n = int(limit.this)
        else:
            raise rules.refuse(node, "a limit that is not a literal integer", "a literal limit")
    pattern = node.expression
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise rules.refuse(node, "a pattern that is not a literal string", "a literal pattern")
    if pattern.this == "":
        body = "CASE WHEN {x} = '' THEN [''] ELSE string_split({x}, '') END"
        if n > 0:
            raise rules.refuse(node, "an empty pattern with a limit", "split(str, '')")
        return typed(fill(body, x=node.this), pa.list_(pa.string()))
    if n > 0:
        if n == 1:
            return typed(fill("[{x}]", x=node.this), pa.list_(pa.string()))
        raise rules.refuse(node, "a limit above 1", "split without a limit, then slice")
    return typed(fill("regexp_split_to_array({x}, {p})", x=node.this, p=pattern), pa.list_(pa.string()))


def _int_result(node: exp.Expression, rules: Rules) -> exp.Expression:
    t = rules.type_of(node.this)
    if isinstance(node, exp.Length) and t is not None and pa.types.is_binary(t):
        return typed(fill("CAST(octet_length({x}) AS INTEGER)", x=node.this), pa.int32())
    c = fill("CAST({x} AS INTEGER)", x=node)
    return typed(c, pa.int32())


def _initcap(node: exp.Expression, rules: Rules) -> exp.Expression:
    raise rules.refuse(node, "DuckDB capitalises after every non-letter, Java only after a space",
                       "a Python UDF")


def _base64(node: exp.Expression, rules: Rules) -> exp.Expression:
    t = rules.type_of(node.this)
    arg = fill("encode({x})", x=node.this) if t is not None and pa.types.is_string(t) else node.this
    return typed(fill("to_base64({x})", x=arg), pa.string())


def _sha2(node: exp.Expression, rules: Rules) -> exp.Expression:
    bits = node.args.get("length")
    n = int(bits.this) if isinstance(bits, exp.Literal) and bits.is_int else None
    if n not in (0, 256):
        raise rules.refuse(node, f"SHA-2 of {n} bits (DuckDB has SHA-256 only)", "sha2(col, 256)")
    return typed(fill("sha256({x})", x=node.this), pa.string())


def _replace(node: exp.Expression, rules: Rules) -> exp.Expression:
    rep = node.args.get("replacement")
    return typed(fill("replace({x}, {s}, {r})", x=node.this, s=node.expression,
                      r=rep if rep is not None else exp.Literal.string("")), pa.string())


RULES = {
    exp.Upper: _case("upper", "upper"), exp.Lower: _case("lower", "lower"), exp.Substring: _substring,
    exp.RegexpReplace: _regexp_replace, exp.RegexpSplit: _split, exp.Length: _int_result,
    exp.Initcap: _initcap, exp.ToBase64: _base64, exp.SHA2: _sha2,
    exp.Replace: _replace,
}
ANONYMOUS: dict = {**substrings.ANONYMOUS, **regexps.ANONYMOUS, **codes.ANONYMOUS}
REFUSE = {**codes.REFUSE,
    exp.Left: ("PySpark's left takes columns for both arguments", "substring(col, 1, n)"),
    exp.Right: ("PySpark's right takes columns for both arguments", "substring(col, -n, n)"),
}


def _like(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``like``/``ilike``: Spark's escape character is ``\\`` unless one is given; DuckDB
    has none by default."""
    if node.args.get("escape") is not None or isinstance(node.parent, exp.Escape):
        return node
    pattern = node.expression
    if isinstance(pattern, exp.Literal) and "\\" not in pattern.this:
        return node  # no escape in it: DuckDB's own LIKE (which it turns into contains/prefix) is Spark's
    return exp.Escape(this=node.copy(), expression=exp.Literal.string("\\"))


RULES[exp.Like] = _like
RULES[exp.ILike] = _like
RULES.update({**substrings.RULES, **regexps.RULES, **codes.RULES})

#: kinds whose DuckDB answer the suite found equal to Spark's (merged by ``registry``)
KEEP: frozenset[type] = frozenset()
