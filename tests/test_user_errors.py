"""Errors show the user's code (issue 39, section 1), on the threads and processes
backends (the Ray cells are in ``test_ray_backend.py``, which has the cluster).

A user function in this file raises; the job's error is caught as the user's own type
(``pytest.raises(ValueError)``), ``traceback.format_exception`` of it shows this file, the
function's name and the source line of the raise, the function ran once (local mode does
not retry user errors: ``task_max_failures=1``), and ``task_max_failures=3`` (or Spark's
``spark.task.maxFailures``) runs it three times. Calls are counted in a file the executor
processes append to (``Calls``), never by timing. An exception that cannot be pickled
reaches the driver as a ``RemoteTaskError`` that names it and keeps the executor's
traceback as text, and its frames.
"""

from __future__ import annotations

import errno
import os
import pickle
import sys
import threading
import traceback

import pytest

from strataflow import Context, TaskFailedError
from strataflow.executor.work import RemoteTaskError
from strataflow.common.retries import attempts_allowed, default_task_max_failures, infrastructure_fault
from test_failures import Calls
from conftest import local_backends

BACKENDS = local_backends()
HERE = os.path.abspath(__file__)


def _line_of(marker: str) -> int:
    """The line of this file that carries ``marker`` (a comment on a raise)."""
    with open(HERE) as f:
        for n, line in enumerate(f, 1):
            if line.rstrip().endswith(marker) and "_line_of" not in line:
                return n
    raise AssertionError(f"no line ends with {marker!r}")


def _context(tmp_path, backend, **kw) -> Context:
    for d in ("cache", "shuffle"):
        (tmp_path / d).mkdir(exist_ok=True)
    return Context(memory="64MB", parallelism=2, backend=backend, progress=False,
                   local_dirs=[str(tmp_path / "cache")], shuffle_dirs=[str(tmp_path / "shuffle")], **kw)


def _parser(calls: Calls):
    """A user function, made per test so that it travels by value (as a script's does)."""

    def parse_amount(text):
        calls.add(text)
        return float(text)  # USER-RAISE-1

    return parse_amount


def _calls_of(calls: Calls, tag: str) -> int:
    try:
        with open(calls.path) as f:
            return sum(1 for line in f if line.rstrip("\n") == tag)
    except FileNotFoundError:
        return 0


