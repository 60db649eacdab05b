"""``strataflow bench scale`` at a tiny budget (4 MB; inputs of 1 and 4x): the plan, every
run's row (per-GB figures that agree with the bytes and seconds they come from), every
registered policy, the chart, a size the disk cannot hold skipped with its reason (the
free-space figure injected), the flatness notes, and the PySpark peer's rows when a run
fails or passes its time limit (the peer's runner replaced: no JVM here). No timing
assertions: times are only checked to be the divisor they claim to be."""

from __future__ import annotations

import argparse
import json
import os
import subprocess

import pytest

from conftest import registered_policies
from strataflow.bench import scale, scale_peer
from strataflow.bench.experiments import plan, summarize
from strataflow.bench.report import write_report
from strataflow.cli import main as cli_main

MB = 1 << 20
BUDGET = 4 * MB


def _free(nbytes: int):
    return lambda path: nbytes


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """One plan at 4 MB, sizes 1, 4 and 64x, with 200 MB free: 64x (256 MB a workload)
    cannot fit; every run of the rest, run; their summary and report."""
    root = tmp_path_factory.mktemp("scale")
    runs = plan("scale", root=str(root / "data"), scale=1.0, repeat=1, parallelism=2, budget="4MB",
                sizes=[1, 4, 64], free=_free(200 * MB), work_dir=str(root), backend="threads")
    rows = [run.call() for run in runs]
    summary = summarize(rows)
    notes = scale.scale_notes(rows, summary)
    paths = write_report(str(root / "out"), "scale", rows, summary, {"notes": notes})
    return runs, rows, summary, notes, paths


def test_every_policy_runs_at_every_size_that_fits(ran):
    _, rows, _, _, _ = ran
    done = [r for r in rows if r.get("finished")]
    for w in scale.WORKLOADS:
        for x in (1, 4):
            assert sorted(r["policy"] for r in done if r["workload"] == w and r["size_scale"] == x) == \
                registered_policies()
    assert all(r["result_check"] == "ok" and r["checked"] == 1 for r in done)


def test_per_gb_figures_agree_with_their_bytes_and_seconds(ran):
    _, rows, _, _, _ = ran
    for r in (r for r in rows if r.get("finished")):
        gb = r["input_gb"]
        assert gb == pytest.approx(r["size_scale"] * BUDGET / scale.GB, rel=0.1)  # the input is x times the budget
        assert r["s_per_gb"] == pytest.approx(r["total_s"] / gb)
        parts = r["cache_read_gb"] + r["cache_written_gb"] + r["shuffle_gb"] + r["spill_gb"]
        assert r["moved_gb"] == pytest.approx(parts)
        assert r["moved_per_gb"] == pytest.approx(r["moved_gb"] / gb)
        assert r["memory_mb"] == BUDGET / MB
        assert r["partitions"] == scale.partitions_for(int(gb * scale.GB), BUDGET, 2)
        assert 0 <= r["serde_share"] < 1 and 0 <= r["gc_share"] < 1
        if r["size_scale"] == 4:  # four budgets of input at MEMORY_AND_DISK: the cache must go to disk
            assert r["cache_written_gb"] > 0 and r["moved_per_gb"] > 0


def test_a_size_the_disk_cannot_hold_is_skipped_with_its_reason(ran, tmp_path):
    runs, rows, summary, notes, _ = ran
    skipped = [r for r in rows if r.get("skipped")]
    assert sorted(r["workload"] for r in skipped) == sorted(scale.WORKLOADS)
    assert {r["size_scale"] for r in skipped} == {64}
    assert all(r["finished"] == 0 and "needs" in r["outcome"] and "free" in r["outcome"] for r in skipped)
    assert not any(r.get("size_scale") == 64 and r.get("policy") for r in rows)  # nothing ran at 64x
    assert any(n.startswith("64x: skipped:") for n in notes)
    generated = os.listdir(runs[-1].extra["data"].root)  # nothing was generated for 64x
    assert generated and not any(f"-{64 * BUDGET}-" in name for name in generated)


