"""A saved dataset's lineage (Tachyon's): kept beside its blocks so that the store can
rebuild it after evicting it from every tier.

``save(ds, name, lineage=True)`` pickles the dataset (its lineage: nodes, functions,
dependencies; with ``cloudpickle``, as a job ships them to executors) before the job runs,
so a lineage that cannot be pickled fails the save at once, naming the dataset. The bytes
go to ``lineage/<id>.pkl`` (0600), after a keyed tag made with the store's key: a lineage
file is unpickled only if its tag is right, so no one but the store's user can make the
store run code. The sweep removes the files of datasets no entry names.

Rebuilding happens in a later application's ``open`` (:func:`bind`, then a save): the
pickled datasets get this Context, new dataset and shuffle ids (the saving application's
ids mean nothing here), and no storage level. What a lineage can rebuild: datasets read
from files, ranges, and collections small enough to travel inside the lineage; the files
must still be there.
"""

from __future__ import annotations

import os
from typing import Any

import cloudpickle

from strataflow.common.private_file import atomic_write, make_private_dirs
from strataflow.lineage import ShuffleDependency
from strataflow.storage.blocks.frame_auth import TAG_BYTES, FrameAuth, same
from strataflow.storage.level import StorageLevel
from strataflow.store.errors import StoreError

__all__ = ["dump_lineage", "write_lineage", "read_lineage", "read_lineage_bytes", "drop_lineage", "lineage_dir",
           "bind"]

_DOMAIN = b"sf-store-lin-v1"


def lineage_dir(root: str) -> str:
    return os.path.join(root, "lineage")


def _path(root: str, dataset_id: str) -> str:
    return os.path.join(lineage_dir(root), f"{dataset_id}.pkl")


def dump_lineage(dataset: Any, name: str) -> bytes:
    """The dataset's lineage, pickled; StoreError naming the dataset if it cannot be."""
    try:
        return cloudpickle.dumps(dataset)
    except Exception as exc:  # noqa: BLE001 - any pickling failure: say which dataset and why
        raise StoreError(f"store.save of {name!r} with lineage=True: its lineage cannot be pickled "
                         f"({type(exc).__name__}: {exc}); save it without lineage") from exc


def write_lineage(root: str, dataset_id: str, data: bytes, auth: FrameAuth) -> None:
    """Writes the pickled lineage, tagged, whole (temporary name, fsync, rename)."""
    d = lineage_dir(root)
    make_private_dirs(d)
    # the temporary name holds the dataset's id: the sweep knows whose it is
    with atomic_write(_path(root, dataset_id), sync=True, prefix=f".{dataset_id}.") as fh:
        fh.write(auth.tag(_DOMAIN, dataset_id.encode(), data))
        fh.write(data)


def read_lineage(root: str, dataset_id: str, name: str, auth: FrameAuth) -> Any:
    """The saved dataset, unpickled (no Context yet: :func:`bind`), once its tag is checked."""
    return cloudpickle.loads(read_lineage_bytes(root, dataset_id, name, auth))


def drop_lineage(root: str, dataset_id: str) -> None:
    """Removes a dataset's lineage file, if it has one (the cluster's catalog, whose
    lineage files no sweep knows: ``ray_server.py``)."""
    try:
        os.unlink(_path(root, dataset_id))
    except FileNotFoundError:
        pass


def read_lineage_bytes(root: str, dataset_id: str, name: str, auth: FrameAuth) -> bytes:
    """The saved lineage's pickled bytes, once its keyed tag is checked (StoreError if
    the file is gone or fails it): where it is checked is not where it is unpickled on a
    Ray cluster (the head's server checks, the driver unpickles)."""
    path = _path(root, dataset_id)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise StoreError(f"store dataset {name!r}: its lineage file {path} is gone; it cannot be rebuilt") from None
    tag, data = raw[:TAG_BYTES], raw[TAG_BYTES:]
    if len(tag) != TAG_BYTES or not same(tag, auth.tag(_DOMAIN, dataset_id.encode(), data)):
        raise StoreError(f"store dataset {name!r}: its lineage file {path} fails its keyed tag (damaged, or not "
                         f"written by this store); not unpickled")
    return data


def bind(dataset: Any, ctx: Any) -> Any:
    """Gives every dataset of an unpickled lineage the Context ``ctx``, a new id from it
    and no storage level, and every shuffle a new shuffle id; returns ``dataset``."""
    seen: set[int] = set()
    stack = [dataset]
    while stack:
        ds = stack.pop()
        if id(ds) in seen:
            continue
        seen.add(id(ds))
        ds.ctx = ctx
        ds.id = ctx._new_dataset_id()
        ds.storage_level = StorageLevel.NONE
        for dep in ds.node.deps:
            if isinstance(dep, ShuffleDependency):
                dep.shuffle_id = ctx.map_outputs.new_shuffle_id()
            stack.append(dep.parent)
    return dataset
