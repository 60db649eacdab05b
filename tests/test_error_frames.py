"""A failed task's error starts with the user's line (issue 51, point 1).

A user's script runs in a subprocess (a new user's ``job.py``: a ``with Context(...)``
block, a typo in a lambda) and what Python prints on stderr is read as the user reads
it: the first frame shown is the user's, no frame of strataflow is shown, one line says
how many were hidden and how to see them, the dataset is named by its operation and the
user's line (``'map at job.py:6'``), and the whole is at most 15 lines. With
``STRATAFLOW_TRACEBACK=full`` every frame is shown, and the hidden count is checked
against it: the frames of the full traceback less those of the short one.

In the test process: the error is still caught as ``TaskFailedError`` and as the task's
own type, with the task's exception as ``__cause__``; what the user's code called (the
standard library's ``json``) stays in the traceback; a traceback with no user frame (the
engine's own) is kept whole; a relative input path that does not exist is reported with
its absolute path.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import traceback
from types import TracebackType

import pytest

import strataflow
from strataflow.common.checks import ConfigError
from strataflow import Context, TaskFailedError
from strataflow.common import frames
from strataflow.io.paths import NoMatchError, PathNotFoundError

ENGINE_DIR = os.path.dirname(os.path.abspath(strataflow.__file__)) + os.sep
FILE_LINE = re.compile(r'^  File "([^"]+)", line (\d+), in (.+)$')
#: folding needs PEP 678's notes, which Python prints from 3.11 (before, tracebacks are whole)
needs_notes = pytest.mark.skipif(sys.version_info < (3, 11), reason="tracebacks are folded on Python 3.11+")
HINT = re.compile(r"^\[(\d+) strataflow frames? hidden; STRATAFLOW_TRACEBACK=full shows them\]$")

JOB = """\
import sys
from strataflow import Context

with Context(memory="64MB", parallelism=2, backend=sys.argv[1], progress=False) as ctx:
    events = ctx.parallelize([{"user": "a"}, {"user": "b"}, {"user": "a"}], 2)
    counts = events.map(lambda e: (e["usr"], 1)).reduce_by_key(lambda a, b: a + b)
    print(counts.collect())
"""
JOB_RAISES, JOB_CALLS = 6, 7  # the lines of the lambda and of the action

REDUCE = """\
import sys
from strataflow import Context

with Context(memory="64MB", parallelism=2, backend=sys.argv[1], progress=False) as ctx:
    pairs = ctx.parallelize([("a", 1), ("b", 2), ("a", 3)], 2)
    print(pairs.reduce_by_key(lambda a, b: a + b["x"]).collect())
"""

FOREACH = """\
import sys
from strataflow import Context


def show(x):
    print(x / 0)


with Context(memory="64MB", parallelism=2, backend=sys.argv[1], progress=False) as ctx:
    ctx.parallelize(range(4), 2).foreach(show)
"""

NO_WITH = """\
import sys
from strataflow import Context

