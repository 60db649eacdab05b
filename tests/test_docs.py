"""The documentation holds together: the README stays a page a newcomer reads in ten
minutes, every page under docs/ is reachable from it, every relative link (and its
#anchor) lands on something that exists, and every ``strataflow ...`` command line the
pages show is one the command line's own parser accepts; the output a page quotes under
an example is what the example prints (run here); docs/benchmarks.md's headline table holds
every figure the README's results quote.

Every Python example also runs, alone, in tests/test_readme_examples.py.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from strataflow.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
#: the lab notebooks (the history behind docs/benchmarks.md): linked from the docs, links checked
LAB_NOTES = sorted((ROOT / "docs" / "lab-notes").glob("*.md"))
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


@pytest.mark.parametrize("page", [*PAGES, *LAB_NOTES], ids=_name)
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


# -- Quoted output: what a page says an example prints is what it prints ----------------
#
# A ```text block right after the mark ``<!-- output -->`` quotes what the page's code
# block just above it prints. For each page with such a mark the suite runs the page's
# code blocks in order, in one empty directory, as a reader would: each ```python block as
# a script, each ``strataflow ...`` line of a ```sh block as that command; then compares
# each quoted block with what its block printed (stdout and stderr, as a reader's screen
# shows them), line by line, trailing blanks aside. Two additions to the mark, for what a plain comparison cannot hold:
#
# - ``<!-- output on a terminal -->``: the block runs on a pseudo-terminal 80 columns wide
#   and the quote is the screen it leaves (stdout and stderr, as a terminal draws them:
#   the live view draws only on a terminal);
# - ``<!-- output; numbers vary where /REGEX/ -->``: on the lines REGEX matches, in the
#   quote and in the real output alike, each number stands for "a number": for figures
#   that legitimately change from run to run (a timing, which executor ran which task).
#   The rest of such a line, and every other line, must be equal.

_OUTPUT_MARK = re.compile(r"<!--\s*output(?P<terminal> on a terminal)?(?:;\s*numbers vary where /(?P<vary>[^/]+)/)?\s*-->\s*\n$")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_ANSI = re.compile(r"\x1b\[(?P<args>[0-9;?]*)(?P<op>[A-Za-z])|(?P<ch>[\s\S])")


def _quoted_blocks(page: Path) -> list[dict]:
    """The page's fenced blocks in order: ``{"lang", "body", "line", "mark"}`` where mark
    is the output mark's match for a quoted output block, else None."""
    text = page.read_text()
    blocks = []
    for m in _FENCE.finditer(text):
        before = text[max(0, m.start() - 300):m.start()]
        mark = _OUTPUT_MARK.search(before)
        if mark is not None and m.group("lang") != "text":
            raise AssertionError(f"{_name(page)}: an output mark must come right before a ```text block")
        blocks.append({"lang": m.group("lang"), "body": m.group("body"), "mark": mark,
                       "line": text.count("\n", 0, m.start()) + 1})
    return blocks


