"""``spark.read`` and ``df.write``: files in and out, with PySpark's options.

Reading: ``reader_options`` turns the options into Spark's settings (refusing what is not
implemented), ``partition_discovery`` lists the files and their ``key=value`` columns,
then ``file_frames`` (CSV, JSON, text: whole files per task, Spark's parsing rules) or
``parquet_dirs`` (Parquet: ``Context.parquet_file``, DuckDB's direct scan on a plain path)
makes the Dataset. Writing goes through the Dataset's atomic writers (a part file per
partition, ``_SUCCESS`` last) or ``partitioned_writes`` (``partitionBy``), published by
``save_modes`` under the save mode.
"""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa

from strataflow.pyspark.errors import AnalysisException, UnsupportedOperation
from strataflow.pyspark.sql.engine import as_table
from strataflow.pyspark.sql.frame_writer import DataFrameWriter

__all__ = ["DataFrameReader", "DataFrameWriter"]  # the writer lives in frame_writer.py


def _schema_of(ds: Any) -> pa.Schema:
    """The schema of a Dataset of Tables: a file source's own (its footers), else its first
    partition's (a job)."""
    known = getattr(ds.node, "schema", None)
    if isinstance(known, pa.Schema):
        return known
    if ds.num_partitions == 0:
        return pa.schema([])
    return ds._run(lambda v: v.schema if isinstance(v, pa.Table) else pa.table({}).schema, [0], "schema")[0]


def _path_list(path: Any, fmt: str = "files") -> list[str]:
    """The paths a reader was given (one, or a list), refusing what is not a path."""
    if path is None:
        raise AnalysisException(f"[UNABLE_TO_INFER_SCHEMA] spark.read.{fmt}: 'path' is not specified",
                                "UNABLE_TO_INFER_SCHEMA")
    if hasattr(path, "collect") and not isinstance(path, str):
        raise UnsupportedOperation(f"[UNSUPPORTED_FEATURE] spark.read.{fmt} of an RDD or DataFrame of lines is not "
                                   f"supported by strataflow (spark.read.json is); write the lines to a file first")
    if isinstance(path, (list, tuple)):
        return [str(p) for p in path]
    return [str(path)]


