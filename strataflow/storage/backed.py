"""Values a task read mapped from a store that outlives the application (the store's input
cache, ``store/input_reader.py``): a persisted block of one needs no disk copy of its own.

Why: ``csv_file(...).persist(MEMORY_AND_DISK)`` over a cached input would otherwise keep the
partition twice on disk, once in the store and once in the executor's disk tier, and pay a
serialization to write the second. The block manager asks :func:`take` when it stores a
computed block: a block whose value was just served from the store is kept in memory as its
level says, but when it must leave memory it is discarded instead of written, and one that
does not fit in memory is not written at all (``BlockNotStored``, reason given). Its next
read recomputes it: the input cache maps it from the store again, with no parse.

The mark is the serving thread's, for one value: the input cache marks the value it returns
(:func:`note`); the block manager's put of that very object in the same thread takes it.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

__all__ = ["note", "take"]

_local = threading.local()


def note(value: Any) -> None:
    """``value`` (returned now, in this thread) is mapped from the store. A weak mark: it
    keeps nothing alive (records, a list, cannot be marked: they are unpickled, not mapped)."""
    try:
        _local.ref = weakref.ref(value)
    except TypeError:
        _local.ref = None


def take(value: Any) -> bool:
    """Whether ``value`` is the one this thread's last :func:`note` marked (the mark goes)."""
    ref = getattr(_local, "ref", None)
    _local.ref = None
    return ref is not None and ref() is value
