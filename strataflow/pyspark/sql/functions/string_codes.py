"""``pyspark.sql.functions``: the string functions that encode, format, compare or mask
(PySpark's String Functions, with ``strings``): charsets, base64, URLs, UTF-8 checks,
Java's format strings and number formats, edit distances, masks and collations.
"""

from __future__ import annotations

from typing import Optional

from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.functions.builtin import arg, call

__all__: list[str] = ["format_string", "printf", "format_number", "levenshtein", "jaro_winkler_similarity", "soundex",
                      "encode", "decode", "to_binary", "try_to_binary", "unbase64", "to_base32", "from_base32",
                      "url_encode", "url_decode", "try_url_decode", "parse_url", "try_parse_url", "mask",
                      "to_char", "to_varchar", "to_number", "try_to_number", "sentences", "is_valid_utf8",
                      "make_valid_utf8", "validate_utf8", "try_validate_utf8", "collate", "collation"]


def format_string(format: str, *cols: "Column | str") -> Column:
    """The columns formatted by the Java format string ``format`` (``%s``, ``%d``, widths and flags).

    >>> spark.createDataFrame([(5, "hello")], ["a", "b"]).select(F.format_string("%d %s", "a", "b")).first()
    Row(format_string(%d %s, a, b)='5 hello')
    """
    return call("format_string", arg(format, "l"), *[arg(c, "c") for c in cols])


def printf(format: "Column | str", *cols: "Column | str") -> Column:
    """The columns formatted by the Java format string ``format`` (``format_string``).

    >>> spark.createDataFrame([(5, "x")], ["a", "b"]).select(F.printf(F.lit("%d %s"), "a", "b")).first()
    Row(printf(%d %s, a, b)='5 x')
    """
    return call("printf", arg(format, "c"), *[arg(c, "c") for c in cols])


def format_number(col: "Column | str", d: int) -> Column:
    """``col`` rounded half-even to ``d`` decimal places, with grouping commas, as Java's DecimalFormat.

    >>> spark.createDataFrame([(1234567.125,)], ["x"]).select(F.format_number("x", 2)).first()
    Row(format_number(x, 2)='1,234,567.12')
    """
    return call("format_number", arg(col, "c"), arg(d, "l"))


def levenshtein(left: "Column | str", right: "Column | str", threshold: Optional[int] = None) -> Column:
    """The Levenshtein distance of two strings (-1 where it is over ``threshold``).

    >>> spark.createDataFrame([("kitten", "sitting")], ["a", "b"]).select(F.levenshtein("a", "b")).first()
    Row(levenshtein(a, b)=3)
    """
    parts = [arg(left, "c"), arg(right, "c")] + ([arg(threshold, "l")] if threshold is not None else [])
    return call("levenshtein", *parts)


def jaro_winkler_similarity(left: "Column | str", right: "Column | str") -> Column:
    """The Jaro-Winkler similarity of two strings, 0.0 to 1.0.

    >>> spark.createDataFrame([("abc", "abd")], ["a", "b"]).select(F.jaro_winkler_similarity("a", "b")).first()
    Row(jaro_winkler_similarity(a, b)=0.8222222222222222)
    """
    return call("jaro_winkler_similarity", arg(left, "c"), arg(right, "c"))


def soundex(col: "Column | str") -> Column:
    """The Soundex code of a string.

    >>> spark.createDataFrame([("Peters",)], ["s"]).select(F.soundex("s")).first()
    Row(soundex(s)='P362')
    """
    return call("soundex", arg(col, "c"))


def encode(col: "Column | str", charset: str) -> Column:
    """The bytes of a string in ``charset`` (US-ASCII, ISO-8859-1, UTF-8, UTF-16BE, UTF-16LE, UTF-16, UTF-32).

    >>> bytes(spark.createDataFrame([("abc",)], ["s"]).select(F.encode("s", "UTF-16BE")).first()[0])
    b'\\x00a\\x00b\\x00c'
    """
    return call("encode", arg(col, "c"), arg(charset, "l"))


def decode(col: "Column | str", charset: str) -> Column:
    """The string whose bytes in ``charset`` are the binary ``col``.

    >>> spark.createDataFrame([(b"abc",)], ["b"]).select(F.decode("b", "UTF-8")).first()
    Row(decode(b, UTF-8)='abc')
    """
    return call("decode", arg(col, "c"), arg(charset, "l"))


def to_binary(col: "Column | str", format: "Optional[Column | str]" = None) -> Column:
    """A string's bytes read as ``format``: 'hex' (the default), 'utf-8' or 'base64'.

    >>> bytes(spark.createDataFrame([("616263",)], ["e"]).select(F.to_binary("e", F.lit("hex"))).first()[0])
    b'abc'
    """
    return call("to_binary", arg(col, "c"), *([arg(format, "c")] if format is not None else []))


