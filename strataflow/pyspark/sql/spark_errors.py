"""A partition query's failure as the exception PySpark raises for it.

The rules of ``semantics`` make a query fail where Spark's would, with DuckDB's
``error('[ERROR_CLASS] message')``; DuckDB's own integer overflow is Spark's
ARITHMETIC_OVERFLOW. Each becomes PySpark's exception of that error class
(``ArithmeticException``, ``NumberFormatException``, ``IllegalArgumentException``...), so a program's ``except``
clauses and ``getCondition()`` see what they would under PySpark.
"""

from __future__ import annotations

import re

from strataflow.pyspark.errors import (ArithmeticException, ArrayIndexOutOfBoundsException, DateTimeException,
                                       IllegalArgumentException, NumberFormatException, PythonException,
                                       SparkRuntimeException, UnsupportedOperationException)

__all__ = ["engine_error"]

_KINDS = {
    "DIVIDE_BY_ZERO": ArithmeticException, "REMAINDER_BY_ZERO": ArithmeticException,
    "ARITHMETIC_OVERFLOW": ArithmeticException, "BINARY_ARITHMETIC_OVERFLOW": ArithmeticException,
    "CAST_OVERFLOW": ArithmeticException, "NUMERIC_VALUE_OUT_OF_RANGE": ArithmeticException,
    "CAST_INVALID_INPUT": NumberFormatException, "DATETIME_FIELD_OUT_OF_BOUNDS": DateTimeException,
    "CANNOT_PARSE_TIMESTAMP": DateTimeException, "INVALID_ARRAY_INDEX_IN_ELEMENT_AT": ArrayIndexOutOfBoundsException,
    "INVALID_INDEX_OF_ZERO": ArrayIndexOutOfBoundsException, "STRATAFLOW_UNSUPPORTED": UnsupportedOperationException,
    "INVALID_PARAMETER_VALUE": IllegalArgumentException, "INVALID_URL": IllegalArgumentException,
    "USER_RAISED_EXCEPTION": SparkRuntimeException, "NULL_MAP_KEY": SparkRuntimeException,
    "DUPLICATED_MAP_KEY": SparkRuntimeException, "COMPARATOR_RETURNS_NULL": SparkRuntimeException,
    "_LEGACY_ERROR_TEMP_2128": SparkRuntimeException, "DATETIME_OVERFLOW": ArithmeticException,
    "ILLEGAL_DAY_OF_WEEK": IllegalArgumentException, "INVALID_FRACTION_OF_SECOND": DateTimeException,
}
_CLASS = re.compile(r"\[([A-Z0-9_]+(?:\.[A-Z0-9_]+)?)\] (.*)", re.S)


_UDF = "Python exception occurred while executing the UDF: UdfFailed: "


def engine_error(exc: BaseException) -> SparkRuntimeException | None:
    """PySpark's exception for DuckDB's error ``exc``; None where it is none of Spark's."""
    text = str(exc)
    if _UDF in text:  # a UDF raised: PySpark's PythonException, with the user's traceback
        return PythonException("\n  An exception was thrown from the Python worker. Please see the stack trace "
                               "below.\n" + text.split(_UDF, 1)[1], "PYTHON_EXCEPTION")
    m = _CLASS.search(text)
    if m is not None and m.group(1).split(".")[0] in _KINDS:
        cls = m.group(1).split(".")[0]
        return _KINDS[cls](f"[{m.group(1)}] {m.group(2).strip()}", cls)
    if type(exc).__name__ == "OutOfRangeException" and "Overflow" in text:
        return ArithmeticException(f"[ARITHMETIC_OVERFLOW] {text.split(': ', 1)[-1]}. Use 'try_' variants to "
                                   f"tolerate overflow and return NULL instead. If necessary set "
                                   f"\"spark.sql.ansi.enabled\" to \"false\" to bypass this error.",
                                   "ARITHMETIC_OVERFLOW")
    return None
