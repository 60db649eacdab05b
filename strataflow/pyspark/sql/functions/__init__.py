"""``pyspark.sql.functions``: the functions DataFrame programs build columns with, one
module a family as PySpark's reference groups them (``builtin``: columns, literals,
``when``, ranking functions and the spec table; ``maths``, ``strings``, ``datetimes``,
``arrays_maps``, ``aggregates``, ``structured``). A name of PySpark's module that is in
none of them is refused by name (``MissingFunction``).
"""

from __future__ import annotations

from typing import Any

from strataflow.pyspark.sql.functions import aggregates, arrays_maps, builtin, datetimes, maths, strings, structured
from strataflow.pyspark.sql.functions.aggregates import *  # noqa: F401,F403
from strataflow.pyspark.sql.functions.arrays_maps import *  # noqa: F401,F403
from strataflow.pyspark.sql.functions.builtin import *  # noqa: F401,F403
from strataflow.pyspark.sql.functions.datetimes import *  # noqa: F401,F403
from strataflow.pyspark.sql.functions.maths import *  # noqa: F401,F403
from strataflow.pyspark.sql.functions.strings import *  # noqa: F401,F403
from strataflow.pyspark.sql.functions.structured import *  # noqa: F401,F403

#: the family modules, in the order their names override the spec table's (``builtin`` first)
FAMILIES = (builtin, maths, strings, datetimes, arrays_maps, aggregates, structured)

__all__ = sorted({n for m in FAMILIES for n in m.__all__})
globals().update({n: getattr(m, n) for m in FAMILIES for n in m.__all__})


class MissingFunction(AttributeError):
    """A name of PySpark's ``functions`` that strataflow does not have yet: an
    AttributeError (``hasattr`` says False), whose message names it and what to do."""


def __getattr__(name: str) -> Any:
    from strataflow.pyspark.sql.function_names import PYSPARK_FUNCTIONS

    if name in PYSPARK_FUNCTIONS:
        raise MissingFunction(f"strataflow does not have pyspark.sql.functions.{name} yet (docs/dataframes.md lists "
                              f"what it has): use F.expr with a function it has, or a Python UDF (F.udf)")
    raise AttributeError(f"module 'pyspark.sql.functions' has no attribute '{name}'")
