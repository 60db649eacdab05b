"""Failure handling: task retries, job errors that name the culprit, lost shuffle files,
and configurations rejected before any work."""

from __future__ import annotations

import glob
import os
import threading

import pytest

from strataflow import ConfigError, Context, JobError, TaskFailedError
from conftest import local_backends


def _context(tmp_path, backend):
    (tmp_path / "cache").mkdir()
    (tmp_path / "shuffle").mkdir()
    return Context(memory="64MB", parallelism=2, local_dirs=[str(tmp_path / "cache")],
                   shuffle_dirs=[str(tmp_path / "shuffle")], task_max_failures=3, progress=False,
                   event_log=str(tmp_path / "events.jsonl"), backend=backend)


@pytest.fixture(params=local_backends())
def ctx(tmp_path, request):
    c = _context(tmp_path, request.param)
    yield c
    c.stop()


@pytest.fixture(params=local_backends(in_driver_process=True))
def local_ctx(tmp_path, request):
    """For tests that patch the engine's code in this process."""
    c = _context(tmp_path, request.param)
    yield c
    c.stop()


class Calls:
    """Counts calls of a task's function in a file (O_APPEND: one line each), so that
    calls made in executor processes count too."""

    def __init__(self, path):
        self.path = str(path)

    def add(self, tag="") -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{tag}\n".encode())
        finally:
            os.close(fd)

    def __len__(self) -> int:
        try:
            with open(self.path) as f:
                return sum(1 for _ in f)
        except FileNotFoundError:
            return 0


def _events(path):
    import json

    with open(path) as f:
        return [json.loads(line) for line in f]


def test_flaky_task_is_retried_and_succeeds(ctx, tmp_path):
    failures = Calls(tmp_path / "failures")

    def flaky(x):
        if x == 7 and len(failures) < 2:
            failures.add()
            raise IOError("transient")
        return x * 2

    assert ctx.parallelize(range(10), 3).map(flaky).collect() == [x * 2 for x in range(10)]
    ends = [e for e in _events(ctx.config.event_log) if e["event"] == "TaskEnd"]
    failed = [e for e in ends if not e["ok"]]
    assert len(failed) == 2 and all("transient" in e["error"] for e in failed)
    assert {e["attempt"] for e in ends if e["partition"] == 2} == {1, 2, 3}


def test_failing_task_names_dataset_partition_and_cause(ctx):
    def boom(x):
        if x == 5:
            raise ZeroDivisionError("no good")
        return x

    ds = ctx.parallelize(range(10), 4).map(boom)
    ds.name = "exploding"
    after = ds.map(lambda x: x + 1)
    with pytest.raises(TaskFailedError) as info:
        after.collect()
    err = info.value
    assert "exploding" in str(err) and "partition 2" in str(err) and "ZeroDivisionError" in str(err)
    assert err.dataset is ds and err.partition == 2 and err.attempts == 3
    assert isinstance(err.__cause__, ZeroDivisionError)


