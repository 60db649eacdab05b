"""The input cache in the store: each partition an application decoded from its input files
(a CSV range parsed into a table, a text range split into lines, row groups of Parquet, rows
of a remote ``.npy``), kept under a key of everything that determines it, so that a later
read with the same key, from any application of the user, maps the block instead of fetching
and parsing (issue 53; Databricks' disk cache, Tachyon's role for inputs).

Layout, beside the catalog (``root.py``):

```text
<root>/inputs/<key>.json        the entry of a cached partition (tagged with the store's key)
<tier>/data/in-<key>/part-00000.sfb   its block file (``blockfile.py``), in some tier
```

The key (``io/cached_input.py`` makes it) hashes the reader, its options, the partition's
byte range or rows and the *version* of every file it reads (``io/file_version.py``): a file
changed in any way has another key, so a stale entry is never found, only left for eviction.

Writing (:func:`put_input`) follows a save's order: a writer lock on ``in-<key>`` (one writer
per key: a second process decoding the same partition finds it taken and writes nothing),
the block file written whole (temporary name, fsync, rename), then the entry published by
one rename, then the lock released. A writer killed at any point leaves no entry; the next
writer of that key takes its lock over at once (``locks.WriterLock``: nobody holds it) and
removes what it left before writing, and a sweep removes the blocks of keys nobody writes
again. A reader (:func:`get_input`) reads the entry first, so it sees
only whole blocks; a block removed between the two (eviction, ``rm``) is a miss, and a miss
is always safe: the reader decodes the input again. A block that fails its checks is removed
and is a miss too, never a wrong value.

Room. An input block goes to the fastest tier with room: below its ``capacity``, or, on a
tier with none, while the input blocks there take at most half of the device's free space
(counting their own), and on a memory file system (``/dev/shm``) at most 256 MiB
(``root.unbounded_room``): the cache never fills a disk, and never pins more of the
machine's memory than that unless a tier's capacity says so. When no tier has
room, input entries are evicted to make it (:func:`make_room`), the least valuable first:
least recently read, then the cheapest to decode again per byte (its measured decode
seconds). Named datasets are never evicted for inputs.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from strataflow.common.private_file import make_private_dirs, mkstemp_private
from strataflow.storage.blocks.frame_auth import same
from strataflow.store.blockfile import read_block, write_block
from strataflow.store.errors import BlockCorrupt
from strataflow.store.locks import WriterLock, gc_lock
from strataflow.store.root import StoreRoot, Tier, tier_bytes, unbounded_room
from strataflow.store.source import find_block
from strataflow.store.access import last_access_of, opens, touch_access

__all__ = ["InputEntry", "PREFIX", "input_id", "get_input", "put_input", "list_inputs", "remove_inputs",
           "input_ids", "make_room", "tier_room", "input_bytes", "input_limit", "balance_inputs", "figures", "taken"]

PREFIX = "in-"
_DIR = "inputs"
_DOMAIN = b"sf-store-inp-v1"


def input_id(key: str) -> str:
    """The store dataset id of the input partition cached under ``key``."""
    return PREFIX + key


@dataclass
class InputEntry:
    """A cached input partition: what it was decoded from, and what it cost."""

    key: str
    path: str  # the file(s) it was read from, as the user named them (for ``ls --inputs``)
    reader: str  # the reader's name: text_file, csv_file, parquet_file...
    part: str  # which part of the input: a byte range, row groups, rows
    kind: str = ""  # the block's layout: arrow, ndarray, records
    nbytes: int = 0
    rows: int | None = None
    parse_s: float = 0.0  # seconds the decode took: what a hit saves, and eviction's cost
    created: float = field(default_factory=time.time)
    app: str = ""
    meta: dict = field(default_factory=dict)  # what the reader replays at a hit (malformed lines...)

    @property
    def id(self) -> str:
        return input_id(self.key)


def _entry_path(root: str, key: str) -> str:
    return os.path.join(root, _DIR, f"{key}.json")


def _encode(entry: InputEntry, auth: Any) -> bytes:
    body = json.dumps(asdict(entry), sort_keys=True)
    return json.dumps({"entry": json.loads(body), "tag": auth.tag(_DOMAIN, body.encode()).hex()}).encode()


def _read(root: StoreRoot, key: str) -> InputEntry | None:
    """The entry of ``key``; None if there is none, or if it is damaged or not this store's
    (then it is removed: a cache entry that cannot be trusted is a miss)."""
    path = _entry_path(root.path, key)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    try:
        raw = json.loads(data)
        body = json.dumps(raw["entry"], sort_keys=True)
        entry = InputEntry(**raw["entry"]) if same(bytes.fromhex(raw["tag"]), root.auth.tag(_DOMAIN, body.encode())) \
            else None
    except (ValueError, KeyError, TypeError):
        entry = None
    if entry is None or entry.key != key:
        _drop(root, key)
        return None
    return entry


def _publish(root: StoreRoot, entry: InputEntry) -> None:
    d = os.path.join(root.path, _DIR)
    make_private_dirs(d)
    fd, tmp = mkstemp_private(d, f".{entry.key}.", ".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(_encode(entry, root.auth))
        os.rename(tmp, _entry_path(root.path, entry.key))
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def _drop(root: StoreRoot, key: str) -> int:
    """Removes ``key``'s entry, then its blocks from every tier (a reader that mapped one
    keeps reading it: unlink, never truncate); the bytes freed."""
    freed = 0
    try:
        os.unlink(_entry_path(root.path, key))
    except FileNotFoundError:
        pass
    for tier in root.tiers:
        d = tier.data_dir(input_id(key))
        try:
            freed += sum(f.stat().st_size for f in os.scandir(d) if f.is_file())
        except FileNotFoundError:
            continue
        shutil.rmtree(d, ignore_errors=True)
    for f in (os.path.join(root.path, "leases", f".{input_id(key)}.opened"),):
        try:
            os.unlink(f)
        except FileNotFoundError:
            pass
    return freed


def get_input(root: StoreRoot, key: str, app: str = "") -> tuple[Any, InputEntry] | None:
    """The cached value of ``key`` (mapped: zero-copy for arrays and tables) and its entry;
    None on a miss (no entry, its block gone meanwhile, or a block that fails its checks,
    which is removed)."""
    entry = _read(root, key)
    if entry is None:
        return None
    did = entry.id
    path = find_block(root, did, 0)
    if path is None:
        return None  # evicted or removed between the entry and the block: a miss
    try:
        value = read_block(path, did, 0, root.auth, f"cached input {entry.path!r} ({entry.part})")
    except BlockCorrupt:
        _drop(root, key)
        raise
    touch_access(root.path, did, app)
    return value, entry


def input_bytes(tier: Tier) -> int:
    """Bytes of cached inputs' block files in ``tier``."""
    total = 0
    try:
        dirs = [d for d in os.scandir(tier.data_dir()) if d.name.startswith(PREFIX)]
    except FileNotFoundError:
        return 0
    for d in dirs:
        try:
            total += sum(f.stat().st_size for f in os.scandir(d.path) if f.is_file())
        except FileNotFoundError:
            continue
    return total


