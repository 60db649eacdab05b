"""Moving blocks between the store's tiers: down when a tier is over its capacity, out of
the last tier (eviction) when it is, up when a dataset is read again and there is room.

Writers place each block in the fastest tier with room (``store.py``), but concurrent
writers can overshoot a capacity, and a capacity can be lowered; :func:`balance` (run by
the daemon in the background, or by ``strataflow store balance``) then moves whole
datasets' blocks from the full tier to the next one, off every reader's path:

- a move copies the block file into the lower tier under a temporary name, fsyncs it,
  renames it into place, and only then unlinks the upper copy; a reader looks tier by tier,
  fastest first (``source.py``), so it always finds one complete copy, and a reader that
  already mapped the upper copy keeps reading it (unlink, never truncate);
- each move runs under the gc lock shared, so a sweep never deletes the lower copy of a
  dataset being moved while it is still published.

Which datasets go first (:func:`victims`): those no live reader holds, then the least
recently opened, then the cheapest to rebuild per byte (the seconds their save's job took,
over their bytes). The clock is an argument, so the order is testable without waiting.

Eviction. When the *last* tier has a capacity and is over it, whole datasets leave the
store by the same order, except those a live reader holds (never torn away): the entry is
republished marked ``evicted`` (so the name stays, and says what happened), then its
blocks are unlinked from every tier. One saved with its lineage is rebuilt by the next
application that opens it (``rebuild.py``); one saved without it cannot be, and its
``open`` says so.

Hot datasets up. After the moves down, a dataset with blocks in a lower tier that was
opened at least twice (by any applications), and opened again since its blocks came
down (a move down leaves the count of opens then in ``.opens`` beside the blocks: counts,
not clocks), moves up one tier if the upper tier has room for all its blocks there (its capacity; without
one, ``root.unbounded_room``: half a disk's free space, at most 256 MiB of memory): the
most opened first. Moves down happen first in the same pass, so a dataset just moved
down for being cold is not moved back.

Cached inputs (``inputs.py``) in a tier over its capacity are evicted first, the least
valuable first (least recently read, then cheapest to decode again per byte), before any
named dataset moves down: they are a cache of files that are still there.

Every move and eviction is counted in the store's figures (``stats.py``).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from typing import Callable

from strataflow.common.private_file import atomic_write, make_private_dirs

from strataflow.store.access import last_access_of, opens, touch_access
from strataflow.store.catalog import Entry, list_entries, publish, read_entry
from strataflow.store.errors import StoreError
from strataflow.store.inputs import balance_inputs
from strataflow.store.locks import gc_lock, is_held
from strataflow.store.root import StoreRoot, Tier, tier_bytes, unbounded_room
from strataflow.store.stats import bump

_OPENS = ".opens"  # beside a dataset's blocks moved down: how many opens it had then

__all__ = ["balance", "victims", "touch_access", "last_access", "last_access_of", "live_readers", "opens", "evict"]


def last_access(root: str, entry: Entry) -> float:
    return last_access_of(root, entry.id, entry.created)


def live_readers(root: str, dataset_id: str) -> int:
    d = os.path.join(root, "leases", dataset_id)
    try:
        return sum(is_held(os.path.join(d, f)) for f in os.listdir(d))
    except FileNotFoundError:
        return 0


def _bytes_in(tier: Tier, dataset_id: str) -> int:
    try:
        return sum(f.stat().st_size for f in os.scandir(tier.data_dir(dataset_id)) if f.is_file())
    except FileNotFoundError:
        return 0


def victims(root: StoreRoot, tier: Tier, now: Callable[[], float] = time.time) -> list[Entry]:
    """The published datasets with blocks in ``tier``, the first to move down first."""
    entries = [e for e in list_entries(root.path, root.auth) if _bytes_in(tier, e.id)]
    t = now()

    def order(e: Entry) -> tuple:
        return (live_readers(root.path, e.id), -(t - last_access(root.path, e)), e.compute_s / max(e.nbytes, 1))

    return sorted(entries, key=order)


def _move(src: str, dst_dir: str) -> int:
    """Copies ``src`` into ``dst_dir`` (complete, fsynced, renamed), then unlinks ``src``."""
    make_private_dirs(dst_dir)
    with open(src, "rb") as fin, atomic_write(os.path.join(dst_dir, os.path.basename(src)), sync=True,
                                               prefix=".move-") as fout:
        shutil.copyfileobj(fin, fout, 1 << 22)
    size = os.path.getsize(src)
    os.unlink(src)
    return size


def _move_dataset(root: StoreRoot, entry: Entry, src: Tier, dst: Tier, moves: list[dict],
                  budget: int | None = None) -> int:
    """Moves ``entry``'s blocks from ``src`` to ``dst`` (all, or until ``budget`` bytes
    have moved); records the moves; returns the bytes moved."""
    src_dir = src.data_dir(entry.id)
    moved = 0
    down = root.tiers.index(dst) > root.tiers.index(src)
    if down:
        make_private_dirs(dst.data_dir(entry.id))
        fd = os.open(os.path.join(dst.data_dir(entry.id), _OPENS), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                     0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(str(opens(root.path, entry.id)))
    for name in sorted(os.listdir(src_dir)) if os.path.isdir(src_dir) else []:
        if budget is not None and moved >= budget:
            break
        if name.startswith("."):
            continue
        with gc_lock(root.path, exclusive=False):
            if not os.path.exists(os.path.join(root.catalog_dir, f"{entry.name}.json")):
                break  # removed meanwhile: the sweep takes it
            n = _move(os.path.join(src_dir, name), dst.data_dir(entry.id))
        moved += n
        moves.append({"dataset": entry.name, "block": name, "from": src.name, "to": dst.name, "bytes": n})
    if not down and not [f for f in _listdir(src_dir) if not f.startswith(".")]:
        shutil.rmtree(src_dir, ignore_errors=True)  # all up: its mark goes too
    return moved


def _listdir(d: str) -> list[str]:
    try:
        return os.listdir(d)
    except FileNotFoundError:
        return []


def _opens_when_down(tier: Tier, dataset_id: str) -> int:
    try:
        with open(os.path.join(tier.data_dir(dataset_id), _OPENS)) as fh:
            return int(fh.read() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def evict(root: StoreRoot, entry: Entry, now: Callable[[], float] = time.time) -> int:
    """Takes ``entry``'s blocks out of every tier, leaving its name published and marked
    evicted; returns the bytes freed (0 if it changed meanwhile or a reader holds it)."""
    freed = 0
    with gc_lock(root.path, exclusive=False):
        try:
            current = read_entry(root.path, entry.name, root.auth)
        except StoreError:
            return 0
        if current.id != entry.id or current.evicted or live_readers(root.path, entry.id):
            return 0
        publish(root.path, replace(current, evicted=now()), root.auth, overwrite=True)
        for tier in root.tiers:
            freed += _bytes_in(tier, entry.id)
            shutil.rmtree(tier.data_dir(entry.id), ignore_errors=True)
    return freed


def _promote(root: StoreRoot, moves: list[dict]) -> None:
    """Hot datasets up one tier where there is room (see the module's docstring)."""
    for upper, lower in zip(root.tiers, root.tiers[1:]):
        if upper.capacity is not None:
            room = upper.capacity - tier_bytes(upper)
        else:  # no capacity set: half the free space of a disk, a small bound of memory
            held = tier_bytes(upper)
            room = unbounded_room(upper.dir, held) - held
        hot = []
        for e in list_entries(root.path, root.auth):
            size, n = _bytes_in(lower, e.id), opens(root.path, e.id)
            if size and n >= 2 and n > _opens_when_down(lower, e.id):
                hot.append((-n, -last_access(root.path, e), e, size))
        for _, _, e, size in sorted(hot, key=lambda h: h[:2]):
            if size > room:
                continue
            room -= _move_dataset(root, e, lower, upper, moves)


def balance(root: StoreRoot, now: Callable[[], float] = time.time) -> list[dict]:
    """Moves blocks down from every tier over its capacity, until it is not (or nothing
    more can move), evicts from the last tier over its capacity, then moves hot datasets
    up; returns the moves made: ``{"dataset", "block", "from", "to", "bytes"}``, and for an
    eviction ``{"dataset", "evicted": True, "from", "bytes"}``."""
    inputs = balance_inputs(root)  # cached inputs over a capacity go first (inputs.py)
    moves: list[dict] = []
    for upper, lower in zip(root.tiers, root.tiers[1:]):
        if upper.capacity is None:
            continue
        used = tier_bytes(upper)
        for entry in victims(root, upper, now):
            if used <= upper.capacity:
                break
            used -= _move_dataset(root, entry, upper, lower, moves, budget=used - upper.capacity)
    down = len(moves)
    last = root.tiers[-1]
    evictions = []
    if last.capacity is not None:
        used = tier_bytes(last)
        for entry in victims(root, last, now):
            if used <= last.capacity:
                break
            freed = evict(root, entry, now)
            if freed:
                used -= freed
                evictions.append({"dataset": entry.name, "evicted": True, "from": last.name, "bytes": freed})
    _promote(root, moves)
    up = moves[down:]
    bump(root.path, moves_down=down, bytes_moved_down=sum(m["bytes"] for m in moves[:down]), moves_up=len(up),
         bytes_moved_up=sum(m["bytes"] for m in up), evictions=len(evictions) + len(inputs),
         bytes_evicted=sum(e["bytes"] for e in evictions + inputs))
    return moves + evictions + inputs
