"""Spark's meaning for every expression a DataFrame or Spark SQL query runs, or a clear
refusal: never DuckDB's meaning under Spark's name.

Each partition's query runs in DuckDB, whose functions often share Spark's names but not
their answers (``round`` of a double, ``dayofweek``, division by zero, casts, decimal
result types...). When a DataFrame resolves an expression against its schema
(``resolve.py``), :func:`spark_semantics` walks it innermost first and gives each node
to its rule in :mod:`.registry`: a rule keeps the node (DuckDB's answer was checked equal
to Spark's by the conformance suite, ``tests/conformance``), rewrites it into DuckDB SQL
with Spark's semantics (``numeric``, ``casts``, ``dates``, ``zones``, ``text``, ``arrays``),
or refuses it with :class:`~strataflow.pyspark.errors.AnalysisException` of error class
``STRATAFLOW_UNSUPPORTED`` naming the function and what to use instead. A function with
no rule is refused: only what the suite has checked runs.

The session's ``spark.sql.ansi.enabled`` (Spark 4's default: true) and
``spark.sql.session.timeZone`` (default UTC) choose between rules.
"""

from strataflow.pyspark.sql.semantics.core import Rules, SqlConf, refusal
from strataflow.pyspark.sql.semantics.walk import spark_semantics

__all__ = ["SqlConf", "Rules", "refusal", "spark_semantics"]
