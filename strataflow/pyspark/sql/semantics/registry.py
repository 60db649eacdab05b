"""Which rule each node kind runs under: the table the conformance suite checks.

``KEEP``: DuckDB's answer (through sqlglot's spelling) equals Spark's on every case of the
suite, in both ANSI modes and both session time zones. ``RULES``: rewritten to Spark's
meaning. ``REFUSE``: refused with the reason and what to use instead. A node of a function
kind (``exp.Func``) in none of them is refused: nothing runs unchecked. Structural nodes
(columns, literals, boolean logic, CASE, windows, aliases) are not functions and pass.
"""

from __future__ import annotations

from typing import Callable

from sqlglot import exp

from strataflow.pyspark.sql.semantics import aggregates, arrays, casts, dates, numeric, structured, text
from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.semantics.core import Rules
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["rule_for", "KEEP", "RULES", "REFUSE"]

#: the families' modules, each with its KEEP, RULES, ANONYMOUS and REFUSE tables
FAMILIES = (numeric, text, dates, arrays, aggregates, structured)


def _refuse(why: str, instead: str) -> Callable[[exp.Expression, Rules], exp.Expression]:
    def rule(node: exp.Expression, rules: Rules) -> exp.Expression:
        raise rules.refuse(node, why, instead)

    return rule


#: function kinds whose DuckDB answer the suite found equal to Spark's
KEEP: frozenset[type] = frozenset({
    exp.Min, exp.Max, exp.Stddev, exp.StddevSamp, exp.StddevPop, exp.Variance, exp.VariancePop, exp.CountIf,
    exp.Median, exp.LogicalAnd, exp.LogicalOr, exp.AnyValue, exp.CovarPop, exp.CovarSamp, exp.ArgMin, exp.Greatest,
    exp.Least, exp.Trim, exp.Reverse, exp.Ascii, exp.MD5, exp.SHA, exp.Hex, exp.Concat, exp.ConcatWs, exp.Pad,
    exp.Repeat, exp.RegexpExtract, exp.Translate, exp.Coalesce, exp.Nullif, exp.LastDay, exp.ArrayMax,
    exp.ArrayMin, exp.ArrayToString, exp.ArraySlice, exp.Sqrt, exp.Degrees, exp.Radians, exp.Sin, exp.Cos, exp.Tan,
    exp.Cbrt, exp.Exp, exp.Pow, exp.Corr, exp.First, exp.Last, exp.Count, exp.IgnoreNulls, exp.ArgMax,
    exp.TsOrDsAdd, exp.Contains, exp.StartsWith, exp.EndsWith, exp.RegexpLike,
    # structural function kinds: their meaning is the same in both
    exp.Case, exp.If, exp.Struct, exp.Array, exp.Anonymous, exp.ArrayAgg,
    # window ranking functions and generators, checked against real PySpark by the programs of
    # tests/test_dataframe.py and tests/test_dataframe_more.py (not value tables: they read rows)
    exp.RowNumber, exp.Rank, exp.DenseRank, exp.PercentRank, exp.CumeDist, exp.Ntile, exp.Lag, exp.Lead,
    exp.Explode, exp.Unnest,
}).union(*(family.KEEP for family in FAMILIES))

#: function kinds rewritten to Spark's meaning
RULES: dict[type, Callable[[exp.Expression, Rules], "exp.Expression | None"]] = {
    exp.Round: numeric.round_rule,
    exp.Div: numeric.divide,
    exp.Mod: numeric.remainder,
    exp.Add: numeric.arithmetic,
    exp.Sub: numeric.arithmetic,
    exp.Mul: numeric.arithmetic,
    exp.Abs: numeric.abs_rule,
    exp.Floor: numeric.floor_ceil,
    exp.Ceil: numeric.floor_ceil,
    exp.Sign: numeric.signum,
    exp.Ln: numeric.logarithm,
    exp.Log: numeric.logarithm,
    exp.Avg: numeric.avg_rule,
    exp.Sum: numeric.sum_rule,
    exp.Nanvl: numeric.nanvl,
    exp.IsNan: lambda node, rules: fill("coalesce(isnan({x}), false)", x=node.this),
    exp.ArgMax: numeric.max_by,
    exp.Cast: casts.cast_rule,
    exp.TryCast: casts.cast_rule,
    **{kind: rule for family in FAMILIES for kind, rule in family.RULES.items()},
}

