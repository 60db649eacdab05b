"""The suite on strataflow: every case in every configuration, judged against the goldens."""

from __future__ import annotations

from collections import Counter

from conformance.cases import CASES
from conformance.record import golden_path
from conformance.runner import CONFIGS, config_key, run_cases
from conformance.verdict import judge, load_golden, summary

__all__ = ["run_config", "run_suite"]


def run_config(spark, F, form: str, ansi: str, tz: str) -> dict[str, tuple[str, dict, dict]]:
    """case id -> (verdict, golden, ours) in one configuration."""
    golden = load_golden(golden_path(form, ansi, tz))
    ours = run_cases(spark, F, CASES, form, ansi, tz)
    return {cid: (judge(golden[cid], ours[cid]), golden[cid], ours[cid]) for cid in golden}


def run_suite() -> tuple[dict[str, Counter], dict[str, dict]]:
    """(function -> Counter of verdicts, configuration -> case -> verdict), on a session of its own."""
    from strataflow.pyspark import SparkContext
    from strataflow.pyspark.sql import SparkSession, functions as F

    sc = SparkContext("local[2]", "conformance")
    try:
        spark = SparkSession(sc)
        verdicts = {}
        for form, ansi, tz in CONFIGS:
            got = run_config(spark, F, form, ansi, tz)
            verdicts[config_key(form, ansi, tz)] = {cid: v for cid, (v, _, _) in got.items()}
    finally:
        sc.stop()
    return summary(verdicts, {c.id: c.fn for c in CASES}), verdicts
