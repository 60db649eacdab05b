"""String functions whose Spark SQL spelling the conformance suite cannot check: Spark names
``substr(...)`` and ``char(...)`` after the spelling, which the SQL parser does not keep
(``substring``/``chr`` share their node). Their DataFrame form is checked here against
PySpark 4.3's answers over the value table (recorded with ``record.py``, copied here).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conformance.values import SCHEMA, rows  # noqa: E402

#: (the call, PySpark's column name, PySpark's values over the value table)
EXPECTED = [
    (lambda F: F.substr("s", "i2"), "substr(s, i2, 2147483647)",
     ["c", "", "", "İstanbul", "i", None, "ello World", "fé", None, "a,b,,c", "z", "Ef", "", ""]),
    (lambda F: F.substr("s", "i2", "y"), "substr(s, i2, y)",
     ["", "", "", "İstanbul", "", None, "ello ", "fé", None, "a,b", "z", "Ef", "", ""]),
    (lambda F: F.char("i"), "char(i)",
     ["\u0000", "\u0001", "", "ÿ", "", "\u0002", "\u0007", "", None, "\u0003", "\f", "\u0005", "d", ""]),
]


@pytest.fixture(scope="module")
def spark():
    from strataflow.pyspark import SparkContext
    from strataflow.pyspark.sql import SparkSession

    sc = SparkContext("local[1]", "strings")
    try:
        yield SparkSession(sc)
    finally:
        sc.stop()


@pytest.mark.parametrize("i", range(len(EXPECTED)))
def test_dataframe_form_is_sparks(spark, i):
    from strataflow.pyspark.sql import functions as F

    make, name, values = EXPECTED[i]
    df = spark.createDataFrame(rows(), SCHEMA).select(make(F))
    assert df.columns == [name]
    assert [r[0] for r in df.collect()] == values


def test_sql_spellings_keep_their_names(spark):
    """``char(...)``/``chr(...)``, ``substr``/``substring`` in SQL text: each column named
    by the spelling written, as Spark's (the parser keeps it)."""
    spark.createDataFrame([(65, "hello")], ["n", "s"]).createOrReplaceTempView("codes")
    df = spark.sql("SELECT char(n), chr(n + 1), substr(s, 1, 2), substring(s, 2), SUBSTR(s, 2, 1) FROM codes")
    assert df.columns == ["char(n)", "chr((n + 1))", "substr(s, 1, 2)", "substring(s, 2, 2147483647)",
                          "substr(s, 2, 1)"]
    assert tuple(df.first()) == ("A", "B", "he", "ello", "e")
