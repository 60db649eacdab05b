"""The catalog: which datasets are published, under which names.

One file per name, ``catalog/<name>.json``: the entry (its name, the dataset's id,
partitions and their layouts, sizes, who saved it and when, what it cost to compute) and a
keyed tag of it made with the store's key, so an entry written by anyone else is refused
rather than followed. The tag covers the name inside the entry, and a reader checks that
name against the file's: an entry copied or renamed to another file (a second name for
one dataset, which would then be listed and served twice) is refused, since its tag is
valid but its name is not the one asked for. Names are checked whole (``fullmatch``): a
name ending in a newline is not a name. An entry is written whole under a temporary name, fsynced, then given its name
by one ``rename`` (replacing an older entry of that name) or one ``link`` (which fails if
the name is taken): a reader sees the old entry or the new one, never a part, and a
writer killed before that step leaves no entry at all. The directory is fsynced after.

The catalog never says where a block lies: a block file is looked up tier by tier,
fastest first (``store.py``), so moving a block between tiers changes no entry.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field

from strataflow.common.private_file import mkstemp_private
from strataflow.storage.blocks.frame_auth import FrameAuth, same
from strataflow.store.errors import DatasetExists, DatasetNotFound, StoreError

__all__ = ["Entry", "ByName", "check_name", "publish", "read_entry", "list_entries", "unpublish", "referenced_ids"]

#: checked with ``fullmatch``: ``match`` with ``$`` lets a trailing newline through
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_DOMAIN = b"sf-store-cat-v1"
FORMAT = 1


def check_name(name: str) -> str:
    """``name`` if it is a dataset name the store takes (letters, digits, ``.``, ``_``,
    ``-``; 1-200 characters, not starting with a dot); StoreError otherwise."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name.endswith(".json"):
        raise StoreError(f"store: {name!r} is not a dataset name: use 1-200 letters, digits, '.', '_' or '-', "
                         f"starting with a letter or a digit")
    return name


@dataclass
class Entry:
    """A published dataset."""

    name: str
    id: str
    partitions: list[dict]  # per partition: {"partition", "kind", "nbytes", "rows"}
    created: float = field(default_factory=time.time)
    app: str = ""
    compute_s: float = 0.0  # seconds the save's job took: what rebuilding it would cost, about
    format: int = FORMAT
    lineage: bool = False  # its lineage is kept (``rebuild.py``): rebuilt when evicted
    evicted: float = 0.0  # when the store evicted its blocks from every tier (0: it has them)
    rebuilds: int = 0  # how many times it was rebuilt from its lineage

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)

    @property
    def nbytes(self) -> int:
        return sum(int(p["nbytes"]) for p in self.partitions)

    @property
    def kinds(self) -> list[str]:
        return sorted({p["kind"] for p in self.partitions})


def _path(root: str, name: str) -> str:
    return os.path.join(root, "catalog", f"{check_name(name)}.json")


def _encode(entry: Entry, auth: FrameAuth) -> bytes:
    body = json.dumps(asdict(entry), sort_keys=True)
    return json.dumps({"entry": json.loads(body), "tag": auth.tag(_DOMAIN, body.encode()).hex()}).encode()


def _decode(data: bytes, auth: FrameAuth, where: str, name: str) -> Entry:
    """The entry in ``data`` (the file ``where``, read for ``name``), if its tag is this
    store's and the name it holds is ``name``; StoreError otherwise."""
    try:
        raw = json.loads(data)
        body = json.dumps(raw["entry"], sort_keys=True)
        ok = same(bytes.fromhex(raw["tag"]), auth.tag(_DOMAIN, body.encode()))
        entry = Entry(**raw["entry"]) if ok else None
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"store catalog entry {where} is unreadable ({exc}): damaged; remove it") from None
    if entry is None:
        raise StoreError(f"store catalog entry {where} fails its keyed tag: damaged, or not written by this "
                         f"store; remove it")
    if entry.name != name:
        raise StoreError(f"store catalog entry {where} is the entry of {entry.name!r}, not of {name!r}: copied or "
                         f"renamed behind the store (an entry is bound to its name); remove it")
    return entry


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(root: str, entry: Entry, auth: FrameAuth, overwrite: bool) -> str | None:
    """Makes ``entry`` visible under its name, atomically; returns the id of the entry it
    replaced (``overwrite``), None if none. DatasetExists if the name is taken and not
    ``overwrite``. Call under the gc lock (shared)."""
    final = _path(root, entry.name)
    d = os.path.dirname(final)
    fd, tmp = mkstemp_private(d, f".{entry.name}.", ".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(_encode(entry, auth))
            fh.flush()
            os.fsync(fh.fileno())
        old = None
        if overwrite:
            try:
                old = read_entry(root, entry.name, auth).id
            except (DatasetNotFound, StoreError):
                old = None
            os.rename(tmp, final)
        else:
            try:
                os.link(tmp, final)
            except FileExistsError:
                raise DatasetExists(f"store: a dataset named {entry.name!r} exists already; remove it first, "
                                    f"or save with mode='overwrite'") from None
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    _fsync_dir(d)
    return old


def read_entry(root: str, name: str, auth: FrameAuth) -> Entry:
    """The published entry of ``name``; DatasetNotFound if there is none."""
    path = _path(root, name)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise DatasetNotFound(f"store {root!r} has no dataset named {name!r} (never saved, removed, or its save "
                              f"did not complete); saved ones: {', '.join(list_names(root)) or 'none'}") from None
    return _decode(data, auth, path, name)


def list_names(root: str) -> list[str]:
    d = os.path.join(root, "catalog")
    return sorted(f[:-5] for f in os.listdir(d) if f.endswith(".json") and not f.startswith("."))


def list_entries(root: str, auth: FrameAuth) -> list[Entry]:
    """Every published entry, by name (an entry damaged, copied from another name or
    removed meanwhile is left out)."""
    out = []
    for name in list_names(root):
        try:
            out.append(read_entry(root, name, auth))
        except StoreError:
            continue
    return out


def unpublish(root: str, name: str, auth: FrameAuth) -> str:
    """Removes ``name`` from the catalog; returns its dataset id (its blocks are left to
    the sweep, which waits for the readers' leases). DatasetNotFound if it is not there."""
    entry = read_entry(root, name, auth)
    os.unlink(_path(root, name))
    _fsync_dir(os.path.join(root, "catalog"))
    return entry.id


def referenced_ids(root: str) -> set[str] | None:
    """The dataset ids the catalog refers to (without checking tags: a sweep must keep the
    blocks of any entry, authentic or not, rather than delete what it cannot read). None
    if an entry cannot be read at all: the sweep then deletes nothing."""
    ids = set()
    d = os.path.join(root, "catalog")
    for f in os.listdir(d):
        if not f.endswith(".json") or f.startswith("."):
            continue
        try:
            with open(os.path.join(d, f), "rb") as fh:
                ids.add(json.loads(fh.read())["entry"]["id"])
        except FileNotFoundError:
            continue
        except (OSError, ValueError, KeyError, TypeError):
            return None
    return ids


class ByName:
    """What a store answers from its own ``info(name)`` and ``ls()``, the same on one machine
    and on a Ray cluster: ``exists``, and ``list`` (``ls`` as Alluxio also spells it)."""

    def exists(self, name: str) -> bool:
        try:
            self.info(name)  # type: ignore[attr-defined]
        except DatasetNotFound:
            return False
        return True

    def list(self) -> "list[Entry]":
        return self.ls()  # type: ignore[attr-defined]
