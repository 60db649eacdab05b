"""Conformance cases of the ``functions.aggregates`` family (see ``cases.py`` for ``Case``):
each an aggregate over the whole value table, one row."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.cases import C, Case, Lit, _sql_lit  # noqa: F401

__all__ = ["CASES"]


@dataclass(frozen=True)
class ArrayArgCase(Case):
    """A case with a list argument: a Python list for the DataFrame form (as PySpark's
    ``percentage`` takes it), ``array(...)`` in the SQL text."""

    def sql(self) -> str:
        parts = [f"array({', '.join(_sql_lit(v) for v in a)})" if isinstance(a, list) else _sql_lit(a)
                 for a in self.args]
        return f"{self.fn}({', '.join(parts)})"

    @property
    def id(self) -> str:
        return self.sql()


def _agg(fn: str, *args: object) -> Case:
    return Case(fn, args, agg=True)


def _build() -> list[Case]:
    out: list[Case] = []
    add = out.extend
    add([_agg("percentile_approx", C(c), 0.5) for c in ("i", "l", "d", "m", "dt", "ts")])
    add([_agg("percentile_approx", C("i"), q) for q in (0.0, 0.99)])
    add([_agg("percentile_approx", C("d"), 0.3, 100), _agg("percentile_approx", C("h"), 0.5, 5),
         _agg("approx_percentile", C("f"), 0.25)])
    add([ArrayArgCase("percentile_approx", (C("i"), [0.1, 0.5, 0.9]), agg=True)])
    add([_agg("percentile", C(c), 0.5) for c in ("i", "d", "l", "m")])
    add([_agg("percentile", C("i"), 0.3), ArrayArgCase("percentile", (C("d"), [0.5, 0.05]), agg=True)])
    add([_agg("mode", C(c)) for c in ("b", "i", "d2", "s", "nl")])
    add([_agg("mode", C(c), True) for c in ("i2", "s", "dt")])
    for fn in ("skewness", "kurtosis"):
        add([_agg(fn, C(c)) for c in ("d", "y", "h", "l", "m", "i2", "f", "nl")])
    add([_agg("std", C(c)) for c in ("i", "d", "m", "h", "f", "nl")])
    add([_agg(fn, C("b")) for fn in ("every", "some")])
    for fn in ("bit_and", "bit_or", "bit_xor"):
        add([_agg(fn, C(c)) for c in ("y", "h", "i", "l", "i2", "nl")])
    add([_agg("array_agg", C(c)) for c in ("i", "s", "d", "b", "ts", "nl")])
    add([_agg("listagg", C("s")), _agg("listagg", C("s"), ","), _agg("listagg", C("bin")),
         _agg("string_agg", C("s2"), " | ")])
    add([_agg("listagg_distinct", C("s2"), ","), _agg("string_agg_distinct", C("s"))])
    for fn in ("first_value", "last_value"):
        add([_agg(fn, C(c)) for c in ("i", "s", "d", "b")] + [_agg(fn, C("nl"), True), _agg(fn, C("ts"), True)])
    for fn in ("regr_avgx", "regr_avgy", "regr_count", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx",
               "regr_sxy", "regr_syy"):
        add([_agg(fn, C(y), C(x)) for y, x in (("i", "i2"), ("d", "d2"), ("i2", "y"), ("m", "l"), ("d2", "i"),
                                                ("l", "h"))])
    add([_agg("try_sum", C(c)) for c in ("y", "h", "i", "l", "d", "f", "m", "m2", "nl")])
    add([_agg("try_avg", C(c)) for c in ("y", "i", "l", "d", "m", "m2", "nl")])
    add([_agg("approxCountDistinct", C("i")), _agg("collect_union", C("a"))])
    return out


CASES: list[Case] = _build()
