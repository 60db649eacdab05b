"""The errors a job raises, and how a task's own exception reaches the user.

A task that fails on its last attempt fails its job with :class:`TaskFailedError`, which
names the dataset, the partition, the stage, the executor and the attempts, and keeps the
task's exception as ``__cause__``: on every backend, that exception carries the
executor's traceback (``executor/remote_errors.py``), so the user's file, line, function
and source line are printed above the job's error, as PySpark prints the Python worker's
traceback and Dask re-raises the worker's exception.

The raised error is also an instance of the task's exception type (as Ray's
``RayTaskError(ValueError)`` is): ``except ValueError`` in the driver catches a job whose
task raised ``ValueError``, and ``except TaskFailedError`` still catches every failed
task. Its class is made once per exception type, named ``TaskFailedError(ValueError)``;
the cause's attributes (``errno``, a user exception's fields) are copied onto it. Where
the two types cannot be combined (the cause's type is not an ``Exception``, or its
``__new__`` needs other arguments) the error is a plain ``TaskFailedError``: catch that,
and read ``__cause__``. On Python 3.11 and later, the cause also gets a note (PEP 678)
saying which task, stage, partition and executor raised it.

What is printed starts with the user's line (issue 51): the engine's frames are folded out
of the cause's traceback when the error is made, out of the job's own traceback as it
leaves the scheduler (``run_job``) and, when it leaves a ``with Context(...)`` block, down
to the user's call (:func:`fold_job_error`); a last note says how many frames were hidden
and that ``STRATAFLOW_TRACEBACK=full`` shows them (``common/frames.py``). The dataset is
named as the event log and the report name its stages: ``'map at job.py:4'``
(:func:`dataset_title`).
"""

from __future__ import annotations

import functools
import types
from typing import TYPE_CHECKING, Any

from strataflow.common.frames import ENV, fold_traceback, folding, hint

if TYPE_CHECKING:
    from strataflow.dataset import Dataset

__all__ = ["JobError", "ContextStopped", "TaskFailedError", "task_failed_error", "add_note", "dataset_title",
           "fold_job_error"]


class JobError(RuntimeError):
    """A job could not finish."""


class ContextStopped(JobError):
    """The Context was stopped (``stop()`` from another thread) while the job ran."""


class TaskFailedError(JobError):
    """A task failed on every attempt. ``dataset``, ``partition``, ``attempts``,
    ``executor`` and ``__cause__`` (the task's exception, with the executor's traceback)
    say where and why. Raised as an instance of the cause's type too, where it can be
    (see :func:`task_failed_error`)."""

    def __init__(self, message: str, dataset: "Dataset | None", partition: int, attempts: int,
                 executor: str | None = None):
        super().__init__(message)
        self.dataset = dataset
        self.partition = partition
        self.attempts = attempts
        self.executor = executor

    # the job's message, whatever the cause's type would print (KeyError quotes, OSError
    # prints its errno): the cause prints itself above, in the chain
    __str__ = BaseException.__str__
    __repr__ = BaseException.__repr__

    def __reduce__(self):
        # a combined class is made again from the cause's type (it has no importable name)
        cause = type(self).__dict__.get("_cause_type")
        state = {k: v for k, v in self.__dict__.items() if k != "dataset"}  # a dataset stays on its driver
        return (_rebuild, (type(self) if cause is None else None, cause, self.args[0] if self.args else "",
                           self.partition, self.attempts, self.executor), state)


def _rebuild(cls: type | None, cause_type: type | None, message: str, partition: int, attempts: int,
             executor: str | None) -> TaskFailedError:
    if cls is None:
        cls = (_combined(cause_type) if cause_type is not None else None) or TaskFailedError
    return cls(message, None, partition, attempts, executor)


@functools.lru_cache(maxsize=256)
def _combined(cause_type: type) -> type | None:
    """``TaskFailedError(cause_type)``: a subclass of both, or None where they cannot be
    combined. One class per type, so that two jobs failing alike raise the same type."""
    if (not isinstance(cause_type, type) or not issubclass(cause_type, Exception)
            or issubclass(cause_type, TaskFailedError)):
        return None
    new = cause_type.__new__

    def body(ns: dict[str, Any]) -> None:
        # the cause's own __new__, given the message alone: OSError's will not let
        # BaseException's build one of its subclasses
        ns["__new__"] = lambda cls, message, *args, **kwargs: new(cls, message)
        ns["__module__"] = "strataflow"
        ns["__qualname__"] = f"TaskFailedError({cause_type.__name__})"
        ns["_cause_type"] = cause_type
        ns["__doc__"] = (f"A failed task whose exception was a {cause_type.__module__}.{cause_type.__qualname__}: "
                         f"a TaskFailedError, and that type too.")

    try:
        cls = types.new_class(f"TaskFailedError({cause_type.__name__})", (TaskFailedError, cause_type),
                              exec_body=body)
        cls("probe", None, 0, 1)  # a type whose __new__ or layout refuses fails here, once
    except Exception:  # noqa: BLE001 - not combinable: a plain TaskFailedError
        return None
    return cls


