"""Checkpoints: a dataset's partitions written to files, its lineage cut there.

A long lineage (an iterative job's hundredth step) is slow to plan and, once a block is
lost, slow to recompute. ``checkpoint()`` marks a dataset; after the next job that reads it
(any action on it or on a dataset derived from it) one more job writes each of its
partitions to the checkpoint directory, and the dataset's node becomes a reader of those
files: later jobs read them instead of the parents, and the parents may be collected.
As in Spark the write job computes the partitions again unless the dataset is persisted
(persist it first when its lineage is costly); blocks already cached stay valid, since
the dataset keeps its id.

``checkpoint()`` writes under ``Context.set_checkpoint_dir`` (files that outlive the
application, as Spark's); ``local_checkpoint()`` writes under the application's own cache
directory, removed by ``stop()``: faster to set up, lost with the application.
Partition values are written as they are (a batch stays a batch), pickled, one
``part-NNNNN`` file each, atomically.
"""

from __future__ import annotations

import os
import pickle
import uuid
import weakref
from typing import TYPE_CHECKING, Any, Callable

from strataflow.io.sources import InputError
from strataflow.lineage import SourceNode
from strataflow.io.output_files import write_atomically
from strataflow.common.private_file import make_private_dirs

if TYPE_CHECKING:
    from strataflow.dataset import Dataset
    from strataflow.executor.task import TaskContext

__all__ = ["CheckpointOps", "CheckpointSource", "app_checkpoint_dir"]

#: datasets marked by checkpoint()/local_checkpoint() whose files are not written yet
_marked: "weakref.WeakSet[Dataset]" = weakref.WeakSet()


def app_checkpoint_dir(path: str | os.PathLike, app_id: str) -> str:
    """The application's own directory under ``path`` (made now), as Spark's
    ``setCheckpointDir`` makes ``path/<uuid>``: two applications never share files."""
    d = os.path.join(os.path.abspath(os.fspath(path)), f"{app_id}-{uuid.uuid4().hex[:8]}")
    make_private_dirs(d)  # 0700, missing parents too: checkpoints are the engine's, unpickled by it
    return d


class CheckpointSource(SourceNode):
    """Reads the partitions a checkpoint wrote; keeps the dataset's partitioner (the
    records did not move)."""

    def __init__(self, directory: str, num_partitions: int, partitioner: Any) -> None:
        self.directory = directory
        self.num_partitions = num_partitions
        self.partitioner = partitioner

    def compute(self, split: int, tc: "TaskContext") -> Any:
        name = os.path.join(self.directory, f"part-{split:05d}")
        try:
            with open(name, "rb") as f:
                return pickle.load(f)
        except (OSError, pickle.UnpicklingError, EOFError) as exc:
            raise InputError(f"checkpoint: cannot read {name!r} (the checkpoint files were removed or "
                             f"damaged; the lineage before the checkpoint is gone): {exc}") from exc

    def describe(self) -> str:
        return self.directory


def _marked_ancestors(dataset: "Dataset") -> list["Dataset"]:
    """Marked datasets in ``dataset``'s lineage, not looking below a marked one (its own
    marked parents are written when a job reads them directly, as in Spark)."""
    out, seen, stack = [], set(), [dataset]
    while stack:
        ds = stack.pop()
        if ds.id in seen:
            continue
        seen.add(ds.id)
        if ds in _marked:
            out.append(ds)
            continue
        stack.extend(dep.parent for dep in ds.node.deps)
    return out


class CheckpointOps:
    """Checkpointing, a mixin of Dataset (before ActionOps: it wraps ``_run``)."""

    _checkpoint_kind: str | None = None  # None, "reliable" or "local", once marked
    _checkpoint_path: str | None = None  # the files, once written

    def checkpoint(self) -> None:
        """Marks this dataset to be written to the checkpoint directory after the next
        job that reads it; then its lineage is cut (see the module's note).

        >>> ctx.set_checkpoint_dir(tmp_dir)
        >>> ds = ctx.parallelize(range(4)).map(lambda x: x * 2)
        >>> ds.checkpoint()
        >>> ds.collect(), ds.is_checkpointed
        ([0, 2, 4, 6], True)
        """
        if self.ctx.checkpoint_dir is None:
            raise RuntimeError(f"checkpoint: dataset {self.label}: no checkpoint directory; "
                               "call Context.set_checkpoint_dir(path) first")
        self._mark("reliable")

    def local_checkpoint(self) -> None:
        """As ``checkpoint``, to the application's own directory (removed by ``stop()``).

        >>> ds = ctx.parallelize(range(3)).map(lambda x: -x)
        >>> ds.local_checkpoint()
        >>> ds.collect(), ds.is_checkpointed
        ([0, -1, -2], True)
        """
        self._mark("local")

    def _mark(self, kind: str) -> None:
        if self._checkpoint_path is None:
            self._checkpoint_kind = kind
            _marked.add(self)

    @property
    def is_checkpointed(self) -> bool:
        """True once the checkpoint files are written (reliable or local).

        >>> ctx.parallelize([1]).is_checkpointed
        False
        """
        return self._checkpoint_path is not None

    @property
    def is_marked_for_checkpoint(self) -> bool:
        """True from ``checkpoint()``/``local_checkpoint()`` on, written or not yet.

        >>> ctx.set_checkpoint_dir(tmp_dir)
        >>> ds = ctx.parallelize([1])
        >>> ds.checkpoint()
        >>> ds.is_marked_for_checkpoint, ds.is_checkpointed
        (True, False)
        """
        return self._checkpoint_kind is not None

    @property
    def is_locally_checkpointed(self) -> bool:
        """True from ``local_checkpoint()`` on (Spark's meaning: marked, written or not).

        >>> ds = ctx.parallelize([1])
        >>> ds.local_checkpoint()
        >>> ds.is_locally_checkpointed
        True
        """
        return self._checkpoint_kind == "local"

    def get_checkpoint_file(self) -> str | None:
        """The directory of the checkpoint files, once written by ``checkpoint()``.

        >>> ctx.set_checkpoint_dir(tmp_dir)
        >>> ds = ctx.parallelize(range(3))
        >>> ds.checkpoint(); _ = ds.count()
        >>> ds.get_checkpoint_file().startswith(tmp_dir)
        True
        """
        return self._checkpoint_path if self._checkpoint_kind == "reliable" else None

    def _run(self, func: Callable[[Any], Any], partitions=None, description: str | None = None) -> list:
        result = super()._run(func, partitions, description)
        if len(_marked):
            for ds in _marked_ancestors(self):
                ds._write_checkpoint()
        return result

    def _write_checkpoint(self) -> None:
        _marked.discard(self)  # first: the write job below must not write it again
        ctx = self.ctx
        base = ctx.checkpoint_dir if self._checkpoint_kind == "reliable" else os.path.join(ctx.local_dirs[0],
                                                                                             "checkpoints")
        directory = os.path.join(base, f"dataset-{self.id}")
        make_private_dirs(directory)

        def write(i, v):
            write_atomically(os.path.join(directory, f"part-{i:05d}"),
                             lambda f: pickle.dump(v, f, protocol=pickle.HIGHEST_PROTOCOL), private=True)
            return [1]

        self.map_partitions_with_index(write)._run(len, description=f"checkpoint {self.label}")
        self.node = CheckpointSource(directory, self.num_partitions, self.partitioner)
        self._checkpoint_path = directory
        ctx.events.post("Checkpointed", dataset_id=self.id, path=directory, kind=self._checkpoint_kind)
