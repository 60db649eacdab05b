"""Shuffle: map outputs written by executors and read by reduce tasks."""

from strataflow.shuffle.aggregator import Aggregator, ExternalAggregator, SpillCorrupt
from strataflow.shuffle.files import FetchFailed, MapOutput
from strataflow.shuffle.manager import MapOutputTracker, ShuffleWriter, read_buckets, split_into_buckets

__all__ = ["Aggregator", "ExternalAggregator", "FetchFailed", "MapOutput", "MapOutputTracker", "ShuffleWriter",
           "SpillCorrupt", "read_buckets", "split_into_buckets"]
