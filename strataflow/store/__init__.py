"""The shared store (issue 42): datasets saved under a name by one application and opened
by another, later one, served zero-copy from memory-mapped block files. See
``docs/store.md``; the modules, lowest first: ``errors``, ``root`` (directories, tiers,
key, permissions), ``locks``, ``blockfile``, ``catalog``, ``sweep``, ``source``, ``store``."""

from strataflow.store.errors import (BlockCorrupt, DatasetEvicted, DatasetExists, DatasetNotFound, StoreAccessError,
                                     StoreError, StoreFull)
from strataflow.store.root import default_root
from strataflow.store.store import Store

__all__ = ["Store", "default_root", "StoreError", "StoreAccessError", "DatasetNotFound", "DatasetExists",
           "BlockCorrupt", "StoreFull", "DatasetEvicted"]
