"""The ``regr_*`` aggregates as Spark computes them: its one-pass covariance, correlation
and variance updates over the rows in order (``Covariance``, ``PearsonCorrelation``,
``CentralMomentAgg``), the values cast to double, rows with a null in either argument
left out — except the variance of ``x`` under ``regr_slope``/``regr_intercept``, which
Spark keeps over every row where ``x`` alone is not null.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics import numeric
from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["REGRESSION"]

#: the (y, x) pairs with neither null, as doubles, in the rows' order
_PAIRS = ("list_filter(list({'a': CAST({y} AS DOUBLE), 'b': CAST({x} AS DOUBLE)}), "
          "__p -> __p.a IS NOT NULL AND __p.b IS NOT NULL)")


def _pearson(first: str, second: str) -> str:
    """Spark's ``PearsonCorrelation(first, second)`` buffer (n, xAvg, yAvg, ck, xMk, yMk)
    over the pairs: x is ``first``, y is ``second`` (``a`` is y, ``b`` is x of regr)."""
    x, y = f"__p.{first}", f"__p.{second}"
    n1 = "(__c.n + 1.0)"
    dx, dy = f"({x} - __c.xa)", f"({y} - __c.ya)"
    xa, ya = f"(__c.xa + {dx} / {n1})", f"(__c.ya + {dy} / {n1})"
    fields = {"n": n1, "xa": xa, "ya": ya, "ck": f"(__c.ck + {dx} * ({y} - {ya}))",
              "xmk": f"(__c.xmk + {dx} * ({x} - {xa}))", "ymk": f"(__c.ymk + {dy} * ({y} - {ya}))"}
    step = "{" + ", ".join(f"'{k}': CAST({v} AS DOUBLE)" for k, v in fields.items()) + "}"
    zero = "{" + ", ".join(f"'{k}': CAST(0 AS DOUBLE)" for k in fields) + "}"
    return f"list_reduce({_PAIRS}, (__c, __p) -> {step}, {zero})"


def _m2(values: str, v: str = "__v") -> str:
    """Spark's ``CentralMomentAgg`` buffer (n, avg, m2) over ``values`` (each ``v``)."""
    d, dn = f"({v} - __w.avg)", f"(({v} - __w.avg) / (__w.n + 1.0))"
    step = (f"{{'n': CAST(__w.n + 1.0 AS DOUBLE), 'avg': CAST(__w.avg + {dn} AS DOUBLE), "
            f"'m2': CAST(__w.m2 + {d} * ({d} - {dn}) AS DOUBLE)}}")
    zero = "{'n': CAST(0 AS DOUBLE), 'avg': CAST(0 AS DOUBLE), 'm2': CAST(0 AS DOUBLE)}"
    return f"list_reduce({values}, (__w, {v.split('.')[0]}) -> {step}, {zero})"


def _var_x() -> str:
    """Spark's ``VariancePop(x)`` buffer's m2 over the pairs' x."""
    return _m2(_PAIRS, "__p.b") + ".m2"


def _evaluate(buffer: str, formula: str) -> str:
    return f"list_transform([{buffer}], __s -> {formula})[1]"


def _args(node: exp.Expression) -> tuple[exp.Expression, exp.Expression]:
    return node.this, node.expression


def _double(body: str):
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        y, x = _args(node)
        return typed(fill(body, y=y, x=x), pa.float64())

    return rule


def _avg_of(which: str):
    """``regr_avgx``/``regr_avgy``: Spark's ``avg`` (a decimal's avg for a decimal) of x
    (y) over the rows where neither is null."""
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression | None:
        y, x = _args(node)
        kept = x if which == "x" else y
        case = exp.Case(ifs=[exp.If(this=exp.and_(exp.Not(this=exp.Is(this=y.copy(), expression=exp.Null())),
                                                  exp.Not(this=exp.Is(this=x.copy(), expression=exp.Null()))),
                                    true=kept.copy())])
        t = rules.type_of(kept)
        if t is not None:
            typed(case, t)
        avg = exp.Avg(this=case)
        return numeric.avg_rule(avg, rules) or avg

    return rule


def _count(node: exp.Expression, rules: Rules) -> exp.Expression:
    y, x = _args(node)
    return typed(fill("count(CASE WHEN {y} IS NOT NULL AND {x} IS NOT NULL THEN 1 END)", y=y, x=x), pa.int64())


_COV_X_Y = _pearson("b", "a")  # Spark's CovPopulation(x, y): xa the mean of x, ya of y
#: kind -> rule
REGRESSION = {
    exp.RegrCount: _count,
    exp.RegrAvgx: _avg_of("x"),
    exp.RegrAvgy: _avg_of("y"),
    exp.RegrSxx: _double(_evaluate(_m2(_PAIRS, "__p.b"), "CASE WHEN __s.n = 0 THEN NULL ELSE __s.m2 END")),
    exp.RegrSyy: _double(_evaluate(_m2(_PAIRS, "__p.a"), "CASE WHEN __s.n = 0 THEN NULL ELSE __s.m2 END")),
    exp.RegrSxy: _double(_evaluate(_pearson("a", "b"), "CASE WHEN __s.n = 0 THEN NULL ELSE __s.ck END")),
    exp.RegrR2: _double(_evaluate(_pearson("a", "b"), "CASE WHEN __s.xmk = 0 THEN NULL WHEN __s.ymk = 0 THEN 1.0 "
                                                      "ELSE (__s.ck / sqrt(__s.xmk * __s.ymk)) * "
                                                      "(__s.ck / sqrt(__s.xmk * __s.ymk)) END")),
    exp.RegrSlope: _double(_evaluate(f"{{'c': {_COV_X_Y}, 'm2': {_var_x()}}}",
                                     "CASE WHEN __s.m2 = 0 THEN NULL ELSE __s.c.ck / __s.m2 END")),
    exp.RegrIntercept: _double(_evaluate(f"{{'c': {_COV_X_Y}, 'm2': {_var_x()}}}",
                                         "CASE WHEN __s.m2 = 0 THEN NULL "
                                         "ELSE __s.c.ya - __s.c.ck / __s.m2 * __s.c.xa END")),
}
