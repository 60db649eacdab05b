"""The policy contract: what the block manager asks a cache policy, and what it may do.

A policy sees every access and makes four decisions; everything else (stores, bytes,
locks, disk writes, the headroom an eviction writer keeps) is the block manager's.
Keeping the contract this small is what lets each policy (Spark's LRU, the paper's fix,
adaptive promotion, future-aware eviction) be one small module, and lets the simulator
(``strataflow simulate``) drive the very same objects with bytes instead of values.

The calls, and the rules each one follows:

==========================  =====================  ==========================================
call                        memory lock held?      may it ...
==========================  =====================  ==========================================
``record_access(b, where)`` yes for ``"memory"``   update its own state only. ``where`` is
                            and ``"put"``, no for  ``"memory"`` (hit), ``"disk"`` (disk hit)
                            ``"disk"``             or ``"put"`` (the block entered memory)
``record_remove(b)``        yes                    update its own state only
``select_victims(...)``     yes                    read its state; name blocks, never drop
                                                   them (the manager does, outside the lock)
``admit(b, size)``          no                     say whether a computed block may try
                                                   memory at all
``promote(b, size)``        no                     answer a :class:`Promotion`
``plan(blocks)``            no                     replace its knowledge of the future
                                                   (only called when ``plans`` is True)
``prefetch_candidates``     no                     name disk blocks to load into ``free``
                                                   bytes (only called when ``prefetches``)
``forget_dataset(d)``       no                     drop all it knows of ``d``'s blocks
==========================  =====================  ==========================================

A policy never calls back into the block manager or the memory manager, so it cannot be
part of a lock-order cycle; a policy that is called from several threads (every policy
is: tasks run in parallel) guards its state with its own lock where a call is not under
the memory lock.

Capabilities are flags, not guessed from overridden methods: ``plans`` (wants the
scheduler's plan of each stage), ``prefetches`` (offers prefetch candidates),
``recache_after_spill`` (Spark's ``getOrElseUpdate`` reads a block it just spilled back
and tries memory again).

``reserve`` is set by the block manager, which owns it: the bytes of free memory that are
not free for promotions (the headroom a background eviction writer keeps: a block
promoted into it is written out again at once). ``prefetch_candidates`` is already given
free memory less the reserve; a policy may read ``reserve`` to decline promotions into
free memory it knows nothing useful about.
"""

from __future__ import annotations

import abc
import enum
from typing import Any, Mapping, Sequence

__all__ = ["Policy", "Promotion"]


class Promotion(enum.Enum):
    """The answer to ``promote``: may a block just read from disk go back into memory?"""

    NO = "no"
    INTO_FREE = "into-free"  # only into free memory (less the reserve): never evicts
    MAY_EVICT = "may-evict"  # by evicting other blocks (``select_victims`` names them)

    def __bool__(self) -> bool:
        return self is not Promotion.NO


class Policy(abc.ABC):
    name = "base"
    plans = False                # ``plan()`` is worth calling
    prefetches = False           # ``prefetch_candidates()`` may name blocks
    recache_after_spill = False  # Spark's read-back of a block its own put spilled
    reserve = 0                  # set by the block manager (see the module docstring)

    def record_access(self, block_id: Any, where: str) -> None:
        """Called on every memory hit, disk hit and memory put."""

    def record_remove(self, block_id: Any) -> None:
        """Called when a block left memory (dropped, unpersisted)."""

    def forget_dataset(self, dataset_id: Any) -> None:
        """The dataset was unpersisted (its blocks already left memory, with a
        ``record_remove`` each): forget whatever is kept about its blocks. A policy that
        remembers blocks beyond their stay in memory must drop them here, or a long-lived
        application that caches a new dataset every iteration grows without end."""

    def sizes(self) -> dict[str, int]:
        """How many entries its per-block and per-dataset structures hold (for
        ``registry_sizes``: a test asserts they do not grow with the iterations)."""
        return {}

    def admit(self, block_id: Any, size: int) -> bool:
        """May a block just computed try memory? (False: straight to disk, or uncached.)"""
        return True

    def promote(self, block_id: Any, size: int) -> Promotion:
        """May a block just read from disk be put back in memory ("re-caching")?"""
        return Promotion.NO

    @abc.abstractmethod
    def select_victims(self, space: int, for_block: Any, entries: Mapping[Any, int]) -> list | None:
        """Blocks (keys of ``entries``, which maps each evictable block in memory to its
        size) to drop so that ``space`` bytes are freed for ``for_block`` (None: execution
        memory or the eviction writer's headroom is asking); None or [] to drop nothing."""

    def plan(self, accesses: Sequence[Any]) -> None:
        """The persisted blocks a stage about to run will read, in task order."""

    def rereads(self, block_id: Any) -> bool:
        """Whether the policy expects the block to be read again and again (a loop): what
        AUTO weighs a spill's one write against. False when it cannot tell."""
        return False

    def prefetch_candidates(self, free: int, on_disk: Mapping[Any, int]) -> list:
        """Blocks of ``on_disk`` (block -> size) to move into ``free`` bytes of memory now,
        never evicting; [] for none."""
        return []
