"""What a node's store server (``ray_server.py``) keeps across the cluster's life: the
store's identity, and its holds on datasets with the application each is for.

- **The store's identity** (``store_ident``): a random id kept in the store's directory
  (``store-id``, mode 0600), made by the first server over that store and read by every
  later one, on this cluster or on a cluster started again over the same directory. The
  cluster's catalog names the node of each block by it, not by the Ray node id (new at
  every start of a node) nor by the node's address (shared by the simulated nodes of one
  machine, changed when a machine comes back elsewhere, and the same for two stores of
  one machine): the id names the store's *contents*, so a store wiped (its directory gone)
  gets a new id and its blocks are seen lost, and a store whose directory is mounted on
  another machine is found there.
- **Holds** (:class:`Holds`): the leases that keep a dataset's blocks from the store's
  sweep, each with the Ray jobs (applications) holding it: a save's tasks, a fetch, a
  ``STORE`` level's executors hold for their job; a published dataset is held for the
  catalog (no job). ``reap`` lets go of what only dead jobs held (a driver killed before it
  released its holds: its job is marked dead by Ray when its connection goes), unless the
  catalog names the dataset: then it stays, held for the catalog. The holds are recorded
  in the store (``cluster/holds.json``, with the Ray cluster's session): a server that Ray
  restarts after a crash takes them again (``restore``) before its first sweep; one on a
  cluster started again does not (that session's jobs are all gone; the catalog's
  datasets are held again from the catalog).
"""

from __future__ import annotations

import json
import os
import threading
import uuid

from strataflow.common.private_file import atomic_write, open_private
from strataflow.store.locks import Lease

__all__ = ["IDENT_FILE", "store_ident", "Holds", "dead_jobs"]

IDENT_FILE = "store-id"


def store_ident(path: str) -> str:
    """The identity of the store at ``path`` (an existing private directory): its
    ``store-id`` file's, made now if it has none (written under a temporary name and linked
    into place: two servers starting at once agree on the first one linked)."""
    final = os.path.join(path, IDENT_FILE)
    try:
        with open(final) as fh:
            got = fh.read().strip()
        if got:
            return got
    except FileNotFoundError:
        pass
    tmp = os.path.join(path, f".{IDENT_FILE}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    fd = open_private(tmp, os.O_WRONLY | os.O_EXCL | os.O_CLOEXEC)
    try:
        os.write(fd, uuid.uuid4().hex.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, final)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    with open(final) as fh:
        return fh.read().strip()


def dead_jobs(jobs: set[str]) -> set[str]:
    """Which of ``jobs`` (hex job ids) Ray's job table says have ended (or does not know)."""
    from ray._private import state  # the GCS job table; no public call gives it without a dashboard

    table = {j["JobID"]: j["IsDead"] for j in state.jobs()}
    return {j for j in jobs if table.get(j, True)}


class Holds:
    """A server's leases on datasets of its store, each with the jobs holding it (``None``
    in the set: held for the catalog)."""

    def __init__(self, path: str, record: str | None = None, session: str = "") -> None:
        self.path = path
        self._lock = threading.Lock()
        self._leases: dict[str, Lease] = {}
        self._by: dict[str, set[str | None]] = {}
        self._record, self._session = record, session

    def hold(self, dataset_id: str, job: str | None) -> None:
        with self._lock:
            if dataset_id not in self._leases:
                self._leases[dataset_id] = Lease(self.path, dataset_id)
            by = self._by.setdefault(dataset_id, set())
            if job not in by:
                by.add(job)
                self._write()

    def release(self, dataset_id: str) -> bool:
        """Lets ``dataset_id`` go, whoever held it; whether it was held."""
        with self._lock:
            lease = self._leases.pop(dataset_id, None)
            self._by.pop(dataset_id, None)
            if lease is not None:
                self._write()
        if lease is not None:
            lease.release()
        return lease is not None

    def restore(self) -> list[str]:
        """Takes again the holds this store's server recorded in this cluster session (a
        server restarted after a crash); the datasets."""
        try:
            with open(self._record or "") as fh:
                data = json.load(fh)
        except (FileNotFoundError, ValueError):
            return []
        if data.get("session") != self._session:
            return []  # another cluster's: its jobs are gone
        for did, jobs in data.get("holds", {}).items():
            for job in jobs:
                self.hold(did, job)
        return sorted(data.get("holds", {}))

    def _write(self) -> None:
        """The holds, recorded (under ``_lock``)."""
        if self._record is None:
            return
        holds = {did: sorted(by, key=str) for did, by in self._by.items()}
        with atomic_write(self._record) as fh:
            fh.write(json.dumps({"session": self._session, "holds": holds}).encode())

    def jobs(self) -> set[str]:
        with self._lock:
            return {j for by in self._by.values() for j in by if j is not None}

    def reap(self, dead: set[str], published: set[str]) -> list[str]:
        """Drops the ``dead`` jobs' holds; a dataset no one else holds is released, unless
        ``published`` (the catalog's ids) names it: then it is held for the catalog.
        Returns the datasets released."""
        gone: list[str] = []
        leases = []
        with self._lock:  # decided and dropped at once: a hold taken meanwhile is not lost
            for did, by in list(self._by.items()):
                if by & dead:
                    by -= dead
                    if not by and did in published:
                        by.add(None)
                    elif not by:
                        gone.append(did)
                        del self._by[did]
                        leases.append(self._leases.pop(did))
            if gone or dead:
                self._write()
        for lease in leases:
            lease.release()
        return gone

    def ids(self) -> list[str]:
        with self._lock:
            return sorted(self._leases)

    def __len__(self) -> int:
        return len(self._leases)
