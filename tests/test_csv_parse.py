"""csv_parse: polars' table where it gives exactly pyarrow's, pyarrow's otherwise.

Both paths are run on every case: ``fast`` is ``parse_range`` with polars asked for
(``STRATAFLOW_CSV_PARSER=polars``), ``fallback`` the default (pyarrow); each must give
``float()``'s value of every field (bit for bit, so ``-0.0`` counts), the same nulls,
and the same error for a bad row."""

from __future__ import annotations

import math
import os
import struct

import numpy as np
import pyarrow as pa
import pytest

from strataflow.io import csv_parse
from strataflow.io.csv_parse import PARSER_ENV, parse_range, parse_with_polars, parse_with_pyarrow

pytestmark = pytest.mark.usefixtures("no_leaks")

# polars (an eventfd, an epoll, a pipe) and pyarrow's CSV reader (a pipe) open descriptors for
# their thread pools the first time they parse in a process, and keep them: parse once here,
# so no_leaks does not count them as a leak.
_asked = os.environ.get(PARSER_ENV)
os.environ[PARSER_ENV] = "polars"
parse_with_polars(b"1\n", pa.schema([("a", pa.float64())]), ",")
if _asked is None:
    del os.environ[PARSER_ENV]
else:
    os.environ[PARSER_ENV] = _asked
parse_with_pyarrow(b"1\n", ["a"], {}, ",")

F64 = pa.schema([("a", pa.float64()), ("b", pa.float64())])


@pytest.fixture(autouse=True)
def _polars_asked_for(monkeypatch):
    """The direct calls of ``parse_with_polars`` below test polars' path: it is asked for."""
    monkeypatch.setenv(PARSER_ENV, "polars")


@pytest.fixture(params=["fast", "fallback"])
def path(request, monkeypatch):
    if request.param == "fallback":
        monkeypatch.delenv(PARSER_ENV, raising=False)  # the default: pyarrow
    else:
        monkeypatch.setenv(PARSER_ENV, "polars")
    return request.param


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _same(got: list, want: list) -> bool:
    return len(got) == len(want) and all(
        (g is None and w is None) or (g is not None and w is not None and
                                      (math.isnan(g) and math.isnan(w) or _bits(g) == _bits(w)))
        for g, w in zip(got, want))


# Tokens csv_file accepted before polars, with the value it gave (None: null).
ACCEPTED = {
    "1.5": 1.5, "-0.0": -0.0, "0.1": 0.1, "1e5": 1e5, "1E-5": 1e-5, "+1": 1.0, " 1": 1.0, "1 ": 1.0,
    "1\t": 1.0, "1.": 1.0, ".5": 0.5, "-.5": -0.5, "00012": 12.0, "0.1e1": 1.0, '"2.5"': 2.5,
    "inf": math.inf, "-inf": -math.inf, "Infinity": math.inf, "-Infinity": -math.inf, "INF": math.inf,
    "+nan": math.nan, "nan(1)": math.nan,
    "1e400": math.inf, "1e-400": 0.0, "-1e-400": -0.0, "4.9e-324": 5e-324, "2.2250738585072011e-308": 2.2250738585072011e-308,
    "1.7976931348623157e308": 1.7976931348623157e308, "1.7976931348623159e308": math.inf,
    "9007199254740993": 9007199254740992.0, "0.30000000000000004441": 0.30000000000000004,
    "123456789012345678901234567890.5": 1.2345678901234568e29,
    "": None, "nan": None, "NaN": None, "-nan": None, "NA": None, "null": None, "N/A": None,
}
REFUSED = ["1_000", "0x10", "1d5", "--1", "1e", "e5", "abc", "1..2", "١"]


@pytest.mark.parametrize("tok", list(ACCEPTED))
def test_every_accepted_token_gives_its_value_on_both_paths(path, tok):
    got = parse_range(f"{tok},7\n{tok},8\r\n".encode(), F64, ",").to_pydict()
    assert _same(got["a"], [ACCEPTED[tok]] * 2), got
    assert got["b"] == [7.0, 8.0]


@pytest.mark.parametrize("tok", REFUSED)
def test_a_bad_field_gives_pyarrows_error_naming_the_row_on_both_paths(path, tok):
    with pytest.raises(pa.ArrowInvalid, match=r"Row #2.*invalid value"):
        parse_range(f"1,2\n{tok},7\n".encode(), F64, ",")


