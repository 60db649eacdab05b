"""An opened dataset's source that counts its reads for the store's figures: each block a
task reads counts as a hit of the reading application (``stats.count_app``), in the
executor that read it, so ``strataflow store status`` can say which applications read
which datasets, however many processes they ran."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strataflow.store.source import StoreSource
from strataflow.store.stats import count_app

if TYPE_CHECKING:
    from strataflow.executor.task import TaskContext

__all__ = ["CountedSource"]


def _nbytes(value: Any) -> int:
    n = getattr(value, "nbytes", None)
    return int(n) if isinstance(n, int) else 0


class CountedSource(StoreSource):
    """``StoreSource`` for application ``app`` (its id): every partition read is counted."""

    def __init__(self, root: str, name: str, dataset_id: str, num_partitions: int, kinds: list[str],
                 app: str = "") -> None:
        super().__init__(root, name, dataset_id, num_partitions, kinds)
        self.app = app

    def compute(self, split: int, tc: "TaskContext | None") -> Any:
        value = super().compute(split, tc)
        count_app(self.root, self.app, self.name, block_reads=1, bytes_read=_nbytes(value))
        return value
