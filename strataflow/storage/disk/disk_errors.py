"""Saying which disk a failed write was on: the path, the errno's name and the device.

"No space left on device" is only useful with the device: a user with several disks
(the cache on an SSD, the shuffle on another, /tmp on a third) needs to know which one to
clean or which option to change. psutil gives the mounted file systems; the one a path
lives on is the mount point that is the longest prefix of its real path (of its nearest
existing ancestor, when the path itself is gone).
"""

from __future__ import annotations

import errno as errno_names
import os
import shutil

import psutil

__all__ = ["describe_disk", "describe_write_error"]


def _existing(path: str) -> str:
    path = os.path.realpath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def describe_disk(path: str) -> str:
    """``device /dev/vda mounted on / (ext4, 1.2 GB free)`` for the file system holding
    ``path`` (what can be found of it: never raises)."""
    where = _existing(path)
    best = None
    try:
        for part in psutil.disk_partitions(all=True):
            mp = part.mountpoint
            if (where == mp or where.startswith(mp.rstrip("/") + "/")) and (best is None or len(mp) > len(best.mountpoint)):
                best = part
    except (OSError, RuntimeError):
        best = None
    try:
        free = f", {shutil.disk_usage(where).free / 1e9:.1f} GB free"
    except OSError:
        free = ""
    if best is None:
        return f"the file system of {where}{free}"
    return f"device {best.device} mounted on {best.mountpoint} ({best.fstype}{free})"


def describe_write_error(what: str, path: str, exc: OSError) -> str:
    """``cannot write <what> <path>: [Errno 28 ENOSPC] No space left on device, on device
    /dev/vda mounted on / (ext4, 0.0 GB free)``."""
    code = exc.errno
    name = errno_names.errorcode.get(code, "?") if code is not None else "?"
    return f"cannot write {what} {path}: [Errno {code} {name}] {exc.strerror or exc}, on {describe_disk(path)}"
