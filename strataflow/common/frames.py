"""The engine's frames folded out of the tracebacks a user reads (issue 51).

A task's ``KeyError`` used to print some fifty lines: twenty of the executor's frames
(worker, task, block manager, lineage node...) above the one line of the user's that
failed, then the driver's frames down to the scheduler. Python prints an exception's
``__traceback__`` as it is, so the traceback itself is rebuilt without those frames
(``types.TracebackType`` entries over the same frames); then everything that prints it
(Python's own hook, ``traceback``, ``logging``, pytest) shows the short form; a
``sys.excepthook`` (``context/excepthook.py``) only folds the last frames of an uncaught
error of a script without a ``with`` block.

A frame is the *engine*'s when it is strataflow's own code (not the bundled jobs), *plumbing*
when it is the standard library's or the machinery that runs tasks (tblib, cloudpickle,
Ray), and the *user*'s otherwise. A task's traceback loses what lies above the user's
first frame (the executor, the thread pool) and the engine's frames between two of the
user's; what the user's code called (``json``, numpy, the engine) stays, and a traceback
without a user frame (an error of the engine's own) is kept whole. An error the engine
raised on purpose on the driver (a job's error, a missing path) loses every engine frame.

``STRATAFLOW_TRACEBACK=full`` turns folding off: every frame is shown, as before.
Python 3.11+ (:func:`folding`).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from types import TracebackType

__all__ = ["ENV", "ENGINE", "PLUMBING", "USER", "engine_file", "folding", "fold_traceback", "hint", "kind"]

#: the environment variable that shows every frame (``full``)
ENV = "STRATAFLOW_TRACEBACK"
_FULL = {"full", "all", "1", "true", "yes", "on"}

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_DIRS = tuple(sorted({os.path.abspath(p) + os.sep for p in
                             (sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib"),
                              os.path.dirname(os.__file__)) if p}))
_THIRD_PARTY = ("site-packages", "dist-packages")
#: the bundled jobs (``strataflow run kmeans``) are programs, as ``Dataset``'s call sites take them
_JOBS_DIR, _JOBS_MODULE = os.path.join(_PACKAGE_DIR, "workloads", ""), "strataflow.workloads."
#: packages (not the standard library's) that carry tasks to the engine
_PLUMBING_PACKAGES = frozenset({"tblib", "cloudpickle", "ray"})

ENGINE, PLUMBING, USER = "engine", "plumbing", "user"


def folding() -> bool:
    """Whether tracebacks are folded now: unless ``STRATAFLOW_TRACEBACK`` says ``full``.
    Read at each error, so that setting it in a notebook takes effect at once. Never
    before Python 3.11: the line saying what was hidden is a note (PEP 678), which 3.10
    does not print, and its ``raise`` restores the traceback it caught, unfolded."""
    return sys.version_info >= (3, 11) and os.environ.get(ENV, "").strip().lower() not in _FULL


def hint(hidden: int) -> str:
    """The line that stands for ``hidden`` folded frames."""
    return f"[{hidden} strataflow frame{'' if hidden == 1 else 's'} hidden; {ENV}=full shows them]"


def engine_file(filename: str) -> bool:
    """Whether ``filename`` is strataflow's own code (the bundled jobs are programs)."""
    return filename.startswith(_PACKAGE_DIR) and not filename.startswith(_JOBS_DIR)


def kind(tb: TracebackType) -> str:
    """ENGINE, PLUMBING or USER: whose code the traceback entry ``tb`` runs. The module's
    name decides where the frame has one (a frame rebuilt from an executor's traceback
    has the remote one, whatever the path of strataflow there), else the file's path."""
    frame = tb.tb_frame
    module = frame.f_globals.get("__name__")
    filename = frame.f_code.co_filename or ""
    if isinstance(module, str) and (module == "strataflow" or module.startswith("strataflow.")):
        return USER if module.startswith(_JOBS_MODULE) else ENGINE
    if filename.startswith(_PACKAGE_DIR):
        return ENGINE if engine_file(filename) else USER
    if isinstance(module, str) and module.partition(".")[0] in _PLUMBING_PACKAGES:
        return PLUMBING
    if filename.startswith("<frozen "):
        return PLUMBING
    for base in _STDLIB_DIRS:
        if filename.startswith(base):
            first = filename[len(base):].split(os.sep, 1)[0]
            if first not in _THIRD_PARTY:
                return PLUMBING
    return USER


def _entries(tb: TracebackType | None) -> list[TracebackType]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def fold_traceback(tb: TracebackType | None, engine_raised: bool = False) -> tuple[TracebackType | None, int]:
    """``tb`` without the engine's frames, and how many frames it lost.

    A task's traceback (the default) keeps what lies between the user's first frame and
    the end: the user's frames, what they called (the standard library, numpy, and the
    engine's own code where the user's called it: the frames under the last user frame
    say where that call failed); the engine's frames between two of the user's (a
    ``foreach`` calling the user's function) go, and so does everything above the first
    (the executor, the thread pool). Without a user frame it is returned whole: the
    engine's own error. ``engine_raised``: the error was raised on purpose by the engine
    on the driver (a job's error, a path that does not exist), and every engine frame goes.

    The entries are new; ``tb`` itself is left as it is (another exception of a chain
    may share it)."""
    entries = _entries(tb)
    kinds = [kind(e) for e in entries]
    users = [i for i, k in enumerate(kinds) if k == USER]
    if engine_raised:
        first = users[0] if users else len(kinds)
        keep = [e for i, (e, k) in enumerate(zip(entries, kinds)) if k == USER or (k == PLUMBING and i > first)]
    elif not users:
        return tb, 0
    else:
        first, last = users[0], users[-1]
        keep = [e for i, (e, k) in enumerate(zip(entries, kinds)) if i >= first and not (k == ENGINE and i < last)]
    if len(keep) == len(entries):
        return tb, 0
    folded = None
    for e in reversed(keep):
        folded = TracebackType(folded, e.tb_frame, e.tb_lasti, e.tb_lineno)
    return folded, len(entries) - len(keep)
