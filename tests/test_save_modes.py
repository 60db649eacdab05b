"""``df.write.mode(...)`` over an existing path (``save_modes.py``), against plain-Python
models: overwrite of the very path a job reads, a failed overwrite that must leave the old
data, append to our own Parquet directories (the manifest goes on listing every part),
to another tool's, to text formats; columns that do not match; a file where a directory
should be."""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from strataflow.pyspark import SparkConf, SparkContext
from strataflow.pyspark.sql import AnalysisException, SparkSession
from strataflow.pyspark.sql import functions as F

ROWS = [(1, "ünï", Decimal("1.50"), dt.date(2024, 1, 1)), (2, None, None, dt.date(2024, 2, 29)),
        (3, "日本", Decimal("-0.01"), None)]
MORE = [(4, "", Decimal("9.99"), dt.date(1999, 12, 31)), (5, "x", Decimal("0.00"), dt.date(2000, 1, 1))]
SCHEMA = "id BIGINT, s STRING, d DECIMAL(10,2), day DATE"


@pytest.fixture(scope="module")
def spark():
    sc = SparkContext("local[2]", "save-modes", conf=SparkConf().set("strataflow.backend", "threads"))
    try:
        yield SparkSession(sc)
    finally:
        sc.stop()


def _rows(df) -> list[tuple]:
    return [tuple(r) for r in df.collect()]


def _hidden(parent) -> list[str]:
    return [n for n in os.listdir(parent) if n.startswith(".")]


def test_overwrite_of_the_path_the_job_reads_keeps_every_row(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame(ROWS + MORE, SCHEMA).repartition(3).write.parquet(path)
    doubled = spark.read.parquet(path).withColumn("id", F.col("id") * 2)
    doubled.write.mode("overwrite").parquet(path)
    assert sorted(_rows(spark.read.parquet(path))) == sorted((i * 2, s, d, day) for i, s, d, day in ROWS + MORE)
    assert _hidden(tmp_path) == []


def test_a_failed_overwrite_leaves_the_old_data(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame(ROWS, SCHEMA).write.parquet(path)
    before = sorted(os.listdir(path))

    @F.udf("bigint")
    def boom(i):
        if i == 3:
            raise ValueError("no row 3 here")
        return i

    with pytest.raises(Exception, match="no row 3 here"):
        spark.createDataFrame(ROWS, SCHEMA).withColumn("id", boom("id")).write.mode("overwrite").parquet(path)
    assert sorted(os.listdir(path)) == before and _hidden(tmp_path) == []
    assert sorted(_rows(spark.read.parquet(path))) == sorted(ROWS)


def test_append_to_our_parquet_goes_on_numbering_and_listing_parts(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame(ROWS, SCHEMA).coalesce(1).write.parquet(path)
    spark.createDataFrame(MORE, SCHEMA).repartition(2).write.mode("append").parquet(path)
    spark.createDataFrame(ROWS[:1], SCHEMA).coalesce(1).write.mode("append").parquet(path)
    got = _rows(spark.read.parquet(path))
    assert got[:3] == ROWS and sorted(got[3:5]) == MORE and got[5:] == ROWS[:1]  # the parts in order
    with open(os.path.join(path, "_manifest.json")) as fh:
        manifest = json.load(fh)
    files = [p["file"] for p in manifest["parts"]]
    assert files == sorted(n for n in os.listdir(path) if n.startswith("part-")) and len(set(files)) == len(files)
    assert manifest["rows"] == 6 and _hidden(tmp_path) == []


def test_append_of_other_columns_is_refused_and_moves_nothing(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame(ROWS, SCHEMA).write.parquet(path)
    before = sorted(os.listdir(path))
    with pytest.raises(AnalysisException, match=r"its columns are \(id int64, s string.*the DataFrame's \(name string\)"):
        spark.createDataFrame([("x",)], ["name"]).write.mode("append").parquet(path)
    assert sorted(os.listdir(path)) == before and _hidden(tmp_path) == []
    spark.createDataFrame([(7, 2.5)], "id BIGINT, x DOUBLE").write.parquet(str(tmp_path / "w"))
    spark.createDataFrame([(8, 3)], "id BIGINT, x BIGINT").write.mode("append").parquet(str(tmp_path / "w"))
    assert sorted(_rows(spark.read.parquet(str(tmp_path / "w")))) == [(7, 2.5), (8, 3.0)]  # widened, as read


def test_append_to_another_tools_directory_adds_files_and_no_manifest(spark, tmp_path):
    path = tmp_path / "theirs"
    path.mkdir()
    pq.write_table(pa.table({"id": [10, 11], "s": ["a", None]}), path / "data-0.parquet")
    spark.createDataFrame([(12, "c")], "id BIGINT, s STRING").write.mode("append").parquet(str(path))
    assert sorted(_rows(spark.read.parquet(str(path)))) == [(10, "a"), (11, None), (12, "c")]
    assert "_manifest.json" not in os.listdir(path)


@pytest.mark.parametrize("fmt", ["csv", "json", "text"])
def test_append_to_text_formats(spark, tmp_path, fmt):
    path = str(tmp_path / fmt)
    first = spark.createDataFrame([("ünï",), ("a,b",)], ["value"])
    second = spark.createDataFrame([("日本",), ("z",)], ["value"])
    write = {"csv": lambda w: w.csv(path, header=True), "json": lambda w: w.json(path), "text": lambda w: w.text(path)}
    read = {"csv": lambda: spark.read.csv(path, header=True), "json": lambda: spark.read.json(path),
            "text": lambda: spark.read.text(path)}
    write[fmt](first.write)
    write[fmt](second.write.mode("append"))
    assert sorted(r[0] for r in read[fmt]().collect()) == sorted(["ünï", "a,b", "日本", "z"])


def test_append_to_a_missing_path_writes_it_and_to_a_file_is_an_error(spark, tmp_path):
    path = str(tmp_path / "new")
    spark.createDataFrame(ROWS, SCHEMA).write.mode("append").parquet(path)
    assert sorted(_rows(spark.read.parquet(path))) == sorted(ROWS)
    (tmp_path / "file.parquet").write_bytes(b"not a directory")
    with pytest.raises(AnalysisException, match="it is a file"):
        spark.createDataFrame(ROWS, SCHEMA).write.mode("append").parquet(str(tmp_path / "file.parquet"))


def test_error_and_ignore_leave_an_existing_path_alone(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame(ROWS, SCHEMA).write.parquet(path)
    with pytest.raises(AnalysisException, match="PATH_ALREADY_EXISTS"):
        spark.createDataFrame(MORE, SCHEMA).write.parquet(path)
    spark.createDataFrame(MORE, SCHEMA).write.mode("ignore").parquet(path)
    assert sorted(_rows(spark.read.parquet(path))) == sorted(ROWS)
    with pytest.raises(ValueError, match="Unknown save mode"):
        spark.range(1).write.mode("upsert")
