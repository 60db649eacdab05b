"""``SparkFiles``: where a file added with ``sc.addFile`` / ``sc.addArchive`` is, on the
machine a task runs on (``strataflow.files``)."""

from __future__ import annotations

from .. import files

__all__ = ["SparkFiles"]


class SparkFiles:
    """``SparkFiles.get(name)``: the path of an added file or of an archive's unpacked
    directory; ``SparkFiles.getRootDirectory()``: the directory that holds them."""

    def __init__(self) -> None:
        raise NotImplementedError("Do not construct SparkFiles objects")

    @classmethod
    def get(cls, filename: str) -> str:
        return files.get(filename)

    @classmethod
    def getRootDirectory(cls) -> str:
        return files.root_directory()
