"""The recipes "add a cache policy" and "add a Dataset method", done for real in a test.

Add a policy: one module with a :class:`~strataflow.storage.policies.Policy` subclass, plus
its line in ``POLICIES`` (``strataflow/storage/policies/__init__.py``). ``FifoPolicy`` below
is such a module, written as a contributor would write it (first in, first out, over puts;
the contract's rules: all or nothing, never a block of the dataset being added); the
``fifo`` fixture adds its registry line for one test only. Nothing else is edited, and the
tests show that the configuration, the command line, the simulator and a job all take it,
and that the job evicts in its order, not in Spark's LRU order.

Add a Dataset method: a method on the operation group it belongs to (a mixin of
``strataflow/dataset/``); ``Dataset`` inherits it, nothing is registered. The PySpark layer
(``strataflow/pyspark/rdd.py``) forwards each method explicitly: ``rdd.dataset`` reaches the
new method at once; an ``RDD`` method of the same name is a second, optional, edit.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any, Mapping

import numpy as np
import pytest

from strataflow import Context
from strataflow.cli import main as cli_main
from strataflow.common.batch import num_rows
from strataflow.config import Config
from strataflow.dataset import Dataset
from strataflow.dataset.actions import ActionOps
from strataflow.simulate import simulate, synthetic
from strataflow.storage.level import StorageLevel
from strataflow.storage.policies import POLICIES, Policy, Promotion, make_policy
from test_policies import assert_policy_is_complete

pytestmark = pytest.mark.usefixtures("no_leaks")


# -- the policy module a contributor writes -----------------------------------------------------
class FifoPolicy(Policy):
    """``fifo``: evicts the block that entered memory first, whatever was read since.

    A block read from disk is served from disk (no promotion), so nothing bounces; victims
    follow put order, all or nothing, and never a block of the dataset being added
    (Spark's rule, which keeps a dataset from evicting itself block by block)."""

    name = "fifo"

    def __init__(self) -> None:
        self._order: OrderedDict = OrderedDict()

    def record_access(self, block_id: Any, where: str) -> None:
        if where == "put":  # a hit does not move a block: that is the difference from LRU
            self._order.pop(block_id, None)
            self._order[block_id] = None

    def record_remove(self, block_id: Any) -> None:
        self._order.pop(block_id, None)

    def forget_dataset(self, dataset_id: Any) -> None:
        for bid in [b for b in self._order if getattr(b, "dataset_id", None) == dataset_id]:
            del self._order[bid]

    def sizes(self) -> dict[str, int]:
        return {"policy_fifo": len(self._order)}

    def promote(self, block_id: Any, size: int) -> Promotion:
        return Promotion.NO

    def select_victims(self, space: int, for_block: Any, entries: Mapping[Any, int]) -> list | None:
        adding = getattr(for_block, "dataset_id", None)
        chosen, freed = [], 0
        for bid in self._order:
            if freed >= space:
                break
            if bid in entries and (adding is None or getattr(bid, "dataset_id", None) != adding):
                chosen.append(bid)
                freed += entries[bid]
        return chosen if freed >= space else None


@pytest.fixture
def fifo(monkeypatch) -> str:
    """The policy's one registry line, for this test only (the dict is shared by reference:
    the config, the CLI, the simulator and the bench all read this one)."""
    assert "fifo" not in POLICIES, "the double's name is taken by a real policy"
    monkeypatch.setitem(POLICIES, "fifo", FifoPolicy)
    return "fifo"


def _dirs(tmp_path) -> dict:
    local, shuffle = tmp_path / "local", tmp_path / "shuffle"
    local.mkdir(exist_ok=True)
    shuffle.mkdir(exist_ok=True)
    return {"local_dirs": [str(local)], "shuffle_dirs": [str(shuffle)]}


# -- the registry line is all it takes -------------------------------------------------------------
def test_the_config_accepts_the_new_policy(tmp_path, fifo):
    cfg = Config.build(memory="64MB", parallelism=1, local_dirs=str(tmp_path), policy="FIFO")
    assert cfg.policy == "fifo"
    assert isinstance(make_policy("fifo"), FifoPolicy)
    assert make_policy("fifo") is not make_policy("fifo")  # a fresh state per context
    assert_policy_is_complete("fifo", tmp_path)  # what every registered policy is checked for


def test_the_command_line_takes_the_new_policy(tmp_path, fifo, capsys):
    """``run --policy`` has no fixed list: the name is checked against the registry, so an
    unknown name is refused with the registered ones, the new one among them, and the new
    one runs a workload."""
    assert cli_main(["run", "kmeans", "--policy", "lfu", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "'lfu'" in err and "fifo" in err and all(name in err for name in POLICIES)
    data = tmp_path / "km"
    assert cli_main(["gen", "kmeans", "--out", str(data), "--points", "4000", "--set", "dims=4",
                     "--format", "npy"]) == 0
    out = tmp_path / "run.json"
    assert cli_main(["run", "kmeans", "--data", str(data), "--iterations", "2", "--memory", "64MB",
                     "--policy", "fifo", "--backend", "threads", "--parallelism", "1", "--json", str(out),
                     "--quiet"]) == 0
    result = json.loads(out.read_text())
    assert result["config"]["policy"] == "fifo" and result["result_check"] == "ok"


def test_the_simulator_replays_a_trace_with_the_new_policy(tmp_path, fifo):
    trace = synthetic("cyclic", 2.0)
    every = simulate(trace)["policies"]  # default: every registered policy
    assert "fifo" in every and set(every) == set(POLICIES) | {"opt", "unbounded"}
    only = simulate(trace, ["fifo"])["policies"]
    assert set(only) == {"fifo", "opt", "unbounded"}
    assert 0 < only["fifo"]["byte_hit_ratio"] <= only["opt"]["byte_hit_ratio"] + 1e-9
    assert only["fifo"] == every["fifo"]
    out = tmp_path / "sim.json"
    assert cli_main(["simulate", "--synthetic", "cyclic", "--policies", "fifo", "--json", str(out)]) == 0
    assert set(json.loads(out.read_text())["policies"]) == {"fifo", "opt", "unbounded"}


@pytest.mark.parametrize("policy_name, victims", [("fifo", [0, 1]), ("spark", [1, 2])])
def test_a_job_under_pressure_evicts_in_the_new_policys_order(tmp_path, request, policy_name, victims):
    """Three blocks of A fill memory; a read of A's first partition makes it the most
    recently used; two blocks of B then each evict one block of A. FIFO drops A0 then A1
    (put order); the control, Spark's LRU, drops A1 then A2 (A0 was just read)."""
    if policy_name == "fifo":
        request.getfixturevalue("fifo")
    with Context(backend="threads", parallelism=1, memory="2MB", policy=policy_name, progress=False,
                 **_dirs(tmp_path)) as c:
        assert type(c.block_manager.policy).name == policy_name
        rows = int(c.memory.total / 3.5 - 112) // 8  # three blocks fit, a fourth evicts one
        dropped: list = []
        c.events.subscribe(lambda e: dropped.append(e) if e["event"] == "BlockDropped" else None)
        a = c.from_numpy(np.arange(3 * rows, dtype=np.float64), 3).map_partitions(lambda x: x * 2.0)
        a = a.persist(StorageLevel.MEMORY_ONLY)
        assert a.count() == 3 * rows and c.storage_status()[0].memory_partitions == 3 and not dropped
        assert a.first() == 0.0  # a memory hit on A0 only
        assert c.metrics()["memory_hits"] == 1
        b = c.from_numpy(np.arange(2 * rows, dtype=np.float64), 2).map_partitions(lambda x: x + 1.0)
        b = b.persist(StorageLevel.MEMORY_ONLY)
        assert b.count() == 2 * rows
        assert [(e["dataset_id"], int(e["block"].rsplit("_", 1)[1])) for e in dropped] == [(a.id, s) for s in victims]
        assert all(e["to"] == "discarded" for e in dropped)
        np.testing.assert_array_equal(np.concatenate(a.collect_partitions()), np.arange(3 * rows) * 2.0)


# -- the Dataset-method recipe ---------------------------------------------------------------------
def _count_by_partition(self) -> list[int]:
    """The number of records of each partition, in partition order, counted on the executors."""
    return self._run(num_rows, description=f"count_by_partition {self.label}")


@pytest.fixture
def count_by_partition(monkeypatch):
    """The method, added to its operation group (actions) for this test only."""
    assert not hasattr(Dataset, "count_by_partition"), "the double's name is taken by a real method"
    monkeypatch.setattr(ActionOps, "count_by_partition", _count_by_partition, raising=False)


def test_a_method_on_an_operation_group_is_a_dataset_method(local_ctx, count_by_partition):
    ds = local_ctx.parallelize(range(10), 3)
    assert ds.count_by_partition() == [len(p) for p in ds.collect_partitions()] == [3, 3, 4]
    batches = local_ctx.from_numpy(np.zeros((10, 2)), 4).map_partitions(lambda a: a + 1)
    assert batches.count_by_partition() == [num_rows(p) for p in batches.collect_partitions()]
    assert sum(batches.count_by_partition()) == batches.count() == 10


def test_the_pyspark_layer_reaches_the_new_method_through_its_dataset(local_ctx, count_by_partition):
    from strataflow.pyspark.rdd import RDD

    rdd = RDD(local_ctx.parallelize(range(7), 2), None)  # the wrapper alone: no SparkContext needed to read it
    assert rdd.dataset.count_by_partition() == [3, 4]
    assert not hasattr(rdd, "count_by_partition") and not hasattr(rdd, "countByPartition")  # forwarded by hand


# -- no hand lists --------------------------------------------------------------------------------
def _hand_lists(path) -> list[str]:
    """List, tuple and set literals of two or more registered policy names in a test module,
    outside a ``policy_subset`` marker (which must name its policies, and says why)."""
    import ast

    tree = ast.parse(path.read_text(), str(path))
    allowed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "policy_subset":
            allowed.update(id(a) for a in node.args)
    names = set(POLICIES)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and len(node.elts) >= 2:
            values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(values) == len(node.elts) and set(values) <= names and not allowed & {id(e) for e in node.elts}:
                found.append(f"{path.name}:{node.lineno}: {values}")
    return found


def test_no_test_lists_the_policies_by_hand():
    """Every per-policy test takes its names from ``registered_policies()`` (conftest), so a
    new policy runs through it; a list of policy names written out would silently leave the
    new one out."""
    from pathlib import Path

    found = [hit for path in sorted(Path(__file__).parent.glob("*.py")) for hit in _hand_lists(path)]
    assert not found, "policies listed by hand (use registered_policies() or policy_subset): " + "; ".join(found)
