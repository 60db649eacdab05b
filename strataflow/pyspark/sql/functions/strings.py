"""``pyspark.sql.functions``: string, binary and regular-expression functions (PySpark's String Functions).

Each function is defined with PySpark's signature and an example; ``call`` builds the
node by Spark's name, and ``sql/semantics`` gives it Spark's meaning or refuses it. The
encodings, formatting, distances and masks are in ``string_codes`` (re-exported here).
"""

from __future__ import annotations

from typing import Optional

from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.functions import string_codes
from strataflow.pyspark.sql.functions.builtin import arg, call
from strataflow.pyspark.sql.functions.string_codes import *  # noqa: F401,F403

__all__: list[str] = ["substr", "lcase", "ucase", "char_length", "character_length", "bit_length", "octet_length",
                      "btrim", "position", "substring_index", "overlay", "find_in_set", "elt", "split_part", "char",
                      "chr", "contains", "startswith", "endswith", "like", "ilike", "rlike", "regexp", "regexp_like",
                      "regexp_count", "regexp_extract_all", "regexp_instr", "regexp_substr", "quote",
                      *string_codes.__all__]


def substr(str: "Column | str", pos: "Column | str", len: "Optional[Column | str]" = None) -> Column:
    """The substring of ``str`` from ``pos`` (1-based; 0 counts as 1, negative from the end), ``len`` characters long.

    >>> spark.createDataFrame([("Spark SQL", 5, 1)], ["a", "b", "c"]).select(F.substr("a", "b", "c")).first()
    Row(substr(a, b, c)='k')
    """
    parts = [arg(str, "c"), arg(pos, "c")] + ([arg(len, "c")] if len is not None else [])
    return call("substr", *parts)


def lcase(str: "Column | str") -> Column:
    """``str`` in lower case, as Java's ``toLowerCase`` (Spark's ``lower``).

    >>> spark.createDataFrame([("Spark",)], ["s"]).select(F.lcase("s")).first()
    Row(lcase(s)='spark')
    """
    return call("lcase", arg(str, "c"))


def ucase(str: "Column | str") -> Column:
    """``str`` in upper case, as Java's ``toUpperCase`` (Spark's ``upper``).

    >>> spark.createDataFrame([("Spark",)], ["s"]).select(F.ucase("s")).first()
    Row(ucase(s)='SPARK')
    """
    return call("ucase", arg(str, "c"))


def char_length(str: "Column | str") -> Column:
    """The number of characters of a string (bytes of a binary), as an int.

    >>> spark.createDataFrame([("café",)], ["s"]).select(F.char_length("s")).first()
    Row(char_length(s)=4)
    """
    return call("char_length", arg(str, "c"))


def character_length(str: "Column | str") -> Column:
    """The number of characters of a string (bytes of a binary), as an int.

    >>> spark.createDataFrame([("café",)], ["s"]).select(F.character_length("s")).first()
    Row(character_length(s)=4)
    """
    return call("character_length", arg(str, "c"))


def bit_length(col: "Column | str") -> Column:
    """The length of a string's UTF-8 bytes (or of a binary) in bits, as an int.

    >>> spark.createDataFrame([("café",)], ["s"]).select(F.bit_length("s")).first()
    Row(bit_length(s)=40)
    """
    return call("bit_length", arg(col, "c"))


def octet_length(col: "Column | str") -> Column:
    """The number of bytes of a string's UTF-8 encoding (or of a binary), as an int.

    >>> spark.createDataFrame([("café",)], ["s"]).select(F.octet_length("s")).first()
    Row(octet_length(s)=5)
    """
    return call("octet_length", arg(col, "c"))


def btrim(str: "Column | str", trim: "Optional[Column | str]" = None) -> Column:
    """``str`` without the characters of ``trim`` (spaces, by default) at both ends.

    >>> spark.createDataFrame([("xxSparkxy", "xy")], ["s", "t"]).select(F.btrim("s", "t")).first()
    Row(btrim(s, t)='Spark')
    """
    return call("btrim", arg(str, "c"), *([arg(trim, "c")] if trim is not None else []))


def position(substr: "Column | str", str: "Column | str", start: "Optional[Column | str]" = None) -> Column:
    """The 1-based position of the first ``substr`` in ``str`` at or after ``start`` (0: none).

    >>> spark.createDataFrame([("bar", "foobarbar", 5)], ["a", "b", "c"]).select(F.position("a", "b", "c")).first()
    Row(position(a, b, c)=7)
    """
    parts = [arg(substr, "c"), arg(str, "c")] + ([arg(start, "c")] if start is not None else [])
    c = call("locate", *parts)
    c._expr.meta["fn"] = "position"
    c._expr.meta["call"] = ("position", parts)
    return c


