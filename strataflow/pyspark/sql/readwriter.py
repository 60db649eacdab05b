"""``spark.read`` and ``df.write``: files in and out, with PySpark's options.

Reading goes through strataflow's readers (``parquet_file``, ``csv_file``, ``text_file``),
so their partitioning and the input cache apply; JSON is read as JSON lines (Spark's
default), its schema inferred from the first partition with fields in name order, as
Spark orders them. Writing goes through the Dataset's atomic writers (a part file per
partition, ``_SUCCESS`` last).
"""

from __future__ import annotations

import functools
import io
import json
from typing import Any

import pyarrow as pa

from strataflow.pyspark.errors import AnalysisException, UnsupportedOperation
from strataflow.pyspark.sql.engine import as_table
from strataflow.pyspark.sql.save_modes import write_with_mode

__all__ = ["DataFrameReader", "DataFrameWriter"]


def _truthy(v: Any) -> bool:
    return str(v).lower() == "true"


def _json_table(schema: pa.Schema | None, lines: Any) -> pa.Table:
    import pyarrow.json as pj

    text = "\n".join(line for line in lines if line.strip())
    if not text:
        return schema.empty_table() if schema is not None else pa.table({})
    opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore") if schema else None
    t = pj.read_json(io.BytesIO(text.encode()), parse_options=opts) if opts else pj.read_json(io.BytesIO(text.encode()))
    return t.select(sorted(t.column_names)) if schema is None else t


def _lines_table(lines: Any) -> pa.Table:
    return pa.table({"value": pa.array(list(lines), pa.string())})


def _schema_of(ds: Any) -> pa.Schema:
    """The schema of a Dataset of Tables: a file source's own (its footers), else its first
    partition's (a job)."""
    known = getattr(ds.node, "schema", None)
    if isinstance(known, pa.Schema):
        return known
    if ds.num_partitions == 0:
        return pa.schema([])
    return ds._run(lambda v: v.schema if isinstance(v, pa.Table) else pa.table({}).schema, [0], "schema")[0]


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

    def parquet(self, *paths: Any, **options: Any) -> Any:
        """Parquet files (a file, a directory, a glob).

        >>> spark.createDataFrame([(1.5,)], ["x"]).write.parquet(tmp_dir + "/x")
        >>> spark.read.parquet(tmp_dir + "/x").first()
        Row(x=1.5)
        """
        ctx = self._session.sparkContext.ctx
        where = list(paths) if len(paths) > 1 else paths[0]
        ds = ctx.parquet_file(where)
        return self._frame(ds, _schema_of(ds), functools.partial(_parquet_columns, ctx, where))

    def csv(self, path: Any, schema: Any = None, sep: str | None = None, header: Any = None,
            inferSchema: Any = None, mode: str | None = None, **options: Any) -> Any:
        """Delimited text: ``header``, ``inferSchema`` (default false: strings, as Spark),
        ``sep``, ``mode`` (PERMISSIVE, DROPMALFORMED, FAILFAST), ``schema``.

        >>> spark.createDataFrame([(1, "a")], ["n", "s"]).write.csv(tmp_dir + "/c")
        >>> spark.read.csv(tmp_dir + "/c").collect()
        [Row(_c0='1', _c1='a')]
        """
        o = {**self._options, **options}
        for k, v in (("sep", sep), ("header", header), ("inferSchema", inferSchema), ("mode", mode)):
            if v is not None:
                o[k] = v
        if schema is not None:
            self.schema(schema)
        kwargs: dict[str, Any] = {"delimiter": o.get("sep", o.get("delimiter", ",")),
                                  "header": _truthy(o.get("header", False)),
                                  "infer_schema": _truthy(o.get("inferSchema", False)),
                                  "mode": str(o.get("mode", "PERMISSIVE")).upper(), "corrupt_record_column": None}
        if self._schema is not None:
            kwargs["column_names"] = self._schema.names
            kwargs["column_types"] = {f.name: f.dataType.to_arrow() for f in self._schema}
        ds = self._session.sparkContext.ctx.csv_file(path, **kwargs)
        schema_ = _schema_of(ds)
        ds = ds.map_partitions(_empty_is_null)  # Spark reads an empty field as null
        if self._schema is None and not kwargs["header"]:
            names = [f"_c{i}" for i in range(len(schema_))]
            ds = ds.map_partitions(functools.partial(_renamed, names))
            schema_ = pa.schema([f.with_name(n) for f, n in zip(schema_, names)])
        return self._frame(ds, schema_)

    def json(self, path: Any, schema: Any = None, **options: Any) -> Any:
        """JSON lines, one object per line; fields in name order unless ``schema`` is given.

        >>> spark.createDataFrame([(1, "a")], ["n", "s"]).write.json(tmp_dir + "/j")
        >>> spark.read.json(tmp_dir + "/j").collect()
        [Row(n=1, s='a')]
        """
        if schema is not None:
            self.schema(schema)
        lines = self._session.sparkContext.ctx.text_file(path)
        if self._schema is not None:
            arrow = self._schema.to_arrow()
        else:
            first = lines.map_partitions(functools.partial(_json_table, None))
            arrow = _schema_of(first) if lines.num_partitions else pa.schema([])
        return self._frame(lines.map_partitions(functools.partial(_json_table, arrow)), arrow)

    def text(self, paths: Any, **options: Any) -> Any:
        """Text lines as one string column, ``value``.

        >>> spark.createDataFrame([("hi",)], ["value"]).write.text(tmp_dir + "/txt")
        >>> spark.read.text(tmp_dir + "/txt").collect()
        [Row(value='hi')]
        """
        ds = self._session.sparkContext.ctx.text_file(paths).map_partitions(_lines_table)
        return self._frame(ds, pa.schema([("value", pa.string())]))

    def table(self, tableName: str) -> Any:
        """A temporary view by name (``spark.table``).

        >>> spark.range(1).createOrReplaceTempView("one_row")
        >>> spark.read.table("one_row").count()
        1
        """
        return self._session.table(tableName)


