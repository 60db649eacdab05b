"""The README's promises that a reader acts on first: it starts with exactly the two
set-up commands, and its first example prints what the README says it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _blocks(text: str) -> list[tuple[str, str]]:
    return re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S)


def test_the_readme_starts_with_the_two_setup_commands():
    lang, body = _blocks(README)[0]
    commands = [line.split("#")[0].strip() for line in body.splitlines() if line.split("#")[0].strip()]
    assert commands == ["make run", "make test"]


def test_the_first_example_prints_what_the_readme_says(tmp_path):
    section = README.split("## A first example", 1)[1].split("\n## ", 1)[0]
    (lang, code), (out_lang, expected) = _blocks(section)[:2]
    assert (lang, out_lang) == ("python", "text")
    script = tmp_path / "example.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == expected


# Every Python block of the README and docs/ runs from an empty directory: tests/test_readme_examples.py;
# its length, its links and its command lines: tests/test_docs.py
