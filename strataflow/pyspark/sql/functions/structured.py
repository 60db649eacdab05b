"""``pyspark.sql.functions``: JSON, CSV and XML functions, sort-order helpers and the rest of PySpark's Misc Functions.

Each function is defined with PySpark's signature and an example; ``call`` builds the
node by Spark's name, and ``sql/semantics`` gives it Spark's meaning or refuses it.
"""

from __future__ import annotations

__all__: list[str] = []
