"""The shared store, as an application uses it: save a dataset under a name, open one by
name, list, remove. Embedded: every call works on the store's files (``root.py``), with no
process to start; the daemon (``daemon.py``) only adds background work.

Saving (``save``). The dataset's partitions are written by their tasks, each to one block
file in the fastest tier with room (``blockfile.py``), under the dataset's fresh id, while
the saving process holds the save's writer lock (``locks.py``). Only when every block is
written and fsynced is the catalog entry published, in one rename (``catalog.py``): until
then no reader sees the dataset, and a save killed at any point leaves a writer lock no one
holds, which the next sweep (``sweep.py``) turns into nothing.

Opening (``open_source``). The catalog entry is read and a lease taken on the dataset, in
one step under the gc lock: its blocks stay on disk for as long as the lease is held, even
if the dataset is removed or overwritten meanwhile. The source's partitions are read by the
tasks (``source.py``; ``reads.py`` counts them for the reading application).

Lineage (``rebuild.py``). ``save(..., lineage=True)`` keeps the dataset's lineage; when
``balance`` has evicted it from every tier (``tiers.py``), ``open_source`` rebuilds it: the
lineage is bound to the opening application's Context (``bind``, given by the caller),
saved again under the same name (one job), and counted (``rebuilds`` in the entry and the
store's figures). A dataset saved without lineage is not rebuilt: opening it after its
eviction raises :class:`DatasetEvicted`, which says so.

Names follow PySpark and Alluxio where they exist: ``save(..., mode=)`` takes
``DataFrameWriter``'s modes (``error``/``errorifexists``, ``overwrite``, ``ignore``); ``ls``
and ``rm`` are Alluxio's ``fs`` commands (also spelled ``list`` and ``remove`` here).
"""

from __future__ import annotations

import functools
import os
import shutil
import time
import uuid
from typing import Any, Callable

from strataflow.store.blockfile import block_name, check_block, write_block
from strataflow.store.catalog import ByName, Entry, check_name, list_entries, publish, read_entry, unpublish
from strataflow.store.errors import DatasetEvicted, DatasetExists, StoreError, StoreFull
from strataflow.store.locks import Lease, WriterLock, gc_lock
from strataflow.store.reads import CountedSource
from strataflow.store.rebuild import dump_lineage, read_lineage, write_lineage
from strataflow.store.inputs import input_bytes, input_limit
from strataflow.store.root import StoreRoot, memory_backed, tier_bytes
from strataflow.store.source import root_for
from strataflow.store.stats import apps, bump, count_app, counters
from strataflow.store.sweep import free_unheld, sweep
from strataflow.store.tiers import balance, live_readers, opens, touch_access

__all__ = ["Store", "MODES"]

MODES = ("error", "errorifexists", "overwrite", "ignore")


