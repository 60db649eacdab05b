"""Workload references kept per process (``workloads/reference.py``): computed once for
the same input and parameters, computed again when either changes, bounded in number,
and every run's result still compared with the kept reference."""

from __future__ import annotations

import os

import numpy as np
import pytest

from strataflow.workloads import kmeans_job
from strataflow.workloads.reference import MAX_REFERENCES, reference
from strataflow.workloads.runner import run_workload


class Counting:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.calls


def test_same_input_and_parameters_compute_once(tmp_path):
    f = tmp_path / "in.txt"
    f.write_text("1 2 3\n")
    compute = Counting()
    init = np.arange(6.0).reshape(2, 3)
    assert reference("w", compute, inputs=[str(f)], init=init, iterations=3) == 1
    assert reference("w", compute, inputs=[str(f)], init=init.copy(), iterations=3) == 1  # equal array, kept
    assert compute.calls == 1
    # any parameter that differs is another reference: an array's values, a number, the workload
    assert reference("w", compute, inputs=[str(f)], init=init + 1e-12, iterations=3) == 2
    assert reference("w", compute, inputs=[str(f)], init=init, iterations=4) == 3
    assert reference("v", compute, inputs=[str(f)], init=init, iterations=3) == 4
    assert reference("w", compute, inputs=[str(f)], init=init.astype(np.float32), iterations=3) == 5


def test_a_rewritten_input_gets_a_new_reference(tmp_path):
    f = tmp_path / "in.txt"
    f.write_text("1 2 3\n")
    compute = Counting()
    assert reference("w", compute, inputs=[str(f)]) == 1
    f.write_text("1 2 4\n")  # same size: the modification time tells
    st = os.stat(f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert reference("w", compute, inputs=[str(f)]) == 2
    f.write_text("1 2 3 4\n")
    assert reference("w", compute, inputs=[str(f)]) == 3
    # a directory input: any file added under it
    d = tmp_path / "parts"
    d.mkdir()
    (d / "part-0").write_text("a")
    assert reference("w", compute, inputs=[str(d)]) == 4
    assert reference("w", compute, inputs=[str(d)]) == 4
    (d / "part-1").write_text("b")
    assert reference("w", compute, inputs=[str(d)]) == 5


def test_references_are_bounded_and_errors_are_clear(tmp_path):
    f = tmp_path / "in.txt"
    f.write_text("x")
    compute = Counting()
    for i in range(MAX_REFERENCES + 1):
        reference("w", compute, inputs=[str(f)], i=i)
    assert compute.calls == MAX_REFERENCES + 1
    reference("w", compute, inputs=[str(f)], i=MAX_REFERENCES)  # the newest is kept
    assert compute.calls == MAX_REFERENCES + 1
    reference("w", compute, inputs=[str(f)], i=0)  # the oldest went first
    assert compute.calls == MAX_REFERENCES + 2
    with pytest.raises(TypeError):
        reference("w", compute, inputs=[str(f)], p={1, 2})  # a set is not a parameter it can key on
    with pytest.raises(FileNotFoundError):
        reference("w", compute, inputs=[str(tmp_path / "missing")])


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    d = tmp_path_factory.mktemp("km-ref")
    kmeans_job.gen(str(d), size=0, points=4000, seed=5, fmt="text")
    return str(d)


def test_runs_share_the_reference_and_a_wrong_result_still_fails(points, monkeypatch):
    """Three K-means runs over the same data: the numpy reference runs once, the two right
    results pass, and a run whose engine result is off fails its check against the kept
    reference."""
    calls = []
    real_numpy = kmeans_job.kmeans_numpy
    monkeypatch.setattr(kmeans_job, "kmeans_numpy", lambda *a, **kw: calls.append(1) or real_numpy(*a, **kw))
    for level in ("MEMORY_ONLY", "DISK_ONLY"):
        r = run_workload("kmeans", points, level=level, memory="64MB", iterations=2,
                         context_options={"backend": "threads"})
        assert r["result_check"] == "ok", r["result_check"]
    assert len(calls) == 1

    real_kmeans = kmeans_job.kmeans

    def off(*a, **kw):
        res = real_kmeans(*a, **kw)
        res.centres = res.centres + 1e-3
        return res

    monkeypatch.setattr(kmeans_job, "kmeans", off)
    r = run_workload("kmeans", points, level="MEMORY_ONLY", memory="64MB", iterations=2,
                         context_options={"backend": "threads"})
    assert "centres differ" in r["result_check"]
    assert len(calls) == 1
