"""Records real PySpark's answers to the conformance cases into ``goldens/``.

Run from the repository root with the test environment (``.[peers]`` has PySpark, Java 17
is needed)::

    TZ=UTC .venv/bin/python tests/conformance/record.py --family maths [CONFIG ...]

(``--family core``, the first suite, takes 4-8 minutes; a family of ``families/`` records
alone, into files of its own.) It writes one file per configuration (form x ANSI mode x session time zone), each case's
column name, type and values, or its error class. The suite (``tests/test_conformance.py``)
reads only these files: ``make test`` needs no JVM for it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from conformance.families import FAMILIES  # noqa: E402
from conformance.runner import CONFIGS, config_key, run_cases  # noqa: E402

GOLDENS = HERE / "goldens"


def golden_path(form: str, ansi: str, tz: str, family: str = "core") -> Path:
    """The goldens of ``family`` in one configuration (the core's at the top of ``goldens/``)."""
    name = f"{config_key(form, ansi, tz).replace('|', '_').replace('=', '-').replace('/', '-')}.json"
    return GOLDENS / name if family == "core" else GOLDENS / family / name


def main() -> None:
    os.environ["TZ"] = "UTC"
    time.tzset()
    from pyspark.sql import SparkSession, functions as F

    spark = (SparkSession.builder.master("local[1]").appName("conformance-goldens")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1").getOrCreate())
    argv = sys.argv[1:]
    if len(argv) < 2 or argv[0] != "--family" or argv[1] not in FAMILIES:
        sys.exit(f"usage: record.py --family {{{','.join(FAMILIES)}}} [CONFIG ...]")
    family, only = argv[1], set(argv[2:])
    cases = FAMILIES[family]
    for form, ansi, tz in CONFIGS:
        if only and config_key(form, ansi, tz) not in only:
            continue
        t0 = time.time()
        got = run_cases(spark, F, cases, form, ansi, tz)
        doc = {"pyspark": spark.version, "config": {"form": form, "spark.sql.ansi.enabled": ansi,
                                                    "spark.sql.session.timeZone": tz}, "cases": got}
        path = golden_path(form, ansi, tz, family)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=0, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"{family} {config_key(form, ansi, tz)}: {len(got)} cases in {time.time() - t0:.1f} s", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
