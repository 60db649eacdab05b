"""Shuffle files: one data file and one index file per map task (Spark's sort-based
layout), so a shuffle of M maps and R reducers makes 2M files, not M*R.

The data file is the R encoded buckets back to back; the index holds where each starts
and its checks, and is renamed into place last, so a map output exists exactly when its
index does. Each file is written under a temporary name unique to its writer (two attempts
of one map task may write at once), mode 0600 whatever the umask, and a failed write
(ENOSPC included) leaves no temporary file (``storage/private_file.py``).

Authenticated, then checksummed. A bucket of records is a pickle, and unpickling runs
code: with only an unkeyed checksum, anyone able to put a data file and an index of the
right sizes with valid checksums where a reduce task reads would run code in the job. So
the bytes of each bucket that ``codec.decode`` unpickles or trusts (``codec.unpickled_prefix``:
all of a pickled bucket, the tag byte of a numeric ``.npy`` or Arrow one) carry a keyed
BLAKE2b tag made with the application's key (``storage/frame_auth.py``), which also covers
the data file's name (its shuffle and map ids), the bucket's reduce id and lengths, and
the fast XXH3-64 of the bucket's other bytes (raw numbers, never unpickled: the MAC stays
off them). A reader that finds a file missing, short, unauthenticated or failing its
checksum raises :class:`FetchFailed`, and the scheduler reruns the map task that wrote it.

Index layout (little-endian), sparse: magic ``SFIDX4\0\0`` | bucket count n (int64) | k, the
non-empty buckets (int64) | their k reduce ids (int64, increasing) | k+1 offsets (int64) | k
authenticated lengths (int64) | k XXH3-64 of the rest (uint64) | k tags (32 bytes) | the
index's tag (32 bytes: the data file's name and everything before the k tags). A bucket
not listed is empty. So an index grows with the buckets that hold data, not with the
reducers: a shuffle of P maps and P reducers writes and reads O(P + data) bytes of
indexes, not O(P^2) (issue 41).

The index's tag amortizes the MAC of a wide shuffle's many empty buckets (issue 41): an
empty bucket (no bytes: nothing to unpickle) carries no tag of its own, and is accepted
when the index's tag verifies, which a reader checks once per index it reads (and keeps,
with the index, while the file is unchanged). A non-empty bucket is accepted only by its
own tag, so an index forged for one bucket fails that bucket (and the empty ones), never
the other non-empty buckets.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping, Sequence

import numpy as np
import xxhash

from strataflow.storage.blocks.frame_auth import TAG_BYTES, FrameAuth, same
from strataflow.common.private_file import atomic_write
from strataflow.shuffle.codec import unpickled_prefix
from strataflow.shuffle.index_cache import HEAD as _HEAD, INDEX_DOMAIN as _INDEX_DOMAIN, MAGIC as _MAGIC
from strataflow.shuffle.index_cache import INDEXES as _INDEXES, Index as _Index, name_part as _name_part

__all__ = ["FetchFailed", "MapOutput", "write_map_output", "read_bucket"]

_DOMAIN = b"sf-shuffle-v2"
_NO_TAG = bytes(TAG_BYTES)
_BUCKET = struct.Struct("<qqqQ")  # reduce id, bucket length, authenticated length, xxh3-64 of the rest


class FetchFailed(Exception):
    """A map output could not be read; its map stage must run that task again, and those
    of ``map_ids`` (every output the reader found bad: all rerun in one stage attempt)."""

    def __init__(self, shuffle_id: int, map_id: int, reason: str, map_ids: tuple[int, ...] = ()):
        more = f" (and {len(map_ids) - 1} other map output(s) of the shuffle)" if len(map_ids) > 1 else ""
        super().__init__(f"shuffle {shuffle_id} map output {map_id}: {reason}{more}")
        self.shuffle_id = shuffle_id
        self.map_id = map_id
        self.reason = reason
        self.map_ids = tuple(map_ids) or (map_id,)

    def __reduce__(self):  # it travels from an executor to the driver
        return (FetchFailed, (self.shuffle_id, self.map_id, self.reason, self.map_ids))


class MapOutput:
    """Where one map task's output is, and the size of each of its buckets, kept sparse:
    the ids of its non-empty buckets and their sizes (two small arrays), so that what a
    map task reports, the driver keeps and a reduce stage is sent grows with the buckets
    that hold data, not with the reducers (issue 41). ``bucket_bytes`` (the dense sizes)
    may be given instead of ``sparse`` = (bucket count, ids, sizes)."""

    __slots__ = ("data_path", "index_path", "num_buckets", "reduce_ids", "sizes", "executor_id")

    def __init__(self, data_path: str, index_path: str, bucket_bytes: Sequence[int] = (),
                 executor_id: str | None = None, *,
                 sparse: tuple[int, np.ndarray, np.ndarray] | None = None) -> None:
        self.data_path = data_path
        self.index_path = index_path
        self.executor_id = executor_id
        if sparse is None:
            dense = np.asarray(bucket_bytes, dtype=np.int64).reshape(-1)
            ids = np.flatnonzero(dense)
            sparse = (len(dense), ids, dense[ids])
        n, ids, sizes = sparse
        self.num_buckets = int(n)
        self.reduce_ids = np.asarray(ids, dtype=np.int64)
        self.sizes = np.asarray(sizes, dtype=np.int64)

    @property
    def bucket_bytes(self) -> tuple[int, ...]:
        """Every bucket's size, dense (for tools and tests; readers use the sparse form)."""
        dense = np.zeros(self.num_buckets, dtype=np.int64)
        dense[self.reduce_ids] = self.sizes
        return tuple(dense.tolist())

    @property
    def total_bytes(self) -> int:
        return int(self.sizes.sum())

    def bucket_size(self, reduce_id: int) -> int:
        i = int(np.searchsorted(self.reduce_ids, reduce_id))
        return int(self.sizes[i]) if i < len(self.reduce_ids) and self.reduce_ids[i] == reduce_id else 0

    def exists(self) -> bool:
        return os.path.exists(self.index_path) and os.path.exists(self.data_path)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, MapOutput) and (self.data_path, self.index_path, self.num_buckets, self.executor_id)
                == (other.data_path, other.index_path, other.num_buckets, other.executor_id)
                and np.array_equal(self.reduce_ids, other.reduce_ids) and np.array_equal(self.sizes, other.sizes))

    def __hash__(self) -> int:
        return hash((self.data_path, self.index_path))

    def __repr__(self) -> str:
        return (f"MapOutput({self.data_path!r}, {self.num_buckets} buckets, {len(self.reduce_ids)} non-empty, "
                f"{self.total_bytes} bytes, executor={self.executor_id!r})")

    def __reduce__(self):  # compact: the arrays' bytes, not numpy's pickles of them
        return (_map_output, (self.data_path, self.index_path, self.executor_id, self.num_buckets,
                              self.reduce_ids.tobytes(), self.sizes.tobytes()))