class DataFrameReader:
    """``spark.read``: ``parquet``, ``csv``, ``json``, ``text``, or ``format(...).load(...)``.

    >>> spark.createDataFrame([(1, "a")], ["n", "s"]).write.csv(tmp_dir + "/t", header=True)
    >>> spark.read.option("header", True).option("inferSchema", True).csv(tmp_dir + "/t").collect()
    [Row(n=1, s='a')]
    """

    def __init__(self, session: Any) -> None:
        self._session, self._options, self._format, self._schema = session, {}, "parquet", None

    def option(self, key: str, value: Any) -> "DataFrameReader":
        """One reader option (``header``, ``inferSchema``, ``sep``, ``mode``...).

        >>> spark.read.option("header", "true")._options
        {'header': 'true'}
        """
        self._options[key] = value
        return self

    def options(self, **opts: Any) -> "DataFrameReader":
        """Several reader options.

        >>> sorted(spark.read.options(header=True, sep=";")._options)
        ['header', 'sep']
        """
        self._options.update(opts)
        return self

    def format(self, source: str) -> "DataFrameReader":
        """The format ``load`` reads: parquet, csv, json or text.

        >>> spark.read.format("csv")._format
        'csv'
        """
        self._format = source.lower()
        return self

    def schema(self, schema: Any) -> "DataFrameReader":
        """The schema to read with (a StructType or a DDL string), instead of inferring one.

        >>> spark.read.schema("a INT, b STRING")._schema.names
        ['a', 'b']
        """
        from strataflow.pyspark.sql.types import _parse_ddl

        self._schema = _parse_ddl(schema) if isinstance(schema, str) else schema
        return self

    def load(self, path: Any = None, format: str | None = None, schema: Any = None, **options: Any) -> Any:
        """Reads ``path`` in the set format.

        >>> spark.range(2).write.parquet(tmp_dir + "/p")
        >>> spark.read.format("parquet").load(tmp_dir + "/p").count()
        2
        """
        if format:
            self.format(format)
        if schema is not None:
            self.schema(schema)
        self._options.update(options)
        reader = {"parquet": self.parquet, "csv": self.csv, "json": self.json, "text": self.text}.get(self._format)
        if reader is None:
            raise UnsupportedOperation(f"format {self._format!r} is not supported; use parquet, csv, json or text")
        return reader(path)

    def _frame(self, ds: Any, schema: pa.Schema, rescan: Any = None) -> Any:
        return self._session._frame_of(ds, schema, "read", rescan)

    def _read_options(self, fmt: str, given: dict[str, Any]) -> Any:
        from strataflow.pyspark.sql.reader_options import reader_options

        conf = self._session.conf  # Spark's session-wide defaults of the generic file options
        defaults = {k: conf.get(f"spark.sql.files.{k}", None) for k in ("ignoreCorruptFiles", "ignoreMissingFiles")}
        return reader_options(fmt, {**{k: v for k, v in defaults.items() if v is not None}, **self._options,
                                    **{k: v for k, v in given.items() if v is not None}})

    def _listed(self, paths: list[str], opts: Any, fmt: str) -> Any:
        from strataflow.pyspark.sql.file_frames import _session_zone
        from strataflow.pyspark.sql.partition_discovery import list_input

        return list_input(paths, opts, _session_zone(self._session), fmt)

    def parquet(self, *paths: Any, **options: Any) -> Any:
        """Parquet files (a file, a directory, a glob; ``key=value`` directories give
        partition columns). Options: ``mergeSchema`` (columns of every file; strataflow
        always unifies the files' schemas), ``pathGlobFilter``, ``recursiveFileLookup``,
        ``modifiedBefore``/``modifiedAfter``.

        >>> spark.createDataFrame([(1.5,)], ["x"]).write.parquet(tmp_dir + "/x")
        >>> spark.read.parquet(tmp_dir + "/x").first()
        Row(x=1.5)
        """
        from strataflow.pyspark.sql.parquet_dirs import parquet_frame

        opts = self._read_options("parquet", options)
        listed = self._listed([p for path in paths for p in _path_list(path)], opts, "parquet")
        ds, schema, rescan = parquet_frame(self._session.sparkContext.ctx, paths, listed, opts, self._schema)
        return self._frame(ds, schema, rescan)

    def csv(self, path: Any, schema: Any = None, **options: Any) -> Any:
        """Delimited text with every option of PySpark's ``DataFrameReader.csv`` (``header``,
        ``inferSchema``, ``sep``, ``nullValue``, ``emptyValue``, ``dateFormat``, ``multiLine``,
        ``encoding``, ``comment``, ``escape`` (``\\`` by default, as Spark), ``quote``,
        ``lineSep``, ``mode`` and ``columnNameOfCorruptRecord``...), read as Spark reads it
        (``csv_records.py``); an option value strataflow does not implement is refused.

        >>> spark.createDataFrame([(1, "a")], ["n", "s"]).write.csv(tmp_dir + "/c")
        >>> spark.read.csv(tmp_dir + "/c").collect()
        [Row(_c0='1', _c1='a')]
        """
        from strataflow.pyspark.sql.file_frames import csv_frame

        if schema is not None:
            self.schema(schema)
        opts = self._read_options("csv", options)
        ds, arrow = csv_frame(self._session, self._listed(_path_list(path, "csv"), opts, "csv"), opts, self._schema)
        return self._frame(ds, arrow)

    def json(self, path: Any, schema: Any = None, **options: Any) -> Any:
        """JSON lines (one object per line; a file per record with ``multiLine``), or an RDD of
        JSON strings; the schema inferred as Spark does (fields in name order, ISO dates kept
        as strings) unless given; ``mode`` and ``columnNameOfCorruptRecord`` as Spark's.

        >>> spark.createDataFrame([(1, "a")], ["n", "s"]).write.json(tmp_dir + "/j")
        >>> spark.read.json(tmp_dir + "/j").collect()
        [Row(n=1, s='a')]
        """
        from strataflow.pyspark.sql.file_frames import json_frame, json_lines_frame

        if schema is not None:
            self.schema(schema)
        opts = self._read_options("json", options)
        dataset = getattr(path, "dataset", None)
        if hasattr(path, "_current") and hasattr(path, "sparkSession"):  # a DataFrame of one string column
            plan = path._current
            if len(plan.fields) != 1 or not pa.types.is_string(plan.schema.field(0).type):
                raise AnalysisException(f"[INVALID_JSON_INPUT] spark.read.json of a DataFrame takes one string "
                                        f"column, not {[f.name for f in plan.fields]}", "INVALID_JSON_INPUT")
            lines = plan.dataset().map_partitions(functools.partial(_strings, plan.schema))
            ds, arrow = json_lines_frame(self._session, lines, opts, self._schema)
        elif dataset is not None and hasattr(path, "collect"):  # an RDD of JSON strings
            ds, arrow = json_lines_frame(self._session, dataset, opts, self._schema)
        else:
            ds, arrow = json_frame(self._session, self._listed(_path_list(path, "json"), opts, "json"), opts,
                                    self._schema)
        return self._frame(ds, arrow)

    def text(self, paths: Any, wholetext: bool = False, lineSep: str | None = None, **options: Any) -> Any:
        """Text lines (or whole files, ``wholetext``) as one string column, ``value``; lines
        end at ``\\n``, ``\\r\\n`` or ``\\r`` unless ``lineSep`` says otherwise.

        >>> spark.createDataFrame([("hi",)], ["value"]).write.text(tmp_dir + "/txt")
        >>> spark.read.text(tmp_dir + "/txt").collect()
        [Row(value='hi')]
        """
        from strataflow.pyspark.sql.file_frames import text_frame

        # as PySpark's, the keyword's default (False) replaces an .option("wholetext", ...)
        opts = self._read_options("text", {**options, "wholetext": wholetext, "lineSep": lineSep})
        ds, arrow = text_frame(self._session, self._listed(_path_list(paths, "text"), opts, "text"), opts)
        if self._schema is not None:  # Spark's text source takes one string column's name from a schema
            fields = self._schema.fields
            if len(fields) != 1 or fields[0].dataType.simpleString() != "string":
                raise AnalysisException(f"[UNSUPPORTED_DATA_TYPE] Text data source supports only a single column of "
                                        f"string type, and you have {self._schema.simpleString()}.",
                                        "UNSUPPORTED_DATA_TYPE")
            ds = ds.map_partitions(functools.partial(_renamed_first, fields[0].name))
            arrow = pa.schema([arrow.field(0).with_name(fields[0].name)] + list(arrow)[1:])
        return self._frame(ds, arrow)

    def orc(self, path: Any, **options: Any) -> Any:
        """Refused: strataflow reads Parquet, CSV, JSON and text.

        >>> spark.read.orc(tmp_dir)
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: [UNSUPPORTED_DATA_SOURCE] spark.read.orc...
        """
        raise UnsupportedOperation("[UNSUPPORTED_DATA_SOURCE] spark.read.orc is not supported by strataflow; "
                                   "use parquet, csv, json or text")

    def xml(self, path: Any, **options: Any) -> Any:
        """Refused, as ``orc``.

        >>> spark.read.xml(tmp_dir)
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: [UNSUPPORTED_DATA_SOURCE] spark.read.xml...
        """
        raise UnsupportedOperation("[UNSUPPORTED_DATA_SOURCE] spark.read.xml is not supported by strataflow; "
                                   "use parquet, csv, json or text")

    def table(self, tableName: str) -> Any:
        """A temporary view by name (``spark.table``).

        >>> spark.range(1).createOrReplaceTempView("one_row")
        >>> spark.read.table("one_row").count()
        1
        """
        return self._session.table(tableName)


def _strings(schema: pa.Schema, value: Any) -> list:
    return as_table(value, schema).column(0).to_pylist()


def _renamed_first(name: str, value: Any) -> Any:
    if not isinstance(value, pa.Table):
        return value
    return value.rename_columns([name] + value.column_names[1:])
