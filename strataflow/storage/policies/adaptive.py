"""``adaptive``: no re-caching thrash, but memory freed later is used again.

Zhang et al. note the cost of their fix: a block read from disk never returns to memory,
so memory freed later (an unpersisted dataset, execution memory given back) stays empty.
This policy promotes a block read from disk only when memory has room for it *without
evicting anything*: under pressure it behaves as ``no-recache`` (nothing bounces), and
as soon as room appears the hottest blocks (those being read) move up.
"""

from __future__ import annotations

from typing import Any

from strataflow.storage.policies.base import Promotion
from strataflow.storage.policies.no_recache import NoRecachePolicy

__all__ = ["AdaptivePolicy"]


class AdaptivePolicy(NoRecachePolicy):
    name = "adaptive"

    def promote(self, block_id: Any, size: int) -> Promotion:
        return Promotion.INTO_FREE
