"""Spark's string codes in DuckDB SQL: charsets (``encode``/``decode``/``to_binary``), URL
encoding as Java's URLEncoder/URLDecoder, UTF-8 checks, distances (``levenshtein`` with a
threshold, ``jaro_winkler_similarity``), ``soundex`` over ASCII bytes, ``mask`` by Java's
character classes, collations; the ones whose exact answer is out of reach are refused.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics import formats, urls
from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.substrings import need_text, unsupported
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["RULES", "ANONYMOUS", "REFUSE"]


def _args(node: exp.Expression) -> list[exp.Expression]:
    return list(node.expressions) if isinstance(node, exp.Anonymous) else \
        [v for v in node.args.values() if isinstance(v, exp.Expression)]


def _charset(node: exp.Expression, rules: Rules) -> str:
    cs = node.args.get("charset")
    if not (isinstance(cs, exp.Literal) and cs.is_string):
        raise rules.refuse(node, "a charset that is not a literal string", "a literal charset")
    return cs.this.upper().replace("_", "-")


#: a code point's bytes in a charset, as hex (DuckDB SQL over the code point ``cp``)
_UTF16 = ("CASE WHEN cp < 65536 THEN printf('%04X', cp) ELSE printf('%04X%04X', 55296 + ((cp - 65536) >> 10), "
          "56320 + ((cp - 65536) & 1023)) END")
_UNITS = {"UTF-16BE": _UTF16, "UTF-32": "printf('%08X', cp)", "ISO-8859-1": "printf('%02X', cp)",
          "UTF-16LE": f"(SELECT string_agg(substr(h, 3, 2) || substr(h, 1, 2), '' ORDER BY k) FROM "
                      f"(SELECT substr({_UTF16}, 4 * k + 1, 4) AS h, k FROM range(2) t(k)) WHERE h <> '')"}


def _encode(node: exp.Expression, rules: Rules) -> exp.Expression:
    s = node.this
    need_text(rules, node, s)
    cs = _charset(node, rules)
    if cs in ("UTF-8", "UTF8"):
        return typed(fill("encode({s})", s=s), pa.binary())
    if cs == "US-ASCII":
        bad = unsupported("encode", "a character US-ASCII cannot hold (Spark fails with MALFORMED_CHARACTER_CODING, "
                                    "an error class strataflow does not raise yet)", "encode(col, 'UTF-8')")
        return typed(fill(f"CASE WHEN regexp_matches({{s}}, '[^\\x00-\\x7F]') THEN {bad} ELSE encode({{s}}) END",
                          s=s), pa.binary())
    bom = ""
    if cs == "UTF-16":
        cs, bom = "UTF-16BE", "FEFF"
    if cs not in _UNITS:
        raise rules.refuse(node, f"the charset {cs}", "UTF-8, US-ASCII, ISO-8859-1, UTF-16BE, UTF-16LE, UTF-16 or UTF-32")
    guard = ""
    if cs == "ISO-8859-1":
        bad = unsupported("encode", "a character ISO-8859-1 cannot hold (Spark fails with "
                                    "MALFORMED_CHARACTER_CODING, an error class strataflow does not raise yet)",
                          "encode(col, 'UTF-8')")
        guard = f"WHEN regexp_matches({{s}}, '[^\\x00-\\xFF]') THEN {bad} "
    units = _UNITS[cs].replace("cp", "unicode(c)")
    hexed = f"'{bom}' || array_to_string(list_transform(string_split({{s}}, ''), lambda c: {units}), '')"
    body = f"CASE WHEN {{s}} IS NULL THEN NULL {guard}WHEN {{s}} = '' THEN ''::BLOB ELSE unhex({hexed}) END"
    return typed(fill(body, s=s), pa.binary())


def _decode(node: exp.Expression, rules: Rules) -> exp.Expression:
    b = node.this
    t = rules.type_of(b)
    if t is None or not pa.types.is_binary(t):
        raise rules.refuse(node, f"an argument of type {t}", "decode of a binary column")
    cs = _charset(node, rules)
    ascii_only = cs == "US-ASCII"
    if cs in ("UTF-8", "UTF8", "US-ASCII"):
        what = "US-ASCII" if ascii_only else "UTF-8"
        bad = unsupported("decode", f"bytes that are not {what} (Spark fails with MALFORMED_CHARACTER_CODING, an "
                                    "error class strataflow does not raise yet)", "try_validate_utf8 over the cast")
        check = "regexp_matches(hex({b}), '^(..)*?[89A-F].')" if ascii_only else "try(decode({b})) IS NULL"
        body = f"CASE WHEN {{b}} IS NULL THEN NULL WHEN {check} THEN {bad} ELSE decode({{b}}) END"
        return typed(fill(body, b=b), pa.string())
    if cs == "ISO-8859-1":
        body = ("CASE WHEN {b} IS NULL THEN NULL ELSE array_to_string(list_transform(range(octet_length({b})), "
                "lambda i: chr(CAST(('0x' || substr(hex({b}), 2 * i + 1, 2)) AS INTEGER))), '') END")
        return typed(fill(body, b=b), pa.string())
    raise rules.refuse(node, f"the charset {cs}", "UTF-8, US-ASCII or ISO-8859-1")


def _to_binary(node: exp.Expression, rules: Rules, try_: bool = False) -> exp.Expression:
    args = _args(node)
    s, f = args[0], (args[1] if len(args) > 1 else exp.Literal.string("hex"))
    need_text(rules, node, s)
    if not (isinstance(f, exp.Literal) and f.is_string):
        raise rules.refuse(node, "a format that is not a literal string", "a literal format")
    fmt = f.this.lower()
    if fmt in ("utf-8", "utf8"):
        return typed(fill("encode({s})", s=s), pa.binary())
    if fmt == "hex":
        bad = "NULL" if try_ else unsupported(
            "to_binary", "a string that is not hexadecimal (Spark fails with CONVERSION_INVALID_INPUT, an error "
                         "class strataflow does not raise yet)", "try_to_binary")
        body = ("CASE WHEN {s} IS NULL THEN NULL WHEN NOT regexp_full_match({s}, '[0-9A-Fa-f]*') THEN " + bad +
                " ELSE unhex(CASE WHEN length({s}) % 2 = 1 THEN '0' || {s} ELSE {s} END) END")
        return typed(fill(body, s=s), pa.binary())
    raise rules.refuse(node, f"the format '{f.this}' (Spark's base64 reading is lenient in ways not matched yet)",
                       "to_binary with 'hex' or 'utf-8'")


def _unbase64(node: exp.Expression, rules: Rules) -> exp.Expression:
    """Strict, padded base64 only: Java's MIME decoder skips other characters, and fails on some."""
    s = node.this
    need_text(rules, node, s)
    bad = unsupported("unbase64", "a string that is not strict padded base64 (Java's MIME decoder skips what it does "
                                  "not know, or fails)", "clean the string to strict base64 first")
    strict = "'([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?'"
    body = (f"CASE WHEN {{s}} IS NULL THEN NULL WHEN NOT regexp_full_match({{s}}, {strict}) OR try(from_base64({{s}})) "
            f"IS NULL THEN {bad} ELSE from_base64({{s}}) END")
    return typed(fill(body, s=s), pa.binary())


_BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def _to_base32(node: exp.Expression, rules: Rules) -> exp.Expression:
    """RFC 4648 base32 with '=' padding, of a binary or a string's UTF-8 bytes."""
    x = node.this
    t = rules.type_of(x)
    if not (t is not None and pa.types.is_binary(t)):
        need_text(rules, node, x)
        x = fill("encode({x})", x=x)
    bits = ("array_to_string(list_transform(string_split(hex({b}), ''), "
            "lambda c: right('000' || bin(CAST(('0x' || c) AS INTEGER)), 4)), '')")
    groups = f"CAST(ceil(length({bits}) / 5) AS INTEGER)"
    padded = f"rpad({bits}, {groups} * 5, '0')"
    value = " + ".join(f"{1 << (4 - k)} * CAST(substr({padded}, i * 5 + {k + 1}, 1) AS INTEGER)" for k in range(5))
    chars = f"array_to_string(list_transform(range({groups}), lambda i: substr('{_BASE32}', {value} + 1, 1)), '')"
    body = (f"CASE WHEN {{b}} IS NULL THEN NULL WHEN octet_length({{b}}) = 0 THEN '' ELSE "
            f"rpad({chars}, CAST(ceil(length({chars}) / 8) * 8 AS INTEGER), '=') END")
    return typed(fill(body, b=x), pa.string())


def _url_encode(node: exp.Expression, rules: Rules) -> exp.Expression:
    s = node.expressions[0]
    need_text(rules, node, s)
    body = "replace(replace(replace(url_encode({s}), '%20', '+'), '~', '%7E'), '%2A', '*')"
    return typed(fill(body, s=s), pa.string())