def _map_output(data_path: str, index_path: str, executor_id: str | None, n: int, ids: bytes,
                sizes: bytes) -> MapOutput:
    return MapOutput(data_path, index_path, executor_id=executor_id,
                     sparse=(n, np.frombuffer(ids, dtype=np.int64), np.frombuffer(sizes, dtype=np.int64)))


def _fsync_dir(path: str) -> None:
    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _tag(auth: FrameAuth, name_part: bytes, reduce_id: int, length: int, auth_len: int, digest: int,
         prefix: memoryview) -> bytes:
    """The tag of one bucket: the data file's name (``_name_part``), the bucket's place and
    lengths, the checksum of its raw part, and its pickled part (lengths first: unambiguous)."""
    return auth.tag(_DOMAIN, name_part, _BUCKET.pack(reduce_id, length, auth_len, digest), prefix)


def write_map_output(base: str, buckets: Sequence[bytes] | Mapping[int, bytes], auth: FrameAuth, sync: bool = False,
                     executor_id: str | None = None, num_buckets: int | None = None) -> MapOutput:
    """Writes the encoded buckets of one map task atomically (temp files, then rename),
    each tagged with ``auth``; ``executor_id``: the writer, named in the output.

    ``buckets``: every bucket in order, or only the non-empty ones by reduce id (then
    ``num_buckets`` says how many there are). Only the non-empty ones are written, and
    listed in the index, so a map task of a wide shuffle costs its data, not its
    reducers (issue 41)."""
    data_path, index_path = base + ".data", base + ".index"
    if isinstance(buckets, Mapping):
        if num_buckets is None:
            raise ValueError("write_map_output: num_buckets is needed when only the non-empty buckets are given")
        items = sorted(((r, b) for r, b in buckets.items() if len(b)), key=lambda rb: rb[0])
        n = num_buckets
    else:
        n = len(buckets) if num_buckets is None else num_buckets
        items = [(r, b) for r, b in enumerate(buckets) if len(b)]
    if items and not 0 <= items[0][0] <= items[-1][0] < n:
        raise ValueError(f"write_map_output: bucket ids must lie in [0, {n})")
    k = len(items)
    ids = np.fromiter((r for r, _ in items), dtype=np.int64, count=k)
    sizes = np.fromiter((len(b) for _, b in items), dtype=np.int64, count=k)
    auth_lens = np.zeros(k, dtype=np.int64)
    digests = np.zeros(k, dtype=np.uint64)
    tags = []
    name_part = _name_part(data_path)
    with atomic_write(data_path, sync=sync) as f:
        for i, (r, b) in enumerate(items):
            f.write(b)
            view = memoryview(b)
            a = unpickled_prefix(view)
            digest = xxhash.xxh3_64_intdigest(view[a:])
            auth_lens[i], digests[i] = a, digest
            tags.append(_tag(auth, name_part, r, len(b), a, digest, view[:a]))
    offsets = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    with atomic_write(index_path, sync=sync) as f:
        table = (_HEAD.pack(_MAGIC, n, k) + ids.tobytes() + offsets.tobytes() + auth_lens.tobytes()
                 + digests.tobytes())
        f.write(table + b"".join(tags) + auth.tag(_INDEX_DOMAIN, name_part, table))
    if sync:
        _fsync_dir(index_path)
    return MapOutput(data_path, index_path, executor_id=executor_id, sparse=(n, ids, sizes))


