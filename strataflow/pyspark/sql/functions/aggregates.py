"""``pyspark.sql.functions``: aggregate functions and window value functions (PySpark's Aggregate and Window Functions).

Each function is defined with PySpark's signature and an example; ``call`` builds the
node by Spark's name, and ``sql/semantics`` gives it Spark's meaning or refuses it.
"""

from __future__ import annotations

__all__: list[str] = []