def _url_decode(node: exp.Expression, rules: Rules, try_: bool = False) -> exp.Expression:
    s = node.expressions[0]
    need_text(rules, node, s)
    bad = "NULL" if try_ else unsupported(
        "url_decode", "a string that is not URL-encoded (Spark fails with CANNOT_DECODE_URL, an error class strataflow "
                      "does not raise yet)", "try_url_decode")
    odd = unsupported("url_decode", "escapes that are not UTF-8 (Java decodes them to U+FFFD)", "a Python UDF")
    decoded = "url_decode(replace({s}, '+', ' '))"
    body = (f"CASE WHEN {{s}} IS NULL THEN NULL WHEN NOT regexp_full_match({{s}}, '([^%]|%[0-9A-Fa-f]{{2}})*') "
            f"THEN {bad} WHEN try({decoded}) IS NULL THEN {odd} ELSE {decoded} END")
    return typed(fill(body, s=s), pa.string())


def _utf8(kind: str):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        s = node.expressions[0]
        need_text(rules, node, s)  # a DuckDB string is valid UTF-8: strataflow reads no other
        if kind == "is":
            return typed(fill("CASE WHEN {s} IS NULL THEN NULL ELSE true END", s=s), pa.bool_())
        return typed(s.copy(), pa.string())

    return rule


def _levenshtein(node: exp.Expression, rules: Rules) -> exp.Expression:
    a, b, t = node.this, node.expression, node.args.get("ins_cost")
    need_text(rules, node, a, b)
    if t is None:
        return typed(fill("CAST(levenshtein({a}, {b}) AS INTEGER)", a=a, b=b), pa.int32())
    return typed(fill("CAST(CASE WHEN levenshtein({a}, {b}) > {t} THEN -1 ELSE levenshtein({a}, {b}) END AS INTEGER)",
                      a=a, b=b, t=t), pa.int32())


def _jaro_winkler(node: exp.Expression, rules: Rules) -> exp.Expression:
    a, b = node.expressions[:2]
    need_text(rules, node, a, b)
    prefix = " + ".join(f"CAST(length({{a}}) >= {k} AND length({{b}}) >= {k} AND left({{a}}, {k}) = left({{b}}, {k}) "
                        f"AS INTEGER)" for k in range(1, 5))
    bad = unsupported("jaro_winkler_similarity", "a character outside the Basic Multilingual Plane (Java compares "
                                                 "UTF-16 units)", "a Python UDF")
    body = (f"CASE WHEN {{a}} = '' AND {{b}} = '' THEN 1.0 WHEN regexp_matches({{a}} || {{b}}, "
            f"'[\\x{{10000}}-\\x{{10FFFF}}]') THEN {bad} ELSE jaro_similarity({{a}}, {{b}}) + ({prefix}) * 0.1 * "
            f"(1.0 - jaro_similarity({{a}}, {{b}})) END")
    return typed(fill(body, a=a, b=b), pa.float64())


_SOUNDEX = "01230127022455012623017202"


def _soundex(node: exp.Expression, rules: Rules) -> exp.Expression:
    """Spark's ``UTF8String.soundex`` over bytes: a string not starting with an ASCII letter
    is its own answer; H and W are skipped, any other non-letter resets the last code."""
    s = node.this
    need_text(rules, node, s)
    code = f"substr('{_SOUNDEX}', ascii(upper(c)) - 64, 1)"
    first = code.replace("c)", "substr({s}, 1, 1))")
    codes = (f"list_concat([{first}], list_filter(list_transform(string_split(substr({{s}}, 2), ''), "
             f"lambda c: CASE WHEN regexp_matches(c, '^[A-Za-z]$') THEN {code} ELSE '0' END), lambda c: c <> '7'))")
    picked = (f"array_to_string(list_filter(list_transform(range(2, len({codes}) + 1), lambda i: CASE WHEN "
              f"{codes}[i] <> '0' AND {codes}[i] <> {codes}[i - 1] THEN {codes}[i] END), lambda x: x IS NOT NULL), '')")
    body = (f"CASE WHEN {{s}} IS NULL THEN NULL WHEN NOT regexp_matches({{s}}, '^[A-Za-z]') THEN {{s}} "
            f"ELSE rpad(upper(substr({{s}}, 1, 1)) || substr({picked}, 1, 3), 4, '0') END")
    return typed(fill(body, s=s), pa.string())


