"""Grouping values by key within execution memory, a single key's group larger than
memory included (``group_by_key``, ``cogroup`` and the joins built on it).

Spark's groupByKey holds each key's group whole (its CompactBuffer is combined in an
ExternalAppendOnlyMap, which spills *between* keys, never within one), so one key with
half the records kills the task. Here a group may outgrow the task's memory:

- While inserting, the :class:`ExternalGrouper` holds ``key -> [values]`` (one list per
  side of a cogroup) and checks its estimated size out of execution memory; when the
  grant falls short it writes everything it holds as a run sorted by key hash, each
  key's values cut into chunks, and starts afresh. So one hot key is spread over many
  runs, none larger than the grant.
- At the end the runs are merged by hash (streaming: one chunk per run in memory), and a
  key's chunks go to a :class:`GroupBuilder`, which keeps them in a list while its memory
  is granted, and otherwise writes them, chunk by chunk, to a file of the group's own.

A group therefore comes out as a plain ``list`` (what fits), or as a
:class:`SpilledGroup`: a read-only sequence of the values backed by its file, which any
code that iterates a group works with unchanged (``len``, iteration any number of times,
indexing, ``==`` with a list, ``sorted(group)``, ``list(group)``, PySpark's
``ResultIterable`` and ``mapValues(list)``). A function that needs the group in memory
(``sorted``, ``list``) gets it in memory, as the user asked. A SpilledGroup pickles as a
plain list (streamed into the pickle), so ``collect()`` through a process boundary or a
serialized cache level hands users lists; its file lives as long as the object (removed
when it is garbage-collected, and with the application's shuffle dirs at the end).
"""

from __future__ import annotations

import collections
import heapq
import itertools
import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from strataflow.shuffle.aggregator import Aggregator
from strataflow.shuffle.partitioner import portable_hash
from strataflow.shuffle.spill_files import CHUNK, SpillFiles
from strataflow.shuffle.work_memory import CHECK_EVERY, ExecutionGrant, SizeTracker
from strataflow.storage.blocks.sizing import estimate_size

__all__ = ["ExternalGrouper", "GroupBuilder", "Grouping", "SpilledGroup"]

_LIST_SLOT = sys.getsizeof([]) + 4 * 8  # a group's list (CPython allocates 4 slots at its first append)
_KEY_SLOT = sys.getsizeof(()) + 24  # a key's tuple of lists and its share of the dict's table
_POINTER = 9  # a list's pointer per value, with CPython's over-allocation


def _values_in(item: tuple) -> int:
    """A run's item ``(hash, key, side, values)`` weighs its values (and its key)."""
    return 1 + len(item[3])


def _single(v: Any) -> list:
    return [v]


def _append(acc: list, v: Any) -> list:
    acc.append(v)
    return acc


def _extend(a: list, b: list) -> list:
    a.extend(b)
    return a


@dataclass(frozen=True)
class Grouping(Aggregator):
    """The aggregation that gathers each key's values (never combined map-side).
    ``width`` 0: ``(key, group)``; ``width`` n: the values are ``(side, value)`` tagged by
    the n inputs of a cogroup, and the result is ``(key, (group_0, ..., group_n-1))``.
    Its three functions are the list ones, for code that combines without a grouper."""

    create_combiner: Callable[[Any], Any] = _single
    merge_value: Callable[[Any, Any], Any] = _append
    merge_combiners: Callable[[Any, Any], Any] = _extend
    width: int = 0


class SpilledGroup(Sequence):
    """The values of one group, in a spill file; read by streaming on every iteration."""

    def __init__(self, files: SpillFiles, path: str, length: int) -> None:
        self._files = files
        self._path = path
        self._len = length
        files.keep(path)
        weakref.finalize(self, files.remove, path)

    def __iter__(self) -> Iterator[Any]:
        return self._files.read(self._path)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):  # a slice is a list, in memory
            return list(self)[index]
        i = index + self._len if index < 0 else index
        if not 0 <= i < self._len:
            raise IndexError("group index out of range")
        return next(itertools.islice(self, i, None))

    def __eq__(self, other: object) -> bool:
        """Equal to a list (or another group) of equal values, as a list is."""
        if not isinstance(other, (list, SpilledGroup)):
            return NotImplemented
        return len(other) == self._len and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  # a list's equality: not hashable, as a list

    def __reduce__(self) -> tuple:
        """A plain list on the other side, its values streamed into the pickle."""
        return list, (), None, iter(self)

    def __repr__(self) -> str:
        return f"SpilledGroup({self._len} values in {self._path})"


