"""Sources against plain Python: collections, ranges, numpy arrays, .npy files, text files
(and directories of them), and batch partitions (numpy ndarrays, Arrow tables)."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strataflow import ConfigError
from strataflow.io import csv_parse

pytestmark = pytest.mark.usefixtures("no_leaks")

# polars' and pyarrow's CSV readers open descriptors for their thread pools the first time
# they parse in a process, and keep them: parse once here, so no_leaks does not count them.
csv_parse.parse_range(b"1\n", pa.schema([("a", pa.float64())]), ",")
csv_parse.parse_with_pyarrow(b"1\n", ["a"], {}, ",")

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

nparts = st.integers(1, 9)


def slices(data, n):
    """Spark's contiguous slices: slice i is data[i*len//n : (i+1)*len//n]."""
    return [data[i * len(data) // n:(i + 1) * len(data) // n] for i in range(n)]


# -- in-memory collections ---------------------------------------------------------------------
@SETTINGS
@given(data=st.lists(st.one_of(st.integers(), st.text(max_size=3), st.tuples(st.integers(0, 3), st.integers())),
                     max_size=30), n=nparts)
def test_parallelize(ctx, data, n):
    ds = ctx.parallelize(data, n)
    assert ds.num_partitions == n
    assert ds.glom().collect() == slices(data, n)
    assert ds.collect() == data
    assert ctx.parallelize(iter(data), n).collect() == data  # any iterable, once
    assert ctx.parallelize(x for x in data).num_partitions == ctx.default_parallelism == 2


def test_parallelize_rejects_bad_partition_counts(ctx):
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ConfigError, match="num_partitions"):
            ctx.parallelize([1, 2, 3], bad)


@SETTINGS
@given(start=st.integers(-50, 50), stop=st.integers(-50, 50), step=st.integers(-7, 7).filter(bool), n=nparts)
def test_range(ctx, start, stop, step, n):
    expected = list(range(start, stop, step))
    ds = ctx.range(start, stop, step, num_partitions=n)
    assert ds.num_partitions == n
    assert ds.glom().collect() == slices(expected, n)
    assert ds.count() == len(expected)
    assert ctx.parallelize(range(start, stop, step), n).collect() == expected  # a range given to parallelize


def test_range_forms(ctx):
    assert ctx.range(5).collect() == [0, 1, 2, 3, 4]
    assert ctx.range(5).num_partitions == 2
    assert ctx.range(10, 0, -3, 3).collect() == [10, 7, 4, 1]
    assert ctx.range(3, 3).collect() == []
    assert ctx.range(10 ** 15, 10 ** 15 + 4, num_partitions=2).sum() == 4 * 10 ** 15 + 6  # never on the driver
    with pytest.raises(ValueError):
        ctx.range(0, 10, 0)


# -- numpy -----------------------------------------------------------------------------------
@SETTINGS
@given(rows=st.integers(0, 30), shape=st.sampled_from([(), (1,), (3,), (2, 2)]), n=nparts)
def test_from_numpy_cuts_contiguous_ndarray_partitions(ctx, rows, shape, n):
    a = np.arange(rows * int(np.prod(shape)), dtype=np.int64).reshape((rows, *shape))
    ds = ctx.from_numpy(a, n)
    assert ds.num_partitions == n
    parts = ds.collect_partitions()
    bounds = [(i * rows // n, (i + 1) * rows // n) for i in range(n)]
    for p, (lo, hi) in zip(parts, bounds):
        assert isinstance(p, np.ndarray)
        assert p.shape == (hi - lo, *shape)  # empty partitions keep the row shape
        np.testing.assert_array_equal(p, a[lo:hi])
        if hi > lo and ctx.backend == "threads":
            assert np.shares_memory(p, a)  # views, not copies (executor processes send copies)
    assert ds.count() == rows
    assert [np.asarray(r).tolist() for r in ds.collect()] == a.tolist()


def test_from_numpy_rejects_a_scalar(ctx):
    with pytest.raises(ValueError):
        ctx.from_numpy(np.float64(1.0), 2)


@SETTINGS
@given(rows=st.integers(0, 40), cols=st.integers(1, 3), n=nparts,
       dtype=st.sampled_from([np.float64, np.int32, np.uint8]))
def test_npy_file_is_memory_mapped_read_only_rows(ctx, rows, cols, n, dtype):
    a = (np.arange(rows * cols) % 200).astype(dtype).reshape(rows, cols)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "a.npy")
        np.save(path, a)
        ds = ctx.npy_file(path, n)
        assert ds.num_partitions == n
        parts = ds.collect_partitions()
        sizes = [p.shape[0] for p in parts]
        assert sizes == [(i + 1) * rows // n - i * rows // n for i in range(n)]  # equal rows (+-1)
        assert max(sizes) - min(sizes) <= 1
        for p in parts:
            assert isinstance(p, np.ndarray) and p.dtype == dtype and p.shape[1:] == (cols,)
            if ctx.backend != "threads":
                continue  # results from executor processes are copies; the views stay there
            assert not p.flags.writeable
            if len(p):
                assert isinstance(p, np.memmap)  # (numpy cannot map zero bytes)
                with pytest.raises(ValueError):
                    p[0, 0] = 1  # read-only views of the file
        np.testing.assert_array_equal(np.concatenate(parts), a)
        assert ds.count() == rows
        np.testing.assert_array_equal(ds.map_partitions(lambda b: b * 2).collect_partitions()[-1],
                                      a[(n - 1) * rows // n:] * 2)
        del parts, ds
        np.testing.assert_array_equal(np.load(path), a)  # the file was never written to


def test_npy_file_errors(ctx, tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        ctx.npy_file(tmp_path / "missing.npy", 2)
    np.save(tmp_path / "scalar.npy", np.float64(3))
    with pytest.raises(ValueError):
        ctx.npy_file(tmp_path / "scalar.npy", 2)
    np.save(tmp_path / "one.npy", np.arange(5))
    with pytest.raises(ConfigError):
        ctx.npy_file(tmp_path / "one.npy", 0)


# -- text files ---------------------------------------------------------------------------------
def lines_of(text: str) -> list[str]:
    """Plain Python's reading: split at \\n, drop the empty string after a final \\n, and
    a \\r that ends a line."""
    out = text.split("\n")
    if out[-1] == "":
        out.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in out]


line_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=6)


@st.composite
def text_files(draw):
    lines = draw(st.lists(line_text, max_size=12))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    trailing = draw(st.booleans())
    text = ending.join(lines) + (ending if trailing and lines else "")
    return text


def _write(path, text):
    with open(path, "wb") as f:
        f.write(text.encode("utf-8"))


@SETTINGS
@given(text=text_files(), m=nparts)
def test_text_file(ctx, text, m):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.txt")
        _write(path, text)
        ds = ctx.text_file(path, m)
        got = ds.collect()
        assert got == lines_of(text)
        assert all("\n" not in ln and not ln.endswith("\r") for ln in got)
        size = len(text.encode("utf-8"))
        assert ds.num_partitions >= min(m, max(size, 1))  # at least min_partitions when there are bytes
        assert ds.count() == len(got)


def test_text_file_line_endings(ctx, tmp_path):
    cases = {
        "a\nb\nc\n": ["a", "b", "c"],
        "a\nb\nc": ["a", "b", "c"],
        "a\r\nb\r\n": ["a", "b"],
        "a\r\nb": ["a", "b"],
        "\n\n\n": ["", "", ""],
        "x\n\ny\n\n": ["x", "", "y", ""],
        "": [],
        "\n": [""],
        "only": ["only"],
    }
    for i, (text, expected) in enumerate(cases.items()):
        p = tmp_path / f"{i}.txt"
        _write(p, text)
        for m in range(1, 10):
            assert ctx.text_file(p, m).collect() == expected, (text, m)


def test_text_file_multibyte_characters_at_every_cut_point(ctx, tmp_path):
    """A pad line before the text moves every cut point; over pads and min_partitions
    1..9, a cut falls at every byte offset of the text, inside two-, three- and four-byte
    characters and between \\r and \\n, and no line may be lost, doubled or broken."""
    body = "é€\r\n𝄞ab\n\n日本語\r\n\r\nz𝄞\nü" * 2 + "\n"  # then an "end" line
    raw = body.encode("utf-8")
    expected_body = lines_of(body)
    covered: set[int] = set()
    for pad in range(0, 24):
        text = "p" * pad + "\n" + body + "end\n"
        path = tmp_path / f"pad{pad}.txt"
        _write(path, text)
        for m in range(1, 10):
            ds = ctx.text_file(path, m)
            assert ds.collect() == ["p" * pad] + expected_body + ["end"], (pad, m)
            covered.update(start - (pad + 1) for _, start, _ in ds.node.splits)
    assert set(range(len(raw) + 1)) <= covered, sorted(set(range(len(raw) + 1)) - covered)


def test_text_file_lines_longer_than_a_split_and_the_read_ahead(ctx, tmp_path):
    """A 200KB line spans several byte ranges and several read-ahead chunks: exactly one
    range (the one it starts in) returns it, whole."""
    long = "λ" * 100_000  # 200,000 bytes
    text = "a\n" + long + "\r\nb\n" + long + "\n\nc"
    _write(tmp_path / "long.txt", text)
    for m in (1, 2, 5, 9):
        ds = ctx.text_file(tmp_path / "long.txt", m)
        assert ds.collect() == ["a", long, "b", long, "", "c"], m
        assert sum(1 for p in ds.glom().collect() if p) <= 6


def test_a_split_is_never_larger_than_hadoops_block_size(ctx, tmp_path, monkeypatch):
    """``min_partitions`` is a minimum: a file larger than ``MAX_SPLIT`` (Hadoop's 32 MiB
    block size, here 64 KB) is cut into ranges of at most that, as Spark's ``textFile``
    cuts it, so a file larger than memory never becomes one partition larger than memory.
    The lines are those of the file, in order, whatever the cut; a CSV's header is read
    once."""
    from strataflow.io import text

    monkeypatch.setattr(text, "MAX_SPLIT", 64 << 10)
    lines = [f"{i},{'x' * (i % 37)}" for i in range(20_000)]  # ~0.5 MB
    _write(tmp_path / "big.csv", "a,b\n" + "\n".join(lines) + "\n")
    size = os.path.getsize(tmp_path / "big.csv")
    for m in (1, 2, 100):
        ds = ctx.text_file(tmp_path / "big.csv", m)
        assert all(end - start <= (64 << 10) * 1.1 for _, start, end in ds.node.splits), m
        assert ds.num_partitions >= max(m, size // (64 << 10)), m
        assert ds.collect() == ["a,b", *lines], m
    t = ctx.csv_file(tmp_path / "big.csv", 2, header=True).to_arrow()
    assert t.num_rows == len(lines) and t.column("a").to_pylist() == list(range(20_000))
    monkeypatch.setattr(text, "MAX_SPLIT", 32 << 20)  # the real one: a small file is cut as asked
    assert ctx.text_file(tmp_path / "big.csv", 3).num_partitions == 3


def test_text_file_of_a_directory_reads_visible_files_in_name_order(ctx, tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    files = {
        "b.txt": "b1\nb2\n",
        "a.txt": "a1\r\nä2",  # no final newline: its last line must not run into b.txt
        "c": "c1\n\nc𝄞\n",
        "d-empty": "",
        "_SUCCESS": "ignored\n",
        "_temporary": "ignored\n",
        ".hidden": "ignored\n",
        ".part-00000.tmp": "ignored\n",
    }
    for name, text in files.items():
        _write(d / name, text)
    (d / "sub").mkdir()  # not a file: skipped
    expected = ["a1", "ä2", "b1", "b2", "c1", "", "c𝄞"]
    for m in range(1, 10):
        ds = ctx.text_file(d, m)
        assert ds.collect() == expected, m
        assert ds.num_partitions >= 3  # at least one split per non-empty file
    empty = tmp_path / "empty"
    empty.mkdir()
    assert ctx.text_file(empty).collect() == []


def test_text_file_errors(ctx, tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        ctx.text_file(tmp_path / "nope.txt")
    _write(tmp_path / "t", "a\n")
    with pytest.raises(ConfigError):
        ctx.text_file(tmp_path / "t", 0)


# -- batches ------------------------------------------------------------------------------------
@SETTINGS
@given(parts=st.lists(st.lists(st.tuples(st.integers(0, 5), st.text(max_size=3)), max_size=6), min_size=1, max_size=9))
def test_arrow_table_partitions_iterate_rows_as_tuples(ctx, parts):
    def table(v):
        rows = v[0]
        return pa.table({"k": pa.array([k for k, _ in rows], pa.int64()),
                         "s": pa.array([s for _, s in rows], pa.string())})

    ds = ctx.parallelize(parts, len(parts)).map_partitions(table)
    flat = [r for p in parts for r in p]
    assert all(isinstance(v, pa.Table) for v in ds.collect_partitions())
    assert ds.collect() == flat  # rows as (k, s) tuples, in column order
    assert ds.count() == len(flat)
    assert ds.map(lambda r: r[1] + "!").collect() == [s + "!" for _, s in flat]
    kept = ds.filter(lambda r: r[0] % 2 == 0)
    assert all(isinstance(v, pa.Table) for v in kept.collect_partitions())  # still a table
    assert kept.collect() == [r for r in flat if r[0] % 2 == 0]
    assert ds.keys().collect() == [k for k, _ in flat] and ds.values().collect() == [s for _, s in flat]
    assert dict(ds.reduce_by_key(lambda a, b: a + b).map_values(sorted).collect()) == {
        k: sorted("".join(s for kk, s in flat if kk == k)) for k, _ in flat}
    assert [g.num_rows for g in ds.glom().collect()] == [len(p) for p in parts]


def test_batch_count_counts_rows(ctx):
    assert ctx.from_numpy(np.zeros((7, 5)), 3).count() == 7
    assert ctx.from_numpy(np.zeros(7), 3).count() == 7
    t = pa.table({"a": list(range(11)), "b": [str(i) for i in range(11)], "c": [0.5] * 11})
    ds = ctx.parallelize([0, 1], 2).map_partitions_with_index(lambda i, _: t.slice(i * 6, 6))
    assert ds.count() == 11
    assert ds.first() == (0, "0", 0.5)
    assert ds.take(8)[-1] == (7, "7", 0.5)
    zero_cols = ctx.parallelize([0], 1).map_partitions(lambda _: pa.table({}))
    assert zero_cols.count() == 0 and zero_cols.collect() == []


# -- numbers from delimited text (io/csv_parse.py: polars where it gives pyarrow's table) --------
def _float_text(rows: int, seed: int) -> tuple[bytes, list[list[float]]]:
    """Space-separated rows of 3 floats of every kind the parsers round differently if
    they are wrong (17 digits, exponents, -0.0), with \\r\\n and \\n endings."""
    rng = np.random.default_rng(seed)
    vals = [[float(x) for x in rng.normal(0, 10.0 ** rng.integers(-30, 30), 3)] for _ in range(rows)]
    vals[rows // 2][1] = -0.0
    ends = ["\n", "\r\n"]
    return "".join(" ".join(repr(v) for v in r) + ends[i % 2] for i, r in enumerate(vals)).encode(), vals


@pytest.mark.parametrize("parser", ["fast", "pyarrow"])
def test_csv_file_of_floats_on_both_parsers_cuts_at_lines_and_parses_exactly(parser, tmp_path, monkeypatch):
    from strataflow import Context
    from strataflow.io.csv_parse import PARSER_ENV

    if parser == "fast":  # before the Context starts: its executor processes inherit it
        monkeypatch.setenv(PARSER_ENV, "polars")
    else:
        monkeypatch.delenv(PARSER_ENV, raising=False)
    text, vals = _float_text(3000, seed=41)
    (tmp_path / "p.txt").write_bytes(text)
    names = ["x", "y", "z"]
    with Context(backend="processes", parallelism=2, progress=False, local_dirs=[str(tmp_path / "c")]) as c:
        for m in (1, 3, 7):
            ds = c.csv_file(tmp_path / "p.txt", m, delimiter=" ", column_names=names,
                            column_types={n: pa.float64() for n in names})
            assert ds.num_partitions >= m
            got = ds.collect()
            assert [tuple(r) for r in vals] == got
            assert [np.signbit(r[1]) for r in got] == [np.signbit(r[1]) for r in vals]


def test_csv_file_of_floats_names_the_file_and_row_of_a_bad_field(ctx, tmp_path):
    from strataflow import TaskFailedError

    text, _ = _float_text(400, seed=3)
    lines = text.split(b"\n")
    lines[350] = b"1.0 2.0 oops"
    (tmp_path / "bad.txt").write_bytes(b"\n".join(lines))
    names = ["x", "y", "z"]
    ds = ctx.csv_file(tmp_path / "bad.txt", 4, delimiter=" ", column_names=names,
                      column_types={n: pa.float64() for n in names})
    with pytest.raises(TaskFailedError, match=r"failed 1 time\(s\).*bad\.txt.*cannot be parsed at line 351: "
                                              r"column 'z': invalid value 'oops'") as info:
        ds.count()
    assert info.value.line == 351  # in the file, not pyarrow's Row # in the partition's range
