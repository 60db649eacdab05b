"""Datasets of data the driver holds: ``parallelize`` (a collection, a range, an Arrow
table, a DataFrame), ``from_pandas``, ``from_arrow``, ``range``, ``from_numpy``, the union
of datasets and the empty dataset, and the partition count such a source gets by default.

Why a mixin of its own: a source is a pure function of its arguments and the Context's
partition settings; it starts nothing and keeps nothing, so it reads apart from the
driver's wiring (:mod:`strataflow.context.core`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

import numpy as np
import pyarrow as pa

from strataflow.common.batch import check_rows, is_dataframe
from strataflow.common.checks import check_partition_count
from strataflow.dataset import Dataset
from strataflow.io.frames import arrow_source, pandas_source, require_pandas
from strataflow.io.sources import RangeSource, collection_source, numpy_source

if TYPE_CHECKING:
    from strataflow.config import Config

__all__ = ["DataSources"]


class DataSources:
    """``Context``'s sources of in-memory data (needs ``config``)."""

    config: "Config"

    @property
    def default_parallelism(self) -> int:
        """Partitions of a source made without a count: ``default_parallelism`` when set,
        else ``parallelism`` (Spark's ``sc.defaultParallelism``: ``spark.default.parallelism``,
        else the cores of ``local[N]``).

        >>> ctx.default_parallelism, ctx.parallelize(range(10)).num_partitions
        (2, 2)
        """
        cfg = self.config
        return cfg.parallelism if cfg.default_parallelism is None else cfg.default_parallelism


    def _num(self, n: int | None) -> int:
        return self.default_parallelism if n is None else check_partition_count(n, most=self.config.max_partitions)


    # -- sources ----------------------------------------------------------------------------
    def parallelize(self, data: Iterable, num_partitions: int | None = None) -> Dataset:
        """A dataset of the given records, cut into contiguous slices. A pyarrow Table or
        RecordBatch, or a pandas DataFrame, gives its rows (as ``from_arrow`` /
        ``from_pandas``: batch partitions whose records are row tuples), never its
        columns; a pyarrow Array or ChunkedArray its values as Python objects. A columnar
        value of another library is refused (``RowsTypeError``): convert it first.

        >>> ds = ctx.parallelize([1, 2, 3, 4, 5], 2)
        >>> ds.collect_partitions()
        [[1, 2], [3, 4, 5]]
        """
        n = self._num(num_partitions)
        if isinstance(data, range):
            return Dataset(self, RangeSource(data, n), "parallelize")
        if isinstance(data, (pa.Table, pa.RecordBatch)):
            return Dataset(self, arrow_source(data, n), "parallelize")
        if is_dataframe(data):
            return Dataset(self, pandas_source(data, n), "parallelize")
        if isinstance(data, (pa.Array, pa.ChunkedArray)):
            data = data.to_pylist()
        check_rows(data, "parallelize's data")
        return Dataset(self, collection_source(list(data), n), "parallelize")

    def from_pandas(self, df: Any, num_partitions: int | None = None) -> Dataset:
        """Rows of a pandas DataFrame in contiguous DataFrame partitions (``df.iloc``
        slices: their index labels and dtypes are kept; ``to_pandas`` gives ``df`` back).
        Records are row tuples in column order, so ``count`` counts rows, ``filter`` keeps
        rows and a two-column frame is a pair dataset (``group_by_key`` works).

        >>> import pandas as pd
        >>> df = pd.DataFrame({"k": ["a", "b", "a"], "v": [1, 2, 3]})
        >>> sorted(ctx.from_pandas(df, 2).reduce_by_key(lambda x, y: x + y).collect())
        [('a', 4), ('b', 2)]
        """
        require_pandas("from_pandas")
        return Dataset(self, pandas_source(df, self._num(num_partitions)), "from_pandas")

    def from_arrow(self, table: Any, num_partitions: int | None = None) -> Dataset:
        """Rows of a pyarrow Table (or RecordBatch) in contiguous Table partitions
        (zero-copy slices); records are row tuples in column order.

        >>> import pyarrow as pa
        >>> ctx.from_arrow(pa.table({"x": [1, 2, 3], "y": ["a", "b", "c"]}), 2).collect()
        [(1, 'a'), (2, 'b'), (3, 'c')]
        """
        return Dataset(self, arrow_source(table, self._num(num_partitions)), "from_arrow")

    def range(self, start: int, stop: int | None = None, step: int = 1, num_partitions: int | None = None) -> Dataset:
        """Integers ``range(start, stop, step)`` (``range(0, start)`` with one argument).

        >>> ctx.range(5).collect(), ctx.range(10, 0, -3).collect()
        ([0, 1, 2, 3, 4], [10, 7, 4, 1])
        """
        if stop is None:
            start, stop = 0, start
        if step == 0:
            raise ValueError("range: step must not be zero")
        return Dataset(self, RangeSource(range(start, stop, step), self._num(num_partitions)), "range")

    def from_numpy(self, array: np.ndarray, num_partitions: int | None = None) -> Dataset:
        """Rows of ``array`` in contiguous ndarray partitions (views, not copies).

        >>> import numpy as np
        >>> points = ctx.from_numpy(np.arange(8.0).reshape(4, 2), 2)
        >>> points.count(), points.map_partitions(lambda block: block.sum(axis=0)).collect_partitions()[0]
        (4, array([2., 4.]))
        """
        return Dataset(self, numpy_source(np.asarray(array), self._num(num_partitions)), "from_numpy")


    def union(self, *datasets: Dataset) -> Dataset:
        """The partitions of every dataset, one after the other (an empty dataset for none).

        >>> ctx.union(ctx.parallelize([1]), ctx.parallelize([2, 3])).collect()
        [1, 2, 3]
        """
        if not datasets:
            return self.empty_dataset()
        return datasets[0].union(*datasets[1:])

    def empty_dataset(self) -> Dataset:
        """A dataset with no partitions and no records.

        >>> ctx.empty_dataset().collect(), ctx.empty_dataset().num_partitions
        ([], 0)
        """
        from strataflow.lineage import ListSource

        return Dataset(self, ListSource([]), "empty_dataset")

