"""What a differential program calls: the user classes its keys are made of, the
functions it passes to the Dataset API, and ``canon``, the one notion of equality and
order the comparisons use.

Everything here is module level (no closures), so that a function travels to an executor
process (or a Ray actor, or a PySpark worker) by reference, and a program printed as code
(``programs.to_code``) names it as ``F.<name>``. Executors import this module by name
(``differential.fns``): they inherit the driver's ``sys.path``, which holds ``tests/``.
Nothing here imports hypothesis or strataflow.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import math
import operator
import os
import signal
import zlib
from decimal import Decimal
from fractions import Fraction

import numpy as np

UTC = dt.timezone.utc


# -- the user classes keys are made of ------------------------------------------------------------
class Color(enum.Enum):
    RED = 1
    GREEN = "green"
    BLUE = (3, "b")


class Level(enum.IntEnum):  # equal to ints: a member of the numeric tower
    LOW = 0
    MID = 1
    HIGH = 7


@dataclasses.dataclass(frozen=True, order=True)
class Point:
    x: int
    label: str  # a str field: the dataclass's hash is salted with Python's str hash


# -- canon: equality and a total order ----------------------------------------------------------------
def _num(x) -> tuple:
    if isinstance(x, (np.generic,)):
        x = x.item()
    if isinstance(x, float):
        if math.isnan(x):
            return (1, "nan")
        if math.isinf(x):
            return (1, "inf", 1 if x > 0 else -1)
    if isinstance(x, Decimal):
        if x.is_nan():
            return (1, "nan")
        if x.is_infinite():
            return (1, "inf", -1 if x.is_signed() else 1)
    if isinstance(x, (dt.datetime, dt.date, dt.timedelta, str, bytes)):  # np.datetime64 .item() and kin
        return canon(x)
    return (2, Fraction(x))


def canon(x):
    """A form of ``x`` that is equal for values Python calls equal (``1 == 1.0 == True ==
    Decimal('1.00')``, ``-0.0 == 0.0``, aware datetimes of one instant in two zones, a
    naive datetime whatever its ``fold``), with NaN equal to NaN (a result that carries a
    NaN is right when it carries a NaN), and ordered totally across types (a tag first),
    the same in every process (a frozenset's items are sorted, never iterated in hash
    order). The comparisons compare canons; programs sort by it (``sort_by(F.ck)``)."""
    if x is None:
        return (0,)
    if isinstance(x, enum.Enum) and not isinstance(x, int):
        return (10, type(x).__name__, x.name)
    if isinstance(x, (bool, int, float, Decimal, Fraction, np.number, np.bool_)):
        return _num(x)
    if isinstance(x, str):
        return (3, str(x))
    if isinstance(x, (bytes, bytearray)):
        return (4, bytes(x))
    if isinstance(x, dt.datetime):
        if x.tzinfo is not None and x.utcoffset() is not None:
            return (6, x.astimezone(UTC).replace(tzinfo=None, fold=0))
        return (5, x.replace(fold=0))
    if isinstance(x, dt.date):
        return (7, x)
    if isinstance(x, dt.timedelta):
        return (8, x)
    if isinstance(x, tuple):
        return (9, tuple(canon(i) for i in x))
    if isinstance(x, list):
        return (11, tuple(canon(i) for i in x))
    if isinstance(x, (frozenset, set)):
        return (12, tuple(sorted(canon(i) for i in x)))
    if isinstance(x, dict):
        return (13, tuple(sorted((canon(k), canon(v)) for k, v in x.items())))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (14, type(x).__name__, canon(dataclasses.astuple(x)))
    if isinstance(x, np.ndarray):  # a numpy row: the model holds it as a tuple
        return (9, tuple(canon(i) for i in x.tolist())) if x.ndim else canon(x.item())
    if isinstance(x, np.generic):
        return canon(x.item())
    return (99, type(x).__name__, repr(x))


ck = canon  # the name programs use as a sort key


def stable_hash(k) -> int:
    """A deterministic hash of a key, equal for equal keys in every process: a
    ``partition_func`` whose placement the model predicts exactly."""
    return zlib.crc32(repr(canon(k)).encode("utf-8", "surrogatepass"))


def skew(k) -> int:
    """A ``partition_func`` that sends every key but those hashing to 0 mod 5 to partition 0."""
    h = stable_hash(k)
    return h if h % 5 == 0 else 0


def record_ck(r):
    """Sort key of a pair record ``(k, (n, p))``: its canon."""
    return canon(r)


def neg_ck(r):
    return canon(r)


def first(r):
    return r[0]


def key_ck(r):
    return canon(r[0])


def n_of(r):
    return r[1][0]


# -- key functions (k -> k'), by domain -----------------------------------------------------------
def k_ident(k):
    return k


def k_pair0(k):
    return (k, 0)


def k_const(k):
    return 0


def k_int_mod3(k):
    return k % 3


def k_float_sign(k):
    return 0.0 if k < 0 else (-0.0 if k == 0 else 1.0)


def k_str_head(k):
    return k[:1]


def k_bytes_head(k):
    return k[:1]


def k_date_month(k):
    return k.replace(day=1)


def k_dt_hour(k):
    return k.replace(minute=0, second=0, microsecond=0)


def k_dtz_shift(k):
    """The hour of the instant, told in another zone every other hour (an equal key of
    another representation); a function of the instant alone, as every key function here
    is of its key's value (equal keys stay equal whichever representative a shuffle kept)."""
    h = k.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return h.astimezone(dt.timezone(dt.timedelta(hours=5, minutes=30))) if h.hour % 2 else h


