"""Per-application working directories for cache and shuffle files.

Each application makes ``strataflow-<app id>-<kind>`` under every configured base
directory, with mode 0700 (other users must not read intermediate data), and removes it
when it stops. A crash leaves them behind, so every start looks for directories whose
owner process (pid and start time, recorded in an ``owner`` file) is gone, and removes
them.
"""

from __future__ import annotations

import os
import shutil
import uuid

import psutil

__all__ = ["new_app_id", "create_app_dirs", "remove_dirs", "remove_stale"]

_PREFIX = "strataflow-"
_OWNER = "owner"


def new_app_id() -> str:
    return f"{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _owner_line() -> str:
    return f"{os.getpid()} {psutil.Process().create_time():.3f}\n"


def _owner_alive(path: str) -> bool:
    try:
        with open(os.path.join(path, _OWNER)) as f:
            pid_s, created_s = f.read().split()
        proc = psutil.Process(int(pid_s))
        return abs(proc.create_time() - float(created_s)) < 1.0
    except (OSError, ValueError, psutil.Error):
        return False


def create_app_dirs(bases: list[str], app_id: str, kind: str) -> list[str]:
    out = []
    for base in bases:
        path = os.path.join(base, f"{_PREFIX}{app_id}-{kind}")
        os.makedirs(path, mode=0o700, exist_ok=False)
        os.chmod(path, 0o700)  # makedirs' mode is filtered by the umask
        with open(os.path.join(path, _OWNER), "w") as f:
            f.write(_owner_line())
        out.append(path)
    return out


def remove_dirs(dirs: list[str]) -> None:
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


def remove_stale(bases: list[str]) -> list[str]:
    """Removes the working directories of applications that are no longer running."""
    removed = []
    for base in dict.fromkeys(bases):
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            path = os.path.join(base, name)
            if name.startswith(_PREFIX) and os.path.isdir(path) and os.path.exists(os.path.join(path, _OWNER)):
                if not _owner_alive(path):
                    shutil.rmtree(path, ignore_errors=True)
                    removed.append(path)
    return removed
