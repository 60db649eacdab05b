"""The tier kinds: a tier spec's ``kind`` names the class that builds its store, as a
policy's name names its class in ``policies/__init__.py``.

A new tier kind is one class satisfying
:class:`~strataflow.storage.tier_store.StackedStore` plus one entry here (or a call to
:func:`register_tier_kind`, e.g. in a test). The configuration (``tier_spec.py``), the CLI's
``--tier``, the executor's store factory (``storage/stores.py``) and the peer reads all
find it through this table.

A kind registered at run time (not in this table) exists only in the process that
registered it: the ``threads`` backend sees it; executor processes see it only if the
module that registers it is imported there too.
"""

from __future__ import annotations

from typing import Any

from strataflow.storage.disk.disk_store import DiskStore

__all__ = ["TIER_KINDS", "DEFAULT_KIND", "register_tier_kind", "tier_kind", "kind_of_entry"]

#: kind name -> the class that builds a tier's store from its spec (``from_spec``)
TIER_KINDS: dict[str, type] = {"disk": DiskStore}
#: the kind of a tier spec without ``kind``: what every tier was before kinds existed
DEFAULT_KIND = "disk"


def register_tier_kind(name: str, cls: type) -> None:
    """Adds (or replaces) a tier kind; ``cls`` must satisfy ``StackedStore``."""
    missing = [m for m in ("from_spec", "footprint", "put", "get", "entry", "items", "remove", "load_entry",
                           "spec_options") if not hasattr(cls, m)]
    if missing:
        raise TypeError(f"tier kind {name!r}: {cls.__name__} lacks {missing} of the StackedStore protocol "
                        f"(storage/tier_store.py)")
    TIER_KINDS[name] = cls


def tier_kind(name: str) -> type:
    """The class of a tier kind; KeyError naming the known kinds if there is none."""
    try:
        return TIER_KINDS[name]
    except KeyError:
        raise KeyError(f"unknown tier kind {name!r}; known: {sorted(TIER_KINDS)}") from None


def kind_of_entry(entry: Any) -> type | None:
    """The tier kind whose ``load_entry`` reads ``entry`` (the first registered whose
    ``entry_type`` it is), or None."""
    for cls in TIER_KINDS.values():
        if isinstance(entry, getattr(cls, "entry_type", ())):
            return cls
    return None