def input_limit(tier: Tier) -> int:
    """The most bytes of the input cache's blocks ``tier`` takes now: its capacity (shared
    with named datasets), else ``root.unbounded_room`` (``store status`` shows it)."""
    return tier.capacity if tier.capacity is not None else unbounded_room(tier.dir, input_bytes(tier))


def tier_room(tier: Tier, need: int) -> bool:
    """Whether ``tier`` takes ``need`` more bytes of input blocks (see the module's docstring)."""
    if tier.capacity is not None:
        return tier_bytes(tier) + need <= tier.capacity
    held = input_bytes(tier)
    return held + need <= unbounded_room(tier.dir, held)


def put_input(root: StoreRoot, entry: InputEntry, value: Any) -> InputEntry | None:
    """Writes ``value`` as the cached partition ``entry`` describes and publishes it;
    returns the entry published, None when another writer has the key or holds it already,
    or when no tier has room even after evicting other inputs. OSError (a full device, a
    read-only one) reaches the caller, which counts it."""
    did = entry.id
    with gc_lock(root.path, exclusive=False):
        if os.path.exists(_entry_path(root.path, entry.key)):
            return None
        try:
            writer = WriterLock(root.path, did, f"input {entry.path}")
        except FileExistsError:
            return None  # another process is writing it
    try:
        if writer.took_over is not None:  # a writer died mid-block: its temporary files go first
            for t in root.tiers:
                shutil.rmtree(t.data_dir(did), ignore_errors=True)
        need = _size_hint(value)
        tier = next((t for t in root.tiers if tier_room(t, need)), None)
        if tier is None and make_room(root, need, keep=entry.key):
            tier = next((t for t in root.tiers if tier_room(t, need)), None)
        if tier is None:
            with gc_lock(root.path, exclusive=False):
                writer.release()
            return None
        info = write_block(tier.data_dir(did), did, 0, _whole(value), root.auth)
        entry.kind, entry.nbytes, entry.rows = info["kind"], int(info["nbytes"]), info["rows"]
        with gc_lock(root.path, exclusive=False):
            try:
                _publish(root, entry)
            finally:
                writer.release()
    except BaseException:
        with gc_lock(root.path, exclusive=False):
            writer.release()
        for t in root.tiers:
            shutil.rmtree(t.data_dir(did), ignore_errors=True)
        raise
    return entry


