"""The DataFrame's statistics and sampling (a mixin), and ``df.stat``.

A statistic runs in two steps, as Spark's aggregates do: each partition computes a partial
result (moments about its own mean; a quantile sketch, every ``3 / relativeError``-th sorted
value and how many it stands for, so a rank is off by at most ``relativeError * N``; frequent
item counters) and the driver merges them. A sample draws from the seed and the partition's
index: the same seed and partitioning give the same rows (not the rows Spark would pick).
"""

from __future__ import annotations

import functools
import inspect
import math
import random
import sys
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.engine import as_table
from strataflow.pyspark.sql.plan import Plan
from strataflow.pyspark.sql.resolve import field_of
from strataflow.pyspark.sql.show import cell
from strataflow.pyspark.sql.types import from_arrow

if TYPE_CHECKING:
    from strataflow.pyspark.sql.dataframe import DataFrame

__all__ = ["DataFrameStat", "DataFrameStatFunctions"]

_NAMED_STATS = {"count", "mean", "stddev", "min", "max", "count_distinct", "approx_count_distinct"}
_SUMMARY_ERROR = 1.0 / 10000  # percentile_approx's default accuracy, which ``summary`` uses
_NONE = (0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _type_error(arg: str, expected: str, got: Any) -> TypeError:
    return TypeError(f"[NOT_EXPECTED_TYPE] Argument `{arg}` should be {expected}, got {type(got).__name__}.")


def _str_args(col1: Any, col2: Any) -> None:
    bad = [(n, v) for n, v in (("col1", col1), ("col2", col2)) if not isinstance(v, str)]
    if bad:
        raise _type_error(bad[0][0], "a str", bad[0][1])


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def _arr(col: Any, dtype: Any = None, drop_nan: bool = False) -> np.ndarray:
    x = np.asarray(col.drop_null().to_numpy(zero_copy_only=False), dtype=dtype)
    return x[~np.isnan(x)] if drop_nan and x.dtype.kind == "f" else x


def _co_moments(x: np.ndarray, y: np.ndarray) -> tuple:
    """``(n, mean x, mean y, sum dx*dy, sum dx^2, sum dy^2, sum x)``, about the partition's means."""
    n = len(x)
    if not n:
        return _NONE
    sx, sy = float(x.sum()), float(y.sum())
    dx, dy = x - sx / n, y - sy / n
    return (n, sx / n, sy / n, float((dx * dy).sum()), float((dx * dx).sum()), float((dy * dy).sum()), sx)


def _merge(a: tuple, b: tuple) -> tuple:
    """Two partitions' moments as one, as Spark's PearsonCorrelation merges (``avg`` is sum / count)."""
    if not a[0] or not b[0]:
        return b if not a[0] else a
    n1, n2 = a[0], b[0]
    dx, dy = b[1] - a[1], b[2] - a[2]
    dxn, dyn = dx / (n1 + n2), dy / (n1 + n2)
    return (n1 + n2, a[1] + dxn * n2, a[2] + dyn * n2, a[3] + b[3] + dx * dyn * n1 * n2,
            a[4] + b[4] + dx * dxn * n1 * n2, a[5] + b[5] + dy * dyn * n1 * n2, a[6] + b[6])


def _sketch(x: np.ndarray, err: float) -> tuple:
    """Every k-th sorted value (k = err * n / 3, at least 1) and how many values each stands for."""
    x, k = np.sort(x, kind="stable"), max(1, int(err * len(x) / 3))
    idx = np.unique(np.append(np.arange(k - 1, len(x), k), len(x) - 1)) if len(x) else np.arange(0)
    return x[idx], np.diff(np.concatenate([[-1], idx])).astype(np.int64)


def _quantiles(sketches: list, probabilities: list[float]) -> list:
    """The values at ranks ``ceil(p * N)`` (at least 1) of the merged sketches ([] if empty)."""
    v, w = np.concatenate([s[0] for s in sketches]), np.concatenate([s[1] for s in sketches])
    order = np.argsort(v, kind="stable")
    v, cum = v[order], np.cumsum(w[order])
    return [_py(v[min(len(v) - 1, int(np.searchsorted(cum, max(1, math.ceil(p * cum[-1])))))])
            for p in probabilities] if len(v) else []


def _min_max(col: Any) -> tuple:
    """Spark's min and max: NaN is greater than every other double."""
    if not pa.types.is_floating(col.type):
        return tuple(pc.min_max(col).as_py().values())
    x = _arr(col)
    rest = x[~np.isnan(x)]
    lo = _py(rest.min()) if len(rest) else (float("nan") if len(x) else None)
    return lo, float("nan") if len(rest) < len(x) else (_py(rest.max()) if len(rest) else None)


def _pick(a: Any, b: Any, high: bool) -> Any:
    """The lesser (greater, if ``high``) of two partitions' min (max), None for none."""
    if a is None or b is None:
        return b if a is None else a
    if _nan(a) or _nan(b):
        return float("nan") if high or (_nan(a) and _nan(b)) else (b if _nan(a) else a)
    return max(a, b) if high else min(a, b)


def _stats_part(schema: pa.Schema, value: Any, qerr: float | None) -> list:
    """Per column (then its cast to double): count, moments, min, max, decimal sum, quantile sketch."""
    t = as_table(value, schema)
    out = []
    for orig, num in zip(t.columns[::2], t.columns[1::2]):
        x = _arr(num, np.float64)
        out.append({"count": len(orig) - orig.null_count, "mom": _co_moments(x, x), "mm": _min_max(orig),
                    "dsum": pc.sum(orig).as_py() if pa.types.is_decimal(orig.type) else None,
                    "q": None if qerr is None else _sketch(_arr(orig if _numeric(orig.type) else num,
                                                                drop_nan=True), qerr)})
    return [out]


def _co_part(schema: pa.Schema, value: Any) -> list:
    t = as_table(value, schema)
    both = pc.and_(pc.is_valid(t.column(0)), pc.is_valid(t.column(1)))
    return [_co_moments(*(_arr(t.column(i).filter(both), np.float64) for i in (0, 1)))]


def _quantile_part(schema: pa.Schema, value: Any, err: float) -> list:
    return [[_sketch(_arr(c, drop_nan=True), err) for c in as_table(value, schema).columns]]


def _key(v: Any) -> Any:
    """A hashable stand-in for a value (NaN equal to NaN; a list, map or struct by its repr)."""
    return ("__nan__",) if _nan(v) else ("__repr__", repr(v)) if isinstance(v, (list, dict)) else v


def _reduce(counts: dict, size: int) -> dict:
    """At most ``size`` counters (Misra-Gries): the (size+1)-th largest count off each, zeros gone."""
    if len(counts) <= size:
        return counts
    cut = sorted((c for _, c in counts.values()), reverse=True)[size]
    return {k: (v, c - cut) for k, (v, c) in counts.items() if c > cut}


def _freq_part(schema: pa.Schema, value: Any, size: int) -> list:
    out = []
    for col in as_table(value, schema).columns:
        vc = pc.value_counts(col)
        pairs = zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist())
        out.append(_reduce({_key(v): (v, c) for v, c in pairs}, size))
    return [out]


