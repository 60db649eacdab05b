"""The paths users write (issue 39 §2): globs, ``file://`` URIs, comma lists, directories
with ``recursive=``, and fsspec URLs, for every reader and writer.

Remote paths are tested with fsspec's ``memory://`` filesystem (per process, so on the
threads backend, where the executors share the driver's process) and with a real S3 API
served in this process by moto's server on 127.0.0.1 (on both backends: executor
processes reach it through the s3fs filesystem pickled with the source). Nothing leaves
127.0.0.1.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsspec
from fsspec.implementations.memory import MemoryFileSystem

from moto_s3 import moto_s3
from strataflow.config import ConfigError
from strataflow.io.paths import NoMatchError, PathNotFoundError, expand_braces, split_paths


def _write(path, text: str) -> None:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


@pytest.fixture
def logs(tmp_path):
    """logs/part-0.txt .. part-3.txt, part-10.txt, notes.md, _SUCCESS, .hidden.txt."""
    d = tmp_path / "logs"
    for i in (0, 1, 2, 3, 10):
        _write(d / f"part-{i}.txt", f"p{i}a\np{i}b\n")
    _write(d / "notes.md", "note\n")
    _write(d / "_SUCCESS", "")
    _write(d / ".hidden.txt", "hidden\n")
    return d


def _lines(*ids: int) -> list[str]:
    return [x for i in ids for x in (f"p{i}a", f"p{i}b")]


# -- parsing -------------------------------------------------------------------------------------------
def test_split_paths_keeps_commas_inside_braces():
    assert split_paths("a,b") == ["a", "b"]
    assert split_paths("d/{a,b}.txt,c") == ["d/{a,b}.txt", "c"]
    assert split_paths(["a,b", "c"]) == ["a", "b", "c"]
    with pytest.raises(ConfigError, match="no path"):
        split_paths(",")


def test_expand_braces_nests():
    assert expand_braces("x{a,b{c,d}}y") == ["xay", "xbcy", "xbdy"]
    assert expand_braces("plain") == ["plain"]


# -- local: globs, URIs, lists, directories -------------------------------------------------------
def test_text_file_globs(ctx, logs):
    assert ctx.text_file(str(logs / "part-*.txt")).collect() == _lines(0, 1, 10, 2, 3)  # name order
    assert ctx.text_file(str(logs / "part-?.txt")).collect() == _lines(0, 1, 2, 3)
    assert ctx.text_file(str(logs / "part-[13].txt")).collect() == _lines(1, 3)
    assert ctx.text_file(str(logs / "part-[0-1].txt")).collect() == _lines(0, 1)
    assert ctx.text_file(str(logs / "part-[^0-2].txt")).collect() == _lines(3)  # Hadoop's negation
    assert ctx.text_file(str(logs / "part-[!0-2].txt")).collect() == _lines(3)
    assert ctx.text_file(str(logs / "part-{2,10}.txt")).collect() == _lines(2, 10)
    assert ctx.text_file(str(logs / "*")).collect() == ["note"] + _lines(0, 1, 10, 2, 3)  # no _SUCCESS, .hidden
    assert ctx.text_file(str(logs.parent / "l*")).collect() == ["note"] + _lines(0, 1, 10, 2, 3)  # a dir matched


def test_text_file_uris_and_lists(ctx, logs):
    a, b = logs / "part-1.txt", logs / "part-0.txt"
    assert ctx.text_file(f"file://{a}").collect() == _lines(1)
    assert ctx.text_file(f"file:{a}").collect() == _lines(1)  # Hadoop's file:/path
    assert ctx.text_file(f"file://localhost{a}").collect() == _lines(1)
    assert ctx.text_file(f"{a},{b}").collect() == _lines(1, 0)  # the order written
    assert ctx.text_file([a, f"file://{b}"]).collect() == _lines(1, 0)
    assert ctx.text_file(f"{logs}/part-{{1,3}}.txt,{b}").collect() == _lines(1, 3, 0)
    with pytest.raises(PathNotFoundError):  # a comma list fails on the one that is missing
        ctx.text_file(f"{a},{logs}/nope.txt")


def test_directories_and_recursive(ctx, tmp_path):
    d = tmp_path / "tree"
    _write(d / "b.txt", "b\n")
    _write(d / "a" / "x.txt", "ax\n")
    _write(d / "a" / "deeper" / "y.txt", "ay\n")
    _write(d / "_temporary" / "z.txt", "hidden dir\n")
    _write(d / ".cache" / "z.txt", "hidden dir\n")
    _write(d / "a" / "_SUCCESS", "")
    assert ctx.text_file(d).collect() == ["b"]  # subdirectories skipped
    assert ctx.text_file(d, recursive=True).collect() == ["ay", "ax", "b"]  # in path order: a/deeper/y, a/x, b
    assert sorted(k for k, _ in ctx.whole_text_files(d, recursive=True).collect()) == \
        [str(d / "a" / "deeper" / "y.txt"), str(d / "a" / "x.txt"), str(d / "b.txt")]


def test_text_file_cuts_a_glob_s_files_into_ranges(ctx, tmp_path):
    body = "".join(f"line {i} {'x' * (i % 13)}\n" for i in range(400))
    for i in range(3):
        _write(tmp_path / "in" / f"f{i}.txt", body)
    ds = ctx.text_file(str(tmp_path / "in" / "f*.txt"), 12)
    assert ds.num_partitions >= 12
    assert ds.collect() == body.splitlines() * 3


def test_missing_path_and_empty_glob_say_different_things(ctx, tmp_path):
    (tmp_path / "d").mkdir()
    for read in (ctx.text_file, ctx.csv_file, ctx.parquet_file, ctx.npy_file, ctx.whole_text_files,
                 ctx.binary_files, ctx.pickle_file):
        with pytest.raises(PathNotFoundError, match=r"path '.*nope\.txt' does not exist") as missing:
            read(str(tmp_path / "nope.txt"))
        with pytest.raises(NoMatchError, match=r"the pattern '.*d/\*\.txt' matches no files") as empty:
            read(str(tmp_path / "d" / "*.txt"))
        assert "does not exist" not in str(empty.value) and "matches" not in str(missing.value)
        assert isinstance(missing.value, (ConfigError, FileNotFoundError))  # either catches both
        assert isinstance(empty.value, FileNotFoundError)
    with pytest.raises(PathNotFoundError, match="does not exist"):
        ctx.text_file(f"file://{tmp_path}/nope.txt")
    with pytest.raises(NoMatchError):
        ctx.text_file(str(tmp_path / "d" / "{a,b}.txt"))


def test_every_local_reader_takes_a_glob(ctx, tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    for i in range(3):
        pq.write_table(pa.table({"x": [i, i + 10]}), d / f"t{i}.parquet")
        np.save(d / f"a{i}.npy", np.full((2, 2), i, dtype=np.int32))
        _write(d / f"c{i}.csv", f"x,y\n{i},{i}.5\n")
        (d / f"b{i}.bin").write_bytes(bytes([i]) * 3)
    assert ctx.parquet_file(str(d / "t[02].parquet")).to_arrow().column("x").to_pylist() == [0, 10, 2, 12]
    np.testing.assert_array_equal(np.concatenate(ctx.npy_file(str(d / "a*.npy"), 4).collect_partitions()),
                                  np.repeat(np.arange(3, dtype=np.int32), 4).reshape(6, 2))
    t = ctx.csv_file(str(d / "c?.csv"), header=True).to_arrow()
    assert t.column("x").to_pylist() == [0, 1, 2] and t.column("y").to_pylist() == [0.5, 1.5, 2.5]
    assert ctx.binary_files(str(d / "b*.bin")).collect() == [(str(d / f"b{i}.bin"), bytes([i]) * 3)
                                                             for i in range(3)]
    ctx.parallelize([1, 2], 2).save_as_pickle_file(tmp_path / "pk1")
    ctx.parallelize([3], 1).save_as_pickle_file(tmp_path / "pk2")
    assert sorted(ctx.pickle_file(str(tmp_path / "pk*")).collect()) == [1, 2, 3]


def test_writers_take_file_uris(ctx, tmp_path):
    ctx.parallelize(["a", "b"], 2).save_as_text_file(f"file://{tmp_path}/out")
    assert sorted(os.listdir(tmp_path / "out")) == ["_SUCCESS", "part-00000", "part-00001"]
    with pytest.raises(FileExistsError, match="already exists"):
        ctx.parallelize(["a"], 1).save_as_text_file(f"file://{tmp_path}/out")


# -- memory:// (threads: one process) ---------------------------------------------------------------
@pytest.fixture
def mem():
    """A fresh memory:// tree under a unique root, removed afterwards."""
    fs = fsspec.filesystem("memory")
    root = f"/t{os.urandom(4).hex()}"
    yield fs, root
    if fs.exists(root):
        fs.rm(root, recursive=True)


