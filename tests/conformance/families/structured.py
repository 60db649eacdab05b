"""Conformance cases of the ``functions.structured`` family (see ``cases.py`` for ``Case``).

JSON functions read JSON text: the value table has none, so their cases also take
literals (``Lit``) and expressions written both ways (``X``: Spark SQL text and the
``functions`` call that builds the same column).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from conformance.cases import C, Case, Lit, _sql_lit  # noqa: F401
from conformance.values import COLUMNS

__all__ = ["CASES", "X", "XCase"]


@dataclass(frozen=True)
class X:
    """An argument that is an expression: its Spark SQL text, and how ``functions`` builds it."""

    sql: str
    build: Callable[[Any], Any] = field(compare=False, repr=False)


def _text(a: Any) -> str:
    if isinstance(a, X):
        return a.sql
    if isinstance(a, dict):
        return "map(" + ", ".join(f"{_sql_lit(k)}, {_sql_lit(v)}" for k, v in a.items()) + ")"
    return _sql_lit(a)


@dataclass(frozen=True)
class XCase(Case):
    """A call whose arguments may be expressions (``X``) or an options dict."""

    @property
    def id(self) -> str:
        return f"{self.fn}({', '.join(_text(a) for a in self.args)})"

    def column(self, F: Any) -> Any:
        a = [x.build(F) if isinstance(x, X) else F.col(x.name) if isinstance(x, C) else F.lit(str(x))
             if isinstance(x, Lit) else x for x in self.args]
        return getattr(F, self.fn)(*a)

    def sql(self) -> str:
        return self.id


def _struct(*names: str) -> X:
    return X(f"struct({', '.join(f'`{n}`' for n in names)})", lambda F: F.struct(*names))


_JSON = ['{"a": 1, "b": [1, 2.50, "x"], "c": {"d": null, "e": "é\\n"}}', '[1, {"a": 2}, 3]', '{"a": 1, "a": 2}',
         '"text"', '12', ' {"a" : 1e3 } trailing', '{"a": 1.0E-4, "b": 1e300, "c": -0.0, "d": 123456789012345678901}',
         '{bad json', '', 'null', '[]', '{}', '{"a": true, "b": [[1], []], "c": "\\u00e9"}']


def _build() -> list[Case]:
    out: list[Case] = []
    add = out.extend
    # -- typeof: every type of the value table, and literals ------------------------------------------
    add([Case("typeof", (C(name),)) for name in COLUMNS])
    add([Case("typeof", (v,)) for v in (1, Lit("x"), True, None)])
    # -- the session's constants ------------------------------------------------------------------------
    add([Case(fn, ()) for fn in ("current_user", "user", "session_user", "current_database", "current_schema",
                                 "current_catalog")])
    # -- JSON functions ------------------------------------------------------------------------------------
    add([Case("get_json_object", (Lit(_JSON[0]), p)) for p in ("$.a", "$.b", "$.b[1]", "$.c", "$.c.e", "$.d")])
    add([Case("get_json_object", (Lit(_JSON[1]), p)) for p in ("$[1]", "$[1].a")])
    add([Case("get_json_object", (Lit(_JSON[6]), p)) for p in ("$.b", "$.d")])
    add([Case("get_json_object", (Lit(j), "$")) for j in ('null', '"text"', '{"a": 1, "a": 2}', '{bad json')])
    add([Case("get_json_object", (C("sn"), "$")), Case("get_json_object", (Lit('{"a": {"b": 1}}'), "a.b")),
         Case("get_json_object", (Lit('{"a": null, "b": "\\u0001\\"/"}'), "$.a"))])
    for j in _JSON:
        add([Case("json_array_length", (Lit(j),)), Case("json_object_keys", (Lit(j),))])
        if j not in ("{bad json", "", ' {"a" : 1e3 } trailing'):
            add([Case("schema_of_json", (Lit(j),))])
    add([Case(fn, (C(c),)) for fn in ("json_array_length", "json_object_keys") for c in ("s", "sn")])
    # -- to_json of structs, arrays and maps of the value table's columns -------------------------------
    add([XCase("to_json", (_struct(*cols),)) for cols in (("b", "y", "h", "i", "l"), ("f",), ("d",), ("m", "m2"),
                                                           ("s", "s2"), ("dt",), ("ts",), ("bin",), ("a", "as"),
                                                           ("nl", "i"), ("sd", "sn"))])
    add([XCase("to_json", (C(c),)) for c in ("a", "as", "a2")])
    add([XCase("to_json", (X("array(struct(`i`), struct(`i`))", lambda F: F.array(F.struct("i"), F.struct("i"))),)),
         XCase("to_json", (X("map('k', `d`)", lambda F: F.create_map(F.lit("k"), F.col("d"))),)),
         XCase("to_json", (X("map(`s`, `i`)", lambda F: F.create_map(F.col("s"), F.col("i"))),)),
         XCase("to_json", (X("array(`d`, `d2`)", lambda F: F.array("d", "d2")),))])
    # -- from_json: each JSON text into several schemas, and to_json's text read back -------------------
    schemas = ["a INT, b ARRAY<DOUBLE>, c STRUCT<d: STRING, e: STRING>", "a STRING, b STRING", "a DOUBLE, d BIGINT",
               "a DECIMAL(5,2), b ARRAY<STRING>", "a BOOLEAN, c MAP<STRING, STRING>", "array<int>",
               "map<string,int>", "array<struct<a:int>>", "struct<a:tinyint,d:decimal(38,0)>"]
    add([Case("from_json", (Lit(j), sch)) for j in _JSON for sch in schemas[:2]])
    add([Case("from_json", (Lit(_JSON[k]), sch)) for k in (0, 1, 2, 6, 9, 12) for sch in schemas[2:]])
    add([Case("from_json", (C("sn"), "a INT")), Case("from_json", (C("s"), "array<string>")),
         Case("from_json", (Lit('{"a": "NaN", "d": 12}'), schemas[2])),
         Case("from_json", (Lit('{"a": "Infinity", "d": 9223372036854775808}'), schemas[2])),
         Case("from_json", (Lit('{"a": 1}'), "double"))])
    back = "i INT, d DOUBLE, s STRING, b BOOLEAN, l BIGINT, m DECIMAL(10,2), a ARRAY<INT>, f FLOAT"
    add([XCase("from_json", (X("to_json(struct(`i`, `d`, `s`, `b`, `l`, `m`, `a`, `f`))",
                               lambda F: F.to_json(F.struct("i", "d", "s", "b", "l", "m", "a", "f"))), back))])
    # -- options -----------------------------------------------------------------------------------------
    add([XCase("to_json", (_struct("nl", "i", "s"), {"ignoreNullFields": "false"})),
         XCase("to_json", (_struct("nl", "a"), {"ignoreNullFields": "true"})),
         XCase("from_json", (Lit(_JSON[0]), schemas[0], {"mode": "PERMISSIVE"}))])
    # -- to_csv -------------------------------------------------------------------------------------------
    add([XCase("to_csv", (_struct(*cols),)) for cols in (("b", "y", "h", "i", "l"), ("f", "d"), ("m", "m2"),
                                                          ("s", "s2"), ("dt", "ts"), ("sd", "sn", "nl"))])
    add([XCase("to_csv", (_struct("a"),))])
    # -- partition transforms: only for writeTo(...).partitionedBy ------------------------------------------
    add([Case(fn, (C(c),)) for fn, c in (("years", "dt"), ("months", "ts"), ("days", "dt"), ("hours", "ts"))])
    add([Case("bucket", (4, C("i")))])
    return out


CASES: list[Case] = _build()
