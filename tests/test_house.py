"""The house rules of issue 40, checked on the source: no import circle at run time, no
import from a lower floor to a higher one (except under ``TYPE_CHECKING``), no module over
500 lines, and a package root of at most 12 modules.

The floors are listed here, lowest first, and drawn in ``docs/architecture.md``. A module
may import its own floor and the ones below it. Imports inside functions count: they run
too, and a circle through one is a circle that only shows on the path that takes it. The
package root's ``__init__`` (the public names) sits just below the CLI: nothing inside the
engine imports it.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

import strataflow

ROOT = pathlib.Path(strataflow.__file__).parent
FLOORS = ["common", "metrics", "storage", "config", "simulate", "shuffle", "shipping", "lineage", "io",
          "store", "executor", "scheduler", "dataset", "report", "context", "workloads", "bench", "pyspark",
          "__init__", "cli"]
MAX_LINES = 500
MAX_ROOT_MODULES = 12


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _targets(name: str, node: ast.Import | ast.ImportFrom, is_package: bool) -> list[str]:
    """The strataflow modules an import statement runs (the deepest existing module of each
    name, and for ``from pkg import sub`` the submodule when ``sub`` is one)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = name.split(".")[: len(name.split(".")) - (node.level - (1 if is_package else 0))]
            base = ".".join(parts + ([node.module] if node.module else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    out = []
    for n in names:
        while n and n not in MODULES:
            n = n.rpartition(".")[0]
        if n.startswith("strataflow") and n != name:
            out.append(n)
    return out


def _graph() -> dict[str, set[str]]:
    """Run-time imports of every module: module level and inside functions, not the
    ``if TYPE_CHECKING:`` blocks (which never run)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}

    for name, path in MODULES.items():
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and _is_type_checking(child):
                    for c in child.orelse:
                        visit_one(c)
                else:
                    visit_one(child)

        def visit_one(child: ast.AST) -> None:
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                graph[name].update(_targets(name, child, is_package))
            visit(child)

        visit(ast.parse(path.read_text(), str(path)))
    return graph


def _floor(module: str) -> int:
    parts = module.split(".")
    key = "__init__" if len(parts) == 1 else parts[1]
    if key not in FLOORS:
        pytest.fail(f"{module}: its package {key!r} is on no floor; add it to FLOORS (and docs/architecture.md)")
    return FLOORS.index(key)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root), on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w), on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_circle_at_run_time():
    assert _circles(_graph()) == []


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_from_a_lower_floor_to_a_higher_one():
    up = sorted(f"{a} -> {b}" for a, targets in _graph().items() for b in targets if _floor(b) > _floor(a))
    assert up == []


def test_every_package_is_on_a_floor():
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in ROOT.glob("*.py")}
    assert packages | modules <= set(FLOORS)


def test_no_module_over_500_lines():
    long = {str(p.relative_to(ROOT)): n for p in MODULES.values() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_package_root_holds_at_most_12_modules():
    assert len(list(ROOT.glob("*.py"))) <= MAX_ROOT_MODULES


#: a module named in a docstring or comment of another project's (``PySpark's
#: ``pyspark/join.py``), or a user's file in an example message (``map at job.py:4``,
#: a traceback's ``File "job.py", line 4``)
_FOREIGN = re.compile(r"(?:PySpark's|Spark's|dask's|Polars'|DuckDB's|Ray's)\s+``?[\w/.-]+\.py|[\w/.-]+\.py:\d"
                      r"|[\w/.-]+\.py\\*\", line \d")


def test_docstrings_name_only_modules_that_exist():
    """A module a docstring or comment names (``keyed.py``, ``storage/memory/split.py``)
    is a file of the tree: a module renamed or merged away is not left cited."""
    repo = ROOT.parent
    names = {p.name for top in ("strataflow", "tests", "benchmarks") for p in (repo / top).rglob("*.py")}
    cited = re.compile(r"[\w/.-]*\w\.py\b")
    stale = []
    for path in MODULES.values():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            line = _FOREIGN.sub("", line)
            stale += [f"{path.relative_to(repo)}:{n}: {m}" for m in cited.findall(line)
                      if m.rsplit("/", 1)[-1] not in names]
    assert stale == []