class RecordingMemoryFS(MemoryFileSystem):
    """memory:// that records every byte range read (``recmem://``): proves a remote
    split reads its range, not the file."""

    protocol = "recmem"
    reads: list = []

    @classmethod
    def _strip_protocol(cls, path):
        if path.startswith("recmem://"):
            path = "memory://" + path[len("recmem://"):]
        return super()._strip_protocol(path)

    def cat_file(self, path, start=None, end=None, **kwargs):
        data = super().cat_file(path, start, end, **kwargs)
        RecordingMemoryFS.reads.append((path, start, end, len(data)))
        return data


fsspec.register_implementation("recmem", RecordingMemoryFS, clobber=True)


def test_memory_text_splits_are_byte_ranges(local_ctx, mem):
    fs, root = mem
    body = "".join(f"row {i:05d} é𝄞 {'z' * (i % 7)}\n" for i in range(40000))  # ~850 kB: 64 kB read-aheads
    raw = body.encode()
    fs.pipe(f"{root}/big.txt", raw)
    RecordingMemoryFS.reads.clear()
    ds = local_ctx.text_file(f"recmem://{root}/big.txt", 8)
    assert ds.num_partitions == 8
    assert ds.collect() == body.splitlines()
    reads = RecordingMemoryFS.reads
    assert reads and all(n < len(raw) // 4 for _, _, _, n in reads), reads  # never the whole file
    assert sum(n for *_, n in reads) < 1.2 * len(raw)  # each range, and a little past its end
    # every cut point gives the same lines (a range's first and last line decided across ranges)
    for m in (3, 7, 31):
        assert local_ctx.text_file(f"memory://{root}/big.txt", m).collect() == body.splitlines()


def test_memory_every_reader(local_ctx, mem):
    fs, root = mem
    fs.pipe(f"{root}/in/a.txt", b"a1\na2")
    fs.pipe(f"{root}/in/b.txt", b"b1\n")
    fs.pipe(f"{root}/in/sub/c.txt", b"c1\n")
    fs.pipe(f"{root}/in/_SUCCESS", b"")
    fs.pipe(f"{root}/in/z.txt.gz", gzip.compress(b"z1\nz2\n"))
    url = f"memory://{root}/in"
    assert local_ctx.text_file(url).collect() == ["a1", "a2", "b1", "z1", "z2"]
    assert local_ctx.text_file(url, recursive=True).collect() == ["a1", "a2", "b1", "c1", "z1", "z2"]
    assert local_ctx.text_file(f"{url}/[ab].txt").collect() == ["a1", "a2", "b1"]
    assert local_ctx.text_file(f"{url}/?.txt,{url}/sub/c.txt").collect() == ["a1", "a2", "b1", "c1"]
    assert local_ctx.whole_text_files(f"{url}/*.txt").collect() == [
        (f"memory://{root}/in/a.txt", "a1\na2"), (f"memory://{root}/in/b.txt", "b1\n")]
    assert local_ctx.binary_files(f"{url}/b.txt").collect() == [(f"memory://{root}/in/b.txt", b"b1\n")]

    fs.pipe(f"{root}/csv/1.csv", b"k,v\nx,1\ny,2\n")
    fs.pipe(f"{root}/csv/2.csv", b"k,v\nz,3.5\n")
    t = local_ctx.csv_file(f"memory://{root}/csv/*.csv", 3, header=True).to_arrow()
    assert t.column("k").to_pylist() == ["x", "y", "z"] and t.column("v").to_pylist() == [1.0, 2.0, 3.5]

    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"x": list(range(100))}), sink, row_group_size=10)
    fs.pipe(f"{root}/pq/t.parquet", sink.getvalue().to_pybytes())
    ds = local_ctx.parquet_file(f"memory://{root}/pq", 4, columns=["x"])
    assert ds.num_partitions == 4 and ds.to_arrow().column("x").to_pylist() == list(range(100))

    a = np.arange(60, dtype=np.float32).reshape(20, 3)
    for name, arr in (("n.npy", a), ("f.npy", np.asfortranarray(a))):
        buf = pa.BufferOutputStream()
        with pa.PythonFile(buf, mode="w") as fh:
            np.save(fh, arr)
        fs.pipe(f"{root}/npy/{name}", buf.getvalue().to_pybytes())
        parts = local_ctx.npy_file(f"memory://{root}/npy/{name}", 3).collect_partitions()
        assert [len(p) for p in parts] == [6, 7, 7]
        np.testing.assert_array_equal(np.concatenate(parts), a)


