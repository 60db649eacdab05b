"""The built-in backends, registered by name (``config/backends.py`` holds the registry).

This module imports the backends; each backend imports only the interface
(``backend.py``), never this module, so no import runs in a circle. Adding a backend is
its handle class (an :class:`~strataflow.executor.backend.ExecutorHandle` with its
capabilities as class attributes and a ``start`` class method) plus one line here;
the configuration, the CLI's choices and the engine's capability checks follow.
"""

from __future__ import annotations

from typing import Any

from strataflow.config import Config
from strataflow.config.backends import BACKENDS, backend_class, register_backend
from strataflow.metrics import EventBus
from strataflow.executor.backend import ExecutorHandle, LostCallback, Peers, SourceServer
from strataflow.executor.processes import ProcessExecutor
from strataflow.executor.ray.handle import RayExecutor
from strataflow.executor.runtime import ExecutorSpec
from strataflow.executor.threads import LocalExecutor

__all__ = ["BACKENDS", "backend_class", "open_session", "start_executor"]

for _cls in (LocalExecutor, ProcessExecutor, RayExecutor):
    register_backend(_cls)


def open_session(config: Config) -> Any:
    """What the application's backend shares among its executors (``ExecutorHandle.open_session``)."""
    return backend_class(config.backend).open_session(config)


def start_executor(kind: str, spec: ExecutorSpec, events: EventBus, on_lost: LostCallback,
                   peers: Peers | None = None, session: Any = None,
                   sources: SourceServer | None = None) -> ExecutorHandle:
    """A new executor of the backend ``kind`` (``ExecutorHandle.start``)."""
    return backend_class(kind).start(spec, events, on_lost, peers, session, sources)
