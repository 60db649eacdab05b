"""The store's input cache (issue 53): a file read once is parsed once, across applications,
and a file changed in any way is never served from it.

Each "application" is its own Context (on the processes backend, its own executor
processes); the store is a fresh one per test. ``STRATAFLOW_RACY_S=0`` lets a test cache a
file it has just written (``file_version.racy_s``); the racy window itself is tested with
it left at its default.
"""

from __future__ import annotations

import csv
import datetime
import io
import math
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from strataflow import Context, StorageLevel
from strataflow.store.inputs import InputEntry, get_input, list_inputs, put_input, remove_inputs
from strataflow.store.root import StoreRoot
from strataflow.store.sweep import sweep

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


@pytest.fixture
def racy0(monkeypatch):
    monkeypatch.setenv("STRATAFLOW_RACY_S", "0")


def _app(store, backend="threads", **kw):
    return Context(parallelism=2, backend=backend, store=str(store), **kw)


def _csv_rows(text: str) -> list[tuple]:
    """The model: Python's csv module, each field typed as csv_file infers it here."""
    out = []
    for row in csv.reader(io.StringIO(text)):
        out.append(tuple(row))
    return out


# values users bring: unicode, empty fields (None), NaN, dates as text, skewed lengths
_ROWS = [("ünïcødé", "1.5", "2026-11-27", ""), ("a,b", "nan", "1999-01-01", "x" * 300), ("", "-0.0", "", "z")] * 50


def _write_csv(path, rows=_ROWS) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    text = buf.getvalue()
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return text


def _strings(path, ctx, n=3):
    names = ["a", "b", "c", "d"]
    ds = ctx.csv_file(str(path), n, column_names=names, column_types={k: pa.string() for k in names})
    return [tuple("" if v is None else v for v in r) for r in ds.collect()]


def test_a_second_application_maps_what_the_first_parsed(tmp_path, racy0):
    """Across separate executor processes: the second application's partitions are store
    hits, the rows those of the model, and the figures say what was saved."""
    text = _write_csv(tmp_path / "p.csv")
    store = tmp_path / "store"
    with _app(store, "processes") as ctx:
        first = _strings(tmp_path / "p.csv", ctx)
        m1 = ctx.metrics()
    with _app(store, "processes") as ctx:
        second = _strings(tmp_path / "p.csv", ctx)
        m2 = ctx.metrics()
    assert first == second == _csv_rows(text)
    assert m1["input_misses"] == 3 and m1["input_hits"] == 0
    assert m2["input_hits"] == 3 and m2["input_misses"] == 0
    assert m2["input_parse_s_saved"] > 0 and m2["input_bytes_read"] > 0
    per = m2["inputs"][str(tmp_path / "p.csv")]
    assert per["hits"] == 3
    assert {e.reader for e in list_inputs(StoreRoot(str(store)))} == {"csv_file"}


def test_typed_csv_with_inference_and_nan_is_the_same_from_the_cache(tmp_path, racy0):
    rows = [(i, float("nan") if i % 7 == 0 else i / 3, f"é{i}" if i % 5 else None) for i in range(500)]
    with open(tmp_path / "t.csv", "w", encoding="utf-8") as fh:
        for i, x, s in rows:
            fh.write(f"{i},{x},{'' if s is None else s}\n")
    store = tmp_path / "store"
    got = []
    for _ in range(2):
        with _app(store) as ctx:
            ds = ctx.csv_file(str(tmp_path / "t.csv"), 4, column_names=["i", "x", "s"])
            got.append((ds.collect(), ds.to_arrow().schema))
            m = ctx.metrics()
    assert m["input_hits"] == 12 and m["input_misses"] == 0  # the inference pass's 4, two reads' 8
    (a, sa), (b, sb) = got
    assert sa == sb
    assert len(a) == len(b) == 500
    for (i, x, s), (j, y, t), (k, z, u) in zip(a, b, rows):
        assert i == j == k and s == t and (s or None) == u
        if math.isnan(z):  # "nan" is one of the CSV reader's null values, fresh or cached
            assert x is None and y is None
        else:
            assert x == y == pytest.approx(z)


