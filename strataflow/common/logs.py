"""The engine's logging: every message goes through Python's ``logging`` under the
``strataflow`` logger (library code prints nothing), and warnings that a job can repeat
for every block are rate-limited to one per cause per stage.

Why rate-limited: a full disk under memory pressure makes every evicted block fail to be
written; one warning per block buries the one line that matters. The first block of a
cause in a stage is logged; the others are counted, and the count is logged (once) when
the next stage starts, so nothing is hidden and nothing floods.
"""

from __future__ import annotations

import logging
import threading

__all__ = ["logger", "StageWarnings"]

#: the root of strataflow's loggers (``strataflow.storage``, ``strataflow.ray``, ...)
logger = logging.getLogger("strataflow")
# A library configures no output: the application does (``logging.basicConfig``...). The
# NullHandler keeps Python's last-resort handler from printing our warnings to stderr when
# the application configured nothing, as the logging HOWTO asks of libraries.
logger.addHandler(logging.NullHandler())


class StageWarnings:
    """Warnings on ``log``, one per cause per stage (``new_stage()`` starts one)."""

    def __init__(self, log: logging.Logger) -> None:
        self.log = log
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}  # cause -> messages this stage, beyond the first

    def warn(self, cause: str, message: str) -> bool:
        """Logs ``message`` if ``cause`` was not logged this stage; True if it was logged."""
        with self._lock:
            first = cause not in self._seen
            self._seen[cause] = self._seen.get(cause, -1) + 1
        if first:
            self.log.warning("%s (more of this cause in this stage are counted, not logged)", message)
        return first

    def new_stage(self) -> None:
        """Logs how many warnings of each cause the stage that ended held back."""
        with self._lock:
            held, self._seen = {c: n for c, n in self._seen.items() if n}, {}
        for cause, n in held.items():
            self.log.warning("%d more of: %s (in the previous stage)", n, cause)
