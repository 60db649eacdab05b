"""An executor removes what the driver cannot reach on a cluster (``executor/runtime.py``):
the directories of a lost executor of its node, and its own files of a shuffle no dataset
reads -- and nothing outside its application's directories."""

from __future__ import annotations

import os

import numpy as np
import pytest

from strataflow.config import Config
from strataflow.executor.core import ExecutorCore
from strataflow.executor.messages import RemoveLostExecutor, RemoveMapOutputs
from strataflow.executor.runtime import ExecutorRuntime, ExecutorSpec


@pytest.fixture
def core(tmp_path):
    dirs = {k: tmp_path / k for k in ("cache", "shuffle")}
    for d in dirs.values():
        d.mkdir()
    cfg = Config.build(memory="32MB", backend="processes", executors=2, progress=False)
    spec = ExecutorSpec("0", cfg, [str(dirs["cache"])], [str(dirs["shuffle"])], [], os.getpid())
    rt = ExecutorRuntime(spec)
    yield ExecutorCore(rt), dirs
    rt.close()


def test_a_lost_executors_directories_are_removed_by_a_sibling(core):
    c, dirs = core
    for d in dirs.values():
        (d / "exec-1" / "sub").mkdir(parents=True)
        (d / "exec-1" / "sub" / "block").write_bytes(b"x")
        (d / "exec-10").mkdir()
    assert c.handle(RemoveLostExecutor("1")) == 2
    for d in dirs.values():
        assert not (d / "exec-1").exists() and (d / "exec-10").exists() and (d / "exec-0").exists()
    assert c.handle(RemoveLostExecutor("7")) == 0  # none here: nothing to do


@pytest.mark.parametrize("bad", ["0", "../cache", "1/..", "", "-1"])
def test_only_another_executors_id_is_taken(core, bad):
    c, dirs = core
    with pytest.raises(ValueError, match="not another executor's id"):
        c.handle(RemoveLostExecutor(bad))
    assert (dirs["cache"] / "exec-0").exists()


def test_an_executor_removes_only_its_own_map_outputs(core, tmp_path):
    c, dirs = core
    rt = c.runtime
    mine = rt.shuffle.write(3, 0, [np.arange(10.0), np.arange(5.0)])
    assert mine.executor_id == "0"
    other = ExecutorRuntime(ExecutorSpec("1", rt.config, [str(dirs["cache"])], [str(dirs["shuffle"])], [],
                                         os.getpid(), auth_key=rt.spec.auth_key))
    try:
        theirs = other.shuffle.write(3, 1, [np.arange(3.0), np.arange(4.0)])
        assert c.handle(RemoveMapOutputs((mine, theirs))) == 1
        assert not os.path.exists(mine.data_path) and not os.path.exists(mine.index_path)
        assert os.path.exists(theirs.data_path) and os.path.exists(theirs.index_path)
    finally:
        other.close()
