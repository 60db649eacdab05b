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
from strataflow.pyspark.sql.save_modes import write_with_mode
from strataflow.pyspark.sql.show import zone_of
from strataflow.pyspark.sql.text_output import csv_lines, json_lines

__all__ = ["DataFrameReader", "DataFrameWriter"]


def _schema_of(ds: Any) -> pa.Schema:
    """The schema of a Dataset of Tables: a file source's own (its footers), else its first
    partition's (a job)."""
    known = getattr(ds.node, "schema", None)
    if isinstance(known, pa.Schema):
        return known
    if ds.num_partitions == 0:
        return pa.schema([])
    return ds._run(lambda v: v.schema if isinstance(v, pa.Table) else pa.table({}).schema, [0], "schema")[0]


def _path_list(path: Any) -> list[str]:
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
        ds, arrow = csv_frame(self._session, self._listed(_path_list(path), opts, "csv"), opts, self._schema)
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
            ds, arrow = json_frame(self._session, self._listed(_path_list(path), opts, "json"), opts, self._schema)
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
        ds, arrow = text_frame(self._session, self._listed(_path_list(paths), opts, "text"), opts)
        if self._schema is not None:  # Spark's text source takes one string column's name from a schema
            fields = self._schema.fields
            if len(fields) != 1 or fields[0].dataType.simpleString() != "string":
                raise AnalysisException(f"[UNSUPPORTED_DATA_TYPE] Text data source supports only a single column of "
                                        f"string type, and you have {self._schema.simpleString()}.",
                                        "UNSUPPORTED_DATA_TYPE")
            ds = ds.map_partitions(functools.partial(_renamed_first, fields[0].name))
            arrow = pa.schema([arrow.field(0).with_name(fields[0].name)] + list(arrow)[1:])
        return self._frame(ds, arrow)

    def table(self, tableName: str) -> Any:
        """A temporary view by name (``spark.table``).

        >>> spark.range(1).createOrReplaceTempView("one_row")
        >>> spark.read.table("one_row").count()
        1
        """
        return self._session.table(tableName)


class DataFrameWriter:
    """``df.write``: ``mode`` (error, overwrite, append, ignore), then ``parquet``, ``csv``, ``json`` or ``text``.

    >>> spark.range(2).write.mode("overwrite").json(tmp_dir + "/w")
    >>> sorted(r.id for r in spark.read.json(tmp_dir + "/w").collect())
    [0, 1]
    """

    def __init__(self, df: Any) -> None:
        self._df, self._mode, self._options, self._format = df, "error", {}, "parquet"
        self._partition_by: list[str] = []

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


def _strings(schema: pa.Schema, value: Any) -> list:
    return as_table(value, schema).column(0).to_pylist()


def _renamed_first(name: str, value: Any) -> Any:
    if not isinstance(value, pa.Table):
        return value
    return value.rename_columns([name] + value.column_names[1:])


def _suffix(codec: str | None) -> str:
    from strataflow.io.compression import CODECS

    return CODECS[codec] if codec else ""


def _table_lines(parts: Any, table: pa.Table) -> list[str]:
    return parts(table.schema, table.column_names, table)


def _named(schema: pa.Schema, names: list[str], value: Any) -> pa.Table:
    return as_table(value, schema).rename_columns(names)


def _text_lines(schema: pa.Schema, names: list[str], value: Any) -> list[str]:
    return [v for v in as_table(value, schema).column(0).to_pylist() if v is not None]
