"""The trust gaps of issue 50, point 4: files the engine reads that someone else could have
written or changed, and answers that were silently wrong.

- checkpoint part files carry a keyed tag (the application's key): a forged or damaged one
  is refused before anything is unpickled, and recomputed where the lineage the checkpoint
  cut is still alive, else a named error (``CheckpointCorrupt``);
- the pickle readers say, in their docs, that loading a pickle runs code from it;
- the shared store: a catalog entry is bound to its name (a copy under another name is
  refused, not listed twice); names are checked whole (no trailing newline); a removed
  dataset's blocks go when its last reader closes; another user asking the daemon always
  reads its refusal, never a raw ``BrokenPipeError``;
- a ``_manifest.json`` names each part once (one listed twice is refused, naming it).

No test here depends on a timing: a race is forced by waiting for its state (a socket
hung up), never by sleeping."""

from __future__ import annotations

import json
import os
import pickle
import select
import shutil
import socket
import threading

import numpy as np
import pytest

from strataflow import Context
from strataflow.config import ConfigError
from strataflow.io.sources import InputError
from strataflow.store import Store, StoreError
from strataflow.store.catalog import check_name
from waits import wait_for


def _store_ctx(root, **kw):
    return Context(memory="64MB", parallelism=2, backend="threads", progress=False, store=root, **kw)


def _block_files(root):
    return sorted(os.path.join(d, f) for d, _, files in os.walk(os.path.join(root, "data")) for f in files)


@pytest.fixture
def root(tmp_path):
    return str(tmp_path / "store")


# -- the store's catalog -------------------------------------------------------------------------
def test_a_catalog_entry_copied_to_another_name_is_refused_not_served_twice(root):
    with _store_ctx(root) as ctx:
        ctx.store.save(ctx.parallelize([1, 2, 3], 1), "real")
        catalog = os.path.join(root, "catalog")
        shutil.copy(os.path.join(catalog, "real.json"), os.path.join(catalog, "copy.json"))
        assert [e.name for e in ctx.store.ls()] == ["real"]  # listed once, under its own name
        with pytest.raises(StoreError, match=r"entry of 'real', not of 'copy'"):
            ctx.store.open("copy")
        with pytest.raises(StoreError, match="bound to its name"):
            ctx.store.info("copy")
        assert ctx.store.open("real").collect() == [1, 2, 3]


def test_a_name_is_checked_whole(root):
    name = "ok\n"  # ``re.match`` with ``$`` let it through
    with pytest.raises(StoreError, match="not a dataset name"):
        check_name(name)
    with _store_ctx(root) as ctx:
        with pytest.raises(StoreError, match="not a dataset name"):
            ctx.store.save(ctx.parallelize([1], 1), name)
    assert os.listdir(os.path.join(root, "catalog")) == []


# -- a removed dataset's blocks ------------------------------------------------------------------
def test_a_removed_datasets_blocks_go_when_its_last_reader_closes(root):
    with _store_ctx(root) as writer:
        writer.store.save(writer.from_numpy(np.arange(4000.0).reshape(-1, 4), 2), "gone")
    first, second = Store(root), Store(root)  # two readers (as two applications' stores)
    for reader in (first, second):
        reader.open_source("gone")
    Store(root).rm("gone")
    assert _block_files(root)  # held by both readers
    first.close()
    assert _block_files(root)  # the second still holds them
    second.close()
    assert _block_files(root) == []  # the last reader out freed them: no later sweep needed
    assert os.listdir(os.path.join(root, "leases")) == []


def test_a_readers_context_end_frees_a_dataset_removed_while_it_read(root):
    with _store_ctx(root) as writer:
        writer.store.save(writer.parallelize(range(100), 2), "old")
    with _store_ctx(root) as reader:
        ds = reader.store.open("old")
        with _store_ctx(root) as other:
            other.store.save(other.parallelize(range(5), 1), "old", mode="overwrite")  # replaced meanwhile
        assert ds.count() == 100  # the reader's lease keeps the old blocks
    assert len(_block_files(root)) == 1  # the old ones went with the reader; the new one stays
    with _store_ctx(root) as later:
        assert later.store.open("old").collect() == list(range(5))


# -- the daemon's refusal --------------------------------------------------------------------------
def _hung_up(sock: socket.socket) -> bool:
    p = select.poll()
    p.register(sock, select.POLLHUP | getattr(select, "POLLRDHUP", 0))
    return bool(p.poll(0))


def test_another_users_request_reads_the_refusal_even_when_the_daemon_closed_first(root, monkeypatch):
    """The race that gave a raw BrokenPipeError, forced: the client writes its request only
    once the daemon has answered another uid and closed (the socket hung up)."""
    from strataflow.store import daemon as daemon_mod

    d = daemon_mod.StoreDaemon(root, interval=3600)
    monkeypatch.setattr(daemon_mod, "peer_uid", lambda conn: os.geteuid() + 1)

    def serve_one():
        conn, _ = d.sock.accept()
        d._serve(conn)

    server = threading.Thread(target=serve_one)
    server.start()

    class LateWriter(socket.socket):
        def connect(self, address):
            super().connect(address)
            wait_for(lambda: _hung_up(self), what="the daemon to answer and close")

    monkeypatch.setattr(daemon_mod.socket, "socket", LateWriter)
    try:
        answer = daemon_mod.request(root, "ls")
    finally:
        monkeypatch.undo()
        server.join()
        d.close()
    assert answer is not None and "refused" in answer["error"], answer


# -- manifests ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_ctx():
    with Context(memory="64MB", parallelism=2, backend="threads", progress=False) as c:
        yield c


