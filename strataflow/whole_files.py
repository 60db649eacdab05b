"""Whole files as records: ``Context.whole_text_files`` (and binary files for the PySpark
layer's ``binaryFiles``): one ``(path, content)`` record per file, for inputs whose files
are units (documents, JSON objects, images) rather than lines. Partitions are contiguous
runs of the sorted files, at most ``min_partitions`` of them."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

from .io.sources import InputError, slice_bounds
from .io.text import list_input_files
from .lineage import SourceNode
from .pickle_files import input_paths

if TYPE_CHECKING:
    from .context import Context
    from .dataset import Dataset
    from .scheduler.task import TaskContext

__all__ = ["WholeFilesSource", "whole_files"]


class WholeFilesSource(SourceNode):
    def __init__(self, paths: Sequence[str], min_partitions: int, binary: bool = False,
                 encoding: str = "utf-8") -> None:
        self.path = ",".join(paths)
        self.binary = binary
        self.encoding = encoding
        files = [f for p in paths for f in list_input_files(p)]
        self.groups = [files[a:b] for a, b in slice_bounds(len(files), max(1, min(min_partitions, len(files))))]
        self.num_partitions = len(self.groups)

    def compute(self, split: int, tc: "TaskContext") -> list:
        out = []
        for name in self.groups[split]:
            try:
                if self.binary:
                    with open(name, "rb") as f:
                        out.append((name, f.read()))
                else:
                    with open(name, encoding=self.encoding) as f:
                        out.append((name, f.read()))
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"whole_text_files: cannot read {name!r}: {exc}") from exc
        return out

    def describe(self) -> str:
        return self.path


def whole_files(ctx: "Context", path: "str | os.PathLike | Sequence[str | os.PathLike]",
                min_partitions: int | None, binary: bool = False, encoding: str = "utf-8") -> "Dataset":
    from .dataset import Dataset

    n = ctx._num(min_partitions)
    return Dataset(ctx, WholeFilesSource(input_paths(path), n, binary, encoding),
                   "binary_files" if binary else "whole_text_files")
