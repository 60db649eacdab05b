"""TPC-H's 22 queries, as a PySpark program sends them, on strataflow's SparkSession at
scale factor 0.01, every answer against DuckDB's over the same Parquet files (the model
of the right answer: numbers to 2 decimals, rows in the query's order).
``benchmarks/tpch.py`` runs the same at larger scales beside PySpark and Polars.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
from tpch import TABLES, _norm, _oracle  # noqa: E402
from tpch_queries import QUERIES  # noqa: E402

from strataflow.pyspark import SparkConf, SparkContext  # noqa: E402
from strataflow.pyspark.sql import SparkSession  # noqa: E402


@pytest.fixture(scope="module")
def tpch(tmp_path_factory):
    """The data (tpchgen-cli, the dev extra's TPC-H generator) and the answers."""
    gen = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    out = tmp_path_factory.mktemp("tpch")
    subprocess.run([gen, "parquet", "-s", "0.01", f"--output-dir={out}"], check=True, capture_output=True)
    return str(out), _oracle(str(out))


@pytest.fixture(scope="module")
def spark(tpch):
    sc = SparkContext("local[2]", "tpch", conf=SparkConf())
    session = SparkSession(sc)
    for t in TABLES:
        session.read.parquet(f"{tpch[0]}/{t}.parquet").createOrReplaceTempView(t)
    try:
        yield session
    finally:
        sc.stop()


@pytest.mark.parametrize("n", sorted(QUERIES))
def test_tpch_query_gives_the_right_answer(spark, tpch, n):
    stmts = QUERIES[n]
    rows = None
    for i, s in enumerate(stmts):
        df = spark.sql(s)
        if i == (len(stmts) - 2 if n == 15 else len(stmts) - 1):
            rows = [tuple(r) for r in df.collect()]
    assert _norm(rows) == tpch[1][n]
    assert rows, f"q{n} answered no rows: a vacuous comparison"