#: Anonymous functions (no sqlglot kind) by name: rules, or refusals
ANONYMOUS: dict[str, Callable[[exp.Expression, Rules], "exp.Expression | None"]] = {
    "bround": numeric.bround_rule,
    "isnull": lambda node, rules: exp.Is(this=node.expressions[0], expression=exp.Null()),
    "format_number": _refuse("Java's DecimalFormat rounds HALF_EVEN on the decimal value; DuckDB's format "
                             "rounds the binary one", "format_string or round then cast to string"),
    "pmod": _refuse("not checked by the conformance suite yet", "((a % b) + b) % b"),
    **{name: rule for family in FAMILIES for name, rule in family.ANONYMOUS.items()},
}

#: function kinds refused: (why, instead)
REFUSE: dict[type, tuple[str, str]] = {
    exp.Skewness: ("DuckDB's skewness is the sample-corrected estimator, Spark's the population one",
                   "compute it from avg and stddev_pop"),
    exp.Kurtosis: ("DuckDB's kurtosis is the sample-corrected excess kurtosis, Spark's the population one",
                   "compute it from the central moments"),
    exp.ApproxDistinct: ("DuckDB's HyperLogLog is not Spark's HLL++ (rsd 0.05): the estimates differ",
                         "countDistinct for the exact count"),
    exp.MonthsBetween: ("DuckDB counts months by calendar, Spark by 31-day months with rounding to 8 digits",
                        "datediff(end, start) / 31"),
    **{kind: why for family in FAMILIES for kind, why in family.REFUSE.items()},
    **{kind: ("strataflow's select runs one generator of one column (explode); an outer or positional "
              "generator is not built", "explode, with F.posexplode's position from F.array_position or a "
              "UDF, and the empty or null arrays' rows added back by a union")
       for kind in (exp.ExplodeOuter, exp.Posexplode, exp.PosexplodeOuter)},
}

#: structural nodes DuckDB and Spark agree on that are Func subclasses in sqlglot
_STRUCTURAL = (exp.Alias, exp.Column, exp.Literal, exp.Paren, exp.Window, exp.Ordered, exp.Distinct, exp.Star,
               exp.Connector, exp.Not, exp.Xor, exp.Between, exp.In, exp.Is, exp.Like, exp.ILike, exp.Neg,
               exp.Interval, exp.Null, exp.Boolean, exp.Tuple, exp.Subquery, exp.Exists, exp.Filter,
               exp.WithinGroup, exp.PropertyEQ, exp.Dot)


def _unresolved(node: exp.Expression, rules: Rules) -> exp.Expression:


    raise AnalysisException(f"[UNRESOLVED_ROUTINE] Cannot resolve routine `{node.name}` on search path "
                            f"[`system`.`builtin`, `system`.`session`, `spark_catalog`.`default`].",
                            "UNRESOLVED_ROUTINE")


def _unchecked(node: exp.Expression, rules: Rules) -> exp.Expression:
    raise rules.refuse(node, "the conformance suite has not checked it against Spark",
                       "another function, or a Python UDF (F.udf) with the meaning you need")


def rule_for(node: exp.Expression) -> Callable[[exp.Expression, Rules], "exp.Expression | None"] | None:
    """The rule for ``node``; None where it passes as it is."""
    if node._meta and node.meta.get("internal"):
        return None
    kind = type(node)
    if kind is exp.Anonymous:
        name = str(node.name).lower()
        if node.meta.get("udf") is not None or name in ("error", "struct_update", "struct_pack", "row"):
            return None
        if name == "product" and node.meta.get("fn") != "product":
            return _unresolved
        return ANONYMOUS.get(name, _unchecked if name not in _ANON_KEEP else None)
    if kind in RULES:
        return RULES[kind]
    if kind in REFUSE:
        return _refuse(*REFUSE[kind])
    if kind.__name__ == "_ExplodeOuter":
        return _refuse(*REFUSE[exp.ExplodeOuter])
    if kind in KEEP or not isinstance(node, exp.Func) \
            or isinstance(node, _STRUCTURAL):
        return None
    return _unchecked


#: Anonymous functions whose DuckDB answer equals Spark's
_ANON_KEEP = frozenset({"product"})
