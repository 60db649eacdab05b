"""``spark.read.csv/json/text/parquet`` with Spark's options, ``write.partitionBy`` and
``show()``, against real PySpark's answers recorded in ``tests/goldens/readers/``
(``record_readers.py`` regenerates them; no JVM is needed here).

Each reader case of ``cases.json`` reads a committed input (NA, empty strings, quotes and
backslash escapes, comments, multi-line records, latin-1, malformed rows, custom date
formats, ``key=value`` directories...) and must give PySpark's schema, rows (values and
Python types) and ``show`` text, or fail where PySpark fails. Options strataflow does not
implement must be refused by name, never ignored.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import decimal
import importlib.util
import io
import json
import math
import os

import pytest

from strataflow.pyspark import SparkConf, SparkContext
from strataflow.pyspark.errors import AnalysisException, Py4JJavaError, SparkRuntimeException, UnsupportedOperation
from strataflow.pyspark.sql import SparkSession
from strataflow.pyspark.sql import functions as F
from strataflow.pyspark.sql.reader_options import FORMAT_OPTIONS
from strataflow.pyspark.sql.row import Row

HERE = os.path.join(os.path.dirname(__file__), "goldens", "readers")
INPUTS = os.path.join(HERE, "inputs")
with open(os.path.join(HERE, "pyspark_answers.json"), encoding="utf-8") as _fh:
    GOLD = json.load(_fh)
with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as _fh:
    CASES = json.load(_fh)
_spec = importlib.util.spec_from_file_location("show_data", os.path.join(HERE, "show_data.py"))
SHOW_DATA = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(SHOW_DATA)
#: cases over several files: Spark orders the files of a task by size, so rows are compared as sets
MANY_FILES = {"csv_partitioned", "csv_partitioned_strings", "csv_recursive", "parquet_merge_schema",
              "parquet_partitioned", "text_glob_filter", "csv_glob_filter"}


@pytest.fixture(scope="module")
def spark():
    sc = SparkContext("local[2]", "reader-options", conf=SparkConf().set("strataflow.backend", "threads"))
    try:
        session = SparkSession(sc)
        session.conf.set("spark.sql.session.timeZone", "UTC")
        yield session
    finally:
        sc.stop()


def tag(v):
    """As ``record_readers.tag``: a collected value as JSON keeping its Python type."""
    if v is None:
        return None
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": str(v)}
    if isinstance(v, float):
        return {"float": "nan" if math.isnan(v) else repr(v)}
    if isinstance(v, str):
        return {"str": v}
    if isinstance(v, dt.datetime):
        return {"ts": v.isoformat()}
    if isinstance(v, dt.date):
        return {"date": v.isoformat()}
    if isinstance(v, decimal.Decimal):
        return {"dec": str(v)}
    if isinstance(v, (bytes, bytearray)):
        return {"bin": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, Row):
        return {"row": [[k, tag(x)] for k, x in v.asDict(recursive=False).items()]}
    if isinstance(v, dict):
        return {"map": [[tag(k), tag(x)] for k, x in v.items()]}
    if isinstance(v, list):
        return {"list": [tag(x) for x in v]}
    raise TypeError(type(v))


def shown(df, **kw) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.show(**kw)
    return out.getvalue()


def read(spark, case):
    reader = spark.read
    if case.get("schema"):
        reader = reader.schema(case["schema"])
    for k, v in case["options"].items():
        reader = reader.option(k, v)
    return getattr(reader, case["format"])(os.path.join(INPUTS, case["path"]), **case.get("kwargs", {}))


def _key(row):
    return json.dumps(row, sort_keys=True)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_reader_gives_pysparks_answer(spark, case):
    gold = GOLD["cases"][case["name"]]
    if "error" in gold:
        expected = {"Py4JJavaError": Py4JJavaError, "AnalysisException": AnalysisException,
                    "SparkRuntimeException": SparkRuntimeException}[gold["error"]]
        with pytest.raises(expected) as info:
            read(spark, case).collect()
        if gold["condition"]:
            assert gold["condition"] in str(info.value)
        return
    df = read(spark, case)
    rows = [[tag(v) for v in r] for r in df.collect()]
    assert (df.schema.simpleString(), df.columns) == (gold["schema"], gold["columns"])
    if case["name"] in MANY_FILES:
        assert sorted(map(_key, rows)) == sorted(map(_key, gold["rows"]))
    else:
        assert rows == gold["rows"]
        assert shown(df, n=50, truncate=False) == gold["show"]


def test_json_of_an_rdd_of_strings(spark):
    gold = GOLD["cases"]["json_rdd"]
    lines = ['{"a": 1, "b": [1, 2]}', '{"a": null, "c": "x"}', "broken", '{"a": 2.5}']
    df = spark.read.json(spark.sparkContext.parallelize(lines, 2))
    assert (df.schema.simpleString(), df.columns) == (gold["schema"], gold["columns"])
    assert [[tag(v) for v in r] for r in df.collect()] == gold["rows"]
    assert shown(df, truncate=False) == gold["show"]


@pytest.mark.parametrize("i", range(len(SHOW_DATA.SHOWS)), ids=[f"{f}-{kw}" for f, kw in SHOW_DATA.SHOWS])
def test_show_is_byte_exact(spark, i):
    frame, kw = SHOW_DATA.SHOWS[i]
    gold = GOLD["shows"][i]
    assert (gold["frame"], gold["kwargs"]) == (frame, kw)
    ddl, rows = SHOW_DATA.FRAMES[frame]
    assert shown(spark.createDataFrame(rows, ddl), **kw) == gold["text"]


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
def test_partition_by_writes_and_reads_back_as_spark(spark, tmp_path, fmt):
    gold = GOLD["partition_by"][fmt]
    ddl, rows = SHOW_DATA.FRAMES["scalars"]
    df = spark.createDataFrame(rows, ddl).select("i", "s", "ok", "day").withColumn(
        "k", F.coalesce("i", F.lit(0)) % 2)
    path = str(tmp_path / fmt)
    header = {"header": True} if fmt == "csv" else {}
    df.write.partitionBy("k", "ok").options(**header).format(fmt).save(path)
    dirs = sorted(os.path.relpath(d, path) for d, _, files in os.walk(path)
                  if any(not f.startswith((".", "_")) for f in files))
    assert dirs == gold["dirs"]
    back = spark.read.options(**header).format(fmt).load(path)
    got = sorted(back.collect(), key=lambda r: (str(r["i"]), str(r["k"])))
    assert (back.schema.simpleString(), back.columns) == (gold["schema"], gold["columns"])
    assert [[tag(v) for v in r] for r in got] == gold["rows"]


@pytest.mark.parametrize("fmt", ["csv", "json", "text"])
def test_every_option_of_pysparks_reader_is_known(fmt):
    """Each option PySpark's reader documents is honoured or its values refused (the table
    of ``reader_options``): none is unknown, so none can be ignored."""
    assert sorted(o for o in GOLD["options"][fmt] if o.lower() not in FORMAT_OPTIONS[fmt]) == []


@pytest.mark.parametrize("fmt,options,named", [
    ("csv", {"nulValue": "NA"}, "nulValue"),
    ("csv", {"samplingRatio": 0.5}, "samplingRatio"),
    ("csv", {"unescapedQuoteHandling": "RAISE_ERROR"}, "unescapedQuoteHandling"),
    ("csv", {"enforceSchema": False}, "enforceSchema"),
    ("csv", {"locale": "de-DE"}, "locale"),
    ("csv", {"mode": "LENIENT"}, "mode"),
    ("csv", {"dateFormat": "yyyy-ww", "inferSchema": True}, "'ww'"),
    ("csv", {"quote": "<<"}, "quote"),
    ("json", {"allowComments": True}, "allowComments"),
    ("json", {"header": True}, "header"),
    ("text", {"mergeSchema": True}, "mergeSchema"),
    ("parquet", {"inferSchema": True}, "inferSchema"),
])
def test_options_not_implemented_are_refused_by_name(spark, fmt, options, named):
    path = os.path.join(INPUTS, {"csv": "basic.csv", "json": "people.json", "text": "lines.txt",
                                 "parquet": "merge"}[fmt])
    with pytest.raises(UnsupportedOperation, match=named):
        getattr(spark.read.options(**options), fmt)(path).collect()


def test_schema_less_reads_of_nothing_and_missing_paths_say_so(spark, tmp_path):
    with pytest.raises(AnalysisException, match="PATH_NOT_FOUND"):
        spark.read.csv(str(tmp_path / "nothing-here.csv"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(AnalysisException, match="UNABLE_TO_INFER_SCHEMA"):
        spark.read.json(str(tmp_path / "empty"))
    assert spark.read.schema("a INT").csv(str(tmp_path / "empty")).collect() == []


POOLS = {
    "int": ["1", "+5", "-0", "00012", "2147483647", "2147483648", "-9223372036854775808", "99999999999999999999", ""],
    "double": ["1.5", ".5", "1.", "1e5", "1E+3", "-0.0", "1.5d", " 7", "NaN", "nan", "Inf", "-Inf", "Infinity", "", "3"],
    "date": ["2024-01-31", "1969-12-31", "2024-02-30", "2024-1-5", "0001-01-01", "2024-01-31T10:00", ""],
    "timestamp": ["2024-01-31 10:00:00", "2024-01-31T10:00:00.123456", "2024-01-31 10:00:00.5",
                  "2024-01-31T10:00:00Z", "2024-01-31 25:00:00", "2024-01-31", ""],
    "bool": ["true", "FALSE", "True", "yes", ""],
    "string": ["abc", "NA", "Zoë", "日本", " padded ", "x y", "", "-"],
}


def _random_csv(path, seed: int) -> list[str]:
    """A CSV of random columns, each drawn mostly from one kind of value (and sometimes
    from another), without quotes: the files the vectorized path may take."""
    import random

    rng = random.Random(seed)
    kinds = [rng.choice(list(POOLS)) for _ in range(rng.randint(1, 5))]
    lines = [",".join(f"c{i}" for i in range(len(kinds)))]
    for _ in range(rng.randint(1, 30)):
        row = []
        for k in kinds:
            pool = POOLS[k] if rng.random() < 0.9 else POOLS[rng.choice(list(POOLS))]
            row.append(rng.choice(pool))
        lines.append(",".join(row))
    path.write_text("\n".join(lines) + ("\n" if seed % 2 else ""), encoding="utf-8")
    return kinds


_SCHEMA_OF = {"int": "INT", "double": "DOUBLE", "date": "DATE", "timestamp": "TIMESTAMP", "bool": "BOOLEAN",
              "string": "STRING"}


@pytest.mark.parametrize("seed", range(int(os.environ.get("READER_SEEDS", "40"))))
def test_the_vectorized_csv_path_gives_the_exact_paths_answer(spark, tmp_path, monkeypatch, seed):
    """The model is the exact path (Spark's rules field by field, checked against PySpark
    above); the vectorized one must agree on every file, or decline it."""
    from strataflow.pyspark.sql import file_frames

    kinds = _random_csv(tmp_path / "r.csv", seed)
    ddl = ", ".join(f"c{i} {_SCHEMA_OF[k]}" for i, k in enumerate(kinds))
    reads = [{"header": True}, {"header": True, "inferSchema": True}, {"header": True, "nullValue": "NA"},
             {"header": True, "schema": ddl}, {"header": True, "schema": ddl, "mode": "DROPMALFORMED"}]

    def answers() -> list:
        out = []
        for kw in reads:
            df = spark.read.csv(str(tmp_path / "r.csv"), **kw)
            out.append((df.schema.simpleString(), [[tag(v) for v in r] for r in df.collect()]))
        return out

    monkeypatch.setattr(file_frames, "FAST_PATH", True)
    fast = answers()
    monkeypatch.setattr(file_frames, "FAST_PATH", False)
    assert fast == answers()


def test_the_vectorized_csv_path_is_taken_for_plain_files(tmp_path):
    from strataflow.pyspark.sql.csv_fast import fast_columns, fast_types
    from strataflow.pyspark.sql.reader_options import reader_options
    from strataflow.pyspark.sql import types as T

    text = "a,b,c\n1,2.5,2024-01-31\n-3,NaN,\n"
    opts = reader_options("csv", {"header": True, "inferSchema": True})
    first, types = fast_types(text, opts, dt.timezone.utc)
    assert first == ["a", "b", "c"] and [t.simpleString() for t in types] == ["int", "double", "date"]
    cols = fast_columns(text, opts, [T.StructField(n, t) for n, t in zip(first, types)], dt.timezone.utc)
    assert [c.to_pylist() for c in cols][0] == [1, -3]
    assert fast_columns('a\n"q"\n', opts, [T.StructField("a", T.StringType())], dt.timezone.utc) is None


@pytest.mark.parametrize("name", ["csv", "csv_header", "json", "json_nested"])
def test_writers_write_pysparks_bytes(spark, tmp_path, name):
    """``write.csv``/``write.json`` of tricky values (quotes, backslashes, blanks, line
    breaks, NaN, timestamps, decimals, nested values) give the text PySpark writes."""
    nested = name == "json_nested"
    ddl, rows = ((SHOW_DATA.WRITE_NESTED_DDL, SHOW_DATA.WRITE_NESTED_ROWS) if nested
                 else (SHOW_DATA.WRITE_DDL, SHOW_DATA.WRITE_ROWS))
    path = str(tmp_path / name)
    spark.createDataFrame(rows, ddl).coalesce(1).write.options(**({"header": True} if name == "csv_header" else {})) \
        .format(name.split("_")[0]).save(path)
    parts = sorted(f for f in os.listdir(path) if f.startswith("part-"))
    text = "".join(open(os.path.join(path, f), encoding="utf-8").read() for f in parts)
    assert text == GOLD["writes"][name]


def test_csv_written_then_read_gives_the_strings_back(spark, tmp_path):
    """The model: Spark's CSV round trip keeps a string but for the blanks around it (the
    writer trims them) and an empty string, read back as null."""
    pool = ['say "hi"', "a,b", "back\\slash", 'a\\"b', "\\", "end\\", "multi\nline", "cr\r\nlf", "日本 😀", '"',
            "'", "  padded  ", "", None, "x" * 300, "#not a comment", ";"]
    path = str(tmp_path / "rt")
    spark.createDataFrame([(i, v) for i, v in enumerate(pool)], "i INT, s STRING").repartition(3) \
        .write.csv(path, header=True)
    back = spark.read.csv(path, header=True, multiLine=True, schema="i INT, s STRING").collect()
    expected = [(i, (v.strip(" \t\r\n") or None) if v is not None else None) for i, v in enumerate(pool)]
    assert sorted((r.i, r.s) for r in back) == expected


@pytest.mark.parametrize("fmt", ["csv", "json", "text"])
def test_files_cut_into_byte_ranges_read_every_line_once(spark, tmp_path, monkeypatch, fmt):
    """With splits of 128 bytes (a file of a few KB in dozens of ranges), every line
    is read once and in order: the same rows as the file read whole, and for text the
    lines a Python model cuts (``\\n``, ``\\r\\n``, ``\\r``, multi-byte characters at the cuts)."""
    import random

    from strataflow.pyspark.sql import file_splits

    rng = random.Random(7)
    words = ["a", "ü", "日本語", "😀", "x,y", "", "  ", "1.5", "-3", "2024-01-31"]
    lines = []
    for i in range(300):
        if fmt == "json":
            lines.append(json.dumps({"i": i, "w": rng.choice(words), "n": rng.choice([1, 2.5, None])},
                                    ensure_ascii=False))
        else:
            lines.append(f"{i},{rng.choice(words)}")
    ends = ["\n", "\r\n", "\n\n"] if fmt != "text" else ["\n", "\r\n", "\r", "\n\n"]
    text = ("i,w\n" if fmt == "csv" else "") + "".join(line + rng.choice(ends) for line in lines)
    path = tmp_path / f"big.{fmt}"
    path.write_bytes(text.encode("utf-8"))
    kw = {"csv": {"header": True, "inferSchema": True}, "json": {}, "text": {}}[fmt]

    def rows(unit: int) -> list:
        monkeypatch.setattr(file_splits, "_MB", unit)
        df = getattr(spark.read, fmt)(str(path), **kw)
        return [[tag(v) for v in r] for r in df.collect()]

    whole, cut = rows(1 << 20), rows(1)  # 1: splits of 128 bytes
    assert cut == whole
    if fmt == "text":
        assert [r[0]["str"] for r in cut] == text.splitlines()
    assert len(file_splits.plan_splits([(str(path), len(text.encode()))], [()], 2, True, "utf-8")) > 1


OTHER = GOLD["other_zone"]


@contextlib.contextmanager
def _session_zone(spark, zone: str):
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


@pytest.mark.parametrize("name", sorted(OTHER["cases"]))
def test_readers_in_another_session_zone(spark, name):
    """Text timestamps without a zone are the session zone's wall clock (PySpark collects
    the instant; ``show`` prints it in the session zone)."""
    case = next(c for c in CASES if c["name"] == name)
    gold = OTHER["cases"][name]
    with _session_zone(spark, OTHER["zone"]):
        df = read(spark, case)
        rows = [[tag(v) for v in r] for r in df.collect()]
        assert df.schema.simpleString() == gold["schema"]
        if name in MANY_FILES:
            assert sorted(map(_key, rows)) == sorted(map(_key, gold["rows"]))
        else:
            assert rows == gold["rows"]
            assert shown(df, n=50, truncate=False) == gold["show"]


@pytest.mark.parametrize("i", range(len(OTHER["shows"])))
def test_show_in_another_session_zone(spark, i):
    gold = OTHER["shows"][i]
    ddl, rows = SHOW_DATA.FRAMES[gold["frame"]]
    with _session_zone(spark, OTHER["zone"]):
        assert shown(spark.createDataFrame(rows, ddl), **gold["kwargs"]) == gold["text"]


@pytest.mark.parametrize("name", ["csv", "json"])
def test_writers_in_another_session_zone(spark, tmp_path, name):
    path = str(tmp_path / name)
    with _session_zone(spark, OTHER["zone"]):
        spark.createDataFrame(SHOW_DATA.WRITE_ROWS, SHOW_DATA.WRITE_DDL).coalesce(1).write.format(name).save(path)
    parts = sorted(f for f in os.listdir(path) if f.startswith("part-"))
    assert "".join(open(os.path.join(path, f), encoding="utf-8").read() for f in parts) == OTHER["writes"][name]


def test_modified_before_and_after_keep_the_files_of_that_time_in_the_session_zone(spark, tmp_path):
    """The model: a file is kept when its modification time is after ``modifiedAfter``
    and before ``modifiedBefore``, both read in the session's zone."""
    stamps = {"old.csv": dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc),
              "edge.csv": dt.datetime(2021, 1, 1, 4, 0, tzinfo=dt.timezone.utc),
              "new.csv": dt.datetime(2022, 1, 1, tzinfo=dt.timezone.utc)}
    for name, when in stamps.items():
        (tmp_path / name).write_text(f"v\n{name}\n")
        os.utime(tmp_path / name, (when.timestamp(), when.timestamp()))

    def names(**kw) -> list[str]:
        return sorted(r.v for r in spark.read.csv(str(tmp_path), header=True, **kw).collect())

    assert names(modifiedAfter="2021-01-01T00:00:00") == ["edge.csv", "new.csv"]
    assert names(modifiedBefore="2021-01-01T00:00:00") == ["old.csv"]
    with _session_zone(spark, "America/Los_Angeles"):  # 2021-01-01T00:00 there is 08:00 UTC
        assert names(modifiedAfter="2021-01-01T00:00:00") == ["new.csv"]
        assert names(modifiedAfter="2020-06-01T00:00:00", modifiedBefore="2021-06-01T00:00:00") == ["edge.csv"]