def _draw(schema: pa.Schema, index: int, value: Any, seed: int, lo: float = 0.0, hi: float = 1.0,
          poisson: bool = False, strata: tuple | None = None) -> pa.Table:
    """The rows whose uniform draw is in ``[lo, hi)`` (each row Poisson(``hi``) times, with
    ``poisson``; ``strata``: ``hi`` the fraction of the last column's value, then dropped)."""
    t = as_table(value, schema)
    rng = np.random.default_rng([seed & ((1 << 64) - 1), index])
    if poisson:
        return t.take(pa.array(np.repeat(np.arange(t.num_rows), rng.poisson(hi, t.num_rows)), type=pa.int64()))
    if strata is not None:
        hi = np.array([strata[1].get(_key(v), 0.0) for v in t.column(t.num_columns - 1).to_pylist()])  # type: ignore
        t = t.remove_column(t.num_columns - 1).rename_columns(strata[0])
    u = rng.random(t.num_rows)
    return t.filter(pa.array((u >= lo) & (u < hi)))


def _seed(s: Any) -> int:
    return int(s) if s is not None else random.randint(0, sys.maxsize)


def _sample_args(withReplacement: Any, fraction: Any, seed: Any) -> tuple[bool, float, int]:
    """PySpark's reading of ``sample``'s arguments: ``(with replacement, fraction, seed)``."""
    if isinstance(fraction, float) and (withReplacement is None or isinstance(withReplacement, bool)):
        return bool(withReplacement), fraction, _seed(seed)
    if isinstance(withReplacement, float):
        return False, withReplacement, _seed(fraction)
    kinds = ", ".join(type(a).__name__ for a in (withReplacement, fraction, seed))
    raise TypeError("[NOT_EXPECTED_TYPE] Argument `withReplacement (optional), fraction (required) and seed "
                    f"(optional)` should be a bool, float or int, got {kinds}.")


