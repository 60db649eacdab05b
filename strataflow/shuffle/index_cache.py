"""The shuffle indexes this process has read (``files.py`` reads and writes the files):
kept so that P reduce tasks of an executor reading P map outputs each pay a ``stat``, not
an open and a read, per output (issue 41), and released with the shuffle they belong to
(issue 50): a long-lived executor keeps the indexes of the shuffles that still exist, not
of every shuffle it ever read.

Index layout (``files.py`` has the whole of it): magic | bucket count n | k non-empty |
their reduce ids | offsets | authenticated lengths | XXH3s | k tags | the index's tag.
"""

from __future__ import annotations

import os
import struct
import threading

import numpy as np

from strataflow.storage.blocks import app_keys
from strataflow.storage.blocks.frame_auth import TAG_BYTES, FrameAuth, same

__all__ = ["MAGIC", "HEAD", "INDEX_DOMAIN", "Index", "IndexCache", "INDEXES", "name_part", "forget_removed_indexes",
           "forget_shuffle_indexes", "index_cache_sizes"]

MAGIC = b"SFIDX4\0\0"
HEAD = struct.Struct("<8sqq")  # magic, bucket count, non-empty buckets
INDEX_DOMAIN = b"sf-shuffle-idx3"
_NAME_LEN = struct.Struct("<H")


def name_part(data_path: str) -> bytes:
    """The data file's name as its tags cover it (length first). Not memoized process-wide:
    a table by path grew with every shuffle an executor ever read or wrote (issue 50); a
    writer computes it once per map output, a reader keeps it with the cached index."""
    name = os.path.basename(data_path).encode()
    return _NAME_LEN.pack(len(name)) + name


_Q = struct.Struct("<q")
_UQ = struct.Struct("<Q")
_TWO_Q = struct.Struct("<qq")


class Index:
    """One map output's index as read, checked for shape; ``stamp`` is the file's
    (inode, size, mtime) when it was read. Whatever is derived from it (the position of
    each non-empty bucket, the data file's name as tags cover it, the key found for its
    directory, whether its tag verified) is kept here, so that it goes with the index."""

    __slots__ = ("raw", "n", "k", "stamp", "checked", "_pos", "_name", "key")

    def __init__(self, raw: bytes, n: int, k: int, stamp: tuple[int, int, int]) -> None:
        self.raw, self.n, self.k, self.stamp = raw, n, k, stamp
        #: (key, data file) -> whether the index's tag verified with that key for that file
        self.checked: dict = {}
        self._pos: dict[int, int] | None = None
        self._name: tuple[str, bytes] | None = None  # (data file, its ``name_part``)
        #: (``app_keys.generation()``, the key) found for the index's directory
        self.key: tuple[int, FrameAuth | None] | None = None

    @property
    def footprint(self) -> int:
        """What the index holds in memory, roughly: its bytes, and the objects around them
        (the entry, its stamp and path, the position table of its k buckets). The cache's
        bound counts this, not the bytes alone: an index of a narrow shuffle is a few
        hundred bytes of file and twice that of objects (issue 50)."""
        return len(self.raw) + _ENTRY_BYTES + _BUCKET_ENTRY_BYTES * self.k

    @property
    def _table_end(self) -> int:
        return HEAD.size + 8 * self.k + 8 * (self.k + 1) + 16 * self.k

    def position(self, reduce_id: int) -> int | None:
        """Where ``reduce_id`` is among the non-empty buckets; None if it is empty."""
        pos = self._pos
        if pos is None:
            ids = np.frombuffer(self.raw, np.int64, self.k, HEAD.size).tolist()
            pos = self._pos = {r: i for i, r in enumerate(ids)}
        return pos.get(reduce_id)

    def entry(self, i: int) -> tuple[int, int, int, int, bytes]:
        """(start, end, authenticated length, XXH3 of the rest, tag) of non-empty bucket i."""
        raw, k = self.raw, self.k
        at = HEAD.size + 8 * k
        start, end = _TWO_Q.unpack_from(raw, at + 8 * i)
        at += 8 * (k + 1)
        (auth_len,) = _Q.unpack_from(raw, at + 8 * i)
        (digest,) = _UQ.unpack_from(raw, at + 8 * k + 8 * i)
        t = self._table_end + TAG_BYTES * i
        return start, end, auth_len, digest, raw[t : t + TAG_BYTES]

    def name_part(self, data_path: str) -> bytes:
        """``name_part(data_path)``, computed once for the index's data file."""
        got = self._name
        if got is None or got[0] != data_path:
            got = self._name = (data_path, name_part(data_path))
        return got[1]

    def verified(self, auth: FrameAuth, data_path: str) -> bool:
        """Whether the index's own tag is ``auth``'s for ``data_path`` (checked once)."""
        got = self.checked.get((id(auth), data_path))
        if got is None or got[0] is not auth:
            table_end = self._table_end
            tag = self.raw[table_end + TAG_BYTES * self.k :]
            ok = same(tag, auth.tag(INDEX_DOMAIN, self.name_part(data_path), self.raw[:table_end]))
            got = (auth, ok)
            self.checked[(id(auth), data_path)] = got
        return got[1]


_ENTRY_BYTES = 640  # an _Index, its dicts, stamp and path key, beside its bytes (measured: tracemalloc)
_BUCKET_ENTRY_BYTES = 100  # a non-empty bucket's entry in the position table


def _shuffle_of(index_path: str) -> str:
    """The group an index belongs to: its directory and shuffle (``.../shuffle_<id>`` of
    ``.../shuffle_<id>_<map>.index``). The driver removes a shuffle's files together."""
    return index_path.rpartition("_")[0]