def test_plan_sizes_counts_the_inputs_already_there_and_stops_after_the_first_misfit(tmp_path):
    root, work = tmp_path / "data", tmp_path
    root.mkdir()
    # 60% of 100 MB = 60 MB: 1x needs 2 x 4 MB inputs + 8 MB working space; 4x, 2 x 16 + 32 more: no
    fits, skipped = scale.plan_sizes(str(root), str(work), BUDGET, list(scale.WORKLOADS), None, _free(100 * MB))
    assert fits == [1.0] and list(skipped) == [4.0]
    assert skipped[4.0].startswith("4x (16 MB a workload) needs 64 MB of disk: 32 MB of inputs not yet generated and "
                                   "32 MB of working space")
    assert "60% of the 100 MB free" in skipped[4.0] and "less 8 MB for the smaller sizes' inputs, leaves 52 MB" \
        in skipped[4.0]
    # given sizes: each is checked, none is dropped silently
    fits, skipped = scale.plan_sizes(str(root), str(work), BUDGET, list(scale.WORKLOADS), [1, 4, 16], _free(100 * MB))
    assert fits == [1] and sorted(skipped) == [4, 16]
    # plenty of room: the defaults and beyond, up to MAX_SIZE
    fits, skipped = scale.plan_sizes(str(root), str(work), BUDGET, list(scale.WORKLOADS), None, _free(1 << 50))
    assert fits == [1, 4, 16, 64, 256, 1024] and not skipped
    with pytest.raises(ValueError, match="> 0"):
        scale.plan_sizes(str(root), str(work), BUDGET, ["kmeans"], [0], _free(1 << 40))


def test_an_input_already_generated_needs_no_new_room(tmp_path):
    from strataflow.bench.data import ensure_data

    root = tmp_path / "data"
    ensure_data("wordcount", str(root), 1.0, size=4 * BUDGET)
    # 4x needs 16 MB of input + 32 MB working space; with its input there, only the 32 MB
    fits, skipped = scale.plan_sizes(str(root), str(tmp_path), BUDGET, ["wordcount"], [4], _free(int(40 * MB / 0.6)))
    assert fits == [4] and not skipped
    fits, skipped = scale.plan_sizes(str(root), str(tmp_path), BUDGET, ["kmeans"], [4], _free(int(40 * MB / 0.6)))
    assert not fits and 4 in skipped


