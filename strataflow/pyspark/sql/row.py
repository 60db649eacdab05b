"""``Row``: PySpark's record of a DataFrame, a tuple whose items also have names.

``Row(name="Alice", age=11)`` is a row (fields in the order given), ``Row("name", "age")``
a row *class* that makes rows of those fields when called. ``collect`` returns these, so
``row.age``, ``row["age"]``, ``row[1]``, ``asDict()`` and tuple equality all work as in
PySpark.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Row"]


class Row(tuple):
    """A tuple with named fields.

    >>> r = Row(name="Alice", age=11)
    >>> r, r.age, r["name"], r[1], r == ("Alice", 11)
    (Row(name='Alice', age=11), 11, 'Alice', 11, True)
    >>> Person = Row("name", "age")
    >>> Person("Bob", 3)
    Row(name='Bob', age=3)
    """

    __fields__: list[str]

    def __new__(cls, *args: Any, **kwargs: Any) -> "Row":
        if args and kwargs:
            raise ValueError("Can not use both args and kwargs to create Row")
        if kwargs:
            row = tuple.__new__(cls, list(kwargs.values()))
            row.__fields__ = list(kwargs)
            return row
        return tuple.__new__(cls, args)

    @classmethod
    def _of(cls, fields: list[str], values: "tuple | list") -> "Row":
        """A row of ``values`` named ``fields`` (names may repeat, as after a join)."""
        row = tuple.__new__(cls, values)
        row.__fields__ = list(fields)
        return row

    def asDict(self, recursive: bool = False) -> dict[str, Any]:
        """The row as a dict of field -> value (nested rows, lists and dicts too if ``recursive``).

        >>> Row(key=1, value=Row(a=2)).asDict(True)
        {'key': 1, 'value': {'a': 2}}
        """
        if not hasattr(self, "__fields__"):
            raise TypeError("Cannot convert a Row class into dict")

        def conv(v: Any) -> Any:
            if isinstance(v, Row) and hasattr(v, "__fields__"):
                return v.asDict(True)
            if isinstance(v, list):
                return [conv(x) for x in v]
            if isinstance(v, dict):
                return {k: conv(x) for k, x in v.items()}
            return v

        return {k: conv(v) if recursive else v for k, v in zip(self.__fields__, self)}

    def __call__(self, *args: Any) -> "Row":
        if hasattr(self, "__fields__") or len(args) > len(self):
            raise ValueError(f"Can not create Row with fields {self}, expected {len(self)} values but got {args}")
        return Row._of(list(self), args)

    def __contains__(self, item: object) -> bool:
        if hasattr(self, "__fields__"):
            return item in self.__fields__
        return tuple.__contains__(self, item)

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, (int, slice)):
            return tuple.__getitem__(self, item)
        try:
            return tuple.__getitem__(self, self.__fields__.index(item))
        except (AttributeError, ValueError):
            raise ValueError(item) from None

    def __getattr__(self, item: str) -> Any:
        if item.startswith("__"):
            raise AttributeError(item)
        try:
            return tuple.__getitem__(self, self.__fields__.index(item))
        except (AttributeError, ValueError):
            raise AttributeError(item) from None

    def __setattr__(self, key: str, value: Any) -> None:
        if key != "__fields__":
            raise RuntimeError("Row is read-only")
        object.__setattr__(self, key, value)

    def __reduce__(self) -> Any:
        if hasattr(self, "__fields__"):
            return (Row._of, (self.__fields__, tuple(self)))
        return (Row, tuple(self))

    def __repr__(self) -> str:
        if hasattr(self, "__fields__"):
            return "Row(" + ", ".join(f"{k}={v!r}" for k, v in zip(self.__fields__, self)) + ")"
        return "<Row(" + ", ".join(repr(v) for v in self) + ")>"
