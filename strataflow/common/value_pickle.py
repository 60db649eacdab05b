"""Pickling a partition's values so that any process of the application can load them.

``pickle`` writes a class by reference (module and name). A class the user defines in
the script they run -- an ``Enum`` of categories, a frozen dataclass used as a key -- lives
in the driver's ``__main__``, which no executor can import: a shuffle bucket, a cached
block or a source slice that holds one either fails to pickle in an executor (its copy of
the class came by value, with the task) or fails to load there. cloudpickle writes such
classes by value (and loads them back as one class per process, so ``Enum`` members stay
identical), but costs more per object, so :func:`dumps` uses it only where plain pickle
cannot do the job: when pickle fails, or when its stream names ``__main__``. The output
of both loads with ``pickle.loads``.
"""

from __future__ import annotations

import pickle
import re
from typing import Any, Callable

import cloudpickle

__all__ = ["dumps", "names_main", "by_value", "PICKLE_ERRORS"]

_MAIN = re.compile(rb"__main__")
#: what ``pickle.dumps`` raises for an object it cannot write by reference
PICKLE_ERRORS = (pickle.PicklingError, AttributeError, TypeError)


def names_main(stream: Any) -> bool:
    """Whether a pickle stream (any buffer; searched without a copy) may name ``__main__``."""
    return _MAIN.search(stream) is not None


def by_value(value: Any, buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None) -> bytes:
    """The value pickled with classes and functions of ``__main__`` by value (cloudpickle)."""
    return cloudpickle.dumps(value, protocol=5, buffer_callback=buffer_callback)


def dumps(value: Any, buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None,
          reset: Callable[[], None] | None = None) -> bytes:
    """``pickle.dumps(value, protocol=5, buffer_callback=...)``, by cloudpickle where the
    value holds a class or function only the driver's ``__main__`` (or no module) has.
    ``reset`` is called before the second try, so that the caller can drop the
    out-of-band buffers the first one collected."""
    try:
        stream = pickle.dumps(value, protocol=5, buffer_callback=buffer_callback)
        if not names_main(stream):
            return stream
    except PICKLE_ERRORS:
        pass
    if reset is not None:
        reset()
    return by_value(value, buffer_callback)
