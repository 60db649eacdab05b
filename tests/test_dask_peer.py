"""The Dask peer (``bench --peer dask``): K-means on a ``dask.distributed`` LocalCluster,
checked like PySpark's, with its spill counted and every failure (the job's process gone,
a stall past the time limit, ``KilledWorker``) a row of the report, never a hang.

Nothing here listens on a network address of the host: the runs use in-process workers
(``processes=False``: the ``inproc://`` transport), and the one run with worker processes
(a real ``KilledWorker``) runs in a private network namespace with only ``lo``
(``netns.unshare_argv``), skipped where one cannot be made. No assertion is on a time.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess

import pytest

import netns
from strataflow.bench import command
from strataflow.bench.peers import dask_peer
from strataflow.bench.peers.dask_peer import RESERVED, TASK_SHARE, memory_plan, run_dask
from strataflow.bench.report import mark_failures, markdown_table
from strataflow.cli import main as cli_main
from strataflow.workloads.generators import gen_kmeans

needs_dask = pytest.mark.skipif(not dask_peer.available()[0], reason=f"Dask peer: {dask_peer.available()[1]}")


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    """2,000 text points of 20 dimensions (~0.8 MB as arrays: several blocks spill)."""
    out = str(tmp_path_factory.mktemp("dask-data") / "kmeans")
    gen_kmeans(out, 2000, 20, seed=3, fmt="text", decimals=3)
    return out


def test_memory_plan_spills_persisted_blocks_at_the_budget():
    for budget in (1, 5_000_000, 1 << 30):
        plan = memory_plan(budget)
        assert plan["memory_limit"] == int(RESERVED + budget / (1 - TASK_SHARE))
        assert plan["target"] * plan["memory_limit"] == pytest.approx(budget)  # managed memory spills at the budget
        assert 0 < plan["target"] < 1 - TASK_SHARE + 1e-9
    with pytest.raises(ValueError, match="at least 1 byte"):
        memory_plan(0)


def test_the_peer_says_when_dask_is_missing(monkeypatch, tmp_path):
    from importlib import util

    real = util.find_spec
    monkeypatch.setattr(util, "find_spec", lambda name, *a: None if name in ("dask", "distributed") else real(name, *a))
    monkeypatch.setattr(dask_peer, "_AVAILABLE", None)
    ok, why = dask_peer.available()
    assert not ok and "dask and distributed not installed" in why and "strataflow[peers]" in why
    with pytest.raises(dask_peer.DaskPeerError, match="not installed"):
        run_dask("kmeans", str(tmp_path), memory_bytes=1 << 20, workers=1, threads=1, work_dir=str(tmp_path))


def test_peer_names_are_checked():
    class Args:
        peer = ["pyspark", "dask", "dask"]

    assert command.peers_asked(Args) == ["pyspark", "dask"]
    Args.peer = ["dask", "spark"]
    with pytest.raises(ValueError, match="unknown peer.*'spark'.*pyspark, dask"):
        command.peers_asked(Args)


@needs_dask
def test_kmeans_on_dask_is_checked_and_spills(points, tmp_path):
    rep = run_dask("kmeans", points, memory_bytes=200_000, workers=2, threads=1, work_dir=str(tmp_path / "w"),
                   processes=False, num_partitions=8)
    assert rep["failure"] is None, rep["extra"].get("log_tail")
    assert rep["result_check"] == "ok"
    assert rep["total_s"] > 0 and len(rep["iteration_s"]) == 5
    assert rep["extra"]["points"] == 2000 and 1 < rep["extra"]["blocks"] <= 8  # dask.bytes may merge a short tail
    # a training cost equal to numpy's from the same centres (the check's to 1e-6)
    assert rep["extra"]["numpy_reference_cost"] > 0
    m = rep["metrics"]
    assert isinstance(m["disk_bytes_written"], int) and m["disk_bytes_written"] > 0  # 0.1 MB a worker: it spilled
    assert m["blocks_spilled"] > 0 and m["spill_metrics_workers"] == 2
    assert rep["cached_bytes"] > 0 and rep["cached_memory_bytes"] <= 2 * 100_000  # each worker's target held
    assert not (tmp_path / "w").exists() or not any((tmp_path / "w").iterdir())  # nothing left of a good run


@needs_dask
@pytest.mark.parametrize("fault, says", [("exit", "exited with 3 and no result (loaded)"),
                                         ("stall", "stalled: no result in 5 s, killed")])
def test_a_run_that_dies_or_stalls_is_a_failure_row(points, tmp_path, fault, says):
    rep = run_dask("kmeans", points, memory_bytes=1 << 24, workers=1, threads=2, work_dir=str(tmp_path),
                   processes=False, fault=fault, timeout_s=5 if fault == "stall" else 300)
    assert says in rep["failure"]
    assert rep["result_check"] == f"failed: {rep['failure']}"
    assert rep["total_s"] is None and rep["failed_after_s"] > 0
    assert rep["metrics"]["spill_dir_bytes_at_end"] >= 0
    assert rep["work_dir"] and os.path.exists(os.path.join(rep["work_dir"], "dask.log"))  # the logs are kept


def _netns_usable() -> str | None:
    if not (shutil.which("unshare") and shutil.which("ip")):
        return "no unshare or ip binary"
    probe = subprocess.run(netns.unshare_argv(["true"]), capture_output=True, text=True)
    return None if probe.returncode == 0 else f"cannot make a network namespace: {probe.stderr.strip()[-200:]}"


@needs_dask
def test_killed_worker_is_a_failure_row(points, tmp_path):
    why = _netns_usable()
    if why:
        pytest.skip(why)
    rep = run_dask("kmeans", points, memory_bytes=1 << 24, workers=1, threads=1, work_dir=str(tmp_path),
                   processes=True, fault="worker_exit", launcher=netns.unshare_argv([]),
                   dask_config={"distributed.scheduler.allowed-failures": 0})
    assert rep["failure"].startswith("KilledWorker"), rep["extra"].get("log_tail")
    assert "KilledWorker" in rep["result_check"] and rep["total_s"] is None


def test_the_table_counts_failed_runs():
    rows = [{"experiment": "pressure", "workload": "kmeans", "peer": "dask", "pressure": 2.0, "repeat": r,
             "result_check": "ok" if r else "failed: KilledWorker (iteration 2)",
             **({"total_s": 2.0} if r else {"failure": "KilledWorker (iteration 2)"})} for r in range(3)]
    summary = [{"experiment": "pressure", "workload": "kmeans", "peer": "dask", "pressure": 2.0, "total_s": 2.0,
                "result_check": "failed: KilledWorker (iteration 2)"}]
    mark_failures(rows, summary)
    assert summary[0]["failed"] == "1 of 3: KilledWorker (iteration 2)"
    table = markdown_table(summary, "pressure")
    header = table.splitlines()[0]
    assert "| failed |" in header and "| total_s |" in header and "1 of 3: KilledWorker" in table


@needs_dask
def test_bench_pressure_with_the_dask_peer(tmp_path, monkeypatch):
    """The whole command: Dask's rows in the same table as ours, one per pressure, and
    the exit status 0 (a peer's failure would be a row, not an error)."""
    monkeypatch.setattr(dask_peer, "run_dask", functools.partial(run_dask, processes=False))  # no TCP in tests
    out = tmp_path / "out"
    code = cli_main(["bench", "pressure", "--scale", "0.002", "--workloads", "kmeans", "--pressures", "0.5,4",
                     "--policies", "spark", "--peer", "dask", "--repeat", "1", "--warmup", "0", "--out", str(out),
                     "--data-dir", str(tmp_path / "data")])
    res = json.loads((out / "results.json").read_text())
    assert code == 0, [r.get("result_check") for r in res["runs"]]
    dask_rows = [r for r in res["runs"] if r.get("peer") == "dask"]
    assert sorted(r["pressure"] for r in dask_rows) == [0.5, 4.0]
    for r in dask_rows:
        assert r["result_check"] == "ok" and r["total_s"] > 0 and r["failure"] is None
        assert isinstance(r["disk_written_mb"], float) and "memory_formula" in r
    assert next(r for r in dask_rows if r["pressure"] == 4.0)["disk_written_mb"] > 0
    table = (out / "table.md").read_text()
    assert "| dask |" in table and "Dask peer" in table


def test_a_failed_spark_run_is_named_by_its_cause_and_cells_stay_one_line():
    message = ("PySpark kmeans/df failed (exit 1): boom\n\tat x.y(Z.java:1)\nCaused by: org.apache.spark.SparkException: "
               "outer\nCaused by: org.apache.spark.memory.SparkOutOfMemoryError: [UNABLE_TO_ACQUIRE_MEMORY] Unable to "
               "acquire 262144 bytes\n\tat a.b(C.java:2)")
    assert command._spark_failure(message) == "SparkOutOfMemoryError: [UNABLE_TO_ACQUIRE_MEMORY] Unable to acquire " \
                                              "262144 bytes"
    assert command._spark_failure("PySpark lr/df timed out after 5 s") == "PySpark lr/df timed out after 5 s"
    table = markdown_table([{"workload": "kmeans", "peer": "pyspark-df", "result_check": "error: " + message * 3}],
                           "pressure")
    assert len(table.splitlines()) == 3 and table.splitlines()[2].count("|") == 4  # one row, no cell broken