_OS_FIELDS = ("errno", "strerror", "filename", "filename2")


def task_failed_error(message: str, dataset: "Dataset", partition: int, attempts: int,
                      cause: BaseException, executor: str | None = None) -> TaskFailedError:
    """The job's error for a task that failed ``attempts`` times, the last with ``cause``:
    a TaskFailedError that is also a ``type(cause)`` where the two combine, with the
    cause's attributes and the cause as ``__cause__``."""
    cls = _combined(type(cause)) or TaskFailedError
    try:
        err = cls(message, dataset, partition, attempts, executor)
    except Exception:  # noqa: BLE001 - belt and braces: _combined probed it
        err = TaskFailedError(message, dataset, partition, attempts, executor)
    if cls is not TaskFailedError and isinstance(err, cls):
        _copy_fields(cause, err)
    err.__cause__ = cause
    if folding():
        _hide(err, sum(_fold_chain(cause, set())))
    return err


def dataset_title(dataset: "Dataset") -> str:
    """How a job's error names a dataset: as the event log and the report name its stage,
    by its operation and the user's line that made it (``'map at job.py:4'``), after its
    name where ``set_name`` gave one (``'points' (map at job.py:4)``)."""
    op = getattr(dataset, "op", None) or getattr(dataset, "label", "?")
    name = getattr(dataset, "name", None)
    return f"'{op}'" if not name else f"'{name}' ({op})"


_HIDDEN = "_strataflow_hidden"


def _fold_chain(exc: BaseException | None, seen: set[int]) -> list[int]:
    """Folds the traceback of ``exc`` and of the exceptions it was raised from or during
    (a traceback without a frame of the user's stays whole); the frames each lost."""
    if exc is None or id(exc) in seen:
        return []
    seen.add(id(exc))
    tb, hidden = fold_traceback(exc.__traceback__)
    if hidden:
        exc.__traceback__ = tb
    return [hidden] + _fold_chain(exc.__cause__, seen) + _fold_chain(exc.__context__, seen)


def _hide(exc: BaseException, more: int) -> None:
    """Counts ``more`` folded frames on ``exc`` and keeps one note saying how many (its
    last: the line under the error's message)."""
    if not more:
        return
    hidden = getattr(exc, _HIDDEN, 0) + more
    try:
        setattr(exc, _HIDDEN, hidden)
    except AttributeError:  # an exception without a __dict__
        return
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        notes[:] = [n for n in notes if not (isinstance(n, str) and n.startswith("[") and f"{ENV}=full" in n)]
    add_note(exc, hint(hidden))


def fold_job_error(exc: BaseException | None) -> None:
    """Folds the engine's frames out of the traceback of an error strataflow raised on
    the driver, so that it starts with (and ends at) the user's own call: a job's
    :class:`TaskFailedError`, whose frames are all the engine's below the user's, or
    another error of strataflow's own type (a path that does not exist, a bad option).
    Other exceptions, and every one under ``STRATAFLOW_TRACEBACK=full``, are left whole.
    Called where the error leaves the scheduler and a ``with Context(...)`` block."""
    if exc is None or not folding():
        return
    ours = isinstance(exc, TaskFailedError)
    if not ours and not type(exc).__module__.startswith("strataflow"):
        return
    tb, hidden = fold_traceback(exc.__traceback__, engine_raised=True)
    if hidden:
        exc.__traceback__ = tb
    if not ours:  # a job's error had its chain folded when it was made
        hidden += sum(_fold_chain(exc.__cause__, {id(exc)}) + _fold_chain(exc.__context__, {id(exc)}))
    _hide(exc, hidden)


def _copy_fields(cause: BaseException, err: BaseException) -> None:
    """The cause's fields onto ``err``, so that ``except OSError as e: e.errno`` (or a user
    exception's own attributes) reads what the task raised; ``err``'s own stay."""
    if isinstance(cause, OSError):
        for name in _OS_FIELDS:
            try:
                setattr(err, name, getattr(cause, name))
            except (AttributeError, TypeError):
                pass
    for name, value in getattr(cause, "__dict__", {}).items():
        if name.startswith("__") or name.startswith("_strataflow") or name == "retryable" or name in err.__dict__:
            continue
        try:
            setattr(err, name, value)
        except (AttributeError, TypeError):
            pass


def add_note(exc: BaseException, note: str) -> None:
    """PEP 678's ``exc.add_note(note)`` where Python has it (3.11+), once per note; a no-op
    on 3.10, where the job's error, chained to ``exc``, says the same."""
    add = getattr(exc, "add_note", None)
    if add is None or note in (getattr(exc, "__notes__", None) or ()):
        return
    try:
        add(note)
    except (TypeError, AttributeError):  # an exception whose __notes__ is not a list
        pass
