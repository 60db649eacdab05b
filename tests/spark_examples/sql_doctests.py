"""PySpark's own doctests of ``pyspark.sql`` (``dataframe``, ``column``, ``group``,
``session``) run against strataflow's SparkSession, as each module's ``_test()`` runs
them, with the import changed: the examples' ``spark`` is strataflow's, and ``pyspark.sql``,
``pyspark.sql.functions``, ``.types`` and ``.window`` resolve to strataflow's modules
(the examples import them inside their code). PySpark 4 is needed for the docstrings
only; no JVM starts.

``python tests/spark_examples/sql_doctests.py`` prints, per module, the doctests that
pass and, for each failing one, the first error line; the last line is JSON:
``{"module": {"tests": T, "passed": P, "failed": {name: reason}}}``.

``--module pyspark.sql.functions.builtin --names acos,asin`` runs one module's doctests
instead, only those of the names given (the examples of each function's docstring).
"""

from __future__ import annotations

import doctest
import importlib
import io
import json
import re
import sys

MODULES = ["pyspark.sql.dataframe", "pyspark.sql.column", "pyspark.sql.group", "pyspark.sql.session"]


def _reason(report: str) -> str:
    """The first line that says why a doctest failed: an exception's, or 'wrong output'."""
    lines = report.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Exception raised:"):
            tail = [x.strip() for x in lines[i + 1:] if x.strip() and not x.startswith("    ")]
            exc = [x for x in lines[i + 1:] if re.match(r"\s+\w[\w.]*(Error|Exception|Operation)\b", x)]
            return (exc[-1].strip() if exc else (tail[0] if tail else "exception"))[:160]
    return "wrong output"


def _args() -> tuple[list[str], set[str]]:
    import argparse

    p = argparse.ArgumentParser(description="PySpark's pyspark.sql doctests on strataflow")
    p.add_argument("--module", action="append", help="a module of PySpark's (default: the four above)")
    p.add_argument("--names", default="", help="comma-separated names: only their doctests")
    p.add_argument("--verbose", action="store_true", help="print each failure's whole report")
    a = p.parse_args()
    global VERBOSE
    VERBOSE = a.verbose
    return a.module or MODULES, {n for n in a.names.split(",") if n}


VERBOSE = False


def main() -> None:
    modules, names = _args()
    import strataflow.pyspark.sql as ours
    from strataflow.pyspark.sql import SparkSession, functions, types, window

    real = {name: importlib.import_module(name) for name in modules}
    spark = SparkSession.builder.master("local[4]").appName("sql doctests").getOrCreate()
    sys.modules.update({"pyspark.sql": ours, "pyspark.sql.functions": functions, "pyspark.sql.types": types,
                        "pyspark.sql.window": window})
    import pyspark  # ``import pyspark.sql.functions as sf`` reaches the module through attributes
    pyspark.sql = ours
    out = {}
    for name, module in real.items():
        globs = module.__dict__.copy()
        for key in list(globs):
            for mod in (ours, types, functions):
                if not key.startswith("_") and hasattr(mod, key):
                    globs[key] = getattr(mod, key)
                    break
        globs.update(spark=spark, sc=spark.sparkContext)
        tests = [t for t in doctest.DocTestFinder().find(module, name, globs=globs) if t.examples
                 and (not names or t.name.rsplit(".", 1)[-1] in names)]
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        failed = {}
        for t in tests:
            buf = io.StringIO()
            try:
                if runner.run(t, out=buf.write).failed:
                    failed[t.name[len(name) + 1:]] = _reason(buf.getvalue())
                    if VERBOSE:
                        print(buf.getvalue())
            except Exception as exc:  # a doctest that breaks the runner counts as failed
                failed[t.name[len(name) + 1:]] = f"{type(exc).__name__}: {exc}"[:160]
        out[name] = {"tests": len(tests), "passed": len(tests) - len(failed), "failed": failed}
        print(f"{name}: {len(tests) - len(failed)}/{len(tests)} pass")
        for k, why in sorted(failed.items()):
            print(f"  {k}: {why}")
    spark.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
