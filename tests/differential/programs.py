"""Differential programs: what they are, how hypothesis draws them, how they print.

A ``Program`` is data: a ``Pipeline`` (a ``Source`` and ``Step``s, each an operation's
name and arguments; a binary operation's argument is another Pipeline), an action, and
phases (run, run again after a fault, run again after unpersisting). Functions are named
(``F.<name>``, from ``fns.py``), never closures, so a program is hashable, printable as
Python (``to_code``: the repro of a failure) and runs unchanged on any backend or PySpark.

``programs()`` draws one step at a time and asks the model (``model.evaluate``) what the
dataset is so far -- its key domain, whether its order is promised, whether its
partitions are known, how many records it has -- so every drawn step is one the model can
follow and the data stays small (tens of records). Hypothesis shrinks a failure by
shrinking these draws: fewer steps, fewer records, simpler values.

Families: ``pairs`` (records ``(k, (n, p))``: a key of one domain, an int ``n`` to
compute on, a payload ``p`` carried along), ``batch`` (numpy int64 rows and Arrow tables
whose batch paths -- vectorized ``partition_by``, masked ``filter`` -- run before the rows
become pairs) and ``numeric`` (1-D arrays and lists of numbers: the vectorized
``sum``/``reduce``/``stats``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import strategies as st

from differential import fns as F
from differential.domains import DOMAINS, KEY_DOMAINS, PAYLOAD_DOMAINS, domain
from differential.model import MData, advance, evaluate

__all__ = ["Source", "Step", "Pipeline", "Program", "programs", "to_code", "to_script", "LEVELS", "DISK_LEVELS", "FAULTS",
           "KILL_FAULT"]

from strataflow import StorageLevel  # noqa: E402 - the levels are the engine's own list

#: every valid storage level (``StorageLevel.all()`` but NONE), by name: a program persists at
#: any, a level added to the engine included
LEVELS = [level.name for level in StorageLevel.all() if level.is_valid]
#: the levels whose blocks are files under ``local_dirs`` whatever the memory (a fault can
#: damage them): on disk, never in memory, not in the shared store
DISK_LEVELS = [level.name for level in StorageLevel.all() if level.use_disk and not level.use_memory
               and not level.shared]
#: faults between a program's first run and its second
FILE_FAULTS = ["block_flip", "block_truncate", "block_delete", "shuffle_flip", "shuffle_truncate", "shuffle_delete"]
KILL_FAULT = "kill"
FAULTS = FILE_FAULTS + [KILL_FAULT]
MAX_ROWS = 120  # a step is drawn only while the dataset is smaller


@dataclass(frozen=True)
class Source:
    kind: str  # list | empty | numpy2 | arrow | num_list | num_numpy
    data: tuple  # the records as the model sees them (numpy/Arrow rows as tuples)
    nparts: int
    kdom: str = "int"
    pdom: str = "int"
    spec: tuple = ()  # numpy: (dtype,); arrow: (key type, payload type)

    @property
    def row_kind(self) -> str:
        return {"list": "pair", "empty": "pair", "numpy2": "row2", "arrow": "row3", "pandas": "row3"}.get(self.kind,
                                                                                                       "num")

    def model_rows(self) -> list:
        return list(self.data)

    def numpy(self) -> np.ndarray:
        if self.kind == "numpy2":
            return np.array(self.data, dtype=self.spec[0]).reshape(len(self.data), 2)
        return np.array(self.data, dtype=self.spec[0])

    def pandas(self):
        import pandas as pd

        k, n, p = (list(c) for c in zip(*self.data)) if self.data else ([], [], [])
        kt = _PANDAS_DTYPES[self.spec[0]]
        return pd.DataFrame({"k": pd.Series(k, dtype=kt), "n": pd.Series(n, dtype="int64"),
                             "p": pd.Series(p, dtype="object")})

    def arrow(self):
        import pyarrow as pa

        k, n, p = (list(c) for c in zip(*self.data)) if self.data else ([], [], [])
        return pa.table({"k": pa.array(k, type=_arrow_type(self.spec[0])), "n": pa.array(n, type=pa.int64()),
                         "p": pa.array(p, type=_arrow_type(self.spec[1]))})


@dataclass(frozen=True)
class Step:
    op: str
    args: tuple = ()


@dataclass(frozen=True)
class Pipeline:
    source: Source
    steps: tuple = ()


@dataclass(frozen=True)
class Program:
    pipe: Pipeline
    action: Step
    phases: tuple = ("run",)  # run | unpersist | fault:<name>

    @property
    def family(self) -> str:
        return {"pair": "pairs", "row2": "batch", "row3": "batch"}.get(self.pipe.source.row_kind, "numeric")

    @property
    def fault(self) -> str | None:
        return next((p.split(":", 1)[1] for p in self.phases if p.startswith("fault:")), None)

    def ops(self) -> list[str]:
        out = []

        def walk(p: Pipeline) -> None:
            out.append(f"source:{p.source.kind}")
            for s in p.steps:
                out.append(s.op)
                for a in s.args:
                    if isinstance(a, Pipeline):
                        walk(a)

        walk(self.pipe)
        out.append(f"action:{self.action.op}")
        return out


# -- Arrow ---------------------------------------------------------------------------------------------------
def _arrow_type(name: str):
    import pyarrow as pa

    return {"int64": pa.int64(), "string": pa.string(), "large_string": pa.large_string(), "binary": pa.binary(),
            "date32": pa.date32(), "timestamp": pa.timestamp("us"), "timestamp_utc": pa.timestamp("us", tz="UTC"),
            "decimal": pa.decimal128(12, 2), "float64": pa.float64(), "bool": pa.bool_(), "null": pa.null()}[name]


_ARROW_KEYS = {"int64": "int", "string": "str", "large_string": "str", "binary": "bytes", "date32": "date",
               "timestamp": "datetime", "timestamp_utc": "datetime_tz", "decimal": "decimal"}
_ARROW_PAYLOADS = {"float64": "float_nan", "string": "str", "int64": "int", "null": "none_mixed"}


def _arrow_value(dom: str):
    if dom == "decimal":
        return st.decimals(min_value=-1000, max_value=1000, places=2, allow_nan=False, allow_infinity=False)
    if dom == "datetime":
        return st.datetimes(min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(2100, 1, 1))
    if dom == "none_mixed":
        return st.none()
    return DOMAINS[dom].strategy


# -- drawing ---------------------------------------------------------------------------------------------------
def _opt_n(draw, hi: int = 5):
    return draw(st.one_of(st.none(), st.integers(1, hi)))


def _pool(draw, kdom: str) -> list:
    return draw(st.lists(DOMAINS[kdom].strategy, min_size=1, max_size=6))


def _size(draw, hi: int, lo: int = 0) -> int:
    """A record count: drawn first (hypothesis's lists stay short), shrinking towards ``lo``."""
    return draw(st.integers(lo, hi))


def _pair_rows(draw, keys: list, pdom: str, hi: int = 24, huge: bool = False, lo: int = 0) -> tuple:
    """Records ``(k, (n, p))``: keys and payloads from pools (drawn once: fewer draws, and
    repeated payloads make equal records for ``distinct`` and the set operations)."""
    n = st.integers(-3, 9) if not huge else st.one_of(st.integers(-3, 9), st.integers(-(2 ** 70), 2 ** 70))
    payloads = draw(st.lists(DOMAINS[pdom].strategy, min_size=1, max_size=6))
    size = _size(draw, hi, lo)
    return tuple(draw(st.lists(st.tuples(st.sampled_from(keys), st.tuples(n, st.sampled_from(payloads))),
                               min_size=size, max_size=size)))


def _pairs_source(draw, keys: list | None = None, kdom: str | None = None, lo: int = 0) -> Source:
    if keys is None:
        kdom = draw(st.sampled_from(KEY_DOMAINS))
        keys = _pool(draw, kdom)
    pdom = draw(st.sampled_from(PAYLOAD_DOMAINS))
    if lo == 0 and draw(st.integers(0, 15)) == 0:
        return Source("empty", (), 0, kdom, pdom)
    rows = _pair_rows(draw, keys, pdom, huge=draw(st.integers(0, 5)) == 0, lo=lo)
    nparts = draw(st.integers(1, 6))
    return Source("list", rows, nparts, kdom, pdom)


def _numpy2_source(draw) -> Source:
    keys = draw(st.lists(st.one_of(st.integers(-3, 6), st.sampled_from([2 ** 62, -(2 ** 63), 2 ** 61 - 1, -1, -2])),
                         min_size=1, max_size=5))
    size = _size(draw, 20)
    rows = draw(st.lists(st.tuples(st.sampled_from(keys), st.integers(-5, 9)), min_size=size, max_size=size))
    return Source("numpy2", tuple(rows), draw(st.integers(1, 5)), "int", "none_mixed", ("int64",))


def _arrow_source(draw) -> Source:
    ktype = draw(st.sampled_from(sorted(_ARROW_KEYS)))
    ptype = draw(st.sampled_from(sorted(_ARROW_PAYLOADS)))
    kdom, pdom = _ARROW_KEYS[ktype], _ARROW_PAYLOADS[ptype]
    keys = draw(st.lists(_arrow_value(kdom), min_size=1, max_size=5))
    nullable = draw(st.booleans())
    if nullable:
        keys = keys + [None]
        kdom = "none_mixed"
    size = _size(draw, 20)
    rows = draw(st.lists(st.tuples(st.sampled_from(keys), st.integers(-5, 9), _arrow_value(pdom)), min_size=size,
                         max_size=size))
    src = Source("arrow", tuple(rows), draw(st.integers(1, 5)), kdom, pdom, (ktype, ptype))
    # the model's rows are pyarrow's own Python values (a timestamp back as a datetime in UTC...)
    table = src.arrow()
    converted = tuple(zip(*(c.to_pylist() for c in table.columns))) if len(rows) else ()
    return Source("arrow", converted, src.nparts, kdom, pdom, (ktype, ptype))


_PANDAS_KEYS = {"int64": "int", "str": "str", "datetime": "datetime"}
_PANDAS_DTYPES = {"datetime": "datetime64[ns]", "int64": "int64", "str": "object"}


def _pandas_source(draw) -> Source:
    """A DataFrame (int64, object-str or datetime64 keys): its records are row tuples of
    pandas' own values (a ``Timestamp``, a numpy int), as ``itertuples`` gives them."""
    ktype = draw(st.sampled_from(sorted(_PANDAS_KEYS)))
    kdom = _PANDAS_KEYS[ktype]
    keys = draw(st.lists(_arrow_value(kdom), min_size=1, max_size=5))
    pdom = draw(st.sampled_from(["str", "float_nan", "none_mixed", "date"]))
    size = _size(draw, 20)
    rows = draw(st.lists(st.tuples(st.sampled_from(keys), st.integers(-5, 9), DOMAINS[pdom].strategy),
                         min_size=size, max_size=size))
    src = Source("pandas", tuple(rows), draw(st.integers(1, 5)), kdom, pdom, (ktype,))
    converted = tuple(src.pandas().itertuples(index=False, name=None))
    return Source("pandas", converted, src.nparts, kdom, pdom, (ktype,))


def _numeric_source(draw) -> Source:
    floats = draw(st.booleans())
    nan = floats and draw(st.integers(0, 3)) == 0
    if floats:
        vals = st.one_of(st.integers(-50, 50).map(float), st.sampled_from([-0.0, 0.5, 1.5]))
        if nan:
            vals = st.one_of(vals, st.just(float("nan")))
    else:
        vals = st.integers(-1000, 1000)
    kind = draw(st.sampled_from(["num_numpy", "num_numpy", "num_list", "num_range"]))
    if kind == "num_range":  # ctx.range: computed per partition, never held on the driver
        start, stop, step = draw(st.integers(-30, 30)), draw(st.integers(-30, 60)), draw(st.sampled_from([1, 2, 3, -1, -4]))
        return Source(kind, tuple(range(start, stop, step)), draw(st.integers(1, 5)), "int", "int", (start, stop, step))
    size = _size(draw, 24)
    data = tuple(draw(st.lists(vals, min_size=size, max_size=size)))
    dtype = "float64" if floats else "int64"
    return Source(kind, data, draw(st.integers(1, 5)), "float_nan" if nan else ("float" if floats else "int"),
                  "int", (dtype,))


# steps ------------------------------------------------------------------------------------------------------
_N_FUNCS = ["n_inc", "n_dbl", "n_neg", "n_half", "n_mod3", "n_big"]
_PREDS = ["p_n_even", "p_n_pos", "p_key_odd", "p_all", "p_none"]


def _other_side(draw, m: MData, depth: int) -> Pipeline:
    """The other input of a binary step: keys drawn from this dataset's keys (and new ones
    of its domain), so the two overlap; a step or two of its own."""
    keys = [r[0] for r in m.rows] or None
    dom = domain(m.kdom)
    fresh = dom.has_values and dom.key_safe
    if keys and fresh:
        keys = keys + draw(st.lists(DOMAINS[dom.name].strategy, max_size=2))
    if keys is None:
        if fresh:
            keys = _pool(draw, m.kdom)
        else:
            return Pipeline(Source("empty", (), 0, m.kdom, "int"))
    pdom = draw(st.sampled_from(PAYLOAD_DOMAINS))
    rows = _pair_rows(draw, keys, pdom, hi=8)
    src = Source("list", rows, draw(st.integers(1, 4)), m.kdom, pdom)
    return _steps(draw, Pipeline(src), evaluate(Pipeline(src)), depth + 1, draw(st.integers(0, 2)))


def _draw_step(draw, m: MData, depth: int) -> Step | None:
    """One step valid for ``m`` (None: none drawn)."""
    kd = domain(m.kdom)
    size = len(m.rows)
    if m.kind == "num":
        # squares stay within int64 (a numpy batch wraps around where the model's ints grow)
        square = [Step("num_map")] if all(abs(x) < 2 ** 31 for x in m.rows if x == x) else []
        return draw(st.sampled_from(square + [
            Step("num_filter"), Step("repartition", (draw(st.integers(1, 5)),)),
            Step("coalesce", (draw(st.integers(1, 5)),)), Step("persist", (draw(st.sampled_from(LEVELS)),)),
            Step("sample01", (False, draw(st.sampled_from([0.0, 1.0])), draw(st.integers(0, 99)))),
            Step("cache")]))
    if m.kind in ("row2", "row3"):
        choices = [Step("to_pair")] * 3 + [
            Step("partition_by", (_opt_n(draw), draw(st.sampled_from(["", "", "stable_hash"])))),
            Step("row_filter"), Step("repartition", (draw(st.integers(1, 4)),)),
            Step("coalesce", (draw(st.integers(1, 4)),)), Step("persist", (draw(st.sampled_from(LEVELS)),)),
            Step("sample01", (False, 1.0, draw(st.integers(0, 99))))]
        return draw(st.sampled_from(choices))
    kinds = ["narrow"] * 5 + ["keyed"] * 4 + ["binary"] * (4 if depth < 1 else 0) + ["order"] * 2 + \
        ["persist"] * 2 + ["place"] * 2
    kind = draw(st.sampled_from(kinds))
    if kind == "narrow":
        opts = ["map_key", "map_n", "filter", "flat_map", "flat_map_values", "map_partitions", "nest", "rekey_n",
                "sample01", "zip_self"]
        if domain(m.pdom).key_safe:
            opts.append("swap")
        if m.rows and kd.key_safe:
            opts.append("sample_by_key01")
        if m.parts is not None:
            opts.append("map_partitions_with_index")
        op = draw(st.sampled_from(opts))
        if op == "map_key":
            names = ["k_ident", "k_pair0", "k_const"] + ([kd.coarse] if kd.coarse != "k_ident" else [])
            return Step("map_key", (draw(st.sampled_from(names)),))
        if op == "map_n":
            funcs = [f for f in _N_FUNCS if not (m.int64_n and f == "n_big")]  # numpy int64 would overflow
            return Step("map_n", (draw(st.sampled_from(funcs)), draw(st.sampled_from(["map", "map_values"]))))
        if op == "filter":
            return Step("filter", (draw(st.sampled_from(_PREDS)),))
        if op == "flat_map":
            if size > MAX_ROWS // 2:
                return Step("flat_map", ("fm_even_only",))
            return Step("flat_map", (draw(st.sampled_from(["fm_dup", "fm_even_only", "fm_n_copies"])),))
        if op == "flat_map_values":
            return Step("flat_map_values", (draw(st.sampled_from(["fv_split", "fv_drop_neg"])),))
        if op == "map_partitions":
            return Step("map_partitions", (draw(st.sampled_from(["mp_list", "mp_gen", "mp_filter_iter"])),))
        if op == "map_partitions_with_index":
            return Step("map_partitions_with_index", ("mpi_tag",))
        if op == "sample01":  # the fractions whose draws the model knows: all, or none
            wr = draw(st.booleans())
            return Step("sample01", (wr, 0.0 if wr else draw(st.sampled_from([0.0, 1.0, 1.0])),
                                     draw(st.integers(0, 2 ** 31))))
        if op == "sample_by_key01":
            keys = list({F.canon(r[0]): r[0] for r in m.rows}.values())
            fr = tuple((k, draw(st.sampled_from([0.0, 1.0]))) for k in keys)
            return Step("sample_by_key01", (fr, draw(st.integers(0, 99))))
        if op == "zip_self":
            return Step("zip_self", (draw(st.sampled_from(_N_FUNCS[:5])),))
        return Step(op)
    if kind == "keyed":
        if not kd.key_safe:
            return None
        opts = ["reduce_by_key", "fold_by_key", "aggregate_by_key", "combine_by_key", "group_by_key", "group_by"]
        if m.records_key_safe:
            opts += ["distinct"]
        op = draw(st.sampled_from(opts))
        n = _opt_n(draw)
        if op == "reduce_by_key":
            return Step(op, (draw(st.sampled_from(["v_add_min", "v_max"])), n))
        if op == "combine_by_key":
            return Step(op, (n, draw(st.booleans())))
        return Step(op, (n,))
    if kind == "binary":
        if not kd.key_safe or size > 40:
            return None
        opts = ["union", "union", "join", "left_outer_join", "right_outer_join", "full_outer_join", "cogroup",
                "subtract_by_key"]
        if m.records_key_safe:
            opts += ["subtract", "intersection"]
        if size <= 12:
            opts += ["cartesian"]
        op = draw(st.sampled_from(opts))
        other = _other_side(draw, m, depth)
        if op == "cartesian":
            if len(evaluate(other).rows) > 12:
                return None
            return Step(op, (other,))
        if op == "union":
            return Step(op, (other,))
        n = _opt_n(draw)
        if op == "cogroup":
            third = _other_side(draw, m, depth) if draw(st.integers(0, 3)) == 0 else None
            return Step(op, (other, n, third))
        if op in ("subtract", "intersection") and not evaluate(other).records_key_safe:
            return None
        return Step(op, (other, n))
    if kind == "order":
        opts = ["sort_by", "repartition_and_sort"]
        if kd.key_safe:
            opts += ["sort_by_key", "sort_by_key"]
        if m.ordered:
            opts += ["zip_with_index"]
            if m.parts is not None:
                opts += ["zip_with_unique_id"]
        op = draw(st.sampled_from(opts))
        if op == "sort_by_key":
            kf = draw(st.sampled_from(["", "ck"])) if kd.sortable else "ck"
            return Step(op, (draw(st.booleans()), _opt_n(draw, 4), kf))
        if op == "sort_by":
            return Step(op, (draw(st.booleans()), _opt_n(draw, 4)))
        if op == "repartition_and_sort":
            if not kd.key_safe:
                return None
            kf = draw(st.sampled_from(["", "ck"])) if kd.sortable else "ck"
            return Step(op, (draw(st.integers(1, 4)), draw(st.sampled_from(["stable_hash", "skew"])),
                             draw(st.booleans()), kf))
        return Step(op)
    if kind == "persist":
        op = draw(st.sampled_from(["persist", "persist", "persist", "cache", "checkpoint"]))
        if op == "persist":
            return Step(op, (draw(st.sampled_from(LEVELS)),))
        if op == "checkpoint":
            return Step(op, (draw(st.sampled_from(["local", "reliable"])),))
        return Step(op)
    # place
    op = draw(st.sampled_from(["partition_by", "partition_by", "repartition", "coalesce", "coalesce_shuffle"]))
    if op == "partition_by":
        if not kd.key_safe:
            return None
        return Step(op, (_opt_n(draw), draw(st.sampled_from(["", "", "stable_hash", "skew"]))))
    return Step(op, (draw(st.integers(1, 6)),))


def _steps(draw, pipe: Pipeline, m: MData, depth: int, count: int) -> Pipeline:
    steps = list(pipe.steps)
    for _ in range(count):
        if len(m.rows) > MAX_ROWS:
            break
        st_ = _draw_step(draw, m, depth)
        if st_ is None:
            continue
        steps.append(st_)
        m = advance(m, st_, [1000 + len(steps)])
    if m.kind in ("row2", "row3"):  # a batch family always ends in pairs
        steps.append(Step("to_pair"))
    return Pipeline(pipe.source, tuple(steps))


# actions ------------------------------------------------------------------------------------------------------
def _draw_action(draw, m: MData) -> Step:
    rows = m.rows
    kd = domain(m.kdom)
    if m.kind == "num":
        nan = m.kdom == "float_nan"
        opts = ["collect", "collect", "count", "take", "is_empty", "reduce", "glom"]
        if not nan:
            opts += ["sum", "max", "min", "stats", "take_ordered", "top", "histogram"]
        op = draw(st.sampled_from(opts))
        if op == "reduce":
            names = ["np.add", "operator.add", "np.maximum", "np.minimum", "np.fmax", "add"]
            return Step(op, (draw(st.sampled_from(names)),))
        if op in ("take", "take_ordered", "top"):
            return Step(op, (draw(st.integers(0, 6)),))
        if op == "histogram":
            return Step(op, (tuple(sorted(draw(st.lists(st.integers(-60, 60), min_size=2, max_size=5, unique=True)))),))
        return Step(op)
    small = all(abs(r[1][0]) < 2 ** 40 for r in rows)
    opts = ["collect"] * 6 + ["glom"] * 2 + ["count", "is_empty", "sum_n", "reduce", "tree_reduce", "fold",
                                              "aggregate", "tree_aggregate", "count_by_key", "reduce_by_key_locally",
                                              "collect_as_map", "lookup", "take", "first", "top", "take_ordered",
                                              "max", "min", "histogram_n", "count_approx_distinct", "sample",
                                              "take_sample", "random_split"]
    if small:
        opts += ["mean_n", "stats_n"]
    if m.records_key_safe:
        opts += ["count_by_value"]
    if kd.sortable and kd.key_safe:
        opts += ["take_ordered_keys", "top_keys"]
    if not kd.key_safe:
        opts = [o for o in opts if o not in ("count_by_key", "reduce_by_key_locally", "collect_as_map", "lookup",
                                              "count_approx_distinct")]
    op = draw(st.sampled_from(opts))
    if op in ("reduce", "reduce_by_key_locally"):
        return Step(op, (draw(st.sampled_from(["v_add_min", "v_max"])),))
    if op == "tree_reduce":
        return Step(op, ("v_add_min",))
    if op == "tree_aggregate":
        return Step(op, (draw(st.integers(1, 3)),))
    if op in ("take", "top", "take_ordered", "take_ordered_keys", "top_keys"):
        return Step(op, (draw(st.integers(0, 8)),))
    if op == "lookup":
        keys = [r[0] for r in rows] + (draw(st.lists(kd.strategy, max_size=1)) if kd.has_values else [])
        if not keys:
            return Step("collect")
        return Step(op, (draw(st.sampled_from(keys)),))
    if op == "histogram_n":
        return Step(op, (tuple(sorted(draw(st.lists(st.integers(-10, 20), min_size=2, max_size=5, unique=True)))),))
    if op == "sample":
        return Step(op, (draw(st.booleans()), draw(st.sampled_from([0.1, 0.5, 0.9, 1.5])), draw(st.integers(0, 999))))
    if op == "take_sample":
        return Step(op, (draw(st.booleans()), draw(st.integers(0, 10)), draw(st.integers(0, 999))))
    if op == "random_split":
        return Step(op, (tuple(draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 0.0]), min_size=1, max_size=3))
                               + [1.0]), draw(st.integers(0, 999))))
    return Step(op)


