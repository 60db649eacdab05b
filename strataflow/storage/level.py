"""Storage levels: where a persisted block may live and in which form (Spark's meanings).

| level               | memory                 | disk | note                                  |
| ------------------- | ---------------------- | ---- | ------------------------------------- |
| NONE                | -                      | -    | recomputed from lineage on every use  |
| MEMORY_ONLY         | values                 | -    | a block that does not fit is recomputed |
| MEMORY_ONLY_SER     | serialized bytes       | -    |                                       |
| MEMORY_AND_DISK     | values                 | yes  | a block that does not fit goes to disk |
| MEMORY_AND_DISK_SER | serialized bytes       | yes  |                                       |
| DISK_ONLY           | -                      | yes  |                                       |
| OFF_HEAP            | bytes outside the heap | -    | an anonymous mmap: the GC never sees it |
| STORE               | -                      | the shared store | Spark 1.x's OFF_HEAP (Tachyon): blocks in the machine's shared store (``storage/shared_blocks.py``), mapped by every reader; they outlive the executor that wrote them |
| DISK_MMAP           | -                      | mapped | zero-copy layout, served by mapping   |
| MEMORY_AND_DISK_MMAP| values                 | mapped | evicted once to the mapped layout, then served by mapping, never re-cached |
| AUTO                | values                 | chosen | per dataset, from measurements: dropped, mapped or serialized when it leaves memory (``auto_level.py``) |
"""

from __future__ import annotations

from dataclasses import dataclass

from strataflow.common.checks import ConfigError

__all__ = ["StorageLevel"]


@dataclass(frozen=True)
class _Level:
    name: str
    use_memory: bool
    use_disk: bool
    deserialized: bool
    off_heap: bool = False
    mmap: bool = False  # the disk part is the region store's zero-copy mapped layout
    auto: bool = False  # the block manager chooses the disk part per dataset (AUTO)
    shared: bool = False  # the disk part is the shared store, outside every executor (STORE)

    @property
    def is_valid(self) -> bool:
        return self.use_memory or self.use_disk

    def __repr__(self) -> str:
        return f"StorageLevel.{self.name}"

    __str__ = lambda self: self.name  # noqa: E731 - the name is the readable form


class StorageLevel:
    """The storage levels, as attributes: ``StorageLevel.MEMORY_AND_DISK``."""

    NONE = _Level("NONE", False, False, False)
    MEMORY_ONLY = _Level("MEMORY_ONLY", True, False, True)
    MEMORY_ONLY_SER = _Level("MEMORY_ONLY_SER", True, False, False)
    MEMORY_AND_DISK = _Level("MEMORY_AND_DISK", True, True, True)
    MEMORY_AND_DISK_SER = _Level("MEMORY_AND_DISK_SER", True, True, False)
    DISK_ONLY = _Level("DISK_ONLY", False, True, False)
    OFF_HEAP = _Level("OFF_HEAP", True, False, False, off_heap=True)
    #: Spark 1.x's OFF_HEAP was Tachyon; here OFF_HEAP keeps Spark 2+'s meaning (serialized
    #: bytes off the heap, in the executor) and the shared store is a level of its own
    STORE = _Level("STORE", False, True, False, shared=True)
    DISK_MMAP = _Level("DISK_MMAP", False, True, False, mmap=True)
    MEMORY_AND_DISK_MMAP = _Level("MEMORY_AND_DISK_MMAP", True, True, True, mmap=True)
    AUTO = _Level("AUTO", True, True, True, auto=True)

    Level = _Level

    @classmethod
    def all(cls) -> list[_Level]:
        return [v for v in vars(cls).values() if isinstance(v, _Level)]

    @classmethod
    def parse(cls, name: "str | _Level") -> _Level:
        """A level from its name (case-insensitive), for command lines and configs."""
        if isinstance(name, _Level):
            return name
        level = getattr(cls, str(name).upper().replace("-", "_"), None)
        if not isinstance(level, _Level):
            raise ConfigError(f"storage level: unknown level {name!r}; choose one of "
                              f"{', '.join(l.name for l in cls.all())}")
        return level
