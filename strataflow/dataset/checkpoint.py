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

Authenticated (issue 50). A checkpoint file is unpickled by every executor that reads it,
so, like every other file the engine unpickles (blocks, shuffle files, source slices:
``storage/blocks/frame_auth.py``), it carries a keyed tag, and anyone who can write the
checkpoint directory can no longer run code in the executors by putting a pickle there.
A part file is ``SFCKPT01``, the pickled value, then a keyed BLAKE2b-256 tag of the magic,
the file's place (``dataset-<id>/part-NNNNN``: an authentic part moved to another place
is refused too) and the pickled bytes, checked before anything is unpickled.

*The key* is the application's own secret (the one its blocks carry: made by the driver,
handed to the executors in memory, never written to disk; ``storage/blocks/app_keys.py``
finds it by the application's cache directory). Nothing on disk can forge it, and nothing
on disk has to be protected: a key file beside the checkpoints would be no better than
the directory it guards. The price: only the application that wrote a checkpoint can read
it, which is all strataflow does with one (the dataset object reads its own files; there
is no API that opens a checkpoint in a later application, and Spark reads one across
applications only for Streaming's recovery). A checkpoint that must outlive its
application for another to open belongs in the shared store (``ctx.store.save``), whose
key is per user (``store/root.py``: ``store.key`` in the user's private root). A part
file read where that key is not (another application, a copied dataset) is refused with
:class:`CheckpointCorrupt`, as a forged one is.

*A refused part* (forged, damaged, cut short, swapped, removed) fails its task with
:class:`CheckpointCorrupt` (an ``InputError``: not retried as it is), naming the file.
Then, where the lineage allows, the driver recomputes: the checkpoint keeps, on the
driver only, the node it replaced (its function: never shipped, never planned), but holds
the parent datasets only weakly (it must not keep them, their shuffle files or their data
alive: that is what a checkpoint is for), and keeps no collection the driver gave
(``parallelize``: that is data); a file source (``text_file``...) has no parent and is
read again. While the program still holds the parents (one it kept a reference to, or the
map side of a shuffle the checkpointed dataset reads, which the scheduler keeps while
that dataset lives), the job's error is caught, every part file is written again from
that lineage (one job, ``CheckpointRecomputed`` in the event log) and the job runs again.
Once they are collected the lineage is gone, and the error stands, saying so: persist
the dataset before checkpointing it (a cached partition is read before its file), or
recompute it from its source. A job run again re-runs the tasks that had succeeded: their
accumulator updates count twice, as after any job a user re-runs.
"""

from __future__ import annotations

import copy
import mmap
import os
import pickle
import struct
import threading
import uuid
import weakref
from typing import IO, TYPE_CHECKING, Any, Callable

from strataflow.common.private_file import make_private_dirs
from strataflow.io.output_files import write_atomically
from strataflow.io.sources import InputError
from strataflow.lineage import ListSource, Node, SourceNode
from strataflow.storage.blocks import app_keys
from strataflow.storage.blocks.frame_auth import TAG_BYTES, FrameAuth, same

if TYPE_CHECKING:
    from strataflow.dataset import Dataset
    from strataflow.executor.task import TaskContext

__all__ = ["CheckpointOps", "CheckpointSource", "CheckpointCorrupt", "app_checkpoint_dir", "write_part",
           "read_part"]

#: datasets marked by checkpoint()/local_checkpoint() whose files are not written yet
_marked: "weakref.WeakSet[Dataset]" = weakref.WeakSet()
#: checkpoint directory -> the dataset whose files it holds (to recompute a refused part)
_written: "weakref.WeakValueDictionary[str, Dataset]" = weakref.WeakValueDictionary()
_repair_lock = threading.RLock()  # a rewrite's job may meet (and repair) an upstream checkpoint

MAGIC = b"SFCKPT01"
_DOMAIN = b"sf-checkpoint-v1"  # BLAKE2b's personalization: at most 16 bytes
_LEN = struct.Struct("<I")


class CheckpointCorrupt(InputError):
    """A checkpoint part file that is not the authentic one (forged, damaged, cut short,
    moved from another place, removed, or written by another application): never
    unpickled. ``directory`` and ``partition`` say which; the driver recomputes it where
    the lineage the checkpoint cut is still alive (the module's note)."""

    def __init__(self, message: str, directory: str = "", partition: int = -1) -> None:
        super().__init__(message)  # args: the message alone, so it pickles (its fields travel in __dict__)
        self.directory = directory
        self.partition = partition


def _refusal(exc: BaseException) -> CheckpointCorrupt | None:
    """The task's own CheckpointCorrupt behind a job's error (whose ``partition`` is the
    task's, not the part file's)."""
    e: BaseException | None = exc
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        if type(e) is CheckpointCorrupt:
            return e
        seen.add(id(e))
        e = e.__cause__
    return None


def _part_path(directory: str, split: int) -> str:
    return os.path.join(directory, f"part-{split:05d}")


def _place(directory: str, split: int) -> bytes:
    """What a part's tag binds it to: its checkpoint's directory name and its index."""
    place = f"{os.path.basename(os.path.normpath(directory))}/part-{split:05d}".encode()
    return _LEN.pack(len(place)) + place


def _auth(key_dir: str, directory: str, split: int) -> FrameAuth:
    """The application's key, found by its cache directory ``key_dir`` (registered in the
    driver and in every executor while the application runs)."""
    auth = app_keys.auth_for(key_dir)
    if auth is None:
        raise CheckpointCorrupt(f"checkpoint: no key to read {_part_path(directory, split)!r} with: a checkpoint "
                                f"is readable only by the application that wrote it, while it runs", directory, split)
    return auth


class _TaggingWriter:
    """A file object that feeds what ``pickle`` writes to the tag as it goes (the value is
    never pickled whole into memory first)."""

    def __init__(self, f: IO[bytes], hasher: Any) -> None:
        self._f = f
        self._h = hasher

    def write(self, data: Any) -> int:
        self._h.update(data)
        return self._f.write(data)


def write_part(directory: str, split: int, value: Any, auth: FrameAuth) -> None:
    """Writes partition ``split`` of a checkpoint (the module's format), atomically, 0600."""
    def dump(f: IO[bytes]) -> None:
        h = auth.hasher(_DOMAIN)
        h.update(MAGIC)
        h.update(_place(directory, split))
        f.write(MAGIC)
        pickle.dump(value, _TaggingWriter(f, h), protocol=pickle.HIGHEST_PROTOCOL)
        f.write(h.digest())

    write_atomically(_part_path(directory, split), dump, private=True)


def read_part(directory: str, split: int, auth: FrameAuth, load: bool = True) -> Any:
    """The value of partition ``split`` of a checkpoint, read through a mapping and
    unpickled only once its tag is checked; CheckpointCorrupt naming the file and the
    fault otherwise. ``load=False``: the check alone (None)."""
    name = _part_path(directory, split)

    def refused(why: str) -> CheckpointCorrupt:
        return CheckpointCorrupt(f"checkpoint: {name!r} {why}; it is not unpickled", directory, split)

    try:
        with open(name, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < len(MAGIC) + TAG_BYTES:
                raise refused(f"is cut short ({size} bytes)")
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise refused("is gone (the checkpoint files were removed)") from None
    except OSError as exc:
        raise refused(f"cannot be read ({exc})") from None
    view = memoryview(mm)
    body = view[len(MAGIC):size - TAG_BYTES]
    try:
        if view[:len(MAGIC)] != MAGIC:
            raise refused("is not a checkpoint part file (no header): forged, or damaged")
        if not same(view[size - TAG_BYTES:], auth.tag(_DOMAIN, MAGIC, _place(directory, split), body)):
            raise refused("fails its keyed tag: forged, damaged, moved from another place, or written by "
                          "another application")
        try:
            return pickle.loads(body) if load else None
        except Exception as exc:  # noqa: BLE001 - authentic but unreadable: still named
            raise refused(f"cannot be unpickled ({type(exc).__name__}: {exc})") from exc
    finally:
        body.release()  # every view of the map, before it is closed
        view.release()
        mm.close()


class _CutLineage:
    """The node a checkpoint replaced, kept to recompute a refused part file, with its
    parent datasets held weakly: a copy of the node whose dependencies are copies without
    their parent, and a weak reference to each parent. ``node()`` gives a fresh copy with
    its parents while they all live, None once one is collected. A collection the driver
    gave (``parallelize``, ``from_numpy``: a ``ListSource``) is data, and not kept."""

    def __init__(self, node: Node) -> None:
        self.is_data = isinstance(node, ListSource)
        if self.is_data:
            return
        self._parents = [weakref.ref(d.parent) for d in node.deps]
        self._node = _with_parents(node, [None] * len(node.deps))

    def __reduce__(self):
        """It stays on the driver: a dataset sent to an executor carries None instead (the
        cut lineage is what a checkpoint saves shipping, and weak references do not pickle)."""
        return (type(None), ())

    def node(self) -> Node | None:
        if self.is_data:
            return None
        parents = [ref() for ref in self._parents]
        if any(p is None for p in parents):
            return None
        return _with_parents(self._node, parents)


def _with_parents(node: Node, parents: list) -> Node:
    """A shallow copy of ``node`` whose dependencies are copies with ``parents`` (the node
    given is left as it is: a job may be running it)."""
    deps = {id(d): copy.copy(d) for d in node.deps}
    out = copy.copy(node)
    for key, value in vars(out).items():  # a node's other handles on its dependencies (ShuffledNode.dep)
        if id(value) in deps:
            setattr(out, key, deps[id(value)])
    out.deps = [deps[id(d)] for d in node.deps]
    for d, p in zip(out.deps, parents):
        d.parent = p
    return out


def app_checkpoint_dir(path: str | os.PathLike, app_id: str) -> str:
    """The application's own directory under ``path`` (made now), as Spark's
    ``setCheckpointDir`` makes ``path/<uuid>``: two applications never share files."""
    d = os.path.join(os.path.abspath(os.fspath(path)), f"{app_id}-{uuid.uuid4().hex[:8]}")
    make_private_dirs(d)  # 0700, missing parents too: checkpoints are the engine's, unpickled by it
    return d


class CheckpointSource(SourceNode):
    """Reads the partitions a checkpoint wrote (authenticated: the module's note); keeps
    the dataset's partitioner (the records did not move). ``key_dir``: the application's
    cache directory, by which the reader finds the application's key (never the key
    itself: a task carries no secret)."""

    def __init__(self, directory: str, num_partitions: int, partitioner: Any, key_dir: str) -> None:
        self.directory = directory
        self.num_partitions = num_partitions
        self.partitioner = partitioner
        self.key_dir = key_dir

    def compute(self, split: int, tc: "TaskContext") -> Any:
        return read_part(self.directory, split, _auth(self.key_dir, self.directory, split))

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

    def _run(self, func: Callable[[Any], Any], partitions=None, description: str | None = None,
             with_task: bool = False) -> list:
        repaired: set[int] = set()
        while True:
            try:
                result = super()._run(func, partitions, description, with_task)
                break
            except CheckpointCorrupt as exc:  # the job's error has the type of the task's (scheduler/errors.py)
                refused = _refusal(exc)
                owner = _written.get(refused.directory) if refused is not None else None
                if owner is None or owner.id in repaired or not owner._recompute_checkpoint(exc, refused):
                    raise
                repaired.add(owner.id)
        if len(_marked):
            for ds in _marked_ancestors(self):
                ds._write_checkpoint()
        return result

    def _write_checkpoint_parts(self, directory: str, description: str) -> None:
        """One job: every partition of this dataset (from its current node) written to
        ``directory``, tagged with the application's key."""
        key_dir = self.ctx.local_dirs[0]

        def write(i, v):
            write_part(directory, i, v, _auth(key_dir, directory, i))
            return [1]

        self.map_partitions_with_index(write)._run(len, description=description)

    def _write_checkpoint(self) -> None:
        _marked.discard(self)  # first: the write job below must not write it again
        ctx = self.ctx
        base = ctx.checkpoint_dir if self._checkpoint_kind == "reliable" else os.path.join(ctx.local_dirs[0],
                                                                                             "checkpoints")
        directory = os.path.join(base, f"dataset-{self.id}")
        make_private_dirs(directory)
        self._write_checkpoint_parts(directory, f"checkpoint {self.label}")
        self._cut_lineage = _CutLineage(self.node)
        self.node = CheckpointSource(directory, self.num_partitions, self.partitioner, ctx.local_dirs[0])
        self._checkpoint_path = directory
        _written[directory] = self
        ctx.events.post("Checkpointed", dataset_id=self.id, path=directory, kind=self._checkpoint_kind)

    def _recompute_checkpoint(self, exc: BaseException, refused: CheckpointCorrupt) -> bool:
        """After a job failed with ``exc`` because a task refused one of this checkpoint's
        part files (``refused``): writes every part again from the lineage the checkpoint
        cut, if its parents still live, and returns True (the job is run again); False,
        with a note on ``exc``, if the lineage is gone."""
        with _repair_lock:
            source = self.node
            if not isinstance(source, CheckpointSource):
                return False
            try:  # another thread's repair may have made the part good since this job read it
                read_part(source.directory, refused.partition,
                          _auth(source.key_dir, source.directory, refused.partition), load=False)
                return True
            except CheckpointCorrupt:
                pass
            cut = getattr(self, "_cut_lineage", None)
            lineage = cut.node() if cut is not None else None
            if lineage is None:
                why = ("it was a collection the driver gave, which a checkpoint does not keep"
                       if cut is not None and cut.is_data else "its parent datasets were collected")
                _note(exc, f"strataflow: dataset {self.label}'s lineage before its checkpoint is gone ({why}), so "
                           f"the refused part cannot be recomputed; persist a dataset before checkpointing it, or "
                           f"recompute it from its source")
                return False
            self.ctx.events.post("CheckpointRecomputed", dataset_id=self.id, path=source.directory,
                                 partition=refused.partition, reason=str(refused))
            self.node = lineage
            try:
                self._write_checkpoint_parts(source.directory,
                                             f"checkpoint {self.label} (recomputed: a part was refused)")
            finally:
                self.node = source
            return True


def _note(exc: BaseException, note: str) -> None:
    add = getattr(exc, "add_note", None)
    if add is not None:
        add(note)
