"""JSON, CSV and XML functions and the rest of Spark's misc functions as Spark computes them: the
rules of the ``functions.structured`` family (merged by ``registry``).

``typeof`` is known when the plan is made: the Spark type of its argument's Arrow type,
written as Spark's ``simpleString``.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, typed

__all__ = ["KEEP", "RULES", "ANONYMOUS", "REFUSE"]


def _typeof(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``typeof(x)``: the argument's Spark type as text, a constant of the plan."""
    from strataflow.pyspark.sql.types import from_arrow

    t = rules.type_of(node.this)
    if t is None:
        raise rules.refuse(node, "the argument's type is not known before it runs", "df.schema or df.dtypes")
    lit = exp.Literal.string(from_arrow(t).simpleString())
    lit.meta["internal"] = True
    return typed(lit, pa.string())


#: kinds whose DuckDB answer the suite found equal to Spark's
KEEP: frozenset[type] = frozenset()
#: kinds rewritten to Spark's meaning
RULES: dict = {exp.Typeof: _typeof}
#: Anonymous functions (no sqlglot kind) by name: rules
ANONYMOUS: dict = {}
#: kinds refused: (why, instead)
REFUSE: dict[type, tuple[str, str]] = {}
