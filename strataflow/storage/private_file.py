"""Files that only their owner can read or write, and that appear whole.

Every file the engine writes for itself to read back (block files, shuffle outputs, source
slices; segment files and spills are created the same way where they are made) is mode
0600 whatever the umask: no other user of the machine reads the application's data, or
writes into a file of it. It is written under a temporary name unique to its writer
(``mkstemp``: a random name, created exclusively, so two threads or processes writing the
same file never share a half-written one, and no file prepared in advance is reused),
and renamed into place only when complete; a failed write (ENOSPC included) removes the
temporary file and raises.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from typing import BinaryIO, Iterator

__all__ = ["atomic_write", "PRIVATE"]

PRIVATE = 0o600


@contextmanager
def atomic_write(path: str, sync: bool = False) -> Iterator[BinaryIO]:
    """A binary file object whose bytes appear at ``path`` (mode 0600) when the block
    ends without error; ``sync`` flushes them to the device before the rename."""
    directory, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=f"{name}.", suffix=".tmp", dir=directory or ".")
    try:
        os.fchmod(fd, PRIVATE)  # mkstemp asks for 0600, but a umask may remove bits of it
        with os.fdopen(fd, "wb") as fh:
            fd = -1  # closed with fh from now on
            yield fh
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
