"""Files shipped to the executors (``Context.add_file`` / ``add_archive``, ``files.get``),
compressed text out and in (``save_as_text_file(compression=...)``), and the status page
(``Context.serve_status``)."""

from __future__ import annotations

import gzip
import json
import os
import tarfile
import urllib.error
import urllib.request
import zipfile

import pytest

import strataflow
from strataflow.shipping import files
from strataflow.shipping.broadcast import Broadcast
from strataflow.io.compression import CodecError, codec_name
from strataflow.io.sources import InputError


def _read_shipped(name, rel=""):
    def f(x):
        with open(os.path.join(files.get(name), rel) if rel else files.get(name)) as fh:
            return x * int(fh.read())
    return f


def test_a_file_and_an_archive_reach_every_task_as_snapshots(ctx, tmp_path):
    src = tmp_path / "mult.txt"
    src.write_text("3")
    ctx.add_file(str(src))
    ctx.add_file(str(src))  # the same path again: ignored
    packed = tmp_path / "env.tar.gz"
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "k.txt").write_text("5")
    with tarfile.open(packed, "w:gz") as tar:
        tar.add(inner, arcname="pkg")
    ctx.add_archive(f"{packed}#envdir")  # Spark's alias: the directory's name
    src.write_text("100")  # a later change is not seen: the copy was taken when added
    assert ctx.parallelize([1, 2, 3], 3).map(_read_shipped("mult.txt")).collect() == [3, 6, 9]
    assert ctx.parallelize([1, 2], 2).map(_read_shipped("envdir", "pkg/k.txt")).collect() == [5, 10]
    assert f"file:{src}" in ctx.list_files and f"file:{packed}#envdir" in ctx.list_archives
    assert open(files.get("mult.txt")).read() == "3"  # the driver finds it too


def test_a_directory_needs_recursive_and_ships_whole(local_ctx, tmp_path):
    d = tmp_path / "conf"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "v.txt").write_text("7")
    with pytest.raises(ValueError, match="is a directory; pass recursive=True"):
        local_ctx.add_file(str(d))
    local_ctx.add_file(str(d), recursive=True)
    assert local_ctx.parallelize([1], 1).map(_read_shipped("conf", "sub/v.txt")).collect() == [7]


def test_bad_additions_are_clear_errors(local_ctx, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        local_ctx.add_file(str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="not an archive strataflow can unpack"):
        (tmp_path / "x.rar").write_bytes(b"rar")
        local_ctx.add_archive(str(tmp_path / "x.rar"))
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="could not be unpacked"):
        local_ctx.add_archive(str(tmp_path / "bad.zip"))
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "same.txt").write_text("1")
    (b / "same.txt").write_text("2")
    local_ctx.add_file(str(a / "same.txt"))
    with pytest.raises(ValueError, match="already added from"):
        local_ctx.add_file(str(b / "same.txt"))
    with pytest.raises(FileNotFoundError, match="no file named 'nothing.txt' was added"):
        files.get("nothing.txt")


def test_an_executor_without_the_drivers_copy_writes_the_shipped_bytes_once(tmp_path):
    """What an executor on another machine does (ray): the driver's copy is not there, so
    the shipped bytes are written, or unpacked, under the executor's own directory."""
    z = tmp_path / "a.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("in/x.txt", "42")
    entries = {"f.txt": files.ShippedFile("f.txt", "file:/elsewhere/f.txt", "file", "/elsewhere/f.txt",
                                          Broadcast(None, b"9")),
               "a.zip": files.ShippedFile("a.zip", "file:/elsewhere/a.zip", "archive", "/elsewhere/a.zip",
                                          Broadcast(None, z.read_bytes()), "zip")}
    root = tmp_path / "exec-root"
    files.install(entries, str(root))
    try:
        assert open(files.get("f.txt")).read() == "9" and files.get("f.txt") == str(root / "f.txt")
        assert open(os.path.join(files.get("a.zip"), "in", "x.txt")).read() == "42"
        assert sorted(os.listdir(root)) == ["a.zip", "f.txt"]  # no staging left behind
    finally:
        files.forget(entries)


def test_stopping_the_context_forgets_its_files(tmp_path):
    (tmp_path / "g.txt").write_text("1")
    with strataflow.Context(memory="64MB", parallelism=1, progress=False, backend="threads") as c:
        c.add_file(str(tmp_path / "g.txt"))
        assert files.get("g.txt")
    with pytest.raises(FileNotFoundError):
        files.get("g.txt")


# -- compressed text -----------------------------------------------------------------------------
@pytest.mark.parametrize("codec, suffix", [("gzip", ".gz"), ("bzip2", ".bz2"), ("deflate", ".deflate"),
                                           ("xz", ".xz"), ("org.apache.hadoop.io.compress.GzipCodec", ".gz")])
def test_compressed_text_round_trips(ctx, tmp_path, codec, suffix):
    out = tmp_path / "out"
    lines = [f"line {i} é" for i in range(500)]
    ctx.parallelize(lines, 3).save_as_text_file(str(out), compression=codec)
    parts = sorted(p for p in os.listdir(out) if p.startswith("part-"))
    assert parts == [f"part-0000{i}{suffix}" for i in range(3)]
    back = ctx.text_file(str(out))
    assert back.num_partitions == 3  # a compressed file is one partition, read whole
    assert back.collect() == lines


def test_compressed_csv_with_a_header(local_ctx, tmp_path):
    p = tmp_path / "t.csv.gz"
    with gzip.open(p, "wt") as fh:
        fh.write("a,b\n1,x\n2,y\n")
    assert local_ctx.csv_file(str(p), header=True).collect() == [(1, "x"), (2, "y")]


def test_a_corrupt_compressed_file_fails_loudly(local_ctx, tmp_path):
    p = tmp_path / "bad.gz"
    whole = gzip.compress("".join(f"{i * 7919 % 100003}\n" for i in range(20_000)).encode())
    p.write_bytes(whole[: len(whole) // 2])  # cut short
    with pytest.raises(strataflow.TaskFailedError) as info:
        local_ctx.text_file(str(p)).count()
    assert isinstance(info.value.__cause__, InputError) and "bad.gz" in str(info.value.__cause__)


def test_unknown_codecs_are_named(local_ctx, tmp_path):
    with pytest.raises(CodecError, match="'snappy' is not supported in strataflow; use one of gzip"):
        local_ctx.parallelize(["a"]).save_as_text_file(str(tmp_path / "o"), compression="snappy")
    assert not (tmp_path / "o").exists()
    assert codec_name("gz") == "gzip" and codec_name("org.apache.hadoop.io.compress.DefaultCodec") == "deflate"


# -- the status page ------------------------------------------------------------------------------
def test_status_page_serves_jobs_storage_and_counters(tmp_path):
    c = strataflow.Context(memory="64MB", parallelism=2, progress=False, backend="threads")
    try:
        url = c.serve_status()
        assert url.startswith("http://127.0.0.1:") and c.serve_status() == url  # started once
        ds = c.parallelize(range(100), 4).persist("MEMORY_ONLY")
        ds.name = "numbers"
        ds.count()
        status = json.loads(urllib.request.urlopen(url + "/api/status", timeout=10).read())
        assert status["app_id"] == c.app_id and status["jobs"][0]["status"] == "succeeded"
        assert status["datasets"][0]["memory_partitions"] == 4 and status["metrics"]["misses"] == 4
        page = urllib.request.urlopen(url, timeout=10).read().decode()
        assert "numbers" in page and "<h2>Stages</h2>" in page
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(url + "/nothing", timeout=10)
    finally:
        c.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=5)
