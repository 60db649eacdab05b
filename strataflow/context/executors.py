"""The executors and their caches, seen from the driver: which backend and executors run the
tasks, the threads backend's own block manager, memory and stores (for tests and
debugging), and the cache's figures summed over the executors (``storage_status``,
``metrics``, ``measure_tiers``).

Why a mixin of its own: these only ask the executors (through the fleet) and report; they
change nothing the driver keeps, so they read apart from its start and stop
(:mod:`strataflow.context.core`, which assembles ``Context`` from this and its siblings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strataflow.config import parse_size
from strataflow.executor.messages import GetMetrics, GetStorageStatus, MeasureTiers
from strataflow.storage.status import StorageStatus, merge_metrics, merge_status

if TYPE_CHECKING:
    from strataflow.config import Config
    from strataflow.executor.fleet import Fleet

__all__ = ["ExecutorViews"]


class ExecutorViews:
    """``Context``'s executors and cache figures (needs ``config``, ``fleet``, ``scheduler``,
    ``sources``, ``policy_flags``, ``_local_executor`` and ``_registry``, which the
    Context's constructor sets)."""

    config: "Config"
    fleet: "Fleet"

    # -- executors ---------------------------------------------------------------------------
    @property
    def backend(self) -> str:
        """Where tasks run: ``processes``, ``threads`` or ``ray`` (the ``backend`` argument, or its
        default).

        >>> ctx.backend
        'threads'
        """
        return self.config.backend

    def executors(self) -> list[str]:
        """The ids of the live executors.

        >>> ctx.executors()  # the threads backend has one executor, in this process
        ['0']
        """
        return [h.executor_id for h in self.fleet.live()]

    def _local(self, what: str):
        if self._local_executor is None:
            raise RuntimeError(f"Context.{what}: with the {self.config.backend} backend each executor has its own; "
                               f"use storage_status() and metrics() (by_executor=True), or backend='threads'")
        return self._local_executor.runtime

    @property
    def block_manager(self):
        """The threads backend's one block manager (for tests and debugging).

        >>> ctx.block_manager.memory is ctx.memory
        True
        """
        return self._local("block_manager").block_manager

    @property
    def memory(self):
        """The threads backend's memory manager: the unified budget for execution and storage (for
        tests and debugging).

        >>> ctx.memory.total == 256 * 2**20
        True
        """
        return self._local("memory").memory

    @property
    def regions(self):
        """The threads backend's region store, where the mapped levels (``DISK_MMAP``...) keep their
        blocks (for tests and debugging).

        >>> ctx.regions.bytes_on_disk >= 0
        True
        """
        return self._local("regions").regions

    @property
    def disk_store(self):
        """The threads backend's store of blocks on disk, its tiers fastest first (for tests and
        debugging; other backends keep one per executor).

        >>> [tier.name for tier in ctx.disk_store.tiers]
        ['disk']
        """
        return self._local("disk_store").disk_store


    # -- the cache, seen from outside --------------------------------------------------------
    @property
    def policy(self) -> str:
        """The name of the cache's eviction policy (the ``policy`` argument; ``lineage`` by default).

        >>> ctx.policy
        'lineage'
        """
        return self.policy_flags.name

    def storage_status(self, by_executor: bool = False) -> "StorageStatus | dict[str, StorageStatus]":
        """One entry per persisted dataset: name, level, partitions and bytes in memory and
        on disk (``tier_bytes``: per disk tier), summed over the executors; the list's
        ``tiers`` describes each tier (capacity, bytes used, blocks, hits, bandwidth),
        ``tier_bytes`` and ``tier_hits`` give memory and every tier. ``str()`` of the list
        is a readable table. ``by_executor=True``: executor id -> its own list.

        >>> ds = ctx.parallelize(range(4), 2).set_name("points").cache()
        >>> _ = ds.count()
        >>> [(s.name, s.level, s.memory_partitions) for s in ctx.storage_status()]  # doctest: +ELLIPSIS
        [('points#...', 'MEMORY_ONLY', 2)]
        >>> _ = ds.unpersist()
        """
        answers = self.fleet.ask_all(GetStorageStatus())
        if by_executor:
            return answers
        registered = [(d.id, d.label, d.storage_level.name, d.num_partitions)
                      for d in sorted(self._registry.values(), key=lambda d: d.id) if d.storage_level.is_valid]
        return merge_status(list(answers.values()), registered)

    def measure_tiers(self, size: int | str = "64MB") -> dict[str, dict]:
        """Measures each disk tier's sequential bandwidth, cold and warm (the probe of
        ``strataflow probe DIR``), writing ``size`` bytes to each (on the first executor:
        they share the devices); a tier without a configured bandwidth takes the cold read
        figure. Returns name -> measurements.

        >>> measured = ctx.measure_tiers("1MB")
        >>> sorted(measured), sorted(measured["disk"])
        (['disk'], ['cold', 'warm'])
        """
        n = parse_size(size, "size")
        live = self.fleet.live()
        return live[0].call(MeasureTiers(n), timeout=None) if live else {}

    def metrics(self, by_executor: bool = False) -> dict:
        """Totals for the application: cache hits, misses, drops, re-caches, disk bytes,
        (de)serialization and GC seconds (the same per job and stage are in the events),
        summed over the executors (``by_executor=True``: executor id -> its own figures;
        peaks are summed too, an upper bound of the peak of the sum).

        Tiers: ``tier_bytes`` and ``tier_hits`` map ``memory`` and each disk tier (and
        ``mapped`` for the region store's hits) to bytes held and blocks served;
        ``bytes_moved_between_tiers``, ``blocks_moved_down``/``_up`` count moves between
        disk tiers (memory to disk is ``bytes_dropped``, disk to memory
        ``bytes_recached`` and ``bytes_prefetched``). Eviction: ``sync_evictions`` (blocks
        dropped on a task's thread), ``async_evictions`` (by the background writer),
        ``eviction_failures``, ``eviction_wait_s`` (time puts waited for the writer);
        prefetch: ``blocks_prefetched``, ``bytes_prefetched``, ``prefetch_scans`` (scans of the
        disk blocks for candidates; after an empty one they back off until memory is freed),
        ``prefetches_discarded`` (blocks a prefetch read and decoded, then could not store:
        work on the writer's thread, beside the tasks, that bought nothing).
        Shuffle on a cluster: ``shuffle_remote_fetches`` and ``shuffle_remote_bytes_read``
        (buckets a reduce task fetched from the executor that wrote them, on another node).
        Executors: ``executors`` (live), ``executors_lost``. Source slices (``parallelize``,
        ``from_numpy``, broadcasts, as the driver's store wrote them): ``source_slices_lost``
        (an executor could not use a slice's file), ``source_slices_rewritten`` (the driver
        wrote it again), ``source_slices_sent`` (the driver sent a slice itself).
        The shared store: ``store_hits``, ``store_puts`` and their bytes (``StorageLevel.STORE``
        blocks), and once the application used it, ``store`` (``ContextStore.figures``).

        >>> ds = ctx.parallelize(range(4), 2).cache()
        >>> _ = ds.count(); before = ctx.metrics()["memory_hits"]
        >>> _ = ds.count(); ctx.metrics()["memory_hits"] - before
        2
        >>> _ = ds.unpersist()
        """
        answers = self.fleet.ask_all(GetMetrics())
        if by_executor:
            return answers
        out = merge_metrics(list(answers.values()), self.scheduler.totals.retired())
        out.update(executors=len(answers), executors_lost=len(self.fleet.lost), **self.sources.counts)
        out.update(self._store_metrics())  # type: ignore[attr-defined]
        return out