def test_the_chart_and_table_are_written(ran):
    _, _, summary, notes, paths = ran
    assert paths["charts"] and paths["charts"][0].endswith("scale.png")
    with open(paths["charts"][0], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    table = open(paths["table"]).read()
    assert "| s_per_gb |" in table and "| moved_per_gb |" in table and "| skipped |" in table
    # one flatness line per workload and policy
    for w in scale.WORKLOADS:
        for p in registered_policies():
            assert sum(n.startswith(f"{w}, {p}: ") for n in notes) == 1
    assert all(s["runs"] == 1 for s in summary)


def test_flatness_says_flat_or_where_and_why_not():
    def point(x, s, moved=0.0, serde=0.01):
        return {"size_scale": x, "s_per_gb": s, "moved_per_gb": moved, "serde_share": serde, "gc_share": 0.01,
                "cache_read_gb": moved * x}

    assert scale.flatness([point(1, 10), point(4, 11), point(16, 9)]).startswith("flat")
    text = scale.flatness([point(1, 10), point(4, 11), point(16, 20, moved=3.0, serde=0.3)])
    assert text.startswith("not flat") and "rises 2.00x by 16x" in text and "first outside 1.25x at 16x" in text
    assert "0.00 -> 3.00 GB per GB" in text and "1% -> 30%" in text and "no longer fits" in text
    assert "fixed costs" in scale.flatness([point(1, 20), point(4, 10)])
    assert "one size only" in scale.flatness([point(1, 20)])


def test_the_command_line_runs_scale(tmp_path, monkeypatch):
    monkeypatch.setattr(scale, "disk_free", _free(50 * MB))  # 60%: 30 MB; 1x needs 4 + 8 MB, 4x 4 + 16 + 32
    policy = registered_policies()[0]
    out = tmp_path / "out"
    code = cli_main(["bench", "scale", "--budget", "4MB", "--sizes", "1,4", "--policies", policy, "--workloads",
                     "wordcount", "--backend", "threads", "--repeat", "1", "--out", str(out),
                     "--data-dir", str(tmp_path / "data")])
    assert code == 0  # a skipped size is a finding, not a failure
    res = json.loads((out / "results.json").read_text())
    ran = [r for r in res["runs"] if r.get("finished")]
    assert [(r["workload"], r["policy"], r["size_scale"]) for r in ran] == [("wordcount", policy, 1.0)]
    assert any(n.startswith("4x: skipped:") for n in res["meta"]["notes"])
    assert (out / "scale.png").exists()


def test_unknown_policy_or_workload_is_named(tmp_path):
    with pytest.raises(ValueError, match="unknown policy nope"):
        plan("scale", root=str(tmp_path), scale=1.0, repeat=1, parallelism=1, policies=["nope"])
    with pytest.raises(ValueError, match="unknown workload sort"):
        plan("scale", root=str(tmp_path), scale=1.0, repeat=1, parallelism=1, workloads=["sort"])


def _peer_args(tmp_path, limit=30.0):
    return argparse.Namespace(peer="pyspark", parallelism=2, out=str(tmp_path), time_limit=limit)


def test_the_peer_reports_a_time_limit_and_tries_no_larger_size(tmp_path, monkeypatch):
    from strataflow.bench.peers import pyspark_peer

    runs = plan("scale", root=str(tmp_path / "data"), scale=1.0, repeat=1, parallelism=2, budget="1MB",
                sizes=[1, 4, 16], workloads=["kmeans"], policies=registered_policies()[:1], free=_free(1 << 40))
    calls = []

    def fake(workload, data, *, timeout_s, storage_memory_bytes, **kw):
        calls.append((workload, storage_memory_bytes, timeout_s))
        if len(calls) == 1:
            return {"config": {"data_bytes": 1 * MB, "memory": storage_memory_bytes}, "total_s": 2.0,
                    "iteration_s": [0.1, 0.2, 0.3], "result_check": "ok",
                    "metrics": {"disk_bytes_written": MB // 2, "shuffle_bytes_written": 0, "disk_bytes_spilled": 0,
                                "gc_s": 0.1}}
        try:  # the second size passes its limit: the runner raises as run_pyspark does
            raise subprocess.TimeoutExpired("spark", timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise pyspark_peer.PeerError("timed out") from exc

    monkeypatch.setattr(pyspark_peer, "available", lambda: (True, "test"))
    monkeypatch.setattr(pyspark_peer, "run_pyspark", fake)
    peer, note = scale_peer.peer_runs(_peer_args(tmp_path), runs)
    assert [r.key["size_scale"] for r in peer] == [1, 4, 16] and "30 s" in note
    rows = [r.call() for r in peer]
    assert calls == [("kmeans", MB, 30.0), ("kmeans", MB, 30.0)]  # 16x never started
    first, second, third = rows
    assert first["finished"] == 1 and first["s_per_gb"] == pytest.approx(2.0 * 1024)
    assert first["moved_per_gb"] == pytest.approx(0.5) and first["peer"] == "pyspark-df"
    assert second["finished"] == 0 and second["outcome"] == "time limit: over 30 s"
    assert third["finished"] == 0 and third["outcome"].startswith("not run: PySpark did not finish 4x")
    notes = scale.scale_notes(rows, summarize(rows))
    assert "kmeans pyspark-df at 4x: time limit: over 30 s" in notes


def test_the_dask_series_counts_its_spill_reads_and_a_killed_worker_stops_it(tmp_path, monkeypatch):
    """Dask beside us in bench scale: its runner gets the budget over --parallelism
    one-thread workers and the time limit; its spill reads count in its bytes moved; a
    failure (KilledWorker) is a row, and the larger sizes are not tried."""
    from strataflow.bench.peers import dask_peer

    runs = plan("scale", root=str(tmp_path / "data"), scale=1.0, repeat=1, parallelism=2, budget="1MB",
                sizes=[1, 4, 16], workloads=["kmeans"], policies=registered_policies()[:1], free=_free(1 << 40))
    calls = []

    def fake(workload, data, *, memory_bytes, workers, threads, work_dir, iterations, timeout_s, check):
        calls.append((workload, memory_bytes, workers, threads, iterations, timeout_s, check))
        if len(calls) == 1:
            return {"config": {"data_bytes": MB, "memory": memory_bytes}, "total_s": 4.0, "failure": None,
                    "iteration_s": [0.3, 0.1, 0.2], "result_check": "ok", "memory_formula": "target 0.6",
                    "metrics": {"disk_bytes_written": MB // 4, "disk_bytes_read": MB // 2}}
        return {"failure": "KilledWorker: the task's workers died 3 times", "failed_after_s": 12.5}

    monkeypatch.setattr(dask_peer, "available", lambda: (True, "test"))
    monkeypatch.setattr(dask_peer, "run_dask", fake)
    args = argparse.Namespace(peer=["pyspark", "dask"], parallelism=2, out=str(tmp_path), time_limit=45.0)
    peer, note = scale_peer.peer_runs(args, runs, "dask")
    assert [r.key["size_scale"] for r in peer] == [1, 4, 16] and "Dask peer" in note and "45 s" in note
    first, second, third = [r.call() for r in peer]
    assert calls == [("kmeans", MB, 2, 1, 5, 45.0, True)] * 2  # 16x never started
    assert first["finished"] == 1 and first["peer"] == "dask" and first["api"] == "delayed"
    assert first["moved_per_gb"] == pytest.approx(0.75) and first["cache_read_gb"] == pytest.approx(0.5 / 1024)
    assert first["iteration_s"] == 0.2 and first["heap_formula"] == "target 0.6"
    assert second["finished"] == 0 and second["outcome"].startswith("failed: KilledWorker")
    assert third["outcome"].startswith("not run: Dask did not finish 4x (failed: KilledWorker")
    # the command's Dask maker hands bench scale to this series
    from strataflow.bench.command import _dask_runs

    assert [r.key["peer"] for r in _dask_runs(args, "scale", runs, str(tmp_path), 1.0)[0]] == ["dask"] * 3


def test_a_failed_peer_run_names_the_jvm_error_from_its_log(tmp_path):
    log = tmp_path / "spark.log"
    log.write_text("INFO starting\nERROR Executor: Exception in task 3.0\njava.lang.OutOfMemoryError: Java heap space\n"
                   "Traceback (most recent call last):\nConnectionRefusedError: [Errno 111]\n")
    message = f"PySpark kmeans/df failed (exit 1): \n--- log tail ({log}) ---\nConnectionRefusedError"
    assert scale_peer.failure_cause(message) == "java.lang.OutOfMemoryError: Java heap space"
    assert scale_peer.failure_cause("PySpark is not usable here: no java\nmore") == "PySpark is not usable here: no java"


def test_the_peer_runs_in_the_machine_and_an_oom_stops_the_larger_sizes(tmp_path, monkeypatch):
    """With --machine-memory the peer's run goes into a machine of its own (the runner
    replaced: no cgroup or JVM needed here); the CLI's --peer is a list; an OOM row, like a
    time limit, means the larger sizes are not tried."""
    from strataflow.bench.peers import pyspark_peer

    runs = plan("scale", root=str(tmp_path / "data"), scale=1.0, repeat=1, parallelism=2, budget="1MB",
                sizes=[1, 4], workloads=["kmeans"], policies=registered_policies()[:1], free=_free(1 << 40))
    machine = {"limit": 64 * MB, "columns": {}, "note": "test"}
    for r in runs:
        r.extra["machine"] = machine
    calls = []

    def fake(m, target, spec, lost, data, work_dir, timeout_s=None):
        calls.append((m, target, spec["budget"], spec["limit"], timeout_s, os.path.isdir(data)))
        return {**lost, "finished": 0, "oom_kills": 1, "outcome": "OOM: 1 process(es) killed in a 64 MB machine"}

    monkeypatch.setattr(pyspark_peer, "available", lambda: (True, "test"))
    monkeypatch.setattr(scale_peer, "in_machine", fake)
    args = argparse.Namespace(peer=["pyspark"], parallelism=2, out=str(tmp_path), time_limit=30.0)
    peer, note = scale_peer.peer_runs(args, runs)
    assert [r.key["size_scale"] for r in peer] == [1, 4] and "30 s" in note
    first, second = [r.call() for r in peer]
    assert calls == [(machine, "strataflow.bench.scale_peer:attempt_row", MB, 30.0, 90.0, True)]
    assert first["outcome"].startswith("OOM") and first["input_gb"] == pytest.approx(1 / 1024)
    assert second["outcome"].startswith("not run: PySpark did not finish 1x (OOM")
