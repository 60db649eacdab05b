"""The tests of one conformance family, made for each family's test module
(``tests/test_conformance_<family>.py``): one module a family, so that ``make test``'s
workers (a test file each at a time) share the families between them.

For the family: every case has a golden in every configuration; in each configuration no
case differs from PySpark's answer (a refusal is allowed, but most case-runs are the
same); and the rows of docs/dataframes.md's compatibility table for the functions whose
cases are all in this family are what the family's runs find (the whole table, across
families, is checked by ``tests/test_conformance.py``'s long test and rewritten by
``report.py``).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Callable

import pytest

from conformance.cases import C, Case
from conformance.families import ALL_CASES, FAMILIES
from conformance.record import golden_path
from conformance.report import DOCS, docs_table, table
from conformance.runner import CONFIGS, config_key
from conformance.suite import run_config
from conformance.values import COLUMNS
from conformance.verdict import load_golden, summary

__all__ = ["family_tests"]

#: families whose functions read no clock and no session zone of their own: in a zone other
#: than UTC, make test runs only their cases that hold a date or a timestamp (an argument,
#: or the answer: the only ways the zone reaches them), the long tier all of them
ZONE_FREE = {"maths", "strings", "arrays_maps", "aggregates"}


def zone_sensitive(case: Case, utc_golden: dict) -> bool:
    """True where ``case`` could answer otherwise in another session zone: an argument or
    the answer holds a date or a timestamp (or PySpark failed, and the failure may be the
    zone's)."""
    import datetime as dt

    for a in case.args:
        if isinstance(a, C) and any(t in COLUMNS[a.name][0] for t in ("date", "timestamp")):
            return True
        if isinstance(a, (dt.date, dt.datetime)):
            return True
    return "error" in utc_golden or any(t in utc_golden.get("type", "") for t in ("date", "timestamp"))


def _cases_in(family: str, form: str, ansi: str, tz: str, every_zone: bool) -> "list[Case] | None":
    """The cases of ``family`` make test runs in this configuration (None: all), or, with
    ``every_zone``, those the long tier adds."""
    if family not in ZONE_FREE or tz == "UTC":
        return [] if every_zone else None
    utc = load_golden(golden_path(form, ansi, "UTC", family))
    return [c for c in FAMILIES[family] if zone_sensitive(c, utc[c.id]) != every_zone]


def family_tests(family: str) -> dict[str, Callable[..., Any]]:
    """The fixture and tests of ``family``, to put in its test module's namespace."""
    verdicts: dict[str, dict[str, str]] = {}

    @pytest.fixture(scope="module")
    def spark():
        from strataflow.pyspark import SparkContext
        from strataflow.pyspark.sql import SparkSession

        sc = SparkContext("local[2]", f"conformance-{family}")
        try:
            yield SparkSession(sc)
        finally:
            sc.stop()

    def test_goldens_cover_every_case():
        """Every case has a golden in every configuration (re-record the family after
        adding cases: ``record.py --family``); a case id is in one family only."""
        for form, ansi, tz in CONFIGS:
            doc = json.loads(golden_path(form, ansi, tz, family).read_text())
            assert doc["config"]["spark.sql.ansi.enabled"] == ansi
            assert doc["config"]["spark.sql.session.timeZone"] == tz
            missing = {c.id for c in FAMILIES[family]} - set(doc["cases"])
            assert not missing, f"{family} {config_key(form, ansi, tz)}: no golden for {sorted(missing)[:5]}"
        others = {c.id for f, cases in FAMILIES.items() if f != family for c in cases}
        assert not others & {c.id for c in FAMILIES[family]}, "a case in two families"

    @pytest.mark.parametrize("form,ansi,tz", CONFIGS, ids=[config_key(*c) for c in CONFIGS])
    def test_no_case_differs_from_spark(spark, form, ansi, tz):
        from strataflow.pyspark.sql import functions as F

        some = _cases_in(family, form, ansi, tz, every_zone=False)
        got = run_config(spark, F, form, ansi, tz, family, some)
        verdicts[config_key(form, ansi, tz)] = {cid: v for cid, (v, _, _) in got.items()}
        differs = {cid: (g, o) for cid, (v, g, o) in got.items() if v == "differs"}
        assert not differs, "\n".join(f"{cid}: PySpark {g} / strataflow {o}"
                                      for cid, (g, o) in list(differs.items())[:10])
        counts = Counter(v for v, _, _ in got.values())
        if some is None:  # over the whole family: the suite checks answers, not only refusals
            assert counts["same"] > 0.8 * len(got), counts

    @pytest.mark.long
    @pytest.mark.parametrize("form,ansi,tz", CONFIGS, ids=[config_key(*c) for c in CONFIGS])
    def test_zone_free_cases_differ_in_no_zone(spark, form, ansi, tz):
        """The cases ``make test`` leaves out in a zone other than UTC (no date or timestamp
        in or out) give Spark's answer there too."""
        from strataflow.pyspark.sql import functions as F

        cases = _cases_in(family, form, ansi, tz, every_zone=True)
        got = run_config(spark, F, form, ansi, tz, family, cases) if cases else {}
        differs = {cid: (g, o) for cid, (v, g, o) in got.items() if v == "differs"}
        assert not differs, "\n".join(f"{cid}: PySpark {g} / strataflow {o}"
                                      for cid, (g, o) in list(differs.items())[:10])

    def test_the_docs_rows_of_the_family_are_its_runs():
        """docs/dataframes.md's rows for the functions whose cases are all in this family
        are what this family's runs found (regenerate: ``report.py``)."""
        if len(verdicts) < len(CONFIGS):
            pytest.fail("run with the family's configuration tests (they record the verdicts)")
        fn_of = {c.id: c.fn for c in ALL_CASES}
        own = {c.fn for c in FAMILIES[family]} - {c.fn for f, cs in FAMILIES.items() if f != family for c in cs}
        if family in ZONE_FREE:  # the rows count every zone's cases: those with a case left to the long tier
            left = {c.fn for form, ansi, tz in CONFIGS for c in _cases_in(family, form, ansi, tz, every_zone=True)}
            own -= left
        rows = [r for r in table(summary(verdicts, fn_of)).splitlines() if r.startswith("| `")
                and r.split("`")[1] in own]
        docs = docs_table(DOCS.read_text()) or ""
        missing = [r for r in rows if r not in docs.splitlines()]
        assert not missing, f"{missing[:3]}: regenerate it: TZ=UTC python tests/conformance/report.py"

    return {"spark": spark, "test_goldens_cover_every_case": test_goldens_cover_every_case,
            "test_no_case_differs_from_spark": test_no_case_differs_from_spark,
            "test_zone_free_cases_differ_in_no_zone": test_zone_free_cases_differ_in_no_zone,
            "test_the_docs_rows_of_the_family_are_its_runs": test_the_docs_rows_of_the_family_are_its_runs}
