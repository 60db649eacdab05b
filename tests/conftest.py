"""Shared fixtures: one Context for the whole session, and a cheap leak check per test.

The session Context is small (256MB, two task threads) and keeps its working
directories under pytest's temporary directory, so a failed run leaves nothing in /tmp.
A test module opts in to ``no_leaks`` (``pytestmark = pytest.mark.usefixtures("no_leaks")``):
it fails a test if threads other than the session Context's task threads, more open
file descriptors, or more memory maps of region segment files survive the test. It is
opt-in so that modules with Contexts of their own (module-scoped fixtures) are not
flagged for the threads those keep.
"""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import tempfile
import threading
import time

import pytest

import strataflow
from strataflow.config.backends import BACKENDS
from waits import HANG_S

_FD_DIR = "/proc/self/fd"
_MAPS = "/proc/self/maps"


def _no_pyarrow_signal_pipe() -> None:
    """pyarrow's readers (``read_csv`` on the main thread) install a SIGINT handler with a
    self-pipe (two descriptors) that outlives the call, and opening it first did not keep
    it from coming back later in a worker's run: ``no_leaks`` then counted it against
    whichever test read a CSV next, which depends on how the run shares the files among
    its workers. The tests' process turns pyarrow's signal handling off; the Ctrl-C tests
    run their drivers in processes of their own, where it stays on."""
    import pyarrow

    pyarrow.enable_signal_handlers(False)


_no_pyarrow_signal_pipe()

