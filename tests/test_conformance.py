"""strataflow's DataFrame functions, operators and casts against real PySpark's recorded
answers (``tests/conformance``: the value table, the cases, the goldens and the script
that records them): in every configuration — the DataFrame form and the ``spark.sql``
form, ``spark.sql.ansi.enabled`` true and false, session time zones UTC and
America/Los_Angeles — each case gives Spark's column name, type and values (or Spark's
error class), or strataflow's refusal (``STRATAFLOW_UNSUPPORTED``); never another answer.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conformance.families import ALL_CASES, FAMILIES  # noqa: E402
from conformance.record import golden_path  # noqa: E402
from conformance.report import DOCS, docs_table, table  # noqa: E402
from conformance.runner import CONFIGS, config_key  # noqa: E402
from conformance.suite import run_config  # noqa: E402
from conformance.verdict import judge, summary  # noqa: E402

_VERDICTS: dict[str, dict[str, str]] = {}


@pytest.fixture(scope="module")
def spark():
    from strataflow.pyspark import SparkContext
    from strataflow.pyspark.sql import SparkSession

    sc = SparkContext("local[2]", "conformance")
    try:
        yield SparkSession(sc)
    finally:
        sc.stop()


#: (family, form, ansi, tz) for every family that has cases
_RUNS = [(family, *config) for family, cases in FAMILIES.items() if cases for config in CONFIGS]


@pytest.mark.parametrize("family", [f for f, cases in FAMILIES.items() if cases])
def test_goldens_cover_every_case(family):
    """Every case has a golden in every configuration (re-record the family after adding
    cases: ``record.py --family F``); a case id is in one family only."""
    import json

    for form, ansi, tz in CONFIGS:
        doc = json.loads(golden_path(form, ansi, tz, family).read_text())
        assert doc["config"]["spark.sql.ansi.enabled"] == ansi and doc["config"]["spark.sql.session.timeZone"] == tz
        missing = {c.id for c in FAMILIES[family]} - set(doc["cases"])
        assert not missing, f"{family} {config_key(form, ansi, tz)}: no golden for {sorted(missing)[:5]}"
    others = {c.id for f, cases in FAMILIES.items() if f != family for c in cases}
    assert not others & {c.id for c in FAMILIES[family]}, "a case in two families"


@pytest.mark.parametrize("family,form,ansi,tz", _RUNS, ids=[f"{r[0]}|{config_key(*r[1:])}" for r in _RUNS])
def test_no_case_differs_from_spark(spark, family, form, ansi, tz):
    from strataflow.pyspark.sql import functions as F

    got = run_config(spark, F, form, ansi, tz, family)
    _VERDICTS.setdefault(config_key(form, ansi, tz), {}).update({cid: v for cid, (v, _, _) in got.items()})
    differs = {cid: (g, o) for cid, (v, g, o) in got.items() if v == "differs"}
    assert not differs, "\n".join(f"{cid}: PySpark {g} / strataflow {o}" for cid, (g, o) in list(differs.items())[:10])
    counts = Counter(v for v, _, _ in got.values())
    assert counts["same"] > 0.8 * len(got), counts  # the suite checks answers, not only refusals


def test_the_docs_table_is_the_suites():
    """docs/dataframes.md's compatibility table is what the suite finds now."""
    if sum(len(v) for v in _VERDICTS.values()) < len(ALL_CASES) * len(CONFIGS):
        pytest.fail("run with every family's configurations' tests (they record the verdicts)")
    expected = table(summary(_VERDICTS, {c.id: c.fn for c in ALL_CASES}))
    assert docs_table(DOCS.read_text()) == expected, "regenerate it: TZ=UTC python tests/conformance/report.py"


def test_judge_tells_values_types_names_and_errors_apart():
    """The judge itself: another value, type, name or error class differs; a refusal is
    refused; floating-point values within two units in the last place are the same."""
    g = {"name": "round(d, 2)", "type": "double", "rows": [{"f": "2.68"}, None]}
    assert judge(g, dict(g)) == "same"
    assert judge(g, {**g, "rows": [{"f": "2.67"}, None]}) == "differs"
    assert judge(g, {**g, "type": "float"}) == "differs"
    assert judge(g, {**g, "name": "round(d)"}) == "differs"
    assert judge(g, {**g, "rows": [{"f": repr(2.68 + 2.68 * 2 ** -52)}, None]}) == "same"
    assert judge(g, {"error": "STRATAFLOW_UNSUPPORTED"}) == "refused"
    assert judge({"error": "DIVIDE_BY_ZERO"}, {"error": "DIVIDE_BY_ZERO"}) == "same"
    assert judge({"error": "DIVIDE_BY_ZERO"}, {"error": "ARITHMETIC_OVERFLOW"}) == "differs"
    assert judge({"error": "DIVIDE_BY_ZERO"}, g) == "differs"
    assert judge(g, {"error": "_duckdb.BinderException"}) == "differs"
