"""PySpark partition functions as strataflow ones: PySpark hands a partition function an
*iterator* over the records, strataflow hands it the partition's value (a list, or a
batch such as an Arrow table or an ndarray). These adapters make the iterator.

Apart because both ``RDD`` (``rdd_transforms.py``) and ``RDDBarrier`` (``rdd_barrier.py``)
wrap partition functions this way.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from strataflow.common.batch import iter_rows

__all__ = ["on_iterator", "on_index_iterator"]


def on_iterator(f: Callable[[Iterator[Any]], Iterable[Any]]) -> Callable[[Any], Iterable[Any]]:
    """A PySpark partition function (iterator in) as a strataflow one (value in)."""
    return lambda v: f(iter_rows(v))


def on_index_iterator(f: Callable[[int, Iterator[Any]], Iterable[Any]]) -> Callable[[int, Any], Iterable[Any]]:
    """A PySpark ``(index, iterator)`` partition function as a strataflow ``(index, value)`` one."""
    return lambda i, v: f(i, iter_rows(v))
