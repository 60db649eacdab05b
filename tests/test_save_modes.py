"""``df.write.mode(...)`` over an existing path (``save_modes.py``), against plain-Python
models: overwrite of the very path a job reads, a failed overwrite that must leave the old
data, append to our own Parquet directories (job-unique part names), to another tool's,
to text formats; columns that do not match; a file where a directory should be. And
writers in other processes: two appending at once (stopped at the same step until both
are there) both keep their rows; an overwrite killed with SIGKILL at each step leaves the
old or the new data whole, and its hidden leftovers are swept by the next write."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import time
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


def test_append_to_our_parquet_adds_job_unique_parts_and_drops_the_manifest(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame(ROWS, SCHEMA).coalesce(1).write.parquet(path)
    spark.createDataFrame(MORE, SCHEMA).repartition(2).write.mode("append").parquet(path)
    spark.createDataFrame(ROWS[:1], SCHEMA).coalesce(1).write.mode("append").parquet(path)
    assert sorted(_rows(spark.read.parquet(path))) == sorted(ROWS + MORE + ROWS[:1])
    names = sorted(n for n in os.listdir(path) if n.startswith("part-"))
    appended = [n for n in names if n != "part-00000.parquet"]
    assert len(appended) == 3 and all(re.fullmatch(r"part-\d{5}-[0-9a-f-]{36}-c000\.parquet", n) for n in appended)
    assert len({n.split("-", 2)[2] for n in appended}) == 2  # one job id per append
    assert "_manifest.json" not in os.listdir(path) and _hidden(tmp_path) == []


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


WRITER = """
import os, sys, time
from strataflow.pyspark import SparkConf, SparkContext
from strataflow.pyspark.sql import SparkSession
from strataflow.pyspark.sql import save_modes

path, mode, tag, first, sync, stop, peer = sys.argv[1:8]


def reached(step):
    open(os.path.join(sync, tag + "-" + step), "w").close()
    if step == stop:
        while True:  # the test kills this process here
            time.sleep(60)
    if step == "publishing" and peer != "-":  # both have read the directory; neither has changed it
        while not os.path.exists(os.path.join(sync, peer + "-publishing")):
            time.sleep(0.005)


save_modes._reached = reached
sc = SparkContext("local[1]", "writer-" + tag, conf=SparkConf().set("strataflow.backend", "threads"))
rows = [(i, tag) for i in range(int(first), int(first) + 6)]
SparkSession(sc).createDataFrame(rows, "id BIGINT, s STRING").repartition(3).write.mode(mode).parquet(path)
open(os.path.join(sync, tag + "-exit"), "w").close()
sc.stop()
"""


def _writer(tmp_path, path, mode, tag, first, stop="-", peer="-"):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    sync = tmp_path / "sync"
    sync.mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, str(script), path, mode, tag, str(first), str(sync), stop, peer],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _wait_for(proc, marker, limit=180.0):
    """Waits until the writer made ``marker`` (a file) or ended; the limit only bounds a hang."""
    deadline = time.monotonic() + limit
    while not marker.exists():
        if proc.poll() is not None and not marker.exists():
            raise AssertionError(f"the writer ended ({proc.returncode}) before {marker.name}: "
                                 f"{proc.stdout.read().decode()[-2000:]}")
        assert time.monotonic() < deadline, f"no {marker.name} after {limit} s"
        time.sleep(0.01)


def test_two_applications_appending_at_once_both_keep_their_rows(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame([(0, "first")], "id BIGINT, s STRING").write.parquet(path)
    a = _writer(tmp_path, path, "append", "a", 100, peer="b")
    b = _writer(tmp_path, path, "append", "b", 200, peer="a")
    for proc in (a, b):
        assert proc.wait(timeout=300) == 0, proc.stdout.read().decode()[-2000:]
    expected = [(0, "first")] + [(i, "a") for i in range(100, 106)] + [(i, "b") for i in range(200, 206)]
    assert sorted(_rows(spark.read.parquet(path))) == expected
    assert _hidden(tmp_path) == []


@pytest.mark.parametrize("step,survivor", [("staged", "old"), ("swapped", "new")])
def test_an_overwrite_killed_at_any_step_leaves_old_or_new_data_whole(spark, tmp_path, step, survivor):
    path = str(tmp_path / "t")
    old = [(i, "old") for i in range(4)]
    spark.createDataFrame(old, "id BIGINT, s STRING").write.parquet(path)
    proc = _writer(tmp_path, path, "overwrite", "new", 50, stop=step)
    try:
        _wait_for(proc, tmp_path / "sync" / f"new-{step}")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    new = [(i, "new") for i in range(50, 56)]
    assert sorted(_rows(spark.read.parquet(path))) == (old if survivor == "old" else new)
    assert len(_hidden(tmp_path)) == 1  # the killed writer's staged (or old) directory, hidden from readers
    spark.createDataFrame([(9, "next")], "id BIGINT, s STRING").write.mode("append").parquet(path)
    assert _hidden(tmp_path) == []  # swept by the next write, its writer being gone
    assert sorted(_rows(spark.read.parquet(path))) == sorted((old if survivor == "old" else new) + [(9, "next")])


def test_an_append_killed_while_moving_parts_keeps_every_old_row(spark, tmp_path):
    path = str(tmp_path / "t")
    old = [(i, "old") for i in range(4)]
    spark.createDataFrame(old, "id BIGINT, s STRING").repartition(2).write.parquet(path)
    proc = _writer(tmp_path, path, "append", "new", 50, stop="moving")
    try:
        _wait_for(proc, tmp_path / "sync" / "new-moving")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    got = _rows(spark.read.parquet(path))
    assert sorted(r for r in got if r[1] == "old") == old
    assert 0 < len([r for r in got if r[1] == "new"]) < 6  # the parts moved so far, each whole


def test_partitioned_writes_append_and_overwrite_by_directory(spark, tmp_path):
    path = str(tmp_path / "p")
    first = [(1, "a", "x"), (2, "b", None), (3, "c", "x")]
    more = [(4, "d", "y"), (5, "e", "x")]
    schema = "id BIGINT, s STRING, k STRING"
    spark.createDataFrame(first, schema).repartition(2).write.partitionBy("k").parquet(path)
    spark.createDataFrame(more, schema).repartition(2).write.mode("append").partitionBy("k").parquet(path)
    got = sorted(tuple(r) for r in spark.read.parquet(path).collect())
    assert got == sorted(first + more)
    assert sorted(d for d in os.listdir(path) if not d.startswith(("_", "."))) == [
        "k=__HIVE_DEFAULT_PARTITION__", "k=x", "k=y"]
    spark.createDataFrame(more, schema).write.mode("overwrite").partitionBy("k").parquet(path)
    assert sorted(tuple(r) for r in spark.read.parquet(path).collect()) == sorted(more)
    assert _hidden(tmp_path) == []
