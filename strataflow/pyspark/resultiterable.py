"""``ResultIterable``: the values of one key after ``groupByKey``/``cogroup`` (PySpark's)."""

from __future__ import annotations

from typing import Generic, Iterator, Sized, TypeVar

__all__ = ["ResultIterable"]

T = TypeVar("T")


class ResultIterable(Generic[T]):
    """A group's values: iterable any number of times, with ``len()``; ``ResultIterable[T]``
    works as a type hint.

    >>> [(key, values)] = sc.parallelize([("a", 1), ("a", 2)]).groupByKey().collect()
    >>> type(values).__name__, len(values), sorted(values), sorted(values)
    ('ResultIterable', 2, [1, 2], [1, 2])
    """

    def __init__(self, data: Sized) -> None:
        self.data = data
        self.index = 0
        self.maxindex = len(data)

    def __iter__(self) -> Iterator[T]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"ResultIterable({list(self.data)!r})"
