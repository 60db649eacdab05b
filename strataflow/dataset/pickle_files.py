"""Pickle files: ``save_as_pickle_file`` writes records, ``Context.pickle_file`` reads them.

The format is strataflow's own (PySpark writes Hadoop SequenceFiles of pickles, which need
the JVM to read): a directory of ``part-NNNNN`` files, one per partition, each a stream of
pickled lists of up to ``batch_size`` records, and ``_SUCCESS`` once every part is
written. Each part is written to a temporary name and renamed, so a reader never sees half
a file. Reading makes one partition per part file.
"""

from __future__ import annotations

import os
import pickle
from typing import TYPE_CHECKING, IO, Any, Callable, Sequence

from strataflow.common.batch import iter_rows
from strataflow.io.output_files import open_output
from strataflow.io.paths import OutputDir, resolve_files, split_paths
from strataflow.io.sources import InputError
from strataflow.lineage import SourceNode
from strataflow.common.private_file import atomic_write

if TYPE_CHECKING:
    from strataflow.context import Context
    from strataflow.executor.task import TaskContext

__all__ = ["PickleFileOps", "PickleFileSource", "write_atomically"]


def write_atomically(path: str, write: Callable[[IO[bytes]], None], private: bool = False) -> None:
    """``write(file)`` to a temporary file beside ``path``, then renamed to ``path``: a
    user's output (at most 0644, ``io/output_files.py``), or with ``private`` one of the
    engine's own (0600: a checkpoint, which the engine unpickles)."""
    if private:
        with atomic_write(path) as f:
            write(f)
        return
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with os.fdopen(open_output(tmp), "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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


def open_pickle_file(ctx: "Context", path: "str | os.PathLike | Sequence[str | os.PathLike]",
                     recursive: bool = False) -> Any:
    from strataflow.dataset import Dataset

    return Dataset(ctx, PickleFileSource(path, recursive), "pickle_file")


class PickleFileOps:
    """``save_as_pickle_file``, a mixin of Dataset."""

    def save_as_pickle_file(self, path: str | os.PathLike, batch_size: int = 10) -> None:
        """Writes the records as pickles (``Context.pickle_file`` reads them back), in
        lists of ``batch_size`` records (0 or less: one list per partition).

        >>> ctx.parallelize([{"a": 1}, None]).save_as_pickle_file(tmp_dir + "/records")
        >>> ctx.pickle_file(tmp_dir + "/records").collect()
        [{'a': 1}, None]
        """
        out = OutputDir.create(path, "save_as_pickle_file")

        def write(i, v):
            def dump(f):
                batch: list = []
                for x in iter_rows(v):
                    batch.append(x)
                    if 0 < batch_size <= len(batch):
                        pickle.dump(batch, f, protocol=pickle.HIGHEST_PROTOCOL)
                        batch = []
                if batch:
                    pickle.dump(batch, f, protocol=pickle.HIGHEST_PROTOCOL)

            with out.atomic_file(f"part-{i:05d}") as f:
                dump(f)
            return [1]

        self.map_partitions_with_index(write)._run(len, description=f"save_as_pickle_file {self.label}")
        out.touch("_SUCCESS")
