"""Application directories: a start never removes a live application's directories (its
owner holds a lock on them for its whole life), removes those of a dead one, refuses a
base directory other users could tamper with, and a constructor that fails leaves none."""

from __future__ import annotations

import multiprocessing as mp
import os
import stat
import subprocess
import sys
import time

import pytest

from strataflow import Context
from strataflow.common.checks import ConfigError
from strataflow.storage.workdirs import create_app_dirs, new_app_id, remove_dirs, remove_stale


def _churn(base: str, rounds: int, q) -> None:
    lost = 0
    for _ in range(rounds):
        dirs = create_app_dirs([base], new_app_id(), "cache") + create_app_dirs([base], new_app_id(), "shuffle")
        remove_stale([base])  # every other process does the same, all the time
        lost += sum(not os.path.isdir(d) for d in dirs)
        remove_dirs(dirs)
    q.put(lost)


def test_concurrent_starts_on_one_base_never_remove_each_others_directories(tmp_path):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_churn, args=(str(tmp_path), 150, q)) for _ in range(3)]
    for p in procs:
        p.start()
    lost = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
    assert lost == [0, 0, 0]
    assert not [n for n in os.listdir(tmp_path) if n.startswith("strataflow-")]


_HOLD = """
import sys, time
from strataflow.storage.workdirs import create_app_dirs
d = create_app_dirs([sys.argv[1]], "other-app", "cache")[0]
open(d + "/owner", "w").write("999999999 elsewhere\\n")  # a pid from another namespace: means nothing here
print(d, flush=True)
sys.stdin.read()  # alive, its lock held, until the test kills it
"""


def test_a_live_owner_is_proven_by_its_lock_not_its_pid_and_a_dead_ones_directory_goes(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", _HOLD, str(tmp_path)], stdout=subprocess.PIPE, stdin=subprocess.PIPE,
                         text=True)
    try:
        held = p.stdout.readline().strip()
        assert os.path.isdir(held)
        assert remove_stale([str(tmp_path)]) == [] and os.path.isdir(held)  # alive: its lock is held
        p.kill()
        p.wait()
        assert remove_stale([str(tmp_path)]) == [held] and not os.path.exists(held)  # dead: no lock
    finally:
        p.kill()


def test_a_directory_being_created_or_not_ours_is_left_alone(tmp_path):
    half = tmp_path / "strataflow-123-abc-cache"
    half.mkdir()  # made, owner file not renamed into place yet
    (half / ".owner.tmp").write_text("")
    other = tmp_path / "strataflow-something-else"
    other.mkdir()
    assert remove_stale([str(tmp_path)]) == []
    assert half.exists() and other.exists()


def test_a_base_every_user_may_write_without_the_sticky_bit_is_refused(tmp_path):
    base = tmp_path / "shared"
    base.mkdir()
    os.chmod(base, 0o777)
    with pytest.raises(ConfigError, match="writable by every user and has no sticky bit"):
        Context(local_dirs=[str(base)], progress=False, backend="threads")
    os.chmod(base, 0o777 | stat.S_ISVTX)  # as /tmp: others cannot rename our directories
    with Context(local_dirs=[str(base)], shuffle_dirs=[str(tmp_path)], progress=False, backend="threads") as c:
        assert c.parallelize(range(10), 2).sum() == 45


def test_a_constructor_that_fails_leaves_no_directories(tmp_path):
    os.symlink("loop", tmp_path / "loop")  # passes the checks, fails to open (ELOOP) after the dirs are made
    with pytest.raises(ConfigError, match=r"event_log: cannot open .*loop.* \(ELOOP"):
        Context(local_dirs=[str(tmp_path)], shuffle_dirs=[str(tmp_path)], progress=False, backend="threads",
                event_log=str(tmp_path / "loop"))
    assert not [n for n in os.listdir(tmp_path) if n.startswith("strataflow-")]
