"""The cache's counters: one thread-safe bag of named figures per block manager, read as
totals (``Context.metrics()``) and as differences per stage and job (the events)."""

from __future__ import annotations

import threading

__all__ = ["CacheMetrics", "METRIC_KEYS"]

METRIC_KEYS = (
    "memory_hits", "disk_hits", "misses", "blocks_dropped", "bytes_dropped", "blocks_recached",
    "bytes_recached", "disk_bytes_written", "disk_bytes_read", "serialize_s", "deserialize_s",
    "blocks_discarded", "blocks_not_stored", "blocks_lost", "mmap_released_bytes", "gc_frozen_puts",
    # tiers, asynchronous eviction and prefetch
    "bytes_moved_between_tiers", "blocks_moved_down", "blocks_moved_up", "sync_evictions", "async_evictions",
    "eviction_failures", "blocks_prefetched", "bytes_prefetched", "prefetch_scans",
    "prefetches_discarded",
    # a task's second read of the block it read last, served from the value it holds
    "task_rereads",
    # blocks another executor held, read by this one's tasks; blocks this one served to others
    "peer_hits", "peer_bytes_read", "peer_blocks_served",
    # AUTO datasets: how often an executor chose or changed a dataset's level, and puts of
    # blocks of dropped AUTO datasets kept out of memory by cost (``cost_admission.py``)
    "auto_level_changes", "auto_cost_bypasses",
    # the dynamic memory split: moves, and bytes moved to each side
    "memory_split_moves", "memory_split_bytes_to_heap", "memory_split_bytes_to_mapped",
    # StorageLevel.STORE: blocks read from and written to the shared store
    "store_hits", "store_bytes_read", "store_puts", "store_bytes_written",
    # seconds in the disk tiers' writes and reads (file I/O and checksums, summed over
    # threads): bytes over them is the rate one task saw its device give (``bench scale``)
    "disk_write_s", "disk_read_s",
    # the store's input cache (``store/input_reader.py``): partitions of files served from
    # it or decoded, bytes, and decode seconds spent and saved
    "input_hits", "input_misses", "input_uncacheable", "input_writes", "input_write_failures", "input_corrupt",
    "input_not_stored",
    "input_bytes_read", "input_bytes_written", "input_parse_s", "input_parse_s_saved",
    # persisted blocks mapped from the input cache, dropped or not stored rather than copied to disk
    "blocks_backed_by_store",
)


class CacheMetrics:
    """Counters of the cache, thread-safe; ``snapshot()`` for totals and differences."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._c: dict[str, float] = dict.fromkeys(METRIC_KEYS, 0)
        self._tier_hits: dict[str, int] = {}

    def add(self, **deltas: float) -> None:
        with self._lock:
            for k, v in deltas.items():
                self._c[k] += v

    def hit(self, tier: str) -> None:
        """A block served from ``tier`` (``memory`` or a disk tier's name)."""
        with self._lock:
            self._tier_hits[tier] = self._tier_hits.get(tier, 0) + 1

    def tier_hits(self) -> dict[str, int]:
        with self._lock:
            return dict(self._tier_hits)

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return dict(self._c)

    @staticmethod
    def diff(after: dict, before: dict) -> dict:
        return {k: after[k] - before.get(k, 0) for k in after}
