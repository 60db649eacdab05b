"""The reference: a plain-Python interpreter of a differential program (lists, dicts,
``sorted``), with what the API promises about order and partitions and nothing more.

``evaluate(pipeline)`` gives an ``MData``: the records, and what is known of them --
``ordered`` (the API defines ``collect``'s order: a source's slices, narrow operations,
``union``, ``coalesce`` without a shuffle, a sort), ``parts`` (the exact records of each
partition: ``parallelize``'s documented slices, then narrow operations, ``union``, and a
``partition_by`` through a ``partition_func`` the model can evaluate; None when the API
leaves placement open: a hash partitioner of ``portable_hash``, ``repartition``, a range
partitioner cut from a sample), ``nparts`` (the partition count the docs promise: a
shuffle without ``num_partitions`` keeps its input's, a cogroup follows Spark's
``default_partitioner``) and ``partitioner`` (what ``map_values``/``filter`` keep and
``map`` drops, which decides whether a later shuffle is skipped and how many partitions a
join has). A program step that the model cannot follow (``zip_with_index`` of records in
no promised order) is never generated: ``programs.py`` asks the model's ``MData`` first.

``expect(action, mdata)`` gives an ``Expect``: the answer and how to compare it (``seq``:
exactly, in order; ``bag``: as multisets; ``value``; ``dict``; ``approx``; ``error``; or
``check``, a property of several engine answers -- the sampling actions, whose draws the
API promises only as deterministic per seed and subsets of the records).
"""

from __future__ import annotations

import copy
import functools
import heapq
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from differential import fns as F
from differential.domains import domain, pair_name

__all__ = ["MData", "Expect", "evaluate", "expect", "ModelError"]


class ModelError(Exception):
    """The model cannot follow a step (a generator bug, never an engine one)."""


@dataclass
class MData:
    """A dataset as the model knows it. ``items`` are ``(block, record)`` in the order
    ``collect`` gives them, up to a permutation of the records within each block: a
    record of its own block is at a promised place, a block of many is a run whose order
    the API leaves open (a shuffle's output is one block; a sort's ties among records of
    one input block are one block). ``parts`` are the partitions' items, when known."""

    items: list
    parts: list | None  # list of item lists, or None: placement not promised
    nparts: int | None
    partitioner: tuple | None = None  # ("hash", n, func name or ""), ("range", uid), None
    kind: str = "pair"  # pair | num | row2 | row3
    kdom: str = "int"
    pdom: str = "int"
    #: the ``n`` of the records are numpy int64 (rows of a numpy batch made pairs): the model
    #: holds Python ints, so steps that leave int64's range (``F.n_big``) are not drawn
    int64_n: bool = False

    @property
    def rows(self) -> list:
        return [r for _, r in self.items]

    @property
    def ordered(self) -> bool:
        """Every record at a promised place (``zip_with_index`` may follow)."""
        return len({b for b, _ in self.items}) == len(self.items)

    @property
    def hash_keyed(self) -> bool:
        return self.partitioner is not None and self.partitioner[0] == "hash"

    @property
    def records_key_safe(self) -> bool:
        return domain(self.kdom).key_safe and domain(self.pdom).key_safe

    def derive(self, **kw) -> "MData":
        return replace(self, **kw)


@dataclass
class Expect:
    kind: str  # blocks | value | dict | approx | stats | error | check | glom
    value: Any = None
    check: Callable | None = None
    extra: dict = field(default_factory=dict)


# -- helpers --------------------------------------------------------------------------------------------
def _renumber(items: list) -> list:
    """Blocks renumbered 0, 1, ... in order (a block's key is any hashable; a key seen
    again later, apart, is a new block: blocks are contiguous)."""
    out, last, n = [], object(), -1
    for b, r in items:
        if b != last:
            n += 1
            last = b
        out.append((n, r))
    return out


def _one_block(rows: list) -> list:
    return [(0, r) for r in rows]


def _opaque(pdom: str) -> str:
    return "opaque" if domain(pdom).key_safe else "opaque_nan"