ctx = Context(memory="64MB", parallelism=2, backend=sys.argv[1], progress=False)
events = ctx.parallelize([{"user": "a"}, {"user": "b"}], 2)
print(events.map(lambda e: (e["usr"], 1)).collect())
"""


def _run(tmp_path, code: str, backend: str, full: bool = False, name: str = "job.py") -> tuple[str, str]:
    """Runs ``code`` as the script ``name``; returns its path and its stderr (it must fail)."""
    script = tmp_path / name
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if k != frames.ENV}
    if full:
        env[frames.ENV] = "full"
    done = subprocess.run([sys.executable, str(script), backend], capture_output=True, text=True, timeout=240,
                          cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stderr[-3000:]
    return str(script), done.stderr


def _frames(text: str) -> list[tuple[str, int, str]]:
    return [(m[1], int(m[2]), m[3]) for m in map(FILE_LINE.match, text.splitlines()) if m]


def _hidden(text: str) -> int:
    found = [int(m[1]) for m in map(HINT.match, text.splitlines()) if m]
    assert len(found) == 1, text
    return found[0]


@needs_notes
@pytest.mark.parametrize("backend", ["processes", "threads"])
def test_a_typo_in_a_lambda_prints_the_users_lines_first_and_at_most_15_lines(tmp_path, backend):
    script, err = _run(tmp_path, JOB, backend)
    shown = _frames(err)
    assert shown == [(script, JOB_RAISES, "<lambda>"), (script, JOB_CALLS, "<module>")], err
    lines = err.rstrip("\n").splitlines()
    assert len(lines) <= 15, err
    assert lines[0] == "Traceback (most recent call last):" and lines[1].startswith(f'  File "{script}"')
    assert "KeyError: 'usr'" in lines
    assert ENGINE_DIR not in err  # no frame of the engine's, and no path of it in any message
    last = lines[-2]
    assert last.startswith("strataflow.TaskFailedError(KeyError): task for partition ")
    assert f"of dataset 'map at job.py:{JOB_RAISES}' failed 1 time(s)" in last
    assert "map#" not in err

    # the same job with every frame: the engine's are back, as many as the hint counted
    _, full = _run(tmp_path, JOB, backend, full=True)
    every = _frames(full)
    assert any(f.startswith(ENGINE_DIR + "executor" + os.sep) for f, _, _ in every), full
    assert any(f.startswith(ENGINE_DIR + "scheduler" + os.sep) for f, _, _ in every), full
    assert not HINT.search(full) and "frames hidden" not in full
    assert [f for f in every if f[0] == script] == shown
    assert _hidden(err) == len(every) - len(shown)


@needs_notes
@pytest.mark.parametrize("code, function, dataset", [
    (REDUCE, "<lambda>", "reduce_by_key at job.py:6"),
    (FOREACH, "show", "parallelize at job.py:10"),
])
def test_an_error_in_a_reduce_function_or_a_foreach_starts_with_the_users_line(tmp_path, code, function, dataset):
    script, err = _run(tmp_path, code, "processes")
    shown = _frames(err)
    assert shown[0][0] == script and shown[0][2] == function, err
    assert all(f == script for f, _, _ in shown), err
    assert ENGINE_DIR not in err and _hidden(err) > 0
    assert f"of dataset '{dataset}' failed" in err
    assert len(err.rstrip("\n").splitlines()) <= 15, err


PYSPARK_STYLE = """\
import sys
from strataflow.pyspark import SparkConf, SparkContext

