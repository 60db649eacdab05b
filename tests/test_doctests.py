"""The examples in the docstrings of the public API run, as PySpark's own doctests do.

Every public method and property of :class:`Context`, :class:`Dataset` (the methods its
mixins give it included) and of every public class of ``strataflow.pyspark`` and
``strataflow.pyspark.sql`` (``SparkSession.Builder`` included) has a docstring with an
``>>>`` example; a class with no public member of its own has one in its class docstring.
Each docstring of the modules that define them runs here as one test, against ``ctx`` (a
small threads-backend Context) and ``sc`` (a SparkContext on the threads backend), both
made once for the module and stopped after it, ``spark`` (a SparkSession on ``sc``), ``F``
(``pyspark.sql.functions``), ``Row``, and ``tmp_dir``, an empty directory of the test's own. ``help(Dataset.join)`` then shows an example that is known to work.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
from typing import Any, Callable, Iterator

import pytest

import strataflow.pyspark as pyspark_api
import strataflow.pyspark.sql as pyspark_sql
from strataflow import Context, Dataset
from strataflow.pyspark import SparkConf, SparkContext

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _exported_classes(*modules: Any) -> tuple[type, ...]:
    """The classes in the modules' ``__all__``: a class exported later is held to the rule."""
    return tuple(obj for m in modules for name in m.__all__ if inspect.isclass(obj := getattr(m, name)))


CLASSES = (Context, Dataset, *_exported_classes(pyspark_api, pyspark_sql), pyspark_sql.SparkSession.Builder)


def public_members(cls: type) -> Iterator[tuple[str, type, Callable[..., Any]]]:
    """``(name, defining class, function)`` of each public method or property of ``cls``
    that strataflow defines (the function: a property's getter, a classmethod's function)."""
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or not owner.__module__.startswith("strataflow"):
            continue
        raw = vars(owner)[name]
        if isinstance(raw, (staticmethod, classmethod)):
            yield name, owner, raw.__func__
        elif isinstance(raw, property):
            yield name, owner, raw.fget
        elif callable(raw):
            yield name, owner, raw


def _exported_functions() -> list[Callable[..., Any]]:
    """The public functions ``strataflow.pyspark`` exports (``portable_hash``)."""
    import strataflow.pyspark as ps

    return [f for f in (getattr(ps, n) for n in ps.__all__) if inspect.isfunction(f)]


def _function_families() -> tuple:
    from strataflow.pyspark.sql.functions import FAMILIES

    return FAMILIES


def _modules() -> list[str]:
    """The modules that define ``CLASSES``, their members and the exported functions."""
    return sorted({cls.__module__ for cls in CLASSES} | {"strataflow.pyspark.sql.types"}
                  | {f"strataflow.pyspark.sql.functions.{m.__name__.rsplit('.', 1)[1]}" for m in _function_families()}
                  | {owner.__module__ for cls in CLASSES for _, owner, _ in public_members(cls)}
                  | {f.__module__ for f in _exported_functions()})


def _doctests() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = []
    for name in _modules():
        tests += [t for t in finder.find(importlib.import_module(name)) if t.examples]
    return sorted(tests, key=lambda t: t.name)


DOCTESTS = _doctests()


@pytest.fixture(scope="module")
def contexts():
    """``{"ctx": ..., "sc": ...}`` for every example; an example that stops ``sc`` (its own
    method's) binds a new one to ``sc``, which the examples after it get."""
    ctx = Context(memory="256MB", parallelism=2, backend="threads", progress=False)
    conf = SparkConf().set("strataflow.backend", "threads").set("strataflow.progress", "false")
    shared = {"ctx": ctx, "sc": SparkContext("local[2]", "doctests", conf=conf)}
    try:
        yield shared
    finally:
        shared["sc"].stop()
        ctx.stop()


@pytest.mark.parametrize("test", DOCTESTS, ids=[t.name.removeprefix("strataflow.") for t in DOCTESTS])
def test_docstring_example(test: doctest.DocTest, contexts, tmp_path):
    from strataflow.pyspark.sql import Row, SparkSession, functions as F

    session = {"spark": SparkSession(contexts["sc"]), "F": F, "Row": Row}  # the DataFrame examples' names
    test.globs = {**session, **test.globs, **contexts, "tmp_dir": str(tmp_path)}
    out: list[str] = []
    try:
        result = doctest.DocTestRunner(optionflags=FLAGS).run(test, out=out.append, clear_globs=False)
    finally:
        if isinstance(test.globs["sc"], SparkContext):
            contexts["sc"] = test.globs["sc"]
    assert result.failed == 0, "".join(out)


def _documented(doc: str | None) -> bool:
    """A summary line first, then an example to run."""
    return bool(doc and doc.strip()) and not doc.strip().startswith(">>>") and ">>>" in doc


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__qualname__)
def test_every_public_member_has_a_docstring_with_an_example(cls):
    """The rule holds for methods added later: a summary line and an example to run; a
    class with no public member of its own (a NamedTuple, an exception) shows its use in
    its class docstring."""
    members = list(public_members(cls))
    lacking = [f"{owner.__module__}.{owner.__qualname__}.{name}" for name, owner, f in members
               if not _documented(f.__doc__)]
    if not members and not _documented(cls.__doc__):
        lacking.append(f"{cls.__module__}.{cls.__qualname__} (its class docstring)")
    assert not lacking, f"public members without a docstring example: {lacking}"


def test_the_examples_cover_every_class():
    """The collection finds the examples (a finder that found none would pass vacuously)."""
    names = {t.name for t in DOCTESTS}
    uncovered = [f"{c.__module__}.{c.__qualname__}" for c in CLASSES
                 if not any(n == f"{c.__module__}.{c.__qualname__}" or n.startswith(f"{c.__module__}.{c.__qualname__}.")
                            for n in names)]
    assert not uncovered, f"classes with no example collected: {uncovered}"
    assert len(DOCTESTS) >= sum(1 for c in CLASSES for _ in public_members(c)) // 2


def test_every_exported_function_has_a_docstring_with_an_example():
    lacking = [f.__qualname__ for f in _exported_functions() if not _documented(f.__doc__)]
    assert not lacking, f"exported functions without a docstring example: {lacking}"
    names = {t.name for t in DOCTESTS}
    assert all(f"{f.__module__}.{f.__qualname__}" in names for f in _exported_functions())