def read_bucket(output: MapOutput, reduce_id: int, shuffle_id: int, map_id: int,
                auth: FrameAuth | None = None) -> bytes:
    """The bytes of one bucket, authenticated and verified; FetchFailed if missing, corrupt
    or not written by this application. Without ``auth`` the key is the application's
    that registered the output's directory (``storage/app_keys.py``), found once per
    cached index while the registrations are unchanged."""
    auth = auth or _INDEXES.key_for(output.index_path)
    if auth is None:
        raise FetchFailed(shuffle_id, map_id, f"{output.index_path} is not under a directory of this "
                                              f"application: no key to authenticate it")
    try:
        index = _index(output.index_path, shuffle_id, map_id)
        if not 0 <= reduce_id < index.n:
            raise FetchFailed(shuffle_id, map_id, f"index {output.index_path} is truncated or does not match")
        i = index.position(reduce_id)
        if i is None:  # an empty bucket: no data to read, no tag of its own
            if index.verified(auth, output.data_path):
                return b""  # the index's tag covers the list of non-empty buckets
            raise FetchFailed(shuffle_id, map_id, f"bucket {reduce_id} of {output.data_path} fails "
                                                  f"authentication: not written by this application, or corrupt")
        start, end, auth_len, digest, tag = index.entry(i)
        if not 0 <= start < end:
            raise FetchFailed(shuffle_id, map_id, f"index {output.index_path} has bad offsets")
        data = _pread(output.data_path, start, end, shuffle_id, map_id)
    except FileNotFoundError as exc:
        _INDEXES.drop(output.index_path)
        raise FetchFailed(shuffle_id, map_id, f"file missing: {exc.filename or output.data_path}") from None
    except OSError as exc:
        _INDEXES.drop(output.index_path)
        raise FetchFailed(shuffle_id, map_id, f"cannot read: {exc}") from None
    except FetchFailed:
        _INDEXES.drop(output.index_path)
        raise
    problem = _problem(data, end - start, auth_len, digest, tag, auth, index.name_part(output.data_path), reduce_id)
    if problem:
        _INDEXES.drop(output.index_path)
        raise FetchFailed(shuffle_id, map_id, f"bucket {reduce_id} of {output.data_path} {problem}")
    return data


def _pread(data_path: str, start: int, end: int, shuffle_id: int, map_id: int) -> bytes:
    fd = os.open(data_path, os.O_RDONLY)
    try:
        if end > os.fstat(fd).st_size:  # before reading: a forged offset must not allocate
            raise FetchFailed(shuffle_id, map_id, f"{data_path} is shorter than its index says")
        return os.pread(fd, end - start, start)
    finally:
        os.close(fd)


def _index(index_path: str, shuffle_id: int, map_id: int) -> _Index:
    """The map output's index, from this process's cache while the file is unchanged."""
    st = os.stat(index_path)
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    got = _INDEXES.get(index_path, stamp)
    if got is not None:
        return got
    with open(index_path, "rb") as f:
        st = os.fstat(f.fileno())
        raw = f.read()
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    if len(raw) < _HEAD.size or raw[:8] != _MAGIC:
        raise FetchFailed(shuffle_id, map_id, f"index {index_path} has a bad header")
    _, n, k = _HEAD.unpack_from(raw)
    if not 0 <= k <= n or len(raw) != _HEAD.size + 8 * k + 8 * (k + 1) + (8 + 8 + TAG_BYTES) * k + TAG_BYTES:
        raise FetchFailed(shuffle_id, map_id, f"index {index_path} is truncated or does not match")
    index = _Index(raw, n, k, stamp)
    if len(raw) == st.st_size:
        _INDEXES.put(index_path, index)
    return index


def forget_index(index_path: str) -> None:
    """Drops a map output's cached index (its files are being removed)."""
    _INDEXES.drop(index_path)


def _problem(data: bytes, length: int, auth_len: int, digest: int, tag: bytes, auth: FrameAuth,
             name_part: bytes, reduce_id: int) -> str | None:
    """What is wrong with a bucket read, if anything: its tag is checked before anything of
    it is unpickled, then its raw part's checksum."""
    view = memoryview(data)
    if len(data) != length or not 0 <= auth_len <= length:
        return "is truncated or does not match its index"
    if not same(tag, _tag(auth, name_part, reduce_id, length, auth_len, digest, view[:auth_len])):
        return "fails authentication: not written by this application, or corrupt"
    if unpickled_prefix(view) != auth_len:  # a writer's bug, never a forgery (tagged)
        return "would unpickle other bytes than those authenticated"
    if xxhash.xxh3_64_intdigest(view[auth_len:]) != digest:
        return "fails its checksum"
    return None
