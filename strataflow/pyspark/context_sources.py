"""``SparkContext``'s sources: ``parallelize``, ``range``, ``emptyRDD``, ``union``, the file
readers (``textFile``, ``wholeTextFiles``, ``binaryFiles``, ``binaryRecords``,
``pickleFile``), ``runJob``, and the Hadoop input formats, which raise
:class:`UnsupportedOperation`.

A mixin of :class:`~strataflow.pyspark.context.SparkContext`, apart because it is the part
of the context that makes RDDs: each source delegates to the strataflow Context's own and
wraps the dataset in an :class:`RDD`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from strataflow.common.batch import iter_rows
from strataflow.io.paths import split_paths
from strataflow.pyspark.errors import unsupported
from strataflow.pyspark.rdd import RDD

if TYPE_CHECKING:
    from strataflow.context import Context
    from strataflow.pyspark.conf import SparkConf

_RECURSIVE_KEY = "spark.hadoop.mapreduce.input.fileinputformat.input.dir.recursive"
_URL = ("://", "::", "file:")


def _absolute(path: str) -> list[str]:
    """Each local path of ``path`` (a path, a comma-joined list, a glob) made absolute here
    on the driver, whose working directory is the one the user typed them in: an
    executor's may differ (a Ray actor's does)."""
    return [p if any(u in p for u in _URL) else os.path.abspath(os.path.expanduser(p)) for p in split_paths(path)]


def _hadoop_key(name: str) -> str:
    """A file's key as PySpark gives it: Hadoop's qualified path, ``file:/abs/path`` for a
    local file, the URL itself for any other (``s3a://bucket/key``)."""
    return "file:" + name if name.startswith("/") else name


class SparkContextSources:
    """What makes RDDs (a mixin of ``SparkContext``)."""

    ctx: Context
    _conf: SparkConf

    if TYPE_CHECKING:
        @property
        def defaultParallelism(self) -> int: ...

        @property
        def defaultMinPartitions(self) -> int: ...

    def _rdd(self, dataset: Any) -> RDD[Any]:
        return RDD(dataset, self)

    def parallelize(self, c: Iterable[Any], numSlices: int | None = None) -> RDD[Any]:
        """An RDD of the given records in ``numSlices`` contiguous slices (``Context.parallelize``).

        >>> sc.parallelize(range(5), 2).glom().collect()
        [[0, 1], [2, 3, 4]]
        """
        return self._rdd(self.ctx.parallelize(c, numSlices))

    def range(self, start: int, end: int | None = None, step: int = 1, numSlices: int | None = None) -> RDD[int]:
        """Built as PySpark builds it: Python code that makes each slice's numbers from the
        slice's index, over a collection of the indices (nothing held on the driver).

        >>> sc.range(5).collect(), sc.range(2, 10, 3).collect()
        ([0, 1, 2, 3, 4], [2, 5, 8])
        """
        if end is None:
            start, end = 0, start
        numbers = range(start, end, step)  # range's own errors: a zero step
        n = self.defaultParallelism if numSlices is None else numSlices
        if n < 1:
            raise ValueError(f"range: numSlices must be >= 1, got {n}")
        self.ctx._num(n)  # the bound (max_partitions) before the list of slice indices is made
        return self._rdd(self.ctx.parallelize(list(range(n)), n).map_partitions_with_index(
            lambda i, _, r=numbers, k=n: list(r[len(r) * i // k:len(r) * (i + 1) // k])))

    def emptyRDD(self) -> RDD[Any]:
        """An RDD with no partitions and no records.

        >>> sc.emptyRDD().collect(), sc.emptyRDD().isEmpty()
        ([], True)
        """
        return self._rdd(self.ctx.empty_dataset())

    def union(self, rdds: Sequence[RDD[Any]]) -> RDD[Any]:
        """The partitions of every RDD in ``rdds``, one after the other (no shuffle).

        >>> sc.union([sc.parallelize([1]), sc.parallelize([2, 3])]).collect()
        [1, 2, 3]
        """
        return self._rdd(self.ctx.union(*(r.dataset for r in rdds)))

    def _recursive(self) -> bool:
        """Hadoop's switch for reading directories' subdirectories, set as Spark sets it
        (``spark.hadoop.mapreduce.input.fileinputformat.input.dir.recursive=true``)."""
        return self._conf.get(_RECURSIVE_KEY, "false").strip().lower() == "true"

    def textFile(self, name: str, minPartitions: int | None = None, use_unicode: bool = True) -> RDD[str]:
        r"""Lines of a file, of a directory's files, of a glob's matches, or of several
        paths joined by commas; local (also ``file://``) or at any fsspec URL (``s3://``...).

        >>> _ = open(tmp_dir + "/a.txt", "w").write("x\ny\n"); _ = open(tmp_dir + "/b.txt", "w").write("z\n")
        >>> sc.textFile(tmp_dir + "/a.txt," + tmp_dir + "/b.txt").collect()
        ['x', 'y', 'z']
        """
        n = self.defaultMinPartitions if minPartitions is None else minPartitions
        ds = self.ctx.text_file(name, n, recursive=self._recursive())
        return self._rdd(ds if use_unicode else ds.map(lambda s: s.encode("utf-8")))

    def wholeTextFiles(self, path: str, minPartitions: int | None = None,
                       use_unicode: bool = True) -> RDD[tuple[str, str]]:
        """``(path, content)`` of every file of a directory (``Context.whole_text_files``), a record
        each; the path as PySpark gives it, ``file:/abs/path`` for a local file (a relative
        path is taken from the driver's working directory).

        >>> import os
        >>> os.makedirs(tmp_dir + "/docs"); _ = open(tmp_dir + "/docs/a.txt", "w").write("hi")
        >>> [(p.startswith("file:/"), os.path.basename(p), text) for p, text in sc.wholeTextFiles(tmp_dir + "/docs").collect()]
        [(True, 'a.txt', 'hi')]
        """
        n = self.defaultMinPartitions if minPartitions is None else minPartitions
        ds = self.ctx.whole_text_files(_absolute(path), n, recursive=self._recursive())
        if use_unicode:
            return self._rdd(ds.map(lambda kv: (_hadoop_key(kv[0]), kv[1])))
        return self._rdd(ds.map(lambda kv: (_hadoop_key(kv[0]), kv[1].encode("utf-8"))))

    def binaryFiles(self, path: str, minPartitions: int | None = None) -> RDD[tuple[str, bytes]]:
        r"""``(path, bytes)`` of every file of a directory (or of one file), a record each;
        the path as ``wholeTextFiles`` gives it (``file:/abs/path``).

        >>> import os
        >>> os.makedirs(tmp_dir + "/bin"); _ = open(tmp_dir + "/bin/a.dat", "wb").write(bytes([1, 2]))
        >>> [(p.startswith("file:/"), os.path.basename(p), data) for p, data in sc.binaryFiles(tmp_dir + "/bin").collect()]
        [(True, 'a.dat', b'\x01\x02')]
        """
        n = self.defaultMinPartitions if minPartitions is None else minPartitions
        ds = self.ctx.binary_files(_absolute(path), n, recursive=self._recursive())
        return self._rdd(ds.map(lambda kv: (_hadoop_key(kv[0]), kv[1])))

    def pickleFile(self, name: str, minPartitions: int | None = None) -> RDD[Any]:
        """Records ``saveAsPickleFile`` wrote (a partition per part file; ``minPartitions``
        is accepted and unused).

        Warning: loading a pickle file runs code from it, in every executor that reads it
        (PySpark's ``pickleFile`` too, though its docs do not say so). Read only files you
        trust, written by your own application into a directory no one else can write.

        >>> sc.parallelize([{"a": 1}, [2]]).saveAsPickleFile(tmp_dir + "/p")
        >>> sorted(sc.pickleFile(tmp_dir + "/p").collect(), key=str)
        [[2], {'a': 1}]
        """
        return self._rdd(self.ctx.pickle_file(name, recursive=self._recursive()))

    def runJob(self, rdd: RDD[Any], partitionFunc: Callable[[Iterator[Any]], Iterable[Any]],
               partitions: Sequence[int] | None = None, allowLocal: bool = False) -> list[Any]:
        """``partitionFunc`` over the records of each of ``partitions`` (default all), its
        results flattened in partition order.

        >>> rdd = sc.parallelize(range(6), 3)
        >>> sc.runJob(rdd, lambda records: [sum(records)], partitions=[0, 2])
        [1, 9]
        """
        parts = rdd.dataset._run(lambda v: list(partitionFunc(iter_rows(v))), partitions,
                                 f"runJob {rdd.dataset.label}")
        return [x for p in parts for x in p]

    # -- not supported ---------------------------------------------------------------------------------
    def sequenceFile(self, path: str, *args: Any, **kwargs: Any) -> RDD[Any]:
        """Not supported (UnsupportedOperation): sequence files are a Hadoop format; use
        ``pickleFile``.

        >>> sc.sequenceFile("data.seq")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: sequenceFile is not supported in strataflow ...
        """
        raise unsupported("sequenceFile")

    def hadoopFile(self, path: str, *args: Any, **kwargs: Any) -> RDD[Any]:
        """Not supported (UnsupportedOperation): Hadoop input formats need the JVM; use ``textFile`` or
        ``pickleFile``.

        >>> sc.hadoopFile("data.seq")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: hadoopFile is not supported in strataflow ...
        """
        raise unsupported("hadoopFile")

    def newAPIHadoopFile(self, path: str, *args: Any, **kwargs: Any) -> RDD[Any]:
        """Not supported (UnsupportedOperation): Hadoop input formats need the JVM; use ``textFile`` or
        ``pickleFile``.

        >>> sc.newAPIHadoopFile("data.seq")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: newAPIHadoopFile is not supported in strataflow ...
        """
        raise unsupported("newAPIHadoopFile")

    def hadoopRDD(self, *args: Any, **kwargs: Any) -> RDD[Any]:
        """Not supported (UnsupportedOperation): Hadoop input formats need the JVM; use ``textFile`` or
        ``pickleFile``.

        >>> sc.hadoopRDD("org.apache.hadoop.mapred.TextInputFormat")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: hadoopRDD is not supported in strataflow ...
        """
        raise unsupported("hadoopRDD")

    def newAPIHadoopRDD(self, *args: Any, **kwargs: Any) -> RDD[Any]:
        """Not supported (UnsupportedOperation): Hadoop input formats need the JVM; use ``textFile`` or
        ``pickleFile``.

        >>> sc.newAPIHadoopRDD("org.apache.hadoop.mapreduce.lib.input.TextInputFormat")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: newAPIHadoopRDD is not supported in strataflow ...
        """
        raise unsupported("newAPIHadoopRDD")

    def binaryRecords(self, path: str, recordLength: int) -> RDD[bytes]:
        """Fixed-length records of ``recordLength`` bytes from each file (whose length must
        be a multiple of it).

        >>> _ = open(tmp_dir + "/recs.dat", "wb").write(b"aabbcc")
        >>> sc.binaryRecords(tmp_dir + "/recs.dat", 2).collect()
        [b'aa', b'bb', b'cc']
        """
        if recordLength < 1:
            raise ValueError(f"binaryRecords: recordLength must be >= 1, got {recordLength}")

        def records(kv: tuple) -> list:
            name, data = kv
            if len(data) % recordLength:
                raise ValueError(f"binaryRecords: {name!r} holds {len(data)} bytes, not a multiple of "
                                 f"recordLength={recordLength}")
            return [data[i:i + recordLength] for i in range(0, len(data), recordLength)]

        return self._rdd(self.ctx.binary_files(path, self.defaultParallelism,
                                               recursive=self._recursive()).flat_map(records))
