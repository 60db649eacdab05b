"""The errors of the shared store: each message names the store, the dataset and, for a
block, the partition and its file, so that a reader is never left guessing."""

from __future__ import annotations

__all__ = ["StoreError", "StoreAccessError", "StoreNotFound", "DatasetNotFound", "DatasetExists", "BlockCorrupt", "StoreFull",
           "DatasetEvicted"]


class StoreError(Exception):
    """Anything the store refuses or cannot do."""


class StoreAccessError(StoreError, PermissionError):
    """A store directory or file another user could read or change (wrong owner, group or
    world permissions, a symbolic link where a directory must be)."""


class StoreNotFound(StoreError, FileNotFoundError):
    """No store at the path a command that only uses an existing store was given (a
    mistyped ``--root``): such a command makes none (``root.existing_root``)."""


class DatasetNotFound(StoreError, LookupError):
    """No dataset of that name is published in the store (never saved, removed, or its
    save did not complete)."""


class DatasetEvicted(StoreError, LookupError):
    """A published dataset whose blocks the store evicted from every tier to make room, and
    which it cannot rebuild: it was saved without its lineage."""


class DatasetExists(StoreError, FileExistsError):
    """``save(..., mode="error")`` of a name already published."""


class BlockCorrupt(StoreError):
    """A block file fails its keyed tag or its checksum, is cut short, or is gone: the
    store never serves it."""


class StoreFull(StoreError, OSError):
    """No tier has room for a block."""
