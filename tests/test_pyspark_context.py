"""``strataflow.pyspark.SparkContext``: masters, SparkConf, one active context, the status
tracker, and PySpark's documented examples again on executor processes.

Each test makes its own SparkContext (PySpark allows one at a time), on the threads
backend unless it says otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

from strataflow.pyspark import SparkConf, SparkContext, SparkJobInfo, StorageLevel
from strataflow.pyspark.context import parse_master

from test_pyspark_api import run_example


def conf(backend: str = "threads") -> SparkConf:
    return SparkConf().set("strataflow.backend", backend).set("strataflow.progress", "false")


@pytest.mark.parametrize("master, parallelism", [
    ("local", 1), ("local[3]", 3), ("local[*]", os.cpu_count()), (None, os.cpu_count()), ("local[ 2 ]", 2),
])
def test_master_sets_parallelism(master, parallelism):
    assert parse_master(master)["parallelism"] == parallelism


def test_master_with_max_failures_and_ray():
    assert parse_master("local[2, 5]") == {"parallelism": 2, "task_max_failures": 5}
    assert parse_master("ray://head:10001") == {"backend": "ray", "address": "ray://head:10001"}


@pytest.mark.parametrize("master", ["spark://host:7077", "yarn", "local[0]", "local[x]"])
def test_unsupported_master_is_a_clear_error(master):
    with pytest.raises(ValueError, match="master"):
        parse_master(master)


def test_spark_context_from_arguments():
    with SparkContext("local[4]", "app", conf=conf()) as sc:
        assert sc.defaultParallelism == 4 and sc.defaultMinPartitions == 2
        assert sc.appName == "app" and sc.master == "local[4]"
        assert sc.parallelize(range(8)).getNumPartitions() == 4
        assert sc.getConf().get("spark.app.name") == "app"
    assert SparkContext._active_spark_context is None


def test_spark_context_from_conf_only():
    c = conf().setMaster("local[3]").setAppName("from-conf").set("strataflow.memory", "64MB")
    with SparkContext(conf=c) as sc:
        assert sc.defaultParallelism == 3 and sc.appName == "from-conf"
        assert sc.ctx.config.memory == 64 * 1024 * 1024
        assert sc.range(10).sum() == 45


def test_no_master_means_every_core():
    with SparkContext(conf=conf()) as sc:
        assert sc.master == "local[*]" and sc.defaultParallelism == os.cpu_count()


def test_spark_keys_with_a_meaning_and_unknown_strataflow_keys():
    with SparkContext("local[2]", conf=conf().set("spark.default.parallelism", "5")
                      .set("spark.task.maxFailures", "2")) as sc:
        assert sc.defaultParallelism == 5 and sc.ctx.config.task_max_failures == 2
    with pytest.raises(ValueError, match="strataflow.bogus"):
        SparkContext("local", conf=conf().set("strataflow.bogus", "1"))
    assert SparkContext._active_spark_context is None


def test_spark_conf_api():
    c = SparkConf().setMaster("local").setAppName("a").setAll([("k1", 1), ("k2", "v")]).setIfMissing("k1", 9)
    c.setExecutorEnv("PATH", "/bin")
    assert c.get("k1") == "1" and c.get("missing", "d") == "d" and c.contains("k2")
    assert ("spark.executorEnv.PATH", "/bin") in c.getAll()
    assert "spark.master=local" in c.toDebugString().splitlines()


def test_one_active_context_at_a_time():
    with SparkContext("local", "first", conf=conf()) as sc:
        with pytest.raises(ValueError, match="Cannot run multiple SparkContexts"):
            SparkContext("local", "second", conf=conf())
        assert SparkContext.getOrCreate() is sc
    with SparkContext("local", "third", conf=conf()) as sc2:  # possible again after stop()
        assert sc2.parallelize([1]).count() == 1


def test_status_tracker_reports_jobs_and_stages():
    with SparkContext("local[2]", conf=conf()) as sc:
        sc.setJobGroup("g1", "word counts")
        rdd = sc.parallelize(["a", "b", "a"], 2).map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b, 3)
        assert sorted(rdd.collect()) == [("a", 2), ("b", 1)]
        tracker = sc.statusTracker()
        jobs = tracker.getJobIdsForGroup("g1")
        assert len(jobs) == 1 and tracker.getJobIdsForGroup("other") == []
        info = tracker.getJobInfo(jobs[0])
        assert isinstance(info, SparkJobInfo) and info.status == "SUCCEEDED" and len(info.stageIds) == 2
        stages = [tracker.getStageInfo(s) for s in info.stageIds]
        assert sorted(s.numTasks for s in stages) == [2, 3]
        assert all(s.numCompletedTasks == s.numTasks and s.numActiveTasks == 0 and s.numFailedTasks == 0
                   for s in stages)
        assert tracker.getActiveJobsIds() == [] and tracker.getActiveStageIds() == []
        assert tracker.getJobInfo(12345) is None and tracker.getStageInfo(12345) is None
        sc.setJobGroup("g2", "")
        sc.parallelize([1]).count()
        assert len(tracker.getJobIdsForGroup("g2")) == 1


def test_set_log_level():
    import logging

    with SparkContext("local", conf=conf()) as sc:
        sc.setLogLevel("ERROR")
        assert logging.getLogger("strataflow").level == logging.ERROR
        sc.setLogLevel("WARN")
        with pytest.raises(ValueError, match="unknown level"):
            sc.setLogLevel("LOUD")


def test_checkpoint_needs_a_directory():
    with SparkContext("local", conf=conf()) as sc:
        assert sc.getCheckpointDir() is None
        with pytest.raises(RuntimeError, match="set_checkpoint_dir"):
            sc.parallelize([1]).checkpoint()


def test_binary_files_and_records(tmp_path):
    (tmp_path / "1.bin").write_bytes(b"0000000100020003")
    (tmp_path / "2.bin").write_bytes(b"xyzw")
    with SparkContext("local[2]", conf=conf()) as sc:
        files = dict(sc.binaryFiles(str(tmp_path)).collect())
        assert files[f"file:{tmp_path / '2.bin'}"] == b"xyzw"
        assert sorted(sc.binaryRecords(str(tmp_path), 4).collect()) == [b"0000", b"0001", b"0002", b"0003", b"xyzw"]


@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_whole_files_keys_are_hadoop_paths_from_the_drivers_directory(tmp_path, monkeypatch, backend):
    """PySpark's keys: ``file:/abs/path`` for a local file, however the path was typed (a
    relative one from the driver's working directory, whatever an executor's is)."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("alpha")
    (tmp_path / "in" / "b.txt").write_text("beta")
    monkeypatch.chdir(tmp_path)
    want = {f"file:{tmp_path}/in/a.txt": "alpha", f"file:{tmp_path}/in/b.txt": "beta"}
    with SparkContext("local[2]", conf=conf().set("strataflow.backend", backend)) as sc:
        assert dict(sc.wholeTextFiles("in").collect()) == want
        assert dict(sc.wholeTextFiles(f"file://{tmp_path}/in/a.txt,in/b.txt").collect()) == want
        assert dict(sc.wholeTextFiles("in/*.txt", use_unicode=False).collect()) == \
            {k: v.encode() for k, v in want.items()}
        assert dict(sc.binaryFiles("./in").collect()) == {k: v.encode() for k, v in want.items()}