def _empty_is_null(value: Any) -> Any:
    if not isinstance(value, pa.Table):
        return value
    import pyarrow.compute as pc

    cols = [pc.if_else(pc.equal(c, ""), pa.scalar(None, c.type), c) if pa.types.is_string(c.type) else c
            for c in value.columns]
    return pa.Table.from_arrays(cols, schema=value.schema)


def _parquet_columns(ctx: Any, where: Any, columns: list[str]) -> Any:
    return ctx.parquet_file(where, columns=columns)


def _renamed(names: list[str], value: Any) -> Any:
    return value.rename_columns(names) if isinstance(value, pa.Table) else value


def _csv_lines(header: bool, sep: str, schema: pa.Schema, names: list[str], value: Any) -> list[str]:
    import pyarrow.csv as pc

    t = as_table(value, schema).rename_columns(names)
    if t.num_rows == 0 and not header:
        return []
    buf = io.BytesIO()
    opts = pc.WriteOptions(include_header=header, delimiter=sep, quoting_style="needed")
    pc.write_csv(t, buf, write_options=opts)
    text = buf.getvalue().decode()
    return [text[:-1] if text.endswith("\n") else text]


def _json_lines(schema: pa.Schema, names: list[str], value: Any) -> list[str]:
    t = as_table(value, schema)
    cols = [c.to_pylist() for c in t.columns]
    return [json.dumps({n: v for n, v in zip(names, row) if v is not None}, default=str, ensure_ascii=False)
            for row in zip(*cols)]


class DataFrameWriter:
    """``df.write``: ``mode`` (error, overwrite, append, ignore), then ``parquet``, ``csv``, ``json`` or ``text``.

    >>> spark.range(2).write.mode("overwrite").json(tmp_dir + "/w")
    >>> sorted(r.id for r in spark.read.json(tmp_dir + "/w").collect())
    [0, 1]
    """

    def __init__(self, df: Any) -> None:
        self._df, self._mode, self._options, self._format = df, "error", {}, "parquet"

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
        getattr(self, self._format)(path)

    def _write(self, path: str, fmt: str, parts: Any, save: str) -> None:
        """The frame's partitions mapped by ``parts`` (a function of schema, names, value),
        written by the dataset's ``save`` method under the save mode."""
        def write(target: str) -> None:
            plan = self._df._current
            ds = plan.dataset().map_partitions(functools.partial(parts, plan.schema, [f.name for f in plan.fields]))
            getattr(ds, save)(target)

        write_with_mode(path, self._mode, write, fmt)

    def parquet(self, path: str, mode: str | None = None, **options: Any) -> None:
        """Parquet, a part file per partition.

        >>> spark.range(3).write.parquet(tmp_dir + "/pq"); spark.read.parquet(tmp_dir + "/pq").count()
        3
        """
        if mode:
            self.mode(mode)
        self._write(path, "parquet", _named, "save_as_parquet")

    def csv(self, path: str, mode: str | None = None, header: Any = None, sep: str | None = None,
            **options: Any) -> None:
        """CSV text, a part file per partition (a header line in each with ``header``).

        >>> spark.range(2).write.csv(tmp_dir + "/csv", header=True)
        >>> spark.read.csv(tmp_dir + "/csv", header=True).collect()
        [Row(id='0'), Row(id='1')]
        """
        if mode:
            self.mode(mode)
        o = {**self._options, **options}
        if header is not None:
            o["header"] = header
        lines = functools.partial(_csv_lines, _truthy(o.get("header", False)), o.get("sep", sep or ","))
        self._write(path, "csv", lines, "save_as_text_file")

    def json(self, path: str, mode: str | None = None, **options: Any) -> None:
        """JSON lines (nulls left out, as Spark writes them).

        >>> spark.createDataFrame([(1, None)], "a int, b string").write.json(tmp_dir + "/js")
        >>> spark.read.json(tmp_dir + "/js").columns
        ['a']
        """
        if mode:
            self.mode(mode)
        self._write(path, "json", _json_lines, "save_as_text_file")

    def text(self, path: str, **options: Any) -> None:
        """One string column, a line per row.

        >>> spark.createDataFrame([("a",), ("b",)], ["value"]).write.text(tmp_dir + "/tx")
        >>> spark.read.text(tmp_dir + "/tx").count()
        2
        """
        if len(self._df._current.fields) != 1:
            raise AnalysisException(f"Text data source supports only a single column, and you have "
                                    f"{len(self._df._current.fields)} columns.", "UNSUPPORTED_DATA_TYPE")
        self._write(path, "text", _text_lines, "save_as_text_file")


def _named(schema: pa.Schema, names: list[str], value: Any) -> pa.Table:
    return as_table(value, schema).rename_columns(names)


def _text_lines(schema: pa.Schema, names: list[str], value: Any) -> list[str]:
    return [v for v in as_table(value, schema).column(0).to_pylist() if v is not None]
