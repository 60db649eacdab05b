"""The backend registry's recipe, proved with doubles: a new backend is its handle class
(capabilities as class attributes) plus one ``register_backend`` call, and then the
Context, the configuration, the CLI's choices and the engine's capability checks take it
without another edit. Also: no code outside ``strataflow/executor/`` tests a backend's
name, the backends do not import the registry, and ``import strataflow`` loads no Ray."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

import strataflow
from strataflow import Context
from strataflow.cli import build_parser
from strataflow.config import Config, ConfigError
from strataflow.config.backends import (BACKENDS, SHIPS_BY_FILE, backend_class, backend_for_master, local_backends,
                                        register_backend, unregister_backend)
from strataflow.executor.processes import ProcessExecutor
from strataflow.executor.threads import LocalExecutor

PACKAGE = pathlib.Path(strataflow.__file__).parent


class InlineExecutor(LocalExecutor):
    """A test double: the threads backend under another name. Its name is all it adds."""

    name = "inline"


class SubprocessExecutor(ProcessExecutor):
    """A test double out of the driver's process: the processes backend under another name."""

    name = "subprocess"


@pytest.fixture(params=[InlineExecutor, SubprocessExecutor], ids=lambda cls: cls.name)
def double(request):
    """The double registered for this test only."""
    register_backend(request.param)
    yield request.param
    unregister_backend(request.param.name)


def _backend_choices(parser, command: str) -> list[str]:
    """The ``--backend`` choices of a subcommand (``run``, ``bench``)."""
    sub = next(a for a in parser._actions if a.dest == "command")
    action = next(a for a in sub.choices[command]._actions if a.dest == "backend")
    return list(action.choices)


def test_a_registered_double_runs_a_shuffle_and_a_cache(double, tmp_path):
    with Context(backend=double.name, parallelism=2, memory="64MB", progress=False,
                 local_dirs=[str(tmp_path / "local")], shuffle_dirs=[str(tmp_path / "shuffle")]) as c:
        assert c.backend == double.name
        handles = c.fleet.live()
        assert handles and all(type(h) is double for h in handles)
        assert len(handles) == (1 if double.in_driver_process else 2)
        pairs = c.parallelize(range(1000), 8).map(lambda x: (x % 7, x))
        sums = pairs.reduce_by_key(lambda a, b: a + b, num_partitions=3).persist("MEMORY_ONLY")
        want = {k: sum(x for x in range(1000) if x % 7 == k) for k in range(7)}
        assert dict(sums.collect()) == want
        before = c.metrics()["memory_hits"]
        assert dict(sums.collect()) == want  # from the cache: no recomputation of the shuffle
        assert c.metrics()["memory_hits"] - before == 3
        b = c.broadcast(list(range(10)))
        assert c.parallelize(range(10), 2).map(lambda i: b.value[i]).sum() == 45
        b.unpersist()  # asks the executors only where they are other processes


def test_the_configuration_and_the_cli_take_a_registered_double(double, tmp_path):
    cfg = Config.build(backend=double.name, parallelism=2, local_dirs=[str(tmp_path)])
    assert cfg.backend == double.name
    assert cfg.executors == (1 if double.in_driver_process else 2)
    parser = build_parser()
    assert double.name in _backend_choices(parser, "run")
    assert double.name in _backend_choices(parser, "bench")  # a local backend: bench may run on it
    assert double.name in local_backends()
    unregister_backend(double.name)
    with pytest.raises(ConfigError, match=f"unknown backend '{double.name}'; choose one of threads, processes"):
        Config.build(backend=double.name, local_dirs=[str(tmp_path)])
    assert double.name not in _backend_choices(build_parser(), "run")


def test_a_backend_in_the_drivers_process_takes_one_executor_by_its_capability(tmp_path):
    register_backend(InlineExecutor)
    try:
        with pytest.raises(ConfigError, match="the inline backend runs one executor in the driver's process"):
            Config.build(backend="inline", executors=2, local_dirs=[str(tmp_path)])
        with pytest.raises(ConfigError, match="address: only for backend='ray'"):
            Config.build(backend="inline", address="auto", local_dirs=[str(tmp_path)])
    finally:
        unregister_backend("inline")


def test_register_refuses_a_taken_name_and_unknown_capabilities():
    class Clash(LocalExecutor):
        name = "threads"

    class Shipless(LocalExecutor):
        name = "shipless"
        ships_by = "pigeon"

    with pytest.raises(ValueError, match="'threads' is taken by LocalExecutor"):
        register_backend(Clash)
    with pytest.raises(ValueError, match="ships_by must be"):
        register_backend(Shipless)
    assert "shipless" not in BACKENDS and backend_class("threads") is LocalExecutor
    register_backend(LocalExecutor)  # the same class again: no error, nothing changes
    assert list(BACKENDS) == ["threads", "processes", "ray"]


def test_the_built_in_backends_declare_what_they_can_do():
    caps = {name: (cls.in_driver_process, cls.shares_local_files, cls.ships_by, cls.can_kill, cls.takes_address)
            for name, cls in BACKENDS.items()}
    assert caps == {"threads": (True, True, SHIPS_BY_FILE, False, False),
                    "processes": (False, True, SHIPS_BY_FILE, True, False),
                    "ray": (False, False, "object_store", True, True)}
    assert local_backends() == ["threads", "processes"]
    assert backend_for_master("ray") == ("ray", None)
    assert backend_for_master("ray://head:10001") == ("ray", "ray://head:10001")
    assert backend_for_master("local[2]") is None and backend_for_master("threads") is None


def _py_files(root: pathlib.Path):
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_code_outside_the_executors_tests_a_backends_name():
    """A comparison (``==``, ``!=``, ``in``) with a registered backend's name, outside
    ``strataflow/executor/``: it should ask the registry for a capability instead."""
    names = set(BACKENDS)
    found = []
    for path in _py_files(PACKAGE):
        if path.relative_to(PACKAGE).parts[0] == "executor":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Compare):
                for side in (node.left, *node.comparators):
                    if isinstance(side, ast.Constant) and side.value in names:
                        found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, f"backend names tested outside strataflow/executor/: {found}"


def test_the_backends_import_only_the_interface_not_the_registry():
    """The registry imports the backends; a backend importing it back (even inside a
    function) would make the import circle issue 40 removed. And no executor module is
    over 500 lines (``ray_backend.py`` was 829)."""
    executor = PACKAGE / "executor"
    backends = [executor / "threads.py", executor / "processes.py", *_py_files(executor / "ray")]
    for path in [*backends, executor / "backend.py"]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "strataflow.executor.backends", f"{path} imports the registry"
    for path in _py_files(executor):
        assert sum(1 for _ in path.open()) <= 500, f"{path} is over 500 lines"


def test_importing_strataflow_loads_no_ray():
    """The ray backend is registered with strataflow, but Ray (a second's import, and an
    optional extra) is loaded only when its first executor starts."""
    out = subprocess.run([sys.executable, "-c", "import sys, strataflow; import strataflow.cli; "
                                                "print('ray' in sys.modules, sorted(strataflow.config.BACKENDS))"],
                         capture_output=True, text=True, check=True, cwd=PACKAGE.parent)
    assert out.stdout.split() == ["False", "['processes',", "'ray',", "'threads']"]