def _formatted(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def _assert_shows_user_line(text: str, function: str, marker: str) -> None:
    line = _line_of(marker)
    assert f'File "{HERE}", line {line}, in {function}' in text, text
    with open(HERE) as f:
        source = f.readlines()[line - 1].strip()
    assert source in text, text


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_user_error_is_caught_as_itself_shows_the_users_line_and_runs_once(tmp_path, backend):
    calls = Calls(tmp_path / "calls")
    with _context(tmp_path, backend) as c:
        assert c.config.task_max_failures == 1 and c.config.max_task_attempts == 4
        ds = c.parallelize(["1.5", "oops", "2", "3"], 2).map(_parser(calls))
        with pytest.raises(ValueError, match="could not convert string to float: 'oops'") as info:
            ds.collect()
        err = info.value
        assert isinstance(err, TaskFailedError) and isinstance(err.__cause__, ValueError)
        assert type(err).__name__ == "TaskFailedError(ValueError)"
        assert err.partition == 0 and err.attempts == 1 and err.executor is not None
        assert "not retried: task_max_failures=1" in str(err)
        _assert_shows_user_line(_formatted(err), "parse_amount", "# USER-RAISE-1")
        assert _calls_of(calls, "oops") == 1, "a user error was retried"
        if sys.version_info >= (3, 11):
            [note] = err.__cause__.__notes__
            assert "partition 0" in note and f"executor {err.executor}" in note and "attempt 1" in note
        # a plain except clause catches it, and the Context goes on
        try:
            ds.count()
        except ValueError as again:
            assert again.partition == 0
        assert c.parallelize(range(5), 2).sum() == 10


@pytest.mark.parametrize("backend", BACKENDS)
def test_task_max_failures_runs_a_user_error_that_many_times(tmp_path, backend):
    calls = Calls(tmp_path / "calls")
    with _context(tmp_path, backend, task_max_failures=3) as c:
        with pytest.raises(ValueError) as info:
            c.parallelize(["oops", "1"], 2).map(_parser(calls)).collect()
    assert info.value.attempts == 3 and "failed 3 time(s)" in str(info.value)
    assert "not retried" not in str(info.value)
    assert _calls_of(calls, "oops") == 3
    assert _calls_of(calls, "1") == 1


def test_spark_task_max_failures_through_sparkconf(tmp_path):
    from strataflow.pyspark import SparkConf, SparkContext

    calls = Calls(tmp_path / "calls")
    conf = (SparkConf().set("spark.task.maxFailures", "2").set("strataflow.memory", "64MB")
            .set("strataflow.progress", "false").set("strataflow.local_dirs", str(tmp_path)))
    with SparkContext("local[2]", "errors", conf=conf) as sc:
        assert sc.ctx.config.task_max_failures == 2
        with pytest.raises(ValueError):
            sc.parallelize(["oops", "2"], 2).map(_parser(calls)).collect()
    assert _calls_of(calls, "oops") == 2


def test_the_option_from_conf_and_the_environment(tmp_path, monkeypatch):
    with _context(tmp_path, "threads", conf={"task_max_failures": "5"}) as c:
        assert c.config.task_max_failures == 5 and c.config_sources["task_max_failures"] == "conf"
    monkeypatch.setenv("STRATAFLOW_TASK_MAX_FAILURES", "2")
    with _context(tmp_path, "threads") as c:
        assert c.config.task_max_failures == 2
    from strataflow import ConfigError

    with pytest.raises(ConfigError, match="task_max_failures"):
        _context(tmp_path, "threads", task_max_failures=0)


class LockedError(Exception):
    """A user exception that cannot be pickled: it holds a lock."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()


def _locked_raiser():
    def check_row(x):
        if x == 3:
            raise LockedError(f"row {x} is locked")  # USER-RAISE-2
        return x

    return check_row


def test_an_exception_that_does_not_pickle_comes_back_with_the_executors_traceback(tmp_path):
    with _context(tmp_path, "processes") as c:
        with pytest.raises(TaskFailedError) as info:
            c.parallelize(range(6), 2).map(_locked_raiser()).collect()
    err = info.value
    cause = err.__cause__
    assert isinstance(cause, RemoteTaskError) and isinstance(err, RemoteTaskError)
    assert "LockedError: row 3 is locked" in str(err) and "does not pickle" in str(cause)
    assert cause.type_name.endswith("test_user_errors.LockedError")
    # the executor's traceback, as text and as the cause's own frames
    line = _line_of("# USER-RAISE-2")
    assert f'File "{HERE}", line {line}, in check_row' in cause.remote_traceback
    assert "LockedError: row 3 is locked" in cause.remote_traceback
    _assert_shows_user_line(_formatted(err), "check_row", "# USER-RAISE-2")


def test_an_exception_that_does_not_pickle_on_threads_is_itself(tmp_path):
    with _context(tmp_path, "threads") as c:
        with pytest.raises(LockedError, match="row 3 is locked") as info:
            c.parallelize(range(6), 2).map(_locked_raiser()).collect()
    assert isinstance(info.value.lock, type(threading.Lock()))  # its fields copied onto the job's error
    _assert_shows_user_line(_formatted(info.value), "check_row", "# USER-RAISE-2")


def test_the_chain_and_fields_of_a_task_error_travel(tmp_path):
    def read_config(x):
        try:
            {}["missing"]
        except KeyError as exc:
            raise FileNotFoundError(errno.ENOENT, "no config", f"/nowhere/{x}.cfg") from exc  # USER-RAISE-3

    with _context(tmp_path, "processes") as c:
        with pytest.raises(FileNotFoundError) as info:
            c.parallelize([7], 1).map(read_config).collect()
    err = info.value
    assert err.errno == errno.ENOENT and err.filename == "/nowhere/7.cfg"  # what the task raised
    assert str(err).startswith("task for partition 0")  # the job's message, not OSError's
    assert isinstance(err.__cause__.__cause__, KeyError)  # the user's own chain, from the executor
    text = _formatted(err)
    _assert_shows_user_line(text, "read_config", "# USER-RAISE-3")
    assert "KeyError: 'missing'" in text
    again = pickle.loads(pickle.dumps(err))  # the job's error pickles, as its type
    assert isinstance(again, FileNotFoundError) and isinstance(again, TaskFailedError)
    assert str(again) == str(err) and again.attempts == 1


class TwoArgError(Exception):
    """A type whose ``__new__`` needs two arguments: it cannot be combined with
    TaskFailedError, so the job raises a plain TaskFailedError with it as the cause."""

    def __new__(cls, a, b):
        return super().__new__(cls, a, b)


def test_a_type_that_cannot_be_combined_is_the_cause_of_a_plain_task_failed_error(tmp_path):
    def bad(x):
        raise TwoArgError("a", "b")

    with _context(tmp_path, "threads") as c:
        with pytest.raises(TaskFailedError) as info:
            c.parallelize([1], 1).map(bad).collect()
    assert type(info.value) is TaskFailedError and isinstance(info.value.__cause__, TwoArgError)


def test_which_failures_are_retried():
    from strataflow.executor.work import ExecutorLost
    from strataflow.io.sources import InputError

    user, infra = ValueError("bad row"), infrastructure_fault(OSError(errno.ENOSPC, "full"))

    assert attempts_allowed(user, 4, 1) == 1 and attempts_allowed(user, 4, 3) == 3
    assert attempts_allowed(infra, 4, 1) == 4
    assert attempts_allowed(ExecutorLost("1", "killed"), 4, 1) == 4
    assert attempts_allowed(InputError("not utf-8"), 4, 3) == 1  # the engine knows it would fail again
    assert default_task_max_failures(None, 4) == 1  # processes, or a Ray instance of this machine
    assert default_task_max_failures("ray://head:10001", 4) == 4  # a cluster, as Spark's


def test_a_full_shuffle_device_is_still_retried(tmp_path, monkeypatch):
    """An infrastructure fault (ENOSPC writing a map output) is retried up to
    ``max_task_attempts`` although a user error would not be: the map function, whose
    task writes the output, runs once per attempt."""
    import faults_util as fu

    calls = Calls(tmp_path / "calls")

    def key_of(x):
        calls.add("map")
        return (x % 2, x)

    with _context(tmp_path, "threads", max_task_attempts=3) as c:
        assert c.config.task_max_failures == 1
        full = fu.device_full(monkeypatch, c.shuffle_dirs).on()
        with pytest.raises(OSError) as info:
            c.parallelize(range(4), 1).map(key_of).group_by_key(1).collect()
        full.off()
        assert info.value.__cause__.errno == errno.ENOSPC and info.value.attempts == 3
        assert _calls_of(calls, "map") == 3 * 4  # three attempts of the one map task, four records each
        assert sorted(c.parallelize(range(4), 1).map(key_of).group_by_key(1).map_values(sorted).collect()) == \
            [(0, [0, 2]), (1, [1, 3])]


def test_a_rows_error_keeps_its_type_through_pickle(tmp_path):
    from strataflow.dataset.actions import DatasetRowsError

    with _context(tmp_path, "threads") as c:
        with pytest.raises(DatasetRowsError) as info:
            c.parallelize([5], 1).map_partitions(lambda it: 5).count()  # a partition that is not rows
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is DatasetRowsError and str(again) == str(info.value) and again.dataset is None
