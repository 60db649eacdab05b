"""One block file of the store: a partition of a saved dataset, written once, mapped by
every reader.

Layout. A small header, then the value's *extent* starting on a page boundary:

```text
0      magic "SFSTORE1" (8 bytes), header length H (u32), 4 bytes reserved
16     header: JSON {dataset, partition, kind, meta, offset, length, digest}   (H bytes)
16+H   tag: keyed BLAKE2b-256 of the magic, the header and the extent's pickled bytes
...    zero padding to ``offset`` (a page)
offset the extent: the zero-copy layout of ``storage/mapped/layout.py`` for an ndarray
       (raw data first) or an Arrow table (an IPC file); the engine's ``pickle``
       serializer (``storage/blocks/serde.py``) for records and anything else
```

Reading maps the file (``map_block``: read-only, shared, no descriptor left open) and decodes the extent in place: an ndarray or Arrow partition is a read-only
view of the mapping, with no copy into the heap; records are unpickled.

Checks. The tag, made with the *store's* key (``root.py``), covers the header (so the
dataset, the partition, the layout and the extent's XXH3 digest cannot be changed or
swapped between files) and the bytes a reader unpickles; it is checked at every read,
before anything is unpickled. The digest covers the whole extent and is checked at the
first read of the file in each process (again if the file changes: another inode, size,
mtime or ctime); as for the engine's own mapped blocks, numeric bytes carry the fast unkeyed
digest, not the MAC, to keep the MAC off the numeric hot path. A store made with
``verify="store"`` hashes each version of a file once, not once per process: its writer
(``check_block``) or the first reader after a change leaves a keyed record of the file's
stat (ctime included), and a reader that finds the file as recorded does not hash it
(``verified.py`` says what that trades). Any failure raises
:class:`BlockCorrupt` naming the dataset, the partition and the file: never a silent
wrong value, never a recompute (a saved dataset has no lineage here).

Writing: a temporary name in the dataset's directory (0600), fsync, rename. A block file
is never rewritten or truncated after its rename: removal unlinks it, and a mapping held
by a reader stays valid after the unlink (POSIX).
"""

from __future__ import annotations

import collections
import ctypes
import json
import mmap
import os
import struct
import threading
from typing import Any

import pyarrow as pa
import xxhash

from strataflow.common.private_file import atomic_write
from strataflow.storage.blocks.frame_auth import TAG_BYTES, FrameAuth, same
from strataflow.storage.blocks.serde import get_serializer
from strataflow.storage.mapped import layout, segment_file
from strataflow.store.errors import BlockCorrupt
from strataflow.store import verified as records_of

__all__ = ["write_block", "read_block", "export_block", "import_block", "block_name", "SUFFIX"]

MAGIC = b"SFSTORE1"
_HEAD = struct.Struct("<8sII")
_DOMAIN = b"sf-store-blk-v1"
SUFFIX = ".sfb"
_RECORDS = "records"
_MAX_HEADER = 1 << 20


def block_name(partition: int) -> str:
    return f"part-{partition:05d}{SUFFIX}"


def _encode(value: Any) -> tuple[str, list, dict, tuple[int, int]]:
    """kind, frames, meta and the pickled (head, tail) of ``value``'s extent."""
    if layout.zero_copy_layout(value):
        kind, frames, meta = layout.encode(value)
        if kind in ("ndarray", "arrow"):
            return kind, frames, meta, (0, 0)
    ser = get_serializer("pickle")
    frames = ser.dumps(value)
    n = sum(memoryview(f).nbytes for f in frames)
    return _RECORDS, frames, {"serializer": ser.name}, (n, 0)


def _tag(auth: FrameAuth, header: bytes, extent: memoryview, spans: tuple[int, int]) -> bytes:
    head, tail = spans
    n = len(extent)
    return auth.tag(_DOMAIN, MAGIC, header, extent[:head], extent[n - tail:] if tail else b"")


