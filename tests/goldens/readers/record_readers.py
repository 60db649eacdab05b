"""Records real PySpark's answers for ``tests/test_reader_options.py``: run with the venv's
python (``.[peers]``: PySpark and Java 17), from anywhere::

    .venv/bin/python tests/goldens/readers/record_readers.py

For every case of ``cases.json`` (a reader, a committed input under ``inputs/``, options,
an optional schema) it stores the schema (``simpleString``), the rows (JSON, each value
tagged with its type so dates, decimals and floats round-trip) and ``show()``'s text, or
the error PySpark raised; for every ``show`` of ``show_data.py`` the exact text printed;
and the option names of PySpark's ``DataFrameReader.csv/json/text`` and the partitioned
layout ``write.partitionBy`` makes. Session: ``local[1]``, ``spark.sql.session.timeZone=UTC``
(and the process's TZ=UTC, so Python datetimes mean the same instants on both sides).
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import decimal
import importlib.util
import inspect
import io
import json
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OTHER_ZONE = "America/Los_Angeles"
#: the cases read again in OTHER_ZONE (timestamps without a zone are the session's wall clock)
ZONED_CASES = ["csv_custom_dates", "csv_zoned", "csv_zoned_infer", "csv_lenient", "csv_lenient_infer", "csv_formats",
               "csv_ladder_infer", "json_schema", "json_dates", "json_typed", "csv_partitioned"]
INPUTS = os.path.join(HERE, "inputs")


def tag(v):
    """One collected value as JSON that keeps its Python type."""
    from pyspark.sql import Row

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
    raise TypeError(f"no tag for {type(v)}")


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


def record_case(spark, case) -> dict:
    try:
        df = read(spark, case)
        rows = df.collect()
        return {"schema": df.schema.simpleString(), "columns": df.columns,
                "rows": [[tag(v) for v in r] for r in rows], "show": shown(df, n=50, truncate=False)}
    except Exception as exc:  # what PySpark refuses is recorded as such
        cond = getattr(exc, "getCondition", lambda: None)()
        return {"error": type(exc).__name__, "condition": cond, "message": str(exc).splitlines()[0][:300]}


def main() -> None:
    os.environ["TZ"] = "UTC"
    import time

    time.tzset()
    from pyspark.sql import SparkSession
    from pyspark.sql.readwriter import DataFrameReader

    spark = (SparkSession.builder.master("local[1]").appName("record-readers")
             .config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    with open(os.path.join(HERE, "cases.json")) as fh:
        cases = json.load(fh)
    out = {"pyspark": spark.version, "cases": {}, "shows": [], "options": {}}
    for case in cases:
        out["cases"][case["name"]] = record_case(spark, case)
        print(case["name"], "error" if "error" in out["cases"][case["name"]] else "ok", file=sys.stderr)
    out["cases"]["json_rdd"] = _json_rdd(spark)
    spec = importlib.util.spec_from_file_location("show_data", os.path.join(HERE, "show_data.py"))
    data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(data)
    frames = {k: spark.createDataFrame(rows, ddl) for k, (ddl, rows) in data.FRAMES.items()}
    for frame, kw in data.SHOWS:
        out["shows"].append({"frame": frame, "kwargs": kw, "text": shown(frames[frame], **kw)})
    for fmt in ("csv", "json", "text", "parquet"):
        params = list(inspect.signature(getattr(DataFrameReader, fmt)).parameters)
        out["options"][fmt] = [p for p in params if p not in ("self", "path", "paths", "schema", "options")]
    out["partition_by"] = _partition_by(spark, frames["scalars"])
    out["writes"] = _writes(spark, data)
    # the cases whose answers depend on the session time zone, again in another zone
    spark.conf.set("spark.sql.session.timeZone", OTHER_ZONE)
    out["other_zone"] = {"zone": OTHER_ZONE, "cases": {}, "shows": [], "writes": _writes(spark, data)}
    for case in cases:
        if case["name"] in ZONED_CASES:
            out["other_zone"]["cases"][case["name"]] = record_case(spark, case)
    frames = {k: spark.createDataFrame(rows, ddl) for k, (ddl, rows) in data.FRAMES.items()}
    for frame, kw in data.SHOWS:
        if frame == "scalars":
            out["other_zone"]["shows"].append({"frame": frame, "kwargs": kw, "text": shown(frames[frame], **kw)})
    with open(os.path.join(HERE, "pyspark_answers.json"), "w") as fh:
        json.dump(out, fh, indent=1, ensure_ascii=False, sort_keys=True)
        fh.write("\n")
    spark.stop()


def _json_rdd(spark) -> dict:
    lines = ['{"a": 1, "b": [1, 2]}', '{"a": null, "c": "x"}', "broken", '{"a": 2.5}']
    df = spark.read.json(spark.sparkContext.parallelize(lines, 2))
    return {"schema": df.schema.simpleString(), "columns": df.columns,
            "rows": [[tag(v) for v in r] for r in df.collect()], "show": shown(df, truncate=False)}


def _writes(spark, data) -> dict:
    """The text ``write.csv`` and ``write.json`` make of tricky rows (one part file each)."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        flat = spark.createDataFrame(data.WRITE_ROWS, data.WRITE_DDL).coalesce(1)
        nested = spark.createDataFrame(data.WRITE_NESTED_ROWS, data.WRITE_NESTED_DDL).coalesce(1)
        for name, df, fmt, opts in [("csv", flat, "csv", {}), ("csv_header", flat, "csv", {"header": True}),
                                    ("json", flat, "json", {}), ("json_nested", nested, "json", {})]:
            path = os.path.join(tmp, name)
            df.write.options(**opts).format(fmt).save(path)
            parts = [f for f in sorted(os.listdir(path)) if f.startswith("part-")]
            out[name] = "".join(open(os.path.join(path, f), encoding="utf-8").read() for f in parts)
    return out


def _partition_by(spark, df) -> dict:
    """The directories ``write.partitionBy`` makes and what reading them back gives."""
    from pyspark.sql import functions as F

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("parquet", "csv", "json"):
            path = os.path.join(tmp, fmt)
            header = {"header": True} if fmt == "csv" else {}
            w = df.select("i", "s", "ok", "day").withColumn("k", F.coalesce("i", F.lit(0)) % 2).write
            w.partitionBy("k", "ok").options(**header).format(fmt).save(path)
            dirs = sorted(os.path.relpath(d, path) for d, _, files in os.walk(path)
                          if any(not f.startswith((".", "_")) for f in files))
            back = spark.read.options(**header).format(fmt).load(path)
            rows = sorted(back.collect(), key=lambda r: (str(r["i"]), str(r["k"])))
            out[fmt] = {"dirs": dirs, "schema": back.schema.simpleString(), "columns": back.columns,
                        "rows": [[tag(v) for v in r] for r in rows]}
    return out


if __name__ == "__main__":
    main()
