"""The store's sweep: removes what no published dataset, live writer or live reader holds.

Run at every store start (the embedded store of each ``Context``, the daemon's start), after
``remove`` and ``save(mode="overwrite")``, and by the daemon now and then. Under the gc lock
held exclusive (``locks.py``), so it sees every save either not begun, in progress or
published:

- a writer lock no process holds is a writer that died (kill -9 mid-save): its lock file
  goes, and with it (below) its partly written blocks;
- a lease no process holds is a reader that died: it goes;
- a dataset directory of any tier that no catalog entry names, no live writer is writing and
  no live reader holds is removed (``rmtree``: unlinks, never truncates; a map a reader
  still has stays valid);
- temporary catalog files (a publish killed before its rename) go, and those of the input
  cache's entries (``inputs.py``, whose blocks it keeps as it keeps the catalog's);
- verification records (``verified.py``) of datasets no entry names and no live writer or
  reader holds go;
- lineage files (``rebuild.py``) of datasets no entry names and no live writer is saving go,
  and the figures of all but the most recent applications (``stats.py``).

A catalog entry that cannot be read at all stops the sweep from deleting any block: it
might name them.

:func:`free_unheld` is the same rule for a few datasets at once: a reader that closes
(``Store.close``: its Context's end) frees the blocks of the datasets it held that were
removed or overwritten meanwhile and that no one else holds, so the last reader out takes
a removed dataset's blocks with it rather than leaving them to some later sweep. A reader
that dies without closing (kill -9) cannot: its lease is a ``flock`` the kernel drops, and
the next sweep (the daemon's next pass, or the next start, save or ``rm`` of any user of
the store) removes what it held.
"""

from __future__ import annotations

import os
import shutil
from typing import Iterable

from strataflow.store.catalog import referenced_ids
from strataflow.store.inputs import input_ids, sweep_inputs
from strataflow.store.locks import gc_lock, is_held
from strataflow.store.rebuild import lineage_dir
from strataflow.store.root import StoreRoot
from strataflow.store.stats import prune

__all__ = ["sweep", "free_unheld"]


def _ls(d: str) -> list[str]:
    try:
        return sorted(os.listdir(d))
    except FileNotFoundError:
        return []


def _unlink(path: str) -> bool:
    """Removes ``path``; False when it was already gone. A lease's owner removes its own
    file when it closes, without the gc lock, so a lease seen unheld may vanish before the
    sweep's unlink: gone either way, which is what the sweep wants."""
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False


def sweep(root: StoreRoot) -> dict:
    """Cleans ``root``'s leftovers; returns what it removed (for ``status`` and the tests)."""
    out: dict = {"datasets": [], "dead_writers": [], "dead_leases": 0, "temp_files": 0}
    with gc_lock(root.path, exclusive=True):
        writing = set()
        for f in _ls(root.sub("writing")):
            path = root.sub("writing", f)
            if f.startswith(".") and f.endswith(".tmp") and not is_held(path) and _unlink(path):
                out["temp_files"] += 1  # a lock a writer died making, before it had its name
                continue
            if not f.endswith(".lock"):
                continue
            if is_held(path):
                writing.add(f[:-5])
            elif _unlink(path):
                out["dead_writers"].append(f[:-5])
        leased = set()
        for did in _ls(root.sub("leases")):
            if did.startswith("."):
                continue  # a dataset's last-opened mark (tiers.py)
            d = root.sub("leases", did)
            for f in _ls(d):
                if is_held(os.path.join(d, f)):
                    leased.add(did)
                elif _unlink(os.path.join(d, f)):
                    out["dead_leases"] += 1
        for f in _ls(root.catalog_dir):
            if f.startswith(".") and f.endswith(".tmp") and _unlink(os.path.join(root.catalog_dir, f)):
                out["temp_files"] += 1
        out["temp_files"] += sweep_inputs(root.path)
        referenced = referenced_ids(root.path)
        if referenced is None:
            return out
        referenced |= input_ids(root.path)  # the input cache's entries (inputs.py)
        keep = referenced | writing | leased
        for tier in root.tiers:
            for did in _ls(tier.data_dir()):
                if did not in keep:
                    shutil.rmtree(tier.data_dir(did), ignore_errors=True)
                    if did not in out["datasets"]:
                        out["datasets"].append(did)
        for did in _ls(root.sub("verified")):  # verification records (verified.py)
            if did not in keep:
                shutil.rmtree(root.sub("verified", did), ignore_errors=True)
        for f in _ls(lineage_dir(root.path)):
            did = f[1:].split(".")[0] if f.startswith(".") else f[:-4]  # a temporary file's, or a file's
            if did not in referenced | writing:
                _unlink(os.path.join(lineage_dir(root.path), f))
        prune(root.path)
        for did in _ls(root.sub("leases")):
            if did.startswith("."):
                if did.endswith(".opened") and did[1:-7] not in referenced:
                    _unlink(root.sub("leases", did))
            elif did not in keep:
                shutil.rmtree(root.sub("leases", did), ignore_errors=True)
    return out


def _leased(root: StoreRoot, dataset_id: str) -> bool:
    """Whether a live reader holds a lease on ``dataset_id`` (dead readers' leases go)."""
    d = root.sub("leases", dataset_id)
    held = False
    for f in _ls(d):
        if is_held(os.path.join(d, f)):
            held = True
        else:
            _unlink(os.path.join(d, f))
    return held


def free_unheld(root: StoreRoot, dataset_ids: Iterable[str]) -> list[str]:
    """Removes the blocks (every tier), verification records, lineage and lease directory
    of each of ``dataset_ids`` that no catalog entry names, no live writer is saving and
    no live reader holds; returns the ids freed. Under the gc lock held exclusive, as a
    sweep: a reader opening meanwhile either took its lease first (the blocks stay) or
    finds the name gone."""
    freed: list[str] = []
    with gc_lock(root.path, exclusive=True):
        referenced = referenced_ids(root.path)
        if referenced is None:
            return freed  # an unreadable entry might name them
        referenced |= input_ids(root.path)
        for did in sorted(set(dataset_ids)):
            if did in referenced or is_held(root.sub("writing", f"{did}.lock")) or _leased(root, did):
                continue
            for tier in root.tiers:
                shutil.rmtree(tier.data_dir(did), ignore_errors=True)
            shutil.rmtree(root.sub("verified", did), ignore_errors=True)
            shutil.rmtree(root.sub("leases", did), ignore_errors=True)
            for path in (os.path.join(lineage_dir(root.path), f"{did}.pkl"), root.sub("leases", f".{did}.opened")):
                _unlink(path)
            freed.append(did)
    return freed
