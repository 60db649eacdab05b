"""Pickling a stage for its executors, and saying exactly what cannot be pickled.

A closure that captures a lock, an open file, a socket or the Context itself cannot
travel to an executor process. cloudpickle's own message names a type but not where it
came from; a user needs the function and the variable. :func:`pickle_stage` raises
:class:`UnpicklableTaskError` naming both, found by walking the lineage's functions and
what they capture (closure cells, globals they name, defaults, attributes), depth first,
to the first object that does not pickle on its own.

A file object is refused even where cloudpickle could pickle it: cloudpickle pickles a
text-mode file open for reading by its *content*, read whole at that moment, so a job
would silently work on a snapshot of a file (of any size, sent in every stage) while its
code looks as if it read the file on the executor. An open file in a closure is almost
always a mistake; the message says what to do instead (open it inside the function, or
``ctx.add_file`` / ``ctx.broadcast``). The threads backend pickles nothing, so there a
closure shares the caller's file object, as it shares any other state.

A function defined in the user's script (or inside a function) travels by value, and
cloudpickle 3 renames its code's file ``<dynamic-code>``, which would leave a task's
traceback without the user's file name or source line. The stage's pickler keeps each
code object's own file name (:func:`stage_dumps`).
"""

from __future__ import annotations

import io
import types
from collections import ChainMap
from typing import Any, Iterator

import cloudpickle

__all__ = ["UnpicklableTaskError", "pickle_stage", "find_unpicklable", "stage_dumps"]

_code_reduce = cloudpickle.Pickler.dispatch_table.get(types.CodeType)


def _code_keeping_file(code: types.CodeType) -> tuple:
    """cloudpickle's reduction of a code object, then its file name put back."""
    rebuild, args = _code_reduce(code)
    return _named_code, (rebuild, args, code.co_filename)


def _named_code(rebuild: Any, args: tuple, filename: str) -> types.CodeType:
    code = rebuild(*args)
    return code if code.co_filename == filename else code.replace(co_filename=filename)


class UnpicklableTaskError(TypeError):
    """A stage's functions capture something that cannot be sent to an executor."""


class OpenFileInClosure(TypeError):
    """Raised while pickling a stage that captures a file object (see the module's doc)."""


def _is_file(obj: Any) -> bool:
    """A file object of the OS (open or closed), not an in-memory stream, which pickles by value."""
    return isinstance(obj, io.IOBase) and not isinstance(obj, (io.BytesIO, io.StringIO))


class _StagePickler(cloudpickle.Pickler):
    """cloudpickle, refusing file objects and keeping each code object's file name."""

    dispatch_table = (ChainMap({types.CodeType: _code_keeping_file}, cloudpickle.Pickler.dispatch_table)
                      if _code_reduce is not None else cloudpickle.Pickler.dispatch_table)

    def reducer_override(self, obj: Any) -> Any:
        if _is_file(obj):
            raise OpenFileInClosure(f"a file object ({getattr(obj, 'name', '?')!r}) is not sent to executors: "
                                    f"its content would be pickled as it is now, not read where the task runs")
        return super().reducer_override(obj)


def stage_dumps(obj: Any) -> bytes:
    """``obj`` cloudpickled (protocol 5), refusing file objects, each function's code
    keeping its file name, so that a task's traceback names the user's file and shows its
    lines."""
    buf = io.BytesIO()
    _StagePickler(buf, protocol=5).dump(obj)
    return buf.getvalue()


def _fn_name(f: types.FunctionType) -> str:
    code = f.__code__
    return f"{f.__qualname__} ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})"


def _children(obj: Any) -> Iterator[tuple[str, Any]]:
    """What ``obj`` refers to that a pickle of it would carry, named for the message."""
    if isinstance(obj, types.FunctionType):
        for name, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
            try:
                yield name, cell.cell_contents
            except ValueError:  # an empty cell
                continue
        g = obj.__globals__
        for name in obj.__code__.co_names:
            if name in g and not isinstance(g[name], types.ModuleType):
                yield name, g[name]
        for i, d in enumerate(obj.__defaults__ or ()):
            yield f"default #{i}", d
        return
    if isinstance(obj, types.MethodType):
        yield "self", obj.__self__
        yield "function", obj.__func__
        return
    if isinstance(obj, dict):
        for k, v in list(obj.items())[:1000]:
            yield repr(k), v
        return
    if isinstance(obj, (list, tuple, set, frozenset)):
        for i, v in enumerate(list(obj)[:1000]):
            yield f"[{i}]", v
        return
    if type(obj).__reduce__ is not object.__reduce__:
        return  # the class says how (or that it cannot) travel: it is the answer itself
    state = getattr(obj, "__dict__", None)
    if isinstance(state, dict):
        getstate = getattr(type(obj), "__getstate__", None)
        if getstate is not None and getstate is not object.__getstate__:
            try:
                state = obj.__getstate__()
            except Exception:  # noqa: BLE001
                pass
        if isinstance(state, dict):
            for k, v in state.items():
                yield k, v


def _pickles(obj: Any) -> BaseException | None:
    try:
        stage_dumps(obj)
        return None
    except Exception as exc:  # noqa: BLE001 - any failure is the answer
        return exc


def find_unpicklable(root: Any, limit: int = 4000) -> tuple[list[str], Any, BaseException] | None:
    """The path (function and variable names) to the first object under ``root`` that does
    not pickle while all it refers to does, the object and its error; None if all pickle."""
    seen: set[int] = set()
    budget = [limit]

    def visit(obj: Any, path: list[str]) -> tuple[list[str], Any, BaseException] | None:
        if id(obj) in seen or budget[0] <= 0:
            return None
        seen.add(id(obj))
        budget[0] -= 1
        err = _pickles(obj)
        if err is None:
            return None
        label = _fn_name(obj) if isinstance(obj, types.FunctionType) else None
        for name, child in _children(obj):
            found = visit(child, path + ([f"function {label}", name] if label else [name]))
            if found is not None:
                return found
        return path, obj, err

    return visit(root, [])


def pickle_stage(work: Any) -> bytes:
    """The stage's work, cloudpickled once for every executor; raises
    :class:`UnpicklableTaskError` naming the function and the object that stop it."""
    try:
        return stage_dumps(work)
    except Exception as exc:  # noqa: BLE001 - explain, whatever the pickler raised
        found = find_unpicklable(work)
        if found is None:
            raise UnpicklableTaskError(f"stage {work.stage_id} cannot be sent to executors: "
                                       f"{type(exc).__name__}: {exc}") from exc
        path, obj, err = found
        funcs = [p for p in path if p.startswith("function ")]
        where = " -> ".join(p for p in path if not p.startswith("function ")) or "?"
        fn = funcs[-1][len("function "):] if funcs else "the stage's lineage"
        advice = ("Open the file inside the function (on the executor), or ship it with ctx.add_file(path) "
                  "and open strataflow.files.get(name) there, or send its content with ctx.broadcast"
                  if isinstance(err, OpenFileInClosure) else
                  "Create it inside the function, or use backend='threads'")
        raise UnpicklableTaskError(
            f"stage {work.stage_id} cannot be sent to executors: {fn} uses {where.split(' -> ')[-1]!r}, a "
            f"{type(obj).__module__}.{type(obj).__qualname__}, which cannot be pickled "
            f"({type(err).__name__}: {err}); path: {where}. {advice}") from exc