class Store(ByName):
    """A store at ``root`` (default: the user's, ``root.default_root()``), made if absent.
    ``tiers``: replaces the store's recorded tiers (``[{"name", "dir", "capacity"}]``,
    fastest first). Starting sweeps the leftovers of dead writers and readers."""

    def __init__(self, root: str | os.PathLike | None = None, tiers: list[dict] | None = None,
                 app: str = "", verify: str | None = None) -> None:
        self.root = StoreRoot(root, tiers, verify)
        #: the id of the application using it (its figures: opens, reads, saves, rebuilds)
        self.app = app
        self.path = self.root.path
        self.root.auth  # the key made (or checked) at the start, not at the first block
        self._leases: list[Lease] = []
        #: what the start's sweep removed
        self.swept = sweep(self.root)

    # -- saving -------------------------------------------------------------------------------
    def save(self, dataset: Any, name: str, mode: str = "error", lineage: bool = False,
             rebuilds: int = 0) -> Entry | None:
        """Writes every partition of ``dataset`` (a ``Dataset``: one job) and publishes it
        as ``name``; returns its entry (None when ``mode="ignore"`` found the name taken).
        ``lineage``: keep the dataset's lineage, to rebuild it after an eviction."""
        check_name(name)
        pickled = dump_lineage(dataset, name) if lineage else None
        if not may_save(self.exists, name, mode):
            return None
        did = uuid.uuid4().hex
        with gc_lock(self.path, exclusive=False):
            writer = WriterLock(self.path, did, name)
        try:
            if pickled is not None:
                write_lineage(self.path, did, pickled, self.root.auth)
            t0 = time.perf_counter()
            infos = save_job(dataset, functools.partial(save_partition, self.path, did), name)
            for tier in self.root.tiers:
                _fsync_dir(tier.data_dir(did))
            app = app_of(dataset)
            entry = Entry(name=name, id=did, partitions=infos, compute_s=time.perf_counter() - t0, app=app,
                          lineage=pickled is not None, rebuilds=rebuilds)
            with gc_lock(self.path, exclusive=False):
                try:
                    old = publish(self.path, entry, self.root.auth, overwrite=mode == "overwrite")
                finally:
                    writer.release()
        except BaseException:
            with gc_lock(self.path, exclusive=False):
                writer.release()
            sweep(self.root)
            raise
        count_app(self.path, self.app, saves=1)
        if old is not None:
            sweep(self.root)
        return entry

    # -- reading ------------------------------------------------------------------------------
    def open_source(self, name: str, bind: Callable[[Any], Any] | None = None) -> tuple[CountedSource, Entry]:
        """The source of the published dataset ``name`` and its entry; the dataset's blocks
        are held (a lease) until :meth:`close`. An evicted dataset saved with its lineage is
        rebuilt first, with ``bind`` (which gives the unpickled lineage a Context)."""
        for _ in range(3):
            with gc_lock(self.path, exclusive=False):
                entry = read_entry(self.path, name, self.root.auth)
                if not entry.evicted:
                    self._leases.append(Lease(self.path, entry.id))
                    touch_access(self.path, entry.id, self.app)
                    break
            self.rebuild(entry, bind)
        else:
            raise StoreError(f"store: dataset {name!r} was evicted again as soon as it was rebuilt, three times: "
                             f"its tiers are too small for it")
        count_app(self.path, self.app, name, opens=1)
        return CountedSource(self.path, name, entry.id, entry.num_partitions, entry.kinds, self.app), entry

    def rebuild(self, entry: Entry, bind: Callable[[Any], Any] | None) -> Entry:
        """Saves the evicted dataset of ``entry`` again from its lineage (one job)."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.evicted))
        if not entry.lineage:
            raise DatasetEvicted(f"store {self.path!r}: dataset {entry.name!r} was evicted from every tier (at {when}, "
                                 f"to make room) and was saved without lineage, so it cannot be rebuilt; save it "
                                 f"again (with lineage=True the store rebuilds it after an eviction)")
        if bind is None:
            raise DatasetEvicted(f"store {self.path!r}: dataset {entry.name!r} was evicted from every tier (at {when}); "
                                 f"it has its lineage, and an application's ctx.store.open rebuilds it")
        dataset = bind(read_lineage(self.path, entry.id, entry.name, self.root.auth))
        new = self.save(dataset, entry.name, mode="overwrite", lineage=True, rebuilds=entry.rebuilds + 1)
        bump(self.path, rebuilds=1)
        count_app(self.path, self.app, entry.name, rebuilds=1)
        return new  # type: ignore[return-value]

    def info(self, name: str) -> Entry:
        """The published entry of ``name`` (DatasetNotFound if none)."""
        return read_entry(self.path, name, self.root.auth)

    def ls(self) -> list[Entry]:
        """Every published dataset, by name."""
        return list_entries(self.path, self.root.auth)

    def rm(self, name: str) -> None:
        """Unpublishes ``name`` at once; its blocks go now if no reader holds them, else
        when the last reader closes it (its Context's end; a reader killed without closing:
        at the next sweep). Readers that mapped them keep reading: files are unlinked,
        never cut."""
        with gc_lock(self.path, exclusive=False):
            unpublish(self.path, name, self.root.auth)
        sweep(self.root)

    remove = rm

    def usage(self) -> list[dict]:
        """Per tier: the bytes of its block files and its capacity; whether it is memory (a
        tmpfs such as ``/dev/shm``) or disk; the bytes the input cache holds there and the
        most it may (``inputs.input_limit``)."""
        out = []
        for t in self.root.tiers:
            out.append({"tier": t.name, "dir": t.dir, "capacity": t.capacity, "bytes": tier_bytes(t),
                        "medium": "memory" if memory_backed(t.dir) else "disk", "input_bytes": input_bytes(t),
                        "input_limit": input_limit(t)})
        return out

    def balance(self) -> list[dict]:
        """Moves blocks down from the tiers over their capacity, evicts from the last one,
        moves hot datasets up (``tiers.py``); the moves made."""
        return balance(self.root)

    def figures(self) -> dict:
        """The store's figures: bytes per tier, the store-wide counters (moves between
        tiers, evictions, rebuilds), and per application its opens, block reads, saves
        and rebuilds (``stats.py``); per dataset its opens, live readers and state."""
        return {"root": self.path, "tiers": {t.name: tier_bytes(t) for t in self.root.tiers},
                "capacity": {t.name: t.capacity for t in self.root.tiers}, **counters(self.path),
                "apps": apps(self.path),
                "datasets": {e.name: {"bytes": e.nbytes, "opens": opens(self.path, e.id),
                                      "readers": live_readers(self.path, e.id), "evicted": bool(e.evicted),
                                      "lineage": e.lineage, "rebuilds": e.rebuilds} for e in self.ls()}}

    def close(self) -> None:
        """Releases this process's leases; the blocks of a dataset removed or overwritten
        meanwhile go now, unless another reader still holds them (``sweep.free_unheld``):
        the last reader out frees them, not some later sweep."""
        leases, self._leases = self._leases, []
        for lease in leases:
            lease.release()
        if leases:
            try:
                free_unheld(self.root, {lease.dataset_id for lease in leases})
            except FileNotFoundError:
                pass  # the store itself was removed meanwhile (remove_store): nothing left to free

    def __repr__(self) -> str:
        return f"Store({self.path!r}, tiers={[t.name for t in self.root.tiers]})"


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return  # no block went to this tier
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _size_hint(value: Any) -> int:
    n = getattr(value, "nbytes", None)
    return int(n) if isinstance(n, int) else 0


def save_job(dataset: Any, write: Callable[[int, Any], list[dict]], name: str) -> list[dict]:
    """The save's one job: ``write(split, partition)`` in each task (a list of its block's
    info), the infos in partition order; StoreError unless one block per partition."""
    infos = sorted(dataset.map_partitions_with_index(write).collect(), key=lambda i: i["partition"])
    if [i["partition"] for i in infos] != list(range(dataset.num_partitions)):
        raise StoreError(f"store.save of {name!r}: the job gave blocks {[i['partition'] for i in infos]}, "
                         f"not one per partition")
    return infos


def app_of(dataset: Any) -> str:
    """The application name of the Context ``dataset`` belongs to ("" if none)."""
    return str(getattr(getattr(getattr(dataset, "ctx", None), "config", None), "app_name", ""))


def may_save(exists: Callable[[str], bool], name: str, mode: str, where: str = "") -> bool:
    """Whether a save of ``name`` in ``mode`` goes ahead: False when ``ignore`` finds the
    name taken; DatasetExists when ``error`` does; StoreError for an unknown mode. ``where``
    names the catalog in the message (the cluster's)."""
    if mode not in MODES:
        raise StoreError(f"store.save: mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode != "overwrite" and exists(name):
        if mode == "ignore":
            return False
        raise DatasetExists(f"store: a dataset named {name!r} exists already{where}; remove it first, or save with "
                            f"mode='overwrite'")
    return True


def save_partition(root_path: str, dataset_id: str, split: int, value: Any) -> list[dict]:
    """A save's task: writes partition ``split`` into the fastest tier with room for it
    (capacity and the device's free space), the next one if the device is full."""
    root = root_for(root_path)
    need = _size_hint(value)
    errors = []
    for tier in root.tiers:
        if tier.capacity is not None and tier_bytes(tier) + need > tier.capacity:
            errors.append(f"{tier.name}: over its capacity of {tier.capacity} bytes")
            continue
        st = os.statvfs(tier.dir)
        if need > st.f_bavail * st.f_frsize:
            errors.append(f"{tier.name}: {st.f_bavail * st.f_frsize} bytes free on its device")
            continue
        d = tier.data_dir(dataset_id)
        try:
            info = write_block(d, dataset_id, split, value, root.auth)
        except OSError as exc:
            if exc.errno not in (28, 122):  # ENOSPC, EDQUOT: try the next tier
                raise
            errors.append(f"{tier.name}: {exc.strerror}")
            continue
        records = root.records_dir(dataset_id)
        if records is not None:  # verify="store": the file read back and hashed once, here
            check_block(os.path.join(d, block_name(split)), dataset_id, split, root.auth,
                        f"partition {split} of dataset {dataset_id} being saved", records)
        info["tier"] = tier.name
        return [info]
    raise StoreFull(28, f"store {root_path!r}: no tier has room for partition {split} ({need} bytes): "
                        f"{'; '.join(errors)}")


def remove_store(path: str) -> None:
    """Deletes a whole store (its tiers' data and its root): for tests and ``store rm --all``."""
    root = root_for(path)
    for t in root.tiers:
        shutil.rmtree(t.data_dir(), ignore_errors=True)
    shutil.rmtree(root.path, ignore_errors=True)
