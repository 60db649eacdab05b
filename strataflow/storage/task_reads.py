"""The task re-read rule, in one place.

A task that reads the same persisted block twice in a row gets the value it was handed
the first time (read-only, so sharing it is safe). K-means reads each points block, then
derives the persisted norms from it in the same task: the second read mapped and
checksummed the block again (or, under Spark's policy, counted a hit on the copy it had
just re-cached), and to a future-aware policy it looked like a block worth keeping in
memory for one more hit. Only the last block is held, and only until the task ends: a
task already holds the blocks it is working on, so the memory a running task can pin
beyond the budget is unchanged.

The block manager applies the rule (``get_or_compute(..., held=task.held)``); the
scheduler's plan of a stage's reads replays it with the same object, so the policy is
told exactly the reads the cache will see.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HeldBlock"]


class HeldBlock:
    """The persisted block a task read last and the value it was handed."""

    __slots__ = ("block_id", "value")

    def __init__(self) -> None:
        self.block_id: Any = None
        self.value: Any = None

    def serves(self, block_id: Any) -> bool:
        """Whether a read of ``block_id`` now is served from here, not the cache."""
        return self.block_id is not None and self.block_id == block_id

    def hold(self, block_id: Any, value: Any = None) -> None:
        self.block_id, self.value = block_id, value

    def release(self) -> None:
        """The task ended (or the plan moves to the next task): nothing is held."""
        self.block_id = self.value = None
