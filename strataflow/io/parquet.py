"""Parquet files: row groups as the unit of partitioning, each partition a pyarrow Table.

A partition reads a contiguous run of row groups (never splitting one, as Spark's reader
splits on row-group boundaries), so partition counts are at most the number of row
groups; columnar, typed and already binary, Parquet needs no parsing.
"""

from __future__ import annotations

import os
from typing import Any

from ..config import ConfigError
from ..lineage import SourceNode
from .sources import slice_bounds

__all__ = ["ParquetSource"]


class ParquetSource(SourceNode):
    def __init__(self, path: str, num_partitions: int, columns: list[str] | None = None) -> None:
        import pyarrow.parquet as pq

        if not os.path.isfile(path):
            raise ConfigError(f"parquet_file: file {path!r} does not exist")
        self.path = path
        self.columns = columns
        groups = pq.ParquetFile(path).metadata.num_row_groups
        self.bounds = [b for b in slice_bounds(groups, min(num_partitions, max(1, groups)))]
        self.num_partitions = len(self.bounds)

    def compute(self, split: int, tc: Any):
        import pyarrow.parquet as pq

        a, b = self.bounds[split]
        with pq.ParquetFile(self.path) as f:
            if a == b:
                return f.schema_arrow.empty_table()
            return f.read_row_groups(list(range(a, b)), columns=self.columns, use_threads=False)

    def describe(self) -> str:
        return self.path