def _screen(raw: str) -> str:
    """What a terminal shows after ``raw``: enough of one to replay rich's live view (text,
    CR/LF, cursor up and down, column moves, erase in line); colours are dropped."""
    lines: list[list[str]] = [[]]
    row = col = 0
    for m in _ANSI.finditer(raw):
        ch, op = m.group("ch"), m.group("op")
        if ch == "\n":
            row, col = row + 1, 0
        elif ch == "\r":
            col = 0
        elif ch is not None:
            if ch == "\x1b":
                continue
            line = lines[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = ch
            col += 1
        else:
            args = m.group("args")
            n = int(args) if args.isdigit() else 1
            if op == "A":
                row = max(0, row - n)
            elif op == "B":
                row += n
            elif op == "G":
                col = n - 1
            elif op == "K":  # erase: 0 to the line's end, 1 from its start, 2 all of it
                line = lines[row]
                if args in ("", "0"):
                    del line[col:]
                elif args == "1":
                    line[:col + 1] = [" "] * min(len(line), col + 1)
                else:
                    line.clear()
        while len(lines) <= row:
            lines.append([])
    return "\n".join("".join(line).rstrip() for line in lines).strip("\n") + "\n"


def _run_block(block: dict, cwd: Path, terminal: bool) -> str:
    env = {**os.environ, "COLUMNS": "80", "TERM": "xterm",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("NO_COLOR", None)
    if block["lang"] == "python":
        script = cwd.parent / f"{cwd.name}-block{block['line']}.py"  # outside the directory it runs in
        script.write_text(block["body"])
        commands = [[sys.executable, str(script)]]
    else:
        commands = [[sys.executable, "-c", "import sys; from strataflow.cli import main; sys.exit(main(sys.argv[1:]))",
                     *shlex.split(line, comments=True)[1:]]
                    for line in block["body"].splitlines() if line.startswith("strataflow ")]
    out = []
    for argv in commands:
        if terminal:
            out.append(_run_on_a_terminal(argv, cwd, env))
            continue
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                              cwd=cwd, env=env)
        assert done.returncode == 0, f"{argv}:\n{done.stdout[-3000:]}"
        out.append(done.stdout)
    return "".join(out)


def _run_on_a_terminal(argv: list[str], cwd: Path, env: dict) -> str:
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 80, 0, 0))
    proc = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, cwd=cwd, env=env,
                            close_fds=True)
    os.close(follower)
    raw = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process is gone
            break
        if not chunk:
            break
        raw += chunk
    os.close(leader)
    assert proc.wait(timeout=300) == 0, raw.decode(errors="replace")[-3000:]
    return _screen(raw.decode(errors="replace"))


def _differences(quoted: str, real: str, vary: str | None) -> list[str]:
    """The lines where ``real`` is not ``quoted`` (trailing blanks aside; on lines ``vary``
    matches, any number for any number)."""
    def norm(text: str) -> list[str]:
        lines = [line.rstrip() for line in text.strip("\n").splitlines()]
        return [_NUMBER.sub("<n>", line) if vary and re.search(vary, line) else line for line in lines]

    q, r = norm(quoted), norm(real)
    diffs = [f"line {i + 1}: quoted {a!r}, printed {b!r}" for i, (a, b) in enumerate(zip(q, r)) if a != b]
    if len(q) != len(r):
        diffs.append(f"quoted {len(q)} lines, printed {len(r)}")
    return diffs


def _pages_quoting_output() -> list[Path]:
    return [page for page in PAGES if any(b["mark"] for b in _quoted_blocks(page))]


QUOTING = _pages_quoting_output()


def test_the_pages_whose_examples_print_quote_their_output():
    assert {"docs/seeing-a-run.md", "docs/pyspark.md"} <= {_name(p) for p in QUOTING}


@pytest.mark.parametrize("page", QUOTING, ids=_name)
def test_the_output_a_page_quotes_is_what_its_example_prints(page, tmp_path):
    blocks = _quoted_blocks(page)
    last = max(i for i, b in enumerate(blocks) if b["mark"])
    problems, printed = [], None
    for i, block in enumerate(blocks[:last + 1]):
        if block["mark"]:
            assert printed is not None, f"{_name(page)}:{block['line']}: quoted output with no code block above it"
            for d in _differences(block["body"], printed, block["mark"].group("vary")):
                problems.append(f"{_name(page)}:{block['line']}: {d}")
            printed = None
        elif block["lang"] in ("python", "sh"):
            nxt = next((b for b in blocks[i + 1:] if b["lang"] in ("python", "sh", "text")), None)
            terminal = bool(nxt and nxt["mark"] and nxt["mark"].group("terminal"))
            printed = _run_block(block, tmp_path, terminal)
    assert not problems, "\n".join(problems)


def test_the_output_check_sees_a_wrong_figure_and_lets_marked_numbers_vary():
    assert _differences("hits 16, misses 8\n", "hits 16, misses 8\n", None) == []
    assert _differences("hits 16, misses 8\n", "hits 15, misses 8\n", None) != []
    assert _differences("a\n", "a\nb\n", None) != []
    assert _differences("│ 0 │ 24 │\nhits 16\n", "│ 0 │ 16 │\nhits 16\n", r"^│ \d ") == []
    assert _differences("│ 0 │ 24 │\nhits 16\n", "│ 0 │ 16 │\nhits 15\n", r"^│ \d ") != []
    assert _differences("│ 0 │ 24 │\n", "│ 0 │ 16 │ x\n", r"^│ \d ") != []


