"""Datasets read from files: lines (``text_file``), delimited text (``csv_file``), Parquet,
``.npy``, whole files (``whole_text_files``, ``binary_files``) and ``pickle_file``; paths are
anything ``io/paths.py`` takes (globs, lists, directories, URLs).

Why a mixin of its own: each reader only builds a source node of ``strataflow.io`` and
wraps it in a Dataset, so the list of input formats reads in one place, apart from the
driver's wiring (:mod:`strataflow.context.core`).
"""

from __future__ import annotations

import os
import weakref
from typing import TYPE_CHECKING

import pyarrow as pa

from strataflow.dataset import Dataset
from strataflow.io.delimited import CsvSource, CsvTypesSource, PerSplitCounts, widen_types
from strataflow.io.npy import NpySource
from strataflow.io.parquet import ParquetSource
from strataflow.io.paths import PathSpec
from strataflow.io.reach import check_reachable
from strataflow.io.text import TextSource
from strataflow.io.whole_files import WholeFilesSource

__all__ = ["FileReaders"]

class FileReaders:
    """``Context``'s readers of files (needs ``_num``, from :class:`.sources.DataSources`)."""

    if TYPE_CHECKING:
        from strataflow.config import Config
        from strataflow.shipping.accumulators import Accumulators

        _accumulators: Accumulators
        config: Config

        def _num(self, n: int | None) -> int: ...  # DataSources's

    def text_file(self, path: PathSpec, min_partitions: int | None = None, recursive: bool = False) -> Dataset:
        r"""Lines (UTF-8) of the files ``path`` names: a file, a directory's visible files
        (its whole tree's with ``recursive``), a glob (``logs/part-*.txt``, ``?``,
        ``[a-c]``, ``{a,b}``), several of these joined by commas or in a list, on the local
        disk (also as ``file://``) or at any fsspec URL (``s3://``, ``gs://``,
        ``memory://``...; see ``io/paths.py``).

        >>> _ = open(tmp_dir + "/poem.txt", "w").write("to be\nor not\n")
        >>> ctx.text_file(tmp_dir + "/poem.txt").collect()
        ['to be', 'or not']
        """
        check_reachable(path, self.config.backend, "text_file")
        n = self._num(min_partitions)
        return Dataset(self, TextSource(path, n, recursive=recursive), "text_file")

    def csv_file(self, path: str | os.PathLike, min_partitions: int | None = None, delimiter: str = ",",
                 column_names: list[str] | None = None, column_types: dict | None = None,
                 header: bool = False, infer_schema: bool = True, recursive: bool = False,
                 mode: str = "FAILFAST", corrupt_record_column: str | None = "_corrupt_record") -> Dataset:
        r"""Delimited text as pyarrow Table partitions that all have ONE schema (same
        line-aligned byte ranges as ``text_file``; see ``io/delimited.py``).

        ``header``: the first line of each file names the columns and is not data.
        ``column_names`` names them instead (else ``f0``, ``f1``...); ``column_types`` maps
        names to pyarrow types. The other columns' types are inferred from the whole
        input when ``infer_schema`` (one pass over the data now, as Spark's
        ``inferSchema``; mixed ints and floats give double, other mixes string), or are
        strings. Naming every column's type skips the pass. ``path`` and ``recursive``: as
        ``text_file``'s.

        Each line is one record (a quoted field cannot hold a newline). ``mode`` says what
        a malformed line (an unterminated quote, the wrong number of fields, a field not
        of its column's type, bytes that are not UTF-8) does, as Spark's option:
        ``"FAILFAST"`` (the default) fails the job with a ``MalformedInputError`` naming
        the file and the line's number in it; ``"DROPMALFORMED"`` leaves the line out;
        ``"PERMISSIVE"`` reads it as a row of the fields that convert (the others null)
        and the line's text in a last column, ``corrupt_record_column`` (None: no such
        column). The lines left out or read so are counted (``malformed_rows``). The
        same lines are malformed whatever ``min_partitions``.

        >>> _ = open(tmp_dir + "/people.csv", "w").write("name,age\nada,36\nalan,41\n")
        >>> people = ctx.csv_file(tmp_dir + "/people.csv", header=True)
        >>> people.collect(), people.to_arrow().schema.field("age").type
        ([('ada', 36), ('alan', 41)], DataType(int64))
        >>> _ = open(tmp_dir + "/bad.csv", "w").write('name,age\nada,36\n"alan,41\ngrace,x\n')
        >>> ctx.csv_file(tmp_dir + "/bad.csv", header=True, column_types={"age": pa.int64()},
        ...              mode="PERMISSIVE").collect()
        [('ada', 36, None), ('alan,41', None, '"alan,41'), ('grace', None, 'grace,x')]
        """
        check_reachable(path, self.config.backend, "csv_file")
        n = self._num(min_partitions)
        source = CsvSource(path, n, delimiter, column_names, column_types, header, recursive, mode,
                           corrupt_record_column)
        if source.mode != "FAILFAST":
            source.malformed = self._accumulators.new({}, PerSplitCounts())
            self._malformed_sources().add(source)
        if source.untyped and infer_schema:
            found = Dataset(self, CsvTypesSource(source), "csv_file infer_schema").collect()
            source.set_types(widen_types(found))
        source.set_types({name: pa.string() for name in source.untyped})
        return Dataset(self, source, "csv_file")

    def _malformed_sources(self) -> "weakref.WeakSet[CsvSource]":
        """The csv_file sources that count malformed lines, while their datasets live."""
        found = self.__dict__.get("_csv_counting")
        if found is None:
            found = self.__dict__["_csv_counting"] = weakref.WeakSet()
        return found

    def malformed_rows(self, dataset: Dataset | None = None) -> int:
        r"""How many malformed lines ``csv_file`` left out (``mode="DROPMALFORMED"``) or
        read as nulls (``"PERMISSIVE"``): those of the ``csv_file`` datasets in
        ``dataset``'s lineage, or (no ``dataset``) of every one still held. Each line is
        counted once however often its partition is read, and once a job has read it.

        >>> _ = open(tmp_dir + "/two.csv", "w").write('a,b\n1,2\n3\n"4,5\n6,7\n')
        >>> ds = ctx.csv_file(tmp_dir + "/two.csv", 2, header=True, mode="DROPMALFORMED")
        >>> ds.collect(), ctx.malformed_rows(ds)
        ([(1, 2), (6, 7)], 2)
        >>> _ = ds.map(lambda r: r[0]).count(); ctx.malformed_rows(ds)
        2
        """
        if dataset is None:
            sources = list(self._malformed_sources())
        else:
            sources, seen, todo = [], set(), [dataset]
            while todo:
                ds = todo.pop()
                if id(ds) in seen:
                    continue
                seen.add(id(ds))
                if isinstance(ds.node, CsvSource):
                    sources.append(ds.node)
                todo.extend(dep.parent for dep in ds.node.deps)
        return sum(sum(s.malformed.value.values()) for s in sources if s.malformed is not None)

    def parquet_file(self, path: PathSpec, num_partitions: int | None = None,
                     columns: list[str] | None = None, recursive: bool = False) -> Dataset:
        """A Parquet file, or a directory of them (``save_as_parquet``'s, read through its
        manifest), as pyarrow Table partitions of whole row groups, all of one schema.
        ``path`` and ``recursive``: as ``text_file``'s.

        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> pq.write_table(pa.table({"x": [1, 2], "y": ["a", "b"]}), tmp_dir + "/t.parquet")
        >>> ctx.parquet_file(tmp_dir + "/t.parquet", columns=["y"]).collect()
        [('a',), ('b',)]
        """
        check_reachable(path, self.config.backend, "parquet_file")
        return Dataset(self, ParquetSource(path, self._num(num_partitions), columns, recursive), "parquet_file")

    def npy_file(self, path: PathSpec, num_partitions: int | None = None, recursive: bool = False) -> Dataset:
        """Row ranges of a memory-mapped ``.npy`` file (read-only views), or of the parts
        of a directory (``save_as_npy``'s, read through its manifest) as one array; a
        remote file's rows are read as byte ranges. ``path`` and ``recursive``: as
        ``text_file``'s.

        >>> import numpy as np
        >>> np.save(tmp_dir + "/points.npy", np.arange(6.0).reshape(3, 2))
        >>> ctx.npy_file(tmp_dir + "/points.npy", 2).map(lambda row: float(row.sum())).collect()
        [1.0, 5.0, 9.0]
        """
        check_reachable(path, self.config.backend, "npy_file")
        return Dataset(self, NpySource(path, self._num(num_partitions), recursive), "npy_file")


    def whole_text_files(self, path: PathSpec, min_partitions: int | None = None,
                         encoding: str = "utf-8", recursive: bool = False) -> Dataset:
        """``(path, content)`` of every file ``path`` names (as ``text_file``'s: a
        directory, a glob, a list, a URL), a record each.

        >>> import os
        >>> os.makedirs(tmp_dir + "/docs"); _ = open(tmp_dir + "/docs/a.txt", "w").write("hello")
        >>> [(os.path.basename(p), text) for p, text in ctx.whole_text_files(tmp_dir + "/docs").collect()]
        [('a.txt', 'hello')]
        """
        check_reachable(path, self.config.backend, "whole_text_files")
        source = WholeFilesSource(path, self._num(min_partitions), encoding=encoding, recursive=recursive)
        return Dataset(self, source, "whole_text_files")

    def binary_files(self, path: PathSpec, min_partitions: int | None = None, recursive: bool = False) -> Dataset:
        """``(path, bytes)`` of every file ``path`` names (as ``text_file``'s), a record each.

        >>> import os
        >>> os.makedirs(tmp_dir + "/blobs"); _ = open(tmp_dir + "/blobs/b.bin", "wb").write(b"ab")
        >>> [(os.path.basename(p), data) for p, data in ctx.binary_files(tmp_dir + "/blobs").collect()]
        [('b.bin', b'ab')]
        """
        check_reachable(path, self.config.backend, "binary_files")
        source = WholeFilesSource(path, self._num(min_partitions), binary=True, recursive=recursive)
        return Dataset(self, source, "binary_files")

    def pickle_file(self, path: PathSpec, recursive: bool = False) -> Dataset:
        """The records ``Dataset.save_as_pickle_file`` wrote (to one directory or to each of
        a list; any path ``text_file`` takes), a partition per part file.

        Warning: loading a pickle file runs code from it, in every executor that reads it
        (as PySpark's ``pickleFile`` and ``pickle.load``). Read only files you trust,
        written by your own application into a directory no one else can write; to
        exchange data, use Parquet, ``.npy`` or the shared store (``io/pickle_files.py``).

        >>> ctx.parallelize([(1, {"a"}), (2, None)]).save_as_pickle_file(tmp_dir + "/objs")
        >>> ctx.pickle_file(tmp_dir + "/objs").collect()
        [(1, {'a'}), (2, None)]
        """
        from strataflow.io.pickle_files import PickleFileSource

        check_reachable(path, self.config.backend, "pickle_file")
        return Dataset(self, PickleFileSource(path, recursive), "pickle_file")

