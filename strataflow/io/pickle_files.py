"""Pickle files, read: the records ``Dataset.save_as_pickle_file`` wrote, as a source node
(``Context.pickle_file``), one partition per part file.

The format is strataflow's own (PySpark writes Hadoop SequenceFiles of pickles, which need
the JVM to read): a directory of ``part-NNNNN`` files, one per partition, each a stream of
pickled lists of up to ``batch_size`` records, and ``_SUCCESS`` once every part is
written. Each part is written to a temporary name and renamed, so a reader never sees half
a file.

Warning: loading a pickle file runs code from it. A pickle names functions for ``pickle``
to call as it loads, so whoever can write a file this reader opens (a part file, or any
file a path or glob of ``pickle_file`` matches) runs code in every executor that reads it,
as the application's user. These are the user's files, in the user's format (as PySpark's
``pickleFile``, which has the same hazard and whose docs do not say so): unlike the files
the engine writes for itself and reads back (cache blocks, shuffle files, checkpoints,
source slices, the store's blocks), they carry no keyed tag, since another application,
the one that reads them, has no key of the writer's. Read only files you trust: written
by your own application, into a directory no one else can write. For data to exchange,
use a format that is parsed, not executed (``save_as_parquet``, ``save_as_npy``,
``save_as_text_file``), or the shared store (``ctx.store``), whose blocks are
authenticated with the user's key.
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
    file), one partition per part file. Loading them runs code from them: read only files
    you trust (the module's warning)."""

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