class DataFrameStat:
    """Statistics and sampling of :class:`DataFrame` (a mixin)."""

    _current: Plan

    def _partials(self, plan: Plan, f: Any) -> list:
        return plan.dataset().map_partitions(functools.partial(f, plan.schema)).collect()

    def _new_source(self, plan: Plan, f: Any) -> "DataFrame":
        ds = plan.dataset().map_partitions_with_index(functools.partial(f, plan.schema))
        return self._new(Plan(plan.session, ds, plan.schema, plan.fields))  # type: ignore[attr-defined]

    def _local(self, arrays: list, names: list[str]) -> "DataFrame":
        return self.sparkSession.createDataFrame(pa.Table.from_arrays(arrays, names=names))  # type: ignore

    def _numeric_fields(self, cols: list[str], what: str) -> list:
        items = []
        for i, name in enumerate(cols):
            f = field_of(name, "", self._current.fields)
            if not _numeric(f.type):
                raise ValueError(f"requirement failed: {what.format(name=name)} with data type "
                                 f"{from_arrow(f.type).simpleString()} is not supported.")
            items.append((exp.cast(exp.column(f.phys, quoted=True), "DOUBLE"), f"__x{i}", frozenset()))
        return items

    def describe(self, *cols: "str | list[str]") -> "DataFrame":
        """``summary("count", "mean", "stddev", "min", "max")`` of the columns ``cols`` (or all).

        >>> df = spark.createDataFrame([("a", 1), ("b", 3)], ["s", "n"]).describe()
        >>> df.columns, [tuple(r) for r in df.collect()][1:3]
        (['summary', 's', 'n'], [('mean', None, '2.0'), ('stddev', None, '1.4142135623730951')])
        """
        if len(cols) == 1 and isinstance(cols[0], list):
            cols = tuple(cols[0])
        df = self.select(*cols) if cols else self  # type: ignore[attr-defined]
        return df._summary(["count", "mean", "stddev", "min", "max"], [])

    def summary(self, *statistics: str) -> "DataFrame":
        """Statistics of the numeric and string columns, as strings: count, mean, stddev (the
        sample's), min, max, count_distinct, approx_count_distinct, percentiles (``"75%"``).

        >>> spark.createDataFrame([(1,), (2,), (3,), (4,)], ["n"]).summary("min", "50%", "max").collect()
        [Row(summary='min', n='1'), Row(summary='50%', n='2'), Row(summary='max', n='4')]
        """
        if len(statistics) == 1 and isinstance(statistics[0], list):
            statistics = tuple(statistics[0])
        stats = list(statistics) or ["count", "mean", "stddev", "min", "25%", "50%", "75%", "max"]
        for s in stats:
            if not s.endswith("%") and s.lower() not in _NAMED_STATS:
                raise ValueError(f"{s} is not a recognised statistic.")
        try:
            pcts = [float(s[:-1]) / 100.0 for s in stats if s.endswith("%")]
        except ValueError:
            raise ValueError(f"Unable to parse {[s for s in stats if s.endswith('%')]} as percentiles") from None
        if not all(0.0 <= p <= 1.0 for p in pcts):
            raise ValueError("requirement failed: Percentiles must be in the range [0, 1]")
        return self._summary(stats, pcts)

    def _summary(self, stats: list[str], pcts: list[float]) -> "DataFrame":
        plan = self._current
        fields = [f for f in plan.fields if _numeric(f.type) or pa.types.is_string(f.type)]
        items = [item for i, f in enumerate(fields) for item in (
            (exp.column(f.phys, quoted=True), f"__c{i}", frozenset()),
            ((exp.TryCast if pa.types.is_string(f.type) else exp.Cast)(
                this=exp.column(f.phys, quoted=True), to=exp.DataType.build("DOUBLE")), f"__d{i}", frozenset()))]
        parts = self._partials(plan.project(items), functools.partial(
            _stats_part, qerr=_SUMMARY_ERROR if pcts else None)) if fields else []
        values = [self._column_summary(f, [part[i] for part in parts], stats, pcts) for i, f in enumerate(fields)]
        return self._local([pa.array(v, pa.string()) for v in [list(stats), *values]],
                           ["summary"] + [f.name for f in fields])

    def _column_summary(self, f: Any, parts: list[dict], stats: list[str], pcts: list[float]) -> list:
        count = sum(p["count"] for p in parts)
        n, _, _, _, m2, _, total = functools.reduce(_merge, [p["mom"] for p in parts], _NONE)
        lo = functools.reduce(functools.partial(_pick, high=False), [p["mm"][0] for p in parts], None)
        hi = functools.reduce(functools.partial(_pick, high=True), [p["mm"][1] for p in parts], None)
        qs = iter(_quantiles([p["q"] for p in parts], pcts) or [None] * len(pcts)) if pcts else iter(())
        out: list = []
        for s in map(str.lower, stats):
            if s == "count":
                v, t = count, pa.int64()
            elif s == "mean":
                v, t = (self._mean(f, parts, n, total), pa.string()) if n else (None, None)
            elif s == "stddev":
                v, t = (math.sqrt(m2 / (n - 1)) if n > 1 else None), pa.float64()
            elif s in ("min", "max"):
                v, t = lo if s == "min" else hi, f.type
            elif s in ("count_distinct", "approx_count_distinct"):
                col = Column(exp.column(f.name, quoted=True))
                v, t = self.select(col).dropna().distinct().count(), pa.int64()  # type: ignore[attr-defined]
            else:
                v, t = next(qs), f.type if _numeric(f.type) else pa.float64()
            out.append(None if v is None else cell(v, t))
        return out

    @staticmethod
    def _mean(f: Any, parts: list[dict], n: int, total: float) -> str:
        if not pa.types.is_decimal(f.type):
            return cell(total / n, pa.float64())
        with localcontext() as ctx:  # Spark's avg of a decimal(p, s) is a decimal(p + 4, s + 4)
            ctx.prec = 80
            s = sum((p["dsum"] for p in parts if p["dsum"] is not None), Decimal(0)) / n
            return str(s.quantize(Decimal(1).scaleb(-min(38, f.type.scale + 4)), rounding=ROUND_HALF_UP))

    def _co(self, col1: str, col2: str, what: str) -> tuple:
        _str_args(col1, col2)
        items = self._numeric_fields([col1, col2], f"Currently {what} calculation for column {{name}}")
        return functools.reduce(_merge, self._partials(self._current.project(items), _co_part), _NONE)

    def corr(self, col1: str, col2: str, method: str | None = None) -> float:
        """The Pearson correlation of two numeric columns (NaN for under two rows with no null).

        >>> spark.createDataFrame([(1, 12), (10, 1), (19, 8)], ["c1", "c2"]).corr("c1", "c2")
        -0.3592106040535498
        """
        if (method or "pearson") != "pearson":
            raise ValueError("[VALUE_NOT_ALLOWED] Value for `method` has to be amongst: ['pearson'].")
        n, _, _, ck, xm, ym, _ = self._co(col1, col2, "correlation")
        return ck / math.sqrt(xm * ym) if n > 1 and xm * ym > 0 else float("nan")

    def cov(self, col1: str, col2: str) -> float:
        """The sample covariance of two numeric columns (NaN for under two rows with no null).

        >>> spark.createDataFrame([(1, 12), (10, 1), (19, 8)], ["c1", "c2"]).cov("c1", "c2")
        -18.0
        """
        n, _, _, ck, _, _, _ = self._co(col1, col2, "covariance")
        return ck / (n - 1) if n > 1 else float("nan")

    def crosstab(self, col1: str, col2: str) -> "DataFrame":
        """The contingency table: a row per value of ``col1`` (in string column ``col1_col2``),
        a count column per value of ``col2`` (sorted as strings)

        >>> df = spark.createDataFrame([(1, "x"), (1, "x"), (2, "y")], ["a", "b"])
        >>> df.crosstab("a", "b").sort("a_b").collect()
        [Row(a_b='1', x=2, y=0), Row(a_b='2', x=0, y=1)]
        """
        _str_args(col1, col2)
        t1, t2 = (field_of(c, "", self._current.fields).type for c in (col1, col2))
        table: dict[str, dict[str, int]] = {}
        for a, b, count in self.groupBy(col1, col2).count().collect():  # type: ignore[attr-defined]
            a, b = ("null" if v is None else cell(v, t) for v, t in ((a, t1), (b, t2)))
            table.setdefault(a, {})[b] = table.get(a, {}).get(b, 0) + count
        heads = sorted({h for row in table.values() for h in row})
        if len(heads) >= 10000:
            raise ValueError(f"requirement failed: The number of distinct values for {col2}, can't exceed 1e4.")
        keys = sorted(table)
        arrays = [pa.array(keys, pa.string())] + [pa.array([table[k].get(h, 0) for k in keys], pa.int64())
                                                  for h in heads]
        return self._local(arrays, [f"{col1}_{col2}"] + [h.replace("`", "") for h in heads])

    def freqItems(self, cols: "list[str] | tuple[str, ...]", support: float | None = None) -> "DataFrame":
        """One row: per column, an array ``<col>_freqItems`` of the items in ``support`` (default
        1%) of the rows or more, maybe with others (counters per partition, merged)

        >>> df = spark.createDataFrame([(1, "a"), (1, "b"), (2, "a")], ["n", "s"])
        >>> sorted(df.freqItems(["n", "s"], 0.4).first().n_freqItems)
        [1, 2]
        """
        if not isinstance(cols, (list, tuple)):
            raise _type_error("cols", "a list or tuple", cols)
        support = support or 0.01
        if not 1e-4 <= support <= 1.0:
            raise ValueError(f"requirement failed: Support must be in [1e-4, 1], but got {support}.")
        plan = self._current
        fields = [field_of(c, "", plan.fields) for c in cols]
        p = plan.project([(exp.column(f.phys, quoted=True), f"__f{i}", frozenset()) for i, f in enumerate(fields)])
        size = int(1 / support)
        merged: list[dict] = [{} for _ in fields]
        for part in self._partials(p, functools.partial(_freq_part, size=size)):
            merged = [_reduce({**m, **{k: (v, m.get(k, (v, 0))[1] + c) for k, (v, c) in counts.items()}}, size)
                      for m, counts in zip(merged, part)]
        arrays = [pa.array([[v for v, _ in sorted(m.values(), key=lambda vc: -vc[1])]], pa.list_(f.type))
                  for m, f in zip(merged, fields)]
        return self._local(arrays, [f"{c}_freqItems" for c in cols])

    def approxQuantile(self, col: "str | list[str] | tuple[str, ...]", probabilities: "list[float] | tuple[float, ...]",
                       relativeError: float) -> list:
        """The values at ``probabilities`` of a numeric column (of each, for a list), nulls and NaN
        left out, ranks within ``relativeError * N`` of ``p * N`` (exact for small data)

        >>> spark.createDataFrame([(1,), (2,), (3,), (4,), (5,)], ["v"]).approxQuantile("v", [0.0, 0.5, 1.0], 0.05)
        [1.0, 3.0, 5.0]
        """
        cols = [col] if isinstance(col, str) else list(col) if isinstance(col, (list, tuple)) else None
        if cols is None or not all(isinstance(c, str) for c in cols):
            raise _type_error("col", "a str, or a list or tuple of str", col)
        probs = list(probabilities) if isinstance(probabilities, (list, tuple)) else [None]
        bad = [p for p in probs if isinstance(p, bool) or not isinstance(p, (float, int)) or not 0 <= p <= 1]
        if bad:
            raise TypeError(f"[NOT_EXPECTED_TYPE] Argument `probabilities` should be a list or tuple of numbers in "
                            f"[0, 1], got {probabilities!r}.")
        if isinstance(relativeError, bool) or not isinstance(relativeError, (float, int)):
            raise _type_error("relativeError", "a float or int", relativeError)
        if relativeError < 0:
            raise ValueError(f"[NEGATIVE_VALUE] Value for `relativeError` must be greater than or equal to 0, "
                             f"got '{relativeError}'.")
        items = self._numeric_fields(cols, "Quantile calculation for column {name}")
        parts = self._partials(self._current.project(items),
                               functools.partial(_quantile_part, err=min(1.0, relativeError)))
        out = [[float(v) for v in _quantiles([part[i] for part in parts], [float(p) for p in probs])]
               for i in range(len(cols))]
        return out[0] if isinstance(col, str) else out

    def sample(self, withReplacement: Any = None, fraction: Any = None, seed: Any = None) -> "DataFrame":
        """About ``fraction`` of the rows (with replacement: each a Poisson(fraction) number of times)

        >>> df = spark.range(100, numPartitions=2)
        >>> df.sample(fraction=0.5, seed=3).count() == df.sample(fraction=0.5, seed=3).count()
        True
        >>> df.sample(1.0).count()
        100
        """
        replace, fraction, seed = _sample_args(withReplacement, fraction, seed)
        if fraction < 0 or (fraction > 1 and not replace):
            raise ValueError(f"requirement failed: Sampling fraction ({fraction}) must be " + (
                "nonnegative with replacement" if replace else "on interval [0, 1] without replacement"))
        return self._new_source(self._current, functools.partial(_draw, seed=seed, hi=fraction, poisson=replace))

    def sampleBy(self, col: "Column | str", fractions: dict, seed: int | None = None) -> "DataFrame":
        """A stratified sample: each row kept with the fraction of its ``col`` value (else none)

        >>> df = spark.range(0, 100, 1, 5).selectExpr("id % 3 AS key")
        >>> df.sampleBy("key", fractions={2: 1.0}, seed=0).count()
        33
        """
        if not isinstance(col, (str, Column)):
            raise _type_error("col", "a Column or str", col)
        if not isinstance(fractions, dict):
            raise _type_error("fractions", "a dict", fractions)
        if not all(isinstance(k, (float, int, str)) for k in fractions):
            raise TypeError("[DISALLOWED_TYPE_FOR_CONTAINER] Argument `fractions` can only contain float, int or str "
                            f"keys, got {list(fractions)}.")
        if not all(0.0 <= float(v) <= 1.0 for v in fractions.values()):
            raise ValueError(f"requirement failed: Fractions must be in [0, 1], but got {fractions}.")
        plan = self._current
        key = self._items((col,))[0][0]  # type: ignore[attr-defined]
        ext = plan.project(plan.identity_items() + [(key, "__stratum", frozenset())])
        f = functools.partial(_draw, ext.schema, seed=_seed(seed),
                              strata=(plan.schema.names, {_key(k): float(v) for k, v in fractions.items()}))
        return self._new(Plan(plan.session, ext.dataset().map_partitions_with_index(f), plan.schema,  # type: ignore
                              plan.fields))

    def randomSplit(self, weights: list[float], seed: int | None = None) -> list["DataFrame"]:
        """The rows split at random in proportion to ``weights`` (partitions sorted first: disjoint parts)

        >>> parts = spark.range(100).randomSplit([1.0, 3.0], seed=7)
        >>> sum(p.count() for p in parts), parts[0].intersect(parts[1]).count()
        (100, 0)
        """
        if any(w < 0.0 for w in weights) or sum(weights) <= 0:
            raise ValueError(f"[VALUE_NOT_POSITIVE] Value for `weights` must be positive, got {list(weights)}.")
        seed, bounds = _seed(seed), [0.0] + [float(x) for x in np.cumsum(weights)[:-1] / sum(weights)] + [1.0]
        plan = self._current
        order = [exp.Ordered(this=exp.column(f.phys, quoted=True), nulls_first=True) for f in plan.fields
                 if not pa.types.is_map(f.type)]
        base = plan.project(plan.identity_items(), order=order) if order else plan
        return [self._new_source(base, functools.partial(_draw, seed=seed, lo=lo, hi=hi))
                for lo, hi in zip(bounds, bounds[1:])]

    @property
    def stat(self) -> "DataFrameStatFunctions":
        """The statistic functions of this DataFrame (``df.stat.corr(...)``...).

        >>> spark.range(3).selectExpr("id", "id + 1 AS c").stat.corr("id", "c")
        1.0
        """
        return DataFrameStatFunctions(self)


