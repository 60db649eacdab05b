"""Java regular expressions (Spark's) run by RE2 (DuckDB's): a literal pattern is written
in RE2's syntax where the two mean the same, and refused where they could differ.

The same: literal characters, classes without nesting or intersection, ``\\d`` ``\\w``
(ASCII in both), groups, ``(?:``, alternation, greedy and lazy quantifiers, ``^``.
Written anew: ``.`` (Java's excludes every line terminator, RE2's only ``\\n``), ``\\s``
(Java's includes ``\\x0B``), ``$`` (Java's matches before a final line terminator too).
Refused: flags (Java's ``(?i)`` is ASCII-only), possessive quantifiers, back references,
look-around, ``\\b`` (Java's word characters are Unicode's), ``\\p{..}``, ``\\Q..\\E``,
nested classes and anything RE2 or Python cannot compile. A pattern column is used where
its text is of the forms both read alike (checked as the query runs; others fail there with
the refusal).

Java steps past an empty match by one UTF-16 unit, so a pattern that can match the empty
string finds one match more inside each character outside the Basic Multilingual Plane:
``regexp_count`` and ``regexp_extract_all`` of such a pattern refuse a string that has one.
"""

from __future__ import annotations

import re

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, spark_name_of, typed
from strataflow.pyspark.sql.semantics.substrings import from_sql_text, need_text, unsupported
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["java_to_re2", "RULES", "ANONYMOUS"]

_TERMINATORS = "\\n\\r\\x{85}\\x{2028}\\x{2029}"
_SPACE = "\\t\\n\\x0B\\f\\r "
_SAFE_ESCAPES = set("dDwWtnrfaAz")


