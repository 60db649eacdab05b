"""Reading a saved dataset: the lineage source of the dataset ``open`` gives, and the
per-process state that readers and writers of a store share.

A partition is read where its task runs: the executor finds the block file tier by tier,
fastest first, and maps it (``blockfile.py``): an executor process of this machine maps
the store's files itself, so nothing crosses a socket. A block that is moving down a tier
is first complete in the lower tier and only then unlinked from the upper one, so a lookup
that misses it above finds it below (one more look covers a move between the two stats).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from strataflow.lineage import SourceNode
from strataflow.store.blockfile import block_name, read_block
from strataflow.store.errors import BlockCorrupt
from strataflow.store.root import CONFIG_FILE, StoreRoot

if TYPE_CHECKING:
    from strataflow.executor.task import TaskContext

__all__ = ["StoreSource", "root_for", "find_block"]

_roots: dict[str, tuple[tuple, StoreRoot]] = {}
_roots_lock = threading.Lock()


def _config_key(path: str) -> tuple:
    try:
        st = os.stat(os.path.join(path, CONFIG_FILE))
        return (st.st_ino, st.st_mtime_ns, st.st_size)
    except FileNotFoundError:
        return ()


def root_for(path: str) -> StoreRoot:
    """This process's view of the store at ``path`` (checked once: owner, modes, key;
    again when its recorded tiers change)."""
    key = _config_key(path)
    with _roots_lock:
        got = _roots.get(path)
        if got is None or got[0] != key:
            got = _roots[path] = (key, StoreRoot(path))
        return got[1]


def find_block(root: StoreRoot, dataset_id: str, partition: int) -> str | None:
    """The path of the block file, in the fastest tier that has it; None if none has."""
    name = block_name(partition)
    for _ in range(2):
        for tier in root.tiers:
            path = os.path.join(tier.data_dir(dataset_id), name)
            if os.path.exists(path):
                return path
    return None


class StoreSource(SourceNode):
    """The partitions of a published dataset, read from the store's block files. Travels
    to executors as the store's path, the dataset's id and name: no key, no data."""

    def __init__(self, root: str, name: str, dataset_id: str, num_partitions: int, kinds: list[str]) -> None:
        self.root = root
        self.name = name
        self.dataset_id = dataset_id
        self.num_partitions = num_partitions
        self.kinds = kinds

    def compute(self, split: int, tc: "TaskContext | None") -> Any:
        root = root_for(self.root)
        what = f"store dataset {self.name!r} (id {self.dataset_id}) partition {split}"
        for attempt in range(2):
            path = find_block(root, self.dataset_id, split)
            if path is None:
                raise BlockCorrupt(f"{what}: its block file is in no tier of store {self.root!r} (the files were "
                                   f"deleted behind the store)")
            try:
                return read_block(path, self.dataset_id, split, root.auth, what, root.records_dir(self.dataset_id))
            except BlockCorrupt:
                if attempt or os.path.exists(path):
                    raise  # damaged, not moved
        raise AssertionError("unreachable")

    def describe(self) -> str:
        return f"store:{self.name} ({self.num_partitions} partitions, {'/'.join(self.kinds)})"
