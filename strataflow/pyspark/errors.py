"""The exceptions of the PySpark layer: :class:`UnsupportedOperation` for what strataflow
does not offer (the Hadoop formats, DataFrames) and :class:`Py4JJavaError` where PySpark's
JVM would refuse an operation.

Apart from the classes that raise them (``RDD``, ``SparkContext``, ``SparkSession``), so
that each of those imports them without importing the others.
"""

from __future__ import annotations

__all__ = ["UnsupportedOperation", "Py4JJavaError", "AnalysisException", "unsupported"]


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
