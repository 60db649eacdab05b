"""Whether the machine can hold the application at all: checked when a Context starts.

Why: the memory budget (``memory``) bounds what the executors' caches and their work
structures hold, but each process of the application also holds its own interpreter,
numpy and pyarrow before it holds any data. In a memory cgroup (a container's limit, a
``bench scale --machine-memory`` machine) nothing beyond the limit is reclaimable: the
kernel kills a process, a job loses an executor mid-stage and runs its tasks again, and
the user sees neither why nor by how much. So where the cgroup's limit cannot hold the
processes' baseline plus the budget, the Context refuses at start with the numbers and
what to change (:func:`check_fits`), before a directory is made or an executor started.

The baseline, measured in a memory cgroup on the 2-core machine (``memory.stat``): an
executor that has run a pyarrow task holds 61 MiB of anonymous memory, the driver 28 MiB
(61 MiB once it imports pyarrow, as the threads backend's does), and the libraries' file
pages (~50 MiB) are charged once, to the group that first reads them. Hence
:data:`PROCESS_BASELINE` per process and :data:`LIBRARIES` once. It is a floor: a
running task also holds its partition and what it makes of it, outside the budget.

A machine without a cgroup limit is weighed by the configuration's warning against the
physical memory (``config._warn_above_physical``): swap and reclaimable pages make some
overcommit work there. A cgroup's limit is a hard line, hence an error here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from strataflow.common.checks import ConfigError
from strataflow.config.backends import backend_class

if TYPE_CHECKING:
    from strataflow.config import Config

__all__ = ["PROCESS_BASELINE", "LIBRARIES", "cgroup_memory_limit", "application_floor", "check_fits"]

MiB = 1 << 20
#: what one process of the application holds before any data (Python, numpy, pyarrow)
PROCESS_BASELINE = 64 * MiB
#: the shared libraries' pages, charged once to the group
LIBRARIES = 64 * MiB
#: a limit at or above this is "no limit" (cgroup v1 writes 2**63 rounded down to a page)
_UNLIMITED = 1 << 60
#: the cgroup file systems' mount (the same variable the benchmarks' machines honour)
ROOT_ENV = "STRATAFLOW_CGROUP_ROOT"


def _read_limit(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    if not text or text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value < _UNLIMITED else None


def cgroup_memory_limit(proc_cgroup: str = "/proc/self/cgroup", root: str | None = None) -> tuple[int, str] | None:
    """The tightest memory limit over this process's memory cgroup and its ancestors, and
    the file that sets it; None where none is set (or no cgroup file system is readable).
    cgroup v1's ``memory`` hierarchy (``memory.limit_in_bytes``) and v2's unified one
    (``memory.max``) are both read; a limit is hierarchical, so a parent's counts too."""
    root = root or os.environ.get(ROOT_ENV) or "/sys/fs/cgroup"
    try:
        with open(proc_cgroup) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    found: list[tuple[int, str]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if "memory" in controllers.split(","):
            base, name = os.path.join(root, "memory"), "memory.limit_in_bytes"
        elif controllers == "":
            base, name = root, "memory.max"
            if not os.path.isfile(os.path.join(root, "cgroup.controllers")):
                base = os.path.join(root, "unified")  # a hybrid mount's v2 part
        else:
            continue
        rel = path.strip("/")
        while True:
            file = os.path.join(base, rel, name) if rel else os.path.join(base, name)
            limit = _read_limit(file)
            if limit is not None:
                found.append((limit, file))
            if not rel:
                break
            rel = os.path.dirname(rel)
    return min(found) if found else None


def application_floor(memory: int, processes: int) -> int:
    """The least a machine must hold for ``processes`` processes and a budget of
    ``memory`` bytes (see the module's docstring)."""
    return memory + processes * PROCESS_BASELINE + LIBRARIES


def check_fits(cfg: "Config", limit: tuple[int, str] | None = None) -> None:
    """Refuses (ConfigError) a configuration whose processes' baseline and budget do not
    fit the memory cgroup this process is in, naming the figures and what to change.
    ``limit``: the cgroup's (bytes, file), default :func:`cgroup_memory_limit`. Backends
    whose executors run elsewhere (ray) are not weighed."""
    kind = backend_class(cfg.backend)
    if not kind.shares_local_files:
        return
    limit = limit if limit is not None else cgroup_memory_limit()
    if limit is None:
        return
    have, where = limit
    executors = 0 if kind.in_driver_process else cfg.executors
    memory = max(cfg.memory, (cfg.executor_memory or 0) * executors)
    need = application_floor(memory, 1 + executors)
    if need <= have:
        return
    fixed = need - memory
    who = f"the driver and {executors} executor process(es)" if executors else "the driver (threads backend)"
    room = have - fixed
    fewer = "fewer executors (parallelism / executors)" if executors else ""
    if room > 0:
        advice = f"Give memory at most {room // MiB:,} MiB, " + (f"or {fewer}, " if fewer else "") + "or a larger machine"
    else:
        advice = (f"Use {fewer} or a larger machine" if fewer else "Use a larger machine") + \
            f": the processes alone need {fixed // MiB:,} MiB"
    raise ConfigError(
        f"machine: this process's memory cgroup is limited to {have // MiB:,} MiB ({where}), less than the "
        f"{need // MiB:,} MiB the application needs at least: memory {memory // MiB:,} MiB + {who} at "
        f"~{PROCESS_BASELINE // MiB} MiB each (Python, numpy, pyarrow) + ~{LIBRARIES // MiB} MiB of their "
        f"libraries' pages; beyond the limit the kernel would kill a process mid-job. {advice}")