def k_td_days(k):
    return dt.timedelta(days=k.days)


def k_dec_int(k):
    return Decimal(int(k)).quantize(Decimal("1.0"))  # Decimal('3.0') == 3


def k_enum_fold(k):
    return Color.RED if k is Color.BLUE else k


def k_point_x(k):
    return Point(k.x % 2, "")


def k_fset_low(k):
    return frozenset(x for x in k if x < "m")


def k_tuple_head(k):
    return k[0]


def k_none_kind(k):
    return None if k is None else type(k).__name__


def k_num_int(k):
    """A number of the tower to an int of the same value when integral (1.0 -> 1), else floor."""
    return int(math.floor(k))


# -- value functions (n -> n', on the ``n`` of ``(k, (n, p))``) ----------------------------------------
def n_inc(n):
    return n + 1


def n_dbl(n):
    return n * 2


def n_neg(n):
    return -n


def n_half(n):
    return n // 2


def n_mod3(n):
    return n % 3


def n_big(n):
    return n * 10 ** 20 + 1


# -- record transformations (a pair record to another) -----------------------------------------------
def r_map_key(f, r):
    return (f(r[0]), r[1])


def r_map_n(g, r):
    return (r[0], (g(r[1][0]), r[1][1]))


def v_map_n(g, v):
    return (g(v[0]), v[1])


def r_swap(r):
    """``(k, (n, p))`` -> ``(p, (n, k))``: the payload becomes the key."""
    return (r[1][1], (r[1][0], r[0]))


def r_nest(r):
    """``(k, (n, p))`` -> ``((k, n % 2), (n, p))``: a nested-tuple key."""
    return ((r[0], r[1][0] % 2), r[1])


def r_rekey_n(r):
    return (r[1][0] % 4, r[1])


def row_to_pair(row):
    """A numpy row ``[k, n]`` (or the model's tuple) to a pair record; numpy scalars kept."""
    return (row[0], (row[1], None))


def row3_to_pair(row):
    """An Arrow row ``(k, n, p)`` to a pair record."""
    return (row[0], (row[1], row[2]))


def row_n_even(row):
    return row[1] % 2 == 0


# predicates
def p_n_even(r):
    return r[1][0] % 2 == 0


def p_n_pos(r):
    return r[1][0] > 0


def p_key_odd(r):
    return stable_hash(r[0]) % 2 == 1


def p_all(r):
    return True


def p_none(r):
    return False


# flat_map functions (record -> iterable of records)
def fm_dup(r):
    return [r, (r[0], (r[1][0] + 1, r[1][1]))]


def fm_even_only(r):
    return [r] if r[1][0] % 2 == 0 else []


def fm_n_copies(r):
    return [r] * (r[1][0] % 3)


# flat_map_values functions (value -> iterable of values)
def fv_split(v):
    return [v, (v[0] * 2, v[1])]


def fv_drop_neg(v):
    return [v] if v[0] >= 0 else []


