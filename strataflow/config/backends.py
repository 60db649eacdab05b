"""The backends, found by name, as the cache policies are (``storage/policies``).

A backend is one :class:`~strataflow.executor.backend.ExecutorHandle` subclass: its class
attributes say what it can do (``name``, ``in_driver_process``, ``shares_local_files``,
``ships_by``, ``can_kill``, ``requires_module``, ``takes_address``), and its ``start`` and
``open_session`` class methods how its executors are started. Everything outside
``strataflow/executor/`` asks this registry for a capability and never tests a backend's
name, so a new backend is its handle class plus one :func:`register_backend` call.

The registry lives on the configuration's floor, below the executors, because the
configuration checks ``backend=`` against it and must not import the executors; the
built-in backends register themselves in :mod:`strataflow.executor.backends`, which
``import strataflow`` imports (through the Context), so the registry is full before any
Config is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strataflow.common.checks import ConfigError

if TYPE_CHECKING:
    from strataflow.executor.backend import ExecutorHandle

__all__ = ["BACKENDS", "register_backend", "unregister_backend", "backend_class", "default_backend",
           "local_backends", "backend_for_master", "SHIPS_BY_FILE", "SHIPS_BY_OBJECT_STORE"]

#: how a backend ships sources, broadcasts and added files to its executors
SHIPS_BY_FILE = "file"  # written once under the application's directories, read by path
SHIPS_BY_OBJECT_STORE = "object_store"  # put in the cluster's object store (nodes share no files)

#: name -> handle class, in registration order (the order of ``choices`` and error messages)
BACKENDS: "dict[str, type[ExecutorHandle]]" = {}

#: the backend ``Context`` takes when ``backend`` is not given: one in the driver's process
#: for a single task slot, executor processes for more
_DEFAULT_SERIAL = "threads"
_DEFAULT_PARALLEL = "processes"


def register_backend(cls: "type[ExecutorHandle]") -> "type[ExecutorHandle]":
    """Adds a backend under ``cls.name`` (usable as a class decorator). A name taken by
    another class is an error: two backends cannot answer to one ``backend=``."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name or name != name.lower():
        raise ValueError(f"register_backend: {cls.__name__} needs a lower-case class attribute 'name', got {name!r}")
    if cls.ships_by not in (SHIPS_BY_FILE, SHIPS_BY_OBJECT_STORE):
        raise ValueError(f"register_backend: {cls.__name__}.ships_by must be {SHIPS_BY_FILE!r} or "
                         f"{SHIPS_BY_OBJECT_STORE!r}, got {cls.ships_by!r}")
    have = BACKENDS.get(name)
    if have is not None and have is not cls:
        raise ValueError(f"register_backend: the name {name!r} is taken by {have.__name__}")
    BACKENDS[name] = cls
    return cls


def unregister_backend(name: str) -> None:
    """Removes a backend (a test's double, once the test is over)."""
    BACKENDS.pop(name, None)


def backend_class(name: str) -> "type[ExecutorHandle]":
    """The handle class of the backend ``name``; ConfigError naming the choices if unknown."""
    cls = BACKENDS.get(str(name).lower())
    if cls is None:
        if not BACKENDS:
            raise ConfigError("backend: no backend is registered (import strataflow.executor.backends)")
        raise ConfigError(f"backend: unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    return cls


def default_backend(parallelism: int) -> str:
    """The backend used when none is named."""
    return _DEFAULT_PARALLEL if parallelism > 1 else _DEFAULT_SERIAL


def local_backends() -> list[str]:
    """The backends whose executors run on this machine and share its files: those that
    need no cluster (the tests' and ``bench``'s choices)."""
    return [name for name, cls in BACKENDS.items() if cls.shares_local_files]


def backend_for_master(master: str) -> "tuple[str, str | None] | None":
    """(backend, address) for a PySpark master URL naming a cluster backend: its name alone
    (a cluster it starts) or ``name://...`` (that cluster's address); None otherwise."""
    for name, cls in BACKENDS.items():
        if cls.takes_address and (master == name or master.startswith(name + "://")):
            return name, (None if master == name else master)
    return None