def java_to_re2(p: str, for_match_only: bool) -> tuple[str | None, str]:
    """(RE2 pattern, '') with Java's meaning, or (None, why not). ``for_match_only``: the
    caller asks only whether it matches (``$`` may then consume a final line terminator)."""
    out: list[str] = []
    i, n, groups = 0, len(p), 0
    in_class = class_start = False
    while i < n:
        c = p[i]
        if c == "\\":
            if i + 1 >= n:
                return None, "a pattern ending in a backslash"
            e = p[i + 1]
            if e.isalpha() or e.isdigit():
                if e == "s" or (e == "S" and not in_class):
                    out.append(_SPACE if in_class else (f"[{_SPACE}]" if e == "s" else f"[^{_SPACE}]"))
                elif e == "x" and not in_class:
                    out.append(p[i:i + 2])
                elif e in _SAFE_ESCAPES and not (in_class and e in "Az"):
                    out.append(p[i:i + 2])
                else:
                    return None, f"the escape \\{e}"
            else:
                out.append(p[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "[" or p.startswith("&&", i) or (c == "]" and class_start):
                return None, "a nested class, a class intersection or a class starting with ]"
            if c == "]" and not class_start:
                in_class = False
            out.append(c)
            class_start = False
            i += 1
            continue
        if c == "[":
            in_class, class_start = True, True
            out.append(c)
            i += 1
            if i < n and p[i] == "^":
                out.append("^")
                i += 1
            continue
        if c == "(":
            if p.startswith("(?", i) and not p.startswith("(?:", i):
                return None, "a group with flags, a name or look-around"
            groups += 0 if p.startswith("(?:", i) else 1
        elif c in "*+?}":
            if i + 1 < n and p[i + 1] == "+":
                return None, "a possessive quantifier"
        elif c == "{":
            m = re.match(r"\{(\d+)(,(\d*))?\}", p[i:])
            if m is None:
                return None, "a brace that is not a repetition"
            if max(int(m.group(1)), int(m.group(3) or 0)) > 1000:
                return None, "a repetition over 1000 (RE2's limit)"
            out.append(m.group(0))
            i += len(m.group(0))
            if i < n and p[i] == "+":
                return None, "a possessive quantifier"
            continue
        elif c == ".":
            out.append(f"[^{_TERMINATORS}]")
            i += 1
            continue
        elif c == "$":
            out.append(f"(?:\\r\\n|[{_TERMINATORS}])?\\z" if for_match_only else "\\z")
            if not for_match_only:
                return None, "$ (Java's also matches before a final line terminator)"
            i += 1
            continue
        out.append(c)
        i += 1
    if in_class:
        return None, "an unclosed class"
    try:
        re.compile(p)
    except re.error as exc:
        return None, f"an invalid pattern ({exc})"
    return "".join(out), ""


#: a pattern whose text means the same to Java and RE2 as it is (checked on a pattern column
#: where the query runs): characters, ``\\d`` ``\\w`` and escaped punctuation, classes without
#: nesting or ``&``, groups without ``(?``, quantifiers neither possessive nor over 999
_SAME_TEXT = ("NOT contains({p}, '(?') AND NOT regexp_matches({p}, '[*+?}]\\+|\\{[0-9]{4,}') AND "
              "regexp_full_match(regexp_replace({p}, '\\{[0-9]+(,[0-9]*)?\\}', '', 'g'), "
              "'([^.$\\\\\\[\\]{}]|\\\\[dDwWtnrf]|\\\\[^A-Za-z0-9]|"
              "\\[\\^?([^\\\\\\[\\]&]|\\\\[dDwWtnrf]|\\\\[^A-Za-z0-9])+\\])*')")


def pattern_of(node: exp.Expression, pattern: exp.Expression, rules: Rules,
               for_match_only: bool) -> tuple[exp.Expression, str | None]:
    """(the RE2 pattern, the Java text where it is a literal): a literal is translated or
    refused here; a pattern column is checked where the query runs (``_SAME_TEXT``)."""
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        need_text(rules, node, pattern)
        bad = unsupported(spark_name_of(node), "a pattern whose Java meaning could differ from RE2's (., $, \\s, "
                                               "flags, look-around, nested classes...)",
                          "a literal pattern, which strataflow translates")
        return fill(f"CASE WHEN {{p}} IS NULL OR ({_SAME_TEXT}) THEN {{p}} ELSE {bad} END", p=pattern), None
    got, why = java_to_re2(pattern.this, for_match_only)
    if got is None:
        raise rules.refuse(node, f"the pattern '{pattern.this}' uses {why}, which RE2 reads otherwise",
                           "a pattern of literal characters, classes, groups and quantifiers")
    return _lit(got), pattern.this


def _lit(p: str) -> exp.Expression:
    return exp.Literal.string(p)


def _group_count(p: str) -> int:
    return re.compile(p).groups


def _rlike(node: exp.Expression, rules: Rules) -> exp.Expression:
    s, pattern = (node.expressions[0], node.expressions[1]) if isinstance(node, exp.Anonymous) else \
        (node.this, node.expression)
    need_text(rules, node, s)
    if isinstance(node, exp.Anonymous) and from_sql_text(node) and node.name != "REGEXP":
        raise rules.refuse(node, "Spark names the column REGEXP(...), the SQL text's spelling differs",
                           "REGEXP in capitals, or rlike")
    p, _ = pattern_of(node, pattern, rules, True)
    return typed(fill("regexp_matches({s}, {p})", s=s, p=p), pa.bool_())


def _empty_guard(fn: str, java: str | None, body: str) -> str:
    """``body`` (over ``{s}``), failing with the refusal on a string with a character outside
    the BMP where the pattern can match the empty string (Java counts inside the character)."""
    if java is not None and re.search(java, "") is None:
        return body
    bad = unsupported(fn, "a pattern that matches the empty string, over a string with a character outside the "
                          "Basic Multilingual Plane (Java steps through it in UTF-16 units)",
                      "a pattern that cannot match the empty string")
    empty = "regexp_matches('', {p}) AND " if java is None else ""
    return f"CASE WHEN {empty}regexp_matches({{s}}, '[\\x{{10000}}-\\x{{10FFFF}}]') THEN {bad} ELSE {body} END"


def _count(node: exp.Expression, rules: Rules) -> exp.Expression:
    need_text(rules, node, node.this)
    p, java = pattern_of(node, node.expression, rules, False)
    body = _empty_guard("regexp_count", java, "CAST(len(regexp_extract_all({s}, {p})) AS INTEGER)")
    return typed(fill(body, s=node.this, p=p), pa.int32())


def _literal_int(node: exp.Expression, e: exp.Expression | None, default: int, rules: Rules) -> int:
    if e is None:
        return default
    if isinstance(e, exp.Literal) and e.is_int:
        return int(e.this)
    raise rules.refuse(node, "a group index that is not a literal integer", "a literal group index")


def _extract_all(node: exp.Expression, rules: Rules) -> exp.Expression:
    need_text(rules, node, node.this)
    p, java = pattern_of(node, node.expression, rules, False)
    idx = _literal_int(node, node.args.get("group"), 1, rules)
    if java is not None and not 0 <= idx <= _group_count(java):
        raise rules.refuse(node, f"group {idx} of a pattern with {_group_count(java)} groups (Spark "
                                 "fails with INVALID_PARAMETER_VALUE.REGEX_GROUP_INDEX)", "a group the pattern has")
    body = _empty_guard("regexp_extract_all", java, f"regexp_extract_all({{s}}, {{p}}, {idx})")
    return typed(fill(body, s=node.this, p=p), pa.list_(pa.string()))


def _substr(node: exp.Expression, rules: Rules) -> exp.Expression:
    need_text(rules, node, node.this)
    p, _ = pattern_of(node, node.expression, rules, False)
    # Spark's regexp_substr is nullif(regexp_extract(str, regexp, 0), ''): an empty match is null too
    return typed(fill("nullif(regexp_extract({s}, {p}, 0), '')", s=node.this, p=p), pa.string())


def _instr(node: exp.Expression, rules: Rules) -> exp.Expression:
    need_text(rules, node, node.this)
    p, _ = pattern_of(node, node.expression, rules, False)
    idx = _literal_int(node, node.args.get("group"), 0, rules)
    if idx != 0:
        raise rules.refuse(node, f"a group index {idx}", "regexp_instr(str, regexp)")
    body = ("CAST(CASE WHEN {s} IS NULL THEN NULL WHEN NOT regexp_matches({s}, {p}) THEN 0 ELSE "
            "length(regexp_extract({s}, '(?s)^(.*?)(?:' || {p} || ')', 1)) + 1 END AS INTEGER)")
    return typed(fill(body, s=node.this, p=p), pa.int32())


RULES = {exp.RegexpLike: _rlike, exp.RegexpCount: _count, exp.RegexpExtractAll: _extract_all,
         exp.RegexpSubstr: _substr, exp.RegexpInstr: _instr}
ANONYMOUS = {"regexp": _rlike}
