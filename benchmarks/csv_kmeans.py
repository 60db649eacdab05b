"""K-means on text points end to end, our two CSV parsers against PySpark DataFrame +
ml.KMeans, in one run (issue 41 section 2's target: ours >= 15x Spark DF).

    flock /tmp/sf-bench.lock python benchmarks/csv_kmeans.py --data DIR [--memory 128MB]
        [--repeat 3] [--spark-repeat 1]

``DIR``: ``strataflow gen kmeans --points 4000000 --format text``. Ours is
``benchmarks/vs_pyspark.py``'s run (``strataflow run kmeans --api batches``, MEMORY_AND_DISK,
``no-recache``, a fresh process each), once with ``csv_file``'s parser as shipped (polars
where installed) and once with ``STRATAFLOW_CSV_PARSER=pyarrow`` (the reader before issue
41), interleaved, the order swapped every repeat; Spark DF with the same unified memory,
JVM start excluded. Medians, and the ratios Spark / ours, go to stdout as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]

import vs_pyspark  # noqa: E402

from strataflow.common.checks import parse_size  # noqa: E402
from strataflow.io.csv_parse import PARSER_ENV  # noqa: E402


def _ours(data: str, memory: int, parser: str) -> dict:
    saved = {k: os.environ.get(k) for k in (PARSER_ENV, "PYTHONPATH")}
    os.environ["PYTHONPATH"] = ROOT + os.pathsep + (saved["PYTHONPATH"] or "")  # this checkout's engine
    if parser == "pyarrow":
        os.environ[PARSER_ENV] = "pyarrow"
    else:
        os.environ.pop(PARSER_ENV, None)
    try:
        return vs_pyspark.ours(data, memory, "no-recache")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--memory", default="128MB")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--spark-repeat", type=int, default=1)
    args = p.parse_args()
    data, memory = os.path.abspath(args.data), parse_size(args.memory)
    runs: dict[str, list] = {"ours-fast": [], "ours-pyarrow": [], "pyspark-df": []}
    for rep in range(args.repeat):
        order = ["ours-fast", "ours-pyarrow"] if rep % 2 == 0 else ["ours-pyarrow", "ours-fast"]
        if rep < args.spark_repeat:
            order.insert(1, "pyspark-df")
        for v in order:
            r = vs_pyspark.spark(data, memory, "df") if v == "pyspark-df" else _ours(data, memory, v.split("-")[1])
            runs[v].append(r)
            print(f"rep {rep} {v}: total {r['total_s']:.2f} s, load {r['load_s'] or 0:.2f} s, iterations "
                  f"{[round(x, 3) for x in r['iteration_s']]}, check {r['result_check']}", file=sys.stderr, flush=True)
    med = {v: statistics.median(r["total_s"] for r in rs) for v, rs in runs.items() if rs}
    load = {v: statistics.median(r["load_s"] or 0 for r in rs) for v, rs in runs.items() if rs}
    it = {v: statistics.median(x for r in rs for x in r["iteration_s"]) for v, rs in runs.items() if rs}
    out = {"data": data, "memory_bytes": memory, "median_total_s": med, "median_load_s": load,
           "median_iteration_s": it,
           "spark_df_over": {v: med["pyspark-df"] / med[v] for v in ("ours-fast", "ours-pyarrow")}
           if "pyspark-df" in med else None, "runs": runs}
    print(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