def write_block(directory: str, dataset_id: str, partition: int, value: Any, auth: FrameAuth) -> dict:
    """Writes ``value`` as partition ``partition`` of ``dataset_id`` into ``directory``
    (made 0700 if absent); returns what the catalog records of it (kind, bytes, rows)."""
    kind, frames, meta, spans = _encode(value)
    views = [memoryview(f).cast("B") for f in frames]
    length = sum(v.nbytes for v in views)
    h = xxhash.xxh3_64()
    for v in views:
        h.update(v)
    digest = h.intdigest()
    # the header's own length decides the offset; the offset is in the header: fix it at a page
    pre = {"dataset": dataset_id, "partition": partition, "kind": kind, "meta": meta, "length": length,
           "digest": digest, "pickled": list(spans), "offset": 0}
    room = _HEAD.size + len(json.dumps(pre)) + 32 + TAG_BYTES
    offset = -(-room // layout.PAGE) * layout.PAGE
    header = json.dumps({**pre, "offset": offset}, sort_keys=True).encode()
    if _HEAD.size + len(header) + TAG_BYTES > offset:
        offset += layout.PAGE
        header = json.dumps({**pre, "offset": offset}, sort_keys=True).encode()
    extent_for_tag = _joined_ends(views, length, spans)
    tag = _tag(auth, header, extent_for_tag, spans)
    lead = _HEAD.pack(MAGIC, len(header), 0) + header + tag
    lead += b"\0" * (offset - len(lead))
    _write_file(directory, partition, [memoryview(lead)] + views)
    rows = _rows(value)
    return {"partition": partition, "kind": kind, "nbytes": offset + length, "rows": rows, "digest": digest}


def _write_file(directory: str, partition: int, views: list[memoryview]) -> str:
    """``views`` as the block file of ``partition`` in ``directory``: a hidden temporary
    name (0600, which the sweep removes if the writer dies), fsync, rename. Its path."""
    final = os.path.join(directory, block_name(partition))
    with atomic_write(final, sync=True, prefix=".part-") as fh:
        for v in views:
            fh.write(v)
    return final


def _joined_ends(views: list[memoryview], length: int, spans: tuple[int, int]) -> memoryview:
    """A buffer whose first ``head`` and last ``tail`` bytes are the extent's (the middle
    is not needed by the tag); the extent itself when it is one frame."""
    if len(views) == 1:
        return views[0]
    head, tail = spans
    if head + tail == 0:
        return memoryview(b"")
    data = b"".join(bytes(v) for v in views)  # records: the whole stream is pickled anyway
    return memoryview(data)


def _rows(value: Any) -> int | None:
    try:
        return len(value) if not isinstance(value, (pa.Table, pa.RecordBatch)) else value.num_rows
    except TypeError:
        return None


# -- reading ------------------------------------------------------------------------------------
_lock = threading.Lock()
#: path -> (its stat key, its map) of files mapped and verified in this process; bounded
_maps: "collections.OrderedDict[str, tuple[tuple, Any]]" = collections.OrderedDict()
_MAX_MAPS = 1024


#: how a block file is mapped (``map_block``): "populate_read", the default (mapped through
#: Arrow, no descriptor left open, then ``MADV_POPULATE_READ``: the page tables of every
#: page at once, so the pass takes no page fault: ``benchmarks/store_gap.py`` measured the
#: faults at 0.03 CPU s per GB and the populate at 0.014), "plain" (pages mapped at their
#: first touch, 16 a fault), or "populate" (``MAP_POPULATE`` through CPython's ``mmap``,
#: which before 3.13's ``trackfd`` keeps a duplicate descriptor per map, up to
#: ``_MAX_MAPS`` of them: for the benchmark's comparison only). The environment
#: (``STRATAFLOW_STORE_MAP``) picks one; executor processes inherit it.
MAP_MODE = os.environ.get("STRATAFLOW_STORE_MAP", "populate_read")
if MAP_MODE not in ("plain", "populate", "populate_read"):
    MAP_MODE = "populate_read"
_MADV_POPULATE_READ = 22  # Linux 5.14; absent from Python 3.11's constants
_libc = ctypes.CDLL(None, use_errno=True) if hasattr(ctypes.CDLL(None), "madvise") else None


def _populate(buf: Any) -> None:
    """Page tables for every page of ``buf`` (a map) at once, so that the pass over it takes
    no page fault; best effort (an older kernel says EINVAL: the pages fault in as before)."""
    if _libc is None or buf.size == 0:
        return
    start = buf.address - buf.address % layout.PAGE
    _libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(buf.address + buf.size - start), _MADV_POPULATE_READ)


