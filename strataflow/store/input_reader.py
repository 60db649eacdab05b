"""An executor's input cache: serves a reader's partition from the store when its key is
there, and otherwise decodes it and hands it to a writer thread, off the task's path
(issue 53; ``inputs.py`` is the store's side, ``io/cached_input.py`` the reader's).

Write-behind. The task returns the value it decoded at once; the writer thread writes the
block and publishes its entry afterwards. The writer holds one partition at a time: a task
that decodes another while it writes waits for it to finish before handing it over, which
happens only when the device writes slower than the readers decode (a page-cache write of a
table runs at GB/s, a CSV parse at about 0.2 GB/s per core). The memory this costs beyond
the budget, per executor: the one partition kept alive for the writer, and while it is
written, its copy into whole columns (a parser's table comes a chunk per MB): two decoded
partitions, each at most a split's decode (``MAX_SPLIT``, 32 MiB of text); the stated
ceiling counts them (``docs/caching.md``). ``close``
(the executor's end) waits for the queue to drain, so that the next application finds what
this one read; a process killed first leaves nothing visible (``inputs.put_input``).

What it counts (the executor's part of ``ctx.metrics()``): ``input_hits``,
``input_misses``, ``input_bytes_read`` (mapped from the store), ``input_bytes_written``,
``input_parse_s`` (decoding on misses), ``input_parse_s_saved`` (the decode seconds the
hits' entries recorded), ``input_uncacheable``, ``input_write_failures``; and per input
path, ``inputs``: the same, plus the reason a file was not cacheable. Each partition read
posts an ``InputRead`` event (``result``: hit, miss, uncacheable).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

from strataflow.storage.backed import note as note_backed
from strataflow.store.errors import BlockCorrupt
from strataflow.store.inputs import InputEntry, get_input, put_input, taken
from strataflow.store.root import StoreRoot, default_root
from strataflow.store.source import root_for

__all__ = ["InputCache", "PENDING"]

_log = logging.getLogger(__name__)

#: decoded partitions the writer thread may hold at once
PENDING = 1
_STOP = object()


class InputCache:
    """The input cache of one executor process (see the module's docstring)."""

    def __init__(self, root: str | None, mode: str, metrics: Any, events: Any, app: str = "") -> None:
        self.root_path = root
        #: ``input_cache``: "on", "auto" or "off" (``CachedInput.wanted``)
        self.mode = mode
        self.metrics = metrics
        self.events = events
        self.app = app
        self._root: StoreRoot | None = None
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._slots = threading.Semaphore(PENDING)  # taken by a hand-over, given back once written
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._per: dict[str, dict] = {}

    @property
    def root(self) -> StoreRoot:
        if self._root is None:
            self._root = root_for(self.root_path if self.root_path is not None else default_root())
        return self._root

    # -- reading ------------------------------------------------------------------------------
    def read(self, source: Any, split: int, tc: Any) -> Any:
        """The split's value: from the store when cached, else decoded (and cached behind)."""
        k = source.input_key(split)
        if k.key is None:
            self._count(k.path, "uncacheable", reason=k.reason)
            self.events.post("InputRead", path=k.path, reader=k.reader, part=k.part, result="uncacheable",
                             reason=k.reason)
            return source.decode(split, tc)[0]
        try:
            got = get_input(self.root, k.key, self.app)
        except BlockCorrupt as exc:  # removed by get_input: decoded again, and said so
            _log.warning("input cache: %s; decoding the input again", exc)
            self._count(k.path, "corrupt")
            got = None
        if got is not None:
            value, entry = got
            source.replay(split, entry.meta)
            note_backed(value)  # a persist of it keeps no disk copy (storage/backed.py)
            self._count(k.path, "hits", bytes_read=entry.nbytes, parse_s_saved=entry.parse_s)
            self.events.post("InputRead", path=k.path, reader=k.reader, part=k.part, result="hit", bytes=entry.nbytes,
                             parse_s_saved=entry.parse_s)
            return value
        t0 = time.perf_counter()
        value, meta = source.decode(split, tc)
        parse_s = time.perf_counter() - t0
        self._count(k.path, "misses", parse_s=parse_s)
        self.events.post("InputRead", path=k.path, reader=k.reader, part=k.part, result="miss", parse_s=parse_s)
        if k.still():
            entry = InputEntry(key=k.key, path=k.path, reader=k.reader, part=k.part, parse_s=parse_s, app=self.app,
                               meta=meta)
            self._write_behind(entry, value)
        return value

    # -- writing ------------------------------------------------------------------------------
    def _write_behind(self, entry: InputEntry, value: Any) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._writer, name="input-cache-writer", daemon=True)
                self._thread.start()
        self._slots.acquire()
        self._queue.put((entry, value))

    def _writer(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                entry, value = item
                del item
                try:
                    self._write(entry, value)
                finally:
                    del value
                    self._slots.release()
            finally:
                self._queue.task_done()

    def _write(self, entry: InputEntry, value: Any) -> None:
        try:
            done = put_input(self.root, entry, value)
        except Exception as exc:  # noqa: BLE001 - a full or read-only device: not cached, said so
            _log.warning("input cache: %s (%s) not cached: %s: %s", entry.path, entry.part, type(exc).__name__, exc)
            self._count(entry.path, "write_failures", reason=f"{type(exc).__name__}: {exc}")
            return
        if done is not None:
            self._count(entry.path, "writes", bytes_written=done.nbytes)
        elif not taken(self.root, entry.key):
            self._count(entry.path, "full", reason="no tier of the store had room for it")

    def close(self) -> None:
        """Drains the writer (the next application finds what this one read), then stops it."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(_STOP)
            thread.join()

    # -- figures ------------------------------------------------------------------------------
    _TOTALS = {"hits": "input_hits", "misses": "input_misses", "uncacheable": "input_uncacheable",
               "write_failures": "input_write_failures", "corrupt": "input_corrupt", "writes": "input_writes",
               "full": "input_not_stored"}
    _SUMS = {"bytes_read": "input_bytes_read", "bytes_written": "input_bytes_written", "parse_s": "input_parse_s",
             "parse_s_saved": "input_parse_s_saved"}

    def _count(self, path: str, what: str, reason: str = "", **sums: float) -> None:
        deltas = {self._TOTALS[what]: 1} if what in self._TOTALS else {}
        deltas.update({self._SUMS[k]: v for k, v in sums.items()})
        self.metrics.add(**deltas)
        with self._lock:
            per = self._per.setdefault(path, {})
            per[what] = per.get(what, 0) + 1
            for k, v in sums.items():
                per[k] = per.get(k, 0) + v
            if reason:
                per["reason"] = reason

    def figures(self) -> dict:
        """Per input path: hits, misses, writes, bytes and seconds (``ctx.metrics()["inputs"]``)."""
        with self._lock:
            return {p: dict(v) for p, v in self._per.items()}
