"""``portable_hash``: one hash for equal keys in every process, so equal keys meet.

Why not Python's ``hash``: CPython salts the hash of ``str`` and ``bytes`` per process, and
with them every hash built on them -- ``date``, ``datetime``, ``time``, ``Enum`` members
(``hash(name)``), dataclasses, frozensets of strings, ``ipaddress`` objects, numpy's
``str_`` and ``datetime64``. The processes backend hashes a key in several interpreters, so
a salted hash sends one date to two reduce partitions and ``distinct`` returns it twice.

How, in three layers:

1. **A deterministic hash for the common types** (the keys users bring): ``None``, numbers
   of every kind (Python's numeric hash is not salted, and is equal across ``int``,
   ``float``, ``Decimal``, ``Fraction``, ``bool`` and numpy scalars for equal values),
   ``str``/``bytes`` (CRC-32 of the bytes), tuples (PySpark's mix), frozensets (an
   order-free sum), ``date``/``datetime``/``time``/``timedelta`` and numpy's
   ``datetime64``/``timedelta64`` (by the instant or duration they stand for, so values that
   compare equal across those types hash alike), ``Enum`` members (by name), dataclasses
   whose hash is the generated one (by their fields), ``UUID``, ``ipaddress`` objects, pure
   paths, classes and named functions (by qualified name). These need nothing pinned.
2. **Any other hashable key** (a user class with its own ``__hash__``) falls back to
   ``hash()``, made equal across executors as PySpark makes it: every executor interpreter
   starts with ``PYTHONHASHSEED=0`` (the processes backend's spawn, Ray's runtime env).
3. **A refusal where neither holds**: an executor whose interpreter did not start with
   ``PYTHONHASHSEED=0`` (``sys.flags.hash_randomization`` is the interpreter's own word on
   it, unlike the environment) raises :class:`UnportableKeyError` on such a key rather than
   hash it with its own salt. The driver's ``hash`` may be salted (it is the user's
   interpreter): driver-side placements of such keys (``lookup``) are computed in an
   executor (``needs_executor_hash``).

Placement differs from PySpark's for strings and the types of layer 1 (PySpark hashes them
with ``hash`` under ``PYTHONHASHSEED=0``); integers, ``None`` and tuples of them land
where PySpark puts them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import ipaddress
import pathlib
import sys
import types
import uuid
import zlib
from numbers import Number
from typing import Any, Callable

import numpy as np

__all__ = ["portable_hash", "is_portable", "UnportableKeyError", "refuse_salted_fallback",
           "EXECUTOR_HASH_SEED"]

_MASK = sys.maxsize
_MASK64 = (1 << 64) - 1
#: the ``PYTHONHASHSEED`` every executor interpreter starts with (PySpark's default for its workers)
EXECUTOR_HASH_SEED = "0"
_EPOCH = dt.datetime(1970, 1, 1)
_UTC_EPOCH = _EPOCH.replace(tzinfo=dt.timezone.utc)
_US_PER_DAY = 86_400_000_000


class UnportableKeyError(TypeError):
    """A key whose hash may differ between processes, hashed where it cannot be trusted:
    equal keys could land in different partitions, so the engine refuses instead."""


#: set in an executor interpreter whose ``hash`` is salted (see ``refuse_salted_fallback``)
_refuse_fallback = False


def refuse_salted_fallback() -> None:
    """Called where an executor interpreter starts: when its ``hash`` is salted (it did not
    start with ``PYTHONHASHSEED=0``), a key outside layer 1 is refused, not hashed."""
    global _refuse_fallback
    _refuse_fallback = sys.flags.hash_randomization != 0


def _str(x: str) -> int:
    return zlib.crc32(x.encode("utf-8", "surrogatepass"))


def _bytes(x: Any) -> int:
    return zlib.crc32(x)


def _number(x: Any) -> int:
    # NaN hashes by identity since Python 3.10; NaN equals nothing, so any fixed value is right
    return 0 if x != x else hash(x)


def _tuple(x: tuple) -> int:
    h = 0x345678
    for item in x:
        h ^= portable_hash(item)
        h *= 1000003
        h &= _MASK
    h ^= len(x)
    return -2 if h == -1 else h


def _frozenset(x: frozenset) -> int:
    # equal sets iterate in different orders in different processes: an order-free sum
    total = 0
    for item in x:
        total = (total + _mix64(portable_hash(item))) & _MASK64
    return _mix64(total ^ len(x)) & _MASK


def _mix64(x: int) -> int:
    """splitmix64's finalizer: spreads an integer over all 64 bits."""
    x &= _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _naive_us(x: dt.datetime) -> int:
    """Microseconds since 1970 of a naive datetime's wall clock (``fold`` is ignored by ``==``)."""
    return (x.toordinal() - 719163) * _US_PER_DAY + ((x.hour * 60 + x.minute) * 60 + x.second) * 1_000_000 + x.microsecond


