"""Logging: warnings a job can repeat for every block are logged once per cause per
stage, and the count of those held back is logged when the next stage starts."""

from __future__ import annotations

import logging

from strataflow.common.logs import StageWarnings


def test_one_warning_per_cause_per_stage_and_the_rest_counted(caplog):
    w = StageWarnings(logging.getLogger("strataflow.test"))
    with caplog.at_level("WARNING", logger="strataflow"):
        assert w.warn("disk full", "block 1 not cached: disk full")
        assert not w.warn("disk full", "block 2 not cached: disk full")
        assert not w.warn("disk full", "block 3 not cached: disk full")
        assert w.warn("cannot pickle", "block 4 not cached: cannot pickle")
        w.new_stage()
        assert w.warn("disk full", "block 5 not cached: disk full")  # a new stage: logged again
        w.new_stage()
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0].startswith("block 1 not cached: disk full") and "counted, not logged" in messages[0]
    assert messages[1].startswith("block 4")
    assert messages[2] == "2 more of: disk full (in the previous stage)"
    assert messages[3].startswith("block 5") and len(messages) == 4  # nothing held back the second time
    assert all(r.name == "strataflow.test" for r in caplog.records)


def test_library_code_prints_nothing_a_failing_listener_is_logged(capsys, caplog):
    from strataflow.metrics import EventBus

    bus = EventBus()
    bus.subscribe(lambda e: 1 / 0)
    with caplog.at_level("ERROR", logger="strataflow"):
        bus.post("Something")
        bus.post("Again")  # removed after the first failure
    assert capsys.readouterr() == ("", "")
    assert len(caplog.records) == 1 and "ZeroDivisionError" in caplog.records[0].getMessage()


def test_the_strataflow_logger_has_a_null_handler():
    """A library adds only a NullHandler: an application that configures no logging gets
    no output from Python's last-resort handler, and one that does decides everything."""
    import strataflow  # noqa: F401  (the package's import installs it)

    handlers = logging.getLogger("strataflow").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
    assert all(isinstance(h, logging.NullHandler) for h in handlers)


def test_an_unconfigured_application_sees_no_strataflow_warning(tmp_path):
    """Without the NullHandler, Python's last resort prints a warning to stderr."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])  # this checkout's strataflow, from any cwd
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    code = "import logging, strataflow; logging.getLogger('strataflow.storage').warning('disk full')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
