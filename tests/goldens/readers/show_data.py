"""The DataFrames whose ``show()`` text is recorded from PySpark (``record_readers.py``)
and compared by ``tests/test_reader_options.py``: one definition for both sides."""

import datetime as dt
from decimal import Decimal

FRAMES = {
    "scalars": ("i INT, b BIGINT, f FLOAT, d DOUBLE, s STRING, ok BOOLEAN, dec DECIMAL(10,3), day DATE, ts TIMESTAMP",
                [(1, 10000000000, 1.5, 0.1, "short", True, Decimal("1.500"), dt.date(2024, 1, 31),
                  dt.datetime(2024, 1, 31, 10, 0, 0, 123000)),
                 (None, None, None, None, None, None, None, None, None),
                 (-7, -1, float("nan"), 1e7, "a string longer than twenty characters", False, Decimal("-0.001"),
                  dt.date(1969, 12, 31), dt.datetime(1999, 12, 31, 23, 59, 59)),
                 (0, 0, float("inf"), -0.0, "", False, Decimal("0"), dt.date(2100, 1, 1),
                  dt.datetime(2024, 3, 10, 2, 30, 0, 1)),
                 (2147483647, 9223372036854775807, 3.4e38, 1.2345678901234567e-5, "x" * 20, True,
                  Decimal("9999999.999"), dt.date(1, 1, 1), dt.datetime(1970, 1, 1))]),
    "unicode": ("name STRING, note STRING",
                [("日本語", "wide"), ("Zoë", "accent"), ("😀 emoji", "astral"), ("ß", "sharp s"),
                 ("東京都千代田区丸の内一丁目九番", "long wide string over twenty"), ("tab\there", "new\nline")]),
    "nested": ("a ARRAY<INT>, m MAP<STRING, INT>, st STRUCT<x: INT, y: STRING>, aa ARRAY<ARRAY<STRING>>",
               [([1, 2, None], {"k": 1}, (1, "one"), [["a"], []]),
                (None, None, None, None),
                ([], {}, (None, None), [None])]),
    "doubles": ("d DOUBLE",
                [(x,) for x in (1.0, 0.001, 0.0001, 123456.789, 1e20, -2.5e-10, 100.0, 9999999.0, 12345678.9)]),
}

#: (frame, keyword arguments of show); each row's text is recorded
SHOWS = [
    ("scalars", {}), ("scalars", {"n": 2}), ("scalars", {"n": 1}), ("scalars", {"truncate": False}),
    ("scalars", {"truncate": 5}), ("scalars", {"truncate": 3}), ("scalars", {"vertical": True}),
    ("scalars", {"n": 2, "vertical": True}), ("scalars", {"n": 0}),
    ("unicode", {}), ("unicode", {"truncate": False}), ("unicode", {"vertical": True}), ("unicode", {"truncate": 4}),
    ("nested", {}), ("nested", {"truncate": False}), ("nested", {"vertical": True}),
    ("doubles", {}),
]

#: what ``df.write.csv`` / ``.json`` write for these rows (one part file), recorded from PySpark
WRITE_DDL = ("i INT, q STRING, c STRING, w STRING, e STRING, n STRING, d DOUBLE, d2 DOUBLE, ts TIMESTAMP, "
             "day DATE, dec DECIMAL(5,2), bs STRING, ml STRING, u STRING, f FLOAT, b BOOLEAN")
WRITE_ROWS = [
    (1, 'say "hi"', "a,b", "  lead and trail ", "", None, 1e7, 0.1, dt.datetime(2024, 1, 31, 10, 0, 0, 123000),
     dt.date(2024, 1, 31), Decimal("1.50"), "back\\slash", "multi\nline", "日本", 1.5, True),
    (None, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None),
    (-2, '"', "'", "\t", " ", "NA", float("nan"), float("-inf"), dt.datetime(1969, 12, 31, 23, 59, 59),
     dt.date(1, 1, 1), Decimal("-0.01"), "a\\\"b", "cr\rhere", "", 1e-5, False),
    (3, "x\\y,z", "\\", "end\\", "#c", "a;b", 0.001, 1e21, dt.datetime(2024, 3, 10, 2, 30, 0, 1), dt.date(2024, 2, 29),
     Decimal("100.00"), "\\,", "\\\"", " x", -0.0, None),
]
WRITE_NESTED_DDL = "id INT, a ARRAY<INT>, m MAP<STRING, DOUBLE>, s STRUCT<x: INT, y: STRING>"
WRITE_NESTED_ROWS = [(1, [1, None], {"k": 1.5}, (1, "y")), (2, None, None, None), (3, [], {}, (None, None))]
