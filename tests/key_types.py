"""Key types users bring, importable by every executor (the test's own module may not be):
an Enum, an IntEnum, a str Enum, a frozen dataclass, a namedtuple, and a class whose own
``__hash__`` hashes a string (salted per process unless PYTHONHASHSEED is pinned)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
from typing import NamedTuple


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"
    BLUE = 3


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Unit(str, enum.Enum):
    KB = "kb"
    MB = "mb"


@dataclasses.dataclass(frozen=True)
class Event:
    user: str
    day: dt.date
    weight: float = dataclasses.field(default=0.0, compare=False)


class Point(NamedTuple):
    x: int
    label: str


class Name:
    """A user key class hashing its own way (a string's hash: salted per process)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Name) and other.text == self.text

    def __hash__(self) -> int:
        return hash(("Name", self.text))

    def __repr__(self) -> str:
        return f"Name({self.text!r})"
