"""JSON, CSV and XML functions and the rest of Spark's misc functions as Spark computes them: the
rules of the ``functions.structured`` family (merged by ``registry``).
"""

from __future__ import annotations

__all__ = ["KEEP", "RULES", "ANONYMOUS", "REFUSE"]

#: kinds whose DuckDB answer the suite found equal to Spark's
KEEP: frozenset[type] = frozenset()
#: kinds rewritten to Spark's meaning
RULES: dict = {}
#: Anonymous functions (no sqlglot kind) by name: rules
ANONYMOUS: dict = {}
#: kinds refused: (why, instead)
REFUSE: dict[type, tuple[str, str]] = {}
