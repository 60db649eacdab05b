"""Moving blocks down the store's tiers when a tier is over its capacity.

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
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Callable

from strataflow.common.private_file import make_private_dirs, mkstemp_private
from strataflow.store.catalog import Entry, list_entries
from strataflow.store.locks import gc_lock, is_held
from strataflow.store.root import StoreRoot, Tier, tier_bytes

__all__ = ["balance", "victims", "touch_access", "last_access", "live_readers"]


def touch_access(root: str, dataset_id: str) -> None:
    """Records that ``dataset_id`` was opened now (the recency the policy uses)."""
    path = os.path.join(root, "leases", f".{dataset_id}.opened")
    try:
        os.utime(path)
    except FileNotFoundError:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))


def last_access(root: str, entry: Entry) -> float:
    try:
        return os.stat(os.path.join(root, "leases", f".{entry.id}.opened")).st_mtime
    except FileNotFoundError:
        return entry.created


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
    fd, tmp = mkstemp_private(dst_dir, ".move-", ".tmp")
    try:
        with open(src, "rb") as fin, os.fdopen(fd, "wb") as fout:
            fd = -1
            shutil.copyfileobj(fin, fout, 1 << 22)
            fout.flush()
            os.fsync(fout.fileno())
        os.rename(tmp, os.path.join(dst_dir, os.path.basename(src)))
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    size = os.path.getsize(src)
    os.unlink(src)
    return size


def balance(root: StoreRoot, now: Callable[[], float] = time.time) -> list[dict]:
    """Moves blocks down from every tier over its capacity, until it is not (or nothing
    more can move); returns the moves made: ``{"dataset", "block", "from", "to", "bytes"}``."""
    moves: list[dict] = []
    for upper, lower in zip(root.tiers, root.tiers[1:]):
        if upper.capacity is None:
            continue
        used = tier_bytes(upper)
        for entry in victims(root, upper, now):
            if used <= upper.capacity:
                break
            src_dir = upper.data_dir(entry.id)
            for name in sorted(os.listdir(src_dir)) if os.path.isdir(src_dir) else []:
                if used <= upper.capacity:
                    break
                if name.startswith("."):
                    continue
                with gc_lock(root.path, exclusive=False):
                    if not os.path.exists(os.path.join(root.catalog_dir, f"{entry.name}.json")):
                        break  # removed meanwhile: the sweep takes it
                    n = _move(os.path.join(src_dir, name), lower.data_dir(entry.id))
                used -= n
                moves.append({"dataset": entry.name, "block": name, "from": upper.name, "to": lower.name, "bytes": n})
    return moves
