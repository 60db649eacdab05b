"""Where an executor holds a block it reports: in its memory, or on its disk (a tier's
file, a mapped extent, or its node's store). The block master keeps it per executor and
prefers a holder with the block in memory; a task that reads the block from another
executor reads a disk copy straight from its file and fetches a memory copy from the
holder (``peer_blocks.py``).

A ``str`` enum: it travels in every task outcome (pickled by name) and its value is
what the events say (``where="memory"``).
"""

from __future__ import annotations

from enum import Enum

__all__ = ["BlockLocation"]


class BlockLocation(str, Enum):
    """Where an executor holds a block (``peer_blocks.locate``)."""

    #: in the executor's memory store (deserialized or serialized)
    MEMORY = "memory"
    #: in a file of the executor's (a disk tier, a mapped extent) or of its node's store
    DISK = "disk"

    def __str__(self) -> str:
        return self.value
