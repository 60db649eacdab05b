"""Shuffle files: one data file and one index file per map task (Spark's sort-based
layout), so a shuffle of M maps and R reducers makes 2M files, not M*R.

The data file is the R encoded buckets back to back; the index holds their offsets and a
CRC32 of each, and is renamed into place last, so a map output exists exactly when its
index does. A reader that finds a file missing, short or failing its checksum raises
:class:`FetchFailed`, and the scheduler reruns the map task that wrote it.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass

import numpy as np

__all__ = ["FetchFailed", "MapOutput", "write_map_output", "read_bucket"]

_MAGIC = b"SFIDX1\0\0"


class FetchFailed(Exception):
    """A map output could not be read; its map stage must run that task again."""

    def __init__(self, shuffle_id: int, map_id: int, reason: str):
        super().__init__(f"shuffle {shuffle_id} map output {map_id}: {reason}")
        self.shuffle_id = shuffle_id
        self.map_id = map_id
        self.reason = reason

    def __reduce__(self):  # it travels from an executor to the driver
        return (FetchFailed, (self.shuffle_id, self.map_id, self.reason))


@dataclass(frozen=True)
class MapOutput:
    data_path: str
    index_path: str
    bucket_bytes: tuple[int, ...]

    @property
    def total_bytes(self) -> int:
        return sum(self.bucket_bytes)

    def exists(self) -> bool:
        return os.path.exists(self.index_path) and os.path.exists(self.data_path)


def _fsync_dir(path: str) -> None:
    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_map_output(base: str, buckets: list[bytes], sync: bool = False) -> MapOutput:
    """Writes the encoded buckets of one map task atomically (temp files, then rename)."""
    data_path, index_path = base + ".data", base + ".index"
    offsets = np.zeros(len(buckets) + 1, dtype=np.int64)
    crcs = np.zeros(len(buckets), dtype=np.uint32)
    tmp = f"{data_path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        pos = 0
        for i, b in enumerate(buckets):
            f.write(b)
            crcs[i] = zlib.crc32(b)
            pos += len(b)
            offsets[i + 1] = pos
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, data_path)
    tmp = f"{index_path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(_MAGIC + struct.pack("<q", len(buckets)) + offsets.tobytes() + crcs.tobytes())
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, index_path)
    if sync:
        _fsync_dir(index_path)
    return MapOutput(data_path, index_path, tuple(int(x) for x in np.diff(offsets)))


def read_bucket(output: MapOutput, reduce_id: int, shuffle_id: int, map_id: int) -> bytes:
    """The bytes of one bucket, verified; FetchFailed if missing or corrupt."""
    try:
        with open(output.index_path, "rb") as f:
            raw = f.read()
        if raw[:8] != _MAGIC:
            raise FetchFailed(shuffle_id, map_id, f"index {output.index_path} has a bad header")
        (n,) = struct.unpack_from("<q", raw, 8)
        need = 16 + 8 * (n + 1) + 4 * n
        if len(raw) != need or not 0 <= reduce_id < n:
            raise FetchFailed(shuffle_id, map_id, f"index {output.index_path} is truncated or does not match")
        offsets = np.frombuffer(raw, dtype=np.int64, count=n + 1, offset=16)
        crcs = np.frombuffer(raw, dtype=np.uint32, count=n, offset=16 + 8 * (n + 1))
        start, end = int(offsets[reduce_id]), int(offsets[reduce_id + 1])
        with open(output.data_path, "rb") as f:
            f.seek(start)
            data = f.read(end - start)
    except FileNotFoundError as exc:
        raise FetchFailed(shuffle_id, map_id, f"file missing: {exc.filename}") from None
    except OSError as exc:
        raise FetchFailed(shuffle_id, map_id, f"cannot read: {exc}") from None
    if len(data) != end - start or zlib.crc32(data) != int(crcs[reduce_id]):
        raise FetchFailed(shuffle_id, map_id, f"bucket {reduce_id} of {output.data_path} fails its checksum")
    return data