def _edit_manifest(directory, edit):
    path = os.path.join(directory, "_manifest.json")
    with open(path) as f:
        manifest = json.load(f)
    edit(manifest)
    with open(path, "w") as f:
        json.dump(manifest, f)


def test_a_manifest_listing_a_part_twice_is_refused_naming_it(small_ctx, tmp_path):
    out = str(tmp_path / "arr")
    small_ctx.from_numpy(np.arange(30.0).reshape(-1, 1), 3).save_as_npy(out)
    assert small_ctx.npy_file(out).count() == 30

    def twice(m):
        m["parts"][1]["file"] = m["parts"][0]["file"]  # part 0 twice, part 1 never

    _edit_manifest(out, twice)
    with pytest.raises(ConfigError, match=r"lists 'part-00000\.npy' twice"):
        small_ctx.npy_file(out).count()


def test_a_manifest_that_leaves_out_a_part_or_miscounts_is_refused(small_ctx, tmp_path):
    out = str(tmp_path / "table")
    small_ctx.parallelize([{"x": i} for i in range(20)], 2).save_as_parquet(out)
    _edit_manifest(out, lambda m: m["parts"].pop())
    with pytest.raises(ConfigError, match=r"does not name the part file\(s\) 'part-00001\.parquet'"):
        small_ctx.parquet_file(out).count()
    _edit_manifest(out, lambda m: m["parts"].append({"file": "part-00001.parquet", "rows": 10}) or
                   m.update(rows=99))
    with pytest.raises(ConfigError, match="says 99 rows in all, its parts 20"):
        small_ctx.parquet_file(out).count()


# -- checkpoints ----------------------------------------------------------------------------------
class _Evil:
    """A pickle that runs code when loaded: it makes the directory ``path``."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def _part(ds, i):
    return os.path.join(ds.node.directory, f"part-{i:05d}")


def _forge(path, marker):
    with open(path, "wb") as f:  # what an attacker with write access to the directory can put there
        pickle.dump([_Evil(marker)], f)


@pytest.mark.parametrize("kind", ["reliable", "local"])
def test_a_forged_checkpoint_part_is_refused_and_recomputed_while_its_lineage_lives(ctx, tmp_path, kind):
    marker = str(tmp_path / "pwned")
    ctx.set_checkpoint_dir(tmp_path / "ckpt")
    base = ctx.parallelize(range(20), 4).map(lambda x: (x % 4, x)).reduce_by_key(lambda a, b: a + b)
    ds = base.map_values(lambda v: v * 10)
    ds.checkpoint() if kind == "reliable" else ds.local_checkpoint()
    expected = ds.collect_partitions()
    assert ds.is_checkpointed
    _forge(_part(ds, 1), marker)
    assert ds.collect_partitions() == expected  # refused, then written again from the lineage
    assert not os.path.exists(marker)  # and nothing in it ran, on any executor
    with open(_part(ds, 1), "rb") as f:
        assert f.read(8) == b"SFCKPT01"  # the part was written again, tagged
    assert ds.map(lambda kv: kv[1]).sum() == sum(range(20)) * 10


def test_a_checkpoint_part_moved_to_another_place_is_refused(ctx, tmp_path):
    """Two authentic parts swapped: each has a valid tag, but not for its place."""
    ctx.set_checkpoint_dir(tmp_path / "ckpt")
    base = ctx.parallelize(range(6), 2)
    ds = base.map(lambda x: x * 3)
    ds.checkpoint()
    assert ds.collect_partitions() == [[0, 3, 6], [9, 12, 15]]
    a, b = _part(ds, 0), _part(ds, 1)
    os.replace(a, a + ".x")
    os.replace(b, a)
    os.replace(a + ".x", b)
    assert ds.collect_partitions() == [[0, 3, 6], [9, 12, 15]]  # not swapped: recomputed


def test_a_forged_checkpoint_part_without_its_lineage_is_a_named_error(ctx, tmp_path):
    import gc

    marker = str(tmp_path / "pwned")
    ctx.set_checkpoint_dir(tmp_path / "ckpt")
    ds = ctx.parallelize(range(8), 2).map(lambda x: x + 1)  # its parent is referenced by nothing else
    ds.checkpoint()
    assert ds.sum() == 36 and ds.is_checkpointed
    gc.collect()  # the parent goes: the lineage before the checkpoint is gone
    assert ds._cut_lineage.node() is None
    _forge(_part(ds, 0), marker)
    with pytest.raises(InputError, match=r"part-00000' is not a checkpoint part file") as info:
        ds.collect()
    assert not os.path.exists(marker)
    from strataflow.dataset.checkpoint import CheckpointCorrupt

    assert isinstance(info.value, CheckpointCorrupt)
    assert "lineage before its checkpoint is gone" in "".join(getattr(info.value, "__notes__", []))
    with open(_part(ds, 1), "r+b") as f:  # a bit flipped in an authentic part: refused too
        f.seek(12)
        byte = f.read(1)
        f.seek(12)
        f.write(bytes([byte[0] ^ 1]))
    with pytest.raises(CheckpointCorrupt, match="fails its keyed tag"):
        ds.node.compute(1, None)


# -- the pickle readers' warning ------------------------------------------------------------------
def test_the_pickle_readers_and_their_docs_warn_that_loading_runs_code():
    import strataflow.io.pickle_files as reader
    from strataflow.pyspark import SparkContext

    docs = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "using.md")
    with open(docs, encoding="utf-8") as f:
        using = " ".join(f.read().split())
    for where, text in [("Context.pickle_file", Context.pickle_file.__doc__),
                        ("SparkContext.pickleFile", SparkContext.pickleFile.__doc__),
                        ("io/pickle_files.py", reader.__doc__), ("docs/using.md", using)]:
        text = " ".join((text or "").split())
        assert "runs code from" in text and "trust" in text, where
