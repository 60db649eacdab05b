"""Every Python example of the README runs as written, alone, from an empty directory,
as a reader who copies it into a file would run it: each makes the input it reads.

A block that cannot run here (it joins a Ray cluster, say) is marked in the README by
an HTML comment right before it, ``<!-- not run: REASON -->``; the mark must give its
reason, and such blocks stay few.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
#: the most blocks the README may leave unrun (today: the one that joins a Ray cluster)
MOST_NOT_RUN = 1
TIMEOUT_S = 300

_BLOCK = re.compile(r"(?:<!--\s*not run:(?P<reason>[^>]*?)-->\s*\n)?```(?P<lang>\w*)\n(?P<code>.*?)```", re.S)


def _python_blocks() -> list[tuple[int, str, str | None]]:
    """``(line, code, reason not run or None)`` of each ```python block."""
    blocks = []
    for m in _BLOCK.finditer(README):
        if m.group("lang") == "python":
            line = README.count("\n", 0, m.start("code"))
            reason = m.group("reason")
            blocks.append((line, m.group("code"), None if reason is None else reason.strip()))
    return blocks


BLOCKS = _python_blocks()
RUN = [(line, code) for line, code, reason in BLOCKS if reason is None]


def test_the_marks_give_reasons_and_stay_few():
    marks = re.findall(r"<!--\s*not run\b(.*?)-->", README, flags=re.S)
    marked = [reason for _, _, reason in BLOCKS if reason is not None]
    assert len(marks) == len(marked), "a 'not run' mark must come right before a ```python block"
    assert all(reason for reason in marked), f"a 'not run' mark without a reason: {marks}"
    assert len(marked) <= MOST_NOT_RUN, f"{len(marked)} README examples are not run: {marked}"
    assert len(RUN) >= 4


@pytest.mark.parametrize("line, code", RUN, ids=[f"README.md:{line}" for line, _ in RUN])
def test_the_example_runs_from_an_empty_directory(line, code, tmp_path):
    script = tmp_path.parent / f"{tmp_path.name}-example.py"  # outside the directory it runs in
    script.write_text(code)
    # this checkout's strataflow, whatever the cwd (an installed one may be another)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT_S,
                              cwd=tmp_path, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"README.md:{line}: the example ran past {TIMEOUT_S} s\n{code}\n{exc.stderr or ''}")
    assert done.returncode == 0, f"README.md:{line}:\n{code}\n{done.stderr[-3000:]}"