def _whole(value: Any) -> Any:
    """A table in one chunk per column (a parser gives a chunk per MB of text): read back,
    each column is then one zero-copy array (``column.to_numpy()`` copies nothing), where
    a many-chunk column is concatenated by every reader at every read. The copy is the
    writer thread's, once, off the tasks' path."""
    import pyarrow as pa

    if isinstance(value, pa.Table) and any(c.num_chunks > 1 for c in value.columns):
        return value.combine_chunks()
    return value


def taken(root: StoreRoot, key: str) -> bool:
    """Whether ``key`` is cached, or a writer is writing it (a refused put that is no failure)."""
    return os.path.exists(_entry_path(root.path, key)) or os.path.exists(root.sub("writing", f"{input_id(key)}.lock"))


def _size_hint(value: Any) -> int:
    n = getattr(value, "nbytes", None)
    return int(n) if isinstance(n, int) else 0


def list_inputs(root: StoreRoot) -> list[InputEntry]:
    """Every cached input partition (damaged entries are removed, not listed), by path."""
    d = os.path.join(root.path, _DIR)
    try:
        keys = sorted(f[:-5] for f in os.listdir(d) if f.endswith(".json") and not f.startswith("."))
    except FileNotFoundError:
        return []
    out = [e for e in (_read(root, k) for k in keys) if e is not None]
    return sorted(out, key=lambda e: (e.path, e.reader, e.part))


def remove_inputs(root: StoreRoot, match: Callable[[InputEntry], bool] = lambda e: True) -> tuple[int, int]:
    """Removes the cached inputs ``match`` selects (all by default); (entries, bytes) removed."""
    n = freed = 0
    for e in list_inputs(root):
        if match(e):
            with gc_lock(root.path, exclusive=False):
                freed += _drop(root, e.key)
            n += 1
    return n, freed


def input_ids(root: str) -> set[str]:
    """The store dataset ids the input entries refer to (from their file names: a sweep keeps
    the blocks of every entry, as it keeps the catalog's)."""
    d = os.path.join(root, _DIR)
    try:
        return {input_id(f[:-5]) for f in os.listdir(d) if f.endswith(".json") and not f.startswith(".")}
    except FileNotFoundError:
        return set()


def sweep_inputs(root: str) -> int:
    """Removes temporary entry files left by killed writers (call under the gc lock held
    exclusive, as the sweep does); how many."""
    d = os.path.join(root, _DIR)
    n = 0
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return 0
    for f in names:
        if f.startswith(".") and f.endswith(".tmp"):
            try:
                os.unlink(os.path.join(d, f))
                n += 1
            except FileNotFoundError:
                pass
    return n


def _by_value(root: StoreRoot, entries: list[InputEntry]) -> list[InputEntry]:
    """The least valuable first: least recently read, then the cheapest to decode again per byte."""
    return sorted(entries, key=lambda e: (last_access_of(root.path, e.id, e.created), e.parse_s / max(e.nbytes, 1)))


def balance_inputs(root: StoreRoot) -> list[dict]:
    """Evicts cached inputs from every tier over its capacity, the least valuable first,
    until it is within it (``tiers.balance`` runs this first: inputs are a cache, and go
    before any named dataset moves down); the evictions, as ``balance`` reports them."""
    out = []
    for tier in root.tiers:
        if tier.capacity is None:
            continue
        used = tier_bytes(tier)
        for e in _by_value(root, list_inputs(root)):
            if used <= tier.capacity:
                break
            here = os.path.isdir(tier.data_dir(e.id))
            if not here:
                continue
            with gc_lock(root.path, exclusive=False):
                freed = _drop(root, e.key)
            used -= freed
            out.append({"dataset": f"input {e.path} ({e.part})", "evicted": True, "from": tier.name, "bytes": freed})
    return out


def make_room(root: StoreRoot, need: int, keep: str = "") -> int:
    """Evicts cached inputs, the least valuable first, until some tier takes ``need``
    bytes; how many went (0 if no input could go, or none needed to)."""
    entries = _by_value(root, [e for e in list_inputs(root) if e.key != keep])
    n = 0
    for e in entries:
        if any(tier_room(tier, need) for tier in root.tiers):
            break
        with gc_lock(root.path, exclusive=False):
            _drop(root, e.key)
        n += 1
    return n


def figures(root: StoreRoot) -> dict:
    """The input cache's figures for ``store status``: entries, bytes, reads served (each
    entry's reads, counted at every hit) and the decode seconds they saved."""
    entries = list_inputs(root)
    hits = {e.key: max(0, opens(root.path, e.id)) for e in entries}
    return {"entries": len(entries), "bytes": sum(e.nbytes for e in entries), "hits": sum(hits.values()),
            "parse_s_saved": round(sum(hits[e.key] * e.parse_s for e in entries), 3),
            "files": len({e.path for e in entries})}