sc = SparkContext("local[2]", conf=SparkConf().set("strataflow.backend", sys.argv[1]).set("strataflow.progress", "false"))
events = sc.parallelize([{"user": "a"}, {"user": "b"}], 2)
print(events.map(lambda e: (e["usr"], 1)).reduceByKey(lambda a, b: a + b).collect())
"""


@needs_notes
@pytest.mark.parametrize("code, dataset", [(NO_WITH, "map at job.py:6"), (PYSPARK_STYLE, "map at job.py:6")],
                         ids=["Context", "SparkContext"])
@pytest.mark.parametrize("backend", ["processes", "threads"])
def test_without_a_with_block_an_uncaught_error_is_as_short(tmp_path, code, dataset, backend):
    """No ``with`` block sees the error leave the engine's frames: the excepthook the first
    Context chains (``context/excepthook.py``) folds the action's frames, so the script
    prints its own two lines as with a ``with`` block."""
    script, err = _run(tmp_path, code, backend)
    shown = _frames(err)
    assert shown == [(script, 6, "<lambda>"), (script, 6, "<module>")], err
    assert ENGINE_DIR not in err and _hidden(err) > 0 and f"of dataset '{dataset}'" in err
    assert len(err.rstrip("\n").splitlines()) <= 15, err


def test_the_excepthook_hands_every_error_to_the_hook_before_it_and_folds_only_strataflows(monkeypatch):
    from strataflow.context import excepthook

    seen = []
    monkeypatch.setattr(sys, "excepthook", lambda t, v, tb: seen.append((t, v, _files(tb))))
    excepthook.install()
    excepthook.install()  # once: a second Context does not chain it again
    assert sys.excepthook.strataflow_folds and sys.excepthook.__closure__ is not None

    def engine_raises(exc):  # a frame of strataflow's between the user's and the raise
        ns: dict = {}
        exec(compile("def f(e):\n    raise e\n", ENGINE_DIR + "dataset/actions.py", "exec"), ns)
        try:
            ns["f"](exc)
        except BaseException as caught:
            return caught

    for exc in (ValueError("the user's own"), ConfigError("strataflow's own")):
        caught = engine_raises(exc)
        sys.excepthook(type(caught), caught, caught.__traceback__)
    (t1, v1, files1), (t2, v2, files2) = seen
    assert t1 is ValueError and any(f.startswith(ENGINE_DIR) for f in files1)  # not ours: untouched
    assert t2 is ConfigError and not any(f.startswith(ENGINE_DIR) for f in files2)


# -- in this process -----------------------------------------------------------------------------
def _in(tmp_path, **kw) -> Context:
    return Context(memory="64MB", parallelism=2, backend="threads", progress=False,
                   local_dirs=[str(tmp_path / "cache")], shuffle_dirs=[str(tmp_path / "shuffle")], **kw)


def _files(tb: TracebackType | None) -> list[str]:
    return [f.filename for f in traceback.extract_tb(tb)]


@needs_notes
def test_the_error_is_caught_as_before_and_leaves_the_with_block_folded(tmp_path, monkeypatch):
    monkeypatch.delenv(frames.ENV, raising=False)
    with pytest.raises(TaskFailedError) as info:
        with _in(tmp_path) as ctx:
            ctx.parallelize([{"user": "a"}, {"user": "b"}], 2).map(lambda e: e["usr"]).collect()
    err = info.value
    assert isinstance(err, KeyError) and type(err).__name__ == "TaskFailedError(KeyError)"
    assert isinstance(err.__cause__, KeyError) and err.__cause__.args == ("usr",)
    assert err.partition in (0, 1) and err.attempts == 1 and err.dataset is not None
    assert _files(err.__traceback__) == [__file__] * len(_files(err.__traceback__))  # this test's lines only
    assert _files(err.__cause__.__traceback__) == [__file__]  # the lambda
    text = "".join(traceback.format_exception(err))
    assert ENGINE_DIR not in text and "KeyError: 'usr'" in text
    assert HINT.match(err.__notes__[-1]), err.__notes__
    [note] = err.__cause__.__notes__  # the task's own note, as before
    assert "raised by the task" in note and "map at test_error_frames.py:" in note


def test_folding_is_on_from_python_3_11_unless_the_variable_says_full(monkeypatch):
    monkeypatch.delenv(frames.ENV, raising=False)
    assert frames.folding() == (sys.version_info >= (3, 11))
    monkeypatch.setenv(frames.ENV, "full")
    assert not frames.folding()
    monkeypatch.setenv(frames.ENV, "short")
    assert frames.folding() == (sys.version_info >= (3, 11))


def test_with_the_variable_set_every_frame_stays(tmp_path, monkeypatch):
    monkeypatch.setenv(frames.ENV, "full")
    with pytest.raises(KeyError) as info:
        with _in(tmp_path) as ctx:
            ctx.parallelize([{"user": "a"}], 1).map(lambda e: e["usr"]).collect()
    err = info.value
    assert any(f.startswith(ENGINE_DIR) for f in _files(err.__traceback__))
    cause = _files(err.__cause__.__traceback__)
    assert cause[-1] == __file__ and any(f.startswith(ENGINE_DIR) for f in cause)
    assert not any(HINT.match(n) for n in getattr(err, "__notes__", []))


def _parse(text):
    return json.loads(text)


@needs_notes
def test_what_the_users_code_called_stays(tmp_path, monkeypatch):
    """The standard library's frames under the user's (``json``'s decoder) are kept."""
    monkeypatch.delenv(frames.ENV, raising=False)
    with _in(tmp_path) as ctx:
        with pytest.raises(json.JSONDecodeError) as info:
            ctx.parallelize(["[1]", "{"], 2).map(_parse).collect()
    files = _files(info.value.__cause__.__traceback__)
    assert files[0] == __file__ and len(files) > 1
    assert all(f.startswith(os.path.dirname(json.__file__)) for f in files[1:]), files


# -- the folding itself, on tracebacks made here ----------------------------------------------------
def _chain(kinds: list[str]) -> TracebackType:
    """A traceback through one function per entry of ``kinds`` (outermost first), the last
    raising: each compiled as the engine's, the plumbing's (the standard library's
    directory) or the user's (this directory) file."""
    where = {frames.ENGINE: (os.path.join(ENGINE_DIR, "fake_engine.py"), "strataflow.fake_engine"),
             frames.PLUMBING: (os.path.join(os.path.dirname(os.__file__), "fake_plumbing.py"), "fake_plumbing"),
             frames.USER: (os.path.join(os.path.dirname(__file__), "fake_user.py"), "fake_user")}
    inner = None
    for depth, k in reversed(list(enumerate(kinds))):
        filename, module = where[k]
        body = "    raise ValueError('bottom')\n" if inner is None else "    return inner()\n"
        space = {"__name__": module, "inner": inner}
        exec(compile(f"def f{depth}():\n{body}", filename, "exec"), space)  # noqa: S102 - a made frame
        inner = space[f"f{depth}"]
    try:
        inner()
    except ValueError as exc:
        return exc.__traceback__.tb_next  # without this function's own frame
    raise AssertionError("did not raise")


E, P, U = frames.ENGINE, frames.PLUMBING, frames.USER


@pytest.mark.parametrize("kinds, engine_raised, kept", [
    ([P, E, E, U], False, [3]),  # a thread pool, the executor, then the user's function
    ([E, E, U, E, U], False, [2, 4]),  # the engine between two of the user's frames (foreach)
    ([E, U, P, P], False, [1, 2, 3]),  # what the user's code called stays
    ([E, U, E, E], False, [1, 2, 3]),  # the engine's code the user's called, too: where the call failed
    ([E, U, E, U, P, E], False, [1, 3, 4, 5]),
    ([E, E, E], False, [0, 1, 2]),  # no frame of the user's: the engine's own error, whole
    ([U, U], False, [0, 1]),  # nothing to fold
    ([U, E, E], True, [0]),  # the driver: the user's call, then the engine that raised the job's error
    ([P, E, U, E, P], True, [2, 4]),
    ([E, E, E], True, []),  # the scheduler's frames, before the error reaches the user's
])
def test_fold_traceback_keeps_the_users_frames(kinds, engine_raised, kept):
    tb = _chain(kinds)
    assert [frames.kind(t) for t in frames._entries(tb)] == kinds
    folded, hidden = frames.fold_traceback(tb, engine_raised=engine_raised)
    assert [t.tb_frame.f_code.co_name for t in frames._entries(folded)] == [f"f{i}" for i in kept]
    assert hidden == len(kinds) - len(kept)
    assert (folded is tb) == (hidden == 0)
    assert [t.tb_frame.f_code.co_name for t in frames._entries(tb)] == [f"f{i}" for i in range(len(kinds))]  # untouched


def test_the_bundled_jobs_are_programs():
    from strataflow.workloads import kmeans_job

    tb = _chain([E])
    space = {"__name__": kmeans_job.__name__}
    exec(compile("def f():\n    raise ValueError\n", kmeans_job.__file__, "exec"), space)  # noqa: S102
    try:
        space["f"]()
    except ValueError as exc:
        assert frames.kind(exc.__traceback__.tb_next) == frames.USER
    assert frames.kind(tb) == frames.ENGINE


# -- input paths ------------------------------------------------------------------------------------
def test_a_relative_input_path_that_does_not_exist_is_reported_with_its_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with _in(tmp_path) as ctx:
        with pytest.raises(PathNotFoundError) as missing:
            ctx.text_file(os.path.join("nope", "in.txt"))
        with pytest.raises(NoMatchError) as empty:
            ctx.text_file(os.path.join("nope", "*.txt"))
        absolute = str(tmp_path / "nope" / "in.txt")
        with pytest.raises(PathNotFoundError) as given:
            ctx.text_file(absolute)
    assert isinstance(missing.value, FileNotFoundError)
    assert str(missing.value) == (f"text_file: path {os.path.join('nope', 'in.txt')!r} does not exist "
                                  f"(absolute path: {absolute})")
    assert str(empty.value).endswith(f"(absolute path: {tmp_path / 'nope' / '*.txt'})")
    assert "absolute path" not in str(given.value)  # said once is enough