@pytest.mark.parametrize("change", ["same_size", "append", "truncate", "rename_over", "delete_rewrite",
                                    "mtime_put_back"])
def test_a_changed_local_file_is_never_served_stale(tmp_path, racy0, change):
    """The staleness matrix, local, each change between two applications."""
    path = tmp_path / "f.txt"
    path.write_text("".join(f"line {i:04d}\n" for i in range(400)))
    store = tmp_path / "store"
    with _app(store) as ctx:
        assert ctx.text_file(str(path), 3).count() == 400
    st = os.stat(path)
    if change == "same_size":
        path.write_text("".join(f"LINE {i:04d}\n" for i in range(400)))
    elif change == "append":
        with open(path, "a") as fh:
            fh.write("one more\n")
    elif change == "truncate":
        with open(path, "r+") as fh:
            fh.truncate(st.st_size // 2)
    elif change == "rename_over":
        (tmp_path / "new.txt").write_text("".join(f"NEW! {i:04d}\n" for i in range(400)))
        os.replace(tmp_path / "new.txt", path)
    elif change == "delete_rewrite":
        path.unlink()
        path.write_text("".join(f"anew {i:04d}\n" for i in range(400)))
    else:  # same size, and the old mtime put back: ctime still moves
        path.write_text("".join(f"LINE {i:04d}\n" for i in range(400)))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    want = path.read_text().splitlines()
    with _app(store) as ctx:
        assert ctx.text_file(str(path), 3).collect() == want
        assert ctx.metrics()["input_hits"] == 0


def test_a_file_written_within_the_racy_window_is_not_cached_and_a_rewrite_is_seen(tmp_path, monkeypatch):
    """The window keeps a file written within it out of the cache (the reason is in the
    figures), so a rewrite of the same size within the same tick is read. The window is
    an hour here, not its 2 s, so that a slow machine cannot make the file old enough."""
    monkeypatch.setenv("STRATAFLOW_RACY_S", "3600")
    path = tmp_path / "r.txt"
    path.write_text("aaaa\nbbbb\n")
    store = tmp_path / "store"
    with _app(store) as ctx:
        assert ctx.text_file(str(path), 1).collect() == ["aaaa", "bbbb"]
        m = ctx.metrics()
    assert m["input_uncacheable"] == 1 and "timestamp granularity" in m["inputs"][str(path)]["reason"]
    assert "versioned once 3600 s old" in m["inputs"][str(path)]["reason"]
    path.write_text("cccc\ndddd\n")
    with _app(store) as ctx:
        assert ctx.text_file(str(path), 1).collect() == ["cccc", "dddd"]
    assert list_inputs(StoreRoot(str(store))) == []


def test_s3_objects_on_moto_cached_and_never_stale(tmp_path):
    sys.path.insert(0, HERE)
    from moto_s3 import moto_s3
    import fsspec

    store = tmp_path / "store"
    with moto_s3("inputs") as options:
        old = fsspec.config.conf.get("s3")
        fsspec.config.conf["s3"] = options
        try:
            fs = fsspec.filesystem("s3")
            fs.pipe("inputs/a.txt", b"".join(b"row %04d\n" % i for i in range(300)))
            url = "s3://inputs/a.txt"
            for want_hits in (0, 2):
                with _app(store) as ctx:
                    assert ctx.text_file(url, 2).count() == 300
                    assert ctx.metrics()["input_hits"] == want_hits
            for body in (b"".join(b"ROW %04d\n" % i for i in range(300)),  # same size
                         b"short\n"):  # rewritten smaller
                fs.pipe("inputs/a.txt", body)
                with _app(store) as ctx:
                    assert ctx.text_file(url, 2).collect() == body.decode().splitlines()
                    assert ctx.metrics()["input_hits"] == 0
            fs.rm("inputs/a.txt")
            fs.pipe("inputs/a.txt", b"back\n")
            with _app(store) as ctx:
                assert ctx.text_file(url, 1).collect() == ["back"]
        finally:
            fsspec.config.conf.pop("s3")
            if old is not None:
                fsspec.config.conf["s3"] = old


def test_a_file_system_without_versions_is_read_and_not_cached(tmp_path):
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/ic/m.txt", b"one\ntwo\n")
    try:
        with _app(tmp_path / "store") as ctx:
            assert ctx.text_file("memory://ic/m.txt", 1).collect() == ["one", "two"]
            m = ctx.metrics()
        assert m["input_uncacheable"] == 1
        assert "change could go unseen" in next(iter(m["inputs"].values()))["reason"]
    finally:
        fs.rm("/ic", recursive=True)


def test_malformed_lines_are_counted_again_when_served_from_the_cache(tmp_path, racy0):
    (tmp_path / "bad.csv").write_text('a,b\n1,2\n3\n"4,5\n6,7\n' * 10)
    store = tmp_path / "store"
    for want_hits in (0, 2):
        with _app(store) as ctx:
            ds = ctx.csv_file(str(tmp_path / "bad.csv"), 2, column_names=["a", "b"],
                              column_types={"a": pa.string(), "b": pa.int64()}, mode="DROPMALFORMED")
            assert len(ds.collect()) == 20
            assert ctx.malformed_rows(ds) == 30
            assert ctx.metrics()["input_hits"] == want_hits


def test_modes_npy_parquet_and_off(tmp_path, racy0):
    np.save(tmp_path / "x.npy", np.arange(12.0).reshape(6, 2))
    pq.write_table(pa.table({"d": [datetime.date(2026, 1, i) for i in range(1, 7)], "v": list(range(6))}),
                   tmp_path / "t.parquet")
    store = tmp_path / "store"
    with _app(store) as ctx:  # auto: a local .npy is mapped already, local Parquet is not parsed text
        ctx.npy_file(str(tmp_path / "x.npy"), 2).count()
        ctx.parquet_file(str(tmp_path / "t.parquet")).count()
        assert ctx.metrics()["input_misses"] == 0
    for want_hits in (0, 1):
        with _app(store, input_cache="on") as ctx:
            rows = ctx.parquet_file(str(tmp_path / "t.parquet")).collect()
            assert rows == [(datetime.date(2026, 1, i), i - 1) for i in range(1, 7)]
            ctx.npy_file(str(tmp_path / "x.npy"), 2).count()  # on: still never a local .npy
            assert ctx.metrics()["input_hits"] == want_hits
    (tmp_path / "w.txt").write_text("w\n")
    with _app(store, input_cache="off") as ctx:
        ctx.text_file(str(tmp_path / "w.txt")).count()
        m = ctx.metrics()
        assert m["input_misses"] == m["input_hits"] == m["input_uncacheable"] == 0


def test_a_persisted_cached_input_keeps_no_second_copy_on_disk(tmp_path, racy0):
    """``csv_file(...).persist(MEMORY_AND_DISK)`` over a cached input: blocks that leave
    memory are not written to the disk tier (the store serves them again); answers equal."""
    _write_csv(tmp_path / "p.csv", [(str(i), "y" * 200, "", "z") for i in range(20000)])
    store = tmp_path / "store"
    out = []
    for _ in range(2):
        with _app(store, "processes", memory="2MB") as ctx:
            ds = ctx.csv_file(str(tmp_path / "p.csv"), 4, column_names=list("abcd"),
                              column_types={k: pa.string() for k in "abcd"}).persist(StorageLevel.MEMORY_AND_DISK)
            out.append((ds.count(), ds.map(lambda r: r[0]).collect()))
            out.append(ctx.metrics())
    (c1, v1), m1, (c2, v2), m2 = out
    assert c1 == c2 == 20000 and v1 == v2 == [str(i) for i in range(20000)]
    assert m1["disk_bytes_written"] > 0 and m1["blocks_backed_by_store"] == 0
    assert m2["blocks_backed_by_store"] > 0 and m2["disk_bytes_written"] == 0


def test_a_damaged_block_is_decoded_again_never_served(tmp_path, racy0):
    (tmp_path / "d.txt").write_text("".join(f"{i}\n" for i in range(1000)))
    store = tmp_path / "store"
    with _app(store) as ctx:
        ctx.text_file(str(tmp_path / "d.txt"), 1).count()
    root = StoreRoot(str(store))
    (entry,) = list_inputs(root)
    block = os.path.join(root.tiers[0].data_dir(entry.id), "part-00000.sfb")
    with open(block, "r+b") as fh:
        fh.seek(os.path.getsize(block) - 3)
        fh.write(b"XYZ")
    with _app(store) as ctx:
        assert ctx.text_file(str(tmp_path / "d.txt"), 1).collect() == [str(i) for i in range(1000)]
        m = ctx.metrics()
    assert m["input_corrupt"] == 1 and m["input_hits"] == 0


_KILLED_WRITER = textwrap.dedent("""
    import sys, os
    sys.path.insert(0, sys.argv[2])
    from strataflow.store import inputs, blockfile
    from strataflow.store.root import StoreRoot
    real = blockfile._write_file
    def stall(directory, partition, views):
        import tempfile
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".part-", dir=directory)
        os.write(fd, bytes(views[0])[:100])  # half a block, as a writer killed mid-write leaves it
        print("writing", flush=True)
        sys.stdin.read()  # killed here
    blockfile._write_file = stall
    root = StoreRoot(sys.argv[1])
    inputs.put_input(root, inputs.InputEntry(key="k" * 40, path="x", reader="text_file", part="all"), list("abc"))
""")


def test_a_writer_killed_mid_cache_leaves_nothing_visible(tmp_path):
    root = StoreRoot(str(tmp_path / "store"))
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, root.path, ROOT], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "writing"
        assert get_input(root, "k" * 40) is None  # mid-write: no entry
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert get_input(root, "k" * 40) is None and list_inputs(root) == []
    swept = sweep(root)
    assert "in-" + "k" * 40 in swept["datasets"] and "in-" + "k" * 40 in swept["dead_writers"]
    entry = put_input(root, InputEntry(key="k" * 40, path="x", reader="text_file", part="all"), ["a", "b"])
    assert entry is not None and get_input(root, "k" * 40)[0] == ["a", "b"]


