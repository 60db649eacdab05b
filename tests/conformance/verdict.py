"""Judges strataflow's outcome of each case against PySpark's golden: ``same`` (equal
name, type and values, or the same error class), ``refused`` (strataflow raised its clear
refusal, a PySpark-class error naming the function), or ``differs`` (anything else: another
value, type or name, a raw engine error, or a value where Spark raised an error).
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path

__all__ = ["judge", "load_golden", "REFUSALS", "summary"]

#: the error classes of strataflow's refusals (``strataflow.pyspark.sql.semantics``)
REFUSALS = {"STRATAFLOW_UNSUPPORTED"}


def load_golden(path: Path) -> dict[str, dict]:
    return json.loads(path.read_text())["cases"]


def _close(a: object, b: object) -> bool:
    """Equal, where floating-point values may differ in their last two bits: Java's
    ``Math`` (exp, log, sin, cbrt...) and C's libm round those differently."""
    if isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b) == {"f"}:
        x, y = float(a["f"]), float(b["f"])
        if x == y or (math.isnan(x) and math.isnan(y)):
            return a == b or x == y
        if math.isinf(x) or math.isinf(y) or (x > 0) != (y > 0):
            return False
        return abs(x - y) <= 2 * math.ulp(max(abs(x), abs(y)))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return a == b


def judge(golden: dict, ours: dict) -> str:
    """``same``, ``refused``, ``differs``, or ``n/a`` where PySpark itself could not hand
    the value to Python (its ``collect`` failed converting, say, the year 294247)."""
    if str(golden.get("error", "")).startswith("builtins."):
        return "n/a"
    if "error" in ours:
        if ours["error"] in REFUSALS:
            return "refused"
        if "error" in golden and golden["error"] == ours["error"]:
            return "same"
        return "differs"
    if "error" in golden:
        return "differs"
    return "same" if _close(ours, golden) else "differs"


def summary(verdicts: dict[str, dict[str, str]], fn_of: dict[str, str]) -> dict[str, Counter]:
    """function -> Counter of verdicts over every configuration and case."""
    out: dict[str, Counter] = defaultdict(Counter)
    for per_case in verdicts.values():
        for case_id, v in per_case.items():
            out[fn_of[case_id]][v] += 1
    return out