def map_block(path: str) -> Any:
    """The whole file, mapped read-only and shared (the map keeps the file's pages, even
    once it is unlinked); "plain" and "populate_read" leave no descriptor open."""
    if MAP_MODE != "populate":
        if os.path.getsize(path) == 0:
            raise ValueError("empty file")
        buf = segment_file.map_file(path)
        if MAP_MODE == "populate_read":
            _populate(buf)
        return buf
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            raise ValueError("empty file")
        return mmap.mmap(fh.fileno(), 0, flags=flags, prot=mmap.PROT_READ)


def _stat_key(st: os.stat_result) -> tuple:
    """A version of a file: its identity, size, mtime and ctime (a ``utime`` that puts the
    mtime back after a write still moves the ctime, which no user can set)."""
    return tuple(records_of.file_key(st))


def read_block(path: str, dataset_id: str, partition: int, auth: FrameAuth, what: str,
               records: str | None = None) -> Any:
    """The value of the block file at ``path``, decoded from its mapping (zero-copy for
    ndarray and Arrow); BlockCorrupt naming ``what`` (the dataset and partition) and the
    file if it is not the authentic block ``partition`` of ``dataset_id``. ``records``: the
    dataset's verification records (``verified.py``; a store with ``verify="store"``), None
    to hash the file at its first read in this process."""
    h, extent, bad = _verified(path, dataset_id, partition, auth, what, records)
    kind = h["kind"]
    try:
        if kind == _RECORDS:
            return get_serializer(h["meta"].get("serializer", "pickle")).loads(extent)
        return layout.decode(kind, extent, h["meta"])
    except Exception as exc:  # noqa: BLE001 - authentic but undecodable: still loud
        raise bad(f"cannot be decoded ({type(exc).__name__}: {exc})") from exc


def check_block(path: str, dataset_id: str, partition: int, auth: FrameAuth, what: str, records: str) -> None:
    """A writer's check of the block file it just wrote, for ``verify="store"``: the file
    read back through a mapping and hashed, and the record left for later readers (the map
    is not kept: the writer does not read it)."""
    _verified(path, dataset_id, partition, auth, what, records, keep=False)


def export_block(path: str, dataset_id: str, partition: int, auth: FrameAuth, what: str) -> tuple[dict, memoryview]:
    """The header and the extent (a view of the mapping) of the block file at ``path``,
    verified as :func:`read_block` verifies it: what a node sends another (``ray_server``)."""
    h, extent, _ = _verified(path, dataset_id, partition, auth, what)
    return h, extent


def import_block(directory: str, header: dict, extent: Any, auth: FrameAuth) -> str:
    """Writes a block received from another store (its ``header`` and ``extent``, checked
    by the caller against the digest its catalog entry records) into ``directory`` under
    this store's key: the same header and layout, a new tag. Its path."""
    ext = memoryview(extent).cast("B")
    if xxhash.xxh3_64_intdigest(ext) != header["digest"] or len(ext) != header["length"]:
        raise BlockCorrupt(f"block {header.get('partition')} of dataset {header.get('dataset')}: the bytes received "
                           f"do not match their header's digest; not stored")
    raw = json.dumps(header, sort_keys=True).encode()
    spans = (int(header["pickled"][0]), int(header["pickled"][1]))
    tag = _tag(auth, raw, ext, spans)
    lead = _HEAD.pack(MAGIC, len(raw), 0) + raw + tag
    if len(lead) > header["offset"]:
        raise BlockCorrupt(f"block {header.get('partition')} of dataset {header.get('dataset')}: its header does "
                           f"not fit before its offset")
    lead += b"\0" * (header["offset"] - len(lead))
    return _write_file(directory, header["partition"], [memoryview(lead), ext])


