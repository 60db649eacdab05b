"""Segment files (strataflow.storage.mapped.segment_file): created sparse at full size and never
over an existing name, written at an offset, sealed, mapped with no descriptor left open;
a full device raises DiskFull and leaves no file."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from strataflow.storage.mapped import segment_file
from strataflow.storage.disk.disk_store import DiskFull


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs Linux /proc")


def test_create_is_sparse_and_refuses_a_taken_name(tmp_path):
    path = str(tmp_path / "s.seg")
    segment_file.create(path, 64 << 20)
    st = os.stat(path)
    assert st.st_size == 64 << 20 and st.st_blocks * 512 < 1 << 20  # no disk taken yet
    with pytest.raises(FileExistsError):
        segment_file.create(path, 4096)
    assert os.stat(path).st_size == 64 << 20


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EFBIG])
def test_a_full_device_raises_disk_full_and_leaves_no_file(tmp_path, monkeypatch, err):
    def full(fd, size):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(os, "ftruncate", full)
    with pytest.raises(DiskFull):
        segment_file.create(str(tmp_path / "s.seg"), 4096)
    assert os.listdir(tmp_path) == []


def test_write_seal_and_map_without_a_descriptor(tmp_path):
    path = str(tmp_path / "s.seg")
    segment_file.create(path, 1 << 20)
    fds = open_fds()
    small = [memoryview(b"ab"), memoryview(b"cd")]  # joined into one write
    big = [memoryview(np.full(300_000, 7, dtype=np.int64)).cast("B"), memoryview(b"tail")]
    segment_file.write(path, small, 10)
    segment_file.write(path, big, 4096)
    end = 4096 + 300_000 * 8 + 4
    assert os.stat(path).st_size == max(1 << 20, end)  # the big extent ran past the capacity
    segment_file.seal(path, end)
    assert os.stat(path).st_size == end
    buf = segment_file.map_file(path)
    assert open_fds() == fds  # every descriptor closed; the map stays
    assert bytes(buf[10:14]) == b"abcd"
    assert (np.frombuffer(buf, dtype=np.int64, count=300_000, offset=4096) == 7).all()
    assert bytes(buf[end - 4 : end]) == b"tail"
    os.unlink(path)
    assert bytes(buf[10:14]) == b"abcd"  # an unlinked file stays readable through its map
    segment_file.seal(path, 0)  # gone: best effort, no error
