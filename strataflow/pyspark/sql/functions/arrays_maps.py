"""``pyspark.sql.functions``: array, map and struct functions, the higher-order ones and generators (PySpark's Collection, Map, Struct and Generator Functions).

Each function is defined with PySpark's signature and an example; ``call`` builds the
node by Spark's name, and ``sql/semantics`` gives it Spark's meaning or refuses it.
"""

from __future__ import annotations

__all__: list[str] = []