# The examples whose results depend on what travels between processes: functions,
# ResultIterables, sources written to files, pipes run by executors, checkpoint files.
ON_PROCESSES = ["RDD.groupByKey", "RDD.cogroup", "RDD.groupWith", "RDD.sortByKey", "RDD.pipe", "RDD.checkpoint",
                "RDD.saveAsPickleFile", "SparkContext.wholeTextFiles", "RDD.treeAggregate", "RDD.histogram",
                "RDD.lookup", "RDD.randomSplit", "RDD.cartesian", "RDD.countApproxDistinct", "RDD.stdev",
                "RDD.repartitionAndSortWithinPartitions", "RDD.subtractByKey", "RDD.top",
                "RDD.zipWithUniqueId", "RDD.sampleByKey", "RDD.foreach", "RDD.foreachPartition",
                "SparkContext.addFile", "SparkContext.addArchive", "RDD.saveAsTextFile"]


def test_documented_examples_on_executor_processes():
    with tempfile.TemporaryDirectory() as d:
        with SparkContext("local[4]", "PythonTest", conf=conf("processes")) as sc:
            assert sc.ctx.backend == "processes"
            sc.setCheckpointDir(d)
            for name in ON_PROCESSES:
                run_example(name, sc)
            rdd = sc.parallelize(range(10), 2).map(lambda x: x + 1)
            rdd.persist(StorageLevel.MEMORY_AND_DISK)
            assert rdd.sum() == rdd.sum() == 55


def test_the_layer_never_imports_pyspark():
    """Works where PySpark is not installed: an import of ``pyspark`` fails in the child."""
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'pyspark' or name.startswith('pyspark.'):\n"
            "            raise ImportError('pyspark is blocked')\n"
            "sys.meta_path.insert(0, Block())\n"
            "from strataflow.pyspark import SparkContext, SparkConf\n"
            "with SparkContext('local[2]', 'x', conf=SparkConf().set('strataflow.backend', 'threads')) as sc:\n"
            "    assert sc.parallelize(range(5)).map(lambda x: x * x).sum() == 30\n"
            "assert not any(m == 'pyspark' or m.startswith('pyspark.') for m in sys.modules)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# -- broadcast variables and accumulators: PySpark's documented examples -------------------------
def test_pyspark_broadcast_and_accumulator_examples():
    """From PySpark's docs of ``SparkContext.broadcast``, ``Broadcast`` and
    ``SparkContext.accumulator`` / ``Accumulator`` (outputs as documented)."""
    from strataflow.pyspark import AccumulatorParam, SparkContext

    with SparkContext("local[2]", "shared") as sc:
        mapping = {1: 10001, 2: 10002}
        bc = sc.broadcast(mapping)
        rdd = sc.parallelize(range(1, 3)).map(lambda x: bc.value[x])
        assert rdd.collect() == [10001, 10002]
        bc.unpersist()
        assert sc.parallelize([1, 2]).flatMap(lambda x: [bc.value[x]] * x).collect() == [10001, 10002, 10002]
        bc.destroy()

        a = sc.accumulator(1)
        assert a.value == 1
        a.value = 2
        a += 5
        assert a.value == 7
        rdd = sc.range(5)

        def f(x):
            nonlocal_a.add(x)

        nonlocal_a = a
        rdd.foreach(f)
        assert a.value == 17

        class VectorAccumulatorParam(AccumulatorParam):
            def zero(self, value):
                return [0.0] * len(value)

            def addInPlace(self, val1, val2):
                for i in range(len(val1)):
                    val1[i] += val2[i]
                return val1

        va = sc.accumulator([1.0, 2.0, 3.0], VectorAccumulatorParam())
        assert va.value == [1.0, 2.0, 3.0]

        def g(x):
            va.add([x] * 3)

        rdd.foreach(g)
        assert va.value == [11.0, 12.0, 13.0]