# The test run's own shared store (each worker's, removed at its end), not the user's: the
# input cache keeps what the tests' readers decode (issue 53), and a test run must neither
# leave hundreds of MB in the user's /dev/shm store nor evict the user's cached inputs. Set
# before any Context, through the option's environment layer, so executors and the CLI
# subprocesses the tests start see it too; a test of the default store unsets it.
if "STRATAFLOW_STORE" not in os.environ:
    _TEST_STORE = tempfile.mkdtemp(prefix="sf-test-store-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    os.environ["STRATAFLOW_STORE"] = _TEST_STORE
    atexit.register(shutil.rmtree, _TEST_STORE, True)


def local_backends(**capabilities: object) -> list[str]:
    """The registered backends that need no cluster (their executors run on this machine
    and share its files), for the tests that run on every backend: a backend added to the
    registry is tested by them without editing them. ``capabilities`` keeps those whose
    handle class has each attribute at the value given, for a test that truly needs a
    subset, which the capability names: ``in_driver_process=True`` for a test whose
    functions share objects with the test or that patches the engine in this process,
    ``in_driver_process=False`` for one about executors in processes of their own."""
    names = [name for name, cls in BACKENDS.items() if cls.shares_local_files
             and all(getattr(cls, key) == want for key, want in capabilities.items())]
    assert names, f"no registered local backend has {capabilities}"
    return names


def _session_context(tmp_path_factory, backend: str):
    base = tmp_path_factory.mktemp(f"strataflow-{backend}")
    local, shuffle = base / "local", base / "shuffle"
    local.mkdir()
    shuffle.mkdir()
    c = strataflow.Context(memory="256MB", parallelism=2, progress=False, backend=backend,
                           local_dirs=[str(local)], shuffle_dirs=[str(shuffle)])
    # Start the task threads now (the pool creates them lazily), so that the leak check
    # of the first test does not see them as new.
    c.parallelize(range(8), 8).map_partitions(lambda v: (time.sleep(0.01), v)[1]).count()
    return c, local, shuffle


@pytest.fixture(scope="session", params=local_backends())
def ctx(request, tmp_path_factory):
    """The session's Context, once per local backend: every test that takes it runs on each."""
    c, local, shuffle = _session_context(tmp_path_factory, request.param)
    yield c
    c.stop()
    assert not os.listdir(local) and not os.listdir(shuffle), "stop() left working directories behind"


@pytest.fixture(scope="session", params=local_backends(in_driver_process=True))
def local_ctx(request, tmp_path_factory):
    """A Context of a backend in the driver's process, for the tests whose functions share
    state with the test itself (a lock, a list of calls): on executor processes they would
    see copies."""
    c, local, shuffle = _session_context(tmp_path_factory, request.param)
    yield c
    c.stop()
    assert not os.listdir(local) and not os.listdir(shuffle), "stop() left working directories behind"


def _open_fds() -> int | None:
    try:
        return len(os.listdir(_FD_DIR))
    except OSError:  # not Linux: no cheap way to count, check threads only
        return None


def _fd_links() -> dict[str, str]:
    """Descriptor number -> what it is, for naming the ones a test left open."""
    try:
        names = os.listdir(_FD_DIR)
    except OSError:
        return {}
    out = {}
    for name in names:
        try:
            out[name] = os.readlink(os.path.join(_FD_DIR, name))
        except OSError:
            pass
    return out


def _segment_maps() -> int | None:
    """Lines of /proc/self/maps that map a region segment file (``region-*.seg``)."""
    try:
        with open(_MAPS) as fh:
            return sum(1 for line in fh if "region-" in line and ".seg" in line)
    except OSError:  # not Linux
        return None


def _pool_threads() -> set:
    """A Context's long-lived threads: its executors' task threads (threads backend) and
    receivers (processes backend)."""
    return {t for t in threading.enumerate() if t.name.startswith(("strataflow-task", "strataflow-executor-"))}


@pytest.fixture
def no_leaks():
    """Fails a test that leaves threads, file descriptors or segment maps behind. Cheap: a
    thread list, a directory listing and /proc/self/maps; ``gc.collect`` runs only when a
    count went up (a dataset that maps a file holds a descriptor until it is collected; a
    view of a segment keeps its map until it is collected)."""
    threads_before = set(threading.enumerate())
    fds_before = _open_fds()
    links_before = _fd_links()
    maps_before = _segment_maps()
    yield

    def leaked_threads() -> list:
        allowed = threads_before | _pool_threads()
        return [t for t in threading.enumerate() if t not in allowed and t.is_alive()]

    # threads on their way out (an idle eviction writer ends half a second after its last
    # write) are waited for: the bound only guards a real leak, so a busy machine that is
    # slow to schedule them does not fail the test
    deadline = time.monotonic() + HANG_S
    leaked = leaked_threads()
    while leaked and time.monotonic() < deadline:
        leaked[0].join(timeout=max(0.0, deadline - time.monotonic()))
        leaked = leaked_threads()
    assert not leaked, f"test leaked threads: {[t.name for t in leaked]}"

    if fds_before is not None:
        fds_after = _open_fds()
        if fds_after > fds_before:
            gc.collect()
            fds_after = _open_fds()
        if fds_after > fds_before:
            new = {fd: link for fd, link in _fd_links().items() if links_before.get(fd) != link}
            raise AssertionError(f"test leaked {fds_after - fds_before} file descriptor(s); new or reused since "
                                 f"the test began: {sorted(new.values())}")

    if maps_before is not None:
        maps_after = _segment_maps()
        if maps_after > maps_before:
            gc.collect()
            maps_after = _segment_maps()
        assert maps_after <= maps_before, f"test leaked {maps_after - maps_before} segment map(s)"


@pytest.fixture
def dirs(tmp_path):
    """Two empty directories (``d0``, ``d1``) for a store that spreads its files."""
    out = []
    for name in ("d0", "d1"):
        (tmp_path / name).mkdir()
        out.append(str(tmp_path / name))
    return out


#: the disk costs tests declare (MB/s of [write, read] per form): a slow SSD's figures, so
#: that a round trip of a few MB costs tens of milliseconds against the tasks' declared compute
DECLARED_DISK = {"serialized": [100, 200], "mapped": [200, 800]}


@pytest.fixture
def declared_costs(monkeypatch):
    """AUTO and the memory split weigh declared seconds, not measured ones
    (``strataflow/storage/cost_clock.py``): tasks declare their compute with
    ``cost_clock.spend``, disk transfers cost bytes at ``DECLARED_DISK``. Set in the
    environment before the test's Context starts, so its executor processes see it too.
    A test whose assertions rest on AUTO's choices or the split's moves takes this fixture:
    its outcome is then the same on an idle machine and a busy one."""
    import json

    from strataflow.storage.cost_clock import ENV

    monkeypatch.setenv(ENV, json.dumps(DECLARED_DISK))
    return DECLARED_DISK


@pytest.fixture(autouse=True)
def _fresh_references():
    """Each test computes its workloads' reference results itself (they are kept per
    process, ``workloads/reference.py``): a test that counts or times the reference run
    does not depend on which tests ran before it."""
    from strataflow.workloads.reference import clear_references

    clear_references()
    yield


# -- workloads x APIs x levels, every pair once --------------------------------------------------------
def every_pair(workloads: list, apis: list, levels: list) -> list[tuple]:
    """``(workload, api, level)`` cases that meet every pair of the three (not every
    triple): each workload at each level once, its API alternating from level to level and
    from workload to workload, so that with two or more workloads each API meets every
    level too. A workload's result at a level does not depend on which API read the data
    (``test_levels.py`` runs both APIs at every level): the full product ran each twice."""
    return [(w, apis[(wi + li) % len(apis)], lv) for wi, w in enumerate(workloads) for li, lv in enumerate(levels)]


# -- policies, drawn from the registry ---------------------------------------------------------------
def registered_policies() -> list[str]:
    """The names of every registered cache policy (``strataflow.storage.policies.POLICIES``),
    sorted. Tests that run per policy take their list from here, never a list of their own:
    a policy added to the registry is then run by every such test without editing it."""
    from strataflow.storage.policies import POLICIES

    return sorted(POLICIES)


def _policy_subset(metafunc) -> list[str] | None:
    """The names a ``policy_subset`` marker keeps, checked: each must be registered (a
    renamed or removed policy fails collection instead of silently running nothing) and
    the marker must say why the test does not hold for every policy."""
    marker = metafunc.definition.get_closest_marker("policy_subset")
    if marker is None:
        return None
    names, reason = list(marker.args), marker.kwargs.get("reason", "")
    where = metafunc.definition.nodeid
    if not names or not str(reason).strip():
        raise pytest.UsageError(f"{where}: policy_subset needs the policies' names and reason='why not every policy'")
    unknown = [n for n in names if n not in registered_policies()]
    if unknown:
        raise pytest.UsageError(f"{where}: policy_subset names unregistered policies {unknown}; "
                                f"registered: {registered_policies()}")
    return names


#: test files that start Ray (``test_ray_backend.private_ray``): one scope under ``make test``
RAY_FILES = ("test_ray_backend.py", "test_store_ray.py", "test_store_ray_restart.py")


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: the suite also runs without xdist
def pytest_xdist_make_scheduler(config, log):
    """``make test``'s ``--dist loadfile``, with the files that start Ray as one scope: one
    worker runs them one after another. Their Rays are one at a time anyway
    (``private_ray``'s lock), and a worker that got one of them while the other ran another
    would wait for the lock with nothing to do. (xdist's own groups, ``--dist loadgroup``,
    do nothing on pytest 9.2: pytest-xdist issue 1386.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class RayOneScope(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return "ray" if os.path.basename(path) in RAY_FILES else path

    return RayOneScope(config, log)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "policy_subset(*names, reason): run a test that takes `policy` for these registered policies only "
        "(default: every registered policy); reason says what the test asserts that not every policy does")


def pytest_generate_tests(metafunc):
    """A test that takes a ``policy`` argument, and does not parametrize it itself, runs once
    per registered policy, or per the names of its ``policy_subset`` marker."""
    if "policy" not in metafunc.fixturenames:
        return
    subset = _policy_subset(metafunc)
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0]
        argnames = [a.strip() for a in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        if "policy" in argnames:
            if subset is not None:
                raise pytest.UsageError(f"{metafunc.definition.nodeid}: policy_subset on a test that parametrizes "
                                        "`policy` itself; take `policy` as an argument and let the marker choose")
            return
    metafunc.parametrize("policy", subset if subset is not None else registered_policies())


# -- the long tier ----------------------------------------------------------------------------------------------
#
# ``make test`` runs every behaviour once; ``make test-long`` (``-m long``) adds the full
# matrices, whose other cells run the same code over another level, policy, serializer or
# backend. A test is long by its marker, or by a rule below on its name and parameters.

#: the storage levels the workloads' result checks run at in ``make test`` (the spill path,
#: the mapped path and AUTO); the other levels are the long tier's
_WORKLOAD_LEVELS = {"MEMORY_AND_DISK", "DISK_MMAP", "AUTO"}
_WORKLOAD_CHECKS = {"test_result_check_passes_on_every_level", "test_als_result_check", "test_bayes_result_check"}
#: whole benchmark runs through the CLI (make test keeps the pressure bench end to end)
_LONG_TESTS = {"test_bench_levels_end_to_end", "test_bench_serde_and_devices_end_to_end",
               "test_the_catalog_and_its_blocks_outlive_the_cluster"}


def _is_long(item: pytest.Item) -> bool:
    name = item.originalname if isinstance(item, pytest.Function) else item.name
    params = getattr(item, "callspec", None)
    values = {str(v) for v in params.params.values()} if params is not None else set()
    if name in _LONG_TESTS:
        return True
    if name in _WORKLOAD_CHECKS:  # a level matrix: a few levels in make test
        return not values & _WORKLOAD_LEVELS
    if name == "test_every_level_policy_and_serializer_gives_the_results_of_none":
        # every level under Spark's policy and every policy at MEMORY_AND_DISK, with the
        # default serializer; the serializers across levels and policies are long
        p = params.params
        return p["serializer"] is not None or not (p["policy"] == "spark" or str(p["level"]) == "MEMORY_AND_DISK")
    if name == "test_each_operation_spills_and_gives_the_models_answer":  # one backend's spills in make test
        return "processes" in item.name
    return False


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        if _is_long(item):
            item.add_marker(pytest.mark.long)
