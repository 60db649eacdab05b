"""The first query over a Parquet source, read by DuckDB directly (``parquet_scan.py``),
against a plain-Python model and against the pyarrow path it replaces: the values users
have (dates, decimals, timestamps with and without a zone, NaN, None, unicode, binary),
several files of several row groups whose partitions cross file boundaries, empty row
groups' worth of filtered rows; the pyarrow path where DuckDB cannot read a file, where
the input cache keeps the source, and where a column's type is not one the view casts."""

from __future__ import annotations

import datetime as dt
import math
import types
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import strataflow.pyspark.sql.plan as plan_module
from strataflow.io.parquet import ParquetSource
from strataflow.pyspark import SparkConf, SparkContext
from strataflow.pyspark.sql import SparkSession
from strataflow.pyspark.sql import functions as F
from strataflow.pyspark.sql.parquet_scan import ParquetQuery, direct_views

UTC = dt.timezone.utc


def _row(i: int) -> dict:
    """Row ``i``: every type the view casts, with None, NaN and unicode among them."""
    return {
        "i8": pa.scalar(i % 100 - 50, pa.int8()).as_py(), "i32": i * 7 - 300, "i64": None if i % 11 == 0 else i * 10**12,
        "f": math.nan if i % 13 == 0 else (None if i % 17 == 0 else i / 4), "b": i % 3 == 0,
        "s": None if i % 9 == 0 else ["ascii", "ünïcödé", "日本語", "", "emoji 🎉"][i % 5] + str(i % 4),
        "bin": bytes([i % 256, 0, 255]), "d": dt.date(2020, 1, 1) + dt.timedelta(days=i),
        "dec": Decimal(i * 37 % 10000) / 100, "ts": dt.datetime(2021, 3, 4, 5, 6, 7, i),
        "tsz": dt.datetime(2022, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i),
    }


SCHEMA = pa.schema([("i8", pa.int8()), ("i32", pa.int32()), ("i64", pa.int64()), ("f", pa.float64()),
                    ("b", pa.bool_()), ("s", pa.string()), ("bin", pa.binary()), ("d", pa.date32()),
                    ("dec", pa.decimal128(10, 2)), ("ts", pa.timestamp("us")), ("tsz", pa.timestamp("us", "UTC"))])
ROWS = [_row(i) for i in range(600)]


@pytest.fixture(scope="module")
def spark():
    conf = SparkConf().set("strataflow.parallelism", "5").set("strataflow.backend", "threads")
    sc = SparkContext("local[2]", "parquet-scan", conf=conf)
    try:
        yield SparkSession(sc)
    finally:
        sc.stop()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """Three files (250, 50 and 300 rows) of row groups of 64 rows: 5 partitions of 11 row
    groups cross the files' boundaries."""
    d = tmp_path_factory.mktemp("scan")
    for name, (a, b) in {"part-0.parquet": (0, 250), "part-1.parquet": (250, 300),
                         "part-2.parquet": (300, 600)}.items():
        pq.write_table(pa.Table.from_pylist(ROWS[a:b], schema=SCHEMA), d / name, row_group_size=64)
    return str(d)


def _query(df):
    return (df.filter((F.col("i32") % 3 != 0) | F.col("s").isNull())
              .select("i64", "s", "bin", "d", "tsz", (F.col("dec") * 2).alias("dec2"), (F.col("f") + 1).alias("f1"),
                      F.year("ts").alias("y"), "b", "i8"))


def _model() -> list[tuple]:
    out = []
    for r in ROWS:
        if r["i32"] % 3 != 0 or r["s"] is None:
            f1 = None if r["f"] is None else r["f"] + 1
            out.append((r["i64"], r["s"], r["bin"], r["d"], r["tsz"], r["dec"] * 2, f1, r["ts"].year, r["b"], r["i8"]))
    return out


