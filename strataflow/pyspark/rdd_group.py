"""What every group of RDD methods (``rdd_actions.py``, ``rdd_pairs.py``...) may use of
the RDD it is mixed into, declared once: the wrapped ``Dataset``, the ``SparkContext``, and
``_wrap`` (a Dataset back into an RDD, defined by ``rdd.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from strataflow.dataset import Dataset
    from strataflow.pyspark.context import SparkContext
    from strataflow.pyspark.rdd import RDD

__all__ = ["RDDGroup"]

T = TypeVar("T")


class RDDGroup(Generic[T]):
    """The base of each group of RDD methods."""

    dataset: Dataset
    ctx: SparkContext

    if TYPE_CHECKING:
        def _wrap(self, dataset: Dataset) -> RDD[Any]: ...
