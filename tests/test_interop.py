"""pandas, Arrow, Parquet, .npy and CSV in and out, without silent wrong answers.

Each test starts from a case that once gave a wrong answer or a late failure (issue 17):
DataFrame partitions counted as their columns, ``parallelize(pa.Table)`` giving columns,
a CSV header read as a data row with partitions of different schemas, and values that
are not rows iterated anyway. Round trips compare against the data itself, dtypes and
row order included.
"""

from __future__ import annotations

import json
import operator
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from strataflow import ConfigError, TaskFailedError
from strataflow.dataset.actions import DatasetRowsError
from strataflow.common.batch import RowsTypeError

pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.usefixtures("no_leaks")

# pyarrow's CSV reader opens a pipe (for its thread pool) the first time it runs in a
# process, and keeps it: run it once here, so no_leaks does not count that pipe as a leak.
pacsv.read_csv(pa.BufferReader(b"a\n1\n"), read_options=pacsv.ReadOptions(use_threads=False))


def frame(n: int = 1000) -> "pd.DataFrame":
    """Four columns of different dtypes (int, float, string, bool), ``n`` rows."""
    i = np.arange(n)
    return pd.DataFrame({"k": i % 7, "x": i * 0.5, "name": [f"n{j}" for j in i], "even": i % 2 == 0})


# -- DataFrames and Tables are rows ------------------------------------------------------------
def test_dataframe_partitions_count_rows_not_columns(ctx):
    four_columns = ctx.parallelize(range(1000), 4).map_partitions(
        lambda v: pd.DataFrame({"a": list(v), "b": list(v), "c": list(v), "d": list(v)}))
    assert four_columns.count() == 1000  # was 16: four partitions of four column names
    ds = ctx.from_pandas(frame(), 3)
    assert ds.num_partitions == 3 and ds.count() == 1000
    assert all(isinstance(p, pd.DataFrame) for p in ds.collect_partitions())
    assert ds.take(2) == [(0, 0.0, "n0", True), (1, 0.5, "n1", False)]
    assert ds.map(lambda row: row[2]).collect() == [f"n{j}" for j in range(1000)]


def test_parallelize_of_a_table_or_a_frame_gives_rows(ctx):
    table = pa.table({"a": [1, 2, 3, 4, 5], "b": list("vwxyz")})
    rows = [(1, "v"), (2, "w"), (3, "x"), (4, "y"), (5, "z")]
    for data in (table, table.to_batches()[0], table.to_pandas()):
        ds = ctx.parallelize(data, 2)
        assert ds.count() == 5 and ds.collect() == rows
    assert ctx.parallelize(pa.chunked_array([[1, 2], [3]]), 2).collect() == [1, 2, 3]  # values, not pa scalars
    assert ctx.from_arrow(table, 3).to_arrow().equals(table)


def test_from_pandas_to_pandas_keeps_index_dtypes_and_order(ctx):
    df = frame(50)
    df["cat"] = pd.Categorical(["a", "b"] * 25)
    df["when"] = pd.date_range("2024-01-01", periods=50, freq="h", tz="UTC")
    df["maybe"] = pd.array([None if j % 5 == 0 else j for j in range(50)], dtype="Int64")
    df.index = np.arange(100, 150)[::-1]  # a non-default index survives
    back = ctx.from_pandas(df, 4).to_pandas()
    pd.testing.assert_frame_equal(back, df)


def test_dataframe_partitions_group_by_key_and_repartition(ctx):
    df = frame(700)[["k", "x"]]  # two columns: a pair dataset
    ds = ctx.from_pandas(df, 3)
    grouped = dict(ds.group_by_key(4).map_values(sorted).collect())
    expected = {k: sorted(g["x"].tolist()) for k, g in df.groupby("k")}
    assert grouped == expected
    assert dict(ds.reduce_by_key(operator.add).collect()) == df.groupby("k")["x"].sum().to_dict()
    moved = ds.repartition(5)
    assert moved.count() == 700  # a DataFrame bucket travels as a DataFrame, not as its column names
    assert sorted(moved.collect()) == sorted(df.itertuples(index=False, name=None))


def test_sample_takes_dataframe_rows(ctx):
    ds = ctx.from_pandas(frame(), 3).sample(False, 0.5, seed=1)
    parts = ds.collect_partitions()
    assert all(isinstance(p, pd.DataFrame) and list(p.columns) == ["k", "x", "name", "even"] for p in parts)
    n = ds.count()
    assert 350 < n < 650 and n == sum(len(p) for p in parts)  # rows, not column labels


def test_filter_keeps_dataframe_rows(ctx):
    ds = ctx.from_pandas(frame(), 3).filter(lambda row: row[3])  # column 'even'
    assert ds.count() == 500
    parts = ds.collect_partitions()
    assert all(isinstance(p, pd.DataFrame) and list(p.columns) == ["k", "x", "name", "even"] for p in parts)


