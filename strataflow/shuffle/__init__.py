"""Shuffle: map outputs written by executors and read by reduce tasks."""

from strataflow.shuffle.aggregator import Aggregator, ExternalAggregator, SpillCorrupt
from strataflow.shuffle.files import FetchFailed, MapOutput
from strataflow.shuffle.manager import (MapOutputTracker, ShuffleWriter, read_buckets, split_into_buckets,
                                        split_nonempty)
from strataflow.shuffle.reads import ShuffleReads
from strataflow.shuffle.external_sort import ExternalSorter, SortOrder
from strataflow.shuffle.spillable_group import ExternalGrouper, Grouping, SpilledGroup

__all__ = ["Aggregator", "ExternalAggregator", "ExternalGrouper", "ExternalSorter", "Grouping", "SortOrder",
           "SpilledGroup", "FetchFailed", "MapOutput", "MapOutputTracker", "ShuffleWriter",
           "ShuffleReads", "SpillCorrupt", "read_buckets", "split_into_buckets", "split_nonempty"]
