"""A machine of N bytes: a memory cgroup of that size that holds a whole application
(``bench scale --machine-memory``).

Why: a benchmark of data many times the *machine's* memory needs a machine smaller than
its data. A memory cgroup caps the anonymous memory *and* the page cache of every process
in it (the kernel reclaims the group's own cached pages at its limit, and kills a process
of the group when nothing is left to reclaim), so a run inside one reads and writes its
files at the device's speed, as it would on a machine of that size, on any machine.

The application is started through ``/bin/sh``, which writes its own pid into the group's
``cgroup.procs`` and then ``exec``s the command: everything the command allocates, and
every process it starts (executors, a JVM), is charged to the group from its first page.
(A process moved after it started keeps its earlier charges outside: v1 moves no charges.)

Both hierarchies: cgroup v2 (a child of the unified hierarchy, ``memory.max`` and
``memory.swap.max`` 0; the parent's ``cgroup.subtree_control`` gets ``+memory``) and v1
(``<root>/memory/<name>``, ``memory.limit_in_bytes`` and, where swap accounting exists,
``memory.memsw.limit_in_bytes`` at the same size, so swap is no way out). Where neither can
be made (no cgroup file system, no memory controller, not root, read-only) the error says
what is missing and what to do: :class:`MachineUnavailable`.

``STRATAFLOW_CGROUP_ROOT`` replaces ``/sys/fs/cgroup`` (tests, or a delegated v2 subtree:
point it at the subtree's directory).
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from strataflow.bench.device_bandwidth import device_counters

__all__ = ["Machine", "MachineUnavailable", "Usage", "cgroup_root", "detect", "available", "drop_page_cache",
           "call_in_machine", "leave_machine", "checks_outside", "can_leave"]

DEFAULT_ROOT = "/sys/fs/cgroup"
ROOT_ENV = "STRATAFLOW_CGROUP_ROOT"
#: set in a machine's processes: the ``cgroup.procs`` of the group it was made under, where
#: :func:`leave_machine` moves a process whose measured part is done
EXIT_ENV = "STRATAFLOW_MACHINE_EXIT"
#: what to do where a machine cannot be made, the end of every refusal
ADVICE = ("run as root, or in a container whose cgroup file system is writable (e.g. docker --privileged or "
          "--cgroupns=private with a writable /sys/fs/cgroup), or delegate a cgroup v2 subtree to your user "
          f"(systemd-run --user -p Delegate=yes) and point {ROOT_ENV} at it")
_names = itertools.count()
#: v2 without memory.peak: memory.current is sampled this often (seconds)
SAMPLE_S = 0.02


class MachineUnavailable(ValueError):
    """No memory cgroup can be made here; the message says what is missing and what to do.
    A ValueError, as the command line's other refusals: the request cannot be met here."""


def cgroup_root() -> str:
    """Where the cgroup file systems are mounted: ``$STRATAFLOW_CGROUP_ROOT`` or ``/sys/fs/cgroup``."""
    return os.environ.get(ROOT_ENV) or DEFAULT_ROOT


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def detect(root: str | None = None) -> tuple[str, str]:
    """``(version, parent)``: the hierarchy a memory cgroup can be made in (``"v2"`` or
    ``"v1"``) and the directory to make it under. A pure v2 mount (or a delegated v2
    subtree) at ``root`` first, then v1's ``root/memory``, then a hybrid's
    ``root/unified`` where its memory controller is enabled. Raises MachineUnavailable
    naming what is missing; it does not check permission (:func:`available` does)."""
    root = root or cgroup_root()
    if not os.path.isdir(root):
        raise MachineUnavailable(f"--machine-memory: no cgroup file system at {root} (nothing mounted there); {ADVICE}")
    found = []
    for version, parent in (("v2", root), ("v1", os.path.join(root, "memory")), ("v2", os.path.join(root, "unified"))):
        if version == "v1":
            if os.path.isfile(os.path.join(parent, "memory.limit_in_bytes")):
                return version, parent
            continue
        controllers = os.path.join(parent, "cgroup.controllers")
        if os.path.isfile(controllers):
            if "memory" in _read(controllers).split():
                return version, parent
            found.append(f"cgroup v2 at {parent} without the memory controller")
    what = "; ".join(found) or "neither a cgroup v2 hierarchy (cgroup.controllers) nor cgroup v1's memory controller"
    raise MachineUnavailable(f"--machine-memory: no memory controller under {root}: {what}; {ADVICE}")