@pytest.mark.parametrize("text,match", [
    (b"1,2\n3\n", r"Row #2: Expected 2 columns, got 1"),      # polars alone would fill a null
    (b"1,2\n3,4,5\n", r"Row #2: Expected 2 columns, got 3"),
    (b"1,2\n   \n3,4\n", r"Row #2: Expected 2 columns, got 1"),  # polars alone: a row of nulls
    (b"1,2,\n", r"Row #1: Expected 2 columns, got 3"),
])
def test_a_ragged_row_is_an_error_on_both_paths(path, text, match):
    with pytest.raises(pa.ArrowInvalid, match=match):
        parse_range(text, F64, ",")


def test_blank_lines_are_skipped_on_both_paths(path):
    assert parse_range(b"1,2\n\n3,4\n", F64, ",").to_pydict() == {"a": [1.0, 3.0], "b": [2.0, 4.0]}


def _hard_fields(n: int, seed: int) -> list[str]:
    """Doubles hard to round: random bit patterns (every exponent, subnormals, 17 digits)
    and 25-digit decimals."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**64, size=n, dtype=np.uint64).view(np.float64)
    fields = [repr(float(x)) for x in bits if np.isfinite(x)]
    return fields + [f"{x:.25g}" for x in rng.random(n)] + [f"{x:.3f}" for x in rng.normal(0, 1e3, n)]


@pytest.mark.parametrize("dtype", [pa.float64(), pa.float32()])
def test_hard_floats_are_parsed_as_float_parses_them(path, dtype):
    fields = _hard_fields(3000, seed=41)
    fields = fields[: len(fields) // 4 * 4]
    text = "".join(" ".join(fields[i:i + 4]) + "\n" for i in range(0, len(fields), 4)).encode()
    schema = pa.schema([(f"c{i}", dtype) for i in range(4)])
    t = parse_range(text, schema, " ")
    assert t.schema == schema
    got = np.column_stack([c.to_numpy() for c in t.columns]).ravel()
    with np.errstate(over="ignore"):  # float32: float()'s double, rounded to float32 (inf past its range)
        want = np.array([float(f) for f in fields]).astype(dtype.to_pandas_dtype())
    assert got.view(f"u{got.itemsize}").tolist() == want.view(f"u{want.itemsize}").tolist()


def test_the_polars_path_is_taken_for_clean_float_text_only():
    pytest.importorskip("polars")
    clean = b"1.5 2\n-0.0 1e3\n"
    t = parse_with_polars(clean, pa.schema([("a", pa.float64()), ("b", pa.float64())]), " ")
    assert t is not None and t.to_pydict() == {"a": [1.5, -0.0], "b": [2.0, 1000.0]}
    assert parse_with_polars(clean, pa.schema([("a", pa.float64()), ("b", pa.int64())]), " ") is None
    assert parse_with_polars(b"1,\n", F64, ",") is None  # a null: pyarrow decides
    assert parse_with_polars(b"1,NaN\n", F64, ",") is None  # polars' NaN, pyarrow's null
    assert parse_with_polars(b"1,+nan\n", F64, ",") is None  # NaN in both: pyarrow decides anyway
    assert parse_with_polars(b"1,2\n", F64, "\u00e9") is None  # a delimiter of two bytes


def test_polars_only_when_asked_for_and_installed(monkeypatch):
    text = b"1.25,2\n"
    monkeypatch.delenv(PARSER_ENV, raising=False)
    assert parse_with_polars(text, F64, ",") is None  # the default is pyarrow
    monkeypatch.setenv(PARSER_ENV, "pyarrow")
    assert parse_with_polars(text, F64, ",") is None
    monkeypatch.setenv(PARSER_ENV, "polars")
    assert parse_with_polars(text, F64, ",") is not None
    monkeypatch.setattr(csv_parse, "_POLARS", False)  # as if the fast-csv extra were not installed
    assert not csv_parse.polars_available()
    assert parse_with_polars(text, F64, ",") is None
    assert parse_range(text, F64, ",").to_pydict() == {"a": [1.25], "b": [2.0]}


def test_the_inference_pass_stays_on_pyarrow():
    t = parse_with_pyarrow(b"1,x\n2.5,y\n", ["a", "b"], {}, ",", block_size=1 << 20)
    assert t.schema == pa.schema([("a", pa.float64()), ("b", pa.string())])
