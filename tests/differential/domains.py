"""The spaces of values programs draw their keys and payloads from.

A ``Domain`` is one family of values (dates, aware datetimes, Enums, frozen dataclasses,
frozensets of strings, the numeric tower where ``1 == 1.0 == True == Decimal(1)``...): a
hypothesis strategy for one value, whether its values sort natively against each other
(``sort_by_key`` without a key function), whether a value may stand as a key (a NaN may
not: ``NaN != NaN``, and two NaN objects are two keys or one depending on whether they
are one object -- a pickle away from the other answer) and the coarsening key function
(``F.k_*``: many keys to one, for collisions) with the domain of its results.

Pools: a program's keys come from a small pool drawn once (1 to 6 values, equal ones of
other representations included: ``-0.0`` and ``0.0``, one instant in two time zones), so
keys repeat and partitions skew.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from differential.fns import Color, Level, Point

__all__ = ["Domain", "DOMAINS", "KEY_DOMAINS", "PAYLOAD_DOMAINS", "domain"]


@dataclass(frozen=True)
class Domain:
    name: str
    sortable: bool  # its values compare with < among themselves (sort_by_key without key_func)
    key_safe: bool = True  # no NaN: may be a key, a record of distinct()/subtract()/count_by_value()
    coarse: str = "k_ident"  # F.<coarse>: many keys to one
    coarse_to: str = ""  # the domain of coarse's results ("" = this one)

    @property
    def strategy(self) -> st.SearchStrategy:
        return _STRATEGIES[self.name]

    @property
    def has_values(self) -> bool:
        """False for the domains programs make (a group's bag, a join's pair): no fresh values."""
        return self.name in _STRATEGIES


_ZONES = [dt.timezone.utc, dt.timezone(dt.timedelta(hours=5, minutes=30)), dt.timezone(dt.timedelta(hours=-8)),
          dt.timezone(dt.timedelta(hours=14))]
_SMALL_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6)
_ODD_TEXT = st.sampled_from(["", "\x00", "é", "e\u0301", "\u202e", "😀", "\uffff", "a\nb", "\U0010ffff", "ß", "SS"])


def _tower(n: int, kind: int):
    """One value of the numeric tower equal to ``n`` (or n + 1/2), in one of its types."""
    return [n, float(n), Decimal(n) / Decimal(1), Fraction(n * 2, 2), np.int64(n), np.float64(n),
            bool(n % 2) if n in (0, 1) else n, Decimal(n).quantize(Decimal("1.00")), n + 0.5,
            Level(n) if n in (0, 1, 7) else n][kind % 10]


_STRATEGIES: dict[str, st.SearchStrategy] = {
    "int": st.integers(-4, 12),
    "bigint": st.one_of(st.integers(-(2 ** 100), 2 ** 100),
                        st.sampled_from([-1, -2, 2 ** 61 - 1, 2 ** 61, -(2 ** 61 - 1), 2 ** 63 - 1, -(2 ** 63),
                                         2 ** 64, 2 ** 64 + 1, 10 ** 30])),
    "float": st.one_of(st.floats(allow_nan=False, width=64),
                       st.sampled_from([0.0, -0.0, float("inf"), float("-inf"), 5e-324, 1e308, 0.1, 2.5])),
    "float_nan": st.one_of(st.floats(allow_nan=True), st.sampled_from([float("nan"), -0.0, 0.0])),
    "str": st.one_of(_SMALL_TEXT, _ODD_TEXT),
    "bytes": st.binary(max_size=5),
    "date": st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9999, 12, 31)),
    "datetime": st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2100, 1, 1)),
    "datetime_tz": st.datetimes(min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(2100, 1, 1),
                                timezones=st.sampled_from(_ZONES)),
    "timedelta": st.timedeltas(min_value=dt.timedelta(days=-10 ** 5), max_value=dt.timedelta(days=10 ** 5)),
    "decimal": st.decimals(min_value=-1000, max_value=1000, allow_nan=False, allow_infinity=False, places=None)
    .map(lambda d: d if d.adjusted() > -20 else Decimal(0)),
    "enum": st.sampled_from(list(Color)),
    "point": st.builds(Point, st.integers(-3, 3), st.sampled_from(["", "a", "b", "é", "😀"])),
    "frozenset": st.frozensets(st.sampled_from(["a", "b", "n", "z", "é", ""]), max_size=3),
    "none_mixed": st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["a", "", "b"]), st.just(b"a"),
                            st.just(dt.date(2024, 2, 29)), st.just(Color.RED)),
    "tuple": st.tuples(st.integers(0, 3), st.tuples(st.sampled_from(["a", "b", ""]),
                                                     st.sampled_from([dt.date(2020, 1, 1), dt.date(1999, 12, 31)]))),
    "numeric": st.builds(_tower, st.integers(-2, 7), st.integers(0, 9)),
}

DOMAINS: dict[str, Domain] = {d.name: d for d in [
    Domain("int", True, coarse="k_int_mod3"),
    Domain("bigint", True, coarse="k_int_mod3", coarse_to="int"),
    Domain("float", True, coarse="k_float_sign"),
    Domain("float_nan", False, key_safe=False),
    Domain("str", True, coarse="k_str_head"),
    Domain("bytes", True, coarse="k_bytes_head"),
    Domain("date", True, coarse="k_date_month"),
    Domain("datetime", True, coarse="k_dt_hour"),
    Domain("datetime_tz", True, coarse="k_dtz_shift"),
    Domain("timedelta", True, coarse="k_td_days"),
    Domain("decimal", True, coarse="k_dec_int"),
    Domain("enum", False, coarse="k_enum_fold"),
    Domain("point", True, coarse="k_point_x"),
    Domain("frozenset", False, coarse="k_fset_low"),
    Domain("none_mixed", False, coarse="k_none_kind"),
    Domain("tuple", True, coarse="k_tuple_head", coarse_to="int"),
    # not sortable natively: Decimal < np.int64 raises TypeError (sorted by F.ck instead)
    Domain("numeric", False, coarse="k_num_int", coarse_to="int"),
    Domain("opaque", False),  # what steps make of payloads: tuples of bags, a join's pairs
    Domain("opaque_nan", False, key_safe=False),
]}
#: composite domains made by programs (keys of keys): their names are the parts'
KEY_DOMAINS = [n for n, d in DOMAINS.items() if d.key_safe and d.has_values]
PAYLOAD_DOMAINS = [n for n, d in DOMAINS.items() if d.has_values]


def domain(name: str) -> Domain:
    """A domain by name; ``pair(a,b)`` names the tuples of two domains' values."""
    if name in DOMAINS:
        return DOMAINS[name]
    if name.startswith("pair("):
        a, b = _split_pair(name)
        da, db = domain(a), domain(b)
        return Domain(name, da.sortable and db.sortable, da.key_safe and db.key_safe)
    raise KeyError(name)


def pair_name(a: str, b: str) -> str:
    return f"pair({a},{b})"


def _split_pair(name: str) -> tuple[str, str]:
    inner = name[len("pair("):-1]
    depth = 0
    for i, c in enumerate(inner):
        depth += c == "("
        depth -= c == ")"
        if c == "," and depth == 0:
            return inner[:i], inner[i + 1:]
    raise KeyError(name)
