"""One input file as readers and executors see it: its path, size, filesystem and listed
version (:class:`FileRef`), read by ranges (a remote file's reads are ranged requests), and
pickled for executors without building its filesystem (:class:`_LazyFS`)."""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = ["FileRef"]


@dataclass(frozen=True)
class FileRef:
    """One input file: ``path`` on ``fs`` (an fsspec filesystem), or a local path when
    ``fs`` is None; ``size`` in bytes as listed; a remote file's ``version`` as listed
    (``remote_version.py``; None when the listing gave no info).

    It travels to executors with its filesystem pickled but not rebuilt (:class:`_LazyFS`):
    an executor that never reads the file's bytes (a partition served from the input
    cache) never imports the filesystem's client (s3fs and botocore: most of a second)."""

    path: str
    size: int
    fs: Any = None
    version: Any = field(default=None, compare=False)
    url: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.fs is not None and not self.url:
            object.__setattr__(self, "url", self.fs.unstrip_protocol(self.path))

    def __reduce__(self) -> tuple:
        fs = self.fs if self.fs is None or isinstance(self.fs, _LazyFS) else _LazyFS(self.fs)
        return (FileRef, (self.path, self.size, fs, self.version, self.url))

    @property
    def local(self) -> bool:
        return self.fs is None

    @property
    def name(self) -> str:
        """What users see: the local path, or the full URL (``s3://bucket/key``)."""
        return self.path if self.fs is None else self.url

    def open(self) -> IO[bytes]:
        """The file, opened for binary reading and seekable. A remote file's object reads
        through :meth:`read_range` (so each read is one ranged request of what is asked,
        never a filesystem's own read-ahead block: s3fs's is 50 MB), and no two opens
        share a position (``memory://`` hands every opener the same object)."""
        if self.fs is None:
            return open(self.path, "rb")
        return io.BufferedReader(_RangeReader(self), buffer_size=_REMOTE_BUFFER)

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the file (fewer at its end): a remote file's with one
        ranged request (``cat_file``, which every fsspec filesystem serves)."""
        end = min(end, self.size) if self.fs is not None else end
        if end <= start:
            return b""
        if self.fs is not None:
            return bytes(self.fs.cat_file(self.path, start=start, end=end))
        with open(self.path, "rb") as fh:
            fh.seek(start)
            return fh.read(end - start)

    def read_all(self) -> bytes:
        if self.fs is not None:
            return bytes(self.fs.cat_file(self.path))
        with open(self.path, "rb") as fh:
            return fh.read()

    def __str__(self) -> str:
        return self.name


_REMOTE_BUFFER = 1 << 20


class _LazyFS:
    """An fsspec filesystem pickled, rebuilt at its first use (any attribute)."""

    def __init__(self, fs: Any = None, state: bytes | None = None) -> None:
        self._state = state if state is not None else pickle.dumps(fs)
        self._fs = fs

    def __reduce__(self) -> tuple:
        return (_LazyFS, (None, self._state))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_state", "_fs"):
            raise AttributeError(name)
        if self._fs is None:
            self._fs = pickle.loads(self._state)
        return getattr(self._fs, name)


class _RangeReader(io.RawIOBase):
    """A remote file as a seekable raw stream whose reads are ranged requests."""

    def __init__(self, ref: FileRef) -> None:
        self._ref = ref
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._ref.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        data = self._ref.read_range(self._pos, self._pos + len(buffer))
        n = len(data)
        memoryview(buffer).cast("B")[:n] = data
        self._pos += n
        return n