def _same(got: list, want: list) -> None:
    """Rows equal in order, NaN equal to NaN."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert len(g) == len(w)
        for a, b in zip(g, w):
            if isinstance(b, float) and math.isnan(b):
                assert isinstance(a, float) and math.isnan(a)
            else:
                assert a == b, (g, w)


def test_the_first_query_reads_parquet_directly_and_answers_as_the_model(spark, data_dir):
    df = _query(spark.read.parquet(data_dir))
    ds = df._current.dataset()
    assert isinstance(ds.node, ParquetQuery) and ds.num_partitions == 5
    assert sum(v is not None for v in ds.node.views) == 5
    assert any(" UNION ALL " in v for v in ds.node.views)  # a partition over two files
    _same([tuple(r) for r in df.collect()], _model())


def test_the_direct_scan_gives_the_arrow_paths_types_rows_and_order(spark, data_dir, monkeypatch):
    df = spark.read.parquet(data_dir)
    queries = [_query, lambda d: d.groupBy("b").agg(F.sum("dec").alias("s"), F.count("f").alias("n"),
                                                     F.max("tsz").alias("t"), F.min("s").alias("m")).orderBy("b"),
               lambda d: d.select("*").where(F.col("d") > dt.date(2021, 1, 1)),
               lambda d: d.where(F.col("i32") > 10**9)]  # no row passes: every partition empty
    direct = [q(df).toArrow() for q in queries]
    monkeypatch.setattr(plan_module, "direct_views", lambda node, schema: None)
    arrow = [q(spark.read.parquet(data_dir)).toArrow() for q in queries]
    assert not isinstance(_query(spark.read.parquet(data_dir))._current.dataset().node, ParquetQuery)
    for a, b in zip(direct, arrow):
        assert a.schema == b.schema
        _same([tuple(r.values()) for r in a.to_pylist()], [tuple(r.values()) for r in b.to_pylist()])
    assert direct[3].num_rows == 0


def test_a_file_duckdb_cannot_read_falls_back_to_the_arrow_path(data_dir):
    source = ParquetSource(data_dir, 5)
    views = direct_views(source, source.schema)
    sql = 'SELECT "i32", "s" FROM __t WHERE "i32" > 0'
    broken = [v.replace(data_dir, data_dir + "/missing") for v in views]
    node = ParquetQuery(source, broken, sql, source.schema)
    got = [node.compute(split, None) for split in range(5)]
    want = [r for r in ROWS if r["i32"] > 0]
    assert [(r["i32"], r["s"]) for t in got for r in t.to_pylist()] == [(r["i32"], r["s"]) for r in want]


def test_corrupt_data_pages_fail_loudly_naming_the_file(spark, tmp_path):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS, schema=SCHEMA), path, row_group_size=600, compression="none")
    raw = bytearray(path.read_bytes())
    raw[100:4000] = b"\xff" * 3900  # the first column chunks' pages; the footer stays readable
    path.write_bytes(bytes(raw))
    with pytest.raises(Exception) as err:
        spark.read.parquet(str(path)).filter(F.col("i32") > 0).select("i32", "s").collect()
    assert "bad.parquet" in str(err.value)


def test_types_the_view_does_not_cast_and_remote_files_keep_the_arrow_path(spark, tmp_path):
    nested = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"k": [1, 2, 3], "xs": [[1], [2, 3], None], "u": pa.array([1, 2, 3], pa.uint32())}),
                   nested)
    df = spark.read.parquet(str(nested)).where(F.col("k") > 1)
    assert not isinstance(df._current.dataset().node, ParquetQuery)
    assert [tuple(r) for r in df.collect()] == [(2, [2, 3], 2), (3, None, 3)]
    pq.write_table(pa.table({"k": [1, 2, 3]}), tmp_path / "plain.parquet")
    source = ParquetSource(str(tmp_path / "plain.parquet"), 1)
    assert direct_views(source, source.schema) is not None
    source.files = [type(f)(f.path, f.size, fs=object(), url="s3://b/plain.parquet") for f in source.files]  # remote
    assert direct_views(source, source.schema) is None


def test_files_of_differing_schemas_keep_the_arrow_paths_cast(spark, tmp_path):
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int32()), "v": [1.5, 2.5]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"k": pa.array([3], pa.int64()), "v": [3.5]}), tmp_path / "b.parquet")
    df = spark.read.parquet(str(tmp_path)).where(F.col("v") > 2)
    assert not isinstance(df._current.dataset().node, ParquetQuery)
    assert sorted(tuple(r) for r in df.collect()) == [(2, 2.5), (3, 3.5)]


def test_the_input_cache_keeps_the_source_when_asked(data_dir):
    """With ``input_cache="on"`` a partition is the input cache's (which reads through the
    source), not DuckDB's own read; with ``"off"`` DuckDB reads it."""
    source = ParquetSource(data_dir, 5)
    sql = 'SELECT "i32" FROM __t WHERE "i32" % 2 = 0'
    node = ParquetQuery(source, direct_views(source, source.schema), sql, source.schema)
    asked = []

    class Inputs:
        def __init__(self, mode):
            self.mode = mode

        def read(self, src, split, tc):
            asked.append(split)
            return src.decode(split, tc)[0]

    for mode, reads in (("on", [0, 1, 2, 3, 4]), ("off", [])):
        asked.clear()
        tc = types.SimpleNamespace(runtime=types.SimpleNamespace(inputs=Inputs(mode)))
        got = [r["i32"] for split in range(5) for r in node.compute(split, tc).to_pylist()]
        assert got == [r["i32"] for r in ROWS if r["i32"] % 2 == 0] and asked == reads
