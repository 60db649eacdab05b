"""Accumulators: values tasks add to and only the driver reads, counted exactly once per
successful task.

Why exactly once: a task that fails and is retried, or that ran on an executor that was
lost, must not add twice (a counter of bad records would lie). So a task never adds to
the driver's value directly. Inside a task, ``add`` goes to the task's own updates
(``task_updates``: per thread, as tasks are threads of an executor); the updates travel
back with the task's outcome (``TaskOutcome.accumulators``), and the driver merges them
when, and only when, it accepts that task's result: once per stage and partition
(``Accumulators.merge``), so a recomputed map task (its outputs were lost with an
executor) does not count again either. Outside a task (driver code), ``add`` adds at once.

In a task ``value`` cannot be read (as in Spark): a task sees only its own updates, so a
read there would mislead.

An :class:`AccumulatorParam` says how values combine: ``zero(value)`` and
``add_in_place(a, b)``; numbers and numpy arrays have a default (``+``).
"""

from __future__ import annotations

import itertools
import threading
import weakref
from contextlib import contextmanager
from typing import Any, Generic, Iterator, TypeVar

__all__ = ["Accumulator", "AccumulatorParam", "Accumulators", "task_updates", "AccumulatorReadInTask"]

T = TypeVar("T")
_local = threading.local()


class AccumulatorReadInTask(RuntimeError):
    """``Accumulator.value`` was read inside a task (not retried: it would fail again)."""

    retryable = False


class AccumulatorParam(Generic[T]):
    """How an accumulator's values combine (PySpark's ``zero`` / ``addInPlace``)."""

    def zero(self, value: T) -> T:
        raise NotImplementedError

    def add_in_place(self, value1: T, value2: T) -> T:
        raise NotImplementedError


class AddParam(AccumulatorParam):
    """Numbers and numpy arrays: ``+``, zero of the same shape."""

    def zero(self, value: Any) -> Any:
        return value * 0

    def add_in_place(self, value1: Any, value2: Any) -> Any:
        value1 += value2
        return value1


def _param_for(value: Any, param: Any) -> Any:
    if param is not None:
        if not (callable(getattr(param, "zero", None)) and (callable(getattr(param, "add_in_place", None))
                                                             or callable(getattr(param, "addInPlace", None)))):
            raise TypeError(f"accumulator param {param!r} needs zero(value) and add_in_place(a, b) "
                            f"(or PySpark's addInPlace)")
        return param
    if isinstance(value, (int, float, complex)) or hasattr(value, "__array__"):
        return AddParam()
    raise TypeError(f"no default way to add {type(value).__name__} values: pass accum_param=, an "
                    f"AccumulatorParam with zero() and add_in_place()")


def _add(param: Any, a: Any, b: Any) -> Any:
    add = getattr(param, "add_in_place", None) or param.addInPlace
    return add(a, b)


@contextmanager
def task_updates() -> Iterator[dict]:
    """While a task runs on this thread: the accumulators' updates it made, by id."""
    prev = getattr(_local, "updates", None)
    _local.updates = updates = {}
    try:
        yield updates
    finally:
        _local.updates = prev


