"""The command line and the docs say the same thing (issue 51, point 2), as a user meets
them in their first hour, through the installed ``strataflow`` command:

- ``store ls --root DIR`` works as ``store --root DIR ls`` does (the order docs/store.md
  writes);
- a mistyped root is reported, never made into an empty store: only ``start`` makes one;
- ``store rm`` and ``store balance`` say what they did;
- a bad option value names the option and the forms it takes (``--memory 12XB`` said
  ``invalid _size value``);
- ``memory://`` on a backend whose tasks run in other processes is refused at the read
  call, naming the backend (it failed later, in a task, with the path and no reason);
- every command line docs/store.md and docs/commands.md show parses.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import fsspec
import numpy as np
import pytest

from strataflow import Context
from strataflow.cli import build_parser
from strataflow.common.checks import ConfigError
from strataflow.store import Store
from strataflow.store.cli_text import size_text

STRATAFLOW = Path(sys.executable).parent / "strataflow"  # the venv's console script (pip install -e .)
DOCS = Path(__file__).resolve().parents[1] / "docs"


def sf(*argv: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """``strataflow ARGV`` as a user runs it: the installed command, its exit status and
    its output (STRATAFLOW_STORE unset unless ``env`` sets it)."""
    assert STRATAFLOW.exists(), f"{STRATAFLOW} is missing: install the package (pip install -e .)"
    environ = {k: v for k, v in os.environ.items() if k != "STRATAFLOW_STORE"}
    environ.update(env or {})
    return subprocess.run([str(STRATAFLOW), *argv], cwd=cwd, env=environ, capture_output=True, text=True,
                          timeout=120)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _save(root: str, **datasets) -> None:
    with Context(memory="64MB", parallelism=2, backend="threads", progress=False, store=root) as ctx:
        for name, value in datasets.items():
            ds = ctx.from_numpy(value, 3) if isinstance(value, np.ndarray) else ctx.parallelize(value, 1)
            ctx.store.save(ds, name)


@pytest.fixture
def store_root(tmp_path) -> str:
    root = str(tmp_path / "store")
    _save(root, points=np.arange(3 * 4096 * 4, dtype=np.float64).reshape(-1, 4), words=["a", "b"])
    return root


# -- --root before or after the subcommand ------------------------------------------------------------------
def test_root_goes_after_the_subcommand_as_well_as_before(store_root, tmp_path):
    after = sf("store", "ls", "--root", store_root)
    before = sf("store", "--root", store_root, "ls")
    assert after.returncode == before.returncode == 0, after.stderr + before.stderr
    assert [line.split("\t")[0] for line in after.stdout.splitlines()] == ["points", "words"]
    assert [line.split("\t")[:3] for line in after.stdout.splitlines()] == \
        [line.split("\t")[:3] for line in before.stdout.splitlines()]
    # given on both sides, the one after the subcommand wins (and the other is not made)
    typo = tmp_path / "not-this-one"
    both = sf("store", "--root", str(typo), "ls", "--root", store_root)
    assert both.returncode == 0 and "points" in both.stdout and not typo.exists()
    # every subcommand takes it after itself
    for argv in (["status"], ["balance"], ["stop"], ["rm", "words"]):
        done = sf("store", *argv, "--root", store_root)
        assert done.returncode == 0, (argv, done.stderr)


def test_the_root_defaults_to_strataflow_store_as_a_context_reads_it(store_root):
    done = sf("store", "ls", env={"STRATAFLOW_STORE": store_root})
    assert done.returncode == 0 and [line.split("\t")[0] for line in done.stdout.splitlines()] == ["points", "words"]


# -- only start makes a store ---------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["ls"], ["status"], ["stop"], ["balance"], ["rm", "points"]])
def test_a_mistyped_root_is_reported_and_never_made(tmp_path, argv):
    typo = tmp_path / "sotre" / "deeper"
    done = sf("store", *argv, "--root", "sotre/deeper", cwd=tmp_path)  # relative: the message says where it looked
    assert done.returncode == 2
    said = _one_line(done.stderr)
    assert f"strataflow store {argv[0]}: no store at {typo}: no such directory" in said
    assert "Check the path" in said and done.stdout == ""
    assert not (tmp_path / "sotre").exists()


def test_a_directory_that_holds_no_store_is_left_as_it_was(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("mine")
    done = sf("store", "--root", str(plain), "ls")
    assert done.returncode == 2
    assert f"no store at {plain}: the directory holds no store" in _one_line(done.stderr)
    assert sorted(p.name for p in plain.iterdir()) == ["notes.txt"]
    a_file = sf("store", "ls", "--root", str(plain / "notes.txt"))
    assert a_file.returncode == 2 and "it is a file, not a store's directory" in _one_line(a_file.stderr)


def test_start_makes_a_store_says_so_and_stop_stops_it(tmp_path):
    root = tmp_path / "new-store"
    started = sf("store", "start", "--root", str(root), "--interval", "60")
    try:
        assert started.returncode == 0, started.stderr
        assert re.fullmatch(rf"store daemon \d+ serving {re.escape(str(root))} \(a new, empty store\)\n", started.stdout)
        assert (root / "store.key").exists()
        again = sf("store", "start", "--root", str(root))
        assert again.returncode == 0 and again.stdout == f"a store daemon already runs for {root}\n"
    finally:
        stopped = sf("store", "stop", "--root", str(root))
    assert stopped.returncode == 0 and stopped.stdout == f"stopped the store daemon of {root}\n"
    listed = sf("store", "ls", "--root", str(root))
    assert listed.returncode == 0 and listed.stdout == ""  # a store now, with nothing in it


# -- rm and balance say what they did ----------------------------------------------------------------------------
def test_rm_says_what_it_removed_and_refuses_a_name_not_there(store_root):
    nbytes = Store(store_root).info("points").nbytes
    done = sf("store", "rm", "points", "--root", store_root)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"removed 'points' (3 blocks, {size_text(nbytes)})\n"
    assert nbytes >= 3 * 4096 * 4 * 8 and size_text(nbytes).endswith(" KB")  # the data and the files' headers
    gone = sf("store", "rm", "points", "--root", store_root)
    assert gone.returncode == 2 and gone.stdout == ""
    assert "has no dataset named 'points'" in _one_line(gone.stderr) and "saved ones: words" in _one_line(gone.stderr)
    # several names, one of them not there: none is removed
    mixed = sf("store", "rm", "words", "nope", "--root", store_root)
    assert mixed.returncode == 2 and "no dataset named 'nope'" in _one_line(mixed.stderr)
    assert "nothing removed" in _one_line(mixed.stderr)
    assert sf("store", "ls", "--root", store_root).stdout.split("\t")[0] == "words"


def test_balance_says_what_moved_then_that_nothing_had_to(tmp_path):
    fast, slow = str(tmp_path / "fast"), str(tmp_path / "slow")
    Store(fast, tiers=[{"name": "fast", "dir": fast}, {"name": "slow", "dir": slow}])
    _save(fast, cold=np.ones((3 * 2048, 4)))
    per_block = Store(fast).info("cold").nbytes // 3
    Store(fast, tiers=[{"name": "fast", "dir": fast, "capacity": per_block + per_block // 2},
                       {"name": "slow", "dir": slow}])  # the fast tier now holds one block and a half
    moved = sf("store", "balance", "--root", fast)
    assert moved.returncode == 0, moved.stderr
    m = re.fullmatch(r"balance: moved (\d) blocks \(([\d.]+) KB\) fast->slow; evicted 0 datasets\n", moved.stdout)
    assert m and int(m.group(1)) == 2, moved.stdout  # two blocks down: one stays within the capacity
    settled = sf("store", "balance", "--root", fast)
    assert settled.returncode == 0
    assert settled.stdout.startswith("balance: nothing to move: every tier is within its capacity")
    assert json.loads(sf("store", "balance", "--json", "--root", fast).stdout) == []


# -- every bad value names the option and the forms it takes --------------------------------------------------------
@pytest.mark.parametrize("argv, said", [
    (["run", "kmeans", "--memory", "12XB"],
     "argument --memory: '12XB' is not a size (use e.g. 512MB, 2GB or auto; units B, KB, MB, GB, TB"),
    (["run", "kmeans", "--memory", "1e3"], "argument --memory: '1e3' is not a size (use e.g. 512MB, 2GB or auto"),
    (["run", "kmeans", "--size", "lots"], "argument --size: 'lots' is not a size (use e.g. 300MB, 2GB or 1.5GiB"),
    (["gen", "kmeans", "--out", "d", "--size", "0"], "argument --size: '0' is zero bytes; give a size above zero"),
    (["run", "kmeans", "--pressure", "x"], "argument --pressure: expected a number > 0, got 'x'"),
    (["run", "kmeans", "--pressure", "inf"], "argument --pressure: must be > 0 and finite, got 'inf'"),
    (["run", "kmeans", "--partitions", "1.5"], "argument --partitions: expected an integer > 0, got '1.5'"),
    (["run", "kmeans", "--seed", "x"], "argument --seed: expected an integer such as 0 or 42, got 'x'"),
    (["run", "kmeans", "--executors", "0"], "argument --executors: must be > 0, got '0'"),
    (["run", "kmeans", "--tier", "bad"], "argument --tier: expected NAME:DIR"),
    (["run", "kmeans", "--mmap-memory", "12XB"], "strataflow: --mmap-memory: cannot read size '12XB'"),
    (["run", "kmeans", "--policy", "fifo"], "strataflow: --policy: unknown policy 'fifo'; choose one of"),
    (["run", "kmeans", "--level", "MEMORY_AND_DISKK"], "strataflow: --level: unknown level 'MEMORY_AND_DISKK'"),
    (["bench", "devices", "--out", "o", "--threads", "1,0"],
     "argument --threads: '0' in '1,0' is not an integer > 0; expected a comma-separated list such as 1,4"),
    (["bench", "auto", "--out", "o", "--pressures", "a"], "argument --pressures: 'a' in 'a' is not a number > 0"),
    (["bench", "auto", "--out", "o", "--levels", "MEMORY,DISK_MMAP"], "argument --levels: unknown level 'MEMORY'"),
    (["bench", "scale", "--out", "o", "--budget", "4XB"], "argument --budget: '4XB' is not a size"),
    (["bench", "levels", "--out", "o", "--repeat", "-1"], "argument --repeat: must be >= 0, got '-1'"),
    (["bench", "levels", "--out", "o", "--peer", "dask,spork"],
     "argument --peer: unknown peer(s) 'spork'; choose from pyspark, dask"),
    (["simulate", "--synthetic", "hotset", "--memory", "12XB"], "argument --memory: '12XB' is not a size"),
    (["probe", ".", "--size", "1XB"], "argument --size: '1XB' is not a size"),
    (["store", "start", "--interval", "0"], "argument --interval: must be > 0 and finite, got '0'"),
    (["store", "start", "--tiers", "[{dir: x}]"], "argument --tiers: not JSON (Expecting property name"),
    (["store", "start", "--tiers", '{"dir": "x"}'], "argument --tiers: expected a non-empty JSON list of tiers"),
])
def test_a_bad_value_names_the_option_and_the_forms_it_takes(tmp_path, argv, said):
    done = sf(*argv, cwd=tmp_path)
    assert done.returncode == 2
    err = _one_line(done.stderr)
    assert said in err
    assert "Traceback" not in err and not re.search(r"invalid \S+ value", err)  # no function name leaks
    assert sorted(os.listdir(tmp_path)) == []  # refused before anything was generated, written or made


# -- memory:// is one process's ----------------------------------------------------------------------------------------
@pytest.fixture
def mem():
    fs = fsspec.filesystem("memory")
    root = f"/first-hour-{os.urandom(4).hex()}"
    fs.pipe(f"{root}/in.txt", b"a\nb\nc\n")
    yield fs, root
    fs.rm(root, recursive=True)


def test_memory_urls_are_refused_at_the_read_call_on_the_processes_backend(mem, tmp_path):
    fs, root = mem
    url = f"memory://{root}/in.txt"
    with Context(memory="64MB", parallelism=2, backend="processes", progress=False) as ctx:
        readers = [("text_file", lambda: ctx.text_file(url)), ("csv_file", lambda: ctx.csv_file(url)),
                   ("parquet_file", lambda: ctx.parquet_file(url)), ("npy_file", lambda: ctx.npy_file(url)),
                   ("whole_text_files", lambda: ctx.whole_text_files(url)),
                   ("binary_files", lambda: ctx.binary_files(url)), ("pickle_file", lambda: ctx.pickle_file(url)),
                   ("text_file", lambda: ctx.text_file([str(tmp_path), url])),  # in a list
                   ("text_file", lambda: ctx.text_file(f"{tmp_path},{url}"))]  # in a comma list
        for reader, read in readers:
            with pytest.raises(ConfigError) as info:
                read()  # the call itself: no job has run
            said = str(info.value)
            assert said.startswith(f"{reader}: {url!r} is on fsspec's memory:// filesystem"), said
            assert "the processes backend runs tasks in executor processes" in said and "backend='threads'" in said
        # a file path still reads on that backend
        (tmp_path / "in.txt").write_text("a\nb\nc\n")
        assert ctx.text_file(str(tmp_path / "in.txt")).collect() == ["a", "b", "c"]


def test_memory_urls_still_read_on_the_threads_backend(mem):
    fs, root = mem
    with Context(memory="64MB", parallelism=2, backend="threads", progress=False) as ctx:
        assert ctx.text_file(f"memory://{root}/in.txt").collect() == ["a", "b", "c"]
        ctx.parallelize(["x", "y"], 2).save_as_text_file(f"memory://{root}/out")
        assert ctx.text_file(f"memory://{root}/out").collect() == ["x", "y"]


def test_memory_urls_are_refused_at_the_write_call_on_the_processes_backend(mem):
    """The parts would go into each executor's own memory filesystem and the driver's
    would hold only ``_SUCCESS``: data lost without a word, before ``io/reach.py``."""
    fs, root = mem
    with Context(memory="64MB", parallelism=2, backend="processes", progress=False) as ctx:
        ds = ctx.parallelize([1.0, 2.0], 2)
        for op, write in [("save_as_text_file", ds.save_as_text_file), ("save_as_parquet", ds.save_as_parquet),
                          ("save_as_npy", ds.save_as_npy), ("save_as_pickle_file", ds.save_as_pickle_file)]:
            with pytest.raises(ConfigError, match=rf"^{op}: .* memory:// filesystem.*writes there would be lost"):
                write(f"memory://{root}/{op}")
            assert not fs.exists(f"{root}/{op}")  # nothing made, not even the directory


# -- what the docs show parses ------------------------------------------------------------------------------------------
_FENCE = re.compile(r"```\w*\n(.*?)```", re.S)
_INLINE = re.compile(r"`(strataflow [^`]+)`")


def _doc_commands() -> list[tuple[str, str]]:
    """Every ``strataflow ...`` line of a code block, and every inline one, in
    docs/store.md and docs/commands.md."""
    found = []
    for page in (DOCS / "store.md", DOCS / "commands.md"):
        text = page.read_text()
        for block in _FENCE.findall(text):
            found += [(page.name, line.strip()) for line in block.splitlines() if line.startswith("strataflow ")]
        found += [(page.name, m) for m in _INLINE.findall(_FENCE.sub("", text))]
    return found


#: what a placeholder of the docs stands for, to parse
PLACEHOLDERS = {"WORKLOAD": "kmeans", "COMMAND": "run", "JSON": '[{"dir": "/tmp/tier"}]', "S": "0.5"}


def _variants(command: str) -> list[list[str]]:
    """The argument lists a command line or a synopsis of the docs stands for: ``[...]``
    given; a subcommand ``a|b|c`` each in turn (``store ls|status [--root DIR]``: one per
    subcommand); ``NAME...`` once; placeholders as :data:`PLACEHOLDERS`. Other synopses
    (``run WORKLOAD [--api records|batches]``) are left to tests/test_docs.py, which checks
    the options they name; a mention of a command in prose (`strataflow store`) and a
    quoted message (`strataflow run: error: ...`) are not command lines."""
    words = shlex.split(command.split(" #")[0].replace("[", " ").replace("]", " "))[1:]
    if words == ["--version"]:
        return [words]
    if len(words) < 2 or words[0].endswith(":"):
        return []
    words = [PLACEHOLDERS.get(w, w[:-3] if w.endswith("...") and len(w) > 3 else w) for w in words]
    if any("|" in w or w.endswith("...") for w in words[2:]) or "(" in command:
        return []
    return [[PLACEHOLDERS.get(w, w) for w in [words[0], alt, *words[2:]]] for alt in words[1].split("|")]


DOC_COMMANDS = _doc_commands()


def test_the_docs_show_store_commands_and_their_synopsis_expands():
    shown = [c for _, c in DOC_COMMANDS]
    assert "strataflow store ls --root /tmp/my-store" in shown
    synopsis = next(c for c in shown if c.startswith("strataflow store ls|status|balance|start|stop"))
    assert [v[:2] for v in _variants(synopsis)] == [["store", c] for c in ("ls", "status", "balance", "start", "stop")]
    assert _variants("strataflow store rm NAME... [--root DIR]") == [["store", "rm", "NAME", "--root", "DIR"]]
    assert _variants("strataflow run: error: argument --memory: '12XB'") == _variants("strataflow store") == []


@pytest.mark.parametrize("page, command", DOC_COMMANDS, ids=[f"{p}:{c}" for p, c in DOC_COMMANDS])
def test_every_command_the_docs_show_parses(page, command):
    for words in _variants(command):
        try:
            build_parser().parse_args(words)
        except SystemExit as exc:
            assert exc.code == 0, f"{page}: strataflow's parser refuses `strataflow {' '.join(words)}`"
