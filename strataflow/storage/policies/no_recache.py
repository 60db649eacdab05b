"""``no-recache``: the fix of Zhang et al. 2017 (Sec. III-E, Fig. 8).

Spark's MEMORY_AND_DISK puts every block it reads back from disk into memory again,
evicting another block to disk, so under memory pressure the same blocks bounce between
memory and disk on every iteration (the paper's Table III: GBs dropped for a cache of
hundreds of MB). The fix: a block read from disk is served from disk and stays there;
it is not re-cached, neither on a later read nor right after the put that spilled it.
Everything else is Spark's policy.
"""

from __future__ import annotations

from typing import Any

from strataflow.storage.policies.base import Promotion
from strataflow.storage.policies.spark import SparkPolicy

__all__ = ["NoRecachePolicy"]


class NoRecachePolicy(SparkPolicy):
    name = "no-recache"
    recache_after_spill = False

    def promote(self, block_id: Any, size: int) -> Promotion:
        return Promotion.NO