def test_room_evicts_the_least_recently_read_inputs_and_never_datasets(tmp_path):
    root = StoreRoot(str(tmp_path / "store"), tiers=[{"name": "t", "dir": str(tmp_path / "tier"), "capacity": "3MB"}])
    for i, k in enumerate("abc"):
        put_input(root, InputEntry(key=k * 40, path=k, reader="npy_file", part="rows", parse_s=1.0,
                                   created=1000.0 + i), np.zeros(110_000))  # 0.88 MB each
    got = get_input(root, "a" * 40)  # read now: the most recent
    assert got is not None and got[1].path == "a"
    assert put_input(root, InputEntry(key="d" * 40, path="d", reader="npy_file", part="rows"), np.zeros(200_000))
    assert {e.path for e in list_inputs(root)} == {"a", "d"}  # b, then c (the oldest) made the room


def test_store_cli_lists_and_removes_inputs(tmp_path, racy0):
    (tmp_path / "c.txt").write_text("x\ny\n")
    store = tmp_path / "store"
    with _app(store) as ctx:
        ctx.text_file(str(tmp_path / "c.txt")).count()
    env = dict(os.environ, PYTHONPATH=ROOT)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "strataflow.cli", "store", *args, "--root", str(store)],
                              capture_output=True, text=True, env=env)

    ls = cli("ls", "--inputs")
    assert ls.returncode == 0 and str(tmp_path / "c.txt") in ls.stdout and "text_file" in ls.stdout
    status = cli("status")
    assert '"inputs"' in status.stdout and '"entries": 2' in status.stdout  # a split per partition
    assert "removed 0" in cli("rm", "--inputs", "*/nothing-*").stdout
    assert "removed 2" in cli("rm", "--inputs", str(tmp_path / "*.txt")).stdout
    assert cli("ls", "--inputs").stdout == ""
    assert remove_inputs(StoreRoot(str(store))) == (0, 0)