def test_corrupt_and_missing_files_fail_by_name_or_are_skipped_when_asked(spark, tmp_path):
    import gzip

    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "good.csv.gz").write_bytes(gzip.compress(b"v\n1\n2\n"))
    (tmp_path / "csv" / "bad.csv.gz").write_bytes(b"\x1f\x8b\x08 not gzip at all")
    with pytest.raises(OSError, match="bad.csv.gz"):
        spark.read.csv(str(tmp_path / "csv"), header=True, schema="v INT").collect()
    assert sorted(r.v for r in spark.read.csv(str(tmp_path / "csv"), header=True, schema="v INT",
                                              ignoreCorruptFiles=True).collect()) == [1, 2]
    spark.conf.set("spark.sql.files.ignoreCorruptFiles", "true")
    try:
        assert spark.read.csv(str(tmp_path / "csv"), header=True, schema="v INT").count() == 2
    finally:
        spark.conf.set("spark.sql.files.ignoreCorruptFiles", "false")
    (tmp_path / "pq").mkdir()
    spark.createDataFrame([(1,), (2,)], "v INT").coalesce(1).write.parquet(str(tmp_path / "pq" / "a"))
    (tmp_path / "pq" / "a" / "part-9.parquet").write_bytes(b"PAR1 garbage PAR1")
    with pytest.raises(AnalysisException, match="FAILED_READ_FILE.*part-9.parquet"):
        spark.read.parquet(str(tmp_path / "pq" / "a"))
    assert sorted(r.v for r in spark.read.parquet(str(tmp_path / "pq" / "a"), ignoreCorruptFiles=True).collect()) \
        == [1, 2]
    (tmp_path / "gone").mkdir()
    for name in ("a.csv", "b.csv"):
        (tmp_path / "gone" / name).write_text("v\n7\n")
    lazy = spark.read.csv(str(tmp_path / "gone"), header=True, schema="v INT", ignoreMissingFiles=True)
    (tmp_path / "gone" / "b.csv").unlink()  # gone between the listing and the read
    assert [r.v for r in lazy.collect()] == [7]
    with pytest.raises(FileNotFoundError):
        lazy2 = spark.read.csv(str(tmp_path / "gone"), header=True, schema="v INT")
        (tmp_path / "gone" / "a.csv").unlink()
        lazy2.collect()


