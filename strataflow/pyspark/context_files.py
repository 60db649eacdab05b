"""``SparkContext``'s shipped files: ``addFile``, ``addArchive``, ``listFiles``,
``listArchives``, and ``addPyFile``, which raises :class:`UnsupportedOperation`.

A mixin of :class:`~strataflow.pyspark.context.SparkContext`, apart because it is the part
of the context that takes paths to ship to executors (``SparkFiles.get`` reads them
there), and refuses the schemes strataflow cannot fetch.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from strataflow.pyspark.errors import UnsupportedOperation

if TYPE_CHECKING:
    from strataflow.context import Context


def _local_path(path: str) -> str:
    """A local path or ``file:`` URI; other schemes (hdfs, http...) are refused by name."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path):
        raise UnsupportedOperation(f"{path!r}: only local files can be added in strataflow (no Hadoop "
                                   "file systems or URLs)")
    return path


class SparkContextFiles:
    """Files and archives shipped to the executors (a mixin of ``SparkContext``)."""

    ctx: Context

    def addFile(self, path: str, recursive: bool = False) -> None:
        """Ships a file (a directory with ``recursive=True``) to every executor; tasks open
        ``SparkFiles.get(basename)``. A path added twice is ignored.

        >>> from strataflow.pyspark import SparkFiles
        >>> _ = open(tmp_dir + "/stop.txt", "w").write("a the")
        >>> sc.addFile(tmp_dir + "/stop.txt")
        >>> sc.parallelize([0], 1).map(lambda _: open(SparkFiles.get("stop.txt")).read()).collect()
        ['a the']
        """
        self.ctx.add_file(_local_path(path), recursive)

    def addArchive(self, path: str) -> None:
        """Ships an archive (zip, jar, tar, tar.gz, tgz...) unpacked; ``SparkFiles.get(name)``
        is its directory (``path#alias`` names it ``alias``).

        >>> import os, shutil
        >>> from strataflow.pyspark import SparkFiles
        >>> os.makedirs(tmp_dir + "/conf"); _ = open(tmp_dir + "/conf/k.txt", "w").write("v")
        >>> sc.addArchive(shutil.make_archive(tmp_dir + "/conf", "zip", tmp_dir + "/conf"))
        >>> sc.parallelize([0], 1).map(lambda _: open(SparkFiles.get("conf.zip") + "/k.txt").read()).collect()
        ['v']
        """
        self.ctx.add_archive(_local_path(path))

    @property
    def listFiles(self) -> list[str]:
        """The URIs of the files and directories added with ``addFile``.

        >>> _ = open(tmp_dir + "/listed.txt", "w").write("x")
        >>> sc.addFile(tmp_dir + "/listed.txt")
        >>> any(uri.endswith("/listed.txt") for uri in sc.listFiles)
        True
        """
        return self.ctx.list_files

    @property
    def listArchives(self) -> list[str]:
        """The URIs of the archives added with ``addArchive``.

        >>> import shutil
        >>> sc.addArchive(shutil.make_archive(tmp_dir + "/listed", "zip", tmp_dir))
        >>> any(uri.endswith("/listed.zip") for uri in sc.listArchives)
        True
        """
        return self.ctx.list_archives

    def addPyFile(self, path: str) -> None:
        """Not supported (UnsupportedOperation): executors import from the driver's environment, so
        install the module there instead.

        >>> sc.addPyFile("lib.zip")
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: addPyFile is not supported in strataflow: ...
        """
        raise UnsupportedOperation("addPyFile is not supported in strataflow: executors import from the "
                                   "driver's environment")

