"""The memory store: blocks held in RAM, as values, serialized bytes, or bytes outside the
Python heap. It only holds entries; the block manager decides what goes in and out and
accounts the bytes with the memory manager (under its lock).
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from strataflow.storage.blocks.sizing import estimate_size

__all__ = ["MemoryEntry", "MemoryStore", "off_heap_buffer", "join_frames", "readonly", "owned", "memory_form"]


@dataclass
class MemoryEntry:
    value: Any  # a partition value, a bytes-like blob, or an anonymous mmap (off-heap)
    size: int
    deserialized: bool
    serializer: str | None = None  # the concrete serializer of a blob
    off_heap: bool = False
    #: its value is mapped from the store's input cache (``storage/backed.py``): dropped,
    #: never written to disk
    backed: bool = False

    def data(self) -> memoryview:
        """The serialized bytes of a serialized entry."""
        return memoryview(self.value)


def _copy_frames(frames: list, dest) -> None:
    pos = 0
    for f in frames:
        m = memoryview(f).cast("B")
        dest[pos : pos + m.nbytes] = m
        pos += m.nbytes


def off_heap_buffer(frames: list, size: int) -> mmap.mmap:
    """The frames copied into an anonymous private mapping: memory the garbage collector
    never scans and that is returned to the OS as soon as the last view is dropped."""
    buf = mmap.mmap(-1, max(1, size), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    _copy_frames(frames, buf)
    return buf


def join_frames(frames: list, size: int) -> bytearray:
    """The frames as one contiguous buffer (the serialized form kept in memory)."""
    out = bytearray(size)
    _copy_frames(frames, out)
    return out


def readonly(value: Any) -> Any:
    """Batches handed out from the cache are read-only (a write raises numpy's usual
    "assignment destination is read-only"): a task that wrote into a cached array would
    otherwise change what later tasks read."""
    if isinstance(value, np.ndarray) and value.flags.writeable:
        view = value.view()
        view.flags.writeable = False
        return view
    return value


def owned(value: Any) -> Any:
    """A value that holds its own memory: an ndarray viewing a memory-mapped file is
    copied, so that caching it in memory really moves it into RAM."""
    if isinstance(value, np.ndarray):
        base = value
        while base is not None:
            if isinstance(base, (mmap.mmap, np.memmap, pa.Buffer)):
                return np.array(value)
            base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return value


def memory_form(level: Any, value: Any, payload: memoryview, ser_name: str) -> MemoryEntry:
    """The memory form, at ``level``, of a block read from disk (``value`` loaded from
    ``payload``, its serialized bytes)."""
    if level.deserialized:
        value = owned(value)  # a large block was loaded as views of its file's mapping
        return MemoryEntry(value, estimate_size(value), True)
    if level.off_heap:
        return MemoryEntry(off_heap_buffer([payload], payload.nbytes), payload.nbytes, False, ser_name, True)
    return MemoryEntry(bytearray(payload), payload.nbytes, False, ser_name)  # its own copy, in memory


class MemoryStore:
    def __init__(self) -> None:
        self._entries: dict[Any, MemoryEntry] = {}

    def put(self, block_id: Any, entry: MemoryEntry) -> None:
        if block_id in self._entries:
            raise KeyError(f"block {block_id} is already in the memory store")
        self._entries[block_id] = entry

    def get(self, block_id: Any) -> MemoryEntry | None:
        return self._entries.get(block_id)

    def remove(self, block_id: Any) -> MemoryEntry | None:
        return self._entries.pop(block_id, None)

    def __contains__(self, block_id: Any) -> bool:
        return block_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def items(self) -> Iterator[tuple[Any, MemoryEntry]]:
        return iter(list(self._entries.items()))

    def sizes(self, exclude: "set | frozenset" = frozenset()) -> "Mapping[Any, int]":
        """Each block's size, but for ``exclude``: a live view, not a copy. Eviction asks
        about the few blocks it drops, and copying every entry's size for it was linear in
        the blocks in memory on every eviction."""
        return _Sizes(self._entries, exclude)

    @property
    def used(self) -> int:
        return sum(e.size for e in self._entries.values())


class _Sizes(Mapping):
    def __init__(self, entries: dict, exclude: "set | frozenset") -> None:
        self._entries, self._exclude = entries, exclude

    def __getitem__(self, block_id: Any) -> int:
        if block_id in self._exclude:
            raise KeyError(block_id)
        return self._entries[block_id].size

    def __contains__(self, block_id: object) -> bool:
        return block_id in self._entries and block_id not in self._exclude

    def __iter__(self) -> Iterator[Any]:
        return (b for b in list(self._entries) if b not in self._exclude)

    def __len__(self) -> int:
        return sum(1 for _ in self)