def test_balance_evicts_inputs_over_a_capacity_before_any_dataset_moves(tmp_path):
    from strataflow.store import Store

    def tiers(capacity):
        return [{"name": "fast", "dir": str(tmp_path / "fast"), "capacity": capacity},
                {"name": "slow", "dir": str(tmp_path / "slow")}]

    root = Store(str(tmp_path / "store"), tiers=tiers("8MB")).root
    for i, k in enumerate("ab"):
        put_input(root, InputEntry(key=k * 40, path=k, reader="npy_file", part="rows", parse_s=1.0,
                                   created=1000.0 + i), np.zeros(250_000))  # 2 MB each, in the fast tier
    store = Store(str(tmp_path / "store"), tiers=tiers("3MB"))  # its capacity lowered below them
    root = store.root
    with _app(tmp_path / "store") as ctx:  # a named dataset beside them (in the slow tier: no room above)
        ctx.store.save(ctx.from_numpy(np.zeros((200_000,)), 2), "named")
    moves = store.balance()
    assert [m["dataset"] for m in moves if m.get("evicted")] == ["input a (rows)"]  # the oldest input
    assert {e.path for e in list_inputs(root)} == {"b"}
    assert not [m for m in moves if m.get("dataset") == "named"]  # within capacity once the input went
    assert store.figures()["evictions"] >= 1


