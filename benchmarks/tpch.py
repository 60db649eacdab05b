"""TPC-H's 22 queries as a PySpark program sends them (SQL strings over temporary views of
Parquet files), on strataflow, PySpark ``local[2]`` and Polars, each answer checked.

    pip install tpchgen-cli        # the TPC-H data generator (tpchgen-rs), writes Parquet
    python benchmarks/tpch.py --sf 1 [--systems strataflow,pyspark,polars] [--data DIR] [--cores 2]

The queries (``tpch_queries.py``) are the specification's, with its validation
parameters; strataflow and PySpark run the same strings, only the import differs.
Polars runs them through its SQL interface (``pl.SQLContext``), written in PostgreSQL's
dialect by sqlglot. Every system runs in a process of its own, one query after the other,
and each answer is compared with DuckDB's over the same files (numbers to 2 decimals,
rows in the query's order): DuckDB is the model of the right answer here.

Timed: from ``spark.sql(query)`` to the last row collected, per query; the views are
made before timing (both read the footers then), and every system first runs one small
untimed query (``WARM_UP``), so that q1 does not also pay each system's first-use costs.
Printed: a row per query with each system's seconds and
whether its answer was right, then the totals and the ratios, as JSON too (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from tpch_queries import QUERIES  # noqa: E402

TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]


def _norm(rows: list) -> list:
    return [tuple(round(float(x), 2) if isinstance(x, (float, Decimal)) else
                  (x.date() if hasattr(x, "date") and type(x).__name__ == "datetime" else x) for x in r)
            for r in rows]


def _oracle(data: str) -> dict[int, list]:
    import duckdb
    import sqlglot

    con = duckdb.connect()
    for t in TABLES:
        con.sql(f"CREATE VIEW {t} AS SELECT * FROM '{data}/{t}.parquet'")
    out = {}
    for n, stmts in QUERIES.items():
        rows = None
        for s in stmts:
            sql = sqlglot.transpile(s, read="spark", write="duckdb")[0]
            rel = con.sql(sql)
            if s is stmts[-2 if n == 15 else -1]:
                rows = rel.fetchall()
        out[n] = _norm(rows)
    return out


#: run by every system before its timed queries, so that no query's time holds the system's
#: first-use costs (PySpark's JIT and job set-up, strataflow's and Polars' first imports)
WARM_UP = "SELECT count(*) AS n FROM region"


def _spark_like(session, data: str, queries: list[int]) -> dict:
    for t in TABLES:
        session.read.parquet(f"{data}/{t}.parquet").createOrReplaceTempView(t)
    session.sql(WARM_UP).collect()
    res = {}
    for n in queries:
        stmts = QUERIES[n]
        t0 = time.perf_counter()
        try:
            rows = None
            for i, s in enumerate(stmts):
                df = session.sql(s)
                if i == (len(stmts) - 2 if n == 15 else len(stmts) - 1):
                    rows = [tuple(r) for r in df.collect()]
            res[n] = {"s": time.perf_counter() - t0, "rows": _norm(rows)}
        except Exception as exc:  # a failed query is reported, not fatal to the run
            res[n] = {"s": None, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        print(f"  q{n}: {res[n].get('s')}", file=sys.stderr, flush=True)
    return res


#: the cores each system is given: ``local[N]`` for strataflow and PySpark (``--cores``)
CORES = 2


def run_strataflow(data: str, queries: list[int]) -> dict:
    from strataflow.pyspark.sql import SparkSession

    spark = SparkSession.builder.master(f"local[{CORES}]").appName("tpch").getOrCreate()
    try:
        return _spark_like(spark, data, queries)
    finally:
        spark.stop()


def run_pyspark(data: str, queries: list[int]) -> dict:
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(f"local[{CORES}]").appName("tpch").config("spark.driver.memory", "4g")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        return _spark_like(spark, data, queries)
    finally:
        spark.stop()


def run_polars(data: str, queries: list[int]) -> dict:
    import polars as pl
    import sqlglot

    ctx = pl.SQLContext()
    for t in TABLES:
        ctx.register(t, pl.scan_parquet(f"{data}/{t}.parquet"))
    ctx.execute(WARM_UP).collect()
    res = {}
    for n in queries:
        t0 = time.perf_counter()
        try:
            rows = None
            for s in QUERIES[n]:
                tree = sqlglot.parse_one(s, read="spark")
                if isinstance(tree, sqlglot.exp.Create):  # q15's view: a LazyFrame under the name
                    cols = [c.name for c in tree.this.expressions]
                    lf = ctx.execute(tree.expression.sql("postgres"))
                    ctx.register(tree.this.this.name, lf.rename(dict(zip(lf.collect_schema().names(), cols))))
                elif isinstance(tree, sqlglot.exp.Drop):
                    ctx.unregister(tree.args["tables"][0].name)
                else:
                    rows = ctx.execute(tree.sql("postgres")).collect().rows()
            res[n] = {"s": time.perf_counter() - t0, "rows": _norm(rows)}
        except Exception as exc:
            res[n] = {"s": None, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        print(f"  q{n}: {res[n].get('s')}", file=sys.stderr, flush=True)
    return res


RUNNERS = {"strataflow": run_strataflow, "pyspark": run_pyspark, "polars": run_polars}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", default="1")
    ap.add_argument("--data", default=None, help="the Parquet directory (default: /tmp/tpch-sf<SF>, made if absent)")
    ap.add_argument("--systems", default="strataflow,pyspark,polars")
    ap.add_argument("--queries", default=",".join(map(str, QUERIES)))
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    ap.add_argument("--cores", type=int, default=2, help="local[N] for strataflow and PySpark (Polars takes every core)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: run one system, print JSON
    args = ap.parse_args()
    global CORES
    CORES = args.cores
    data = args.data or f"/tmp/tpch-sf{args.sf}"
    queries = [int(q) for q in args.queries.split(",")]
    if args.one:
        print(json.dumps(RUNNERS[args.one](data, queries), default=str))
        return
    if not Path(data, "lineitem.parquet").exists():
        subprocess.run(["tpchgen-cli", "parquet", "-s", str(args.sf), f"--output-dir={data}"], check=True)
    want = _oracle(data)
    results = {}
    for system in args.systems.split(","):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--sf", str(args.sf), "--data", data, "--queries",
                               args.queries, "--cores", str(args.cores), "--one", system], capture_output=True, text=True, env=os.environ)
        if proc.returncode != 0:
            print(f"{system}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
            continue
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        results[system] = {int(n): {"s": r.get("s"), "ok": r.get("rows") is not None and
                                    [tuple(x) for x in r["rows"]] == [tuple(json.loads(json.dumps(x, default=str)))
                                                                       for x in want[int(n)]],
                                    "error": r.get("error")} for n, r in got.items()}
        print(f"{system}: done in {time.perf_counter() - t0:.0f} s (process included)", file=sys.stderr)
    systems = list(results)
    print(f"TPC-H SF{args.sf}, {data}, local[{args.cores}]; seconds per query (x: a wrong answer, -: an error)")
    print("query " + " ".join(f"{s:>11}" for s in systems))
    for n in queries:
        cells = []
        for s in systems:
            r = results[s][n]
            secs = "-" if r["s"] is None else f"{r['s']:.2f}"
            cells.append((secs + ("" if r["ok"] else " x")).rjust(11))
        print(f"q{n:<5}" + " ".join(cells))
    totals = {s: sum(r["s"] or 0 for r in results[s].values()) for s in systems}
    print("total " + " ".join(f"{totals[s]:>11.1f}" for s in systems))
    print("right " + " ".join(f"{sum(r['ok'] for r in results[s].values()):>8}/{len(queries)}" for s in systems))
    if "strataflow" in totals:
        for s in systems:
            if s != "strataflow" and totals["strataflow"]:
                print(f"{s} / strataflow (total): {totals[s] / totals['strataflow']:.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps({"sf": args.sf, "cores": args.cores, "results": results, "totals": totals}, indent=1))


if __name__ == "__main__":
    main()
