"""The typed value table the conformance cases read: the values users have, not only
small ints — nulls, NaN, ±0.0, ±inf, type extremes, decimals, unicode ('ß', 'İ', emoji,
the empty string), dates before 1970 and after 2100, timestamps at DST changes (in
America/Los_Angeles: 2024-03-10 02:30 does not exist, 2024-11-03 01:30 happens twice).

Every column has ``ROWS`` values; a case applies a function to columns of one row at a
time, so two-argument cases pair the columns row by row. Timestamps are naive datetimes
read as UTC: the recorder and the suite both run with ``TZ=UTC``.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

__all__ = ["SCHEMA", "ROWS", "rows", "COLUMNS_OF"]

_NAN, _INF = float("nan"), float("inf")
D, T = dt.date, dt.datetime

#: column -> (Spark DDL type, its values)
COLUMNS: dict[str, tuple[str, list]] = {
    "b": ("boolean", [True, False, None, True, False, True, None, False, True, True, False, None, True, False]),
    "y": ("tinyint", [0, 1, -1, 127, -128, None, 5, 100, -7, 3, 12, 2, -100, 64]),
    "h": ("smallint", [0, 1, -1, 32767, -32768, None, 5, 1000, -7, 3, 12, 2, -1000, 255]),
    "i": ("int", [0, 1, -1, 2147483647, -2147483648, 2, 7, -7, None, 3, 12, 5, 100, -3]),
    "i2": ("int", [3, 0, 2, 1, -1, None, 2, 3, 4, 0, 5, -2, 7, 10]),
    "l": ("bigint", [0, 1, -1, 9223372036854775807, -9223372036854775808, 10, None, 1000000, 42, 7, -5, 3,
                     100, 1700000000]),
    "f": ("float", [1.5, 2.5, -0.0, _NAN, _INF, None, 3.0e38, -1.25, 0.1, 1.0e-5, 16.0, -_INF, 7.0, 0.0]),
    "d": ("double", [2.675, 1.005, -2.5, 0.5, 1.5, 0.0, -0.0, _NAN, _INF, -_INF, None, 1.0e300, 12.7,
                     -0.125]),
    "d2": ("double", [2.0, 0.0, -0.0, 3.0, None, 1.0, 0.5, 2.0, _NAN, 4.0, 1.0, -1.0, 0.0, 10.0]),
    "m": ("decimal(10,2)", [Decimal("1.25"), Decimal("-3.00"), Decimal("2.68"), Decimal("99999999.99"),
                            Decimal("-0.01"), Decimal("0.00"), None, Decimal("0.50"), Decimal("1.50"),
                            Decimal("2.50"), Decimal("-2.50"), Decimal("123.45"), Decimal("7.77"), Decimal("0.05")]),
    "m2": ("decimal(20,6)", [Decimal("3.000000"), Decimal("0.000000"), Decimal("-1.500000"), Decimal("7.123456"),
                             None, Decimal("12345678901234.567890"), Decimal("0.333333"), Decimal("2.000000"),
                             Decimal("-0.000001"), Decimal("10.000000"), Decimal("1.000000"), Decimal("4.500000"),
                             Decimal("-2.000000"), Decimal("0.500000")]),
    "s": ("string", ["abc", "", "ß", "İstanbul", "😀 emoji", " a b ", "Hello World", "café", None, "a,b,,c",
                     "x_y%z", "AbC dEf", "123", "ǅungla"]),
    "s2": ("string", ["b", "", "s", "i", "😀", "a", "World", "é", "x", None, ",", "AbC", "3", "ǅ"]),
    "sn": ("string", ["12.7", "1e3", "0x10", " 5 ", "NaN", "Infinity", "-0", "2147483648", "abc", None,
                      "1.5e-3", "+3", "9223372036854775808", "007"]),
    "sd": ("string", ["2024-03-10", "2024-03-10 02:30:00", "2024-03-10T10:00:00+02:00", "1969-12-31 23:59:59",
                      "2101-06-15", "not a date", None, "2024-02-30", "2024-11-03 01:30:00", "1900-01-01",
                      "10/03/2024", "2024-03-10 10:00:00.123456", "2024", "2024-3-5"]),
    "dt": ("date", [D(2024, 3, 10), D(1969, 12, 31), D(1900, 1, 1), D(2101, 6, 15), D(2024, 2, 29), None,
                    D(1970, 1, 1), D(2024, 11, 3), D(2023, 1, 1), D(2024, 12, 31), D(2000, 2, 29), D(2024, 6, 30),
                    D(1999, 1, 31), D(2024, 1, 31)]),
    "ts": ("timestamp", [T(2024, 3, 10, 10, 0), T(2024, 3, 10, 10, 30), T(2024, 11, 3, 8, 30),
                         T(1969, 12, 31, 23, 59, 59, 500000), T(1960, 1, 1), T(2101, 6, 15, 12, 34, 56, 789012),
                         None, T(1970, 1, 1), T(2024, 2, 29, 23, 59, 59), T(2000, 1, 1, 0, 0, 0, 1),
                         T(2024, 12, 31, 23, 0), T(2023, 7, 4, 12, 0), T(1999, 12, 31, 23, 59, 59),
                         T(2024, 6, 1)]),
    "bin": ("binary", [b"abc", b"", b"\x00\xff", None, b"\xe2\x82\xac", b"A", b"hello", b"\x7f", b"z" * 3,
                       b"12", b"\x01\x02", b"ok", b" ", b"Spark"]),
    "a": ("array<int>", [[1, 2, 2, None], [], None, [3, 1, 2], [5], [None], [2, 2], [7, -1, 0], [1, 2, 3],
                         [10, 9], [4], [0, 0, 1], [-5, 5], [1]]),
    "a2": ("array<int>", [[2, 3], [1], [1], None, [5, 6], [], [2], [0], [3, 4], [9], [4, 4], [1], [5], []]),
    "as": ("array<string>", [["b", "a", "b"], [], None, ["ß", None], ["x"], ["", "y"], ["c", "a"], ["z"],
                             ["a", "b", "c"], ["q"], ["k", "k"], ["é"], ["m", "n"], ["1"]]),
    "nl": ("int", [None] * 14),
}

ROWS = 14
SCHEMA = ", ".join(f"`{name}` {ddl}" for name, (ddl, _) in COLUMNS.items())

#: the kinds of column a case may ask for, by Spark type
COLUMNS_OF = {ddl: [n for n, (t, _) in COLUMNS.items() if t == ddl] for ddl, _ in COLUMNS.values()}


def rows() -> list[tuple]:
    """The table's rows, each a tuple in ``SCHEMA``'s order."""
    assert all(len(v) == ROWS for _, v in COLUMNS.values())
    return [tuple(v[r] for _, v in COLUMNS.values()) for r in range(ROWS)]