JSON_POOLS = {
    "long": [1, -0, 9223372036854775807, 12345678901234567890, None, 2.5, "7", ""],
    "double": [1.5, -0.0, 1e300, 2, 0.1, None, "NaN", 1e400],
    "string": ["abc", "", "2024-01-31", "2024-01-31T10:00:00", "日本 😀", None, 5, {"x": 1}],
    "bool": [True, False, None, "true", 0],
    "array": [[1, 2], [], [None], None, [1.5], ["a"], [[1]]],
    "object": [{"x": 1, "y": "a"}, {"y": None}, {}, None, {"x": "s"}, {"z": [1]}],
}
_JSON_SCHEMA_OF = {"long": "BIGINT", "double": "DOUBLE", "string": "STRING", "bool": "BOOLEAN", "array": "ARRAY<BIGINT>",
                   "object": "STRUCT<x: BIGINT, y: STRING>"}


def _json_text_of(v) -> str:
    if isinstance(v, float) and v == 1e400:
        return "1e400"
    if v == "NaN":
        return "NaN"
    return json.dumps(v, ensure_ascii=False)


def _random_json(path, seed: int) -> list[str]:
    """JSON lines of random fields, each drawn mostly from one kind of value (an even seed:
    only plain values, one kind per field)."""
    import random

    rng = random.Random(seed)
    kinds = [rng.choice(list(JSON_POOLS)) for _ in range(rng.randint(1, 4))]
    lines = []
    for _ in range(rng.randint(1, 25)):
        parts = []
        for i, k in enumerate(kinds):
            if rng.random() < 0.1:
                continue  # the field left out
            if seed % 2 == 0:  # a clean file (the vectorized path's case): plain values of one kind per field
                v = rng.choice(JSON_POOLS[k][:3])
            else:
                pool = JSON_POOLS[k] if rng.random() < 0.92 else JSON_POOLS[rng.choice(list(JSON_POOLS))]
                v = rng.choice(pool[:5]) if rng.random() < 0.7 else rng.choice(pool)
            parts.append(f'"f{i}": {_json_text_of(v)}')
        lines.append("{" + ", ".join(parts) + "}")
        if rng.random() < 0.05:
            lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return kinds


