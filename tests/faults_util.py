"""Fault injection into a running application's files, for ``test_faults.py``.

Everything here works from the files alone (found under a Context's ``local_dirs`` and
``shuffle_dirs``), never from the stores' in-memory indexes, so the same fault reaches a
threads-backend executor and an executor process alike:

- cache block files (``*.blk``): the payload is located from the file's own header;
- mapped segments (``region-*.seg``, sparse): the written data is found with
  ``SEEK_DATA``/``SEEK_HOLE``; an extent of two pages or more holds a whole page, so a
  change in the middle of every page of written data reaches every such extent; extents
  start 64-byte aligned (numeric ones page-aligned), and a pickled one starts with its
  pickle's protocol header;
- shuffle map outputs (``shuffle_<s>_<m>.data`` / ``.index``);
- a full device: ``device_full`` makes every write of block files, shuffle files, spills
  (``os.fdopen``) and segment extents (``os.pwrite``) under the given directories fail with
  ENOSPC, in this process only (the threads backend, or what the driver itself writes:
  source slices);
- source slices (``source-<uid>/<split>.npy|.pkl`` under the Context's ``source_dirs``):
  ``source_files`` finds them, ``forge_source`` writes the best forgery of each format,
  and ``creation_refused`` makes creating any file or directory under the given
  directories fail as a read-only directory does (EACCES), in this process only (the
  driver writes the slices; as root a ``chmod`` would not stop it).

The byte-level primitives are the existing tests' own (``damage``/``cut`` of
test_mapped_damage.py, the forgeries of test_frame_auth.py).
"""

from __future__ import annotations

import errno
import os
import threading
from contextlib import contextmanager

import pytest

from test_frame_auth import evil_payload, evil_pickle, forge_block, forge_bucket, index_fields, read_header
from test_mapped_damage import cut, damage

from strataflow.shuffle.files import MapOutput
from strataflow.storage.blocks.serde import SERIALIZERS

PAGE = 4096

__all__ = ["app_files", "block_files", "segment_files", "map_outputs", "tmp_files", "data_ranges", "flip_file",
           "truncate_file", "delete_file", "forge_file", "pickle_starts", "flip_output", "truncate_output", "delete_output",
           "forge_output", "device_full", "source_files", "forge_source", "creation_refused", "PAGE"]


# -- finding the files ------------------------------------------------------------------------
def _walk(dirs: list[str], pred) -> list[str]:
    out = []
    for d in dirs:
        for root, _, names in os.walk(d):
            out.extend(os.path.join(root, n) for n in names if pred(n))
    return sorted(out)


def app_files(dirs: list[str]) -> list[str]:
    """Every file under the directories but the applications' ``owner`` lock files."""
    return _walk(dirs, lambda n: n != "owner")


def block_files(c) -> list[str]:
    return _walk(c.local_dirs, lambda n: n.endswith(".blk"))


def segment_files(c) -> list[str]:
    return _walk(c.local_dirs, lambda n: n.startswith("region-") and n.endswith(".seg"))


def map_outputs(c) -> list[MapOutput]:
    """Map outputs on disk (both files present), whichever executor wrote them."""
    out = []
    for index in _walk(c.shuffle_dirs, lambda n: n.startswith("shuffle_") and n.endswith(".index")):
        data = index[: -len(".index")] + ".data"
        with open(index, "rb") as f:
            _, offsets, _, _, _ = index_fields(f.read())
        out.append(MapOutput(data, index, tuple(int(x) for x in offsets[1:] - offsets[:-1])))
    return out


def tmp_files(dirs: list[str]) -> list[str]:
    return _walk(dirs, lambda n: n.endswith(".tmp"))


