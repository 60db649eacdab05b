"""Executor faults at awkward moments (processes backend).

- Ctrl-C in the driver while tasks run: the ``KeyboardInterrupt`` reaches the user's
  script without waiting for the running tasks (they are held until a file that nobody
  creates appears, so a driver that exits did not wait for them; the task-set runner
  cancels the stage and re-raises), and no executor process of that driver survives, whether the
  script catches the interrupt and stops its Context or dies of it. The interrupt is
  sent to the driver alone (``kill -INT pid``) and to its whole process group (what a
  terminal's Ctrl-C does; executors ignore it and must be stopped by their driver).
- An executor killed (SIGKILL) while it writes a cached block to disk (its
  ``<block>.blk.<thread>.tmp`` file exists and has not been renamed into place; the
  write is held there by the task, so it is caught on every run): the
  action's answer is right, the loss is reported, the block is recomputed elsewhere, no
  temporary file is left under the application's directories, and the persisted
  dataset still answers correctly afterwards.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import numpy as np
import psutil
import pytest

from strataflow import Context
from waits import HANG_S, hold_until, wait_for

pytestmark = pytest.mark.usefixtures("no_leaks")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- Ctrl-C in the driver ------------------------------------------------------------------

_DRIVER = r'''
import os, sys, time
import strataflow

work, mode = sys.argv[1], sys.argv[2]
import signal
# a driver in a terminal: a test run started in the background (bash `cmd &`) hands its
# children SIGINT ignored, and this driver must see the Ctrl-C the test sends
signal.signal(signal.SIGINT, signal.default_int_handler)
ctx = strataflow.Context(parallelism=2, backend="processes", memory="64MB", progress=False,
                         local_dirs=[os.path.join(work, "local")], shuffle_dirs=[os.path.join(work, "shuffle")])
print("executors", *[h.pid for h in ctx.fleet.live()], flush=True)


def slow(x):
    with open(os.path.join(work, "started", f"{x}-{os.getpid()}"), "w"):
        pass
    # held until a file nobody creates appears: only the interrupt can end this job (the
    # bound is a guard against a test that never sends it)
    for _ in range(60_000):
        if os.path.exists(os.path.join(work, "never")):
            break
        time.sleep(0.01)
    return x


job = ctx.parallelize(range(2), 2).map(slow)
if mode == "catch":
    try:
        job.collect()
    except KeyboardInterrupt:
        print("interrupted", "while its tasks ran", flush=True)
        ctx.stop()
        print("stopped", "its Context", flush=True)
        sys.exit(0)
    print("the job returned", flush=True)
    sys.exit(3)
else:
    job.collect()
    print("the job returned", flush=True)
'''


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_gone(pids: list[int], seconds: float = HANG_S) -> list[int]:
    """The processes still running once all are gone or ``seconds`` passed (a hang guard)."""
    deadline = time.monotonic() + seconds
    alive = [p for p in pids if _running(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if _running(p)]
    return alive


@pytest.mark.parametrize("to", ["driver", "group"])
@pytest.mark.parametrize("mode", ["catch", "uncaught"])
def test_ctrl_c_in_the_driver_cancels_running_tasks_and_leaves_no_executor(tmp_path, mode, to):
    for d in ("local", "shuffle", "started"):
        (tmp_path / d).mkdir()
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path), mode], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    executors: list[int] = []
    try:
        first = proc.stdout.readline().split()
        assert first[:1] == ["executors"], f"the driver did not start: {first} {proc.stderr.read()[-3000:]}"
        executors = [int(p) for p in first[1:]]
        assert len(executors) == 2 and all(_running(p) for p in executors)

        def both_started():
            assert proc.poll() is None, f"the driver ended before its tasks started: {proc.stderr.read()[-3000:]}"
            return len(os.listdir(tmp_path / "started")) >= 2

        wait_for(both_started, what="the two tasks to start")
        task_pids = {int(name.split("-")[1]) for name in os.listdir(tmp_path / "started")}
        assert task_pids == set(executors), "each executor runs one of the held tasks"

        if to == "group":
            os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the driver and its executors
        else:
            os.kill(proc.pid, signal.SIGINT)
        # its tasks never end by themselves: a driver that exits did not wait for them
        try:
            out, err = proc.communicate(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the driver still ran {HANG_S:g} s after SIGINT (it waits for its held tasks): "
                        f"{err[-3000:]}")
        assert "the job returned" not in out
        if mode == "catch":
            lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
            assert proc.returncode == 0, f"exit code {proc.returncode}: {err[-3000:]}"
            assert "interrupted" in lines, f"KeyboardInterrupt did not reach the script: {out!r} {err[-3000:]}"
            assert "stopped" in lines
        else:
            assert proc.returncode != 0
            assert "KeyboardInterrupt" in err, err[-3000:]

        alive = _wait_gone(executors)
        assert not alive, f"executors {alive} outlived their driver (interrupted by SIGINT, mode {mode})"
        leftovers = os.listdir(tmp_path / "local") + os.listdir(tmp_path / "shuffle")
        assert not leftovers, (f"the Context was not stopped at exit: its directories {leftovers} remain; "
                               f"driver's stderr: {err[-1500:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for p in executors:  # never leave a stray executor behind a failed assertion
            if _running(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass


_NO_STOP = r"""
import os, sys
import strataflow

