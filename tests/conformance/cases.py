"""The conformance cases: each applies one Spark function, operator or cast to columns of
the value table (``values.py``), written once and built both ways — as a DataFrame column
(``F.round(F.col("d"), 2)``) and as Spark SQL text (``round(d, 2)``) — for real PySpark
(``record.py``) and for strataflow (``verdict.py``) alike.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

__all__ = ["C", "Lit", "Case", "CASES", "CAST_TYPES"]


@dataclass(frozen=True)
class C:
    """A column of the value table, as an argument."""

    name: str


def _sql_lit(v: Any) -> str:
    if isinstance(v, C):
        return f"`{v.name}`"
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(v, Decimal):
        return f"{v}BD"
    if isinstance(v, float):
        return f"{v!r}D"
    if isinstance(v, dt.date):
        return f"DATE'{v.isoformat()}'"
    return repr(v)


@dataclass(frozen=True)
class Case:
    """One function (``fn``, the report's row) applied to ``args``. ``kind``: ``call`` a
    function of ``pyspark.sql.functions`` named ``fn``; ``op`` a binary operator; ``cast``
    a cast to ``args[1]``; ``agg`` marks an aggregate (one row over the whole table)."""

    fn: str
    args: tuple
    kind: str = "call"
    agg: bool = False

    @property
    def id(self) -> str:
        return f"{self.fn}({', '.join(_sql_lit(a) for a in self.args)})"

    def column(self, F: Any) -> Any:
        """The case as a Column of the ``functions`` module ``F`` (PySpark's or strataflow's)."""
        a = [F.col(x.name) if isinstance(x, C) else F.lit(str(x)) if isinstance(x, Lit) else x for x in self.args]
        if self.kind == "op":
            return _OPS[self.fn](a[0], a[1] if isinstance(self.args[1], C) else F.lit(a[1]))
        if self.kind == "cast":
            return a[0].cast(self.args[1])
        if self.kind == "method":  # a Column method: col.contains(x)
            return getattr(a[0], self.fn)(*a[1:])
        return getattr(F, self.fn)(*a)

    def sql(self) -> str:
        """The case as Spark SQL text over the value table's columns."""
        if self.kind == "op":
            return f"({_sql_lit(self.args[0])} {self.fn} {_sql_lit(self.args[1])})"
        if self.kind == "cast":
            return f"CAST({_sql_lit(self.args[0])} AS {self.args[1]})"
        return f"{self.fn}({', '.join(_sql_lit(a) for a in self.args)})"


_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
        "%": lambda a, b: a % b, "=": lambda a, b: a == b, "<": lambda a, b: a < b, "<=>": lambda a, b: a.eqNullSafe(b)}

NUM = ["y", "h", "i", "l", "f", "d", "m", "m2"]
CAST_TYPES = ["boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal(10,2)",
              "decimal(38,18)", "string", "date", "timestamp", "binary"]
_CAST_SOURCES = ["b", "y", "h", "i", "l", "f", "d", "m", "m2", "s", "sn", "sd", "dt", "ts", "bin"]


class Lit(str):
    """A string argument that is a literal where the function reads a string as a column
    name (``F.replace(col, Lit("a"), Lit("A"))``)."""


def _one(fn: str, cols: list[str], *extra: Any, agg: bool = False) -> list[Case]:
    return [Case(fn, (C(c), *extra), agg=agg) for c in cols]


