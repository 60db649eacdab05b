"""``strataflow.pyspark.sql``: PySpark's ``pyspark.sql`` over strataflow.

    from strataflow.pyspark.sql import SparkSession, functions as F, Window, Row, types

``SparkSession`` (its RDD side, and DataFrames: ``createDataFrame``, ``read``, ``sql``),
``DataFrame`` over Arrow partitions, ``Column``, ``functions``, ``Window``, ``Row`` and
``types``. docs/dataframes.md says what is supported and how it differs from PySpark.
"""

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql import functions, types
from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.dataframe import DataFrame, DataFrameNaFunctions
from strataflow.pyspark.sql.group import GroupedData
from strataflow.pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
from strataflow.pyspark.sql.row import Row
from strataflow.pyspark.sql.session import RuntimeConfig, SparkSession
from strataflow.pyspark.sql.window import Window, WindowSpec

__all__ = ["SparkSession", "RuntimeConfig", "DataFrame", "DataFrameNaFunctions", "Column", "Row", "GroupedData",
           "DataFrameReader", "DataFrameWriter", "Window", "WindowSpec", "AnalysisException", "functions", "types"]