work = sys.argv[1]
ctx = strataflow.Context(parallelism=2, backend="processes", memory="64MB", progress=False,
                         local_dirs=[os.path.join(work, "local")], shuffle_dirs=[os.path.join(work, "shuffle")])
print("executors", *[h.pid for h in ctx.fleet.live()], flush=True)
print("sum", ctx.parallelize(range(10), 2).sum(), flush=True)
"""


def test_a_driver_that_never_stops_its_context_is_stopped_at_exit(tmp_path):
    """What the uncaught Ctrl-C relies on, without the interrupt: the Context's atexit
    hook stops the executors and removes the application's directories."""
    for d in ("local", "shuffle"):
        (tmp_path / d).mkdir()
    script = tmp_path / "driver.py"
    script.write_text(_NO_STOP)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    proc = subprocess.run([sys.executable, str(script), str(tmp_path)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=60)
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert proc.returncode == 0 and lines.get("sum") == "45", (proc.stdout, proc.stderr[-3000:])
    executors = [int(p) for p in lines["executors"].split()]
    assert not _wait_gone(executors), "executors outlived their driver"
    assert "Exception ignored in atexit" not in proc.stderr, proc.stderr[-3000:]
    leftovers = os.listdir(tmp_path / "local") + os.listdir(tmp_path / "shuffle")
    assert not leftovers, f"the Context was not stopped at exit: its directories {leftovers} remain"


# -- an executor killed while it writes a block to disk -------------------------------------

_PARTITIONS = 6


def _tmp_files(dirs: list[str]) -> list[str]:
    out = []
    for d in dirs:
        for root, _, files in os.walk(d):
            out.extend(os.path.join(root, f) for f in files if f.endswith(".tmp"))
    return out


_HELD_SPLIT = 2  # a later block: its executor then also holds a finished one, lost with it


def _hold_block_write(split: int, marks: str) -> None:
    """Run by a task in its executor process: from then on, that process's write of
    partition ``split``'s block file stops after its first bytes (the temporary
    ``<block>.blk.<thread>.tmp`` exists and is not renamed into place), says so with the
    file ``marks/<pid>`` and waits to be killed. Only the first task to get here installs
    it (an O_EXCL marker), so the block's recomputation elsewhere writes as usual. A write
    is thus caught in progress on every run, however fast or busy the machine."""
    try:
        os.close(os.open(os.path.join(marks, "installed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    from strataflow.storage.disk import disk_store

    real, suffix = disk_store.atomic_write, f"_{split}.blk"

    class Held:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            self.fh.write(data)
            self.fh.flush()
            open(os.path.join(marks, str(os.getpid())), "w").close()
            hold_until(os.path.join(marks, "never"), timeout=600)  # the test kills this process first

    @contextmanager
    def atomic_write(path, sync=False):
        with real(path, sync) as fh:
            yield Held(fh) if path.endswith(suffix) else fh

    disk_store.atomic_write = atomic_write


def _kill_held_write(ctx: Context, marks: str) -> tuple[str, str, int]:
    """Waits for the held write's executor to say so, checks that its temporary file is
    there (the block is not in place yet) and kills the executor (SIGKILL). Returns
    (executor id, block name, bytes of the temporary file)."""
    pid = int(wait_for(lambda: [n for n in os.listdir(marks) if n.isdigit()], what="a block write to be held")[0])
    handle = next(h for h in ctx.fleet.live() if h.pid == pid)
    eid = handle.executor_id
    (tmp,) = [t for d in ctx.local_dirs for t in glob.glob(os.path.join(d, f"exec-{eid}", "*.blk.*.tmp"))]
    size = os.path.getsize(tmp)
    os.kill(pid, signal.SIGKILL)
    return eid, os.path.basename(tmp).split(".blk.")[0], size


def _one_attempt(tmp_path, mb: int) -> str:
    """One run at ``mb`` MB per block, its executor killed while it writes partition
    ``_HELD_SPLIT``'s block (held there: see ``_hold_block_write``)."""
    base = tmp_path / f"{mb}mb"
    for d in ("cache", "shuffle", "marks"):
        (base / d).mkdir(parents=True)
    marks = str(base / "marks")
    n = (mb << 20) // 8
    expected = [float((np.arange(n, dtype=np.float64) + i).sum()) for i in range(_PARTITIONS)]
    events: list[dict] = []
    with Context(backend="processes", parallelism=2, memory="64MB", progress=False,
                 local_dirs=[str(base / "cache")], shuffle_dirs=[str(base / "shuffle")],
                 event_log=str(base / "events.jsonl")) as c:
        c.events.subscribe(events.append)
        app_dirs = c.local_dirs + c.shuffle_dirs

        def make(i, _):
            if i == _HELD_SPLIT:
                _hold_block_write(i, marks)
            return np.arange(n, dtype=np.float64) + i

        ds = c.range(_PARTITIONS, num_partitions=_PARTITIONS).map_partitions_with_index(make).persist("DISK_ONLY")
        sums = ds.map_partitions(lambda a: [float(a.sum())])
        got: dict = {}

        def action():
            try:
                got["value"] = sums.collect()
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                got["error"] = exc

        t = threading.Thread(target=action, name="test-action")
        t.start()
        try:
            killed = _kill_held_write(c, marks)
        finally:
            t.join(HANG_S)
        assert not t.is_alive(), "the action hangs after its executor was killed mid-write"
        eid, block, size = killed
        assert "error" not in got, f"the action failed after executor {eid} was killed mid-write: {got['error']!r}"
        assert got["value"] == expected, "wrong answer after an executor was killed mid-write"

        first_job = len(events)
        lost = [e for e in events if e["event"] == "ExecutorLost"]
        assert len(lost) == 1 and lost[0]["executor"] == eid and "signal 9" in lost[0]["reason"], lost
        at = next(k for k, e in enumerate(events) if e["event"] == "ExecutorLost")
        misses = [(k, e) for k, e in enumerate(events)
                  if e["event"] == "BlockAccess" and e["result"] == "miss" and e["block"] == block]
        # (the killed executor's own miss may have died in its outbox: events travel in batches)
        assert any(e.get("executor") != eid and k > at for k, e in misses), (
            f"block {block} (being written by executor {eid} when it was killed) was not recomputed elsewhere")
        assert not os.path.exists(os.path.join(c.local_dirs[0], f"exec-{eid}")), "the lost executor's files remain"
        left = _tmp_files(app_dirs)
        assert not left, f"temporary block files left after the job: {left}"

        # The persisted dataset still answers, and only what the lost executor held is recomputed.
        assert sums.collect() == expected
        assert ds.map_partitions(lambda a: [float(a[-1])]).collect() == [float(n - 1 + i) for i in range(_PARTITIONS)]
        done_on_killed = {e["partition"] for e in events[:first_job]
                          if e["event"] == "TaskEnd" and e.get("executor") == eid and e["ok"]}
        again = {e["split"] for e in events[first_job:] if e["event"] == "BlockAccess" and e["result"] == "miss"}
        assert again <= done_on_killed, (
            f"blocks {sorted(again - done_on_killed)} were recomputed though no lost executor held them")
        assert not _tmp_files(app_dirs), f"temporary block files left: {_tmp_files(app_dirs)}"
        return f"killed executor {eid} writing {block} ({size} of {mb << 20} bytes written)"


def test_executor_killed_while_writing_a_cached_block_to_disk(tmp_path):
    print(_one_attempt(tmp_path, 8))