def _datetime(x: dt.datetime) -> int:
    # aware datetimes are equal when they name one instant: hash the UTC instant
    off = x.utcoffset() if x.tzinfo is not None else None
    us = _naive_us(x)
    if off is not None:
        us -= (off.days * 86_400 + off.seconds) * 1_000_000 + off.microseconds
    return hash(us)


def _date(x: dt.date) -> int:
    # a date hashes as its midnight (datetime64[D] equals datetime64[s] at midnight)
    return hash((x.toordinal() - 719163) * _US_PER_DAY)


def _time(x: dt.time) -> int:
    us = ((x.hour * 60 + x.minute) * 60 + x.second) * 1_000_000 + x.microsecond
    off = x.utcoffset() if x.tzinfo is not None else None
    if off is not None:
        us -= (off.days * 86_400 + off.seconds) * 1_000_000 + off.microseconds
    return hash(us)


def _timedelta(x: dt.timedelta) -> int:
    return hash((x.days * 86_400 + x.seconds) * 1_000_000 + x.microseconds)


def _datetime64(x: np.datetime64) -> int:
    if np.isnat(x):
        return 0
    try:
        us = int(x.astype("datetime64[us]").astype(np.int64))
    except (OverflowError, ValueError):  # out of the microsecond range: by its own count
        return hash(int(x.astype(np.int64)))
    return hash(us)


def _timedelta64(x: np.timedelta64) -> int:
    if np.isnat(x):
        return 0
    try:
        us = int(x.astype("timedelta64[us]").astype(np.int64))
    except (OverflowError, ValueError, TypeError):  # months and years have no microsecond count
        return hash(int(x.astype(np.int64)))
    return hash(us)


def _enum(x: enum.Enum) -> int:
    name = x._name_
    return portable_hash(name if name is not None else x._value_)


def _dataclass(x: Any) -> int | None:
    """By the fields the generated ``__hash__`` hashes; None where the class hashes its own way."""
    fields = type(x).__dataclass_fields__
    values = tuple(getattr(x, f.name) for f in fields.values()
                   if f._field_type is dataclasses._FIELD and (f.compare if f.hash is None else f.hash))
    if hash(x) != hash(values):
        return None
    return _tuple(values)


def _by_name(x: Any) -> int:
    return _str(f"{getattr(x, '__module__', None)}.{getattr(x, '__qualname__', x.__name__)}")


def _ip(x: Any) -> int:
    return hash((x.version, int(x)))


def _network(x: Any) -> int:
    return hash((x.version, int(x.network_address), x.prefixlen))


def _pure_path(x: pathlib.PurePath) -> int:
    text = str(x)
    return _str(text.lower() if isinstance(x, pathlib.PureWindowsPath) else text)


