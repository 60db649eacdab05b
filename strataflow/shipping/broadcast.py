"""Broadcast variables: a read-only value the driver ships once to each executor, not
with every task or stage.

Why: a lookup table, a model or centres that every task reads would otherwise travel
inside every stage's pickled closure (each K-means iteration is a stage). A broadcast
travels as a reference. Its value is written once, by the stage pickling that first meets
it, through the driver's source store (``executor/source_store.py``: an authenticated
file under the application's directory on one machine, Ray's object store on a cluster);
each executor process loads it on first use and keeps it for every later task and stage
(``_loaded``). A small value (under ``INLINE_BYTES``, 64 KB) travels in line instead,
which is cheaper than a file. The bound is lower than a source's (1 MB): in line, a value
travels with every stage that uses it to every executor, while written it is loaded once
per executor and kept; a DataFrame's 600 KB broadcast join side went 16 times with each
of the 5 stages after the join at ``local[16]``. The threads backend pickles nothing:
tasks read the driver's object.

``unpersist()`` drops the executors' copies (the next use loads it again); ``destroy()``
also removes the written copy, and any later use fails: on the driver at once, and a stage
that still refers to it fails when it is submitted, naming the broadcast. A broadcast the
driver's program no longer holds is dropped by the executors too, at the next job (as
Spark's ContextCleaner does): without that, a loop that broadcasts a new model each
iteration and never unpersists the old one grew every executor by the model's size per
iteration (issue 38). Its written copy goes with it (the source store's finalizer).
"""

from __future__ import annotations

import threading
import uuid
import weakref
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from strataflow.config.backends import backend_class

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.context import Context

__all__ = ["Broadcast", "BroadcastDestroyed", "forget_loaded"]

T = TypeVar("T")

#: a broadcast value smaller than this (by its estimated size) travels in line
INLINE_BYTES = 64 << 10

#: this process's loaded broadcast values (executors), by id
_loaded: dict[str, Any] = {}
_loaded_lock = threading.Lock()


class BroadcastDestroyed(RuntimeError):
    """A destroyed broadcast was used (a task that meets one is not retried)."""

    retryable = False


class Broadcast(Generic[T]):
    """A read-only value for tasks: ``b.value``. Make one with ``Context.broadcast(v)``."""

    def __init__(self, ctx: "Context | None", value: T, bid: str | None = None, ref: Any = None) -> None:
        self.bid = bid or uuid.uuid4().hex
        self._value = value
        self._ref = ref  # where an executor loads it (a SliceRef; None: in line, or the driver's own)
        self._ctx = weakref.ref(ctx) if ctx is not None else None
        self._destroyed = False
        self._lock = threading.Lock()
        if ctx is not None:  # the driver's: when it is collected, executors drop their copies
            weakref.finalize(self, _unreachable, self._ctx, self.bid).atexit = False

    @property
    def value(self) -> T:
        """The value: the driver's own object on the driver, the executor's loaded copy in a
        task; :class:`BroadcastDestroyed` after ``destroy()``.

        >>> names = ctx.broadcast({1: "one", 2: "two"})
        >>> ctx.parallelize([2, 1]).map(lambda k: names.value[k]).collect()
        ['two', 'one']
        """
        if self._destroyed:
            raise BroadcastDestroyed(f"broadcast {self.bid} was destroyed; it cannot be read")
        if self._ctx is not None or self._ref is None:
            return self._value  # the driver's, or one that travelled in line
        with _loaded_lock:
            if self.bid in _loaded:
                return _loaded[self.bid]
        from strataflow.shipping.source_slices import load_slice

        value = load_slice(self._ref, 0)
        with _loaded_lock:
            return _loaded.setdefault(self.bid, value)

    def unpersist(self, blocking: bool = False) -> None:
        """Drops the executors' copies; the next task that reads it loads it again. It always
        waits until they are dropped (``blocking`` is accepted for PySpark's signature).

        >>> b = ctx.broadcast([10, 20])
        >>> b.unpersist()
        >>> ctx.parallelize([0, 1]).map(lambda i: b.value[i]).collect()
        [10, 20]
        """
        ctx = self._ctx() if self._ctx is not None else None
        if ctx is not None and not ctx._closed and not backend_class(ctx.backend).in_driver_process:
            ctx.fleet.forget_broadcasts(self.bid)

    def destroy(self, blocking: bool = False) -> None:
        """Drops every copy, the written one too; any later use fails, on the driver at once
        and in a stage that refers to it when the stage is submitted.

        >>> b = ctx.broadcast([10, 20])
        >>> b.destroy()
        >>> b.value
        Traceback (most recent call last):
        ...
        strataflow.shipping.broadcast.BroadcastDestroyed: broadcast ... was destroyed; it cannot be read
        """
        self.unpersist(blocking)
        self._destroyed = True
        self._value = None
        ctx = self._ctx() if self._ctx is not None else None
        if ctx is not None:
            ctx.sources.forget(f"bc-{self.bid}")

    def __reduce__(self):
        """A reference: the value is written once, through the store the driver pickles
        stages with, or travels in line when small or when no store is active."""
        if self._destroyed:
            raise BroadcastDestroyed(f"broadcast {self.bid} was destroyed; a stage that uses it cannot run")
        if self._ctx is None:  # an executor's copy, pickled again (a peer): same reference
            return _rebuild, (self.bid, self._ref, self._value if self._ref is None else None)
        from strataflow.shipping.source_store import current_store
        from strataflow.storage.blocks.sizing import estimate_size

        store = current_store()
        if store is None or estimate_size(self._value) < INLINE_BYTES:
            return _rebuild, (self.bid, None, self._value)
        return _rebuild, (self.bid, store.ship(f"bc-{self.bid}", self, _value_of), None)

    def __repr__(self) -> str:
        return f"<Broadcast {self.bid[:8]}{' destroyed' if self._destroyed else ''}>"


def _rebuild(bid: str, ref: Any, value: Any) -> Broadcast:
    return Broadcast(None, value, bid=bid, ref=ref)


def _value_of(b: Broadcast) -> list:
    """A broadcast's one slice: its value (what the driver sends again if need be)."""
    return [b._value]


def _unreachable(ctx_ref: "weakref.ref[Context]", bid: str) -> None:
    """The driver's broadcast was garbage-collected: queued for the executors to forget
    at the next job (a finalizer must not block on a message)."""
    ctx = ctx_ref()
    if ctx is not None:
        ctx._dead_broadcasts.append(bid)


def forget_loaded(*bids: str) -> int:
    """Drops this process's copies of broadcasts (an executor, told by ``unpersist`` or
    by the driver's clean-up of collected ones); how many it held."""
    with _loaded_lock:
        return sum(_loaded.pop(bid, None) is not None for bid in bids)


def loaded_count() -> int:
    """Broadcast values this process holds (``registry_sizes``)."""
    with _loaded_lock:
        return len(_loaded)