def test_a_file_ref_crosses_to_an_executor_without_building_its_filesystem():
    """A remote FileRef pickles its filesystem lazily: unpickled, it is built only when a
    byte of the file is read, so a partition found in the input cache needs no client."""
    import pickle

    import fsspec

    from strataflow.io.file_ref import FileRef, _LazyFS
    from strataflow.io.remote_version import Version

    fs = fsspec.filesystem("memory")
    fs.pipe("/lazy/x.txt", b"abc")
    try:
        ref = FileRef("/lazy/x.txt", 3, fs, Version(None, "memory"))
        back = pickle.loads(pickle.dumps(ref))
        assert isinstance(back.fs, _LazyFS) and back.fs._fs is None
        assert back.name == "memory:///lazy/x.txt" and back.version == ref.version and not back.local
        assert back.fs._fs is None  # its name, version and locality built nothing
        assert back.read_all() == b"abc" and back.fs._fs is not None
        assert pickle.loads(pickle.dumps(back)).read_range(1, 3) == b"bc"
    finally:
        fs.rm("/lazy", recursive=True)


def test_a_remote_file_changed_after_its_listing_is_read_but_not_cached(tmp_path):
    """The dataset lists the object (its ETag), then the object changes before the read:
    the read returns what is there now, and nothing is cached under the listed version."""
    sys.path.insert(0, HERE)
    from moto_s3 import moto_s3
    import fsspec

    with moto_s3("later") as options:
        old = fsspec.config.conf.get("s3")
        fsspec.config.conf["s3"] = options
        try:
            fs = fsspec.filesystem("s3")
            fs.pipe("later/a.txt", b"aaaa\nbbbb\n")
            with _app(tmp_path / "store") as ctx:
                ds = ctx.text_file("s3://later/a.txt", 1)  # listed now
                fs.pipe("later/a.txt", b"cccc\ndddd\n")  # same size, another ETag
                assert ds.collect() == ["cccc", "dddd"]
                m = ctx.metrics()
            assert m["input_misses"] == 1 and m["input_writes"] == 0
            assert list_inputs(StoreRoot(str(tmp_path / "store"))) == []
        finally:
            fsspec.config.conf.pop("s3")
            if old is not None:
                fsspec.config.conf["s3"] = old


def test_every_cached_reader_says_its_files_part_and_decode():
    """``CachedInput``'s contract: each reader that mixes it in gives its own
    ``input_files``, ``input_part`` and ``decode`` (the mixin's raise NotImplementedError)."""
    import strataflow.io.delimited
    import strataflow.io.npy
    import strataflow.io.parquet
    import strataflow.io.text  # noqa: F401 - the readers, registered as subclasses
    from strataflow.io.cached_input import CachedInput

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    readers = set(subclasses(CachedInput))
    assert {r.__name__ for r in readers} >= {"TextSource", "CsvSource", "CsvTypesSource", "ParquetSource", "NpySource"}
    for r in readers:
        for name in ("input_files", "input_part", "decode"):
            assert getattr(r, name) is not getattr(CachedInput, name), f"{r.__name__} does not give {name}"
