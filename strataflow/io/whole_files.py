"""Whole files as records: ``Context.whole_text_files`` (and binary files for the PySpark
layer's ``binaryFiles``): one ``(path, content)`` record per file, for inputs whose files
are units (documents, JSON objects, images) rather than lines. Partitions are contiguous
runs of the files, at most ``min_partitions`` of them. Paths are any ``io/paths.py``
takes (globs, lists, directories, URLs); a record's path is the local path or the full
URL (``s3://bucket/key``).

Only the source node lives here: the Context wraps it in a Dataset (``context/readers.py``),
so this floor does not import the datasets above it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strataflow.io.paths import resolve_files, split_paths
from strataflow.io.sources import InputError, MalformedInputError, slice_bounds
from strataflow.lineage import SourceNode

if TYPE_CHECKING:
    from strataflow.executor.task import TaskContext

__all__ = ["WholeFilesSource"]


class WholeFilesSource(SourceNode):
    def __init__(self, paths: Any, min_partitions: int, binary: bool = False,
                 encoding: str = "utf-8", recursive: bool = False) -> None:
        self.path = ",".join(split_paths(paths))
        self.binary = binary
        self.encoding = encoding
        files = resolve_files(paths, "binary_files" if binary else "whole_text_files", recursive)
        self.groups = [files[a:b] for a, b in slice_bounds(len(files), max(1, min(min_partitions, len(files))))]
        self.num_partitions = len(self.groups)

    def compute(self, split: int, tc: "TaskContext") -> list:
        out = []
        op = "binary_files" if self.binary else "whole_text_files"
        for ref in self.groups[split]:
            try:
                data = ref.read_all()
            except OSError as exc:
                raise InputError(f"{op}: cannot read {ref.name!r}: {exc}") from exc
            try:
                out.append((ref.name, data if self.binary else data.decode(self.encoding)))
            except UnicodeDecodeError as exc:
                # the line of the bad byte, where a newline is one byte (not in UTF-16/32)
                line = data.count(b"\n", 0, exc.start) + 1 if "\n".encode(self.encoding) == b"\n" else None
                where = f"line {line} (byte {exc.start})" if line else f"byte {exc.start}"
                raise MalformedInputError(f"{op}: {ref.name!r} is not {self.encoding} text: {exc.reason} at {where}",
                                          path=ref.name, line=line, reason=exc.reason) from None
        return out

    def describe(self) -> str:
        return self.path

