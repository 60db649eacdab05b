"""The exceptions of the PySpark layer: :class:`UnsupportedOperation` for what strataflow
does not offer (the Hadoop formats, DataFrames) and :class:`Py4JJavaError` where PySpark's
JVM would refuse an operation.

Apart from the classes that raise them (``RDD``, ``SparkContext``, ``SparkSession``), so
that each of those imports them without importing the others.
"""

from __future__ import annotations

__all__ = ["UnsupportedOperation", "Py4JJavaError", "AnalysisException", "unsupported", "SparkRuntimeException",
           "ArithmeticException", "NumberFormatException", "DateTimeException", "ArrayIndexOutOfBoundsException",
           "UnsupportedOperationException", "PythonException", "IllegalArgumentException"]


class UnsupportedOperation(NotImplementedError):
    """A PySpark operation strataflow does not offer (Hadoop formats, DataFrames); its message
    names what to use instead. A NotImplementedError, so ``except NotImplementedError`` catches it.

    >>> try:
    ...     sc.parallelize([("k", 1)]).saveAsSequenceFile(tmp_dir + "/seq")
    ... except UnsupportedOperation as exc:
    ...     isinstance(exc, NotImplementedError)
    True
    """


class Py4JJavaError(ValueError):
    """What PySpark raises where the JVM refuses an operation (here: ``persist`` at a second
    storage level). Named as Py4J names it, so that code and tests written against PySpark
    see the exception they expect; it is also a ValueError, strataflow's own error there."""


Py4JJavaError.__module__ = "py4j.protocol"  # PySpark's traceback line: py4j.protocol.Py4JJavaError


def unsupported(what: str, why: str = "Hadoop input and output formats need the JVM") -> UnsupportedOperation:
    """The error for a Hadoop format (or other JVM-only feature) ``what``, naming what to use instead."""
    return UnsupportedOperation(f"{what} is not supported in strataflow ({why}); "
                                "use saveAsPickleFile/pickleFile or saveAsTextFile/textFile instead")


class AnalysisException(Exception):
    """A DataFrame or SQL query that cannot be resolved: a column that does not exist (the
    message lists the ones that do), an ambiguous reference, a table that is not a view.
    PySpark's ``pyspark.errors.AnalysisException``, with Spark's error class in brackets
    at the start of the message.

    >>> try:
    ...     raise AnalysisException("[UNRESOLVED_COLUMN.WITH_SUGGESTION] no column `x`", "UNRESOLVED_COLUMN")
    ... except AnalysisException as exc:
    ...     exc.getErrorClass()
    'UNRESOLVED_COLUMN'
    """

    def __init__(self, message: str, error_class: str | None = None) -> None:
        super().__init__(message)
        self._error_class = error_class

    def getErrorClass(self) -> str | None:
        """Spark's name for the kind of error (``UNRESOLVED_COLUMN``, ``AMBIGUOUS_REFERENCE``...).

        >>> AnalysisException("m", "TABLE_OR_VIEW_NOT_FOUND").getErrorClass()
        'TABLE_OR_VIEW_NOT_FOUND'
        """
        return self._error_class

    def getCondition(self) -> str | None:
        """PySpark 4's name for ``getErrorClass``.

        >>> AnalysisException("m", "AMBIGUOUS_REFERENCE").getCondition()
        'AMBIGUOUS_REFERENCE'
        """
        return self._error_class

    def __reduce__(self):  # the error class travels with it (from an executor to the driver)
        return (type(self), (str(self), self._error_class))


class SparkRuntimeException(Exception):
    """A query that fails as it runs, with Spark's error class (PySpark's
    ``pyspark.errors.SparkRuntimeException`` and its kinds below): a division by zero or an
    overflow under ``spark.sql.ansi.enabled``, a value a cast cannot convert, an index out
    of bounds.

    >>> SparkRuntimeException("[DIVIDE_BY_ZERO] Division by zero.", "DIVIDE_BY_ZERO").getCondition()
    'DIVIDE_BY_ZERO'
    """

    def __init__(self, message: str, error_class: str | None = None) -> None:
        super().__init__(message)
        self._error_class = error_class

    def getErrorClass(self) -> str | None:
        """Spark's name for the kind of error (that of the executor's error, when raised
        on the driver as the job's failure)."""
        own = self.__dict__.get("_error_class")
        if own is None and isinstance(self.__cause__, SparkRuntimeException):
            return self.__cause__.getErrorClass()
        return own

    def getCondition(self) -> str | None:
        """PySpark 4's name for ``getErrorClass``."""
        return self.getErrorClass()

    def __reduce__(self):
        return (type(self), (str(self), self._error_class))


class ArithmeticException(SparkRuntimeException, ArithmeticError):
    """DIVIDE_BY_ZERO, REMAINDER_BY_ZERO, ARITHMETIC_OVERFLOW, CAST_OVERFLOW, NUMERIC_VALUE_OUT_OF_RANGE."""


class NumberFormatException(SparkRuntimeException, ValueError):
    """CAST_INVALID_INPUT: a string that is not a number of the cast's type."""


class DateTimeException(SparkRuntimeException, ValueError):
    """DATETIME_FIELD_OUT_OF_BOUNDS, CANNOT_PARSE_TIMESTAMP."""


class ArrayIndexOutOfBoundsException(SparkRuntimeException, IndexError):
    """INVALID_ARRAY_INDEX_IN_ELEMENT_AT, INVALID_INDEX_OF_ZERO."""


class UnsupportedOperationException(SparkRuntimeException, NotImplementedError):
    """STRATAFLOW_UNSUPPORTED at run time: a value whose answer strataflow cannot give as
    Spark would (the message names the function and what to use instead)."""


class IllegalArgumentException(SparkRuntimeException, ValueError):
    """PySpark's ``IllegalArgumentException``: Spark's INVALID_PARAMETER_VALUE (``getbit`` of
    a position past the type's width) and INVALID_URL (``parse_url`` under ANSI mode), which
    Spark raises as Java's IllegalArgumentException, not as a SparkRuntimeException."""


class PythonException(SparkRuntimeException):
    """A Python UDF raised (PySpark's ``pyspark.errors.PythonException``): the message is
    the traceback of the user's function, its line included, as PySpark shows it.

    >>> print(PythonException("Traceback (most recent call last):\\n  File \\"job.py\\", line 4, in parse\\nValueError: x"))
    Traceback (most recent call last):
      File "job.py", line 4, in parse
    ValueError: x
    """
