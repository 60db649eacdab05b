"""Executors: the driver/executor split on the processes backend.

Locality (a cached partition is served by the executor that holds it, run after run),
the clear error of a closure that cannot be pickled, executor loss (kill -9) during a map
stage, during a result stage and while a block is being written, a user function that
ends its process, executors that exit by themselves when the driver dies, and storage
and metrics summed over executors with a breakdown by executor.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import psutil
import pytest

from faults_util import fail_tasks_sent_together
from waits import HANG_S, hold_until, wait_for, wait_for_file
from strataflow import Context, TaskFailedError
from strataflow.scheduler.pickling import UnpicklableTaskError
from conftest import local_backends


def _context(tmp_path, **kw) -> Context:
    for d in ("cache", "shuffle"):
        (tmp_path / d).mkdir(exist_ok=True)
    kw.setdefault("memory", "64MB")
    kw.setdefault("parallelism", 2)
    return Context(backend="processes", progress=False, local_dirs=[str(tmp_path / "cache")],
                   shuffle_dirs=[str(tmp_path / "shuffle")], event_log=str(tmp_path / "events.jsonl"), **kw)


def _events(tmp_path, kind=None) -> list[dict]:
    with open(tmp_path / "events.jsonl") as f:
        out = [json.loads(line) for line in f]
    return [e for e in out if kind is None or e["event"] == kind]


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _kill_when(path, executor_pid_file):
    """A function for map_partitions: the task that finds ``path`` absent creates it and
    kills its own executor with SIGKILL (as kill -9 from outside would)."""
    def f(i, v):
        if i == 1:
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)
            except FileExistsError:
                pass
        return v
    return f


def test_executors_are_processes_with_their_own_share_of_memory(tmp_path):
    with _context(tmp_path, memory="64MB", executors=2) as c:
        pids = set(c.parallelize(range(8), 8).map(lambda _: os.getpid()).collect())
        assert len(pids) == 2 and os.getpid() not in pids
        assert c.executors() == ["0", "1"]
        assert c.config.executor_memory == 32 << 20
        assert c.startup_s > 0  # measured in benchmarks/scaling.py (a busy machine is slower); here: it did start
        children = {p.pid for p in psutil.Process().children()}
        assert pids <= children


def test_locality_the_same_executor_serves_a_partition_across_iterations(tmp_path):
    # a task waits for its block's executor however busy the machine (the wait's bound,
    # locality_wait, is what tests/test_delay_scheduling.py tests)
    with _context(tmp_path, executors=2, locality_wait=HANG_S) as c:
        pts = c.from_numpy(np.arange(40_000.0).reshape(-1, 4), 8).map_partitions(lambda a: a * 1.0).persist("MEMORY_ONLY")
        first = pts.map_partitions_with_index(lambda i, a: [(i, os.getpid())]).collect()
        for _ in range(3):
            again = pts.map_partitions_with_index(lambda i, a: [(i, os.getpid())]).collect()
            assert again == first  # each partition ran where its block is
        m = c.metrics()
        assert m["misses"] == 8 and m["memory_hits"] == 24  # nothing recomputed elsewhere
        per = c.metrics(by_executor=True)
        assert sorted(per) == ["0", "1"] and all(p["memory_hits"] > 0 for p in per.values())
        by_exec = c.storage_status(by_executor=True)
        assert sum(s[0].memory_partitions for s in by_exec.values()) == 8
        assert c.storage_status()[0].memory_partitions == 8
        pts.unpersist()
        assert all(len(s) == 0 for s in c.storage_status(by_executor=True).values())


def test_a_closure_that_cannot_be_pickled_fails_at_submit_naming_function_and_object(tmp_path):
    with _context(tmp_path) as c:
        lock = threading.Lock()

        def guarded(x):
            with lock:
                return x

        with pytest.raises(UnpicklableTaskError, match=r"guarded .*'lock'.*_thread.lock"):
            c.parallelize(range(4), 2).map(guarded).collect()

        def uses_context(x):
            return c.default_parallelism + x

        with pytest.raises(UnpicklableTaskError, match=r"uses_context.*'c'.*Context"):
            c.parallelize(range(4), 2).map(uses_context).collect()
        assert not _events(tmp_path, "TaskStart")  # nothing ran
        assert c.parallelize(range(4), 2).sum() == 6  # and the context still works


@pytest.mark.parametrize("stage", ["map", "result"])
def test_executor_killed_mid_stage_is_replaced_and_the_answer_is_right(tmp_path, stage):
    with _context(tmp_path, executors=2) as c:
        cached = c.parallelize(range(1000), 4).map(lambda x: (x % 7, x)).persist("MEMORY_ONLY")
        cached.count()
        killer = _kill_when(str(tmp_path / "killed"), None)
        if stage == "map":
            got = dict(cached.map_partitions_with_index(killer).reduce_by_key(lambda a, b: a + b).collect())
            assert got == {k: sum(x for x in range(1000) if x % 7 == k) for k in range(7)}
        else:
            got = cached.map_partitions_with_index(killer).map(lambda kv: kv[1]).collect()
            assert got == list(range(1000))
        assert sorted(cached.map(lambda kv: kv[1]).collect()) == list(range(1000))  # lost blocks recomputed
        wait_for(lambda: len(c.executors()) == 2, what="the lost executor's replacement")
        assert "2" in c.executors()  # replaced by a new one
    lost = _events(tmp_path, "ExecutorLost")
    assert len(lost) == 1 and "signal 9" in lost[0]["reason"]
    assert [e["executor"] for e in _events(tmp_path, "ExecutorAdded")] == ["2"]


def test_executor_killed_while_its_cache_spills_loses_nothing(tmp_path):
    """MEMORY_AND_DISK under pressure (blocks being dropped to disk by the executor's
    other tasks): an executor dies mid-task; its blocks are recomputed elsewhere and the
    answer is right."""
    with _context(tmp_path, memory="4MB", executors=2) as c:
        flag = str(tmp_path / "killed")

        def slow_then_die(i, a):
            if i == 5 and not os.path.exists(flag):
                open(flag, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)  # mid-task, its other task spilling
                hold_until(flag + ".never")  # not reached: the process is gone
            return a * 1.0

        pts = c.from_numpy(np.arange(400_000.0).reshape(-1, 4), 8).map_partitions_with_index(slow_then_die)
        pts = pts.persist("MEMORY_AND_DISK")
        assert pts.map_partitions(lambda a: [a.sum()]).sum() == pytest.approx(np.arange(400_000.0).sum())
        assert pts.map_partitions(lambda a: [a.sum()]).sum() == pytest.approx(np.arange(400_000.0).sum())
    assert len(_events(tmp_path, "ExecutorLost")) == 1


def test_a_function_that_exits_its_process_fails_the_job_after_its_attempts(tmp_path):
    with _context(tmp_path, max_task_attempts=2) as c:
        with pytest.raises(TaskFailedError, match="lost"):
            c.parallelize(range(4), 2).map(lambda x: os._exit(3) if x == 3 else x).collect()
        assert c.parallelize(range(4), 2).sum() == 6  # replacements run the next job
    lost = _events(tmp_path, "ExecutorLost")
    assert len(lost) == 2 and all("exited with code 3" in e["reason"] for e in lost)


def test_executors_exit_when_the_driver_is_killed(tmp_path):
    script = ("import os, sys, time, strataflow\n"
              "c = strataflow.Context(parallelism=2, backend='processes', progress=False)\n"
              "pids = c.parallelize(range(4), 4).map(lambda _: os.getpid()).collect()\n"
              "print(' '.join(map(str, sorted(set(pids)))), flush=True)\n"
              "sys.stdin.read()\n")  # alive until the test kills it (or closes its stdin)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2
        proc.kill()
        proc.wait()
        wait_for(lambda: not any(_running(p) for p in pids), what="the executors to exit after their driver")
    finally:
        proc.kill()


def test_events_of_executors_reach_the_driver_log_with_their_id(tmp_path):
    with _context(tmp_path, locality_wait=HANG_S) as c:  # the second count runs where the blocks are
        ds = c.parallelize(range(100), 4).persist("MEMORY_ONLY")
        ds.count()
        ds.count()
    ends = _events(tmp_path, "TaskEnd")
    assert len(ends) == 8 and {e["executor"] for e in ends} == {"0", "1"}
    accesses = _events(tmp_path, "BlockAccess")
    assert {e["result"] for e in accesses} == {"miss", "memory"} and all("executor" in e for e in accesses)
    started = _events(tmp_path, "ExecutorsStarted")
    assert started and started[0]["executors"] == 2 and len(started[0]["pids"]) == 2


@pytest.mark.parametrize("backend", local_backends())
def test_stop_from_another_thread_fails_the_running_job_promptly(tmp_path, backend):
    from strataflow import ContextStopped

    c = Context(backend=backend, parallelism=2, progress=False, local_dirs=[str(tmp_path)],
                shuffle_dirs=[str(tmp_path)])
    started, release = tmp_path / "started", tmp_path / "release"

    def held(v, started=str(started), release=str(release)):
        with open(started, "a") as f:
            f.write("x\n")
        hold_until(release)  # running until stop() has begun: stop lets running tasks finish
        return v

    slow = c.parallelize(range(64), 32).map_partitions(held)
    outcome: dict = {}

    def job():
        try:
            slow.count()
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            outcome["error"] = exc

    def release_once_stopping():
        wait_for(lambda: c._closed, what="stop() to begin")
        release.touch()

    t = threading.Thread(target=job)
    t.start()
    wait_for_file(started, what="the first task to start")
    releaser = threading.Thread(target=release_once_stopping)
    releaser.start()
    c.stop()
    releaser.join(HANG_S)
    t.join(HANG_S)
    assert not t.is_alive(), "the job still waits after stop() from another thread"
    assert isinstance(outcome.get("error"), ContextStopped), outcome
    assert "stopped" in str(outcome["error"])
    # promptly: the tasks held until stop() began; the job did not go on to run the rest
    assert len(started.read_text().splitlines()) < 32
    with pytest.raises(RuntimeError, match="stopped"):
        c.parallelize(range(3), 1).count()


def test_wire_messages_keep_arrays_whole_writable_and_small_ones_in_one_frame():
    """The socket protocol: large and small arrays both arrive equal and writable (a
    driver may add into a task's partial sums), a read-only one stays read-only, and a
    message whose buffers are all small is a single frame (one write, one wake-up)."""
    import socket
    from multiprocessing.connection import Connection

    from strataflow.executor import wire

    a, b = socket.socketpair()
    sender, receiver = Connection(a.detach()), Connection(b.detach())
    frozen = np.arange(7.0)
    frozen.flags.writeable = False
    small, large = np.arange(20.0).reshape(4, 5), np.arange(100_000, dtype=np.int64)
    out = []
    for msg in [("task_done", 1, (small, np.int64(3))), ("task_done", 2, [large, frozen, b"raw"])]:
        t = threading.Thread(target=wire.send, args=(sender, msg, threading.Lock()))
        t.start()
        out.append(wire.recv(receiver))
        t.join()
        assert not receiver.poll(0)  # nothing of the message left behind
    (_, _, (got_small, three)), (_, _, (got_large, got_frozen, raw)) = out
    np.testing.assert_array_equal(got_small, small)
    np.testing.assert_array_equal(got_large, large)
    np.testing.assert_array_equal(got_frozen, frozen)
    assert got_small.flags.writeable and got_large.flags.writeable and not got_frozen.flags.writeable
    got_small += 1  # writable in place
    assert three == 3 and raw == b"raw"
    # one frame for the small message: its pickle holds the array's bytes itself
    t = threading.Thread(target=wire.send, args=(sender, ("m", small), threading.Lock()))
    t.start()
    frame = receiver.recv_bytes()
    t.join()
    assert frame[:4] == b"\x00\x00\x00\x00" and small.tobytes() in frame
    sender.close()
    receiver.close()


def _alloc_faults(rounds: int = 12, floats: int = 200_000) -> list[int]:
    """Minor page faults of this thread per round of a kernel's worth of temporaries
    (four arrays of ``floats`` doubles alive at once, 1.6 MB each by default, then freed)."""
    import resource

    out = []
    for _ in range(rounds):
        f0 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        arrays = [np.ones(floats) for _ in range(4)]
        del arrays
        out.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - f0)
    return out


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's heap thresholds and RUSAGE_THREAD are Linux's")
def test_executor_tasks_reuse_their_heap_instead_of_faulting_temporaries_back_in(tmp_path):
    """A fresh process's glibc trims a few MB of freed temporaries after every task and
    faults them back in on the next (about 1,500 faults a round here); executors fix
    the heap's thresholds, so only the first round touches new pages. Temporaries of
    6 MB each (naive Bayes' gathers are 5 MB) stay on the heap too: a 4 MB threshold
    mapped and faulted them at every round (about 6,000 faults)."""
    import subprocess as sp

    probe = "import test_executors as t, threading; r = []; th = threading.Thread(target=lambda: r.append(t._alloc_faults())); th.start(); th.join(); print(min(r[0][1:]))"
    fresh = sp.run([sys.executable, "-c", probe], cwd=os.path.dirname(__file__), capture_output=True, text=True, check=True)
    assert int(fresh.stdout) > 500  # the cost being avoided is real on this C library
    with _context(tmp_path) as ctx:
        rounds = ctx.parallelize(range(2), 2).map_partitions(lambda it: [_alloc_faults()]).collect()
    assert len(rounds) == 2
    for faults in rounds:
        assert faults[0] > 500 and max(faults[1:]) < 50, faults
    with _context(tmp_path) as ctx:
        rounds = ctx.parallelize(range(2), 2).map_partitions(lambda it: [_alloc_faults(floats=750_000)]).collect()
    for faults in rounds:
        assert faults[0] > 1000 and max(faults[1:]) < 50, faults


def test_an_iteration_over_cached_data_is_one_message_each_way_per_executor(tmp_path, monkeypatch):
    """Four cached partitions on two one-core executors (two each: the first job places
    two per slot at once): each iteration sends each executor its two tasks in one
    message and gets both results back in one (the driver had nothing else to launch); a
    failing task still reports at once, and a result that does not pickle fails its task
    with the pickling error instead of losing the others."""
    from strataflow.executor import processes, wire

    seen: list[tuple[str, int]] = []
    real_recv, real_send = wire.recv, wire.send

    def recv(conn):
        msg = real_recv(conn)
        if msg[0] in ("task_done", "tasks_done", "task_failed"):
            seen.append((msg[0], len(msg[1]) if msg[0] == "tasks_done" else 1))
        return msg

    def send(conn, msg, lock):
        if isinstance(msg, tuple) and msg[0] in ("stage", "tasks"):
            seen.append((msg[0], len(msg[5] if msg[0] == "stage" else msg[1])))
        real_send(conn, msg, lock)

    monkeypatch.setattr(processes.wire, "recv", recv)
    monkeypatch.setattr(processes.wire, "send", send)
    with _context(tmp_path, executors=2, max_task_attempts=1) as c:
        pts = c.from_numpy(np.arange(40_000.0).reshape(-1, 4), 4).persist("MEMORY_ONLY")
        pts.count()
        assert [s[0].memory_partitions for s in c.storage_status(by_executor=True).values()] == [2, 2]
        seen.clear()
        assert pts.map_partitions(lambda a: [a.sum()]).sum() == pytest.approx(np.arange(40_000.0).sum())
        assert sorted(seen) == [("stage", 2), ("stage", 2), ("tasks_done", 2), ("tasks_done", 2)]

        fail_tasks_sent_together(pts, TaskFailedError)


@pytest.mark.parametrize("mode", ["r", "rb", "w"])
def test_a_closure_holding_an_open_file_fails_before_any_task_runs_naming_it(tmp_path, mode):
    """cloudpickle would pickle a text file open for reading by its content (a silent
    snapshot): refused like a binary or a write-mode file, naming the function and the
    variable, before any task runs (issue 38)."""
    path = tmp_path / "in.txt"
    path.write_text("a\nb\n")
    ran = tmp_path / "ran"
    with open(path, mode) as handle, Context(backend="processes", parallelism=2, progress=False,
                                             local_dirs=[str(tmp_path)], shuffle_dirs=[str(tmp_path)]) as c:
        def uses_file(x):
            ran.write_text("a task ran")
            return (x, handle.name)

        with pytest.raises(UnpicklableTaskError, match=r"uses_file .* uses 'handle', a _io\.\w+, which cannot be "
                                                       r"pickled \(OpenFileInClosure.*Open the file inside the "
                                                       r"function .* ctx\.add_file"):
            c.parallelize(range(4), 2).map(uses_file).collect()
        assert not ran.exists()
        assert c.parallelize(range(4), 2).map(lambda x: x + 1).sum() == 10  # the context is fine after


def test_the_threads_backend_shares_an_open_file_with_the_caller(tmp_path):
    """Nothing is pickled on the threads backend: a closure's file is the caller's object."""
    path = tmp_path / "in.txt"
    path.write_text("a\nb\n")
    with open(path) as handle, Context(backend="threads", parallelism=2, progress=False,
                                       local_dirs=[str(tmp_path)], shuffle_dirs=[str(tmp_path)]) as c:
        assert c.parallelize([0], 1).map(lambda _: handle.read()).collect() == ["a\nb\n"]
        assert handle.read() == ""  # the same object, read to its end by the task
