"""``strataflow.pyspark.sql``: PySpark's ``pyspark.sql`` over strataflow.

    from strataflow.pyspark.sql import SparkSession, functions as F, Window, Row, types

``SparkSession`` (its RDD side, and DataFrames: ``createDataFrame``, ``read``, ``sql``),
``DataFrame`` over Arrow partitions, ``Column``, ``functions``, ``Window``, ``Row`` and
``types``. docs/dataframes.md says what is supported and how it differs from PySpark.
"""

from __future__ import annotations

import importlib
from typing import Any

#: exported name -> the module that defines it. Loaded on first use (PEP 562), so that an
#: executor, which imports ``strataflow.pyspark.sql.tasks`` to run a partition's query,
#: loads neither sqlglot nor the DataFrame API.
_EXPORTS = {"SparkSession": "session", "RuntimeConfig": "session", "DataFrame": "dataframe",
            "DataFrameNaFunctions": "dataframe", "Column": "column", "Row": "row", "GroupedData": "group",
            "DataFrameReader": "readwriter", "DataFrameWriter": "readwriter", "Window": "window",
            "WindowSpec": "window", "functions": None, "types": None}

__all__ = ["SparkSession", "RuntimeConfig", "DataFrame", "DataFrameNaFunctions", "Column", "Row", "GroupedData",
           "DataFrameReader", "DataFrameWriter", "Window", "WindowSpec", "AnalysisException", "functions", "types"]


def __getattr__(name: str) -> Any:
    if name == "AnalysisException":
        from strataflow.pyspark.errors import AnalysisException

        value: Any = AnalysisException
    elif name in _EXPORTS:
        module = _EXPORTS[name]
        value = importlib.import_module(f"{__name__}.{module or name}")
        if module is not None:
            value = getattr(value, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