def substring_index(str: "Column | str", delim: str, count: int) -> Column:
    """``str`` before the ``count``-th ``delim`` (from the right where ``count`` is negative).

    >>> spark.createDataFrame([("a.b.c",)], ["s"]).select(F.substring_index("s", ".", 2)).first()
    Row(substring_index(s, ., 2)='a.b')
    """
    return call("substring_index", arg(str, "c"), arg(delim, "l"), arg(count, "l"))


def overlay(src: "Column | str", replace: "Column | str", pos: "Column | str | int",
            len: "Column | str | int" = -1) -> Column:
    """``src`` with ``len`` characters from ``pos`` replaced by ``replace`` (``len`` -1: ``replace``'s length).

    >>> spark.createDataFrame([("SPARK_SQL", "CORE")], ["x", "y"]).select(F.overlay("x", "y", 7)).first()
    Row(overlay(x, y, 7, -1)='SPARK_CORE')
    """
    p = arg(pos, "l") if isinstance(pos, int) else arg(pos, "c")
    n = arg(len, "l") if isinstance(len, int) else arg(len, "c")
    return call("overlay", arg(src, "c"), arg(replace, "c"), p, n)


def find_in_set(str: "Column | str", str_array: "Column | str") -> Column:
    """The 1-based index of ``str`` in the comma-separated list ``str_array`` (0: not there, or ``str`` has a comma).

    >>> spark.createDataFrame([("ab", "abc,b,ab,c,def")], ["a", "b"]).select(F.find_in_set("a", "b")).first()
    Row(find_in_set(a, b)=3)
    """
    return call("find_in_set", arg(str, "c"), arg(str_array, "c"))


def elt(*inputs: "Column | str") -> Column:
    """The ``n``-th of the inputs after the first, ``n`` the first (null out of range; an error under ANSI).

    >>> spark.createDataFrame([(1, "scala", "java")], ["a", "b", "c"]).select(F.elt("a", "b", "c")).first()
    Row(elt(a, b, c)='scala')
    """
    return call("elt", *[arg(x, "c") for x in inputs])


def split_part(src: "Column | str", delimiter: "Column | str", partNum: "Column | str") -> Column:
    """The ``partNum``-th part of ``src`` split by ``delimiter`` (negative from the end; '' out of range).

    >>> df = spark.createDataFrame([("11.12.13", ".", 3)], ["a", "b", "c"])
    >>> df.select(F.split_part("a", "b", "c")).first()
    Row(split_part(a, b, c)='13')
    """
    return call("split_part", arg(src, "c"), arg(delimiter, "c"), arg(partNum, "c"))


def char(col: "Column | str") -> Column:
    """The character whose code is ``col`` modulo 256 ('' for a negative code).

    >>> spark.createDataFrame([(65,)], ["n"]).select(F.char("n")).first()
    Row(char(n)='A')
    """
    return call("char", arg(col, "c"))


def chr(n: "Column | str") -> Column:
    """The character whose code is ``n`` modulo 256 ('' for a negative code).

    >>> spark.createDataFrame([(321,)], ["n"]).select(F.chr("n")).first()
    Row(chr(n)='A')
    """
    return call("chr", arg(n, "c"))


def contains(left: "Column | str", right: "Column | str") -> Column:
    """True where ``right`` occurs in ``left``.

    >>> spark.createDataFrame([("Spark SQL", "Spark")], ["a", "b"]).select(F.contains("a", "b")).first()
    Row(contains(a, b)=True)
    """
    return call("contains", arg(left, "c"), arg(right, "c"))


def startswith(str: "Column | str", prefix: "Column | str") -> Column:
    """True where ``str`` starts with ``prefix``.

    >>> spark.createDataFrame([("Spark SQL", "Spark")], ["a", "b"]).select(F.startswith("a", "b")).first()
    Row(startswith(a, b)=True)
    """
    return call("startswith", arg(str, "c"), arg(prefix, "c"))


def endswith(str: "Column | str", suffix: "Column | str") -> Column:
    """True where ``str`` ends with ``suffix``.

    >>> spark.createDataFrame([("Spark SQL", "SQL")], ["a", "b"]).select(F.endswith("a", "b")).first()
    Row(endswith(a, b)=True)
    """
    return call("endswith", arg(str, "c"), arg(suffix, "c"))


def like(str: "Column | str", pattern: "Column | str", escapeChar: "Optional[Column]" = None) -> Column:
    """True where ``str`` matches the SQL ``pattern`` (``%``, ``_``; escape ``\\`` or ``escapeChar``).

    >>> spark.createDataFrame([("Spark", "_park")], ["a", "b"]).select(F.like("a", "b")).first()
    Row(a LIKE b=True)
    """
    return _like("like", str, pattern, escapeChar)