# map_partitions functions (partition-agnostic: the same records whatever the partitioning)
def mp_list(it):
    return [(k, (n + 1, p)) for k, (n, p) in it]


def mp_gen(it):
    for k, (n, p) in it:  # a PySpark-style generator
        yield (k, (n - 1, p))


def mp_filter_iter(it):
    return iter([r for r in it if r[1][0] % 3 != 0])


def mpi_tag(i, it):
    """Partition-index dependent: only when the model knows the partitions."""
    return [(k, (n + 100 * i, p)) for k, (n, p) in it]


# -- combining values ``(n, p)`` ---------------------------------------------------------------------
def pmin(a, b):
    return a if canon(a) <= canon(b) else b


def v_add_min(a, b):
    """(n1 + n2, the least payload by canon): commutative and associative."""
    return (a[0] + b[0], pmin(a[1], b[1]))


def v_max(a, b):
    return a if (a[0], canon(a[1])) >= (b[0], canon(b[1])) else b


def bag(items) -> tuple:
    return tuple(sorted(items, key=canon))


def to_bag(v):
    return (v[0], (v[1],))


def v_add_bag(a, b):
    """Values ``(n, bag)``: sums and merged bags; ``(0, ())`` is its zero."""
    return (a[0] + b[0], bag(a[1] + b[1]))


def agg_seq(acc, v):
    """aggregate_by_key's seq: ``(sum, count, bag)`` from values ``(n, p)``; zero ``(0, 0, ())``."""
    return (acc[0] + v[0], acc[1] + 1, bag(acc[2] + (v[1],)))


def agg_comb(a, b):
    return (a[0] + b[0], a[1] + b[1], bag(a[2] + b[2]))


def agg_to_value(a):
    return (a[0], (a[1], a[2]))


def cb_create(v):
    return [v]


def cb_merge_value(c, v):
    c.append(v)
    return c


def cb_merge_combiners(c, d):
    c.extend(d)
    return c


def group_merge(vs):
    """A group's list of values ``[(n, p)...]`` (in no promised order) to one value."""
    vs = list(vs)
    return (sum(v[0] for v in vs), (len(vs), bag(v[1] for v in vs)))


def group_records(rs):
    """``group_by``'s list of records to a value."""
    rs = list(rs)
    return (sum(r[1][0] for r in rs), (len(rs), bag(r[1][1] for r in rs)))


def cogroup_merge(groups):
    """``([values of a], [values of b], ...)`` to one value."""
    groups = [list(g) for g in groups]
    return (sum(v[0] for g in groups for v in g), tuple(bag(v[1] for v in g) for g in groups))


def join_merge(vw):
    v, w = vw
    return ((v[0] if v is not None else 0) + (w[0] if w is not None else 0),
            (v[1] if v is not None else None, w[1] if w is not None else None))


def cart_to_pair(ab):
    (k1, (n1, p1)), (k2, (n2, p2)) = ab
    return ((k1, k2), (n1 * 10 + n2, (p1, p2)))


def zip_to_pair(ab):
    (k, (n, p)), (_, (m, _)) = ab
    return (k, (n + m, p))


def index_to_pair(ri):
    (k, (n, p)), i = ri
    return (k, (n, (i, p)))


# -- numbers (the numeric family: 1-D arrays) -----------------------------------------------------------
def add(a, b):
    return a + b


def num_gt1(x):
    return x > 1


def num_sq(x):
    return x * x


NUMERIC_REDUCERS = {"np.add": np.add, "operator.add": operator.add, "np.maximum": np.maximum,
                    "np.minimum": np.minimum, "np.fmax": np.fmax, "add": add}


# -- faults ---------------------------------------------------------------------------------------------
class KillOnce:
    """Identity on records; the first call in an executor process other than the driver's
    (and only the first in the whole application: an ``O_EXCL`` marker) SIGKILLs that
    process: an executor lost in the middle of a stage."""

    def __init__(self, marker: str, driver_pid: int) -> None:
        self.marker = marker
        self.driver_pid = driver_pid

    def __call__(self, r):
        if os.getpid() != self.driver_pid:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return r
            os.kill(os.getpid(), signal.SIGKILL)
        return r


def partial_name(f) -> str:
    return getattr(f, "__name__", repr(f))