#: the exact types of the hot path (a shuffle hashes every record's key)
_EXACT: dict[type, Callable[[Any], int]] = {
    str: _str, int: hash, bool: hash, float: _number, tuple: _tuple, bytes: _bytes,
    type(None): lambda x: 0, frozenset: _frozenset, dt.date: _date, dt.datetime: _datetime,
    dt.timedelta: _timedelta, dt.time: _time, uuid.UUID: hash,
}


def portable_hash(x: Any) -> int:
    """A hash that is equal for equal keys in every process (no per-process salt), so a
    key lands in the same partition whichever executor hashes it. Integers and tuples hash
    as PySpark's ``portable_hash``; strings by CRC-32 of their UTF-8 bytes.

    >>> portable_hash(None), portable_hash(1), portable_hash((1, 2))
    (0, 1, 3430029580082870073)
    >>> import datetime
    >>> portable_hash(datetime.date(2024, 1, 1)) == portable_hash(datetime.date(2024, 1, 1))
    True
    """
    f = _EXACT.get(type(x))
    if f is not None:
        return f(x)
    h = _layer_one(x)
    if h is not None:
        return h
    if _refuse_fallback:
        raise UnportableKeyError(
            f"a key of type {type(x).__module__}.{type(x).__qualname__} has no portable hash and "
            "this executor's Python hash is salted (it did not start with PYTHONHASHSEED=0): equal "
            "keys could land in different partitions. Start the executors with PYTHONHASHSEED=0, or "
            "use keys of built-in types (str, int, tuple, date, ...), or give a partition_func")
    return hash(x)


def _layer_one(x: Any) -> int | None:
    """The deterministic hash of subclasses and the rarer types; None outside layer 1."""
    if isinstance(x, str):  # StrEnum, numpy str_: equal to their str
        return _str(x)
    if isinstance(x, (bytes, bytearray, memoryview)):
        return _bytes(x)
    if isinstance(x, np.generic):
        if isinstance(x, np.datetime64):
            return _datetime64(x)
        if isinstance(x, np.timedelta64):
            return _timedelta64(x)
        if isinstance(x, (np.number, np.bool_)):
            return _number(x)
        return None
    if isinstance(x, Number):  # IntEnum and other number Enums hash as their number; Decimal, Fraction
        return _number(x)
    if isinstance(x, tuple):  # namedtuples, tuple Enums
        return _tuple(x)
    if isinstance(x, frozenset):
        return _frozenset(x)
    if isinstance(x, enum.Enum):
        return _enum(x)
    if isinstance(x, dt.datetime):  # before date: a datetime is a date
        return _datetime(x)
    if isinstance(x, dt.date):
        return _date(x)
    if isinstance(x, dt.timedelta):
        return _timedelta(x)
    if isinstance(x, dt.time):
        return _time(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _dataclass(x)
    if isinstance(x, (type, types.FunctionType, types.BuiltinFunctionType)):
        return _by_name(x)
    if isinstance(x, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return _ip(x)
    if isinstance(x, (ipaddress.IPv4Network, ipaddress.IPv6Network)):
        return _network(x)
    if isinstance(x, pathlib.PurePath):
        return _pure_path(x)
    if isinstance(x, uuid.UUID):
        return hash(x)
    return None


def is_portable(x: Any) -> bool:
    """Whether ``portable_hash(x)`` is the same in every process whatever its hash seed
    (every part of ``x`` is in layer 1); the driver computes a partition itself only then."""
    if isinstance(x, (tuple, frozenset)):
        return all(is_portable(i) for i in x)
    if type(x) in _EXACT:
        return True
    if isinstance(x, enum.Enum) and not isinstance(x, (str, bytes, Number)):
        return x._name_ is not None or is_portable(x._value_)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        if _dataclass(x) is None:
            return False
        return all(is_portable(getattr(x, f.name)) for f in type(x).__dataclass_fields__.values()
                   if f._field_type is dataclasses._FIELD and (f.compare if f.hash is None else f.hash))
    return _layer_one(x) is not None
