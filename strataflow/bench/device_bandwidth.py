"""The device's own sequential bandwidth, by direct I/O: what a run inside a machine
smaller than its data (``bench scale --machine-memory``) is compared against.

Why not :func:`strataflow.storage.disk.probe.probe_bandwidth`: its writes go through the
page cache (the fsync's write-back is timed with them, but the copies are not the
device's), and a figure from another invocation may come from another disk state. Here,
in the same invocation as the runs: a file of ``size`` bytes written with ``O_DIRECT`` in
1 MiB blocks from a page-aligned buffer (an anonymous mmap), ``fsync``ed, then read back
with ``O_DIRECT``: no page cache on either side.

Where ``O_DIRECT`` is refused (tmpfs, some overlay file systems: ``EINVAL``), the file is
written through the page cache and fsynced, its pages dropped with
``posix_fadvise(POSIX_FADV_DONTNEED)``, and read back; ``mode`` says which was used. A
memory file system (tmpfs, which takes O_DIRECT since Linux 6.6) has no device: ``fs``
names the file system and the note says the figure is memory's.
"""

from __future__ import annotations

import errno
import mmap
import os
import tempfile
import time

__all__ = ["direct_bandwidth", "fs_type", "device_counters", "BLOCK", "MEMORY_FS"]

BLOCK = 1 << 20
MB = 1 << 20


#: file systems whose "device" is memory
MEMORY_FS = ("tmpfs", "ramfs", "devtmpfs")
_SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's own size


def device_counters(path: str, diskstats: str = "/proc/diskstats") -> tuple[int, int] | None:
    """``(bytes read, bytes written)`` so far by the block device holding ``path``, from
    the kernel's counters: what a run's I/O did reach the device (a page-cache hit never
    shows here). Counted for the whole device, every process's I/O included. None where
    ``path`` is on no block device the kernel counts (tmpfs, overlay: device major 0)."""
    dev = os.stat(path).st_dev
    major, minor = os.major(dev), os.minor(dev)
    if major == 0:
        return None
    try:
        with open(diskstats) as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 10 and int(fields[0]) == major and int(fields[1]) == minor:
                    return int(fields[5]) * _SECTOR, int(fields[9]) * _SECTOR
    except OSError:
        return None
    return None


def fs_type(path: str) -> str:
    """The type of the file system ``path`` is on (the longest mount point above it in
    ``/proc/self/mounts``), or "unknown"."""
    path = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                point = parts[1].replace("\\040", " ")
                inside = path == point or path.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, parts[2]
    except OSError:
        pass
    return kind


def _open_direct(path: str, flags: int) -> int | None:
    """``path`` opened with O_DIRECT, or None where the file system refuses it."""
    if not hasattr(os, "O_DIRECT"):
        return None
    try:
        return os.open(path, flags | os.O_DIRECT, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.EOPNOTSUPP):
            return None
        raise


def direct_bandwidth(directory: str, size: int = 1 << 30, block: int = BLOCK) -> dict:
    """Sequential write and read MB/s (MB = 2^20 bytes) of ``size`` bytes (rounded up to
    whole ``block``s) in ``directory``: ``{"write_mb_per_s", "read_mb_per_s", "bytes",
    "block", "mode" ("O_DIRECT" or "fadvise"), "dir", "fs", "note"}``. The write's time
    includes its fsync. The file is removed after."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"bandwidth: directory {directory!r} does not exist")
    if block <= 0 or block % mmap.PAGESIZE:
        raise ValueError(f"bandwidth: block must be a positive multiple of {mmap.PAGESIZE}, got {block}")
    n = max(1, -(-size // block))
    buf = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT needs
    buf.write(os.urandom(block))
    fd, path = tempfile.mkstemp(prefix=".strataflow-direct-", dir=directory)
    os.close(fd)
    try:
        wfd = _open_direct(path, os.O_WRONLY | os.O_TRUNC)
        mode = "O_DIRECT" if wfd is not None else "fadvise"
        if wfd is None:
            wfd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            t0 = time.perf_counter()
            for _ in range(n):
                if os.write(wfd, buf) != block:
                    raise OSError(f"bandwidth: short write to {path}")
            os.fsync(wfd)
            write_s = time.perf_counter() - t0
        finally:
            os.close(wfd)
        rfd = _open_direct(path, os.O_RDONLY) if mode == "O_DIRECT" else None
        if rfd is None:
            rfd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(rfd, 0, 0, os.POSIX_FADV_DONTNEED)
        try:
            t0 = time.perf_counter()
            got = 0
            while True:
                k = os.readv(rfd, [buf])
                if not k:
                    break
                got += k
            read_s = time.perf_counter() - t0
        finally:
            os.close(rfd)
    finally:
        buf.close()
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
    if got != n * block:
        raise OSError(f"bandwidth: read {got} bytes of {n * block} back from {path}")
    mb = n * block / MB
    note = (f"direct I/O (O_DIRECT), {block // 1024} KiB blocks, {mb:,.0f} MB, fsync in the write" if mode == "O_DIRECT"
            else f"O_DIRECT refused by {directory}'s file system: written through the page cache (fsync timed), "
                 "pages dropped with posix_fadvise DONTNEED, read back")
    fs = fs_type(directory)
    if fs in MEMORY_FS:
        note += f"; {directory} is on {fs}: memory's speed, not a device's"
    return {"write_mb_per_s": mb / write_s, "read_mb_per_s": mb / read_s, "bytes": n * block, "block": block,
            "mode": mode, "dir": directory, "fs": fs, "note": note}
