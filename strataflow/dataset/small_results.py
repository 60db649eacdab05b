"""More actions: ``top``, ``take_ordered``, ``is_empty``, ``to_local_iterator`` and
``tree_reduce``. Each partition does its share (its own best ``num`` by a heap, its own
partial reduction) so only small results travel to the caller; ``to_local_iterator``
instead brings one partition at a time, so the caller holds no more than the largest."""

from __future__ import annotations

import heapq
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator

from strataflow.dataset.actions import _EMPTY, EmptyDatasetError
from strataflow.common.batch import iter_rows, rows_list

__all__ = ["MoreActionOps"]


def _check_num(num: int, what: str) -> None:
    if not isinstance(num, int) or isinstance(num, bool):
        raise TypeError(f"{what}: num must be an int, got {type(num).__name__}")
    if num < 0:
        raise ValueError(f"{what}: num must be >= 0, got {num}")


class MoreActionOps:
    """A mixin of Dataset."""

    def top(self, num: int, key: Callable[[Any], Any] | None = None) -> list:
        """The ``num`` largest records (by ``key(record)`` when given), largest first.

        >>> ctx.parallelize([5, 1, 4, 2]).top(2)
        [5, 4]
        """
        _check_num(num, "top")
        if num == 0:
            return []
        parts = self._run(lambda v: heapq.nlargest(num, iter_rows(v), key=key), description=f"top {self.label}")
        return heapq.nlargest(num, (x for p in parts for x in p), key=key)

    def take_ordered(self, num: int, key: Callable[[Any], Any] | None = None) -> list:
        """The ``num`` smallest records (by ``key(record)`` when given), smallest first.

        >>> ctx.parallelize([5, 1, 4, 2]).take_ordered(2), ctx.parallelize([5, 1, 4]).take_ordered(1, key=lambda x: -x)
        ([1, 2], [5])
        """
        _check_num(num, "take_ordered")
        if num == 0:
            return []
        parts = self._run(lambda v: heapq.nsmallest(num, iter_rows(v), key=key),
                          description=f"take_ordered {self.label}")
        return heapq.nsmallest(num, (x for p in parts for x in p), key=key)

    def is_empty(self) -> bool:
        """True when the dataset has no record (scans partitions only until it finds one).

        >>> ctx.parallelize([], 2).is_empty(), ctx.parallelize([0]).is_empty()
        (True, False)
        """
        return self.num_partitions == 0 or not self.take(1)

    def to_local_iterator(self, prefetch_partitions: bool = False) -> Iterator[Any]:
        """The records, one partition's job at a time (the caller holds one partition,
        not the whole dataset). With ``prefetch_partitions`` the next partition's job runs
        while the caller consumes the current one.

        >>> list(ctx.parallelize(range(5), 2).to_local_iterator())
        [0, 1, 2, 3, 4]
        """
        n = self.num_partitions

        def fetch(p: int) -> list:
            return self._run(rows_list, [p], f"to_local_iterator {self.label} partition {p}")[0]

        if not prefetch_partitions or n < 2:
            for p in range(n):
                yield from fetch(p)
            return
        pool = ThreadPoolExecutor(1, thread_name_prefix="strataflow-prefetch")
        try:
            nxt = pool.submit(fetch, 0)
            for p in range(n):
                rows = nxt.result()
                if p + 1 < n:
                    nxt = pool.submit(fetch, p + 1)
                yield from rows
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def tree_reduce(self, f: Callable[[Any, Any], Any], depth: int = 2) -> Any:
        """``reduce`` whose partial results are combined in ``depth`` levels of tasks
        (``tree_aggregate``); ValueError when the dataset is empty.

        >>> ctx.parallelize(range(10), 4).tree_reduce(lambda a, b: a + b)
        45
        """

        def op(a, b):
            if a is _EMPTY:
                return b
            if b is _EMPTY:
                return a
            return f(a, b)

        out = self.tree_aggregate(_EMPTY, op, op, depth)
        if out is _EMPTY:
            raise EmptyDatasetError(f"tree_reduce: dataset {self.label} is empty")
        return out