# programs -------------------------------------------------------------------------------------------------------
def _has_shuffle(p: Pipeline) -> bool:
    wide = {"partition_by", "repartition", "coalesce_shuffle", "reduce_by_key", "fold_by_key", "aggregate_by_key",
            "combine_by_key", "group_by_key", "group_by", "distinct", "cogroup", "join", "left_outer_join",
            "right_outer_join", "full_outer_join", "subtract_by_key", "subtract", "intersection", "sort_by_key",
            "sort_by", "repartition_and_sort"}
    return any(s.op in wide for s in p.steps)


@st.composite
def programs(draw, fault: str | None = None) -> Program:
    """A program (70 % pairs, 15 % batch, 15 % numeric); with ``fault``, a pairs program
    that runs, suffers ``fault`` (``FAULTS``) and runs again."""
    family = draw(st.sampled_from(["pairs"] * 14 + ["batch"] * 3 + ["numeric"] * 3)) if fault is None else "pairs"
    if family == "pairs":
        src = _pairs_source(draw, lo=4 if fault is not None else 0)  # a fault needs records to strike
    elif family == "batch":
        src = draw(st.sampled_from([_numpy2_source, _arrow_source, _pandas_source]))(draw)
    else:
        src = _numeric_source(draw)
    pipe = Pipeline(src)
    count = draw(st.integers(0, 6))
    pipe = _steps(draw, pipe, evaluate(pipe), 0, count)
    if fault is not None:
        pipe = _with_fault(draw, pipe, fault)
    m = evaluate(pipe)
    action = _draw_action(draw, m)
    phases = ["run"]
    cached = any(s.op in ("persist", "cache", "checkpoint") for s in pipe.steps)
    if fault is not None:
        phases += [f"fault:{fault}", "run"]
    elif cached and draw(st.booleans()):
        phases += ["run"]
    if cached and draw(st.integers(0, 2)) == 0:
        phases += ["unpersist", "run"]
    return Program(pipe, action, tuple(phases))


