"""A task's exception on its way from an executor back to the driver, traceback included.

Python's pickle drops an exception's ``__traceback__`` (and its ``__cause__`` and
``__context__``), so a task that failed in an executor process used to reach the driver
with no frame of the user's file. ``tblib`` pickles tracebacks (file, line, function of
each frame; not the frames' locals), as Dask does to re-raise a worker's exception with
its traceback: the driver then shows the user's own line, through ``traceback`` and
``linecache`` as for a local error.

tblib rebuilds each frame with a stub code object whose column positions are those of
the stub, so Python 3.11's traceback would underline the wrong part of the user's line;
the stubs made here carry lines without columns (:func:`_as_traceback`), and nothing is
underlined.

An exception that does not travel as itself (its type does not pickle, or its
``__init__`` will not take back its ``args``) becomes a :class:`RemoteTaskError` that
names its type and message, keeps the executor's formatted traceback in
``remote_traceback``, and carries the same frames as its own traceback.
"""

from __future__ import annotations

import copyreg
import pickle
import sys
import traceback
from types import CodeType, TracebackType
from typing import Any, Callable

from tblib import Traceback, pickling_support

__all__ = ["RemoteTaskError", "portable_error"]

#: frames kept of a longer traceback (the innermost: where the error was raised); pickle
#: recurses once per frame, and a RecursionError's traceback is a thousand frames deep
_MAX_FRAMES = 100


_STUB = compile("raise __traceback_maker", "<strataflow-remote>", "exec")


def _no_columns(stub: CodeType) -> bytes | None:
    """A location table for ``stub`` giving every instruction its first line and no
    column (Python 3.11+'s format, entry kind 13), or None where it cannot be checked."""
    if sys.version_info < (3, 11):
        return None  # no columns shown before 3.11
    units = len(list(stub.co_positions()))
    table = bytearray()
    while units:
        n = min(8, units)
        table += bytes((0x80 | (13 << 3) | (n - 1), 0))  # n code units, line delta 0, no columns
        units -= n
    try:
        probe = stub.replace(co_linetable=bytes(table), co_firstlineno=7)
        if all(p == (7, 7, None, None) for p in probe.co_positions()):
            return bytes(table)
    except (ValueError, TypeError):
        pass
    return None


_NO_COLUMNS = _no_columns(_STUB)


def _as_traceback(tb: Traceback) -> TracebackType | None:
    """A real traceback from tblib's picklable one (as ``Traceback.as_traceback``), each
    frame's code naming the remote file, function and line, without columns."""
    top = last = None
    current: Any = tb
    while current is not None:
        f_code = current.tb_frame.f_code
        changes: dict[str, Any] = dict(co_firstlineno=current.tb_lineno, co_filename=f_code.co_filename,
                                       co_name=f_code.co_name)
        if _NO_COLUMNS is not None:
            changes["co_linetable"] = _NO_COLUMNS
        code = _STUB.replace(**changes)
        try:
            exec(code, dict(current.tb_frame.f_globals), {})  # noqa: S102 - raises at once
        except NameError:
            made = sys.exc_info()[2].tb_next
            if top is None:
                top = made
            if last is not None:
                last.tb_next = made
            last = made
        current = current.tb_next
    return top


def _rebuild_traceback(state: dict) -> TracebackType | None:
    return _as_traceback(Traceback.from_dict(state))


def _reduce_traceback(tb: TracebackType) -> tuple:
    return _rebuild_traceback, (Traceback(tb).as_dict(),)


class RemoteTaskError(RuntimeError):
    """A task's exception that could not be sent back as itself (it does not pickle): its
    type name and message, why it could not travel, and the executor's traceback, as
    text (``remote_traceback``) and, where the frames travel, as this error's own
    traceback."""

    def __init__(self, message: str, remote_traceback: str = "", type_name: str = "") -> None:
        super().__init__(message)
        self.remote_traceback = remote_traceback
        self.type_name = type_name


def _innermost(tb: TracebackType | None, keep: int) -> TracebackType | None:
    """The last ``keep`` entries of the traceback ``tb`` (its innermost frames)."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    return entries[-keep] if len(entries) > keep else (entries[0] if entries else None)


def _travels(exc: BaseException, dumps: Callable[[Any], bytes]) -> bool:
    """Whether ``exc`` pickles and unpickles (both ways: an exception whose ``__init__``
    needs other arguments than its ``args`` fails on the way back)."""
    try:
        pickling_support.install(exc)  # its type, and those of its chain, pickle with tracebacks
        copyreg.pickle(TracebackType, _reduce_traceback)  # frames rebuilt without tblib's columns
        pickle.loads(dumps(exc))
        return True
    except Exception:  # noqa: BLE001 - anything that stops the exception from travelling
        return False


def portable_error(exc: BaseException, dumps: Callable[[Any], bytes]) -> BaseException:
    """``exc`` ready to be pickled to the driver with its traceback (and the chain of
    exceptions it was raised from), its formatted text in ``remote_traceback``; or a
    :class:`RemoteTaskError` carrying the same when ``exc`` itself cannot travel.
    ``dumps`` is the pickler the message will go through."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        exc.remote_traceback = text  # type: ignore[attr-defined]
    except AttributeError:  # no __dict__ (a __slots__ exception): it cannot travel as itself
        pass
    exc.__traceback__ = _innermost(exc.__traceback__, _MAX_FRAMES)
    if getattr(exc, "remote_traceback", None) == text:
        if _travels(exc, dumps):
            return exc
        chain = exc.__cause__, exc.__context__  # perhaps only its chain does not travel
        exc.__cause__ = exc.__context__ = None
        if _travels(exc, dumps):
            return exc
        exc.__cause__, exc.__context__ = chain
    name = f"{type(exc).__module__}.{type(exc).__qualname__}"
    try:
        message = str(exc)
    except Exception as why:  # noqa: BLE001 - its __str__ fails too
        message = f"<str() failed: {type(why).__name__}: {why}>"
    err = RemoteTaskError(f"{name}: {message} (the exception could not be sent back from the executor as "
                          f"itself: it does not pickle; the executor's traceback is kept as text in "
                          f"remote_traceback)", text, name)
    origin = getattr(exc, "_strataflow_origin", None)
    if origin is not None:
        err._strataflow_origin = origin  # type: ignore[attr-defined]
    err.__traceback__ = exc.__traceback__  # the frames pickle apart from the exception
    if not _travels(err, dumps):
        err.__traceback__ = None
    return err
