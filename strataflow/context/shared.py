"""Shared variables: broadcasts (a read-only value shipped once to each executor),
accumulators (values tasks add to, read on the driver) and the files and archives shipped to
every executor (``add_file``, ``add_archive``).

Why a mixin of its own: these are what a program shares with its tasks besides datasets,
each backed by its own module of ``strataflow.shipping``; they read apart from the driver's
wiring (:mod:`strataflow.context.core`), which makes their registries.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from strataflow.shipping.accumulators import Accumulator
from strataflow.shipping.broadcast import Broadcast
from strataflow.shipping.files import install as install_files

if TYPE_CHECKING:
    from strataflow.shipping.accumulators import Accumulators
    from strataflow.shipping.files import FileRegistry, ShippedFile

__all__ = ["SharedVariables"]


class SharedVariables:
    """``Context``'s shared variables (needs ``_accumulators``, ``_files`` and
    ``_check_open``, which the Context's constructor sets)."""

    _accumulators: "Accumulators"
    _files: "FileRegistry"

    if TYPE_CHECKING:
        def _check_open(self) -> None: ...  # the Context's

    # -- shared variables ------------------------------------------------------------------
    def broadcast(self, value: Any) -> Broadcast:
        """A read-only value for tasks (``b.value``), shipped once to each executor rather
        than with every stage (``broadcast.py``); ``unpersist()`` / ``destroy()``.

        >>> table = ctx.broadcast({"a": 1, "b": 2})
        >>> ctx.parallelize(["a", "b", "a"]).map(lambda k: table.value[k]).collect()
        [1, 2, 1]
        """
        self._check_open()
        return Broadcast(self, value)

    def accumulator(self, value: Any, accum_param: Any = None) -> Accumulator:
        """A value tasks add to (``acc.add(x)`` or ``acc += x``) and the driver reads
        (``acc.value``), counted exactly once per successful task (``accumulators.py``).
        Numbers and numpy arrays add with ``+``; others need ``accum_param``, an
        ``AccumulatorParam`` with ``zero(value)`` and ``add_in_place(a, b)``.

        >>> acc = ctx.accumulator(0)
        >>> ctx.parallelize(range(5)).foreach(lambda x: acc.add(x))
        >>> acc.value
        10
        """
        self._check_open()
        return self._accumulators.new(value, accum_param)

    def add_file(self, path: str | os.PathLike, recursive: bool = False) -> None:
        """Ships a file (or, with ``recursive=True``, a directory) to every executor: tasks
        open ``strataflow.files.get(basename)``. Copied now (later changes to the original
        are not seen); the same path again is ignored (``files.py``).

        >>> from strataflow import files
        >>> _ = open(tmp_dir + "/words.txt", "w").write("spam eggs")
        >>> ctx.add_file(tmp_dir + "/words.txt")
        >>> ctx.parallelize([0], 1).map(lambda _: open(files.get("words.txt")).read().split()).collect()
        [['spam', 'eggs']]
        """
        self._check_open()
        self._ship(self._files.add_file(path, recursive))

    def add_archive(self, path: str | os.PathLike) -> None:
        """Ships an archive (zip, jar, tar, tar.gz/tgz, tar.bz2, tar.xz), unpacked: tasks
        find its directory at ``strataflow.files.get(basename)`` (or ``path#alias``: the
        alias).

        >>> import os, shutil
        >>> from strataflow import files
        >>> os.makedirs(tmp_dir + "/model"); _ = open(tmp_dir + "/model/w.txt", "w").write("0.5")
        >>> archive = shutil.make_archive(tmp_dir + "/model", "zip", tmp_dir + "/model")
        >>> ctx.add_archive(archive)
        >>> ctx.parallelize([0], 1).map(lambda _: open(files.get("model.zip") + "/w.txt").read()).collect()
        ['0.5']
        """
        self._check_open()
        self._ship(self._files.add_archive(path))

    def _ship(self, entry: "ShippedFile | None") -> None:
        if entry is not None:  # visible to the driver's own code at once (and the threads backend's tasks)
            install_files({entry.name: entry}, self._files.root)

    @property
    def list_files(self) -> list[str]:
        """The URIs of the files and directories added with ``add_file``.

        >>> _ = open(tmp_dir + "/listed.txt", "w").write("x")
        >>> ctx.add_file(tmp_dir + "/listed.txt")
        >>> any(uri.endswith("/listed.txt") for uri in ctx.list_files)
        True
        """
        return self._files.uris("file", "dir")

    @property
    def list_archives(self) -> list[str]:
        """The URIs of the archives added with ``add_archive``.

        >>> import shutil
        >>> archive = shutil.make_archive(tmp_dir + "/empty", "zip", tmp_dir)
        >>> ctx.add_archive(archive)
        >>> any(uri.endswith("/empty.zip") for uri in ctx.list_archives)
        True
        """
        return self._files.uris("archive")

