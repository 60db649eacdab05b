"""Modes of the files the user asks for (``save_as_*``, reports, ``--json``).

The engine's own files (cache blocks, shuffle files, spills, source slices, checkpoints,
the event log) are 0600 in 0700 directories whatever the umask (``storage/private_file.py``).
What the user saves is theirs to share, so it follows the umask as Spark's (Hadoop's)
writers do, with one difference: it is never more than 0644 (files) and 0755
(directories), whatever the umask. Hadoop applies its own ``fs.permissions.umask-mode``
(022 by default) rather than the process's, so a Spark job run under ``umask 000`` still
writes 0644 parts; we do the same by taking the union of the process's umask and 022: a
stricter umask (077) is honoured (0600 / 0700), a looser one (000) never makes data that
any user of the machine could change or replace.
"""

from __future__ import annotations

import os
import threading
import uuid
from contextlib import contextmanager
from typing import IO, BinaryIO, Callable, Iterator

from strataflow.common.private_file import atomic_write, make_dirs

__all__ = ["atomic_file", "write_atomically", "current_umask", "output_file_mode", "output_dir_mode", "make_output_dirs", "open_output",
           "touch_output"]

_FLOOR = 0o022  # at least Hadoop's default fs.permissions.umask-mode
_umask_lock = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where Linux tells it (``/proc``);
    elsewhere set and restored under a lock."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _umask_lock:
        old = os.umask(0o077)
        os.umask(old)
    return old


def output_file_mode() -> int:
    """0666 less the umask and 022: at most 0644."""
    return 0o666 & ~(current_umask() | _FLOOR)


def output_dir_mode() -> int:
    """0777 less the umask and 022: at most 0755."""
    return 0o777 & ~(current_umask() | _FLOOR)


def make_output_dirs(path: str, exist_ok: bool = False) -> None:
    """``os.makedirs`` with every directory it makes at ``output_dir_mode()``."""
    make_dirs(path, output_dir_mode(), exist_ok=exist_ok)


def open_output(path: str, flags: int = os.O_WRONLY | os.O_TRUNC) -> int:
    """A descriptor of ``path``, created (or truncated) at ``output_file_mode()``; the
    mode is set before a byte is written, so no other user opens it in a looser one."""
    mode = output_file_mode()
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def touch_output(path: str) -> None:
    """An empty file (``_SUCCESS``) at ``output_file_mode()``."""
    os.close(open_output(path))


@contextmanager
def atomic_file(path: str, mode: str = "wb") -> Iterator[BinaryIO]:
    """A file object whose contents appear at ``path`` only when the block ends without
    error (a hidden temporary name, unique per attempt, then a rename); the file is at
    most 0644, whatever the umask (``output_files.py``)."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        fd = open_output(tmp, os.O_WRONLY | os.O_EXCL)
        with os.fdopen(fd, mode) as fh:
            yield fh
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_atomically(path: str, write: Callable[[IO[bytes]], None], private: bool = False) -> None:
    """``write(file)`` to a temporary file beside ``path``, then renamed to ``path``: a
    user's output (at most 0644, ``io/output_files.py``), or with ``private`` one of the
    engine's own (0600: a checkpoint, which the engine unpickles)."""
    if private:
        with atomic_write(path) as f:
            write(f)
        return
    with atomic_file(path) as f:
        write(f)
