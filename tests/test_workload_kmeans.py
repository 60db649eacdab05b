"""The K-means workload: HiBench-like generator statistics, the three data formats, the
parquet source, and the result check on every level and both APIs."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from strataflow.storage.level import StorageLevel
from strataflow.workloads import kmeans_job
from strataflow.workloads.kmeans import kmeans_partition
from strataflow.workloads.runner import run_workload


@pytest.fixture(scope="module")
def text_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("km")
    kmeans_job.gen(str(d), size=0, points=12000, seed=3, fmt="text")  # ~2 MB of points: spills at 1 MB
    return str(d)


def test_generator_statistics_follow_hibench(tmp_path):
    kmeans_job.gen(str(tmp_path), size=0, points=20000, seed=1, fmt="npy")
    pts = np.load(tmp_path / "points.npy")
    assert pts.shape == (20000, 20)
    # 5 generator centres, points split evenly: each fifth of the rows is one Gaussian blob
    blobs = pts.reshape(5, 4000, 20)
    means, stds = blobs.mean(axis=1), blobs.std(axis=1)
    assert ((means > -300) & (means < 1300)).all()  # centres from Uniform(0, 1000), spread <= 100
    assert (stds > 0).all() and (stds < 110).all()  # per-dimension std from Uniform(0.01, 100)
    assert len({tuple(np.round(m, -1)) for m in means}) == 5
    assert np.array_equal(pts, np.round(pts, 3))  # HiBench-like 3-decimal coordinates


def test_formats_hold_the_same_points_and_are_deterministic(tmp_path):
    arrays = {}
    for fmt in ("text", "npy", "parquet"):
        m = kmeans_job.gen(str(tmp_path / fmt), size=0, points=3000, seed=9, fmt=fmt)
        assert m["format"] == fmt and m["points"] == 3000
        arrays[fmt] = kmeans_job.read_all_points(str(tmp_path / fmt), m)
    assert np.array_equal(arrays["text"], arrays["npy"]) and np.array_equal(arrays["npy"], arrays["parquet"])
    other = kmeans_job.gen(str(tmp_path / "other"), size=0, points=3000, seed=10, fmt="npy")
    assert not np.array_equal(kmeans_job.read_all_points(str(tmp_path / "other"), other), arrays["npy"])
    assert pq.ParquetFile(tmp_path / "parquet" / "points.parquet").metadata.num_row_groups >= 1


def test_size_sets_the_point_count(tmp_path):
    m = kmeans_job.gen(str(tmp_path), size=1_000_000, seed=0, fmt="text")
    assert 0.7e6 < m["bytes"] < 1.3e6


def test_parquet_source_partitions_by_row_group(ctx, tmp_path):
    import pyarrow as pa

    t = pa.table({"a": np.arange(1000), "b": np.arange(1000) * 0.5})
    pq.write_table(t, tmp_path / "t.parquet", row_group_size=100)
    ds = ctx.parquet_file(tmp_path / "t.parquet", 4)
    parts = ds.collect_partitions()
    assert [p.num_rows for p in parts] == [200, 300, 200, 300]
    assert pa.concat_tables(parts).equals(t)
    assert ctx.parquet_file(tmp_path / "t.parquet", 50).num_partitions == 10  # at most one per row group
    assert ds.count() == 1000


@pytest.mark.parametrize("level", [l.name for l in StorageLevel.all()])
@pytest.mark.parametrize("api", ["records", "batches"])
def test_result_check_passes_on_every_level(text_data, level, api):
    r = run_workload("kmeans", text_data, api=api, level=level, memory="1MB", iterations=3)
    assert r["result_check"] == "ok", r["result_check"]
    assert len(r["iteration_s"]) == 3 and r["extra"]["cost"] > 0
    if level in ("MEMORY_AND_DISK", "DISK_ONLY", "MEMORY_AND_DISK_SER"):
        assert r["metrics"]["disk_bytes_written"] > 0  # 1 MB cannot hold ~2 MB of points and norms


def test_records_and_batches_agree(text_data):
    a = run_workload("kmeans", text_data, api="records", level="MEMORY_ONLY", memory="64MB", iterations=4)
    b = run_workload("kmeans", text_data, api="batches", level="MEMORY_ONLY", memory="64MB", iterations=4)
    assert a["extra"]["cost"] == pytest.approx(b["extra"]["cost"], rel=1e-9)


def test_total_time_leaves_the_independent_check_out(text_data, monkeypatch):
    """The runner's clock is a fake one that only the run and the check move: the K-means
    run takes 2 s of it, the numpy reference check 1 s; total_s must be the 2 s exactly."""
    from types import SimpleNamespace

    from strataflow.workloads import api, kmeans_job, runner

    now = 0.0

    def advancing(real, seconds):
        def call(*a, **kw):
            nonlocal now
            out = real(*a, **kw)
            now += seconds
            return out
        return call

    clock = SimpleNamespace(perf_counter=lambda: now)
    monkeypatch.setattr(runner, "time", clock)  # the runner's total ...
    monkeypatch.setattr(api, "time", clock)  # ... and the check's own timing
    monkeypatch.setattr(kmeans_job, "kmeans", advancing(kmeans_job.kmeans, 2.0))
    monkeypatch.setattr(kmeans_job, "kmeans_numpy", advancing(kmeans_job.kmeans_numpy, 1.0))
    r = run_workload("kmeans", text_data, api="batches", level="MEMORY_ONLY", memory="64MB", iterations=2)
    assert r["result_check"] == "ok"
    assert r["check_s"] == 1.0 and r["total_s"] == 2.0
    unchecked = run_workload("kmeans", text_data, api="batches", level="MEMORY_ONLY", memory="64MB",
                             iterations=2, check=False)
    assert unchecked["check_s"] == 0.0 and unchecked["total_s"] == 2.0


def _textbook_step(x, centres):
    """Lloyd's assignment step written the obvious way: a full distance matrix, argmin
    (ties to the lower index), ``np.add.at``."""
    d2 = ((x[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    label = d2.argmin(axis=1)
    sums = np.zeros_like(centres)
    np.add.at(sums, label, x)
    return sums, np.bincount(label, minlength=len(centres)).astype(float), float(d2.min(axis=1).sum())


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("rows", [1, 37, 20_000])  # 20,000 rows span several chunks, the last one short
def test_kernel_equals_the_textbook_step(rows, order):
    rng = np.random.default_rng(rows)
    x = np.asarray(rng.integers(0, 50, (rows, 3)).astype(float), order=order)
    centres = x[rng.choice(rows, 4)].copy() + 0.25
    got = kmeans_partition(x, centres)
    want = _textbook_step(x, centres)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2] == pytest.approx(want[2], rel=1e-9)


def test_kernel_gives_a_tie_to_the_lower_centre():
    """Two equal centres (a seeded sample can draw a duplicated point twice): each point
    counts once, for the first of them, as argmin decides; integer points on a grid also
    fall exactly halfway between other centres."""
    x = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    centres = np.array([[2.0, 0.0], [0.0, 0.0], [2.0, 0.0]])
    sums, counts, cost = kmeans_partition(x, centres)
    want = _textbook_step(x, centres)
    np.testing.assert_array_equal(counts, want[1])
    np.testing.assert_array_equal(sums, want[0])
    assert counts.tolist() == [3.0, 1.0, 0.0]  # [1,0] is halfway between 0 and 2: centre 0 (lower) wins
    assert cost == want[2]