@pytest.mark.parametrize("seed", range(int(os.environ.get("READER_SEEDS", "40"))))
def test_the_vectorized_json_path_gives_the_exact_paths_answer(spark, tmp_path, monkeypatch, seed):
    from strataflow.pyspark.sql import file_frames

    kinds = _random_json(tmp_path / "r.json", seed)
    ddl = ", ".join(f"f{i} {_JSON_SCHEMA_OF[k]}" for i, k in enumerate(kinds))
    reads = [{}, {"schema": ddl}, {"schema": ddl, "mode": "DROPMALFORMED"}, {"schema": ddl + ", _corrupt_record STRING"}]

    def answers() -> list:
        out = []
        for kw in reads:
            df = spark.read.json(str(tmp_path / "r.json"), **kw)
            out.append((df.schema.simpleString(), [[tag(v) for v in r] for r in df.collect()]))
        return out

    monkeypatch.setattr(file_frames, "FAST_PATH", True)
    fast = answers()
    monkeypatch.setattr(file_frames, "FAST_PATH", False)
    assert fast == answers()


def test_writer_options_are_written_or_refused_by_name(spark, tmp_path):
    df = spark.createDataFrame([(1, None, ""), (2, "a,b", " x ")], "i INT, s STRING, e STRING")

    def text_of(path: str) -> str:
        import gzip

        out = ""
        for f in sorted(os.listdir(path)):
            if f.startswith("part-"):
                data = open(os.path.join(path, f), "rb").read()
                out += (gzip.decompress(data) if f.endswith(".gz") else data).decode()
        return out

    p1 = str(tmp_path / "o1")
    df.coalesce(1).write.options(nullValue="NULL", emptyValue="EMPTY", quoteAll=True,
                                 ignoreTrailingWhiteSpace=False).csv(p1)
    assert text_of(p1) == '"1",NULL,EMPTY\n"2","a,b","x "\n'  # leading blanks trimmed (Spark's default)
    p2 = str(tmp_path / "o2")
    df.coalesce(1).write.option("compression", "gzip").option("header", True).csv(p2)
    assert text_of(p2) == 'i,s,e\n1,,""\n2,"a,b",x\n'
    assert sorted(tuple(r) for r in spark.read.csv(p2, header=True, schema="i INT, s STRING, e STRING").collect()) \
        == [(1, None, None), (2, "a,b", "x")]
    p3 = str(tmp_path / "o3")
    df.coalesce(1).write.json(p3, ignoreNullFields=False)
    assert text_of(p3) == '{"i":1,"s":null,"e":""}\n{"i":2,"s":"a,b","e":" x "}\n'
    for fmt, key, value in [("csv", "dateFormat", "dd/MM/yyyy"), ("csv", "compression", "snappy"),
                            ("json", "lineSep", ";"), ("parquet", "compression", "zstd"), ("csv", "encoding", "latin1")]:
        with pytest.raises(UnsupportedOperation, match=key):
            df.write.option(key, value).format(fmt).save(str(tmp_path / f"x-{fmt}-{key}"))
        assert not os.path.exists(tmp_path / f"x-{fmt}-{key}")