def _refusal(exc: OSError, path: str) -> MachineUnavailable:
    if exc.errno == errno.EROFS:
        why = f"the cgroup file system is read-only ({path})"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        why = f"no permission to make a cgroup under {os.path.dirname(path)} (running as uid {os.geteuid()})"
    elif exc.errno == errno.EBUSY:
        why = (f"cannot enable the memory controller for {os.path.dirname(path)}'s children (it holds processes "
               "itself: the v2 no-internal-process rule)")
    else:
        why = f"cannot make a cgroup at {path}: {exc.strerror or exc}"
    return MachineUnavailable(f"--machine-memory: {why}; {ADVICE}")


def available(root: str | None = None) -> tuple[bool, str]:
    """Whether a memory cgroup can be made here: a 64 MB one is made and removed.
    ``(True, "cgroup v1 under ...")`` or ``(False, the refusal's message)``."""
    try:
        with Machine(64 << 20, root=root, prefix="strataflow-probe") as m:
            return True, f"cgroup {m.version} under {m.parent}"
    except MachineUnavailable as exc:
        return False, str(exc)


@dataclass
class Usage:
    """What a group used: its limit, the peak of its usage (anonymous memory and page cache
    together), the OOM kills in it, and the hierarchy (``v1``/``v2``, and how the peak was read)."""

    limit_bytes: int
    peak_bytes: int
    oom_kills: int
    version: str
    peak_source: str