def _per_record(m: MData, g: Callable[[Any], list], keeps_partitioner: bool, **kw) -> MData:
    """A narrow step that maps each record to a list of records (in order)."""
    sizes = Counter(b for b, _ in m.items)

    def run(items):  # the outputs of a record at a promised place are at promised places
        return [((b, k) if sizes[b] == 1 else (b, -1), y) for b, r in items for k, y in enumerate(g(r))]

    parts = None if m.parts is None else [run(p) for p in m.parts]
    items = [it for p in parts for it in p] if parts is not None else run(m.items)
    return m.derive(items=items, parts=parts, partitioner=m.partitioner if keeps_partitioner else None, **kw)


def _placed(m: MData, n: int, func: Callable, order_key: Callable | None = None, ascending: bool = True) -> list:
    """Items to partition ``func(key) % n``, each partition in arrival order (the input's
    order restricted to it), stably sorted by ``order_key`` when given; blocks refined."""
    parts = [[] for _ in range(n)]
    for b, r in m.items:
        j = func(r[0]) % n
        parts[j].append(((j, b), r))
    if order_key is not None:
        parts = [[((j_b, F.canon(order_key(r[0]))), r) for j_b, r in
                  sorted(p, key=lambda it: order_key(it[1][0]), reverse=not ascending)] for p in parts]
    flat = _renumber([it for p in parts for it in p])
    out, i = [], 0
    for p in parts:
        out.append(flat[i:i + len(p)])
        i += len(p)
    return out


def _shuffled(m: MData, rows: list, nparts: int | None, partitioner, **kw) -> MData:
    return m.derive(items=_one_block(rows), parts=None, nparts=nparts, partitioner=partitioner, **kw)


def _num_out(m: MData, n: int | None) -> int | None:
    return n if n is not None else m.nparts


def _group(rows: list) -> dict:
    """Key -> values, in first-seen key order (equal keys are one key, as a dict's)."""
    out: dict = {}
    for k, v in rows:
        out.setdefault(k, []).append(v)
    return out


def _default_partitioner(ms: list[MData], n: int | None) -> tuple:
    """Spark's default_partitioner (keyed.py's cogroup): the partitioner a cogroup gets."""
    if n is not None:
        return ("hash", n, "")
    counts = [x.nparts for x in ms]
    if any(c is None for c in counts):
        return ("hash", None, "")
    largest = max(counts)
    partitioned = [x for x in ms if x.partitioner is not None and x.nparts]
    if partitioned:
        best = max(partitioned, key=lambda x: x.nparts)  # the first of the largest
        within = math.log10(largest) - math.log10(best.nparts) < 1
        if within or largest <= best.nparts:
            return best.partitioner if best.partitioner[0] == "hash" else ("range-kept", best.partitioner)
    return ("hash", largest, "")


def _partitioner_count(p: tuple | None) -> int | None:
    if p is None or p[0] != "hash":
        return None
    return p[1]


