"""Pickle files, read: the records ``Dataset.save_as_pickle_file`` wrote, as a source node
(``Context.pickle_file``), one partition per part file.

The format is strataflow's own (PySpark writes Hadoop SequenceFiles of pickles, which need
the JVM to read): a directory of ``part-NNNNN`` files, one per partition, each a stream of
pickled lists of up to ``batch_size`` records, and ``_SUCCESS`` once every part is
written. Each part is written to a temporary name and renamed, so a reader never sees half
a file.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

from strataflow.io.paths import resolve_files, split_paths
from strataflow.io.sources import InputError
from strataflow.lineage import SourceNode

if TYPE_CHECKING:
    from strataflow.executor.task import TaskContext

__all__ = ["PickleFileSource"]


class PickleFileSource(SourceNode):
    """The records of a directory written by ``save_as_pickle_file`` (or of one part
    file), one partition per part file."""

    def __init__(self, paths: Any, recursive: bool = False) -> None:
        self.path = ",".join(split_paths(paths))
        self.files = resolve_files(paths, "pickle_file", recursive)
        self.num_partitions = len(self.files)

    def compute(self, split: int, tc: "TaskContext") -> list:
        ref = self.files[split]
        out: list = []
        try:
            with ref.open() as f:
                while True:
                    try:
                        out.extend(pickle.load(f))
                    except EOFError:
                        return out
        except (OSError, pickle.UnpicklingError, ValueError) as exc:
            raise InputError(f"pickle_file: cannot read {ref.name!r}: {exc}") from exc

    def describe(self) -> str:
        return self.path