def test_memory_writers_round_trip(local_ctx, mem):
    fs, root = mem
    base = f"memory://{root}"
    ds = local_ctx.parallelize(list(range(10)), 3)
    ds.save_as_text_file(f"{base}/text")
    assert sorted(fs.ls(f"{root}/text", detail=False)) == [f"{root}/text/{n}" for n in
                                                          ("_SUCCESS", "part-00000", "part-00001", "part-00002")]
    assert local_ctx.text_file(f"{base}/text").map(int).collect() == list(range(10))
    ds.save_as_text_file(f"{base}/gz", compression="gzip")
    assert local_ctx.text_file(f"{base}/gz").map(int).collect() == list(range(10))
    ds.save_as_pickle_file(f"{base}/pickle")
    assert local_ctx.pickle_file(f"{base}/pickle").collect() == list(range(10))
    local_ctx.from_numpy(np.arange(12.0).reshape(6, 2), 3).save_as_npy(f"{base}/npy")
    assert json.loads(fs.cat(f"{root}/npy/_manifest.json"))["rows"] == 6
    np.testing.assert_array_equal(np.concatenate(local_ctx.npy_file(f"{base}/npy", 2).collect_partitions()),
                                  np.arange(12.0).reshape(6, 2))
    local_ctx.from_arrow(pa.table({"x": [1, 2, 3]}), 2).save_as_parquet(f"{base}/pq")
    assert local_ctx.parquet_file(f"{base}/pq").to_arrow().column("x").to_pylist() == [1, 2, 3]
    with pytest.raises(FileExistsError, match="already exists"):
        ds.save_as_text_file(f"{base}/text")


