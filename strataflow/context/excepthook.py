"""The interpreter's last word on an uncaught strataflow error: its engine frames folded.

Where a script holds its Context in a ``with`` block, ``Context.__exit__`` folds the
driver's frames out of a failed job's traceback (``scheduler/errors.py``). A script in
PySpark's style (``sc = SparkContext(...)``, no ``with``) has no such place: the error
leaves the action's frames (``dataset/actions.py``...) on its way to the top, and those
were 10 of the 25 lines it printed. So the first Context chains a ``sys.excepthook`` that
folds an uncaught strataflow error (and only those: any other goes to the previous hook
untouched) and hands it to whatever hook was there before, Python's own or another
library's (``rich.traceback``). It acts only on errors nobody caught, never changes what
``except`` sees, and ``STRATAFLOW_TRACEBACK=full`` turns the folding off as everywhere.
IPython and Jupyter print cell errors without ``sys.excepthook``; there the ``with``
block, or the error as the scheduler raised it, is what folds.
"""

from __future__ import annotations

import sys
import threading
from types import TracebackType
from typing import Any

from strataflow.scheduler.errors import fold_job_error

__all__ = ["install"]

_lock = threading.Lock()


def _folding_hook(previous: Any) -> Any:
    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> Any:
        try:
            fold_job_error(exc)  # a no-op for anything not strataflow's (and under =full)
            tb = exc.__traceback__
        except Exception:  # never lose the user's error to a fault of the folding
            pass
        return previous(kind, exc, tb)

    hook.strataflow_folds = True  # type: ignore[attr-defined]
    return hook


def install() -> None:
    """Chains the folding hook in front of the current ``sys.excepthook``, once."""
    with _lock:
        if not getattr(sys.excepthook, "strataflow_folds", False):
            sys.excepthook = _folding_hook(sys.excepthook)
