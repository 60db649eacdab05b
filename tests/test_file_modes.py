"""Issue 38 §2: every file the engine writes has the mode the README states, whatever the umask.

The engine's own files (cache blocks, segments, shuffle files and spills, source slices,
shipped files, checkpoints, the event log, the owner files) are 0600 in 0700 directories;
what the user saves (``save_as_*``, ``--json``) follows the umask but is never more than
0644 / 0755. Checked under ``umask 000`` (where the event log used to be 0666) and ``077``.
Also: missing ``local_dirs`` / ``shuffle_dirs`` / event-log folders are made 0700, and a
path that cannot be one is a ConfigError naming the option, the path and the errno.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager

import numpy as np
import pytest

from strataflow import Context, StorageLevel
from strataflow.cli import main as cli_main
from strataflow.common.checks import ConfigError
from conftest import local_backends


@contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _modes_under(root) -> dict[str, int]:
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = _mode(p)
    return out


def _job(c: Context, tmp_path) -> list:
    """Writes every kind of file the engine makes: cache blocks on disk and mapped, shuffle
    files, source slices, a shipped file, a checkpoint; returns the datasets, whose files
    go when they are collected."""
    (tmp_path / "data.txt").write_text("hello\n")
    c.add_file(str(tmp_path / "data.txt"))
    c.set_checkpoint_dir(str(tmp_path / "ckpt" / "deep"))
    big = c.from_numpy(np.arange(400_000, dtype=np.float64).reshape(-1, 4), 4)  # 3.2 MB: written as slices
    records = c.parallelize([(i % 7, str(i) * 40) for i in range(40_000)], 4)  # over 1 MB pickled
    big.persist(StorageLevel.DISK_ONLY).count()
    big.map_partitions(lambda a: a * 2).persist(StorageLevel.DISK_MMAP).count()
    reduced = records.reduce_by_key(lambda a, b: a)
    assert reduced.count() == 7
    ck = records.map(lambda kv: kv[0])
    ck.checkpoint()
    assert ck.count() == 40_000
    return [big, records, reduced, ck]


@pytest.mark.parametrize("backend", local_backends())
def test_engine_files_are_private_under_umask_000(tmp_path, backend):
    base = tmp_path / "made" / "cache"  # none of it exists: made, 0700
    with umask(0):
        with Context(backend=backend, parallelism=2, progress=False, memory="64MB", local_dirs=[str(base)],
                     shuffle_dirs=[str(tmp_path / "shuffle")], event_log=str(tmp_path / "logs" / "ev.jsonl")) as c:
            alive = _job(c, tmp_path)
            modes = {}
            for d in c.local_dirs + c.shuffle_dirs + c.source_dirs:
                modes[d] = _mode(d)
                modes.update({os.path.join(d, k): v for k, v in _modes_under(d).items()})
            modes.update({k: v for k, v in _modes_under(tmp_path / "ckpt").items()})
    names = " ".join(modes)
    for kind in ((".npy",) if backend == "processes" else ()) + (".data", ".index", ".blk", ".seg", "owner",
                                                                          "files/data.txt", "part-00000"):
        assert kind in names, (kind, sorted(modes))  # the job wrote slices, shuffle files, segments, a shipped file, a checkpoint
    loose = {k: oct(v) for k, v in modes.items() if v & 0o077}
    assert not loose, loose  # nothing readable or writable by group or others
    for made in (tmp_path / "made", base, tmp_path / "shuffle", tmp_path / "logs", tmp_path / "ckpt",
                 tmp_path / "ckpt" / "deep"):
        assert _mode(made) == 0o700, made
    assert _mode(tmp_path / "logs" / "ev.jsonl") == 0o600  # was 0666 under umask 000


def test_an_existing_event_log_is_made_private(tmp_path):
    log = tmp_path / "ev.jsonl"
    log.write_text("")
    os.chmod(log, 0o666)
    with Context(backend="threads", parallelism=1, progress=False, local_dirs=[str(tmp_path)],
                 shuffle_dirs=[str(tmp_path)], event_log=str(log)) as c:
        c.range(3).count()
    assert _mode(log) == 0o600 and log.read_text().count("\n") > 3  # appended to, now 0600


@pytest.mark.parametrize("mask, file_mode, dir_mode", [(0o000, 0o644, 0o755), (0o022, 0o644, 0o755),
                                                        (0o077, 0o600, 0o700), (0o027, 0o640, 0o750)])
@pytest.mark.parametrize("backend", local_backends())
def test_saved_outputs_follow_the_umask_but_never_more_than_0644(tmp_path, backend, mask, file_mode, dir_mode):
    with umask(mask):
        with Context(backend=backend, parallelism=2, progress=False, local_dirs=[str(tmp_path)],
                     shuffle_dirs=[str(tmp_path)]) as c:
            ds = c.from_numpy(np.arange(40, dtype=np.float64).reshape(-1, 2), 2)
            ds.save_as_text_file(str(tmp_path / "out" / "text"))
            ds.save_as_text_file(str(tmp_path / "out" / "gz"), compression="gzip")
            ds.save_as_npy(str(tmp_path / "out" / "npy"))
            ds.save_as_parquet(str(tmp_path / "out" / "parquet"))
            c.parallelize([1, 2, 3], 2).save_as_pickle_file(str(tmp_path / "out" / "pickle"))
        assert cli_main(["simulate", "--synthetic", "hotset", "--pressure", "2", "--json",
                         str(tmp_path / "out" / "sim.json")]) == 0
    modes = _modes_under(tmp_path / "out")
    assert {"text/_SUCCESS", "npy/_manifest.json", "parquet/part-00000.parquet", "pickle/part-00001",
            "gz/part-00000.gz", "sim.json"} <= set(modes)
    for name, mode in modes.items():
        want = dir_mode if os.path.isdir(tmp_path / "out" / name) else file_mode
        assert mode == want, (name, oct(mode), oct(want))
    assert _mode(tmp_path / "out") == dir_mode  # made by the first save, with its parent's rule


def test_missing_dirs_are_made_and_bad_ones_are_named(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match=r"^local_dirs: '.*/file' is not a directory \(ENOTDIR\)"):
        Context(backend="threads", progress=False, local_dirs=[str(tmp_path / "file")])
    with pytest.raises(ConfigError, match=r"^shuffle_dirs: cannot create directory '.*/file/sub/dir' "
                                          r"\(ENOTDIR: Not a directory at '.*/file/sub'\)"):
        Context(backend="threads", progress=False, local_dirs=[str(tmp_path)],
                shuffle_dirs=[str(tmp_path / "file" / "sub" / "dir")])
    with pytest.raises(ConfigError, match=r"^event_log: cannot create directory '.*/file/logs' \(ENOTDIR"):
        Context(backend="threads", progress=False, local_dirs=[str(tmp_path)], shuffle_dirs=[str(tmp_path)],
                event_log=str(tmp_path / "file" / "logs" / "ev.jsonl"))
    with pytest.raises(ConfigError, match=r"^event_log: '.*' is a directory \(EISDIR\); name a file"):
        Context(backend="threads", progress=False, local_dirs=[str(tmp_path)], shuffle_dirs=[str(tmp_path)],
                event_log=str(tmp_path))
    assert not (tmp_path / "logs").exists()


def test_the_readme_example_runs_where_its_directories_do_not_exist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # README "Using it": local_dirs=["cache"], shuffle_dirs=["shuffle"]
    with Context(memory="64MB", backend="threads", parallelism=2, progress=False, local_dirs=["cache"],
                 shuffle_dirs=["shuffle"], event_log="events.jsonl") as c:
        assert c.parallelize(range(10), 2).sum() == 45
    assert _mode(tmp_path / "cache") == _mode(tmp_path / "shuffle") == 0o700
    assert _mode(tmp_path / "events.jsonl") == 0o600


def test_another_users_directory_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a directory to another user")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 12345, 12345)  # we run as root in CI; as another user this dir would not be writable at all
    with pytest.raises(ConfigError, match=r"^local_dirs: directory '.*/theirs' belongs to another user \(uid 12345\)"):
        Context(backend="threads", progress=False, local_dirs=[str(theirs)])