def test_memory_remote_errors(local_ctx, mem):
    fs, root = mem
    with pytest.raises(PathNotFoundError, match=r"memory://.*/nope' does not exist"):
        local_ctx.text_file(f"memory://{root}/nope")
    fs.pipe(f"{root}/d/a.txt", b"x\n")
    with pytest.raises(NoMatchError, match="matches no files"):
        local_ctx.text_file(f"memory://{root}/d/*.csv")
    fs.pipe(f"{root}/bad.npy", b"\x93NUMPY garbage")
    with pytest.raises(ConfigError, match=r"memory://.*bad\.npy.*not a readable \.npy"):
        local_ctx.npy_file(f"memory://{root}/bad.npy")


def test_a_url_without_a_filesystem_is_named(local_ctx):
    with pytest.raises(ConfigError, match=r"no filesystem for 'nosuchproto://x/y'"):
        local_ctx.text_file("nosuchproto://x/y")


# -- S3 through moto's server (both backends) ------------------------------------------------------
@pytest.fixture(scope="module")
def s3():
    """A bucket on an S3 API served in this process on 127.0.0.1, and fsspec configured
    to reach it (the configuration travels with the pickled s3fs filesystem)."""
    with moto_s3("bkt") as options:
        old = fsspec.config.conf.get("s3")
        fsspec.config.conf["s3"] = options
        try:
            yield fsspec.filesystem("s3")
        finally:
            fsspec.config.conf.pop("s3")
            if old is not None:
                fsspec.config.conf["s3"] = old


def test_s3_readers(ctx, s3):
    prefix = f"bkt/r-{os.urandom(4).hex()}"
    body = "".join(f"{i},{i * 0.5}\n" for i in range(2000))
    s3.pipe(f"{prefix}/logs/part-0.txt", body.encode())
    s3.pipe(f"{prefix}/logs/part-1.txt", b"9999,1.0\n")
    s3.pipe(f"{prefix}/logs/_SUCCESS", b"")
    ds = ctx.text_file(f"s3://{prefix}/logs/part-*.txt", 5)
    assert ds.num_partitions >= 5
    assert ds.collect() == body.splitlines() + ["9999,1.0"]
    assert ctx.text_file(f"s3://{prefix}/logs").count() == 2001
    t = ctx.csv_file(f"s3://{prefix}/logs/part-[01].txt", 4, column_names=["i", "x"]).to_arrow()
    assert t.num_rows == 2001 and t.schema.field("i").type == pa.int64()
    assert ctx.whole_text_files(f"s3://{prefix}/logs/part-1.txt").collect() == \
        [(f"s3://{prefix}/logs/part-1.txt", "9999,1.0\n")]
    arr = np.arange(40, dtype=np.int64).reshape(10, 4)
    with s3.open(f"{prefix}/a.npy", "wb") as fh:
        np.save(fh, arr)
    np.testing.assert_array_equal(np.concatenate(ctx.npy_file(f"s3://{prefix}/a.npy", 3).collect_partitions()), arr)
    with s3.open(f"{prefix}/t.parquet", "wb") as fh:
        pq.write_table(pa.table({"x": list(range(50))}), fh, row_group_size=10)
    assert ctx.parquet_file(f"s3://{prefix}/t.parquet", 5).to_arrow().column("x").to_pylist() == list(range(50))
    with pytest.raises(PathNotFoundError, match="does not exist"):
        ctx.text_file(f"s3://{prefix}/nope.txt")
    with pytest.raises(NoMatchError, match="matches no files"):
        ctx.text_file(f"s3://{prefix}/logs/*.csv")


