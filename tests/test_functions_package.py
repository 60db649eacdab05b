"""``pyspark.sql.functions`` as a package of families: every family's names are the
package's, each name is defined once (a family's explicit function, or the spec table's),
and a call with arguments its signature does not take is a TypeError as in PySpark."""

from __future__ import annotations

import inspect

import pytest

from strataflow.pyspark.sql import functions as F
from strataflow.pyspark.sql.function_names import PYSPARK_FUNCTIONS
from strataflow.pyspark.sql.functions import FAMILIES, builtin


def test_every_familys_names_are_the_packages():
    for family in FAMILIES:
        for name in family.__all__:
            assert getattr(F, name) is getattr(family, name), (family.__name__, name)
    assert set(F.__all__) == {n for family in FAMILIES for n in family.__all__}


def test_a_name_is_defined_once():
    """A family's explicit function replaces the spec table's entry, which is removed."""
    explicit = {n for family in FAMILIES[1:] for n in family.__all__}
    assert sorted(explicit & set(builtin._SPECS)) == []
    assert sorted(n for n in F.__all__ if n not in PYSPARK_FUNCTIONS and n not in ("udf", "pandas_udf")) == []


@pytest.mark.parametrize("family", FAMILIES[1:], ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_explicit_functions_have_signatures_and_refuse_extra_arguments(family):
    for name in family.__all__:
        f = getattr(family, name)
        if not inspect.isfunction(f):
            continue
        params = inspect.signature(f).parameters.values()
        if any(p.kind is p.VAR_POSITIONAL for p in params):
            continue
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        with pytest.raises(TypeError):
            f(*(["x"] * (len(positional) + 1)))
