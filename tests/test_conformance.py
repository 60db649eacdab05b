"""strataflow's DataFrame functions, operators and casts against real PySpark's recorded
answers (``tests/conformance``: the value table, the cases, the goldens and the script
that records them; each family runs in its own module, ``test_conformance_<family>.py``):
in every configuration — the DataFrame form and the ``spark.sql``
form, ``spark.sql.ansi.enabled`` true and false, session time zones UTC and
America/Los_Angeles — each case gives Spark's column name, type and values (or Spark's
error class), or strataflow's refusal (``STRATAFLOW_UNSUPPORTED``); never another answer.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conformance.families import FAMILIES  # noqa: E402
from conformance.report import DOCS, docs_table, table  # noqa: E402
from conformance.verdict import judge  # noqa: E402


@pytest.mark.long
def test_the_docs_table_is_the_suites():
    """docs/dataframes.md's compatibility table is what the whole suite finds now, every
    family in every configuration (``make test`` checks each family's own rows:
    ``tests/test_conformance_<family>.py``)."""
    from conformance.suite import run_suite

    got, _ = run_suite()
    assert docs_table(DOCS.read_text()) == table(got), "regenerate it: TZ=UTC python tests/conformance/report.py"


def test_every_family_has_its_test_module():
    """A family added to ``families/`` runs in ``make test``: its module exists."""
    here = Path(__file__).resolve().parent
    assert {f for f in FAMILIES if not (here / f"test_conformance_{f}.py").exists()} == set()


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