def test_s3_writers(ctx, s3):
    prefix = f"bkt/w-{os.urandom(4).hex()}"
    ds = ctx.parallelize([f"r{i}" for i in range(7)], 3)
    ds.save_as_text_file(f"s3://{prefix}/text")
    assert sorted(n.rsplit("/", 1)[-1] for n in s3.ls(f"{prefix}/text", detail=False)) == \
        ["_SUCCESS", "part-00000", "part-00001", "part-00002"]
    assert ctx.text_file(f"s3://{prefix}/text").collect() == [f"r{i}" for i in range(7)]
    ctx.from_numpy(np.arange(8).reshape(4, 2), 2).save_as_npy(f"s3://{prefix}/npy")
    np.testing.assert_array_equal(ctx.npy_file(f"s3://{prefix}/npy").collect(), np.arange(8).reshape(4, 2))
    ctx.from_arrow(pa.table({"x": [1.5, 2.5]}), 2).save_as_parquet(f"s3://{prefix}/pq")
    assert ctx.parquet_file(f"s3://{prefix}/pq").to_arrow().column("x").to_pylist() == [1.5, 2.5]
    ds.save_as_pickle_file(f"s3://{prefix}/pk")
    assert ctx.pickle_file(f"s3://{prefix}/pk").collect() == [f"r{i}" for i in range(7)]
    with pytest.raises(FileExistsError, match="already exists"):
        ds.save_as_text_file(f"s3://{prefix}/text")


def test_a_failed_remote_part_uploads_nothing(local_ctx, mem):
    fs, root = mem

    def boom(i, v):
        if i == 1:
            raise RuntimeError("no")
        return v

    with pytest.raises(Exception):
        local_ctx.parallelize(list(range(4)), 2).map_partitions_with_index(boom) \
            .save_as_text_file(f"memory://{root}/failed")
    names = [n.rsplit("/", 1)[-1] for n in fs.ls(f"{root}/failed", detail=False)]
    assert "_SUCCESS" not in names and "part-00001" not in names


# -- the PySpark names -----------------------------------------------------------------------------
def test_pyspark_names_take_the_same_paths(logs, tmp_path, mem):
    from strataflow.pyspark import SparkConf, SparkContext

    fs, root = mem
    conf = SparkConf().set("strataflow.backend", "threads").set("strataflow.progress", "false")
    with SparkContext("local[2]", conf=conf) as sc:
        assert sc.textFile(f"file://{logs}/part-[01].txt").collect() == _lines(0, 1)
        assert sc.textFile(f"{logs}/part-0.txt,{logs}/part-{{2,3}}.txt").collect() == _lines(0, 2, 3)
        sc.parallelize(["u", "v"], 2).saveAsTextFile(f"memory://{root}/out")
        assert sc.textFile(f"memory://{root}/out/part-*").collect() == ["u", "v"]
        assert sorted(sc.wholeTextFiles(f"memory://{root}/out").values().collect()) == ["u\n", "v\n"]
        assert sc.binaryFiles(f"{logs}/part-1*").keys().collect() == [f"file:{logs}/part-1.txt",
                                                                      f"file:{logs}/part-10.txt"]
        sc.parallelize([1, 2], 1).saveAsPickleFile(f"memory://{root}/pk")
        assert sc.pickleFile(f"memory://{root}/pk").collect() == [1, 2]
    _write(tmp_path / "nest" / "deep" / "x.txt", "deep\n")
    _write(tmp_path / "nest" / "top.txt", "top\n")
    with SparkContext("local[2]", conf=conf.copy().set(
            "spark.hadoop.mapreduce.input.fileinputformat.input.dir.recursive", "true")) as sc:
        assert sc.textFile(str(tmp_path / "nest")).collect() == ["deep", "top"]


def test_file_ref_pickles_with_its_filesystem(mem):
    from strataflow.io.paths import resolve_files

    fs, root = mem
    fs.pipe(f"{root}/p/a.bin", b"0123456789")
    (ref,) = resolve_files(f"memory://{root}/p/*.bin", "test")
    back = pickle.loads(pickle.dumps(ref))
    assert back.name == f"memory://{root}/p/a.bin" and back.size == 10
    assert back.read_range(3, 6) == b"345" and back.read_range(8, 50) == b"89"
    with back.open() as fh:
        fh.seek(-2, os.SEEK_END)
        assert fh.read() == b"89"
