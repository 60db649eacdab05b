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


def test_every_example_runs_as_written(tmp_path):
    """Each Python block of the README runs in a directory holding the files it names
    (a ``corpus/`` of text, ``points.npy``, ``cache/`` and ``shuffle/``), except the one
    that needs a Ray cluster to join."""
    import numpy as np

    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("to be or not to be\nthat is the question\n" * 50)
    (tmp_path / "cache").mkdir()
    (tmp_path / "shuffle").mkdir()
    np.save(tmp_path / "points.npy", np.random.default_rng(0).random((4000, 5)))
    blocks = [code for lang, code in _blocks(README) if lang == "python"]
    cluster = [code for code in blocks if 'backend="ray"' in code and "address=" in code]
    assert len(blocks) >= 4 and len(cluster) == 1
    for i, code in enumerate(b for b in blocks if b not in cluster):
        script = tmp_path / f"example{i}.py"
        script.write_text(code)
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path)
        assert done.returncode == 0, f"README example {i}:\n{code}\n{done.stderr[-2000:]}"
