"""``SparkFiles``: where a file added with ``sc.addFile`` / ``sc.addArchive`` is, on the
machine a task runs on (``strataflow.shipping.files``)."""

from __future__ import annotations

from strataflow.shipping import files

__all__ = ["SparkFiles"]


class SparkFiles:
    """``SparkFiles.get(name)``: the path of an added file or of an archive's unpacked
    directory; ``SparkFiles.getRootDirectory()``: the directory that holds them."""

    def __init__(self) -> None:
        raise NotImplementedError("Do not construct SparkFiles objects")

    @classmethod
    def get(cls, filename: str) -> str:
        """The path of the file or archive added as ``filename``, on the machine this runs on
        (a task's executor, or the driver).

        >>> _ = open(tmp_dir + "/greeting.txt", "w").write("hello")
        >>> sc.addFile(tmp_dir + "/greeting.txt")
        >>> sc.parallelize([0], 1).map(lambda _: open(SparkFiles.get("greeting.txt")).read()).collect()
        ['hello']
        """
        return files.get(filename)

    @classmethod
    def getRootDirectory(cls) -> str:
        """The directory that holds this machine's copies of the added files (RuntimeError
        before any file was added).

        >>> import os
        >>> _ = open(tmp_dir + "/lookup.csv", "w").write("k,v")
        >>> sc.addFile(tmp_dir + "/lookup.csv")
        >>> os.path.isdir(SparkFiles.getRootDirectory())
        True
        """
        return files.root_directory()