class DataFrameStatFunctions:
    """``df.stat``: the statistic functions, as the DataFrame's own methods.

    >>> df = spark.createDataFrame([(1, 2), (2, 4), (3, 7)], ["a", "b"])
    >>> df.stat.cov("a", "b"), df.stat.approxQuantile("b", [0.5], 0.0)
    (2.5, [4.0])
    """

    def __init__(self, df: Any) -> None:
        self.df = df


_MODULE = "strataflow.pyspark.sql.dataframe"  # PySpark's class is ``pyspark.sql.dataframe.DataFrameStatFunctions``:
DataFrameStatFunctions.__module__ = _MODULE  # ``dataframe`` imports it, and its examples run from there


def _delegate(name: str) -> Any:
    def method(self: DataFrameStatFunctions, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.df, name)(*args, **kwargs)

    own = getattr(DataFrameStat, name)  # its docstring too, as PySpark's
    method.__name__, method.__qualname__, method.__module__ = name, f"DataFrameStatFunctions.{name}", _MODULE
    method.__doc__, method.__signature__ = own.__doc__, inspect.signature(own)  # type: ignore[attr-defined]
    return method


for _name in ("approxQuantile", "corr", "cov", "crosstab", "freqItems", "sampleBy"):
    setattr(DataFrameStatFunctions, _name, _delegate(_name))