def test_to_arrow_names_columns_of_records_and_arrays(ctx):
    assert ctx.parallelize([(1, "a"), (2, "b")], 2).to_arrow().to_pydict() == {"_1": [1, 2], "_2": ["a", "b"]}
    assert ctx.parallelize([{"u": 1}, {"u": 2}], 2).to_arrow().to_pydict() == {"u": [1, 2]}
    a = np.arange(6.0).reshape(3, 2)
    assert ctx.from_numpy(a, 2).to_arrow().to_pydict() == {"0": [0.0, 2.0, 4.0], "1": [1.0, 3.0, 5.0]}
    pd.testing.assert_frame_equal(ctx.parallelize([1, 2, 3], 3).to_pandas(), pd.DataFrame({"value": [1, 2, 3]}))


# -- writers and readers -----------------------------------------------------------------------
def test_pandas_to_parquet_and_back_keeps_dtypes_and_row_order(ctx, tmp_path):
    df = frame(1000)
    df["cat"] = pd.Categorical(["a", "b", "c", "d"] * 250)
    out = tmp_path / "pq"
    ctx.from_pandas(df, 4).save_as_parquet(out)
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["format"] == "parquet" and manifest["rows"] == 1000
    assert [p["file"] for p in manifest["parts"]] == [f"part-{i:05d}.parquet" for i in range(4)]
    assert (out / "_SUCCESS").exists()
    for n in (1, 3):
        ds = ctx.parquet_file(out, n)
        assert ds.count() == 1000
        assert len({t.schema for t in ds.collect_partitions()}) == 1
        pd.testing.assert_frame_equal(ds.to_pandas(), df)
    assert ctx.parquet_file(out, columns=["name"]).to_arrow().column("name").to_pylist() == df["name"].tolist()
    with pytest.raises(FileExistsError):
        ctx.from_pandas(df, 2).save_as_parquet(out)


def test_parquet_of_empty_partitions_and_widened_types(ctx, tmp_path):
    # partitions 0 and 2 are empty lists, 1 holds ints, 3 floats: one schema comes back (double)
    ds = ctx.parallelize([[], [1, 2], [], [2.5]], 4).flat_map(lambda p: [(x,) for x in p])
    ds.save_as_parquet(tmp_path / "mixed")
    back = ctx.parquet_file(tmp_path / "mixed", 2)
    assert back.collect() == [(1.0,), (2.0,), (2.5,)]
    assert {t.schema.field("_1").type for t in back.collect_partitions()} == {pa.float64()}


def test_npy_round_trip_through_the_manifest(ctx, tmp_path):
    a = np.arange(300, dtype=np.int32).reshape(100, 3)
    ctx.from_numpy(a, 4).save_as_npy(tmp_path / "a")
    for n in (1, 3, 7):
        parts = ctx.npy_file(tmp_path / "a", n).collect_partitions()
        assert len(parts) == n and all(p.dtype == np.int32 for p in parts)
        np.testing.assert_array_equal(np.concatenate(parts), a)
    df = pd.DataFrame({"u": np.arange(10.0), "v": np.arange(10.0) * 2})
    ctx.from_pandas(df, 3).save_as_npy(tmp_path / "df")
    np.testing.assert_array_equal(np.concatenate(ctx.npy_file(tmp_path / "df", 2).collect_partitions()),
                                  df.to_numpy())
    np.save(tmp_path / "a" / "part-00001.npy", a[:3])  # a part replaced behind the manifest's back
    with pytest.raises(ConfigError, match=r"part-00001\.npy.*3 rows.*manifest says 25"):
        ctx.npy_file(tmp_path / "a")


def test_save_as_npy_refuses_values_that_are_not_numbers(ctx, tmp_path):
    with pytest.raises(DatasetRowsError, match="partition 1 holds Python objects") as info:
        ctx.parallelize([1, {"a": 1}], 2).save_as_npy(tmp_path / "objects")
    assert info.value.attempts == 1
    with pytest.raises(TypeError, match="different dtypes or row shapes"):
        ctx.parallelize([[1, 2], [3, 4, 5]], 2).map_partitions(lambda v: np.asarray(v[0])[None, :]) \
            .save_as_npy(tmp_path / "shapes")


def test_save_as_text_file_writes_an_ndarray_row_on_one_whole_line(ctx, tmp_path):
    a = np.arange(2 * 1200, dtype=np.int64).reshape(2, 1200)  # numpy's str wraps and shortens these
    ctx.from_numpy(a, 2).save_as_text_file(tmp_path / "t")
    lines = ctx.text_file(tmp_path / "t").collect()
    assert len(lines) == 2
    assert [np.array(line.strip("[]").split(), dtype=np.int64) for line in lines][1].tolist() == a[1].tolist()