class Machine:
    """A fresh memory cgroup of ``limit_bytes``; a context manager that removes it (killing
    any process still in it first: they are the command's own descendants).
    ``popen(cmd)`` starts a command inside it; ``usage()`` reads its peak and OOM kills."""

    def __init__(self, limit_bytes: int, root: str | None = None, prefix: str = "strataflow") -> None:
        if limit_bytes <= 0:
            raise ValueError(f"--machine-memory must be > 0, got {limit_bytes}")
        self.limit = int(limit_bytes)
        self.version, self.parent = detect(root)
        self.path = os.path.join(self.parent, f"{prefix}-{os.getpid()}-{next(_names)}")
        self._peak_sampled = 0
        self._sampling: threading.Event | None = None

    def _file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def __enter__(self) -> "Machine":
        try:
            if self.version == "v2":
                control = os.path.join(self.parent, "cgroup.subtree_control")
                if os.path.isfile(control) and "memory" not in _read(control).split():
                    _write(control, "+memory")
            os.mkdir(self.path)
        except OSError as exc:
            raise _refusal(exc, self.path) from exc
        try:
            if self.version == "v1":
                _write(self._file("memory.limit_in_bytes"), str(self.limit))
                if os.path.exists(self._file("memory.memsw.limit_in_bytes")):  # swap accounting: no way out
                    _write(self._file("memory.memsw.limit_in_bytes"), str(self.limit))
            else:
                _write(self._file("memory.max"), str(self.limit))
                if os.path.exists(self._file("memory.swap.max")):
                    _write(self._file("memory.swap.max"), "0")
        except OSError as exc:
            self.close()
            raise _refusal(exc, self.path) from exc
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def procs(self) -> list[int]:
        """The pids in the group now."""
        try:
            return [int(p) for p in _read(self._file("cgroup.procs")).split()]
        except FileNotFoundError:
            return []

    def popen(self, cmd: list[str], **kw: Any) -> subprocess.Popen:
        """``cmd`` started inside the group: ``/bin/sh`` writes its pid to ``cgroup.procs``
        and execs ``cmd``, so nothing of ``cmd`` is allocated outside. A sampler of
        ``memory.current`` starts where the hierarchy keeps no peak (v2 before 5.19)."""
        launcher = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', self._file("cgroup.procs"), *cmd]
        kw["env"] = {**(kw.get("env") or os.environ), EXIT_ENV: os.path.join(self.parent, "cgroup.procs")}
        proc = subprocess.Popen(launcher, **kw)
        if self.version == "v2" and not os.path.exists(self._file("memory.peak")) and self._sampling is None:
            self._sampling = threading.Event()
            threading.Thread(target=self._sample, daemon=True).start()
        return proc

    def _sample(self) -> None:
        assert self._sampling is not None
        while not self._sampling.is_set():
            try:
                self._peak_sampled = max(self._peak_sampled, int(_read(self._file("memory.current"))))
            except (OSError, ValueError):
                return
            self._sampling.wait(SAMPLE_S)

    def usage(self) -> Usage:
        """The group's limit, peak usage and OOM kills so far."""
        if self.version == "v1":
            peak, source = int(_read(self._file("memory.max_usage_in_bytes"))), "memory.max_usage_in_bytes"
            fields = dict(line.split() for line in _read(self._file("memory.oom_control")).splitlines() if line.strip())
            kills = int(fields.get("oom_kill", 0))
            if "oom_kill" not in fields and int(fields.get("under_oom", 0)):  # old kernels count nothing
                kills = 1
        else:
            if os.path.exists(self._file("memory.peak")):
                peak, source = int(_read(self._file("memory.peak"))), "memory.peak"
            else:
                peak, source = self._peak_sampled, f"memory.current sampled every {SAMPLE_S * 1000:g} ms"
            fields = dict(line.split() for line in _read(self._file("memory.events")).splitlines() if line.strip())
            kills = int(fields.get("oom_kill", 0))
        return Usage(self.limit, peak, kills, self.version, source)

    def close(self) -> None:
        """Kill what is left in the group (the command's descendants), then remove it."""
        if self._sampling is not None:
            self._sampling.set()
        if not os.path.isdir(self.path):
            return
        for _ in range(200):  # up to ~10 s for the killed to leave
            pids = self.procs()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        if self.version == "v1" and os.path.exists(self._file("memory.force_empty")):
            try:  # hand its page cache back now (rmdir would move the charges to the parent)
                _write(self._file("memory.force_empty"), "0")
            except OSError:
                pass
        for _ in range(100):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise
                time.sleep(0.05)
        raise RuntimeError(f"machine: {self.path} still busy after its processes were killed; remove it by hand")


