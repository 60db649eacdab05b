"""Raw sequential bandwidth of a directory's device, cold and warm, for ``bench devices``,
``strataflow probe``, a tier's ``measure()`` and the simulator's ``disk=probe:DIR``: the
limit the disk-caching figures are compared against. It lives in storage, the lowest
layer that uses it, so the tiers and the simulator need not import ``bench``.

Cold reads drop the file's pages first with ``posix_fadvise(POSIX_FADV_DONTNEED)`` after an
``fsync``, so they come from the device; warm reads come from the page cache. The probe
file has a name unique to its writer (two probes of one directory never share it) and is
mode 0600, like every file the storage layer writes.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

__all__ = ["probe_bandwidth"]

_CHUNK = 4 << 20


def probe_bandwidth(directory: str, size: int = 256 << 20, cold: bool = True) -> dict:
    """MB/s of writing ``size`` bytes (fsync included) and reading them back."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"probe: directory {directory!r} does not exist")
    block = np.random.default_rng(0).integers(0, 255, _CHUNK, dtype=np.uint8).tobytes()
    n = max(1, size // _CHUNK)
    fd, path = tempfile.mkstemp(prefix=".strataflow-probe-", dir=directory)
    try:
        t0 = time.perf_counter()
        with os.fdopen(fd, "wb") as f:
            for _ in range(n):
                f.write(block)
            f.flush()
            os.fsync(f.fileno())
        write_s = time.perf_counter() - t0
        fd = os.open(path, os.O_RDONLY)
        try:
            if cold:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            else:
                while os.read(fd, _CHUNK):  # bring it into the page cache first
                    pass
            os.lseek(fd, 0, os.SEEK_SET)
            t0 = time.perf_counter()
            while os.read(fd, _CHUNK):
                pass
            read_s = time.perf_counter() - t0
        finally:
            os.close(fd)
    finally:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
    mb = n * _CHUNK / (1 << 20)
    return {"bytes": n * _CHUNK, "write_mb_per_s": mb / write_s, "read_mb_per_s": mb / read_s,
            "mode": "cold" if cold else "warm"}
