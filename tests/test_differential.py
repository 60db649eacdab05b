"""The differential tester in the suite (issue 50, point 3): random Dataset programs run on
every local backend and compared with a plain-Python model of the same program
(``tests/differential/``: the generator, the model, the runner).

Hypothesis draws the programs (``derandomize=True``: the same ones on every run, no
database) and shrinks a failure to its smallest program, which the failure prints as
Python. Both backends share one drawn program and a Context each for the whole module.
``benchmarks/differential.py`` runs as many as it is given; the fault slice is
``test_differential_faults.py``. A failure that is a known engine bug (``harness.KNOWN``,
reported in ``differential/FINDINGS.md``) is counted and shown as a warning, not failed:
its repro is a strict xfail, which flips when the bug is fixed.
"""

from __future__ import annotations

import warnings
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings

from conftest import local_backends
from differential.harness import Runner
from differential.programs import programs

#: programs drawn in ``make test`` (each runs on every local backend): the bounded count
PROGRAMS = 120

SETTINGS = dict(derandomize=True, deadline=None, database=None, print_blob=False,
                suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    rs = [Runner(b, str(tmp_path_factory.mktemp(f"differential-{b}"))) for b in local_backends()]
    yield rs
    for r in rs:
        r.close()


def run_programs(runners: list[Runner], strategy, count: int) -> Counter:
    """Every drawn program on every runner; fails on the first unknown difference (which
    hypothesis then shrinks). Returns the known failures met, by name."""
    known: Counter = Counter()

    @settings(max_examples=count, **SETTINGS)
    @given(strategy)
    def check(program):
        for r in runners:
            for f in r.check(program):
                if f.known is None:
                    raise AssertionError(f.report())
                known[f.known.name] += 1

    check()
    for name, n in known.items():
        warnings.warn(f"differential: {n} program run(s) met the known engine bug {name!r} "
                      f"(tests/differential/FINDINGS.md)", stacklevel=2)
    return known


def test_programs_answer_as_the_model_does(runners):
    before = [r.stats.programs for r in runners]
    run_programs(runners, programs(), PROGRAMS)
    ran = [r.stats.programs - b for r, b in zip(runners, before)]
    # every program ran on every backend (hypothesis may run a few more, never fewer)
    assert all(n >= PROGRAMS for n in ran), ran
    families = runners[0].stats.families
    assert set(families) == {"pairs", "batch", "numeric"}, families