def try_to_binary(col: "Column | str", format: "Optional[Column | str]" = None) -> Column:
    """``to_binary``, null where the string is not of the format.

    >>> spark.createDataFrame([("xyz",)], ["e"]).select(F.try_to_binary("e", F.lit("hex")).alias("r")).first()
    Row(r=None)
    """
    return call("try_to_binary", arg(col, "c"), *([arg(format, "c")] if format is not None else []))


def unbase64(col: "Column | str") -> Column:
    """The bytes a base64 string encodes.

    >>> bytes(spark.createDataFrame([("U3Bhcms=",)], ["e"]).select(F.unbase64("e")).first()[0])
    b'Spark'
    """
    return call("unbase64", arg(col, "c"))


def to_base32(col: "Column | str") -> Column:
    """A binary (or a string's UTF-8 bytes) in RFC 4648 base32, padded with '='.

    >>> spark.createDataFrame([(b"foobar",)], ["b"]).select(F.to_base32("b")).first()
    Row(to_base32(b)='MZXW6YTBOI======')
    """
    return call("to_base32", arg(col, "c"))


def from_base32(col: "Column | str") -> Column:
    """The bytes a base32 string encodes (refused: Spark's decoder's leniency is not matched yet).

    >>> spark.createDataFrame([("ME======",)], ["s"]).select(F.from_base32("s")).first()  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    AnalysisException: [STRATAFLOW_UNSUPPORTED] strataflow does not run `from_base32` here
    """
    return call("from_base32", arg(col, "c"))


def url_encode(str: "Column | str") -> Column:
    """``str`` encoded as ``application/x-www-form-urlencoded`` (Java's URLEncoder, UTF-8).

    >>> spark.createDataFrame([("a b/ü",)], ["s"]).select(F.url_encode("s")).first()
    Row(url_encode(s)='a+b%2F%C3%BC')
    """
    return call("url_encode", arg(str, "c"))


def url_decode(str: "Column | str") -> Column:
    """``str`` decoded from ``application/x-www-form-urlencoded`` (Java's URLDecoder, UTF-8).

    >>> spark.createDataFrame([("a+b%2F%C3%BC",)], ["s"]).select(F.url_decode("s")).first()
    Row(url_decode(s)='a b/ü')
    """
    return call("url_decode", arg(str, "c"))


def try_url_decode(str: "Column | str") -> Column:
    """``url_decode``, null where ``str`` is not a valid encoding.

    >>> spark.createDataFrame([("a+b%2F%C3%BC",)], ["s"]).select(F.try_url_decode("s")).first()
    Row(try_url_decode(s)='a b/ü')
    """
    return call("try_url_decode", arg(str, "c"))


def parse_url(url: "Column | str", partToExtract: "Column | str", key: "Optional[Column | str]" = None) -> Column:
    """A part (HOST, PATH, QUERY, REF, PROTOCOL, FILE, AUTHORITY, USERINFO) of a URL, as java.net.URI reads it.

    >>> df = spark.createDataFrame([("https://spark.apache.org/path?query=1",)], ["u"])
    >>> df.select(F.parse_url("u", F.lit("HOST")), F.parse_url("u", F.lit("QUERY"), F.lit("query"))).first()
    Row(parse_url(u, HOST)='spark.apache.org', parse_url(u, QUERY, query)='1')
    """
    return call("parse_url", arg(url, "c"), arg(partToExtract, "c"), *([arg(key, "c")] if key is not None else []))


def try_parse_url(url: "Column | str", partToExtract: "Column | str", key: "Optional[Column | str]" = None) -> Column:
    """``parse_url``, null where the URL is invalid.

    >>> df = spark.createDataFrame([("https://spark.apache.org/path?query=1",)], ["u"])
    >>> df.select(F.try_parse_url("u", F.lit("PATH"))).first()
    Row(try_parse_url(u, PATH)='/path')
    """
    return call("try_parse_url", arg(url, "c"), arg(partToExtract, "c"),
                *([arg(key, "c")] if key is not None else []))


def mask(col: "Column | str", upperChar: "Optional[Column | str]" = None, lowerChar: "Optional[Column | str]" = None,
         digitChar: "Optional[Column | str]" = None, otherChar: "Optional[Column | str]" = None) -> Column:
    """``col`` with upper-case letters as 'X', lower-case as 'x', digits as 'n' (or the characters given).

    >>> spark.createDataFrame([("AbCD123-@$#",)], ["s"]).select(F.mask("s")).first()
    Row(mask(s, X, x, n, NULL)='XxXXnnn-@$#')
    """
    from strataflow.pyspark.sql.functions.builtin import lit

    chars = [upperChar, lowerChar, digitChar, otherChar]
    defaults = ["X", "x", "n", None]
    parts = [arg(lit(d) if c is None else c, "c") for c, d in zip(chars, defaults)]
    return call("mask", arg(col, "c"), *parts)


