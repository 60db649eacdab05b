"""Every Python example of the README and of the pages under docs/ runs as written,
alone, from an empty directory, as a reader who copies it into a file would run it: each
makes the input it reads.

A block that cannot run here (it joins a Ray cluster, say) is marked by an HTML comment
right before it, ``<!-- not run: REASON -->``; the mark must give its reason, and such
blocks stay few across all the pages.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the pages whose examples run: the README and every page under docs/
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: the most blocks all the pages together may leave unrun (today: the one that joins a Ray cluster)
MOST_NOT_RUN = 1
TIMEOUT_S = 300

_BLOCK = re.compile(r"(?:<!--\s*not run:(?P<reason>[^>]*?)-->\s*\n)?```(?P<lang>\w*)\n(?P<code>.*?)```", re.S)


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _python_blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """``(line, code, reason not run or None)`` of each ```python block of ``page``."""
    text = page.read_text()
    blocks = []
    for m in _BLOCK.finditer(text):
        if m.group("lang") == "python":
            line = text.count("\n", 0, m.start("code"))
            reason = m.group("reason")
            blocks.append((line, m.group("code"), None if reason is None else reason.strip()))
    return blocks


BLOCKS = {_name(page): _python_blocks(page) for page in PAGES}
RUN = [(f"{page}:{line}", code) for page, blocks in BLOCKS.items() for line, code, reason in blocks if reason is None]


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_the_marks_give_reasons_and_come_before_python_blocks(page):
    text = page.read_text()
    marks = re.findall(r"<!--\s*not run\b(.*?)-->", text, flags=re.S)
    marked = [reason for _, _, reason in BLOCKS[_name(page)] if reason is not None]
    assert len(marks) == len(marked), f"{_name(page)}: a 'not run' mark must come right before a ```python block"
    assert all(reason for reason in marked), f"{_name(page)}: a 'not run' mark without a reason: {marks}"


def test_the_unrun_examples_stay_few():
    marked = [(page, line, reason) for page, blocks in BLOCKS.items() for line, _, reason in blocks if reason]
    assert len(marked) <= MOST_NOT_RUN, f"{len(marked)} examples are not run: {marked}"
    assert len([where for where, _ in RUN if where.startswith("README.md:")]) >= 3
    assert len(RUN) >= 10


@pytest.mark.parametrize("where, code", RUN, ids=[where for where, _ in RUN])
def test_the_example_runs_from_an_empty_directory(where, code, tmp_path):
    script = tmp_path.parent / f"{tmp_path.name}-example.py"  # outside the directory it runs in
    script.write_text(code)
    # this checkout's strataflow, whatever the cwd (an installed one may be another)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT_S,
                              cwd=tmp_path, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{where}: the example ran past {TIMEOUT_S} s\n{code}\n{exc.stderr or ''}")
    assert done.returncode == 0, f"{where}:\n{code}\n{done.stderr[-3000:]}"