def _with_fault(draw, pipe: Pipeline, fault: str) -> Pipeline:
    """The steps that make ``fault`` bite: a disk level persisted after a shuffle (a block
    fault), a shuffle (a shuffle fault), an executor kill in the reduce stage of a shuffle."""
    steps = list(pipe.steps)
    if not _has_shuffle(pipe) or draw(st.booleans()):
        steps.append(draw(st.sampled_from([Step("reduce_by_key", ("v_add_min", _opt_n(draw))),
                                           Step("group_by_key", (_opt_n(draw),)),
                                           Step("partition_by", (_opt_n(draw), ""))])))
    if fault.startswith("block"):
        steps.append(Step("persist", (draw(st.sampled_from(DISK_LEVELS)),)))
        steps.append(Step("map_n", ("n_inc", "map_values")))
    elif fault == KILL_FAULT:
        steps.append(Step("kill"))
        steps.append(Step("group_by_key", (_opt_n(draw),)))
    return Pipeline(pipe.source, tuple(steps))


# -- as Python ----------------------------------------------------------------------------------------------------
def render(x: Any) -> str:
    """Python source that evaluates to ``x`` (with ``import datetime, decimal, fractions,
    numpy as np`` and ``from differential.fns import *``)."""
    if isinstance(x, enum.Enum):
        return f"{type(x).__name__}.{x.name}"
    if isinstance(x, F.Point):
        return f"Point({x.x!r}, {x.label!r})"
    if isinstance(x, np.generic):
        return f"np.{type(x).__name__}({x.item()!r})"
    if isinstance(x, float):
        if math.isnan(x):
            return "float('nan')"
        if math.isinf(x):
            return "float('inf')" if x > 0 else "float('-inf')"
        return repr(x)
    if isinstance(x, (dt.datetime, dt.date, dt.timedelta, dt.timezone)):
        return "datetime." + repr(x).replace("datetime.", "")
    if isinstance(x, decimal.Decimal):
        return f"decimal.Decimal({str(x)!r})"
    if isinstance(x, Fraction):
        return f"fractions.Fraction({x.numerator}, {x.denominator})"
    if isinstance(x, tuple):
        inner = ", ".join(render(i) for i in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if isinstance(x, list):
        return "[" + ", ".join(render(i) for i in x) + "]"
    if isinstance(x, frozenset):
        return "frozenset({" + ", ".join(sorted(render(i) for i in x)) + "})" if x else "frozenset()"
    return repr(x)


_ENGINE_CALLS = {
    "map_key": "map(functools.partial(F.r_map_key, F.{0}))",
    "filter": "filter(F.{0})", "flat_map": "flat_map(F.{0})", "flat_map_values": "flat_map_values(F.{0})",
    "map_partitions": "map_partitions(F.{0})", "map_partitions_with_index": "map_partitions_with_index(F.{0})",
    "swap": "map(F.r_swap)", "nest": "map(F.r_nest)", "rekey_n": "map(F.r_rekey_n)",
    "row_filter": "filter(F.row_n_even)", "num_filter": "filter(F.num_gt1)", "num_map": "map(F.num_sq)",
    "cache": "cache()", "coalesce": "coalesce({0})", "coalesce_shuffle": "coalesce({0}, shuffle=True)",
    "repartition": "repartition({0})", "distinct": "distinct({0})",
}


def _code_pipe(p: Pipeline, var: str, lines: list[str], counter: list[int]) -> None:
    s = p.source
    if s.kind == "empty":
        lines.append(f"{var} = ctx.empty_dataset()")
    elif s.kind in ("list", "num_list"):
        lines.append(f"{var} = ctx.parallelize({render(list(s.data))}, {s.nparts})")
    elif s.kind in ("numpy2", "num_numpy"):
        shape = ".reshape(-1, 2)" if s.kind == "numpy2" else ""
        lines.append(f"{var} = ctx.from_numpy(np.array({render(list(s.data))}, dtype={s.spec[0]!r}){shape}, "
                     f"{s.nparts})")
    elif s.kind == "num_range":
        lines.append(f"{var} = ctx.range({s.spec[0]}, {s.spec[1]}, {s.spec[2]}, num_partitions={s.nparts})")
    elif s.kind == "pandas":
        k, n, pp = (list(c) for c in zip(*s.data)) if s.data else ([], [], [])
        lines.append(f"{var} = ctx.from_pandas(pd.DataFrame({{'k': pd.Series({render(k)}, dtype={_PANDAS_DTYPES[s.spec[0]]!r}), "
                     f"'n': pd.Series({render(n)}, dtype='int64'), 'p': pd.Series({render(pp)}, dtype=object)}}), "
                     f"{s.nparts})")
    elif s.kind == "arrow":
        k, n, pp = (list(c) for c in zip(*s.data)) if s.data else ([], [], [])
        lines.append(f"{var} = ctx.from_arrow(pa.table({{'k': pa.array({render(k)}, type=pa_type({s.spec[0]!r})), "
                     f"'n': pa.array({render(n)}, type=pa.int64()), 'p': pa.array({render(pp)}, "
                     f"type=pa_type({s.spec[1]!r}))}}), {s.nparts})")
    for st_ in p.steps:
        args = []
        for a in st_.args:
            if isinstance(a, Pipeline):
                counter[0] += 1
                sub = f"other{counter[0]}"
                _code_pipe(a, sub, lines, counter)
                args.append(sub)
            else:
                args.append(a)
        if st_.op == "to_pair":
            code = f"map(F.{'row_to_pair' if s.kind == 'numpy2' else 'row3_to_pair'})"
        elif st_.op == "zip_self":
            code = f"zip({var}.map_values(functools.partial(F.v_map_n, F.{args[0]}))).map(F.zip_to_pair)"
        else:
            code = _step_code(st_.op, args)
        lines.append(f"{var}.{code}" if st_.op == "checkpoint" else f"{var} = {var}.{code}")


def _step_code(op: str, a: list) -> str:
    r = render
    if op in _ENGINE_CALLS:
        return _ENGINE_CALLS[op].format(*[x if isinstance(x, str) else r(x) for x in a])
    if op == "map_n":
        return (f"map(functools.partial(F.r_map_n, F.{a[0]}))" if a[1] == "map"
                else f"map_values(functools.partial(F.v_map_n, F.{a[0]}))")
    if op == "to_pair":
        return "map(F.row_to_pair)  # (numpy rows; Arrow rows: F.row3_to_pair)"
    if op == "sample01":
        return f"sample({a[0]}, {a[1]}, seed={a[2]})"
    if op == "sample_by_key01":
        return f"sample_by_key(False, dict({r(a[0])}), seed={a[1]})"
    if op == "persist":
        return f"persist(StorageLevel.{a[0]})"
    if op == "checkpoint":
        return "local_checkpoint()" if a[0] == "local" else "checkpoint()  # after ctx.set_checkpoint_dir(...)"
    if op == "kill":
        return "map(F.KillOnce(marker, os.getpid()))  # SIGKILLs the first executor that runs it"
    if op == "partition_by":
        return f"partition_by({a[0]}{', F.' + a[1] if a[1] else ''})"
    if op == "reduce_by_key":
        return f"reduce_by_key(F.{a[0]}, {a[1]})"
    if op == "fold_by_key":
        return f"map_values(F.to_bag).fold_by_key((0, ()), F.v_add_bag, {a[0]})"
    if op == "aggregate_by_key":
        return f"aggregate_by_key((0, 0, ()), F.agg_seq, F.agg_comb, {a[0]}).map_values(F.agg_to_value)"
    if op == "combine_by_key":
        return (f"combine_by_key(F.cb_create, F.cb_merge_value, F.cb_merge_combiners, {a[0]}, "
                f"map_side_combine={a[1]}).map_values(F.group_merge)")
    if op == "group_by_key":
        return f"group_by_key({a[0]}).map_values(F.group_merge)"
    if op == "group_by":
        return f"group_by(F.first, {a[0]}).map_values(F.group_records)"
    if op == "cogroup":
        third = f", {a[2]}" if a[2] is not None else ""
        return f"cogroup({a[0]}{third}, num_partitions={a[1]}).map_values(F.cogroup_merge)"
    if op in ("join", "left_outer_join", "right_outer_join", "full_outer_join"):
        return f"{op}({a[0]}, {a[1]}).map_values(F.join_merge)"
    if op in ("subtract_by_key", "subtract", "intersection"):
        return f"{op}({a[0]}, {a[1]})"
    if op == "union":
        return f"union({a[0]})"
    if op == "cartesian":
        return f"cartesian({a[0]}).map(F.cart_to_pair)"
    if op == "zip_self":
        return f"zip(ds.map_values(functools.partial(F.v_map_n, F.{a[0]}))).map(F.zip_to_pair)  # ds: this dataset"
    if op == "zip_with_index":
        return "zip_with_index().map(F.index_to_pair)"
    if op == "zip_with_unique_id":
        return "zip_with_unique_id().map(F.index_to_pair)"
    if op == "sort_by_key":
        return f"sort_by_key({a[0]}, {a[1]}{', key_func=F.ck' if a[2] == 'ck' else ''})"
    if op == "sort_by":
        return f"sort_by(F.record_ck, {a[0]}, {a[1]})"
    if op == "repartition_and_sort":
        return (f"repartition_and_sort_within_partitions({a[0]}, F.{a[1]}, {a[2]}"
                f"{', key_func=F.ck' if a[3] == 'ck' else ''})")
    return f"{op}({', '.join(r(x) for x in a)})"


def _action_code(a: Step, kind: str) -> str:
    op, x = a.op, a.args
    if kind == "num":
        if op == "reduce":
            return f"reduce({x[0] if '.' in x[0] else 'F.' + x[0]})"
        return f"{op}({', '.join(render(v) for v in x)})"
    table = {
        "sum_n": "map(F.n_of).sum()", "mean_n": "map(F.n_of).mean()", "stats_n": "map(F.n_of).stats()",
        "fold": "values().map(F.to_bag).fold((0, ()), F.v_add_bag)",
        "aggregate": "values().aggregate((0, 0, ()), F.agg_seq, F.agg_comb)",
        "top": f"top({x[0] if x else ''}, key=F.record_ck)", "take_ordered": f"take_ordered({x[0] if x else ''}, "
                                                                         f"key=F.record_ck)",
        "max": "max(key=F.record_ck)", "min": "min(key=F.record_ck)",
        "take_ordered_keys": f"keys().take_ordered({x[0] if x else ''})", "top_keys": f"keys().top({x[0] if x else ''})",
        "count_approx_distinct": "keys().count_approx_distinct()",
    }
    if op in table:
        return table[op]
    if op in ("reduce", "tree_reduce"):
        return f"values().{op}(F.{x[0]})"
    if op == "tree_aggregate":
        return f"values().tree_aggregate((0, 0, ()), F.agg_seq, F.agg_comb, depth={x[0]})"
    if op == "reduce_by_key_locally":
        return f"reduce_by_key_locally(F.{x[0]})"
    if op == "histogram_n":
        return f"map(F.n_of).histogram({render(list(x[0]))})"
    if op == "sample":
        return f"sample({x[0]}, {x[1]}, seed={x[2]}).collect()  # twice"
    if op == "take_sample":
        return f"take_sample({x[0]}, {x[1]}, seed={x[2]})  # twice"
    if op == "random_split":
        return f"random_split({render(list(x[0]))}, seed={x[1]})  # each split collected, twice"
    return f"{op}({', '.join(render(v) for v in x)})"


PREAMBLE = """import datetime, decimal, fractions, functools, os, sys
from datetime import timedelta, timezone
import numpy as np, pandas as pd, pyarrow as pa
sys.path.insert(0, "tests")  # run from the repository's root
from differential import fns as F
from differential.fns import Color, Level, Point
from differential.programs import _arrow_type as pa_type
from strataflow import Context, StorageLevel
ctx = Context(backend={backend!r}, parallelism=2, progress=False)
ctx.set_checkpoint_dir("/tmp/differential-checkpoints")
marker = "/tmp/differential-kill-marker"
"""


def to_script(p: Program, backend: str) -> str:
    """``to_code`` with what it needs to run as it is (``python -`` from the repository)."""
    return PREAMBLE.format(backend=backend) + to_code(p) + "\nprint(result)\n"


def to_code(p: Program) -> str:
    """The program as a script against a Context ``ctx`` (the repro of a failure)."""
    lines: list[str] = []
    _code_pipe(p.pipe, "ds", lines, [0])
    kind = evaluate(p.pipe).kind
    lines.append(f"result = ds.{_action_code(p.action, kind)}")
    if len(p.phases) > 1:
        lines.append(f"# phases: {', '.join(p.phases)} (each run is the action again on the same datasets)")
    return "\n".join(lines)
