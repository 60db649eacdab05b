"""Records real PySpark's answers to the window programs of ``test_functions_aggregates.py``
(first_value, last_value, nth_value over ordered, partitioned windows, with ties and
nulls) into ``goldens/functions_aggregates.json``.

    TZ=UTC .venv/bin/python tests/record_functions_aggregates.py
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "goldens" / "functions_aggregates.json"

#: (id, g, o, x): two partitions, ties in the order key (peers of a range frame, with equal
#: values so that no answer hangs on the order among them), nulls first, last and between
ROWS = [(1, "a", 1, None), (2, "a", 2, 10), (3, "a", 2, 10), (4, "a", 3, None), (5, "a", 4, 40), (6, "a", 5, 50),
        (7, "b", 1, None), (8, "b", 1, None), (9, "b", 2, 8), (10, "b", 3, 9), (11, "b", 4, None)]
SCHEMA = "id int, g string, o int, x int"


def programs(F: Any, Window: Any) -> dict[str, list[Any]]:
    """Program name -> its columns (each aliased), over the rows ordered by id."""
    w = Window.partitionBy("g").orderBy("o")
    by_id = Window.partitionBy("g").orderBy("o", "id")
    full = by_id.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    rows = by_id.rowsBetween(-1, 1)
    out = {}
    for name, win in (("range", w), ("full", full), ("rows", rows)):
        out[name] = [F.first_value("x").over(win).alias("fv"), F.last_value("x").over(win).alias("lv"),
                     F.first_value("x", True).over(win).alias("fvn"), F.last_value("x", True).over(win).alias("lvn"),
                     F.nth_value("x", 2).over(win).alias("nv2"), F.nth_value("x", 2, True).over(win).alias("nv2n"),
                     F.nth_value("x", 1).over(win).alias("nv1")]
    return out


def run(spark: Any, F: Any, Window: Any) -> dict[str, list[list[Any]]]:
    df = spark.createDataFrame(ROWS, SCHEMA)
    got = {}
    for name, cols in programs(F, Window).items():
        got[name] = [list(r) for r in df.select("id", *cols).orderBy("id").collect()]
    agg = df.groupBy("g").agg(F.first_value("x", False).alias("f"), F.last_value("x", True).alias("l"),
                              F.first_value("x", True).alias("fn")).orderBy("g")
    got["grouped"] = [list(r) for r in agg.collect()]
    return got


def main() -> None:
    os.environ["TZ"] = "UTC"
    time.tzset()
    from pyspark.sql import SparkSession, Window, functions as F

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "1").getOrCreate())
    doc = {"pyspark": spark.version, "programs": run(spark, F, Window)}
    GOLDEN.write_text(json.dumps(doc, indent=1) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()