def test_the_terminal_replay_keeps_the_last_frame():
    raw = "frame 1\r\nline a\r\n\x1b[2K\x1b[1A\x1b[2K\x1b[1A\r\x1b[1mframe 2\x1b[0m\r\nline b\r\n"
    assert _screen(raw) == "frame 2\nline b\n"


def test_an_output_mark_is_read_with_its_options(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nprint(1)\n```\n\n<!-- output on a terminal; numbers vary where /^x / -->\n"
                    "```text\n1\n```\n\n```text\nnot quoted\n```\n")
    blocks = _quoted_blocks(page)
    assert [b["mark"] is not None for b in blocks] == [False, True, False]
    assert blocks[1]["mark"].group("terminal") and blocks[1]["mark"].group("vary") == "^x "


# -- The benchmarks page: a summary whose headline table holds every figure the README quotes

BENCHMARKS = ROOT / "docs" / "benchmarks.md"
#: a figure as the README's results quote it: a number or range with its unit (5x, 1.6-2.7x, 2.8 GB, 1.6 s)
_FIGURE = re.compile(r"(?<![\w.,-])\d[\d,.]*(?:-\d[\d,.]*)?(?:x| ?s| ?GB| ?MB(?:/s)?| ?KB|%)(?![\w/])")


def _results_paragraph() -> str:
    return README.read_text().split("## Results", 1)[1].split("\n## ", 1)[0]


def _headline_table() -> str:
    section = BENCHMARKS.read_text().split("## The headline table", 1)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


def test_the_figure_pattern_finds_the_readmes_kind_of_figures():
    text = "moves 2.8 GB, about 20x faster; 1,000-partition shuffle takes 1.6 s; 12-14x at 1.6-2.7x; 4M x 20"
    assert _FIGURE.findall(text) == ["2.8 GB", "20x", "1.6 s", "12-14x", "1.6-2.7x"]


def test_every_figure_the_readmes_results_quote_is_in_the_benchmarks_headline_table():
    quoted = _FIGURE.findall(_results_paragraph())
    table = _headline_table()
    assert len(quoted) >= 6 and table.count("\n") >= 8
    missing = [f for f in quoted if f not in table]
    assert not missing, f"README's results quote figures docs/benchmarks.md's headline table lacks: {missing}"


def test_the_headline_table_gives_each_claim_its_command_machine_peer_and_date():
    rows = [line.strip("|").split(" | ") for line in _headline_table().splitlines()[2:]]
    assert len(rows) >= 8
    for claim, figure, command, machine, peer, date in rows:
        assert figure and machine and peer, claim
        assert re.search(r"`(strataflow|python) ", command) or command.startswith("not in the repository"), claim
        assert re.search(r"20\d\d-\d\d-\d\d", date), claim


def test_the_lab_notes_keep_the_history_and_are_linked_from_the_benchmarks_page():
    linked = {(BENCHMARKS.parent / t.split("#")[0]).resolve() for t in _relative_links(BENCHMARKS)}
    assert LAB_NOTES and all(page.resolve() in linked for page in LAB_NOTES)
    assert BENCHMARKS.read_text().count("\n") <= 300, "docs/benchmarks.md is the summary; runs go to docs/lab-notes/"


_CONTRIBUTING = ROOT / "CONTRIBUTING.md"


def test_every_file_contributing_names_exists_and_each_recipe_has_three_steps_at_most():
    """CONTRIBUTING.md's recipes name real files (``<family>`` stands for one of a folder's
    files) and touch at most three places each."""
    text = _CONTRIBUTING.read_text()
    missing = [p for p in _CODE_PATH.findall(text)
               if not (ROOT / (p.split("<", 1)[0] if "<" in p else p)).exists()]
    assert missing == []
    recipes = dict(zip(*[iter(re.split(r"^### (.+)$", text.split("## Recipes", 1)[1], flags=re.M)[1:])] * 2))
    assert {"Add a DataFrame function", "Add a file reader option", "Add a SQL statement or clause"} <= set(recipes)
    for name, body in recipes.items():
        assert len(re.findall(r"^\d+\. ", body, flags=re.M)) <= 3, name