# -- CSV: a header is not data, one schema --------------------------------------------------------
def _write_csv(path, rows, header="id,score,name,flag"):
    with open(path, "w") as f:
        if header:
            f.write(header + "\n")
        for i in range(rows):
            score = f"{i}.5" if i == rows - 10 else str(i)  # a float only near the end
            name = "" if i < rows // 2 else f"n{i}"  # empty in the first half
            f.write(f"{i},{score},{name},{'true' if i % 2 else 'false'}\n")


def test_csv_header_is_not_a_row_and_partitions_share_one_schema(ctx, tmp_path):
    path = tmp_path / "in.csv"
    _write_csv(path, 3000)
    ds = ctx.csv_file(path, 4, header=True)
    parts = ds.collect_partitions()
    assert len(parts) >= 4 and len({t.schema for t in parts}) == 1
    assert parts[0].schema == pa.schema([("id", pa.int64()), ("score", pa.float64()), ("name", pa.string()),
                                         ("flag", pa.bool_())])
    assert ds.count() == 3000
    assert ds.first() == (0, 0.0, "", False)
    assert ds.map(lambda r: r[1]).sum() == sum(range(3000)) + 0.5
    strings = ctx.csv_file(path, 4, header=True, infer_schema=False)
    assert {t.schema for t in strings.collect_partitions()} == {pa.schema([(n, pa.string()) for n in
                                                                           ("id", "score", "name", "flag")])}
    typed = ctx.csv_file(path, 4, header=True, column_types={"id": pa.int32()})
    assert typed.collect_partitions()[-1].schema.field("id").type == pa.int32()


def test_csv_directory_with_a_header_per_file(ctx, tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    _write_csv(d / "a.csv", 100)
    _write_csv(d / "b.csv", 50)
    ds = ctx.csv_file(d, 3, header=True)
    assert ds.count() == 150 and "id" not in ds.map(lambda r: str(r[0])).collect()
    _write_csv(d / "c.csv", 5, header="id,points,name,flag")
    with pytest.raises(ConfigError, match=r"header of .*c\.csv"):
        ctx.csv_file(d, header=True)


# -- reduce on batches, and values that are not rows ------------------------------------------------
def test_reduce_on_ndarray_batches_folds_rows_like_records(ctx):
    a = (np.arange(400) % 97).astype(np.int64).reshape(100, 4)
    batches, records = ctx.from_numpy(a, 3), ctx.parallelize(list(a), 3)
    for f in (np.add, operator.add, np.maximum, lambda x, y: x + y):
        assert np.array_equal(batches.reduce(f), records.reduce(f))
    assert np.array_equal(batches.reduce(np.add), batches.sum()) and np.array_equal(batches.reduce(np.add),
                                                                                     a.sum(axis=0))
    small = ctx.from_numpy(np.full(300, 100, dtype=np.int8), 2)
    assert small.reduce(np.maximum).dtype == np.int8  # the rows' dtype, as a row-by-row fold gives
    first = batches.reduce(lambda x, y: x if x[0] >= y[0] else y)  # any function: still a fold of rows
    assert first.shape == (4,) and first[0] == a[:, 0].max()
    with pytest.raises(ValueError, match="empty"):
        ctx.from_numpy(np.zeros((0, 3)), 2).reduce(np.add)


def test_a_value_that_is_not_rows_is_a_type_error_naming_dataset_and_type(ctx):
    schema = pa.schema([("a", pa.int64())])
    ds = ctx.parallelize(range(10), 2).map_partitions(
        lambda v: pa.RecordBatchReader.from_batches(schema, [])).set_name("streams")
    with pytest.raises(DatasetRowsError, match=r"dataset streams#\d+.*pyarrow.*RecordBatchReader") as info:
        ds.count()
    assert isinstance(info.value, TypeError) and isinstance(info.value, TaskFailedError)
    assert info.value.attempts == 1  # not retried: every attempt would fail the same way
    with pytest.raises(TypeError, match=r"map_partitions#\d+.*returned int"):
        ctx.parallelize(range(10), 2).map_partitions(lambda v: 5).collect()

    class Frame:  # another library's data frame: iterating it gives column names
        columns = ["a", "b"]

        def __dataframe__(self):
            raise NotImplementedError

        def __iter__(self):
            return iter(self.columns)

    with pytest.raises(RowsTypeError, match=r"parallelize's data.*Frame"):
        ctx.parallelize(Frame(), 2)


def test_is_dataframe_while_pandas_is_half_imported(monkeypatch):
    """A task thread that looks while another thread is importing pandas (``sys.modules``
    holds the module before its ``DataFrame`` exists) sees no DataFrame, not an error:
    two tasks writing Parquet once failed with "partially initialized module 'pandas'"."""
    import types

    from strataflow.common.batch import is_dataframe

    monkeypatch.setitem(sys.modules, "pandas", types.ModuleType("pandas"))
    assert is_dataframe([1, 2]) is False
