"""The application's lifecycle: working directories, events and the event log, GC timing,
explain, and the console entry point."""

from __future__ import annotations

import gc
import json
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from strataflow import Context
from strataflow.cli import main as cli_main
from strataflow.workloads.kmeans import init_centres, kmeans, kmeans_numpy, sample_centres


def test_working_dirs_are_private_and_removed_on_stop(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    c = Context(local_dirs=[str(a), str(b)], shuffle_dirs=[str(b)], progress=False)
    dirs = c.local_dirs + c.shuffle_dirs
    assert len(dirs) == 3 and all(os.path.isdir(d) for d in dirs)
    assert all(stat.S_IMODE(os.stat(d).st_mode) == 0o700 for d in dirs)
    assert all(os.path.dirname(d) == str(a) for d in c.local_dirs[:1])
    assert set(c.local_dirs).isdisjoint(c.shuffle_dirs)
    c.parallelize(range(100), 4).map(lambda x: (x % 3, x)).reduce_by_key(max).collect()
    assert os.listdir(c.shuffle_dirs[0])  # shuffle files went to the shuffle dir...
    # ...not the cache dirs (each executor has a subdirectory there, with nothing in it)
    assert all(name == "owner" for d in c.local_dirs for _, _, files in os.walk(d) for name in files)
    c.stop()
    assert not any(os.path.exists(d) for d in dirs)
    c.stop()  # idempotent


def test_leftovers_of_a_crashed_application_are_removed_at_start(tmp_path):
    code = ("import os, strataflow; c = strataflow.Context(local_dirs=[%r], shuffle_dirs=[%r], progress=False);"
            "print(c.local_dirs[0]); os._exit(0)") % (str(tmp_path), str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    crashed = out.stdout.strip()
    assert os.path.isdir(crashed)  # os._exit skipped every clean-up
    alive = tmp_path / "strataflow-unrelated"
    alive.mkdir()  # not ours (no owner file): must survive
    with Context(local_dirs=[str(tmp_path)], shuffle_dirs=[str(tmp_path)], progress=False) as c:
        assert crashed in c.removed_stale_dirs
        assert not os.path.exists(crashed)
        assert alive.exists()
        # a live application's directories are left alone by another start
        with Context(local_dirs=[str(tmp_path)], shuffle_dirs=[str(tmp_path)], progress=False) as c2:
            assert all(os.path.exists(d) for d in c.local_dirs)
            assert not c2.removed_stale_dirs


def test_event_log_has_jobs_stages_tasks_with_metrics(tmp_path):
    log = tmp_path / "ev.jsonl"
    with Context(parallelism=2, event_log=str(log), shuffle_dirs=[str(tmp_path)], progress=False) as c:
        c.parallelize(range(1000), 4).map(lambda x: (x % 10, x)).reduce_by_key(lambda a, b: a + b, 2).collect()
    events = [json.loads(line) for line in open(log)]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "ApplicationStart" and kinds[-1] == "ApplicationEnd"
    assert kinds.count("JobStart") == kinds.count("JobEnd") == 1
    stages = [e for e in events if e["event"] == "StageEnd"]
    assert [s["kind"] for s in stages] == ["shuffle-map", "result"]
    assert stages[0]["shuffle_bytes_written"] > 0
    assert stages[0]["shuffle_bytes_written"] == stages[1]["shuffle_bytes_read"]
    tasks = [e for e in events if e["event"] == "TaskEnd"]
    assert len(tasks) == 6 and all(t["ok"] and t["seconds"] >= 0 and "gc_s" in t for t in tasks)
    assert sum(t["records_out"] for t in tasks if t["stage_id"] == stages[0]["stage_id"]) == 40  # combined
    assert all(e["time"] > 0 for e in events)


def test_gc_seconds_are_measured(tmp_path):
    log = tmp_path / "ev.jsonl"
    with Context(parallelism=1, event_log=str(log), progress=False) as c:
        def churn(v):
            junk = []
            for i in range(20000):
                junk.append([i, {"a": [i]}])
            gc.collect()
            return v

        c.parallelize(range(4), 2).map_partitions(churn).count()
    job = [json.loads(line) for line in open(log) if '"JobEnd"' in line][0]
    assert job["gc_collections"] >= 2 and job["gc_s"] > 0


def test_progress_bar_listener_runs(tmp_path, capsys):
    with Context(parallelism=2, progress=True, shuffle_dirs=[str(tmp_path)]) as c:
        c.parallelize(range(100), 4).map(lambda x: (x % 3, 1)).reduce_by_key(lambda a, b: a + b).collect()
    err = capsys.readouterr().err
    assert "stage" in err and "tasks" in err


def test_explain_marks_stage_boundaries(ctx):
    ds = ctx.parallelize(range(10), 3).map(lambda x: (x, 1)).reduce_by_key(lambda a, b: a + b, 2)
    ds.name = "counts"
    text = ds.map_values(str).explain()
    assert text.count("stage boundary") == 1
    assert "counts" in text and "result stage: 2 tasks" in text and "map stage of 3 tasks" in text
    joined = ds.join(ds).explain()
    assert joined.count("stage boundary") == 1  # a self-join of a hash-partitioned dataset is narrow
    assert "shown above" in joined


def test_kmeans_equals_plain_numpy(ctx, tmp_path):
    rng = np.random.default_rng(3)
    pts = np.concatenate([rng.normal(c, 1.0, size=(700, 5)) for c in (0, 10, 20)])
    init = init_centres(pts, 4, seed=1)
    for parts in (1, 3, 7):
        res = kmeans(ctx.from_numpy(pts, parts), k=4, iterations=4, init=init)
        ref = kmeans_numpy(pts, init, 4, parts)
        assert np.array_equal(res.centres, ref.centres)
        assert res.costs == ref.costs
    np.save(tmp_path / "p.npy", pts)
    mapped = kmeans(ctx.npy_file(tmp_path / "p.npy", 4), k=4, iterations=3, seed=5)
    assert mapped.costs[-1] <= mapped.costs[0]
    assert np.array_equal(mapped.centres, kmeans_numpy(pts, mapped.init, 3, 4).centres)
    # the one-pass sample is k distinct points of the data, and the same for a seed
    assert len({tuple(r) for r in mapped.init}) == 4 and all((pts == r).all(axis=1).any() for r in mapped.init)
    assert np.array_equal(sample_centres(ctx.npy_file(tmp_path / "p.npy", 4), 4, 5), mapped.init)
    assert not np.array_equal(sample_centres(ctx.npy_file(tmp_path / "p.npy", 4), 4, 6), mapped.init)


def test_cli_gen_and_run(tmp_path, capsys):
    data = tmp_path / "km"
    assert cli_main(["gen", "kmeans", "--out", str(data), "--points", "5000", "--set", "dims=4",
                     "--format", "npy"]) == 0
    manifest = json.load(open(data / "manifest.json"))
    assert manifest["points"] == 5000 and np.load(data / "points.npy").shape == (5000, 4)
    out = tmp_path / "run.json"
    assert cli_main(["run", "kmeans", "--data", str(data), "--iterations", "2", "--memory", "64MB",
                     "--json", str(out), "--quiet"]) == 0
    result = json.load(open(out))
    assert result["result_check"] == "ok" and len(result["iteration_s"]) == 2
    assert any("kmeans iteration" in s["name"] for s in result["stages"])
    assert cli_main(["gen", "kmeans", "--out", str(tmp_path / "x"), "--set", "colour=blue"]) == 2
    assert result["config"]["level"] == "MEMORY_AND_DISK" and result["metrics"]["misses"] >= 2
    # under pressure (auto memory = data / 4) with Spark's policy the cache thrashes
    big = tmp_path / "km-big"
    assert cli_main(["gen", "kmeans", "--out", str(big), "--points", "60000"]) == 0  # 9.4 MB of text points
    # one executor: with two, each has half the memory, too little for one points block to
    # evict the other dataset's (Spark never evicts blocks of the dataset being cached)
    assert cli_main(["run", "kmeans", "--data", str(big), "--iterations", "3", "--policy", "spark",
                     "--partitions", "32", "--json", str(out), "--quiet", "--executors", "1"]) == 0
    result = json.load(open(out))
    assert result["result_check"] == "ok" and result["metrics"]["blocks_recached"] > 0
    (tmp_path / "notdata").mkdir()
    (tmp_path / "notdata" / "x.txt").write_text("not generated data")
    assert cli_main(["run", "kmeans", "--data", str(tmp_path / "notdata"), "--quiet"]) == 2
    with pytest.raises(SystemExit):
        cli_main(["run", "kmeans", "--memory", "lots"])


def test_generator_is_deterministic_and_streams(tmp_path):
    from strataflow.workloads.generators import gen_kmeans

    a = np.load(gen_kmeans(str(tmp_path / "a"), 3000, 3, seed=9, chunk_rows=1000))
    b = np.load(gen_kmeans(str(tmp_path / "b"), 3000, 3, seed=9, chunk_rows=1000))
    c = np.load(gen_kmeans(str(tmp_path / "c"), 3000, 3, seed=10, chunk_rows=1000))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    with pytest.raises(ValueError, match="points"):
        gen_kmeans(str(tmp_path / "d"), 0)


def _modules_here(_: int) -> tuple[int, bool, bool]:
    return os.getpid(), "mailbox" in sys.modules, "no_such_module_anywhere" in sys.modules


def test_preloaded_modules_reach_every_executor_and_a_missing_one_is_no_error(tmp_path):
    """``fleet.preload`` (a SparkSession asks for DuckDB's this way): each executor process
    imports the modules on a thread of its own; one that does not exist is skipped."""
    from waits import wait_for

    with Context(memory="64MB", local_dirs=[str(tmp_path)], backend="processes", executors=2, progress=False) as ctx:
        pids = {h.pid for h in ctx.fleet.live()}
        assert not any(loaded for _, loaded, _ in ctx.parallelize(range(8), 8).map(_modules_here).collect())
        ctx.fleet.preload(["no_such_module_anywhere", "mailbox"])

        def every_executor_has_it() -> bool:
            seen = ctx.parallelize(range(16), 16).map(_modules_here).collect()
            assert not any(missing for _, _, missing in seen)
            return {pid for pid, loaded, _ in seen if loaded} == pids

        wait_for(every_executor_has_it, what="mailbox imported by both executors")
