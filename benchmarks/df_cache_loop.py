"""A DataFrame ``cache()`` under memory pressure in a query loop, beside PySpark's.

    python benchmarks/df_cache_loop.py --data /tmp/tpch-sf1 [--pressure 4] [--queries 10] [--level MEMORY_AND_DISK]

Six columns of TPC-H's ``lineitem`` (``tpchgen-cli parquet -s 1``: 6M rows) are cached
with ``df.cache()`` (strataflow: at ``--level``), then the same query runs ``--queries``
times with its filter changing (``l_quantity < 5, 10, ...``): a grouped sum and count.
strataflow's memory budget is the cached size over ``--pressure`` (the size measured by
a first, unbounded run), so the cache cannot hold it; it reports the time per query and
the bytes the cache moved (dropped, written to disk, read back, re-cached). PySpark
``local[2]`` runs the same program with Spark's defaults (its own memory settings, not
the same budget: its figure is the time a user gets), beside it in one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

COLUMNS = ["l_orderkey", "l_quantity", "l_extendedprice", "l_discount", "l_shipdate", "l_returnflag"]


def program(spark, F, path: str, queries: int, level=None) -> dict:
    df = spark.read.parquet(path).select(*COLUMNS)
    df = df.persist(level) if level is not None else df.cache()
    t0 = time.perf_counter()
    n = df.count()
    first = time.perf_counter() - t0
    times, answers = [], []
    for i in range(queries):
        t0 = time.perf_counter()
        rows = (df.filter(F.col("l_quantity") < 5 * (i + 1)).groupBy("l_returnflag")
                .agg(F.sum("l_extendedprice").alias("s"), F.count("*").alias("n")).orderBy("l_returnflag").collect())
        times.append(time.perf_counter() - t0)
        answers.append([(r[0], round(float(r[1]), 2), r[2]) for r in rows])
    return {"rows": n, "cache_s": first, "query_s": times, "answers": answers}


def run_strataflow(path: str, queries: int, memory: str | None, level: str) -> dict:
    from strataflow.pyspark import SparkConf, SparkContext, StorageLevel
    from strataflow.pyspark.sql import SparkSession, functions as F

    conf = SparkConf()
    if memory:
        conf.set("strataflow.memory", memory)
    sc = SparkContext("local[2]", "df-cache-loop", conf=conf)
    try:
        out = program(SparkSession(sc), F, path, queries, getattr(StorageLevel, level))
        m = sc.ctx.metrics()
        out["moved"] = {k: m.get(k, 0) for k in ("bytes_dropped", "disk_bytes_written", "disk_bytes_read",
                                                    "bytes_recached", "memory_hits", "misses")}
        out["cached_bytes"] = sum(s.memory_bytes + s.disk_bytes for s in sc.ctx.storage_status())
        return out
    finally:
        sc.stop()


def run_pyspark(path: str, queries: int) -> dict:
    from pyspark.sql import SparkSession, functions as F

    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        return program(spark, F, path, queries)
    finally:
        spark.stop()


def _child(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--pressure", type=float, default=4.0)
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--level", default="MEMORY_AND_DISK")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--memory", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    path = f"{a.data}/lineitem.parquet"
    if a.one == "strataflow":
        print(json.dumps(run_strataflow(path, a.queries, a.memory, a.level), default=str))
        return
    if a.one == "pyspark":
        print(json.dumps(run_pyspark(path, a.queries), default=str))
        return
    probe = _child(["--data", a.data, "--queries", "1", "--one", "strataflow", "--memory", "8GB", "--level", a.level])
    size = probe["cached_bytes"] or 0
    budget = max(64 << 20, int(size / a.pressure))
    ours = _child(["--data", a.data, "--queries", str(a.queries), "--one", "strataflow",
                   "--memory", str(budget), "--level", a.level])
    spark = _child(["--data", a.data, "--queries", str(a.queries), "--one", "pyspark"])
    mb = 1 << 20
    print(f"cached size {size / mb:.0f} MB, strataflow budget {budget / mb:.0f} MB ({a.pressure}x), {a.level}")
    print(f"answers equal: {ours['answers'] == spark['answers']}")
    for name, r in (("strataflow", ours), ("pyspark", spark)):
        print(f"{name:>10}: cache {r['cache_s']:.2f} s, query median {statistics.median(r['query_s']):.3f} s "
              f"(first {r['query_s'][0]:.3f}, last {r['query_s'][-1]:.3f})")
    print("strataflow moved (MB): " + ", ".join(f"{k} {v / mb:.0f}" if "bytes" in k else f"{k} {v:.0f}"
                                                for k, v in ours["moved"].items()))
    print(f"pyspark / strataflow, median query: {statistics.median(spark['query_s']) / statistics.median(ours['query_s']):.2f}")


if __name__ == "__main__":
    main()