def _build() -> list[Case]:
    out: list[Case] = []
    add = out.extend
    # -- aggregates over the whole table --------------------------------------------------------------
    for fn, cols in {"sum": ["i", "l", "d", "m", "m2", "nl"], "avg": ["i", "l", "d", "m", "m2", "nl"],
                     "min": ["i", "d", "m", "s", "dt", "ts", "b", "nl"], "max": ["i", "d", "m", "s", "dt", "ts", "b"],
                     "count": ["i", "s", "nl"], "collect_list": ["i", "s", "nl"], "collect_set": ["i", "s", "nl"],
                     "stddev": ["i", "d", "m"], "stddev_samp": ["i", "d"], "stddev_pop": ["i", "d"],
                     "variance": ["i", "d"], "var_samp": ["i", "d"], "var_pop": ["i", "d"],
                     "approx_count_distinct": ["i", "s", "l"], "count_if": ["b"], "product": ["i2", "d2"],
                     "median": ["i", "d"], "skewness": ["i", "d2"], "kurtosis": ["i", "d2"],
                     "bool_and": ["b"], "bool_or": ["b"], "first": ["i", "s"], "last": ["i", "s"],
                     "any_value": ["y"], "sum_distinct": ["i", "i2"], "countDistinct": ["i", "s"]}.items():
        add(_one(fn, cols, agg=True))
    add([Case("first", (C("nl"), True), agg=True), Case("first", (C("i"), True), agg=True),
          Case("last", (C("i"), True), agg=True)])
    for fn in ("corr", "covar_pop", "covar_samp"):
        add([Case(fn, (C("i"), C("i2")), agg=True), Case(fn, (C("d"), C("d2")), agg=True)])
    for fn in ("max_by", "min_by"):
        add([Case(fn, (C("s"), C("i")), agg=True), Case(fn, (C("i"), C("d2")), agg=True)])
    # -- math --------------------------------------------------------------------------------------------
    for fn in ("abs", "signum", "floor", "ceil", "ceiling", "sqrt", "exp", "log10", "log2", "ln", "cbrt",
               "degrees", "radians", "sin", "cos", "tan"):
        add(_one(fn, ["i", "l", "d", "m"] if fn in ("abs", "floor", "ceil", "ceiling", "signum") else ["i", "d"]))
    for fn in ("round", "bround"):
        add(_one(fn, ["d", "f", "m", "m2", "i"]))
        add(_one(fn, ["d", "f", "m", "m2"], 2))
        add(_one(fn, ["d", "i", "l"], -1))
        add(_one(fn, ["d", "m"], 0))
    add([Case(fn, (C(a), C(b))) for fn in ("pow", "power", "pmod", "nanvl") for a, b in
         ([("d", "d2"), ("i", "i2")] if fn != "nanvl" else [("d", "d2")])])
    add([Case("greatest", (C("i"), C("i2"))), Case("greatest", (C("d"), C("d2"))),
         Case("least", (C("i"), C("i2"))), Case("least", (C("d"), C("d2"))),
         Case("greatest", (C("s"), C("s2")))])
    # -- operators ---------------------------------------------------------------------------------------
    for op in ("+", "-", "*", "/", "%"):
        add([Case(op, (C(a), C(b)), kind="op") for a, b in
             [("i", "i2"), ("l", "i2"), ("d", "d2"), ("m", "m2"), ("m", "i2"), ("i", "d2"), ("y", "y"), ("m", "m")]])
    add([Case("/", (C("i"), 0), kind="op"), Case("%", (C("i"), 0), kind="op"), Case("+", (C("sn"), 1), kind="op")])
    for op in ("=", "<", "<=>"):
        add([Case(op, (C(a), C(b)), kind="op") for a, b in [("i", "i2"), ("d", "d2"), ("s", "s2"), ("i", "d2")]])
    # -- strings -----------------------------------------------------------------------------------------
    for fn in ("upper", "lower", "length", "trim", "ltrim", "rtrim", "reverse", "initcap", "ascii", "md5", "sha1",
               "base64", "hex"):
        add(_one(fn, ["s"] + (["bin"] if fn in ("length", "md5", "sha1", "base64", "hex") else [])
                 + (["i"] if fn in ("upper", "length", "hex") else [])))
    add([Case("concat", (C("s"), C("s2"))), Case("concat", (C("s"), C("i"))), Case("concat", (C("a"), C("a2"))),
         Case("concat_ws", ("-", C("s"), C("s2"))), Case("concat_ws", (",", C("as"))),
         Case("substring", (C("s"), 0, 2)), Case("substring", (C("s"), 1, 3)), Case("substring", (C("s"), -2, 5)),
         Case("substring", (C("s"), 2, 100)), Case("substring", (C("bin"), 2, 2)),
         Case("instr", (C("s"), "b")), Case("instr", (C("s"), "")), Case("locate", ("b", C("s"), 1)),
         Case("locate", ("a", C("s"), 3)), Case("lpad", (C("s"), 5, "*")), Case("rpad", (C("s"), 5, "ab")),
         Case("lpad", (C("s"), 2, "*")), Case("repeat", (C("s"), 2)), Case("repeat", (C("s"), -1)),
         Case("split", (C("s"), ",")), Case("split", (C("s"), ",", 2)), Case("split", (C("s"), "")),
         Case("split", (C("s"), "[ ,]")),
         Case("regexp_replace", (C("s"), r"(\w+) (\w+)", "$2 $1")), Case("regexp_replace", (C("s"), "[aeiou]", "")),
         Case("regexp_replace", (C("s"), "b", "\\$")),
         Case("regexp_extract", (C("s"), r"(\w+) (\w+)", 2)), Case("regexp_extract", (C("s"), "([a-z]+)", 1)),
         Case("regexp_extract", (C("s"), "([0-9]+)", 0)),
         Case("translate", (C("s"), "abc", "xy")), Case("format_number", (C("d"), 2)),
         Case("format_number", (C("i"), 0)), Case("format_number", (C("m"), 1)),
         Case("sha2", (C("s"), 256)), Case("sha2", (C("s"), 512)), Case("left", (C("s"), 2)),
         Case("right", (C("s"), 2)), Case("replace", (C("s"), C("s2"))),
         Case("replace", (C("s"), Lit("a"), Lit("A")))])
    for fn in ("contains", "startswith", "endswith", "like", "ilike", "rlike"):
        pats = {"like": ["a%", "%b_", "%\\%%"], "ilike": ["A%", "%É"], "rlike": ["^[a-z]+$", "[0-9]", "ß|é"]}
        add([Case(fn, (C("s"), p), kind="method") for p in pats.get(fn, ["b", "", "é"])])
    add([Case("contains", (C("s"), C("s2")), kind="method"), Case("startswith", (C("s"), C("s2")), kind="method")])
    # -- null handling -----------------------------------------------------------------------------------
    add([Case("coalesce", (C("nl"), C("i"))), Case("coalesce", (C("i"), C("i2"))), Case("isnull", (C("i"),)),
         Case("nvl", (C("i"), C("i2"))), Case("ifnull", (C("s"), C("s2"))), Case("nullif", (C("i"), C("i2"))),
         Case("isnan", (C("d"),)), Case("isnan", (C("f"),))])
    # -- dates and times ---------------------------------------------------------------------------------
    for fn in ("year", "month", "dayofmonth", "day", "dayofweek", "dayofyear", "quarter", "weekofyear", "last_day"):
        add(_one(fn, ["dt", "ts"]))
    for fn in ("hour", "minute", "second"):
        add(_one(fn, ["ts"]))
    add([Case("date_add", (C("dt"), 3)), Case("date_sub", (C("dt"), 40)), Case("add_months", (C("dt"), 1)),
         Case("add_months", (C("dt"), -13)), Case("datediff", (C("dt"), C("ts"))),
         Case("months_between", (C("ts"), C("dt"))), Case("to_date", (C("sd"),)),
         Case("to_date", (C("sd"), "yyyy-MM-dd")), Case("to_date", (C("sd"), "dd/MM/yyyy")),
         Case("to_timestamp", (C("sd"),)), Case("to_timestamp", (C("sd"), "yyyy-MM-dd HH:mm:ss")),
         Case("date_format", (C("ts"), "yyyy-MM-dd HH:mm:ss.SSS")), Case("date_format", (C("dt"), "EEE, d MMM yyyy")),
         Case("date_format", (C("ts"), "yyyy/MM/dd hh:mm a")),
         Case("date_trunc", ("month", C("ts"))), Case("date_trunc", ("hour", C("ts"))),
         Case("date_trunc", ("week", C("ts"))), Case("trunc", (C("dt"), "year")), Case("trunc", (C("dt"), "MM")),
         Case("unix_timestamp", (C("sd"), "yyyy-MM-dd")), Case("from_unixtime", (C("l"),)),
         Case("from_unixtime", (C("i2"), "yyyy-MM-dd")), Case("make_date", (C("y"), C("i2"), C("i2")))])
    # -- arrays ------------------------------------------------------------------------------------------
    for fn in ("size", "array_distinct", "array_sort", "sort_array", "array_max", "array_min", "flatten",
               "explode", "explode_outer", "posexplode"):
        add(_one(fn, ["a", "as"] if fn != "flatten" else []))
    add([Case("sort_array", (C("a"), False)), Case("array_contains", (C("a"), 2)),
         Case("array_contains", (C("as"), "b")), Case("element_at", (C("a"), 1)), Case("element_at", (C("a"), -1)),
         Case("element_at", (C("a"), 5)), Case("array_join", (C("as"), "|")), Case("array_union", (C("a"), C("a2"))),
         Case("array_intersect", (C("a"), C("a2"))), Case("array_except", (C("a"), C("a2"))),
         Case("arrays_zip", (C("a"), C("a2"))), Case("slice", (C("a"), 2, 2)), Case("slice", (C("a"), -2, 2)),
         Case("sequence", (C("i2"), C("y"), C("nl")))])
    # -- casts between Spark's atomic types --------------------------------------------------------------
    add([Case("cast", (C(src), to), kind="cast") for src in _CAST_SOURCES for to in CAST_TYPES])
    return [c for c in out if not (c.fn in ("explode", "explode_outer", "posexplode"))]  # generators: own test


CASES: list[Case] = _build()
