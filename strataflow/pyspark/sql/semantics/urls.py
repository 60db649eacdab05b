"""``parse_url`` as Spark computes it, with ``java.net.URI``'s parts: a URL of the form
``scheme://[userinfo@]host[:port][path][?query][#fragment]`` made of ASCII characters URI
allows, whose host is a host name (its last label starting with a letter) or a dotted
quad, is split by pattern here; any other string is refused where it is met (Java's URI
grammar has more forms, and a host it cannot read makes the authority registry-based).
"""

from __future__ import annotations

import re

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.substrings import need_text, unsupported
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["ANONYMOUS", "RULES"]

_PCT = "%[0-9A-Fa-f]{2}"
_UNRESERVED = "\\-A-Za-z0-9._~!$&'()*+,;="
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_TOP = "[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_HOST = f"(?:(?:{_LABEL}\\.)*{_TOP}\\.?|{_OCTET}(?:\\.{_OCTET}){{3}})"
#: only the named groups capture (DuckDB's regexp_extract reads groups 0 to 9)
_URL = (f"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>(?:(?:[{_UNRESERVED}:]|{_PCT})*@)?{_HOST}(?::[0-9]*)?)"
        f"(?P<path>(?:/(?:[{_UNRESERVED}:@/]|{_PCT})*)?)(?:\\?(?P<query>(?:[{_UNRESERVED}:@/?]|{_PCT})*))?"
        f"(?:#(?P<ref>(?:[{_UNRESERVED}:@/?]|{_PCT})*))?$")
#: the group numbers (RE2 numbers groups as Python does)
_GROUPS = re.compile(_URL).groupindex


def _group(name: str) -> str:
    return f"regexp_extract({{u}}, '{_URL.replace(chr(39), chr(39) * 2)}', {_GROUPS[name]})"


def _parts() -> dict[str, str]:
    has_query = "contains(regexp_replace({u}, '#.*$', ''), '?')"
    has_ref = "contains({u}, '#')"
    userinfo = f"CASE WHEN contains({_group('authority')}, '@') THEN regexp_extract({_group('authority')}, '^(.*)@', 1) END"
    query = f"CASE WHEN {has_query} THEN {_group('query')} END"
    return {"PROTOCOL": _group('scheme'), "AUTHORITY": _group('authority'), "USERINFO": userinfo,
            "HOST": f"regexp_extract({_group('authority')}, '^(.*@)?([^:]*)', 2)", "PATH": _group('path'), "QUERY": query,
            "REF": f"CASE WHEN {has_ref} THEN regexp_extract({{u}}, '#(.*)$', 1) END",
            "FILE": f"{_group('path')} || CASE WHEN {has_query} THEN '?' || {_group('query')} ELSE '' END"}


def _parse_url(node: exp.Expression, rules: Rules, try_: bool = False) -> exp.Expression:
    args = node.expressions if isinstance(node, exp.Anonymous) else \
        [node.this, node.args.get("part_to_extract"), node.args.get("key")]
    u, part = args[0], args[1]
    key = args[2] if len(args) > 2 else None
    fn = "try_parse_url" if try_ else "parse_url"
    need_text(rules, node, u)
    parts = _parts()
    if key is not None:
        need_text(rules, node, key)
        q = parts["QUERY"]
        plain = unsupported(fn, "a key that is not letters, digits and _ (Spark reads it as a Java regex)",
                            "a key of letters, digits and _")
        parts = {"QUERY": f"CASE WHEN NOT regexp_full_match({{k}}, '[A-Za-z0-9_]+') THEN {plain} "
                          f"WHEN regexp_matches({q}, '(&|^)' || {{k}} || '=') THEN "
                          f"regexp_extract({q}, '(&|^)' || {{k}} || '=([^&]*)', 2) END"}
    if isinstance(part, exp.Literal) and part.is_string:
        value = parts.get(part.this, "CAST(NULL AS VARCHAR)")
    else:
        need_text(rules, node, part)
        value = "CASE {p} " + " ".join(f"WHEN '{name}' THEN {v}" for name, v in parts.items()) + " END"
    bad = unsupported(fn, "a URL outside the plain scheme://host/path?query#fragment form (java.net.URI reads more "
                          "forms, and fails or gives no host for others)", "regexp_extract with a pattern for the part")
    # a character java.net.URI takes nowhere, or a % not starting an escape: an invalid URL for certain
    invalid = ("regexp_matches({u}, '[\\x00-\\x20\"<>\\\\^`{|}\\x7F]|"
               "%([^0-9A-Fa-f]|[0-9A-Fa-f][^0-9A-Fa-f]|[0-9A-Fa-f]?$)')")
    failed = "NULL" if try_ or not rules.conf.ansi else unsupported(
        fn, "an invalid URL under ANSI mode (Spark fails with INVALID_URL, an error class strataflow does not raise "
            "yet)", "try_parse_url")
    body = (f"CASE WHEN {{u}} IS NULL THEN NULL WHEN {invalid} THEN {failed} WHEN NOT regexp_matches({{u}}, '{_URL.replace(chr(39), chr(39) * 2)}') "
            f"THEN {bad} ELSE {value} END")
    holes = {"u": u, "p": part, **({"k": key} if key is not None else {})}
    return typed(fill(body, **holes), pa.string())


RULES = {exp.ParseUrl: _parse_url}
ANONYMOUS = {"try_parse_url": lambda node, rules: _parse_url(node, rules, try_=True)}