class GroupBuilder:
    """One group's values as they arrive in chunks: a list while its memory is granted,
    else a file of its own, written chunk by chunk."""

    def __init__(self, files: SpillFiles, memory: Any, task_id: int) -> None:
        self.files = files
        self.grant = ExecutionGrant(memory, task_id)
        self.values: list = []
        self.count = 0
        self._writer = None
        self._per_value = 0.0

    def extend(self, chunk: list) -> None:
        if not chunk:
            return
        self.count += len(chunk)
        if self._writer is not None:
            self._writer.append(chunk)
            return
        if not self._per_value:
            step = max(1, len(chunk) // 8)
            sample = chunk[::step]
            self._per_value = sum(estimate_size(v, 3) for v in sample) / len(sample) + _POINTER
        self.values.extend(chunk)
        if len(self.values) >= CHUNK and not self.grant.cover(int(len(self.values) * self._per_value)):
            self._writer = self.files.writer()
            for i in range(0, len(self.values), CHUNK):
                self._writer.append(self.values[i: i + CHUNK])
            self.values = []
            self.grant.release()

    def finish(self) -> "list | SpilledGroup":
        """The group; its memory goes back to the task (a list belongs to the output now)."""
        self.grant.release()
        if self._writer is None:
            return self.values
        path = self._writer.close()
        return SpilledGroup(self.files, path, self.count)


class ExternalGrouper:
    """Groups ``(key, value)`` pairs (``(key, (side, value))`` for a cogroup) within the
    task's execution memory; see the module's text."""

    def __init__(self, grouping: Grouping, memory: Any, task_id: int, spill_dir: str,
                 on_spill: Callable[[int], None] | None = None) -> None:
        self.width = grouping.width
        self._slots = max(1, grouping.width)
        self.data: dict = {}
        self.values = 0
        self.grant = ExecutionGrant(memory, task_id)
        self.files = SpillFiles(spill_dir, on_spill)
        self.runs: list[str] = []
        self._sampled: collections.deque = collections.deque(maxlen=16)
        self._tracker = SizeTracker(self.estimated_size)

    @property
    def spilled_bytes(self) -> int:
        return self.files.spilled_bytes

    def estimated_size(self) -> int:
        """The dict's table, plus per key its lists, plus per value its pointer and the
        mean deep size of sampled keys and values: counted by values, not by keys, so a
        hot key's long list weighs what it holds."""
        if not self._sampled:
            return sys.getsizeof(self.data)
        k_bytes = sum(estimate_size(k, 3) for k, _ in self._sampled) / len(self._sampled)
        v_bytes = sum(estimate_size(v, 3) for _, v in self._sampled) / len(self._sampled)
        return int(sys.getsizeof(self.data) + len(self.data) * (k_bytes + _KEY_SLOT + self._slots * (_LIST_SLOT + 8))
                   + self.values * (v_bytes + _POINTER))

    def _value_bytes(self) -> float:
        """A value's mean size with its pointer (the last sample's, else a small record's)."""
        if not self._sampled:
            return 64.0
        return sum(estimate_size(v, 3) for _, v in self._sampled) / len(self._sampled) + _POINTER

    def insert(self, pairs: Any) -> None:
        data, slots, tagged = self.data, self._slots, self.width > 0
        since = 0
        for k, v in pairs:
            side, x = v if tagged else (0, v)
            lists = data.get(k)
            if lists is None:
                lists = data[k] = tuple([] for _ in range(slots))
            lists[side].append(x)
            since += 1
            if since >= CHECK_EVERY:
                self.values += since
                self._sampled.append((k, x))
                if not self.grant.cover(self._tracker.estimate(since)):
                    self._spill()
                    data = self.data
                since = 0
        self.values += since
        if since:
            self._tracker.estimate(since)

    def _sorted_chunks(self) -> Iterator[tuple]:
        """What the grouper holds, as ``(hash, key, side, chunk)`` in hash order."""
        for h, k, lists in sorted(((portable_hash(k), k, lists) for k, lists in self.data.items()),
                                  key=lambda t: t[0]):
            for side, values in enumerate(lists):
                for i in range(0, len(values), CHUNK):
                    yield h, k, side, values[i: i + CHUNK]

    def _spill(self) -> None:
        self.runs.append(self.files.write_run(self._sorted_chunks(), weight=_values_in))
        self.data = {}
        self.values = 0
        self.grant.release()
        self._tracker.reset()

    def groups(self) -> Iterator[tuple[Any, Any]]:
        """Every key once with its group (a tuple of groups for a cogroup); run files are
        removed once read, group files live with their SpilledGroup."""
        try:
            if not self.runs:
                for k, lists in self.data.items():
                    yield k, self._shape(list(lists))
                return
            if self.data:  # the last part too, so that the merge holds chunks alone and the
                self._spill()  # builders check their memory out of a released grant
            # the merge holds one chunk of each run: checked out first, the builders get the rest
            self.grant.cover(len(self.runs) * CHUNK * self._value_bytes())
            runs = [self.files.read(p) for p in self.runs]
            merged = heapq.merge(*runs, key=lambda t: t[0])
            for _, chunks in itertools.groupby(merged, key=lambda t: t[0]):
                found: list[tuple[Any, list[GroupBuilder]]] = []
                for _, k, side, chunk in chunks:
                    for key, builders in found:
                        if key == k:
                            break
                    else:
                        builders = [GroupBuilder(self.files, self.grant.memory, self.grant.task_id)
                                    for _ in range(self._slots)]
                        found.append((k, builders))
                    builders[side].extend(chunk)
                for k, builders in found:
                    yield k, self._shape([b.finish() for b in builders])
        finally:
            self.data = {}
            for p in self.runs:
                self.files.remove(p)
            self.runs = []
            self.grant.release()

    def _shape(self, groups: list) -> Any:
        return groups[0] if self.width == 0 else tuple(groups)
