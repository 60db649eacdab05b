"""Conformance cases of the ``functions.arrays_maps`` family (see ``cases.py`` for ``Case``).

Most cases apply one function to the value table's array columns (``a``, ``a2``, ``as``).
Maps, structs and lambdas are not columns of the value table, so those cases are written
both ways by hand (``Written``): the DataFrame column built from ``F`` and the Spark SQL
text. The maps are built from the table's columns (``M``: ``map('x', i, 'y', i2)`` where
``b`` is true, null elsewhere), so they have null values and null maps.

Spark names a lambda's variables ``namedlambdavariable()`` in both forms
(``transform(a, lambdafunction((namedlambdavariable() + 1), namedlambdavariable()))``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from conformance.cases import C, Case, Lit  # noqa: F401

__all__ = ["CASES", "Written"]


@dataclass(frozen=True)
class Written(Case):
    """A case written out both ways: ``build(F)`` the DataFrame column, ``text`` the SQL."""

    text: str = ""
    build: Callable[[Any], Any] | None = None

    @property
    def id(self) -> str:
        return self.text

    def column(self, F: Any) -> Any:
        return self.build(F)

    def sql(self) -> str:
        return self.text


def W(fn: str, text: str, build: Callable[[Any], Any]) -> Written:
    return Written(fn, (), text=text, build=build)


_M_SQL = "CASE WHEN b THEN map('x', i, 'y', i2) END"
_M2_SQL = "CASE WHEN b THEN map('y', l, 'z', i) END"
_MI_SQL = "map(1, s, 2, s2)"


def _m(F: Any) -> Any:
    return F.when(F.col("b"), F.create_map(F.lit("x"), F.col("i"), F.lit("y"), F.col("i2")))


def _m2(F: Any) -> Any:
    return F.when(F.col("b"), F.create_map(F.lit("y"), F.col("l"), F.lit("z"), F.col("i")))


def _mi(F: Any) -> Any:
    return F.create_map(F.lit(1), F.col("s"), F.lit(2), F.col("s2"))


def _arrays() -> list[Case]:
    out: list[Case] = []
    for fn in ("array_compact", "array_size", "cardinality"):
        out += [Case(fn, (C("a"),)), Case(fn, (C("as"),))]
    for fn in ("array_append", "array_prepend"):
        out += [Case(fn, (C("a"), 9)), Case(fn, (C("as"), "z")), Case(fn, (C("a"), C("i2"))),
                Case(fn, (C("a"), None))]
    out += [Case("array_insert", (C("a"), p, 9)) for p in (1, 2, -1, 5, -5, 0)]
    out += [Case("array_insert", (C("as"), 2, "q")), Case("array_insert", (C("a"), C("i2"), 9)),
            Case("array_insert", (C("a"), 1, None))]
    out += [Case("array_position", (C("a"), 2)), Case("array_position", (C("as"), "b")),
            Case("array_position", (C("a"), C("i2")))]
    out += [Case("array_remove", (C("a"), 2)), Case("array_remove", (C("as"), "b")),
            Case("array_remove", (C("a"), C("i2")))]
    out += [Case("array_repeat", (C("s"), 2)), Case("array_repeat", (C("i"), C("i2"))),
            Case("array_repeat", (C("a"), 2)), Case("array_repeat", (C("nl"), 3)), Case("array_repeat", (C("d"), 0))]
    out += [Case("arrays_overlap", (C("a"), C("a2"))), Case("arrays_overlap", (C("as"), C("as"))),
            Case("arrays_overlap", (C("a2"), C("a")))]
    out += [Case("get", (C("a"), i)) for i in (0, 1, -1, 3)] + [Case("get", (C("a"), C("i2"))),
                                                                  Case("get", (C("as"), 0))]
    out += [W("try_element_at", f"try_element_at(a, {i})", lambda F, i=i: F.try_element_at("a", F.lit(i)))
            for i in (1, -1, 5, 0)]
    out += [W("try_element_at", "try_element_at(`as`, i2)", lambda F: F.try_element_at("as", "i2"))]
    out += [W("named_struct", "named_struct('x', i, 'y', s)",
              lambda F: F.named_struct(F.lit("x"), F.col("i"), F.lit("y"), F.col("s"))),
            W("named_struct", "named_struct('a', a, 'n', nl)",
              lambda F: F.named_struct(F.lit("a"), F.col("a"), F.lit("n"), F.col("nl")))]
    return out


def _maps() -> list[Case]:
    m, m2, mi = _m, _m2, _mi
    return [
        W("create_map", "map('x', i, 'y', i2)",
          lambda F: F.create_map(F.lit("x"), F.col("i"), F.lit("y"), F.col("i2"))),
        W("create_map", _MI_SQL, mi),
        W("create_map", "map(s, i)", lambda F: F.create_map("s", "i")),
        W("create_map", "map('x', i, 'x', i2)", lambda F: F.create_map(F.lit("x"), F.col("i"), F.lit("x"), F.col("i2"))),
        W("create_map", "map()", lambda F: F.create_map()),
        W("map_keys", f"map_keys({_M_SQL})", lambda F: F.map_keys(m(F))),
        W("map_keys", f"map_keys({_MI_SQL})", lambda F: F.map_keys(mi(F))),
        W("map_values", f"map_values({_M_SQL})", lambda F: F.map_values(m(F))),
        W("map_values", f"map_values({_MI_SQL})", lambda F: F.map_values(mi(F))),
        W("map_entries", f"map_entries({_M_SQL})", lambda F: F.map_entries(m(F))),
        W("map_entries", f"map_entries({_MI_SQL})", lambda F: F.map_entries(mi(F))),
        W("map_contains_key", f"map_contains_key({_M_SQL}, 'x')", lambda F: F.map_contains_key(m(F), "x")),
        W("map_contains_key", f"map_contains_key({_M_SQL}, 'q')", lambda F: F.map_contains_key(m(F), "q")),
        W("map_contains_key", f"map_contains_key({_MI_SQL}, i2)", lambda F: F.map_contains_key(mi(F), F.col("i2"))),
        W("element_at", f"element_at({_M_SQL}, 'y')", lambda F: F.element_at(m(F), F.lit("y"))),
        W("element_at", f"element_at({_M_SQL}, 'q')", lambda F: F.element_at(m(F), F.lit("q"))),
        W("element_at", f"element_at({_MI_SQL}, i2)", lambda F: F.element_at(mi(F), F.col("i2"))),
        W("try_element_at", f"try_element_at({_M_SQL}, 'q')", lambda F: F.try_element_at(m(F), F.lit("q"))),
        W("try_element_at", f"try_element_at({_MI_SQL}, 2)", lambda F: F.try_element_at(mi(F), F.lit(2))),
        W("cardinality", f"cardinality({_M_SQL})", lambda F: F.cardinality(m(F))),
        W("size", f"size({_M_SQL})", lambda F: F.size(m(F))),
        W("map_concat", f"map_concat({_M_SQL}, map('z', i2))",
          lambda F: F.map_concat(m(F), F.create_map(F.lit("z"), F.col("i2")))),
        W("map_concat", f"map_concat({_M_SQL}, {_M2_SQL})", lambda F: F.map_concat(m(F), m2(F))),
        W("map_concat", f"map_concat({_MI_SQL}, map(3, s))",
          lambda F: F.map_concat(mi(F), F.create_map(F.lit(3), F.col("s")))),
        W("map_from_arrays", "map_from_arrays(array('a', 'b'), array(i, i2))",
          lambda F: F.map_from_arrays(F.array(F.lit("a"), F.lit("b")), F.array("i", "i2"))),
        W("map_from_arrays", "map_from_arrays(a2, a2)", lambda F: F.map_from_arrays("a2", "a2")),
        W("map_from_arrays", "map_from_arrays(array(i2), array(s))",
          lambda F: F.map_from_arrays(F.array("i2"), F.array("s"))),
        W("map_from_entries", f"map_from_entries(map_entries({_M_SQL}))", lambda F: F.map_from_entries(F.map_entries(m(F)))),
        W("map_from_entries", "map_from_entries(array(named_struct('k', coalesce(s, '?'), 'v', i)))",
          lambda F: F.map_from_entries(F.array(F.named_struct(F.lit("k"), F.coalesce("s", F.lit("?")), F.lit("v"), "i")))),
        W("map_from_entries", "map_from_entries(array(struct(i2, s)))",
          lambda F: F.map_from_entries(F.array(F.struct(F.col("i2"), F.col("s"))))),
        W("str_to_map", "str_to_map(sd)", lambda F: F.str_to_map("sd")),
        W("str_to_map", "str_to_map(concat('a=1;b=', s), ';', '=')",
          lambda F: F.str_to_map(F.concat(F.lit("a=1;b="), "s"), F.lit(";"), F.lit("="))),
        W("str_to_map", "str_to_map(s, 'x', '_')", lambda F: F.str_to_map("s", F.lit("x"), F.lit("_"))),
        W("str_to_map", "str_to_map(s, ' ', 'b')", lambda F: F.str_to_map("s", F.lit(" "), F.lit("b"))),
        W("str_to_map", "str_to_map(sd, '-', ':')", lambda F: F.str_to_map("sd", F.lit("-"), F.lit(":"))),
        W("str_to_map", "str_to_map(s, '[, ]', 'b')", lambda F: F.str_to_map("s", F.lit("[, ]"), F.lit("b"))),
    ]


def _lambdas() -> list[Case]:
    m, m2 = _m, _m2
    return [
        W("transform", "transform(a, x -> x + 1)",
          lambda F: F.transform("a", lambda x: x + 1)),
        W("transform", "transform(a, (x, i) -> x * i)",
          lambda F: F.transform("a", lambda x, i: x * i)),
        W("transform", "transform(`as`, x -> upper(x))",
          lambda F: F.transform("as", lambda x: F.upper(x))),
        W("transform", "transform(a, x -> x * 2147483647)",
          lambda F: F.transform("a", lambda x: x * 2147483647)),
        W("transform", "transform(a, x -> x / 2)",
          lambda F: F.transform("a", lambda x: x / 2)),
        W("filter", "filter(a, x -> x > 1)",
          lambda F: F.filter("a", lambda x: x > 1)),
        W("filter", "filter(a, (x, i) -> i > 0)",
          lambda F: F.filter("a", lambda x, i: i > 0)),
        W("filter", "filter(`as`, x -> x != 'b')",
          lambda F: F.filter("as", lambda x: x != "b")),
        W("exists", "exists(a, x -> x > 2)",
          lambda F: F.exists("a", lambda x: x > 2)),
        W("exists", "exists(a, x -> x IS NULL)",
          lambda F: F.exists("a", lambda x: x.isNull())),
        W("forall", "forall(a, x -> x > 0)",
          lambda F: F.forall("a", lambda x: x > 0)),
        W("forall", "forall(`as`, x -> x < 'z')",
          lambda F: F.forall("as", lambda x: x < "z")),
        W("aggregate", "aggregate(a, 0, (acc, x) -> acc + x)",
          lambda F: F.aggregate("a", F.lit(0), lambda acc, x: acc + x)),
        W("aggregate", "aggregate(a, CAST(0 AS BIGINT), (acc, x) -> acc + x, acc -> acc * 10)",
          lambda F: F.aggregate("a", F.lit(0).cast("bigint"), lambda acc, x: acc + x, lambda acc: acc * 10)),
        W("aggregate", "aggregate(`as`, '', (acc, x) -> concat(acc, x))",
          lambda F: F.aggregate("as", F.lit(""), lambda acc, x: F.concat(acc, x))),
        W("aggregate", "aggregate(a, CAST(0.5 AS DOUBLE), (acc, x) -> acc + x)",
          lambda F: F.aggregate("a", F.lit(0.5).cast("double"), lambda acc, x: acc + x)),
        W("reduce", "reduce(a2, 1, (acc, x) -> acc * x)",
          lambda F: F.reduce("a2", F.lit(1), lambda acc, x: acc * x)),
        W("reduce", "reduce(a2, 0, (acc, x) -> acc + x, acc -> acc + 100)",
          lambda F: F.reduce("a2", F.lit(0), lambda acc, x: acc + x, lambda acc: acc + 100)),
        W("zip_with", "zip_with(a, a2, (x, y) -> x + y)",
          lambda F: F.zip_with("a", "a2", lambda x, y: x + y)),
        W("zip_with", "zip_with(`as`, a, (x, y) -> concat(x, CAST(y AS STRING)))",
          lambda F: F.zip_with("as", "a", lambda x, y: F.concat(x, y.cast("string")))),
        W("array_sort", "array_sort(a2, (l, r) -> r - l)",
          lambda F: F.array_sort("a2", lambda l, r: r - l)),
        W("array_sort", "array_sort(`as`, (l, r) -> CASE WHEN length(l) < length(r) THEN -1 "
          "WHEN length(l) > length(r) THEN 1 ELSE 0 END)",
          lambda F: F.array_sort("as", lambda l, r: F.when(F.length(l) < F.length(r), -1)
                                 .when(F.length(l) > F.length(r), 1).otherwise(0))),
        W("map_filter", f"map_filter({_M_SQL}, (k, v) -> v > 0)",
          lambda F: F.map_filter(m(F), lambda k, v: v > 0)),
        W("map_filter", f"map_filter({_M_SQL}, (k, v) -> k = 'x')",
          lambda F: F.map_filter(m(F), lambda k, v: k == "x")),
        W("transform_keys", f"transform_keys({_M_SQL}, (k, v) -> upper(k))",
          lambda F: F.transform_keys(m(F), lambda k, v: F.upper(k))),
        W("transform_keys", f"transform_keys({_M_SQL}, (k, v) -> 'same')",
          lambda F: F.transform_keys(m(F), lambda k, v: F.lit("same"))),
        W("transform_values", f"transform_values({_M_SQL}, (k, v) -> v * 2)",
          lambda F: F.transform_values(m(F), lambda k, v: v * 2)),
        W("transform_values", f"transform_values({_M_SQL}, (k, v) -> concat(k, CAST(v AS STRING)))",
          lambda F: F.transform_values(m(F), lambda k, v: F.concat(k, v.cast("string")))),
        W("map_zip_with", f"map_zip_with({_M_SQL}, {_M2_SQL}, (k, v1, v2) -> coalesce(v1, 0) + coalesce(v2, 0))",
          lambda F: F.map_zip_with(m(F), m2(F), lambda k, v1, v2: F.coalesce(v1, F.lit(0)) + F.coalesce(v2, F.lit(0)))),
    ]


CASES: list[Case] = _arrays() + _maps() + _lambdas()
