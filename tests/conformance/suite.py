"""The suite on strataflow: every case in every configuration, judged against the goldens."""

from __future__ import annotations

from collections import Counter

from conformance.families import ALL_CASES, FAMILIES
from conformance.record import golden_path
from conformance.runner import CONFIGS, config_key, run_cases
from conformance.verdict import judge, load_golden, summary

__all__ = ["run_config", "run_suite"]


def run_config(spark, F, form: str, ansi: str, tz: str, family: str = "core",
               cases: "list | None" = None) -> dict[str, tuple[str, dict, dict]]:
    """case id -> (verdict, golden, ours) of ``family``'s cases (or of ``cases``, some of
    them) in one configuration."""
    golden = load_golden(golden_path(form, ansi, tz, family))
    cases = FAMILIES[family] if cases is None else cases
    ours = run_cases(spark, F, cases, form, ansi, tz)
    return {c.id: (judge(golden[c.id], ours[c.id]), golden[c.id], ours[c.id]) for c in cases}


def run_suite() -> tuple[dict[str, Counter], dict[str, dict]]:
    """(function -> Counter of verdicts, configuration -> case -> verdict), on a session of its own."""
    from strataflow.pyspark import SparkContext
    from strataflow.pyspark.sql import SparkSession, functions as F

    sc = SparkContext("local[2]", "conformance")
    try:
        spark = SparkSession(sc)
        verdicts = {}
        for family, cases in FAMILIES.items():
            for form, ansi, tz in CONFIGS if cases else ():
                got = run_config(spark, F, form, ansi, tz, family)
                verdicts.setdefault(config_key(form, ansi, tz), {}).update({cid: v for cid, (v, _, _) in got.items()})
    finally:
        sc.stop()
    return summary(verdicts, {c.id: c.fn for c in ALL_CASES}), verdicts
