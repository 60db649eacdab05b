"""PySpark's ``StorageLevel`` (five flags), and its mapping onto strataflow's levels.

PySpark's constants keep their values (``StorageLevel.MEMORY_ONLY`` is ``StorageLevel(False,
True, False, False, 1)``, as ``repr`` and ``str`` show) and each maps onto the strataflow
level with the same placement: memory only, memory and disk, disk only, off heap. Python
records are kept as values in memory whatever the ``deserialized`` flag (PySpark's flag
describes the JVM's copy, which strataflow does not have). Replication above 1 is
accepted and not done: a lost block is recomputed from lineage, as for every level here.
strataflow's own levels are here too (``StorageLevel.DISK_MMAP``, ``AUTO``, ...), carrying
their native level, so a PySpark program can ask for them by name.
"""

from __future__ import annotations

from typing import Any, ClassVar

from strataflow.storage.level import StorageLevel as NativeLevel

__all__ = ["StorageLevel", "to_native", "from_native", "as_pyspark"]


class StorageLevel:
    """Flags for where an RDD's partitions are kept (PySpark's class); ``replication`` above 1
    is accepted and not done (a lost block is recomputed from lineage).

    >>> StorageLevel.MEMORY_AND_DISK, str(StorageLevel.DISK_ONLY_2)
    (StorageLevel(True, True, False, False, 1), 'Disk Serialized 2x Replicated')
    >>> rdd = sc.parallelize([1, 2]).persist(StorageLevel.DISK_ONLY)
    >>> rdd.sum(), rdd.getStorageLevel().useDisk
    (3, True)
    >>> _ = rdd.unpersist()
    """

    NONE: ClassVar["StorageLevel"]
    DISK_ONLY: ClassVar["StorageLevel"]
    DISK_ONLY_2: ClassVar["StorageLevel"]
    DISK_ONLY_3: ClassVar["StorageLevel"]
    MEMORY_ONLY: ClassVar["StorageLevel"]
    MEMORY_ONLY_2: ClassVar["StorageLevel"]
    MEMORY_AND_DISK: ClassVar["StorageLevel"]
    MEMORY_AND_DISK_2: ClassVar["StorageLevel"]
    OFF_HEAP: ClassVar["StorageLevel"]
    MEMORY_AND_DISK_DESER: ClassVar["StorageLevel"]

    def __init__(self, useDisk: bool, useMemory: bool, useOffHeap: bool, deserialized: bool,
                 replication: int = 1) -> None:
        self.useDisk = useDisk
        self.useMemory = useMemory
        self.useOffHeap = useOffHeap
        self.deserialized = deserialized
        self.replication = replication
        #: a strataflow level this one names exactly (its own levels), else None
        self.native: Any = None

    def __repr__(self) -> str:
        return (f"StorageLevel({self.useDisk}, {self.useMemory}, {self.useOffHeap}, {self.deserialized}, "
                f"{self.replication})")

    def __str__(self) -> str:
        out = "Disk " if self.useDisk else ""
        out += "Memory " if self.useMemory else ""
        out += "OffHeap " if self.useOffHeap else ""
        out += "Deserialized " if self.deserialized else "Serialized "
        return out + f"{self.replication}x Replicated"

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, StorageLevel) and self.native is other.native
                and (self.useDisk, self.useMemory, self.useOffHeap, self.deserialized, self.replication)
                == (other.useDisk, other.useMemory, other.useOffHeap, other.deserialized, other.replication))

    def __hash__(self) -> int:
        return hash((self.useDisk, self.useMemory, self.useOffHeap, self.deserialized, self.replication))


StorageLevel.NONE = StorageLevel(False, False, False, False)
StorageLevel.DISK_ONLY = StorageLevel(True, False, False, False)
StorageLevel.DISK_ONLY_2 = StorageLevel(True, False, False, False, 2)
StorageLevel.DISK_ONLY_3 = StorageLevel(True, False, False, False, 3)
StorageLevel.MEMORY_ONLY = StorageLevel(False, True, False, False)
StorageLevel.MEMORY_ONLY_2 = StorageLevel(False, True, False, False, 2)
StorageLevel.MEMORY_AND_DISK = StorageLevel(True, True, False, False)
StorageLevel.MEMORY_AND_DISK_2 = StorageLevel(True, True, False, False, 2)
StorageLevel.OFF_HEAP = StorageLevel(True, True, True, False, 1)
StorageLevel.MEMORY_AND_DISK_DESER = StorageLevel(True, True, False, True)


def _own(native: Any) -> StorageLevel:
    level = StorageLevel(native.use_disk, native.use_memory, native.off_heap, native.deserialized)
    level.native = native
    return level


# strataflow's levels that PySpark has no name for
for _native in (NativeLevel.MEMORY_ONLY_SER, NativeLevel.MEMORY_AND_DISK_SER, NativeLevel.DISK_MMAP,
                NativeLevel.MEMORY_AND_DISK_MMAP, NativeLevel.AUTO):
    setattr(StorageLevel, _native.name, _own(_native))

_FROM_NATIVE = {
    NativeLevel.NONE: StorageLevel.NONE,
    NativeLevel.MEMORY_ONLY: StorageLevel.MEMORY_ONLY,
    NativeLevel.MEMORY_AND_DISK: StorageLevel.MEMORY_AND_DISK,
    NativeLevel.DISK_ONLY: StorageLevel.DISK_ONLY,
    NativeLevel.OFF_HEAP: StorageLevel.OFF_HEAP,
}


def to_native(level: StorageLevel | Any) -> Any:
    """The strataflow level for a PySpark one (also the real PySpark's, by its flags; a
    native level or its name passes through)."""
    if not hasattr(level, "useMemory"):
        return NativeLevel.parse(level)
    if getattr(level, "native", None) is not None:
        return level.native
    if level.useOffHeap:
        return NativeLevel.OFF_HEAP
    if level.useMemory:
        return NativeLevel.MEMORY_AND_DISK if level.useDisk else NativeLevel.MEMORY_ONLY
    return NativeLevel.DISK_ONLY if level.useDisk else NativeLevel.NONE


def from_native(native: Any) -> StorageLevel:
    """The PySpark level that names a strataflow level."""
    return _FROM_NATIVE.get(native) or getattr(StorageLevel, native.name)


def as_pyspark(level: Any) -> StorageLevel:
    """``level`` as this module's StorageLevel: itself, the same flags for the real
    PySpark's (``from pyspark import StorageLevel`` left in a program keeps its
    replication, ``MEMORY_ONLY_2`` says ``2x Replicated``), or the name of a native level."""
    if isinstance(level, StorageLevel):
        return level
    if hasattr(level, "useMemory"):
        return StorageLevel(bool(level.useDisk), bool(level.useMemory), bool(level.useOffHeap),
                            bool(level.deserialized), int(getattr(level, "replication", 1)))
    return from_native(to_native(level))