def to_char(col: "Column | str", format: "Column | str") -> Column:
    """A number as a string by Spark's number format (refused: its format letters are not matched yet).

    >>> df = spark.createDataFrame([(7812,)], ["e"])
    >>> df.select(F.to_char("e", F.lit("99.9"))).first()  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    AnalysisException: [STRATAFLOW_UNSUPPORTED] strataflow does not run `to_char` here
    """
    return call("to_char", arg(col, "c"), arg(format, "c"))


def to_varchar(col: "Column | str", format: "Column | str") -> Column:
    """``to_char`` (refused like it).

    >>> df = spark.createDataFrame([(7812,)], ["e"])
    >>> df.select(F.to_varchar("e", F.lit("99.9"))).first()  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    AnalysisException: [STRATAFLOW_UNSUPPORTED] strataflow does not run `to_varchar` here
    """
    return call("to_varchar", arg(col, "c"), arg(format, "c"))


def to_number(col: "Column | str", format: "Column | str") -> Column:
    """A string as a decimal by Spark's number format (refused: its format letters are not matched yet).

    >>> df = spark.createDataFrame([("$78.12",)], ["e"])
    >>> df.select(F.to_number("e", F.lit("$99.99"))).first()  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    AnalysisException: [STRATAFLOW_UNSUPPORTED] strataflow does not run `to_number` here
    """
    return call("to_number", arg(col, "c"), arg(format, "c"))


def try_to_number(col: "Column | str", format: "Column | str") -> Column:
    """``to_number``, null where the string does not fit the format (refused like it).

    >>> df = spark.createDataFrame([("$78.12",)], ["e"])
    >>> df.select(F.try_to_number("e", F.lit("$99.99"))).first()  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    AnalysisException: [STRATAFLOW_UNSUPPORTED] strataflow does not run `try_to_number` here
    """
    return call("try_to_number", arg(col, "c"), arg(format, "c"))


def sentences(string: "Column | str", language: "Optional[Column | str]" = None,
              country: "Optional[Column | str]" = None) -> Column:
    """A string split into sentences of words (refused: Java's BreakIterator is not matched).

    >>> spark.createDataFrame([("Hi there.",)], ["s"]).select(F.sentences("s")).first()  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    AnalysisException: [STRATAFLOW_UNSUPPORTED] strataflow does not run `sentences` here
    """
    extra = [arg(x, "c") for x in (language, country) if x is not None]
    return call("sentences", arg(string, "c"), *extra)


def is_valid_utf8(str: "Column | str") -> Column:
    """True where the string is valid UTF-8 (every string strataflow holds is).

    >>> spark.createDataFrame([("café",)], ["s"]).select(F.is_valid_utf8("s")).first()
    Row(is_valid_utf8(s)=True)
    """
    return call("is_valid_utf8", arg(str, "c"))


def make_valid_utf8(str: "Column | str") -> Column:
    """The string with invalid UTF-8 sequences replaced by U+FFFD.

    >>> spark.createDataFrame([("café",)], ["s"]).select(F.make_valid_utf8("s")).first()
    Row(make_valid_utf8(s)='café')
    """
    return call("make_valid_utf8", arg(str, "c"))


def validate_utf8(str: "Column | str") -> Column:
    """The string, or an error where it is not valid UTF-8.

    >>> spark.createDataFrame([("café",)], ["s"]).select(F.validate_utf8("s")).first()
    Row(validate_utf8(s)='café')
    """
    return call("validate_utf8", arg(str, "c"))


def try_validate_utf8(str: "Column | str") -> Column:
    """The string, or null where it is not valid UTF-8.

    >>> spark.createDataFrame([("café",)], ["s"]).select(F.try_validate_utf8("s")).first()
    Row(try_validate_utf8(s)='café')
    """
    return call("try_validate_utf8", arg(str, "c"))


def collate(col: "Column | str", collation: str) -> Column:
    """The string under ``collation`` (UTF8_BINARY, the default, only; others are refused).

    >>> spark.createDataFrame([("a",)], ["s"]).select(F.collate("s", "UTF8_BINARY")).first()
    Row(collate(s, UTF8_BINARY)='a')
    """
    return call("collate", arg(col, "c"), arg(collation, "l"))


def collation(col: "Column | str") -> Column:
    """The name of a string's collation (strataflow's strings are all UTF8_BINARY).

    >>> spark.createDataFrame([("a",)], ["s"]).select(F.collation("s")).first()
    Row(collation(s)='SYSTEM.BUILTIN.UTF8_BINARY')
    """
    return call("collation", arg(col, "c"))
