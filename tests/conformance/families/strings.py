"""Conformance cases of the ``functions.strings`` family (see ``cases.py`` for ``Case``).

A string argument where PySpark reads a column name is ``Lit`` (a literal); an integer
where PySpark wants a column is a column of the value table (``i2`` holds 0, negatives and
nulls) or a ``Lit`` digit string (Spark casts it to int).
"""

from __future__ import annotations

from conformance.cases import C, Case, Lit  # noqa: F401

__all__ = ["CASES"]

s, s2, i, i2, y, l, d, f, m, m2, b, bn, sn = (C(x) for x in ("s", "s2", "i", "i2", "y", "l", "d", "f", "m", "m2",
                                                             "b", "bin", "sn"))


def _cases() -> list[Case]:
    k = Case
    out = [
        # -- lengths, case, trimming, substrings ---------------------------------------------------------
        k("substring", (s, i2, y)), k("substring", (s, 2, -1)), k("lcase", (s,)), k("ucase", (s,)),
        k("char_length", (s,)), k("char_length", (bn,)), k("character_length", (s,)),
        k("bit_length", (s,)), k("bit_length", (bn,)), k("octet_length", (s,)), k("octet_length", (bn,)),
        k("btrim", (s,)), k("btrim", (s, Lit("a"))), k("btrim", (s, s2)), k("btrim", (s, Lit("ab c"))),
        k("position", (Lit("b"), s)), k("position", (s2, s)), k("position", (Lit("a"), s, i2)),
        k("position", (Lit(""), s, i2)), k("position", (s2, s, y)),
        k("substring_index", (s, ",", 2)), k("substring_index", (s, ",", -1)), k("substring_index", (s, "b", 0)),
        k("substring_index", (s, "", 1)), k("substring_index", (s, " ", -5)), k("substring_index", (s, "a", 1)),
        k("overlay", (s, Lit("XY"), 2)), k("overlay", (s, Lit("XY"), 2, 0)), k("overlay", (s, s2, i2)),
        k("overlay", (s, Lit("_"), i2, y)), k("overlay", (s, Lit("ab"), 20, 1)),
        k("find_in_set", (s2, s)), k("find_in_set", (Lit("b"), s)), k("find_in_set", (Lit(""), s)),
        k("find_in_set", (Lit("a,b"), s)),
        k("elt", (i2, s, s2)), k("elt", (Lit("2"), s, s2)),
        k("split_part", (s, Lit(","), Lit("2"))), k("split_part", (s, Lit(","), Lit("-1"))),
        k("split_part", (s, Lit(""), Lit("1"))), k("split_part", (s, Lit(" "), i2)),
        k("split_part", (s, s2, Lit("1"))), k("split_part", (s, Lit("a"), Lit("5"))),
        k("char", (i,)), k("chr", (y,)), k("char", (l,)), k("chr", (i2,)),
        k("quote", (s,)), k("quote", (s2,)),
        # -- predicates and patterns -------------------------------------------------------------------
        k("contains", (s2, s)), k("contains", (s, Lit("ß"))), k("contains", (bn, bn)), k("startswith", (s2, s)),
        k("startswith", (s, Lit("a"))), k("endswith", (s, s2)), k("endswith", (s, Lit("c"))),
        k("like", (s, Lit("_b%"))), k("like", (s, Lit("%\\_%"))), k("like", (s, s2)),
        k("ilike", (s, Lit("%SS%"))), k("ilike", (s, Lit("a%"))),
        k("rlike", (s, Lit("[0-9]+$"))), k("rlike", (s, Lit("\\s"))), k("rlike", (s, Lit("(?i)abc"))), k("regexp", (s, Lit("\\d"))),
        k("regexp", (s, Lit("o.l"))), k("regexp_like", (s, Lit("b|ß"))), k("regexp_like", (s, Lit("^.{3}$"))),
        k("regexp_count", (s, Lit("[a-c]"))), k("regexp_count", (s, Lit("\\w+"))), k("regexp_count", (s, Lit("b*"))),
        k("regexp_extract_all", (s, Lit("([a-z])[a-z]*"))), k("regexp_extract_all", (s, Lit("[a-z]+"), 0)),
        k("regexp_extract_all", (s, Lit("(\\w)(\\w)"), 2)),
        k("regexp_instr", (s, Lit("b+"))), k("regexp_instr", (s, Lit("[0-9]"))), k("regexp_instr", (s, Lit("o"))),
        k("regexp_substr", (s, Lit("[a-z]+"))), k("regexp_substr", (s, Lit("z+"))),
        k("rlike", (s, s2)), k("regexp_count", (s, s2)), k("regexp_extract_all", (s, s2, 0)),
        k("regexp_instr", (s, s2)), k("regexp_substr", (s, s2)),
        # -- distances and codes -----------------------------------------------------------------------
        k("levenshtein", (s, s2)), k("levenshtein", (s, s2, 2)), k("levenshtein", (s, Lit("abc"))),
        k("levenshtein", (s, Lit("kitten"), 0)),
        k("jaro_winkler_similarity", (s, s2)), k("jaro_winkler_similarity", (s, Lit("abd"))),
        k("soundex", (s,)),
        k("mask", (s,)), k("mask", (s, Lit("U"), Lit("l"), Lit("#"), Lit("*"))), k("mask", (s2, Lit("Y"))),
        # -- encodings ---------------------------------------------------------------------------------
        k("encode", (s, "UTF-8")), k("encode", (s, "US-ASCII")), k("encode", (s, "ISO-8859-1")),
        k("encode", (s, "UTF-16BE")),
        k("decode", (bn, "UTF-8")), k("decode", (bn, "ISO-8859-1")), k("decode", (bn, "US-ASCII")),
        k("to_binary", (s, Lit("utf-8"))), k("to_binary", (s2, Lit("hex"))), k("try_to_binary", (s, Lit("hex"))),
        k("try_to_binary", (s, Lit("base64"))), k("to_binary", (sn, Lit("utf8"))),
        k("unbase64", (s,)), k("unbase64", (Lit("U3Bhcms="),)), k("to_base32", (bn,)), k("to_base32", (s,)),
        k("url_encode", (s,)), k("url_encode", (Lit("a b/c?d=ü&e~*"),)), k("url_decode", (Lit("a%2Bb+c%C3%BC"),)),
        k("url_decode", (s,)), k("try_url_decode", (s,)),
        *[k("parse_url", (Lit("http://user:pw@spark.apache.org:8080/path/a.html?query=1&k=v#Ref"), Lit(part)))
          for part in ("HOST", "PATH", "QUERY", "REF", "PROTOCOL", "FILE", "AUTHORITY", "USERINFO", "host")],
        k("parse_url", (Lit("https://spark.apache.org/a?query=1&k=v&k=w"), Lit("QUERY"), Lit("k"))),
        k("parse_url", (Lit("https://h.com"), Lit("PATH"))), k("parse_url", (Lit("https://h.com."), Lit("QUERY"))),
        k("try_parse_url", (Lit("http://1.2.3.4/x?"), Lit("FILE"))),
        k("try_parse_url", (Lit("ftp://a-b.example/%41b;p?q#"), Lit("REF"))),
        k("parse_url", (Lit("inva lid://spark.apache.org/path?query=1"), Lit("HOST"))),
        k("try_parse_url", (Lit("http://h.com/100%"), Lit("PATH"))),
        k("is_valid_utf8", (s,)), k("make_valid_utf8", (s,)), k("validate_utf8", (s,)), k("try_validate_utf8", (s,)),
        # -- formatting --------------------------------------------------------------------------------
        k("format_string", ("%s-%s", s, s2)), k("format_string", ("%d", i)), k("format_string", ("[%5d|%-5s]", i2, s)),
        k("format_string", ("%s and %s", i, b)), k("format_string", ("%05d%%", y)), k("printf", (Lit("%s!"), s)),
        k("format_string", ("%x", l)), k("format_string", ("%X|%-6x|", i, y)), k("format_string", ("%10.3f", m)), k("format_string", ("%.2f", d)), k("format_string", ("%,d", l)),
        k("format_number", (d, 3)), k("format_number", (m, 0)), k("format_number", (i, 2)), k("format_number", (l, 3)),
        k("format_number", (d, 0)), k("format_number", (m2, 4)), k("format_number", (f, 1)),
        k("format_number", (y, 2)),
        k("collation", (s,)), k("collate", (s, "UTF8_BINARY")), k("collate", (s, "UNICODE_CI")),
    ]
    return out


CASES: list[Case] = _cases()
