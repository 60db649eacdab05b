"""``Window``: the partitioning, order and frame of a window function (``F.row_number().over(w)``).

A select with window functions exchanges rows by the window's partition keys (all rows to
one partition when it has none, as Spark warns it must), then each partition's query
computes the windows (``plan.py``).
"""

from __future__ import annotations

import sys

from sqlglot import exp

from strataflow.pyspark.sql.column import Column, to_expr

__all__ = ["Window", "WindowSpec"]


def _ordered(c: "Column | str") -> exp.Ordered:
    e = to_expr(c)
    return e if isinstance(e, exp.Ordered) else exp.Ordered(this=e, desc=False, nulls_first=True)


def _flat(cols: tuple) -> tuple:
    return tuple(cols[0]) if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols


def _bound(v: int, start: bool) -> tuple[str, str | None]:
    if v <= Window.unboundedPreceding:
        return "UNBOUNDED", "PRECEDING"
    if v >= Window.unboundedFollowing:
        return "UNBOUNDED", "FOLLOWING"
    if v == 0:
        return "CURRENT ROW", None
    return str(abs(v)), "PRECEDING" if v < 0 else "FOLLOWING"


class WindowSpec:
    """A window: ``partitionBy``, ``orderBy``, ``rowsBetween``/``rangeBetween`` each give a new one.

    >>> from strataflow.pyspark.sql import functions as F
    >>> w = Window.partitionBy("k").orderBy("v").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    >>> df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 3)], ["k", "v"])
    >>> sorted(df.select("k", F.sum("v").over(w).alias("run")).collect())
    [Row(k='a', run=1), Row(k='a', run=3), Row(k='b', run=3)]
    """

    def __init__(self, partition: tuple = (), order: tuple = (), frame: tuple | None = None) -> None:
        self._partition, self._order, self._frame = partition, order, frame

    def partitionBy(self, *cols: "Column | str") -> "WindowSpec":
        """This window, partitioned by ``cols``.

        >>> Window.orderBy("v").partitionBy("k")._partition[0].name
        'k'
        """
        return WindowSpec(tuple(to_expr(c) for c in _flat(cols)), self._order, self._frame)

    def orderBy(self, *cols: "Column | str") -> "WindowSpec":
        """This window, ordered by ``cols``.

        >>> len(Window.partitionBy("k").orderBy("a", "b")._order)
        2
        """
        return WindowSpec(self._partition, tuple(_ordered(c) for c in _flat(cols)), self._frame)

    def rowsBetween(self, start: int, end: int) -> "WindowSpec":
        """A frame of rows from ``start`` to ``end`` relative to the current row.

        >>> Window.orderBy("v").rowsBetween(-1, 1)._frame
        ('ROWS', -1, 1)
        """
        return WindowSpec(self._partition, self._order, ("ROWS", start, end))

    def rangeBetween(self, start: int, end: int) -> "WindowSpec":
        """A frame of the rows whose order value is within ``start``..``end`` of the current row's.

        >>> Window.orderBy("v").rangeBetween(Window.unboundedPreceding, 0)._frame[0]
        'RANGE'
        """
        return WindowSpec(self._partition, self._order, ("RANGE", start, end))

    def _over(self, e: exp.Expression) -> exp.Window:
        spec = None
        if self._frame is not None:
            kind, lo, hi = self._frame
            (s, ss), (en, es) = _bound(lo, True), _bound(hi, False)
            spec = exp.WindowSpec(kind=kind, start=s, start_side=ss, end=en, end_side=es)
        order = exp.Order(expressions=list(self._order)) if self._order else None
        return exp.Window(this=e, partition_by=list(self._partition) or None, order=order, spec=spec)


class Window:
    """Where windows start: ``Window.partitionBy(...)``, ``Window.orderBy(...)``, and the
    frame bounds ``unboundedPreceding``, ``unboundedFollowing``, ``currentRow``.

    >>> Window.currentRow, Window.unboundedPreceding < -(2 ** 62)
    (0, True)
    """

    unboundedPreceding: int = -sys.maxsize - 1
    unboundedFollowing: int = sys.maxsize
    currentRow: int = 0

    @staticmethod
    def partitionBy(*cols: "Column | str") -> WindowSpec:
        """A window partitioned by ``cols``.

        >>> isinstance(Window.partitionBy("k"), WindowSpec)
        True
        """
        return WindowSpec().partitionBy(*cols)

    @staticmethod
    def orderBy(*cols: "Column | str") -> WindowSpec:
        """A window ordered by ``cols``.

        >>> isinstance(Window.orderBy("v"), WindowSpec)
        True
        """
        return WindowSpec().orderBy(*cols)

    @staticmethod
    def rowsBetween(start: int, end: int) -> WindowSpec:
        """A window with a frame of rows.

        >>> Window.rowsBetween(-2, 0)._frame
        ('ROWS', -2, 0)
        """
        return WindowSpec().rowsBetween(start, end)

    @staticmethod
    def rangeBetween(start: int, end: int) -> WindowSpec:
        """A window with a frame of values.

        >>> Window.rangeBetween(-5, 5)._frame
        ('RANGE', -5, 5)
        """
        return WindowSpec().rangeBetween(start, end)
