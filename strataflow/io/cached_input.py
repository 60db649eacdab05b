"""What a file reader gives the input cache (issue 53): the key of a partition, and the
partition decoded afresh.

A reader (``TextSource``, ``CsvSource``, ``ParquetSource``, ``NpySource``...) mixes in
:class:`CachedInput` and says three things of a split: the files it reads (``input_files``),
which part of them and with which options (``input_part``, ``input_options``), and how to
decode it (``decode``: the value, and what must be replayed when it is served from the cache
instead, such as the count of malformed CSV lines). Its ``compute`` then asks the executor's
input cache (``tc.runtime.inputs``, ``store/input_reader.py``) when there is one, and decodes
as before when there is none (the driver, a bare block manager, the cache off).

The key hashes the reader, the part, the options, this module's :data:`FORMAT` and the
*version* of every file the part reads (``file_version.py``): a local file's asked of the
file system when the task runs (a ``stat``); a remote file's as the dataset's listing gave it
(an ETag...: the dataset reads its remote files as listed when it was made, as Spark's file
index does, and its executors send no request for a partition they find cached). A file
modified, appended, truncated, replaced, deleted or rewritten within the same second has
another key or none, so it is never served from the cache. After a miss's decode every file
is asked again, and a partition whose file changed meanwhile is returned but not cached. A
file that cannot be versioned (a ``memory://`` file, one stamped within the last two
seconds) makes the part uncacheable, with the reason.

This module reads nothing of the store: the io layer sits below it, and the executor hands
the cache in.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from strataflow.io.file_version import version_of
from strataflow.io.remote_version import same_version
from strataflow.io.paths import FileRef

__all__ = ["CachedInput", "FORMAT", "InputKey"]

#: bump when a reader's decoding changes, so that no partition decoded the old way is served
FORMAT = 1


class InputKey:
    """A split's key in the input cache (``key`` None: not cacheable, ``reason`` says why),
    with what ``ls --inputs`` shows of it."""

    __slots__ = ("key", "reason", "path", "reader", "part", "files", "versions")

    def __init__(self, key: str | None, reason: str, path: str, reader: str, part: str,
                 files: list[FileRef], versions: list | None = None) -> None:
        self.key, self.reason, self.path, self.reader, self.part, self.files = key, reason, path, reader, part, files
        self.versions = versions or []

    def still(self) -> bool:
        """Whether every file is still the version the key was made of, asked of its file
        system now (checked after a decode: a file changed meanwhile may have given a mix
        of versions, which is returned but not cached)."""
        return all(same_version(v, version_of(f).key) for f, v in zip(self.files, self.versions))


class CachedInput:
    """A file source whose decoded partitions the input cache may keep (see the module)."""

    op: str = "input"
    #: the reader's files are already read zero-copy (a local ``.npy`` map): caching a
    #: local one would only copy it
    zero_copy_local: bool = False
    #: the reader decodes text (a parse): worth caching for local files under ``"auto"``
    parses: bool = False

    # -- what a reader says: the three a subclass must give (tests/test_input_cache.py checks
    # -- every reader does), and the two it may ------------------------------------------------
    def input_files(self, split: int) -> list[FileRef]:
        raise NotImplementedError

    def input_part(self, split: int) -> str:
        raise NotImplementedError

    def input_options(self) -> dict:
        return {}

    def decode(self, split: int, tc: Any) -> tuple[Any, dict]:
        """The partition, and what a hit must replay (``replay``)."""
        raise NotImplementedError

    def replay(self, split: int, meta: dict) -> None:
        """What ``decode`` did beside its value, done again for a partition served from the
        cache (nothing, for most readers)."""

    # -- the key --------------------------------------------------------------------------------
    def input_key(self, split: int) -> InputKey:
        files = self.input_files(split)
        path = ",".join(dict.fromkeys(f.name for f in files)) or str(getattr(self, "path", ""))
        part = self.input_part(split)
        versions = []
        for f in files:
            v = version_of(f, listed=True)
            if not v.cacheable:
                return InputKey(None, v.reason, path, self.op, part, files)
            versions.append(v.key)
        if not files:
            return InputKey(None, "the part reads no file", path, self.op, part, files)
        body = json.dumps({"format": FORMAT, "reader": self.op, "part": part, "options": self.input_options(),
                           "files": versions}, sort_keys=True, default=str)
        return InputKey(hashlib.sha256(body.encode()).hexdigest()[:40], "", path, self.op, part, files, versions)

    def wanted(self, mode: str) -> bool:
        """Whether the cache mode (``input_cache``: ``"on"``, ``"auto"``, ``"off"``) covers
        this reader: ``auto`` caches remote files always and local ones that are parsed."""
        if mode == "off":
            return False
        files = getattr(self, "files", [])
        remote = any(not f.local for f in files)
        if self.zero_copy_local and not remote:
            return False
        return mode == "on" or remote or self.parses

    def compute(self, split: int, tc: Any) -> Any:
        cache = getattr(getattr(tc, "runtime", None), "inputs", None)
        if cache is None or not self.wanted(cache.mode):
            return self.decode(split, tc)[0]
        return cache.read(self, split, tc)