def _verified(path: str, dataset_id: str, partition: int, auth: FrameAuth, what: str, records: str | None = None,
              keep: bool = True) -> tuple[dict, memoryview, Any]:
    """(header, extent, bad): the block file mapped (``_map``) and checked: its tag at every
    call, its digest at the first in this process (and whenever the file changed) unless
    ``records`` holds a record of a check of this very version of the file (``verified.py``);
    a check made here leaves one there. ``keep``: the map is cached for later reads."""
    def bad(why: str) -> BlockCorrupt:
        with _lock:
            _maps.pop(path, None)
        return BlockCorrupt(f"{what}: block file {path} {why}; the store does not serve it")

    try:
        st = os.stat(path)  # first: touching a mapped page past the end is SIGBUS
    except FileNotFoundError:
        raise bad("is gone") from None
    key = _stat_key(st)
    with _lock:
        got = _maps.get(path)
        if got is not None and got[0] == key:
            _maps.move_to_end(path)
            buf, verified = got[1], True
        else:
            buf, verified = None, False
    if buf is None:
        try:
            buf = map_block(path)
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise bad(f"cannot be mapped ({exc})") from None
    view = memoryview(buf)
    if len(view) < _HEAD.size:
        raise bad(f"is cut short ({len(view)} bytes)")
    magic, hlen, _ = _HEAD.unpack_from(view, 0)
    if magic != MAGIC or hlen > _MAX_HEADER or _HEAD.size + hlen + TAG_BYTES > len(view):
        raise bad("has no store block header")
    header = bytes(view[_HEAD.size:_HEAD.size + hlen])
    tag = bytes(view[_HEAD.size + hlen:_HEAD.size + hlen + TAG_BYTES])
    try:
        h = json.loads(header)
        offset, length, kind = int(h["offset"]), int(h["length"]), str(h["kind"])
        spans = (int(h["pickled"][0]), int(h["pickled"][1]))
    except (ValueError, KeyError, TypeError, IndexError):
        raise bad("has an unreadable header") from None
    if offset + length > len(view) or spans[0] + spans[1] > length:
        raise bad(f"is cut short: {len(view)} bytes, its header says {offset + length}")
    extent = view[offset:offset + length]
    if not same(tag, _tag(auth, header, extent, spans)):
        raise bad("fails its keyed tag (damaged, or not written by this store)")
    if h["dataset"] != dataset_id or h["partition"] != partition:
        raise bad(f"holds partition {h['partition']} of dataset {h['dataset']}, not {partition} of {dataset_id}")
    if kind not in ("ndarray", "arrow", _RECORDS) or (kind == _RECORDS) != (spans != (0, 0)):
        raise bad(f"has an unknown layout {kind!r}")
    if not verified:
        if records is None or not _unchanged(path, st) or not records_of.trusted(records, partition, st,
                                                                                 h["digest"], auth):
            if xxhash.xxh3_64_intdigest(extent) != h["digest"]:
                raise bad("fails its checksum (damaged)")
            if records is not None:
                records_of.record(records, partition, st, h["digest"], auth)
        if not keep:
            return h, extent, bad
        with _lock:
            _maps[path] = (key, buf)
            while len(_maps) > _MAX_MAPS:
                _maps.popitem(last=False)
    return h, extent, bad


def _unchanged(path: str, st: os.stat_result) -> bool:
    """Whether the file at ``path`` is still the version whose stat, taken before it was
    mapped, was ``st`` (a record of ``st`` then speaks for the map)."""
    try:
        return records_of.file_key(os.stat(path)) == records_of.file_key(st)
    except OSError:
        return False


def forget_maps() -> None:
    """Drops this process's maps (tests; a long-lived reader that wants pages back)."""
    with _lock:
        _maps.clear()