# -- sources --------------------------------------------------------------------------------------------
def _slices(rows: list, n: int) -> list:
    return [rows[(i * len(rows)) // n:((i + 1) * len(rows)) // n] for i in range(n)]


def source(src) -> MData:
    rows = [tuple(r) if isinstance(r, list) else r for r in src.model_rows()]
    items = list(enumerate(rows))
    if src.kind == "empty":
        return MData([], [], 0, None, "pair", src.kdom, src.pdom)
    return MData(items, _slices(items, src.nparts), src.nparts, None, src.row_kind, src.kdom, src.pdom)


# -- steps ----------------------------------------------------------------------------------------------
def step(m: MData, st, uid: list) -> MData:
    fn = _STEPS.get(st.op)
    if fn is None:
        raise ModelError(f"no model for step {st.op}")
    return fn(m, *st.args, uid=uid)


def key_fn_domain(kdom: str, fname: str) -> str:
    d = domain(kdom)
    if fname == "k_ident":
        return kdom
    if fname == "k_pair0":
        return pair_name(kdom, "int")
    if fname == "k_const":
        return "int"
    if fname == d.coarse:
        return d.coarse_to or kdom
    raise ModelError(f"key function {fname} is not for keys of {kdom}")


def _s_map_key(m, fname, uid):
    f = getattr(F, fname)
    return _per_record(m, lambda r: [F.r_map_key(f, r)], False, kdom=key_fn_domain(m.kdom, fname))


def _s_map_n(m, gname, via, uid):
    g = getattr(F, gname)
    return _per_record(m, lambda r: [F.r_map_n(g, r)], via == "map_values")


def _s_filter(m, pname, uid):
    p = getattr(F, pname)
    return _per_record(m, lambda r: [r] if p(r) else [], True)


def _s_flat_map(m, fname, uid):
    return _per_record(m, lambda r: list(getattr(F, fname)(r)), False)


def _s_flat_map_values(m, fname, uid):
    f = getattr(F, fname)
    return _per_record(m, lambda r: [(r[0], w) for w in f(r[1])], True)


def _s_map_partitions(m, fname, uid):
    f = getattr(F, fname)  # partition-agnostic: record by record
    return _per_record(m, lambda r: list(f(iter([r]))), False)


def _s_map_partitions_with_index(m, fname, uid):
    if m.parts is None:
        raise ModelError("map_partitions_with_index needs known partitions")
    f = getattr(F, fname)
    parts = [[(b, y) for b, r in p for y in f(i, iter([r]))] for i, p in enumerate(m.parts)]
    return m.derive(parts=parts, items=[it for p in parts for it in p], partitioner=None)


def _s_swap(m, uid):
    return _per_record(m, lambda r: [F.r_swap(r)], False, kdom=m.pdom, pdom=m.kdom)


def _s_nest(m, uid):
    return _per_record(m, lambda r: [F.r_nest(r)], False, kdom=pair_name(m.kdom, "int"))


def _s_rekey_n(m, uid):
    return _per_record(m, lambda r: [F.r_rekey_n(r)], False, kdom="int")


def _s_to_pair(m, uid):
    f = F.row_to_pair if m.kind == "row2" else F.row3_to_pair
    return _per_record(m, lambda r: [f(r)], False, kind="pair", int64_n=m.kind == "row2")


def _s_row_filter(m, uid):
    return _per_record(m, lambda r: [r] if F.row_n_even(r) else [], True)


def _s_num_filter(m, uid):
    return _per_record(m, lambda r: [r] if F.num_gt1(r) else [], True)


def _s_num_map(m, uid):
    return _per_record(m, lambda r: [F.num_sq(r)], False)


def _s_sample01(m, with_replacement, fraction, seed, uid):
    if fraction not in (0.0, 1.0) or (with_replacement and fraction != 0.0):
        raise ModelError("sample01: only fractions the model knows exactly")
    return _per_record(m, lambda r: [r] if fraction == 1.0 else [], True)


def _s_sample_by_key01(m, fractions, seed, uid):
    table = dict(fractions)
    return _per_record(m, lambda r: [r] if table[r[0]] == 1.0 else [], True)


def _identity(m, *args, uid):
    return m


def _s_coalesce(m, n, uid):
    k = None if m.nparts is None else max(1, min(n, m.nparts))
    parts = None
    if m.parts is not None:
        N = len(m.parts)
        parts = [[it for s in range((i * N) // k, ((i + 1) * N) // k) for it in m.parts[s]] for i in range(k)]
    return m.derive(parts=parts, nparts=k, partitioner=None)


def _s_repartition(m, n, uid):
    return _shuffled(m, m.rows, n, None)


def _s_partition_by(m, n, func, uid):
    count = _num_out(m, n)
    part = ("hash", count, func)
    if m.partitioner == part:
        return m
    if func and count is not None:
        parts = _placed(m, count, getattr(F, func))
        return m.derive(items=[it for p in parts for it in p], parts=parts, nparts=count, partitioner=part)
    return _shuffled(m, m.rows, count, part)


def _reduce_rows(rows: list, f: Callable) -> list:
    return [(k, functools.reduce(f, vs)) for k, vs in _group(rows).items()]


def _keyed(m, n, rows, **kw):
    count = _num_out(m, n)
    return _shuffled(m, rows, count, ("hash", count, ""), **kw)


def _s_reduce_by_key(m, fname, n, uid):
    return _keyed(m, n, _reduce_rows(m.rows, getattr(F, fname)))


def _s_fold_by_key(m, n, uid):
    rows = [(k, functools.reduce(F.v_add_bag, [F.to_bag(v) for v in vs], (0, ())))
            for k, vs in _group(m.rows).items()]
    return _keyed(m, n, rows, pdom=_opaque(m.pdom))


def _s_aggregate_by_key(m, n, uid):
    rows = [(k, F.agg_to_value(functools.reduce(F.agg_seq, vs, (0, 0, ())))) for k, vs in _group(m.rows).items()]
    return _keyed(m, n, rows, pdom=_opaque(m.pdom))


def _s_combine_by_key(m, n, map_side_combine, uid):
    rows = [(k, F.group_merge(vs)) for k, vs in _group(m.rows).items()]
    return _keyed(m, n, rows, pdom=_opaque(m.pdom))


def _s_group_by_key(m, n, uid):
    return _s_combine_by_key(m, n, False, uid)


def _s_group_by(m, n, uid):
    groups: dict = {}
    for r in m.rows:
        groups.setdefault(r[0], []).append(r)
    return _keyed(m, n, [(k, F.group_records(rs)) for k, rs in groups.items()], pdom=_opaque(m.pdom))


def _s_distinct(m, n, uid):
    seen: dict = {}
    for r in m.rows:
        seen.setdefault(r, None)
    return _shuffled(m, list(seen), _num_out(m, n), None)


def _cogroup_rows(ms: list[MData]) -> list:
    keys: dict = {}
    for i, x in enumerate(ms):
        for k, v in x.rows:
            keys.setdefault(k, tuple([] for _ in ms))[i].append(v)
    return list(keys.items())


def _s_cogroup(m, other, n, third, uid):
    ms = [m, evaluate(other, uid)] + ([evaluate(third, uid)] if third is not None else [])
    part = _default_partitioner(ms, n)
    rows = [(k, F.cogroup_merge(g)) for k, g in _cogroup_rows(ms)]
    return _shuffled(m, rows, _partitioner_count(part), part if part[0] == "hash" else None,
                     pdom=_opaque(m.pdom))


def _join(m, other, n, uid, left_outer: bool, right_outer: bool):
    o = evaluate(other, uid)
    part = _default_partitioner([m, o], n)
    rows = []
    for k, (vs, ws) in _cogroup_rows([m, o]):
        lv = vs or ([None] if right_outer else [])
        rw = ws or ([None] if left_outer else [])
        rows.extend((k, F.join_merge((v, w))) for v in lv for w in rw)
    return _shuffled(m, rows, _partitioner_count(part), part if part[0] == "hash" else None,
                     pdom=_opaque(pair_name(m.pdom, o.pdom)))


def _s_join(m, other, n, uid):
    return _join(m, other, n, uid, False, False)


def _s_left_outer_join(m, other, n, uid):
    return _join(m, other, n, uid, True, False)


def _s_right_outer_join(m, other, n, uid):
    return _join(m, other, n, uid, False, True)


def _s_full_outer_join(m, other, n, uid):
    return _join(m, other, n, uid, True, True)


def _s_subtract_by_key(m, other, n, uid):
    o = evaluate(other, uid)
    part = _default_partitioner([m, o], n)
    theirs = {k for k, _ in o.rows}
    rows = [r for r in m.rows if r[0] not in theirs]
    return _shuffled(m, rows, _partitioner_count(part), part if part[0] == "hash" else None)


def _set_count(m, o, n):
    if n is not None:
        return n
    if m.nparts is None or o.nparts is None:
        return None
    return max(m.nparts, o.nparts)


def _s_subtract(m, other, n, uid):
    o = evaluate(other, uid)
    theirs = set(o.rows)
    return _shuffled(m, [r for r in m.rows if r not in theirs], _set_count(m, o, n), None)


def _s_intersection(m, other, n, uid):
    o = evaluate(other, uid)
    theirs = set(o.rows)
    seen: dict = {}
    for r in m.rows:
        if r in theirs:
            seen.setdefault(r, None)
    return _shuffled(m, list(seen), _set_count(m, o, n), None)


def _mix(a: str, b: str) -> str:
    """Keys of two domains together: never sorted natively."""
    return "none_mixed" if domain(a).key_safe and domain(b).key_safe else "opaque_nan"


def _s_union(m, other, uid):
    o = evaluate(other, uid)
    shift = 1 + max((b for b, _ in m.items), default=-1)
    o_items = [(b + shift, r) for b, r in o.items]
    parts = None
    if m.parts is not None and o.parts is not None:
        parts = m.parts + [[(b + shift, r) for b, r in p] for p in o.parts]
    nparts = m.nparts + o.nparts if m.nparts is not None and o.nparts is not None else None
    return m.derive(items=m.items + o_items, parts=parts, nparts=nparts, partitioner=None,
                    kdom=m.kdom if m.kdom == o.kdom else _mix(m.kdom, o.kdom),
                    pdom=m.pdom if m.pdom == o.pdom else _opaque(_mix(m.pdom, o.pdom)))


def _s_cartesian(m, other, uid):
    o = evaluate(other, uid)
    kdom, pdom = pair_name(m.kdom, o.kdom), _opaque(pair_name(m.pdom, o.pdom))
    nparts = m.nparts * o.nparts if m.nparts is not None and o.nparts is not None else None
    if m.parts is None or o.parts is None:
        rows = [F.cart_to_pair((x, y)) for x in m.rows for y in o.rows]
        return _shuffled(m, rows, nparts, None, kdom=kdom, pdom=pdom)
    exact = m.ordered and o.ordered
    parts = [[((i, j, bx) + ((by,) if exact else ()), F.cart_to_pair((x, y))) for bx, x in a for by, y in b]
             for i, a in enumerate(m.parts) for j, b in enumerate(o.parts)]
    flat = _renumber([it for p in parts for it in p])
    out, k = [], 0
    for p in parts:
        out.append(flat[k:k + len(p)])
        k += len(p)
    return m.derive(items=flat, parts=out, nparts=nparts, partitioner=None, kdom=kdom, pdom=pdom)


def _s_zip_self(m, gname, uid):
    g = getattr(F, gname)
    return _per_record(m, lambda r: [F.zip_to_pair((r, F.r_map_n(g, r)))], False)


def _s_zip_with_index(m, uid):
    if not m.ordered:
        raise ModelError("zip_with_index of records in no promised order")
    items = [(b, F.index_to_pair((r, i))) for i, (b, r) in enumerate(m.items)]
    parts = None if m.parts is None else _cut_like(items, m.parts)
    return m.derive(items=items, parts=parts, partitioner=None, pdom=_opaque(pair_name("int", m.pdom)))


def _s_zip_with_unique_id(m, uid):
    if m.parts is None or not m.ordered:
        raise ModelError("zip_with_unique_id needs the partitions and their order")
    n = len(m.parts)
    parts = [[(b, F.index_to_pair((r, j * n + i))) for j, (b, r) in enumerate(p)] for i, p in enumerate(m.parts)]
    return m.derive(items=[it for p in parts for it in p], parts=parts, partitioner=None,
                    pdom=_opaque(pair_name("int", m.pdom)))


def _sort_key(key_func: str) -> Callable:
    return F.ck if key_func == "ck" else (lambda k: k)


def _sorted_items(items: list, key: Callable, ascending: bool) -> list:
    """A stable sort; ties of one input block stay one block, of two keep the blocks' order."""
    out = sorted(items, key=lambda it: key(it[1]), reverse=not ascending)
    return _renumber([((F.canon(key(r)), b), r) for b, r in out])


def _s_sort_by_key(m, ascending, n, key_func, uid):
    kf = _sort_key(key_func)
    count = _num_out(m, n)
    uid[0] += 1
    return m.derive(items=_sorted_items(m.items, lambda r: kf(r[0]), ascending), parts=None,
                    nparts=1 if count == 1 or not m.items else None, partitioner=("range", uid[0]))


def _s_sort_by(m, ascending, n, uid):
    count = _num_out(m, n)
    return m.derive(items=_sorted_items(m.items, F.record_ck, ascending), parts=None,
                    nparts=1 if count == 1 or not m.items else None, partitioner=None)


def _s_repartition_and_sort(m, n, func, ascending, key_func, uid):
    count = _num_out(m, n)
    if count is None:
        raise ModelError("repartition_and_sort of an unknown count")
    parts = _placed(m, count, getattr(F, func), _sort_key(key_func), ascending)
    return m.derive(items=[it for p in parts for it in p], parts=parts, nparts=count,
                    partitioner=("hash", count, func))


_STEPS: dict[str, Callable] = {
    "map_key": _s_map_key, "map_n": _s_map_n, "filter": _s_filter, "flat_map": _s_flat_map,
    "flat_map_values": _s_flat_map_values, "map_partitions": _s_map_partitions,
    "map_partitions_with_index": _s_map_partitions_with_index, "swap": _s_swap, "nest": _s_nest,
    "rekey_n": _s_rekey_n, "to_pair": _s_to_pair, "row_filter": _s_row_filter, "num_filter": _s_num_filter,
    "num_map": _s_num_map, "sample01": _s_sample01, "sample_by_key01": _s_sample_by_key01,
    "persist": _identity, "cache": _identity, "checkpoint": _identity, "kill": _identity,
    "coalesce": _s_coalesce, "repartition": _s_repartition, "coalesce_shuffle": _s_repartition,
    "partition_by": _s_partition_by, "reduce_by_key": _s_reduce_by_key, "fold_by_key": _s_fold_by_key,
    "aggregate_by_key": _s_aggregate_by_key, "combine_by_key": _s_combine_by_key, "group_by_key": _s_group_by_key,
    "group_by": _s_group_by, "distinct": _s_distinct, "cogroup": _s_cogroup, "join": _s_join,
    "left_outer_join": _s_left_outer_join, "right_outer_join": _s_right_outer_join,
    "full_outer_join": _s_full_outer_join, "subtract_by_key": _s_subtract_by_key, "subtract": _s_subtract,
    "intersection": _s_intersection, "union": _s_union, "cartesian": _s_cartesian, "zip_self": _s_zip_self,
    "zip_with_index": _s_zip_with_index, "zip_with_unique_id": _s_zip_with_unique_id,
    "sort_by_key": _s_sort_by_key, "sort_by": _s_sort_by, "repartition_and_sort": _s_repartition_and_sort,
}


def advance(m: MData, st, uid: list) -> MData:
    """``m`` after one more step."""
    m = step(m, st, uid)
    items = _renumber(m.items)
    return m.derive(items=items, parts=None if m.parts is None else _cut_like(items, m.parts))


def evaluate(pipeline, uid: list | None = None) -> MData:
    uid = uid if uid is not None else [0]
    m = source(pipeline.source)
    for st in pipeline.steps:
        m = advance(m, st, uid)
    return m


def _cut_like(items: list, parts: list) -> list:
    """``items`` cut into partitions of the sizes of ``parts`` (items are the partitions'
    concatenation: the same records, blocks renumbered)."""
    out, i = [], 0
    for p in parts:
        out.append(items[i:i + len(p)])
        i += len(p)
    return out


# -- actions --------------------------------------------------------------------------------------------
def _empty_error() -> Expect:
    return Expect("error", "ValueError")


def _stats(xs: list) -> dict:
    n = len(xs)
    if not n:
        return {"count": 0}
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / n
    return {"count": n, "mean": float(mean), "variance": float(var), "max": float(max(xs)), "min": float(min(xs)),
            "sum": float(sum(xs))}


def _sub_multiset(small: list, big: list) -> bool:
    need = Counter(F.canon(x) for x in small)
    have = Counter(F.canon(x) for x in big)
    return all(have[k] >= c for k, c in need.items())


def expect(action, m: MData) -> Expect:
    op, a = action.op, action.args
    rows = m.rows
    if op == "collect":
        return Expect("blocks", list(m.items), extra={"nparts": m.nparts})
    if op == "glom":
        return Expect("glom", m)
    if op == "count":
        return Expect("value", len(rows))
    if op == "is_empty":
        return Expect("value", not rows)
    if m.kind == "num":
        return _expect_num(op, a, m)
    if op == "sum_n":
        return Expect("value", sum(r[1][0] for r in rows))
    if op == "mean_n":
        if not rows:
            return Expect("check", check=lambda got: None if got != got else f"mean of nothing {got!r}, not NaN")
        return Expect("approx", sum(r[1][0] for r in rows) / len(rows))
    if op == "stats_n":
        return Expect("stats", _stats([r[1][0] for r in rows]))
    if op in ("reduce", "tree_reduce"):
        if not rows:
            return _empty_error()
        return Expect("value", functools.reduce(getattr(F, a[0]), [r[1] for r in rows]))
    if op == "fold":
        return Expect("value", functools.reduce(F.v_add_bag, [F.to_bag(r[1]) for r in rows], (0, ())))
    if op in ("aggregate", "tree_aggregate"):
        return Expect("value", functools.reduce(F.agg_seq, [r[1] for r in rows], (0, 0, ())))
    if op == "count_by_key":
        return Expect("dict", dict(Counter(r[0] for r in rows)))
    if op == "count_by_value":
        return Expect("dict", dict(Counter(rows)))
    if op == "reduce_by_key_locally":
        return Expect("dict", dict(_reduce_rows(rows, getattr(F, a[0]))))
    if op == "collect_as_map":
        groups = _group(rows)
        if m.ordered:
            return Expect("dict", {k: vs[-1] for k, vs in groups.items()})
        return Expect("check", check=lambda got: _check_as_map(got, groups))
    if op == "lookup":
        return Expect("blocks", [(b, r[1]) for b, r in m.items if r[0] == a[0]])
    if op == "take":
        return Expect("check", check=lambda got: _check_prefix(got, m.items, a[0]))
    if op == "first":
        if not rows:
            return _empty_error()
        return Expect("check", check=lambda got: _check_prefix([got], m.items, 1))
    if op == "top":
        return Expect("seq", heapq.nlargest(a[0], rows, key=F.record_ck))
    if op == "take_ordered":
        return Expect("seq", heapq.nsmallest(a[0], rows, key=F.record_ck))
    if op == "take_ordered_keys":
        return Expect("seq", heapq.nsmallest(a[0], [r[0] for r in rows]))
    if op == "top_keys":
        return Expect("seq", heapq.nlargest(a[0], [r[0] for r in rows]))
    if op in ("max", "min"):
        if not rows:
            return _empty_error()
        return Expect("value", (max if op == "max" else min)(rows, key=F.record_ck))
    if op == "histogram_n":
        return Expect("value", _histogram([r[1][0] for r in rows], list(a[0])))
    if op == "count_approx_distinct":
        true = len({F.canon(r[0]) for r in rows})
        return Expect("check", check=lambda got: None if abs(got - true) <= max(2, 0.1 * true)
                      else f"count_approx_distinct says {got}, the keys are {true}")
    if op == "sample":
        return Expect("check", check=lambda got: _check_sample(got, rows, a[0]))
    if op == "take_sample":
        return Expect("check", check=lambda got: _check_take_sample(got, rows, a[0], a[1]))
    if op == "random_split":
        return Expect("check", check=lambda got: _check_random_split(got, rows))
    raise ModelError(f"no model for action {op}")


def _histogram(xs: list, bounds: list) -> tuple:
    """``histogram(bounds)`` as documented: buckets ``[b_i, b_i+1)``, the last closed."""
    counts = [0] * (len(bounds) - 1)
    for x in xs:
        if x < bounds[0] or x > bounds[-1]:
            continue
        for i in range(len(bounds) - 1):
            if bounds[i] <= x < bounds[i + 1] or (i == len(bounds) - 2 and x == bounds[-1]):
                counts[i] += 1
                break
    return (bounds, counts)


def _expect_num(op, a, m: MData) -> Expect:
    xs = list(m.rows)
    if op == "collect":
        return Expect("blocks", list(m.items))
    if op == "sum":
        return Expect("approx", sum(xs) if xs else 0)
    if op == "reduce":
        if not xs:
            return _empty_error()
        return Expect("approx", functools.reduce(F.NUMERIC_REDUCERS[a[0]], xs))
    if op in ("max", "min"):
        if not xs:
            return _empty_error()
        return Expect("value", (max if op == "max" else min)(xs))
    if op == "stats":
        return Expect("stats", _stats(xs))
    if op == "take_ordered":
        return Expect("seq", heapq.nsmallest(a[0], xs))
    if op == "top":
        return Expect("seq", heapq.nlargest(a[0], xs))
    if op == "take":
        return Expect("check", check=lambda got: _check_prefix(got, m.items, a[0]))
    if op == "histogram":
        return Expect("value", _histogram(xs, list(a[0])))
    raise ModelError(f"no model for numeric action {op}")


# -- property checks (several engine answers) ----------------------------------------------------------------
def blocks_of(items: list) -> list[list]:
    """The model's records cut into their blocks, in order."""
    out: list = []
    last = object()
    for b, r in items:
        if b != last:
            out.append([])
            last = b
        out[-1].append(r)
    return out


def match_blocks(got: list, items: list) -> str | None:
    """None when ``got`` is the model's records up to a permutation within each block."""
    if len(got) != len(items):
        return f"{len(got)} records, the model has {len(items)}"
    i = 0
    for blk in blocks_of(items):
        mine = got[i:i + len(blk)]
        if Counter(F.canon(x) for x in mine) != Counter(F.canon(x) for x in blk):
            where = f"records {i}..{i + len(blk) - 1}" if len(blk) > 1 else f"record {i}"
            return f"{where}: got {_short(mine)}, the model has {_short(blk)}"
        i += len(blk)
    return None


def _short(xs: list) -> str:
    text = repr(xs)
    return text if len(text) < 400 else text[:400] + "..."


def _check_prefix(got, items, num) -> str | None:
    """``take(num)``: the first ``num`` records, up to the permutations of their blocks
    (the last block, cut, gives any of its records)."""
    want = min(num, len(items))
    if len(got) != want:
        return f"take({num}) gave {len(got)} records of {len(items)}"
    i = 0
    for blk in blocks_of(items):
        if i >= want:
            break
        mine = got[i:i + len(blk)]
        if len(mine) == len(blk):
            if Counter(F.canon(x) for x in mine) != Counter(F.canon(x) for x in blk):
                return f"take({num}): records {i}.. are {_short(mine)}, the model's {_short(blk)}"
        elif not _sub_multiset(mine, blk):
            return f"take({num}): the last records {_short(mine)} are not among {_short(blk)}"
        i += len(blk)
    return None


def _check_as_map(got: dict, groups: dict) -> str | None:
    want = {F.canon(k): [F.canon(v) for v in vs] for k, vs in groups.items()}
    have = {F.canon(k): F.canon(v) for k, v in got.items()}
    if set(want) != set(have):
        return f"collect_as_map keys differ: missing {set(want) - set(have)}, extra {set(have) - set(want)}"
    bad = [k for k in have if have[k] not in want[k]]
    return f"collect_as_map values not among the key's values for {bad}" if bad else None


def _check_sample(got, rows, with_replacement) -> str | None:
    first, second = got  # two runs of one sample dataset
    if [F.canon(x) for x in first] != [F.canon(x) for x in second]:
        return "sample with a seed gave two answers in two runs"
    if with_replacement:
        if not {F.canon(x) for x in first} <= {F.canon(x) for x in rows}:
            return "sample (with replacement) gave records that are not in the dataset"
    elif not _sub_multiset(first, rows):
        return "sample (without replacement) is not a sub-multiset of the dataset"
    return None


def _check_take_sample(got, rows, with_replacement, num) -> str | None:
    first, second = got
    if [F.canon(x) for x in first] != [F.canon(x) for x in second]:
        return "take_sample with a seed gave two answers in two calls"
    want = num if with_replacement and rows else min(num, len(rows))
    if len(first) != want:
        return f"take_sample gave {len(first)} records, wanted {want}"
    if with_replacement:
        if not {F.canon(x) for x in first} <= {F.canon(x) for x in rows}:
            return "take_sample (with replacement) gave records that are not in the dataset"
    elif not _sub_multiset(first, rows):
        return "take_sample (without replacement) is not a sub-multiset of the dataset"
    return None


def _check_random_split(got, rows) -> str | None:
    first, second = got  # each: a list of splits' records
    if [[F.canon(x) for x in s] for s in first] != [[F.canon(x) for x in s] for s in second]:
        return "random_split with a seed gave two answers in two runs"
    together = [x for s in first for x in s]
    if Counter(F.canon(x) for x in together) != Counter(F.canon(x) for x in rows):
        return "random_split's splits together are not the dataset's records (each exactly once)"
    return None

