"""PySpark's own RDD doctests, run as PySpark's ``pyspark/core/rdd.py`` ``_test()`` runs
them, with one change: its ``SparkContext`` is ``strataflow.pyspark``'s.

What a user would run to check the claim in docs/pyspark.md (``python
tests/spark_examples/rdd_doctests.py``, PySpark 4 installed for its docstrings; no JVM
starts). As ``_test()``: the module's own globals, ``SparkContext("local[4]",
"PythonTest")`` with a checkpoint directory, ``doctest`` with ``ELLIPSIS``, numpy's
legacy print options. The test set-up's one environment setting is the caller's:
PySpark's tests run under ``bin/pyspark`` with ``SPARK_TESTING``, which exports
``PYTHONHASHSEED=0`` (as ``spark-submit`` does); without it PySpark's own
``portable_hash`` (a global of the module, not strataflow's) refuses to hash a string.

Prints doctest's report, then a last line of JSON: ``{"attempted": N, "tests": T,
"failed": [names]}``.
"""

from __future__ import annotations

import doctest
import json
import tempfile

import pyspark.core.rdd as module

from strataflow.pyspark import SparkContext  # the one change: PySpark's is pyspark.core.context's


def main() -> None:
    try:  # as _test(): numpy 2 prints scalars with their type unless told otherwise
        import numpy as np

        np.set_printoptions(legacy="1.25")
    except (ModuleNotFoundError, TypeError):
        pass
    tmp_dir = tempfile.TemporaryDirectory()
    globs = module.__dict__.copy()
    globs["sc"] = SparkContext("local[4]", "PythonTest")
    globs["sc"].setCheckpointDir(tmp_dir.name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in doctest.DocTestFinder().find(module, module.__name__, globs=globs) if t.examples]
    failed = [t.name[len(module.__name__) + 1:] for t in tests if runner.run(t).failed]
    result = runner.summarize(verbose=False)
    globs["sc"].stop()
    tmp_dir.cleanup()
    print(json.dumps({"attempted": result.attempted, "tests": len(tests), "failed": failed}))


if __name__ == "__main__":
    main()