#: characters Java counts as upper or lower case that are not letters of those categories
#: (Unicode's Other_Uppercase and Other_Lowercase): refused, not guessed
_OTHER_CASE = ("[\\x{AA}\\x{BA}\\x{2B0}-\\x{2B8}\\x{2C0}\\x{2C1}\\x{2E0}-\\x{2E4}\\x{345}\\x{37A}\\x{1D2C}-\\x{1D6A}"
               "\\x{1D78}\\x{1D9B}-\\x{1DBF}\\x{2071}\\x{207F}\\x{2090}-\\x{209C}\\x{2160}-\\x{217F}\\x{24B6}-\\x{24E9}"
               "\\x{2C7C}\\x{2C7D}\\x{A69C}\\x{A69D}\\x{A770}\\x{A7F8}\\x{A7F9}\\x{AB5C}-\\x{AB5F}\\x{1F130}-\\x{1F189}]")


def _mask(node: exp.Expression, rules: Rules) -> exp.Expression:
    args = list(node.expressions) + [exp.Null()] * (5 - len(node.expressions))
    s, up, low, dig, other = args[:5]
    if len(node.expressions) < 4:  # Spark SQL's defaults
        up, low, dig = [a if i < len(node.expressions) - 1 else exp.Literal.string(d)
                        for i, (a, d) in enumerate(zip((up, low, dig), "Xxn"))]
    need_text(rules, node, s, up, low, dig, other)
    for m in (up, low, dig, other):
        if not (isinstance(m, exp.Null) or isinstance(m, exp.Literal) and m.is_string and len(m.this) == 1):
            raise rules.refuse(node, "a mask character that is not a literal of one character", "a literal character")
    bad = unsupported("mask", "a character Java counts as upper or lower case outside those letter categories",
                      "a Python UDF")
    body = (f"CASE WHEN {{s}} IS NULL THEN NULL WHEN regexp_matches({{s}}, '{_OTHER_CASE}') THEN {bad} ELSE "
            "array_to_string(list_transform(string_split({s}, ''), lambda c: CASE "
            "WHEN regexp_matches(c, '\\p{Lu}') THEN coalesce({u}, c) WHEN regexp_matches(c, '\\p{Ll}') THEN "
            "coalesce({l}, c) WHEN regexp_matches(c, '\\p{Nd}') THEN coalesce({d}, c) ELSE coalesce({o}, c) END), '') END")
    return typed(fill(body, s=s, u=up, l=low, d=dig, o=other), pa.string())


def _collate(node: exp.Expression, rules: Rules) -> exp.Expression:
    name = node.expression
    text = name.name if isinstance(name, (exp.Literal, exp.Var, exp.Identifier, exp.Column)) else ""
    if text.upper() != "UTF8_BINARY":
        raise rules.refuse(node, f"the collation {text or name.sql()} (strataflow compares strings by their bytes)",
                           "collate(col, 'UTF8_BINARY'), or lower() both sides for a case-blind comparison")
    need_text(rules, node, node.this)
    return typed(node.this.copy(), pa.string())


def _collation(node: exp.Expression, rules: Rules) -> exp.Expression:
    need_text(rules, node, node.this)
    return typed(fill("'SYSTEM.BUILTIN.UTF8_BINARY'"), pa.string())


RULES = {exp.Encode: _encode, exp.Decode: _decode, exp.ToBinary: _to_binary, exp.FromBase64: _unbase64, exp.ToBase32: _to_base32, exp.Levenshtein: _levenshtein,
         exp.Soundex: _soundex, exp.Collate: _collate, exp.Collation: _collation, **formats.RULES, **urls.RULES}
ANONYMOUS = {"try_to_binary": lambda node, rules: _to_binary(node, rules, try_=True), "url_encode": _url_encode,
             "url_decode": _url_decode, "try_url_decode": lambda node, rules: _url_decode(node, rules, try_=True),
             "is_valid_utf8": _utf8("is"), "make_valid_utf8": _utf8("make"), "validate_utf8": _utf8("validate"),
             "try_validate_utf8": _utf8("try"), "jaro_winkler_similarity": _jaro_winkler, "mask": _mask,
             **formats.ANONYMOUS, **urls.ANONYMOUS}
REFUSE = {
    exp.ToChar: ("Spark's number format letters are not matched yet", "format_number or format_string"),
    exp.ToNumber: ("Spark's number format letters are not matched yet", "regexp_replace then cast to decimal"),
}


def _refusing(why: tuple[str, str]):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        raise rules.refuse(node, *why)

    return rule


for _name, _why in {"to_varchar": REFUSE[exp.ToChar],
                    "try_to_number": REFUSE[exp.ToNumber],
                    "from_base32": ("Spark's base32 decoder's leniency is not matched yet",
                                    "a Python UDF with base64.b32decode"),
                    "sentences": ("Java's BreakIterator's sentence and word rules are not matched",
                                  "split on a pattern, or a Python UDF")}.items():
    ANONYMOUS[_name] = _refusing(_why)