def test_json_of_a_dataframe_of_strings_and_text_named_by_a_schema(spark, tmp_path):
    lines = spark.createDataFrame([('{"a": 1}',), ("bad",), ('{"a": 2, "b": "x"}',)], "value STRING")
    df = spark.read.json(lines)
    assert df.columns == ["_corrupt_record", "a", "b"]
    assert [tuple(r) for r in df.collect()] == [(None, 1, None), ("bad", None, None), (None, 2, "x")]
    (tmp_path / "t.txt").write_text("x\ny\n")
    assert [tuple(r) for r in spark.read.schema("letter STRING").text(str(tmp_path / "t.txt")).collect()] == \
        [("x",), ("y",)]
    with pytest.raises(AnalysisException, match="single column"):
        spark.read.schema("a STRING, b STRING").text(str(tmp_path / "t.txt"))


def test_what_is_not_a_path_is_refused_by_name(spark):
    with pytest.raises(UnsupportedOperation, match="spark.read.csv of an RDD"):
        spark.read.csv(spark.sparkContext.parallelize(["a,b"]))
    with pytest.raises(AnalysisException, match="'path' is not specified"):
        spark.read.format("csv").load()


def test_a_year_python_cannot_hold_is_refused_not_read_as_null(tmp_path):
    """Spark reads '10000-01-01' as a date; Python's dates stop at 9999: the read fails
    naming the year (it read a null before, silently)."""
    from strataflow.pyspark.errors import UnsupportedOperation
    from strataflow.pyspark.sql.reader_datetime_patterns import date_parser, timestamp_parser

    for parse in (date_parser(None), date_parser("yyyy-MM-dd"), timestamp_parser(None, dt.timezone.utc)):
        assert parse("2024-03-10").year == 2024
        with pytest.raises(UnsupportedOperation, match="the year 10000"):
            parse("10000-01-01")
    with pytest.raises(ValueError):  # an impossible date stays a parse failure (null in PERMISSIVE mode)
        date_parser("yyyy-MM-dd")("2024-02-30")