def test_failure_in_map_stage_fails_job(ctx):
    ds = ctx.parallelize(range(20), 4).map(lambda x: (x % 3, 1 // (x - 13)))
    with pytest.raises(TaskFailedError) as info:
        ds.reduce_by_key(lambda a, b: a + b).collect()
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert info.value.partition == 2


def test_context_usable_after_failed_job(ctx):
    with pytest.raises(TaskFailedError):
        ctx.parallelize([1, 0], 2).map(lambda x: 1 // x).collect()
    assert ctx.parallelize(range(5), 2).sum() == 10
    assert all(m["execution_memory_used"] == 0 for m in ctx.metrics(by_executor=True).values())


def _shuffle_files(ctx, kind):
    """Map outputs, whichever executor wrote them (each has its own subdirectory)."""
    return sorted(glob.glob(os.path.join(ctx.shuffle_dirs[0], "**", f"shuffle_*.{kind}"), recursive=True))


def test_deleted_shuffle_file_reruns_its_map_task(ctx, tmp_path):
    runs = Calls(tmp_path / "runs")

    def tag(x):
        runs.add(x)
        return (x % 5, x)

    pairs = ctx.parallelize(range(40), 4).map(tag)
    summed = pairs.reduce_by_key(lambda a, b: a + b, 3)
    expected = sorted({k: sum(x for x in range(40) if x % 5 == k) for k in range(5)}.items())
    assert sorted(summed.collect()) == expected
    assert len(runs) == 40
    # A second action on the same shuffle skips the map stage: its outputs are on disk.
    assert sorted(summed.collect()) == expected
    assert len(runs) == 40
    data_files = _shuffle_files(ctx, "data")
    assert len(data_files) == 4
    os.remove(data_files[1])
    assert sorted(summed.collect()) == expected
    assert len(runs) == 50  # exactly the one lost map task (10 records) ran again
    assert len(_shuffle_files(ctx, "data")) == 4


def test_corrupt_shuffle_file_is_detected_and_regenerated(ctx):
    ds = ctx.parallelize(range(100), 2).map(lambda x: (x % 4, x)).group_by_key(2).map_values(sorted)
    expected = sorted(ds.collect())
    path = _shuffle_files(ctx, "data")[0]
    with open(path, "r+b") as f:
        f.seek(5)
        byte = f.read(1)
        f.seek(5)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert sorted(ds.collect()) == expected
    kinds = [e["event"] for e in _events(ctx.config.event_log)]
    assert "FetchFailed" in kinds


def test_shuffle_loss_that_never_heals_fails_loudly(local_ctx, monkeypatch):
    ctx = local_ctx
    from strataflow.shuffle import FetchFailed

    def always_lost(output, reduce_id, shuffle_id, map_id):
        raise FetchFailed(shuffle_id, map_id, "device gone")

    monkeypatch.setattr(ctx._local_executor.runtime, "read_bucket", always_lost)  # how its reducers read
    ds = ctx.parallelize(range(10), 2).map(lambda x: (x, x)).partition_by(2)
    with pytest.raises(JobError, match="device gone") as info:
        ds.collect()
    assert "4 stage attempts" in str(info.value)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"memory": "lots"}, "memory"),
    ({"memory": "12XB"}, "memory"),
    ({"memory": -5}, "memory"),
    ({"memory": "10KB"}, "memory"),
    ({"parallelism": 0}, "parallelism"),
    ({"local_dirs": ["/dev/null/strataflow-test"]}, "local_dirs"),
    ({"shuffle_dirs": ["/dev/null/strataflow-test"]}, "shuffle_dirs"),
    ({"event_log": "/dev/null/dir/events.jsonl"}, "event_log"),
    ({"max_task_attempts": 0}, "max_task_attempts"),
])
def test_bad_configuration_fails_before_any_work(kwargs, fragment, tmp_path):
    before = set(os.listdir(tmp_path))
    kwargs.setdefault("local_dirs", [str(tmp_path)])
    with pytest.raises(ConfigError, match=fragment):
        Context(progress=False, **kwargs)
    assert set(os.listdir(tmp_path)) == before  # no working directory was made


def test_unwritable_directory_is_rejected(tmp_path):
    if os.geteuid() == 0:
        # root writes anywhere; a file in place of a directory still fails.
        target = tmp_path / "file"
        target.write_text("x")
        with pytest.raises(ConfigError, match="not a directory"):
            Context(local_dirs=[str(target)], progress=False)
    else:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        with pytest.raises(ConfigError, match="not writable"):
            Context(local_dirs=[str(ro)], progress=False)


@pytest.mark.parametrize("call", [
    lambda c: c.parallelize(range(3), 0),
    lambda c: c.range(10, num_partitions=-1),
    lambda c: c.parallelize(range(3), 2).repartition(0),
    lambda c: c.parallelize(range(3), 2).coalesce(0),
    lambda c: c.parallelize([(1, 2)], 2).reduce_by_key(max, 0),
])
def test_bad_partition_count_is_a_config_error(ctx, call):
    with pytest.raises(ConfigError, match="num_partitions"):
        call(ctx)


def test_stopped_context_refuses_jobs(tmp_path):
    c = Context(local_dirs=[str(tmp_path)], shuffle_dirs=[str(tmp_path)], progress=False)
    ds = c.parallelize(range(3), 1)
    c.stop()
    with pytest.raises(RuntimeError, match="stopped"):
        ds.collect()
