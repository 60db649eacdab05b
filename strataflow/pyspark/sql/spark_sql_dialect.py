"""Spark SQL as sqlglot reads it, with each function call's name as written.

Spark names an unnamed column after the call as the program wrote it (``pow(a, b)`` is
``pow(a, b)``, ``power(a, b)`` is ``POWER(a, b)``, ``ltrim(s)`` is not ``trim(s)``);
sqlglot builds one node kind for each family of names, so the parser keeps the written
name in the node's ``meta["written"]`` for ``column_names.spark_name``.
"""

from __future__ import annotations

from sqlglot.dialects.spark import Spark

__all__ = ["SparkSQL"]


class SparkSQL(Spark):
    """Spark's dialect, remembering each function's written name."""

    ORIGINAL_NAME_META_KEY = "written"