class IndexCache:
    """The indexes this process has read, so that a reduce task pays one ``stat`` per map
    output it reads, not an open and a read of the index: P reduce tasks of one executor
    read each of P indexes (issue 41). Sound because the index carries no trust of its
    own: every bucket's tag (over its place, lengths and checksum) is still checked against
    the bytes read from the data file, and an index replaced, removed or rewritten changes
    its stamp and is read again. Any failure reading an output drops its entry.

    Released with what it caches (issue 50): the driver removes a finished shuffle's files,
    and every executor that read them drops their indexes at its next stage
    (:meth:`forget_removed`, from ``executor/core.py``: one ``stat`` per cached shuffle
    and directory), or at once when told (:meth:`forget_shuffles`). Before, the indexes
    of every shuffle a long-lived executor had read stayed until the bound, growing it by
    ~15 KB an iteration of a loop that shuffles.

    Bounded by what the entries hold in memory (:attr:`Index.footprint`); when full, new
    indexes are not kept (reduce tasks read the maps in one order, cyclically, where an
    LRU would keep nothing useful)."""

    def __init__(self, max_bytes: int = 256 << 20) -> None:
        self.max_bytes = max_bytes
        self._bytes = 0
        self._full = 0  # puts refused since the last sweep
        self._entries: dict[str, Index] = {}
        self._groups: dict[str, set[str]] = {}  # ``_shuffle_of(path)`` -> its cached paths
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def sizes(self) -> dict[str, int]:
        """Entries, shuffle groups and bytes held (``registry_sizes``)."""
        with self._lock:
            return {"shuffle_indexes": len(self._entries), "shuffle_index_groups": len(self._groups),
                    "shuffle_index_kb": -(-self._bytes // 1024)}

    def get(self, path: str, stamp: tuple[int, int, int]) -> Index | None:
        got = self._entries.get(path)
        return got if got is not None and got.stamp == stamp else None

    def key_for(self, path: str) -> FrameAuth | None:
        """The application key of ``path``'s directory (``app_keys.auth_for``), kept with
        its cached index while no registration changes: a reduce task asks for each map
        output it reads, P^2 asks a shuffle."""
        index = self._entries.get(path)
        gen = app_keys.generation()
        if index is not None:
            got = index.key
            if got is not None and got[0] == gen:
                return got[1]
        auth = app_keys.auth_for(path)
        if index is not None:
            index.key = (gen, auth)
        return auth

    def put(self, path: str, index: Index) -> None:
        cost = index.footprint
        with self._lock:
            self._pop(path)
            if self._bytes + cost > self.max_bytes:
                self._full += 1
                if self._full >= len(self._entries):  # a sweep costs a stat an entry: amortized
                    self._full = 0
                    self._sweep()
            if self._bytes + cost <= self.max_bytes:
                self._entries[path] = index
                self._groups.setdefault(_shuffle_of(path), set()).add(path)
                self._bytes += cost

    def _pop(self, path: str) -> None:
        """Forgets one entry (the lock held)."""
        old = self._entries.pop(path, None)
        if old is None:
            return
        self._bytes -= old.footprint
        group = _shuffle_of(path)
        paths = self._groups.get(group)
        if paths is not None:
            paths.discard(path)
            if not paths:
                del self._groups[group]

    def _sweep(self) -> None:
        """Forgets the indexes whose files are gone (the lock held)."""
        for p in [p for p in self._entries if not os.path.exists(p)]:
            self._pop(p)

    def forget_removed(self) -> int:
        """Forgets the indexes of shuffles whose files are gone: one ``stat`` per cached
        shuffle and directory (the driver removes a shuffle's files together), and one per
        entry of a group found partly gone (a lost executor's outputs). How many went."""
        with self._lock:
            groups = [(g, next(iter(paths))) for g, paths in self._groups.items() if paths]
        gone = []
        for group, probe in groups:
            if not os.path.exists(probe):
                with self._lock:
                    paths = list(self._groups.get(group, ()))
                gone += [p for p in paths if not os.path.exists(p)]
        with self._lock:
            for p in gone:
                self._pop(p)
        return len(gone)

    def forget_shuffles(self, shuffle_ids: "set[int] | list[int]", dirs: "list[str] | None" = None) -> int:
        """Forgets the indexes of shuffles ``shuffle_ids`` (under ``dirs``, where given: the
        application's shuffle directories, as two applications in one process may both
        have a shuffle 3). How many went."""
        names = {f"shuffle_{int(s)}" for s in shuffle_ids}
        roots = [os.path.join(os.path.abspath(d), "") for d in dirs] if dirs is not None else None
        with self._lock:
            doomed = [p for g, paths in self._groups.items() if os.path.basename(g) in names
                      and (roots is None or any(g.startswith(r) for r in roots)) for p in paths]
            for p in doomed:
                self._pop(p)
        return len(doomed)

    def drop(self, path: str) -> None:
        with self._lock:
            self._pop(path)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._groups.clear()
            self._bytes = 0


INDEXES = IndexCache()


def forget_removed_indexes() -> int:
    """Drops the cached indexes of shuffles whose files are gone (an executor, before each
    new stage: the driver removed them); how many."""
    return INDEXES.forget_removed()


def forget_shuffle_indexes(shuffle_ids: "set[int] | list[int]", dirs: "list[str] | None" = None) -> int:
    """Drops the cached indexes of shuffles ``shuffle_ids`` under ``dirs``; how many."""
    return INDEXES.forget_shuffles(shuffle_ids, dirs)


def index_cache_sizes() -> dict[str, int]:
    """This process's cached shuffle indexes: entries, shuffle groups, KB (``registry_sizes``)."""
    return INDEXES.sizes()