def ilike(str: "Column | str", pattern: "Column | str", escapeChar: "Optional[Column]" = None) -> Column:
    """True where ``str`` matches the SQL ``pattern`` without regard to case.

    >>> spark.createDataFrame([("Spark", "_PARK")], ["a", "b"]).select(F.ilike("a", "b")).first()
    Row(ilike(a, b)=True)
    """
    return _like("ilike", str, pattern, escapeChar)


def _like(name: str, str: "Column | str", pattern: "Column | str", escapeChar: "Optional[Column]") -> Column:
    from sqlglot import exp

    kind = exp.Like if name == "like" else exp.ILike
    node: exp.Expression = kind(this=arg(str, "c"), expression=arg(pattern, "c"))
    if escapeChar is not None:
        node = exp.Escape(this=node, expression=arg(escapeChar, "l"))
    return Column(node)


def rlike(str: "Column | str", regexp: "Column | str") -> Column:
    """True where the Java regular expression ``regexp`` matches part of ``str``.

    >>> spark.createDataFrame([("1a 2b 14m",)], ["s"]).select(F.rlike("s", F.lit(r"\\d+"))).first()
    Row(RLIKE(s, \\d+)=True)
    """
    return call("rlike", arg(str, "c"), arg(regexp, "c"))


def regexp(str: "Column | str", regexp: "Column | str") -> Column:
    """True where the Java regular expression ``regexp`` matches part of ``str`` (``rlike``).

    >>> spark.createDataFrame([("1a 2b 14m",)], ["s"]).select(F.regexp("s", F.lit(r"\\d+"))).first()
    Row(REGEXP(s, \\d+)=True)
    """
    return call("regexp", arg(str, "c"), arg(regexp, "c"))


def regexp_like(str: "Column | str", regexp: "Column | str") -> Column:
    """True where the Java regular expression ``regexp`` matches part of ``str`` (``rlike``).

    >>> spark.createDataFrame([("1a 2b 14m",)], ["s"]).select(F.regexp_like("s", F.lit(r"\\d+"))).first()
    Row(REGEXP_LIKE(s, \\d+)=True)
    """
    return call("regexp_like", arg(str, "c"), arg(regexp, "c"))


def regexp_count(str: "Column | str", regexp: "Column | str") -> Column:
    """The number of matches of the Java regular expression ``regexp`` in ``str``.

    >>> spark.createDataFrame([("1a 2b 14m",)], ["s"]).select(F.regexp_count("s", F.lit(r"\\d+"))).first()
    Row(regexp_count(s, \\d+)=3)
    """
    return call("regexp_count", arg(str, "c"), arg(regexp, "c"))


def regexp_extract_all(str: "Column | str", regexp: "Column | str", idx: "Column | int | None" = None) -> Column:
    """Every match's group ``idx`` (1 by default; 0: the whole match) of the Java regular expression.

    >>> df = spark.createDataFrame([("100-200, 300-400",)], ["s"])
    >>> df.select(F.regexp_extract_all("s", F.lit(r"(\\d+)-(\\d+)"), 2).alias("x")).first()
    Row(x=['200', '400'])
    """
    parts = [arg(str, "c"), arg(regexp, "c")] + ([arg(idx, "l")] if idx is not None else [])
    return call("regexp_extract_all", *parts)


def regexp_instr(str: "Column | str", regexp: "Column | str", idx: "Column | int | None" = None) -> Column:
    """The 1-based position of the first match of the Java regular expression (0: none).

    >>> spark.createDataFrame([("1a 2b 14m",)], ["s"]).select(F.regexp_instr("s", F.lit(r"\\d+(a|b|m)"))).first()
    Row(regexp_instr(s, \\d+(a|b|m), 0)=1)
    """
    parts = [arg(str, "c"), arg(regexp, "c")] + ([arg(idx, "l")] if idx is not None else [])
    return call("regexp_instr", *parts)


def regexp_substr(str: "Column | str", regexp: "Column | str") -> Column:
    """The first match of the Java regular expression ``regexp`` in ``str`` (null: none).

    >>> spark.createDataFrame([("1a 2b 14m",)], ["s"]).select(F.regexp_substr("s", F.lit(r"\\d+"))).first()
    Row(regexp_substr(s, \\d+)='1')
    """
    return call("regexp_substr", arg(str, "c"), arg(regexp, "c"))


def quote(col: "Column | str") -> Column:
    """``col`` in single quotes, its quotes and backslashes escaped with a backslash.

    >>> spark.createDataFrame([("Don't",)], ["s"]).select(F.quote("s")).first()
    Row(quote(s)="'Don\\\\'t'")
    """
    return call("quote", arg(col, "c"))


#: the examples of ``string_codes``' functions run with this module's (the doctest finder reads ``__test__``)
__test__ = {name: getattr(string_codes, name) for name in string_codes.__all__}