class Accumulator(Generic[T]):
    """A value tasks ``add`` to (or ``+=``) and the driver reads (``value``). Make one
    with ``Context.accumulator(value)``."""

    def __init__(self, aid: int, value: T, param: Any, registry: "Accumulators | None" = None) -> None:
        self.aid = aid
        self.param = param
        self._value = value
        self._registry = registry  # the driver's (None: a copy in an executor)
        self._lock = threading.Lock()

    def add(self, term: T) -> None:
        """Adds ``term`` (``acc += term`` too). In a task it goes to the task's own updates, which
        the driver merges once the task succeeds, so a retried task does not count twice.

        >>> acc = ctx.accumulator(0)
        >>> ctx.parallelize([1, 2, 3], 3).foreach(acc.add)
        >>> acc += 10
        >>> acc.value
        16
        """
        updates = getattr(_local, "updates", None)
        if updates is not None:  # in a task: the task's own, merged by the driver if it succeeds
            updates[self.aid] = _add(self.param, updates[self.aid], term) if self.aid in updates else \
                _add(self.param, self.param.zero(self._zero_like()), term)
            return
        with self._lock:
            self._value = _add(self.param, self._value, term)

    def __iadd__(self, term: T) -> "Accumulator[T]":
        self.add(term)
        return self

    def _zero_like(self) -> Any:
        return self._value

    @property
    def value(self) -> T:
        """The total so far, read (or reset) on the driver; reading it in a task raises
        :class:`AccumulatorReadInTask`, as a task sees only its own updates.

        >>> acc = ctx.accumulator(1.5)
        >>> ctx.parallelize([1, 2]).foreach(lambda x: acc.add(x))
        >>> acc.value
        4.5
        >>> acc.value = 0.0; acc.value
        0.0
        """
        if getattr(_local, "updates", None) is not None or self._registry is None:
            raise AccumulatorReadInTask(f"accumulator {self.aid}: its value can only be read on the driver "
                                        f"(a task sees only its own updates)")
        with self._lock:
            return self._value

    @value.setter
    def value(self, v: T) -> None:
        if self._registry is None or getattr(_local, "updates", None) is not None:
            raise AccumulatorReadInTask(f"accumulator {self.aid}: its value can only be set on the driver")
        with self._lock:
            self._value = v

    def _merge(self, update: T) -> None:
        with self._lock:
            self._value = _add(self.param, self._value, update)

    def __reduce__(self):
        """An executor's copy: the id, a zero to add to, the param."""
        return _rebuild, (self.aid, self.param.zero(self._value), self.param)

    def __repr__(self) -> str:
        return f"Accumulator<id={self.aid}, value={self._value!r}>"


def _rebuild(aid: int, zero: Any, param: Any) -> Accumulator:
    return Accumulator(aid, zero, param)


class Accumulators:
    """The driver's accumulators, and which (stage, partition) results were merged.

    Both are bounded for a long-lived application (issue 38): accumulators are held
    weakly (one the program no longer holds cannot be read, so its updates need not be
    merged; a running stage's closure holds the ones its tasks add to), and the merged
    partitions of a stage are dropped when no task of it can be accepted again
    (``forget_stage``: a result stage at the end of its job, a map stage when its shuffle
    is cleaned up), so they are as many as the stages that can still run."""

    def __init__(self) -> None:
        self._ids = itertools.count()
        self._by_id: "weakref.WeakValueDictionary[int, Accumulator]" = weakref.WeakValueDictionary()
        self._merged: dict[int, set[int]] = {}  # stage id -> partitions whose updates were merged
        self._lock = threading.Lock()

    def new(self, value: Any, param: Any = None) -> Accumulator:
        acc = Accumulator(next(self._ids), value, _param_for(value, param), self)
        with self._lock:
            self._by_id[acc.aid] = acc
        return acc

    def merge(self, stage_id: int, partition: int, updates: dict) -> bool:
        """Adds a successful task's updates, once per (stage, partition); False if that
        task's result was merged already (a recomputed task: not counted again)."""
        if not updates:
            return False
        with self._lock:
            done = self._merged.setdefault(stage_id, set())
            if partition in done:
                return False
            done.add(partition)
            accs = [(self._by_id.get(aid), u) for aid, u in updates.items()]
        for acc, update in accs:
            if acc is not None:
                acc._merge(update)
        return True

    def forget_stage(self, stage_id: int) -> None:
        """No task of the stage will be accepted again: its merged partitions go."""
        with self._lock:
            self._merged.pop(stage_id, None)

    def sizes(self) -> dict[str, int]:
        """Entries held (``registry_sizes``)."""
        with self._lock:
            return {"accumulators": len(self._by_id), "accumulator_stages": len(self._merged)}