def data_ranges(path: str) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges of a (sparse) file that hold written data."""
    out = []
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:  # ENXIO: no data past pos
                if exc.errno == errno.ENXIO:
                    break
                raise
            end = os.lseek(fd, start, os.SEEK_HOLE)
            out.append((start, end))
            pos = end
    finally:
        os.close(fd)
    return out


def _pages(path: str) -> list[int]:
    return [p for start, end in data_ranges(path) for p in range(start - start % PAGE, end, PAGE) if p >= start]


def _bump_mtime(path: str) -> None:
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


# -- cache files: a .blk or a .seg --------------------------------------------------------------
def flip_file(path: str) -> int:
    """Flips bytes in the payload, same size, mtime moved: in a block file once in the
    middle of the payload, in a segment at the middle of every page of written data (every
    extent of a page or more). Returns the number of places flipped."""
    if path.endswith(".blk"):
        size = os.path.getsize(path)
        length = read_header(path)[2]
        damage(path, size - length // 2, 16)
        return 1
    pages = _pages(path)
    fd = os.open(path, os.O_RDWR)
    try:
        for p in pages:
            old = os.pread(fd, 16, p + PAGE // 2)
            os.pwrite(fd, bytes(b ^ 0xFF for b in old), p + PAGE // 2)
    finally:
        os.close(fd)
    _bump_mtime(path)
    return len(pages)


def truncate_file(path: str) -> None:
    """Cuts the file to half its written bytes (a segment: half its data, not its sparse
    capacity), mtime moved."""
    if path.endswith(".blk"):
        cut(path, os.path.getsize(path) // 2)
    else:
        ranges = data_ranges(path)
        end = min(ranges[-1][1], os.path.getsize(path)) if ranges else 0
        cut(path, end // 2)


def delete_file(path: str) -> None:
    os.remove(path)


def forge_file(path: str, marker) -> None:
    """The best forgery of a writer without the application's key: a malicious pickle
    (creating ``marker`` when unpickled) in the block's place, the file's size kept.

    A block file gets a payload its serializer would unpickle, with every unkeyed field
    (lengths, the authenticated prefix, the XXH3 of the rest) recomputed for it. A
    segment's checksums live in its executor's memory, out of a forger's reach: the pickle
    goes in place at the start of every pickled extent and of every page of written data
    (every numeric extent's start), and the file's mtime is put back as it was (only its
    ctime tells of the change)."""
    if path.endswith(".blk"):
        _, _, length, _, _, name, _ = read_header(path)
        serializer = name.decode()
        forged = evil_payload(serializer, marker, length)
        forge_block(path, forged, SERIALIZERS[serializer].unpickled_prefix([memoryview(forged)]))
        return
    st = os.stat(path)
    payload = evil_pickle(marker)
    fd = os.open(path, os.O_RDWR)
    try:
        for p in sorted(set(_pages(path)) | set(pickle_starts(path))):
            os.pwrite(fd, payload, p)
    finally:
        os.close(fd)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def pickle_starts(path: str) -> list[int]:
    """Offsets in a segment's written data, 64-byte aligned, where a pickle stream of
    protocol 4 or 5 starts (``PROTO n``, ``FRAME``): the extents of pickled blocks."""
    out = []
    with open(path, "rb") as f:
        for start, end in data_ranges(path):
            f.seek(start)
            data = f.read(end - start)
            for o in range(-start % 64, len(data) - 2, 64):
                if data[o] == 0x80 and data[o + 1] in (4, 5) and data[o + 2] == 0x95:
                    out.append(start + o)
    return out


# -- shuffle map outputs ----------------------------------------------------------------------------
def flip_output(out: MapOutput) -> None:
    damage(out.data_path, os.path.getsize(out.data_path) // 2, 16)


def truncate_output(out: MapOutput) -> None:
    cut(out.data_path, os.path.getsize(out.data_path) // 2)


def delete_output(out: MapOutput) -> None:
    os.remove(out.data_path)


def forge_output(out: MapOutput, marker) -> int:
    """Every bucket big enough replaced by a pickled bucket (``L`` + a malicious pickle,
    same size) whose index entries (authenticated length, XXH3) are recomputed; the tag
    kept (no key, no tag). Returns the number of buckets forged."""
    room = len(evil_pickle(marker)) + 1
    n = 0
    for r, size in enumerate(out.bucket_bytes):
        if size >= room:
            forge_bucket(out, r, b"L" + evil_pickle(marker, size - 1), size)
            n += 1
    return n


# -- a full device ------------------------------------------------------------------------------------
def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


class _FullFile:
    """A file object on a full device: a write puts half its bytes, then fails ENOSPC
    (what a device that fills up in the middle of a file does)."""

    def __init__(self, fh) -> None:
        self._fh = fh

    def write(self, data) -> int:
        view = memoryview(data)
        if view.nbytes > 1 and view.contiguous:
            self._fh.write(view.cast("B")[: view.nbytes // 2])
            self._fh.flush()
        raise OSError(errno.ENOSPC, "No space left on device (simulated)")

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._fh.close()


class device_full:
    """While on, writes under ``roots`` fail with ENOSPC: files opened through
    ``os.fdopen`` (block files, shuffle files, spills: ``private_file.atomic_write``) and
    ``os.pwrite`` (segment extents). In this process only: use the threads backend. Counts
    the writes refused in ``refused``."""

    def __init__(self, monkeypatch, roots: list[str]) -> None:
        self.mp = monkeypatch
        self.roots = [os.path.realpath(r) + os.sep for r in roots]
        self.refused = 0
        self._real_fdopen, self._real_pwrite = os.fdopen, os.pwrite

    def _full(self, fd: int) -> bool:
        path = _fd_path(fd)
        return any(path.startswith(r) for r in self.roots)

    def on(self) -> "device_full":
        real_fdopen, real_pwrite = self._real_fdopen, self._real_pwrite

        def fdopen(fd, mode="r", *args, **kwargs):
            fh = real_fdopen(fd, mode, *args, **kwargs)
            if any(m in mode for m in "wa+") and self._full(fd):
                self.refused += 1
                return _FullFile(fh)
            return fh

        def pwrite(fd, data, offset):
            if self._full(fd):
                self.refused += 1
                raise OSError(errno.ENOSPC, "No space left on device (simulated)")
            return real_pwrite(fd, data, offset)

        self.mp.setattr(os, "fdopen", fdopen)
        self.mp.setattr(os, "pwrite", pwrite)
        return self

    def off(self) -> None:
        self.mp.setattr(os, "fdopen", self._real_fdopen)
        self.mp.setattr(os, "pwrite", self._real_pwrite)




def fail_tasks_sent_together(pts, error: type[BaseException]) -> None:
    """``pts``: four cached partitions of 2,500 rows, two on each of two executors, so a
    job's tasks go to each executor together. A task that raises and a result that does
    not pickle each fail their job with their own error (raised as ``error``), and the
    executors serve the next job whole."""

    def bad(i, a):
        if i == 3:
            raise ValueError("partition three is bad")
        return [a.sum()]

    with pytest.raises(error, match="partition three is bad"):
        pts.map_partitions_with_index(bad).collect()
    with pytest.raises(error, match="(?i)pickle"):
        pts.map_partitions_with_index(lambda i, a: [threading.Lock() if i == 2 else a.sum()]).collect()
    assert pts.map_partitions(lambda a: [len(a)]).collect() == [2500] * 4


# -- source slices ------------------------------------------------------------------------------------
def source_files(c) -> list[str]:
    """The driver's source slice files (every source), under the Context's ``source_dirs``."""
    return _walk(c.source_dirs, lambda n: n.endswith((".npy", ".pkl")))


def forge_source(path: str, marker) -> None:
    """The best forgery of a writer without the application's key, same size: a pickled
    slice gets a malicious pickle behind its header (magic and tag kept); a numeric one a
    valid ``.npy`` of the same dtype and shape with other numbers (which unkeyed checks in
    the file itself would pass)."""
    size = os.path.getsize(path)
    if path.endswith(".pkl"):
        head = 8 + 32  # magic, tag
        with open(path, "r+b") as f:
            f.seek(head)
            f.write(evil_pickle(marker, size - head))
        return
    import numpy as np

    real = np.load(path)
    with open(path, "wb") as f:
        np.save(f, np.full_like(real, 7))
    assert os.path.getsize(path) == size


class creation_refused:
    """While on, creating a file or a directory under ``roots`` fails with ``err``
    (EACCES: what a read-only directory answers), in this process only. Counts the
    refusals in ``refused``."""

    def __init__(self, monkeypatch, roots: list[str], err: int = errno.EACCES) -> None:
        self.mp = monkeypatch
        self.roots = [os.path.realpath(r) for r in roots]
        self.err = err
        self.refused = 0
        self._open, self._mkdir = os.open, os.mkdir

    def _under(self, path) -> bool:
        p = os.path.realpath(os.fspath(path))
        return any(p == r or p.startswith(r + os.sep) for r in self.roots)

    def _refuse(self, path):
        self.refused += 1
        raise OSError(self.err, os.strerror(self.err), os.fspath(path))

    def on(self) -> "creation_refused":
        real_open, real_mkdir = self._open, self._mkdir

        def open_(path, flags, *args, **kwargs):
            if flags & os.O_CREAT and self._under(path):
                self._refuse(path)
            return real_open(path, flags, *args, **kwargs)

        def mkdir(path, *args, **kwargs):
            if self._under(path):
                self._refuse(path)
            return real_mkdir(path, *args, **kwargs)

        self.mp.setattr(os, "open", open_)
        self.mp.setattr(os, "mkdir", mkdir)
        return self

    def off(self) -> None:
        self.mp.setattr(os, "open", self._open)
        self.mp.setattr(os, "mkdir", self._mkdir)


@contextmanager
def application(tmp_path, backend: str, memory: str = "2MB", **kwargs):
    """A Context on ``tmp_path/local`` and ``tmp_path/shuffle``; after ``stop()`` both must
    be empty (the application's directories removed, whatever happened to their files)."""
    from strataflow import Context

    local, shuffle = tmp_path / "local", tmp_path / "shuffle"
    local.mkdir()
    shuffle.mkdir()
    c = Context(backend=backend, parallelism=2, memory=memory, progress=False, local_dirs=[str(local)],
                shuffle_dirs=[str(shuffle)], **kwargs)
    try:
        yield c
    finally:
        c.stop()
    assert os.listdir(local) == [] and os.listdir(shuffle) == [], (
        f"stop() left files behind: {app_files([str(local), str(shuffle)])}")
