"""Shuffle: map outputs written to the shuffle directories and read by reduce tasks."""

from .aggregator import Aggregator, ExternalAggregator
from .files import FetchFailed
from .manager import ShuffleManager, split_into_buckets

__all__ = ["Aggregator", "ExternalAggregator", "FetchFailed", "ShuffleManager", "split_into_buckets"]
