"""``RDD``'s writers: ``saveAsTextFile`` and ``saveAsPickleFile``, and the Hadoop output
formats and ``toDF``, which raise :class:`UnsupportedOperation`.

A mixin of :class:`~strataflow.pyspark.rdd.RDD`, apart because it holds what strataflow
cannot do as PySpark does (the JVM's output formats) beside the two writers it has.
"""

from __future__ import annotations

from typing import Any, TypeVar

from strataflow.io.compression import CodecError
from strataflow.pyspark.errors import UnsupportedOperation, unsupported
from strataflow.pyspark.rdd_group import RDDGroup


T = TypeVar("T")


class RDDOutput(RDDGroup[T]):
    """Writing the records to files (a mixin of ``RDD``)."""

    def saveAsTextFile(self, path: str, compressionCodecClass: str | None = None) -> None:
        """A ``part-NNNNN`` file per partition, a line per record (gzip, bzip2, deflate or xz by codec
        class name; Snappy, LZ4 and Zstandard raise UnsupportedOperation).

        >>> sc.parallelize(["one", "two"]).saveAsTextFile(tmp_dir + "/t", "org.apache.hadoop.io.compress.GzipCodec")
        >>> sc.textFile(tmp_dir + "/t").collect()
        ['one', 'two']
        """
        try:
            self.dataset.save_as_text_file(path, compressionCodecClass)
        except CodecError as exc:
            raise UnsupportedOperation(str(exc)) from None

    def saveAsPickleFile(self, path: str, batchSize: int = 10) -> None:
        """Writes the records as pickles in batches of ``batchSize``; ``SparkContext.pickleFile`` reads
        them back. Loading a pickle file runs code from it: write them where no one else can
        write, and read back only your own.

        >>> sc.parallelize([{"a": 1}, None], 1).saveAsPickleFile(tmp_dir + "/p")
        >>> sc.pickleFile(tmp_dir + "/p").collect()
        [{'a': 1}, None]
        """
        self.dataset.save_as_pickle_file(path, batchSize)

    def saveAsSequenceFile(self, path: str, compressionCodecClass: str | None = None) -> None:
        """Not supported (UnsupportedOperation): sequence files are a Hadoop format; use
        ``saveAsPickleFile``.

        >>> sc.parallelize([("k", 1)]).saveAsSequenceFile(tmp_dir + "/s")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: saveAsSequenceFile is not supported in strataflow ...
        """
        raise unsupported("saveAsSequenceFile")

    def saveAsHadoopFile(self, path: str, outputFormatClass: str, *args: Any, **kwargs: Any) -> None:
        """Not supported (UnsupportedOperation): Hadoop output formats need the JVM.

        >>> sc.parallelize([("k", 1)]).saveAsHadoopFile(tmp_dir + "/h", "TextOutputFormat")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: saveAsHadoopFile is not supported in strataflow ...
        """
        raise unsupported("saveAsHadoopFile")

    def saveAsNewAPIHadoopFile(self, path: str, outputFormatClass: str, *args: Any, **kwargs: Any) -> None:
        """Not supported (UnsupportedOperation): Hadoop output formats need the JVM.

        >>> sc.parallelize([("k", 1)]).saveAsNewAPIHadoopFile(tmp_dir + "/h", "TextOutputFormat")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: saveAsNewAPIHadoopFile is not supported in strataflow ...
        """
        raise unsupported("saveAsNewAPIHadoopFile")

    def saveAsHadoopDataset(self, conf: dict, *args: Any, **kwargs: Any) -> None:
        """Not supported (UnsupportedOperation): Hadoop output formats need the JVM.

        >>> sc.parallelize([("k", 1)]).saveAsHadoopDataset({})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: saveAsHadoopDataset is not supported in strataflow ...
        """
        raise unsupported("saveAsHadoopDataset")

    def saveAsNewAPIHadoopDataset(self, conf: dict, *args: Any, **kwargs: Any) -> None:
        """Not supported (UnsupportedOperation): Hadoop output formats need the JVM.

        >>> sc.parallelize([("k", 1)]).saveAsNewAPIHadoopDataset({})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: saveAsNewAPIHadoopDataset is not supported in strataflow ...
        """
        raise unsupported("saveAsNewAPIHadoopDataset")

    def toDF(self, schema: Any = None, sampleRatio: float | None = None) -> Any:
        """Not supported (UnsupportedOperation): there is no SparkSession or DataFrame API;
        ``collect()``, or use the native API's pandas/Arrow interop.

        >>> sc.parallelize([(1, "a")]).toDF()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: toDF is not supported in strataflow: ...
        """
        raise UnsupportedOperation("toDF is not supported in strataflow: there is no SparkSession or DataFrame "
                                   "API; collect() the records, or use the pandas/Arrow interop of the native API")