def drop_page_cache(path: str) -> int:
    """Drop the page cache of ``path`` (a file, or every file under a directory); returns
    the bytes it covered. Why: a file's cached pages stay charged to the group that read or
    wrote them, so an input generated outside the machine would be read from memory the
    machine does not have. Written back first (fdatasync): dirty pages cannot be dropped."""
    files = [path] if os.path.isfile(path) else [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]
    total = 0
    for name in files:
        fd = os.open(name, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return total


def leave_machine() -> bool:
    """Moves this process (all its threads) out of the machine it was started in, into the
    group the machine was made under, so that what it does next is not charged to the
    machine: a run's result check holds the whole input in the driver (K-means at 512 MB:
    1.4 GB), which is no part of the run measured and would be OOM-killed in a machine
    smaller than its data. What it already holds stays charged where it is (cgroup v1
    moves no charges by default; v2 never does). False, and nothing moved, outside a
    machine or where the move is refused (a v2 parent that holds controllers for its
    children cannot hold processes: then the check stays in the machine)."""
    target = os.environ.get(EXIT_ENV)
    if not target:
        return False
    try:
        _write(target, str(os.getpid()))
    except OSError:
        return False
    return True


def can_leave(root: str | None = None) -> bool:
    """Whether a process can leave a machine here (:func:`leave_machine`): tried once in a
    64 MB machine."""
    code = "import sys; from strataflow.bench.machine import leave_machine; sys.exit(0 if leave_machine() else 3)"
    try:
        with Machine(64 << 20, root=root, prefix="strataflow-probe") as m:
            return m.popen([sys.executable, "-c", code]).wait(timeout=120) == 0
    except (MachineUnavailable, OSError, subprocess.TimeoutExpired):
        return False


@contextlib.contextmanager
def _outside(what: str) -> Iterator[None]:
    leave_machine()
    yield


def checks_outside() -> Callable[[str], Any] | None:
    """The runner's ``announce_check`` for a run inside a machine: the result check is run
    after :func:`leave_machine` (None outside a machine: nothing to do)."""
    return _outside if os.environ.get(EXIT_ENV) else None


def _tail(path: str, n: int = 1500) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - n))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def call_in_machine(limit_bytes: int, target: str, spec: dict, work_dir: str, timeout_s: float | None = None,
                    root: str | None = None, prefix: str = "strataflow") -> tuple[dict | None, dict]:
    """``target`` (``"module:function"``) called with ``**spec`` in a fresh Python inside a
    fresh machine of ``limit_bytes``; its result must be JSON. Returns ``(result or None,
    machine)``: ``machine`` holds the row's columns (``machine_memory_mb``, ``peak_mb``,
    ``oom_kills``) and, where no result came back, ``outcome`` (OOM-killed, time limit,
    or the exit status and the log's last lines). Its output goes to a log in ``work_dir``,
    kept (``log``) only where no result came back."""
    os.makedirs(work_dir, exist_ok=True)
    base = os.path.join(work_dir, f"machine-{os.getpid()}-{next(_names)}")
    with open(base + ".spec.json", "w") as f:
        json.dump(spec, f)
    cmd = [sys.executable, "-m", "strataflow.bench.machine", target, base + ".spec.json", base + ".out.json"]
    timed_out = False
    before = device_counters(work_dir)
    with Machine(limit_bytes, root=root, prefix=prefix) as m, open(base + ".log", "wb") as log:
        proc = m.popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.kill()
            proc.wait()
        use = m.usage()
    after = device_counters(work_dir)
    info: dict[str, Any] = {"machine_memory_mb": use.limit_bytes / (1 << 20), "peak_mb": use.peak_bytes / (1 << 20),
                            "oom_kills": use.oom_kills, "cgroup": use.version, "log": base + ".log"}
    if before is not None and after is not None:  # what reached the device (the whole device's counters)
        info["device_read_gb"] = (after[0] - before[0]) / (1 << 30)
        info["device_written_gb"] = (after[1] - before[1]) / (1 << 30)
    result = None
    if proc.returncode == 0 and os.path.exists(base + ".out.json"):
        with open(base + ".out.json") as f:
            result = json.load(f)
    for leftover in (base + ".spec.json", base + ".out.json") + ((base + ".log",) if result is not None else ()):
        if os.path.exists(leftover):  # a run's log is kept where it did not finish (the row names it)
            os.remove(leftover)
    if result is not None:
        del info["log"]
    if use.oom_kills:  # a process of the run was killed for memory: the run says so, finished or not
        info["outcome"] = (f"OOM: {use.oom_kills} process(es) killed in a {use.limit_bytes / (1 << 20):,.0f} MB "
                           f"machine (exit status {proc.returncode})")
    elif timed_out:
        info["outcome"] = f"time limit: over {timeout_s:g} s in the machine"
    elif result is None:
        info["outcome"] = f"failed in the machine (exit status {proc.returncode}): {_tail(base + '.log', 300).strip()}"
    return result, info


def _main(argv: list[str]) -> int:
    """``python -m strataflow.bench.machine MODULE:FUNCTION SPEC.json OUT.json``: the
    process :func:`call_in_machine` starts inside the group."""
    target, spec_path, out_path = argv
    module, _, name = target.partition(":")
    with open(spec_path) as f:
        spec = json.load(f)
    result = getattr(importlib.import_module(module), name)(**spec)
    with open(out_path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(out_path + ".tmp", out_path)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
