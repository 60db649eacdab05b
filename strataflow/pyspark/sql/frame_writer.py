"""``df.write``: a DataFrame to files, with PySpark's writer options.

Each format's text is made by ``text_output`` (Spark's bytes), its options parsed by
``writer_options`` (honoured or refused by name); a part file per partition through the
Dataset's atomic writers, or ``partitioned_writes`` under ``partitionBy``, published by
``save_modes`` under the save mode.
"""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa

from strataflow.pyspark.errors import AnalysisException, UnsupportedOperation
from strataflow.pyspark.sql.engine import as_table
from strataflow.pyspark.sql.save_modes import write_with_mode
from strataflow.pyspark.sql.show import zone_of
from strataflow.pyspark.sql.text_output import csv_lines, json_lines

__all__ = ["DataFrameWriter"]


class DataFrameWriter:
    """``df.write``: ``mode`` (error, overwrite, append, ignore), then ``parquet``, ``csv``, ``json`` or ``text``.

    >>> spark.range(2).write.mode("overwrite").json(tmp_dir + "/w")
    >>> sorted(r.id for r in spark.read.json(tmp_dir + "/w").collect())
    [0, 1]
    """

    def __init__(self, df: Any) -> None:
        self._df, self._mode, self._options, self._format = df, "error", {}, "parquet"
        self._partition_by: list[str] = []

    def __repr__(self) -> str:
        # the module PySpark's users see it in (``spark.read``'s module): it lives in frame_writer.py
        return f"<strataflow.pyspark.sql.readwriter.DataFrameWriter object at {id(self):#x}>"

    def partitionBy(self, *cols: Any) -> "DataFrameWriter":
        """Writes the rows in ``col=value`` directories, the columns left out of the files
        (``partitioned_writes.py``); ``spark.read`` gives them back as columns.

        >>> df = spark.createDataFrame([(1, "a"), (2, "b")], ["n", "k"])
        >>> df.write.partitionBy("k").parquet(tmp_dir + "/by_k")
        >>> sorted(r.k for r in spark.read.parquet(tmp_dir + "/by_k").collect())
        ['a', 'b']
        """
        names = [c for arg in cols for c in (arg if isinstance(arg, (list, tuple)) else [arg])]
        have = [f.name for f in self._df._current.fields]
        missing = [c for c in names if c not in have]
        if missing:
            raise AnalysisException(f"[COLUMN_NOT_DEFINED_IN_TABLE] partition column(s) {missing} not found in the "
                                    f"DataFrame's columns {have}", "COLUMN_NOT_DEFINED_IN_TABLE")
        if names and len(set(names)) == len(have):
            raise AnalysisException("[ALL_PARTITION_COLUMNS_NOT_ALLOWED] Cannot use all columns for partition "
                                    "columns.", "ALL_PARTITION_COLUMNS_NOT_ALLOWED")
        self._partition_by = names
        return self

    def mode(self, saveMode: str | None) -> "DataFrameWriter":
        """What to do when the path exists: ``error`` (default), ``overwrite`` (the new data
        replaces it once written whole: the old stays if the job fails), ``append`` (new
        part files beside its own), ``ignore`` (write nothing); ``save_modes.py``.

        >>> spark.range(1).write.mode("ignore")._mode
        'ignore'
        """
        m = (saveMode or "error").lower()
        if m == "errorifexists":
            m = "error"
        if m not in ("error", "overwrite", "append", "ignore"):
            raise ValueError(f"Unknown save mode: {saveMode}. Accepted: error, errorifexists, overwrite, append, "
                             f"ignore")
        self._mode = m
        return self

    def option(self, key: str, value: Any) -> "DataFrameWriter":
        """One writer option (``header``, ``sep``).

        >>> spark.range(1).write.option("header", True)._options
        {'header': True}
        """
        self._options[key] = value
        return self

    def options(self, **opts: Any) -> "DataFrameWriter":
        """Several writer options.

        >>> sorted(spark.range(1).write.options(header=True, sep=";")._options)
        ['header', 'sep']
        """
        self._options.update(opts)
        return self

    def format(self, source: str) -> "DataFrameWriter":
        """The format ``save`` writes.

        >>> spark.range(1).write.format("json")._format
        'json'
        """
        self._format = source.lower()
        return self

    def save(self, path: str, format: str | None = None, mode: str | None = None, **options: Any) -> None:
        """Writes in the set format.

        >>> spark.range(2).write.format("csv").save(tmp_dir + "/s")
        >>> spark.read.csv(tmp_dir + "/s").count()
        2
        """
        if format:
            self.format(format)
        if mode:
            self.mode(mode)
        self._options.update(options)
        if self._format not in ("parquet", "csv", "json", "text"):
            raise UnsupportedOperation(f"[UNSUPPORTED_DATA_SOURCE] df.write format {self._format!r} is not supported by "
                                       f"strataflow; use parquet, csv, json or text")
        getattr(self, self._format)(path)

    def bucketBy(self, numBuckets: int, col: Any, *cols: Any) -> "DataFrameWriter":
        """Refused: buckets need a table catalog (``saveAsTable``), which strataflow has not.

        >>> spark.range(1).write.bucketBy(2, "id")
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: [UNSUPPORTED_FEATURE] df.write.bucketBy needs a table catalog...
        """
        raise UnsupportedOperation("[UNSUPPORTED_FEATURE] df.write.bucketBy needs a table catalog (saveAsTable), "
                                   "which strataflow has not; use partitionBy and a path")

    def _no_catalog(self, what: str) -> UnsupportedOperation:
        return UnsupportedOperation(f"[UNSUPPORTED_FEATURE] df.write.{what} needs a table catalog, which strataflow "
                                    f"has not; write to a path (parquet, csv, json, text) and read it back, or "
                                    f"createOrReplaceTempView")

    def saveAsTable(self, name: str, format: str | None = None, mode: str | None = None, **options: Any) -> None:
        """Refused: strataflow has temporary views, not a table catalog.

        >>> spark.range(1).write.saveAsTable("t")
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: [UNSUPPORTED_FEATURE] df.write.saveAsTable needs a table...
        """
        raise self._no_catalog("saveAsTable")

    def insertInto(self, tableName: str, overwrite: bool | None = None) -> None:
        """Refused, as ``saveAsTable``.

        >>> spark.range(1).write.insertInto("t")
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: [UNSUPPORTED_FEATURE] df.write.insertInto needs a table...
        """
        raise self._no_catalog("insertInto")

    def clusterBy(self, *cols: Any) -> "DataFrameWriter":
        """Refused, as ``saveAsTable`` (clustering is a table's property).

        >>> spark.range(1).write.clusterBy("id")
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: [UNSUPPORTED_FEATURE] df.write.clusterBy needs a table...
        """
        raise self._no_catalog("clusterBy")

    def orc(self, path: str, **options: Any) -> None:
        """Refused: strataflow writes Parquet, CSV, JSON and text.

        >>> spark.range(1).write.orc(tmp_dir + "/o")
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: [UNSUPPORTED_DATA_SOURCE] df.write format 'orc'...
        """
        self.format("orc").save(path)

    def xml(self, path: str, **options: Any) -> None:
        """Refused, as ``orc``.

        >>> spark.range(1).write.xml(tmp_dir + "/x")
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: [UNSUPPORTED_DATA_SOURCE] df.write format 'xml'...
        """
        self.format("xml").save(path)

    def sortBy(self, col: Any, *cols: Any) -> "DataFrameWriter":
        """Refused, as ``bucketBy`` (Spark takes it only with buckets).

        >>> spark.range(1).write.sortBy("id")
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: [UNSUPPORTED_FEATURE] df.write.sortBy needs bucketBy...
        """
        raise UnsupportedOperation("[UNSUPPORTED_FEATURE] df.write.sortBy needs bucketBy, which strataflow has not; "
                                   "sort the DataFrame (sortWithinPartitions) before writing")

    def _write(self, path: str, fmt: str, parts: Any, save: str, codec: str | None = None) -> None:
        """The frame's partitions mapped by ``parts`` (a function of schema, names, value),
        written by the dataset's ``save`` method under the save mode (or, partitioned, a
        file per task and partition value), text compressed with ``codec``."""
        keys = self._partition_by

        def write(target: str) -> None:
            plan = self._df._current
            names = [f.name for f in plan.fields]
            if keys:
                from strataflow.pyspark.sql.partitioned_writes import lines_bytes, parquet_bytes, write_partitioned

                ds = plan.dataset().map_partitions(functools.partial(_named, plan.schema, names))
                encode = parquet_bytes if fmt == "parquet" else functools.partial(
                    lines_bytes, functools.partial(_table_lines, parts), codec)
                ext = {"parquet": ".snappy.parquet", "csv": ".csv", "json": ".json", "text": ".txt"}[fmt]
                write_partitioned(ds, keys, encode, ext + _suffix(codec), target, zone_of(self._df.sparkSession))
                return
            ds = plan.dataset().map_partitions(functools.partial(parts, plan.schema, names))
            if codec is not None:
                getattr(ds, save)(target, compression=codec)
            else:
                getattr(ds, save)(target)

        write_with_mode(path, self._mode, write, fmt)

    def _writer_options(self, fmt: str, given: dict[str, Any]) -> Any:
        from strataflow.pyspark.sql.writer_options import writer_options

        return writer_options(fmt, {**self._options, **{k: v for k, v in given.items() if v is not None}})

    def parquet(self, path: str, mode: str | None = None, **options: Any) -> None:
        """Parquet, a part file per partition (snappy, Spark's default compression).

        >>> spark.range(3).write.parquet(tmp_dir + "/pq"); spark.read.parquet(tmp_dir + "/pq").count()
        3
        """
        if mode:
            self.mode(mode)
        self._writer_options("parquet", options)
        self._write(path, "parquet", _named, "save_as_parquet")

    def csv(self, path: str, mode: str | None = None, **options: Any) -> None:
        """CSV text as Spark writes it (``text_output.py``), a part file per partition, with
        Spark's writer options: ``header``, ``sep``, ``nullValue``, ``emptyValue``, ``quote``,
        ``escape``, ``quoteAll``, ``ignoreLeading/TrailingWhiteSpace``, ``lineSep``,
        ``compression`` (``writer_options.py``; others refused by name).

        >>> spark.range(2).write.csv(tmp_dir + "/csv", header=True)
        >>> spark.read.csv(tmp_dir + "/csv", header=True).collect()
        [Row(id='0'), Row(id='1')]
        """
        if mode:
            self.mode(mode)
        o = self._writer_options("csv", options)
        lines = functools.partial(csv_lines, o, zone=zone_of(self._df.sparkSession))
        self._write(path, "csv", lines, "save_as_text_file", o.codec)

    def json(self, path: str, mode: str | None = None, **options: Any) -> None:
        """JSON lines (nulls left out, as Spark writes them, unless ``ignoreNullFields=false``).

        >>> spark.createDataFrame([(1, None)], "a int, b string").write.json(tmp_dir + "/js")
        >>> spark.read.json(tmp_dir + "/js").columns
        ['a']
        """
        if mode:
            self.mode(mode)
        o = self._writer_options("json", options)
        lines = functools.partial(json_lines, zone=zone_of(self._df.sparkSession), nulls=not o.ignore_null_fields)
        self._write(path, "json", lines, "save_as_text_file", o.codec)

    def text(self, path: str, **options: Any) -> None:
        """One string column, a line per row.

        >>> spark.createDataFrame([("a",), ("b",)], ["value"]).write.text(tmp_dir + "/tx")
        >>> spark.read.text(tmp_dir + "/tx").count()
        2
        """
        if len(self._df._current.fields) != 1:
            raise AnalysisException(f"Text data source supports only a single column, and you have "
                                    f"{len(self._df._current.fields)} columns.", "UNSUPPORTED_DATA_TYPE")
        o = self._writer_options("text", options)
        self._write(path, "text", _text_lines, "save_as_text_file", o.codec)


def _suffix(codec: str | None) -> str:
    from strataflow.io.compression import CODECS

    return CODECS[codec] if codec else ""


def _table_lines(parts: Any, table: pa.Table) -> list[str]:
    return parts(table.schema, table.column_names, table)


def _named(schema: pa.Schema, names: list[str], value: Any) -> pa.Table:
    return as_table(value, schema).rename_columns(names)


def _text_lines(schema: pa.Schema, names: list[str], value: Any) -> list[str]:
    return [v for v in as_table(value, schema).column(0).to_pylist() if v is not None]
