"""The documentation holds together: the README stays a page a newcomer reads in ten
minutes, every page under docs/ is reachable from it, every relative link (and its
#anchor) lands on something that exists, and every ``strataflow ...`` command line the
pages show is one the command line's own parser accepts.

The Python examples are run by tests/test_readme_examples.py.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from strataflow.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
README_MOST_LINES = 250

_FENCE = re.compile(r"```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _prose(text: str) -> str:
    """The text outside code (fenced blocks and inline code), where links are links."""
    return _INLINE_CODE.sub("", _FENCE.sub("", text))


def _anchors(page: Path) -> set[str]:
    """The #anchors GitHub makes of a page's headings (lower case, punctuation dropped,
    spaces to hyphens, a repeated one numbered)."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", _FENCE.sub("", page.read_text()), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _relative_links(page: Path) -> list[str]:
    return [m.group("target") for m in _LINK.finditer(_prose(page.read_text()))
            if not re.match(r"[a-z][a-z0-9+.-]*:", m.group("target"))]  # http:, https:, mailto: are not files


def _command_lines(lang: str) -> list[tuple[str, str]]:
    """``(page:line, command)`` of each line starting ``strataflow `` in the pages' ```lang blocks."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for m in _FENCE.finditer(text):
            if m.group("lang") != lang:
                continue
            first = text.count("\n", 0, m.start("body")) + 1
            for i, line in enumerate(m.group("body").splitlines()):
                if line.startswith("strataflow "):
                    found.append((f"{_name(page)}:{first + i}", line))
    return found


def test_the_readme_is_a_page_read_in_ten_minutes():
    lines = README.read_text().count("\n")
    assert lines <= README_MOST_LINES, f"README.md has {lines} lines; move the detail into docs/ (at most {README_MOST_LINES})"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(README.parent / target.split("#")[0]).resolve() for target in _relative_links(README)}
    missing = [_name(page) for page in DOCS if page.resolve() not in linked]
    assert not missing, f"pages the README does not link to: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_resolves(page):
    broken = []
    for target in _relative_links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {_name(dest)}")
    assert not broken, f"{_name(page)}: " + "; ".join(broken)


def test_the_link_checker_sees_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A title\n\n[ok](page.md#a-title) [gone](nowhere.md) `[code](not-a-link.md)`\n")
    assert _relative_links(page) == ["page.md#a-title", "nowhere.md"]
    assert _anchors(page) == {"a-title"}


SHELL = _command_lines("sh")


@pytest.mark.parametrize("where, command", SHELL, ids=[where for where, _ in SHELL])
def test_every_shell_command_parses(where, command):
    words = shlex.split(command, comments=True)[1:]
    try:
        build_parser().parse_args(words)
    except SystemExit as exc:
        assert exc.code == 0, f"{where}: strataflow's parser refuses `{command}`"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))


SYNOPSES = _command_lines("text")


@pytest.mark.parametrize("where, command", SYNOPSES, ids=[where for where, _ in SYNOPSES])
def test_every_option_a_synopsis_names_exists(where, command):
    """A synopsis (``[--size 2GB | --points N]``) is not a command line, but each option it
    names must be one its command has."""
    parser = build_parser()
    words = command.split("#")[0].split()
    sub = _subcommands(parser).get(words[1]) if len(words) > 1 else None
    known = set(parser._option_string_actions) | (set(sub._option_string_actions) if sub else set())
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", command.split("#")[0]))
    assert named <= known, f"{where}: options no command of `{' '.join(words[:2])}` has: {sorted(named - known)}"


def test_the_pages_show_command_lines():
    assert len(SHELL) >= 8 and len(SYNOPSES) >= 8


_ARCH = ROOT / "docs" / "architecture.md"
_CODE_PATH = re.compile(r"`((?:strataflow|tests)/[\w/<>.*-]+)`")


def _recipes() -> dict[str, str]:
    text = _ARCH.read_text()
    parts = re.split(r"^### (.+)$", text.split("## Recipes", 1)[1], flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_every_file_the_architecture_page_names_exists():
    """The package map and the recipes name real files and folders (a placeholder like
    ``<name>`` stands for the new file and only its folder must exist; a glob must match)."""
    missing = []
    for path in _CODE_PATH.findall(_ARCH.read_text()):
        target = ROOT / path
        if "<" in path:
            target = ROOT / path.split("<", 1)[0]
        if not (target.exists() or ("*" in path and list(ROOT.glob(path)))):
            missing.append(path)
    assert missing == []


def test_each_recipe_touches_at_most_three_files():
    recipes = _recipes()
    assert {"Add a policy", "Add a backend", "Add a tier kind", "Add a Dataset method", "Add an option"} <= set(recipes)
    for name, body in recipes.items():
        steps = re.findall(r"^\d+\. ", body, flags=re.M)
        assert 1 <= len(steps) <= 3, (name, len(steps))


def test_the_package_map_lists_every_floor():
    """Every floor of tests/test_house.py appears in the map, in the same order."""
    from test_house import FLOORS

    text = _ARCH.read_text().split("## The packages", 1)[1].split("## Recipes", 1)[0]
    rows = [line for line in text.splitlines() if re.match(r"^\| \d+ \|", line)]
    named = "\n".join(rows)
    order = [named.find(f"`{f}/`" if f not in ("lineage", "cli") else f"`{f}.py`") for f in FLOORS if f != "__init__"]
    assert -1 not in order, [f for f, i in zip([f for f in FLOORS if f != "__init__"], order) if i == -1]
    assert order == sorted(order)
