"""Spark SQL as sqlglot reads it, with each function call's name as written.

Spark names an unnamed column after the call as the program wrote it (``pow(a, b)`` is
``pow(a, b)``, ``power(a, b)`` is ``POWER(a, b)``, ``ltrim(s)`` is not ``trim(s)``);
sqlglot builds one node kind for each family of names, so the parser keeps the written
name in the node's ``meta["written"]`` for ``column_names.spark_name``.
"""

from __future__ import annotations

from typing import Any, Callable

from sqlglot.dialects.spark import Spark

__all__ = ["SparkSQL"]

#: calls sqlglot parses by a parser of their own, which records no name: Spark names
#: ``substr(s, 1, 2)`` and ``substring(s, 1, 2)`` apart, ``char`` and ``chr`` too
_NAMED_BY_OWN_PARSER = ("SUBSTR", "SUBSTRING", "POSITION", "CHAR", "CHR")


def _keeping_name(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def parse_named(parser: Any) -> Any:
        written = parser._tokens[parser._index - 2].text  # the name, before its parenthesis
        node = parse(parser)
        if node is not None:
            node.meta["written"] = written
        return node

    return parse_named


class SparkSQL(Spark):
    """Spark's dialect, remembering each function's written name."""

    ORIGINAL_NAME_META_KEY = "written"

    class Parser(Spark.Parser):
        FUNCTION_PARSERS = {**Spark.Parser.FUNCTION_PARSERS,
                            **{name: _keeping_name(Spark.Parser.FUNCTION_PARSERS[name])
                               for name in _NAMED_BY_OWN_PARSER}}
