"""The labelled-point workloads ``lr``, ``linear`` and ``svm`` (strataflow/workloads/glm.py):
the generator's statistics, determinism and chunk independence, and each workload's
result check (the same gradient descent as a plain numpy loop) on every storage level
and both APIs under a memory budget small enough that blocks spill or are recomputed."""

from __future__ import annotations

import hashlib
import math
import os

import numpy as np
import pytest

from conftest import every_pair
from strataflow.storage.level import StorageLevel
from strataflow.workloads import glm
from strataflow.workloads.api import WORKLOADS, read_manifest, workload_module
from strataflow.workloads.runner import run_workload

POINTS = 12_000  # about 1.5 MB as text, 1.6 MB as batches: over the 1MB budget
DIMS = 16
MEMORY = "1MB"  # the smallest budget a Context accepts
LEVELS = [lv.name for lv in StorageLevel.all()]


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """``(kind, fmt) -> data directory``, generated once for the module."""
    base = tmp_path_factory.mktemp("glm")
    out = {}
    for kind in glm.KINDS:
        for fmt in glm.FORMATS:
            d = str(base / f"{kind}-{fmt}")
            glm.gen_glm(kind, d, POINTS, DIMS, seed=7, fmt=fmt)
            out[kind, fmt] = d
    return out


def _xy(d):
    return glm.read_all_points(d, read_manifest(d))


# -- registry and contract ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", glm.KINDS)
def test_registered_and_gen_follows_the_contract(kind, tmp_path):
    assert WORKLOADS[kind] == f"{kind}_job"
    mod = workload_module(kind)
    seen = []
    m = mod.gen(str(tmp_path), size=200_000, seed=3, fmt="text", progress=seen.append, dims=10, chunk_rows=500)
    assert m == read_manifest(str(tmp_path))
    assert m["workload"] == kind and m["format"] == "text" and m["dims"] == 10
    assert sum(seen) == m["points"] and len(seen) == math.ceil(m["points"] / 500)
    assert 0.8 * 200_000 < m["bytes"] < 1.2 * 200_000, m["bytes"]  # size is honoured roughly
    with open(os.path.join(str(tmp_path), m["files"][0])) as f:
        first = f.readline().split(" ")
    assert len(first) == 11  # "label f1 ... f10"
    if kind != "linear":
        assert first[0] in ("0", "1")


# -- generator statistics ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["lr", "svm"])
def test_binary_labels_are_balanced(kind, data):
    x, y = _xy(data[kind, "text"])
    assert set(np.unique(y)) == {0.0, 1.0}
    assert 0.45 < y.mean() < 0.55
    assert read_manifest(data[kind, "text"])["positives"] == int(y.sum())


def test_linear_labels_are_the_margin_plus_the_stated_noise(data):
    d = data["linear", "text"]
    m = read_manifest(d)
    x, y = _xy(d)
    resid = y - x @ np.asarray(m["hidden_weights"])
    assert abs(resid.mean()) < 0.03
    assert abs(resid.std() - m["noise"]) < 0.03
    assert abs(x.mean()) < 0.02 and abs(x.std() - 1.0) < 0.02  # standard normal features


def test_lr_labels_follow_the_sigmoid(data):
    d = data["lr", "text"]
    x, y = _xy(d)
    p = 1.0 / (1.0 + np.exp(-(x @ np.asarray(read_manifest(d)["hidden_weights"]))))
    # the labels are Bernoulli(p): their mean, and their mean where p is high or low, match p's
    assert abs(y.mean() - p.mean()) < 0.02
    assert abs(y[p > 0.8].mean() - p[p > 0.8].mean()) < 0.02
    assert abs(y[p < 0.2].mean() - p[p < 0.2].mean()) < 0.02


@pytest.mark.parametrize("kind", glm.KINDS)
def test_hidden_weights_are_recoverable(kind, data):
    d = data[kind, "text"]
    w = np.asarray(read_manifest(d)["hidden_weights"])
    x, y = _xy(d)
    if kind == "linear":
        sol = np.linalg.lstsq(x, y, rcond=None)[0]
        assert np.allclose(sol, w, atol=0.03)
    else:
        sol = glm.train_numpy(x, y, kind, iterations=50).weights
    assert np.corrcoef(sol, w)[0, 1] > 0.98


def test_text_and_npy_hold_the_same_numbers(data):
    for kind in glm.KINDS:
        xt, yt = _xy(data[kind, "text"])
        xn, yn = _xy(data[kind, "npy"])
        assert np.array_equal(xt, xn) and np.array_equal(yt, yn), kind


@pytest.mark.parametrize("fmt", glm.FORMATS)
def test_generation_is_deterministic_and_independent_of_the_chunk_size(fmt, tmp_path):
    digests = {}
    for name, seed, chunk in [("a", 5, glm.CHUNK_ROWS), ("b", 5, glm.CHUNK_ROWS), ("small", 5, 37), ("other", 6, 37)]:
        d = str(tmp_path / name)
        m = glm.gen_glm("linear", d, 2_000, 12, seed=seed, fmt=fmt, chunk_rows=chunk)
        digests[name] = _digest(os.path.join(d, m["files"][0]))
    assert digests["a"] == digests["b"] == digests["small"]
    assert digests["other"] != digests["a"]


def test_lr_and_svm_generation_is_independent_of_the_chunk_size(tmp_path):
    for kind in ("lr", "svm"):
        big = glm.gen_glm(kind, str(tmp_path / f"{kind}1"), 3_000, 8, seed=1, chunk_rows=1 << 16)
        small = glm.gen_glm(kind, str(tmp_path / f"{kind}2"), 3_000, 8, seed=1, chunk_rows=100)
        assert big["hidden_weights"] == small["hidden_weights"]
        assert _digest(str(tmp_path / f"{kind}1" / "points.txt")) == _digest(str(tmp_path / f"{kind}2" / "points.txt"))


# -- the gradients ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", glm.KINDS)
def test_batch_gradient_matches_finite_differences(kind):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 5))
    y = (rng.random(200) < 0.5).astype(float) if kind != "linear" else rng.standard_normal(200)
    w = rng.standard_normal(5) * 0.3
    grad, loss, _ = glm.MODELS[kind].gradient(x, y, w)
    eps = 1e-6
    for j in range(5):
        e = np.zeros(5)
        e[j] = eps
        up = glm.MODELS[kind].gradient(x, y, w + e)[1]
        down = glm.MODELS[kind].gradient(x, y, w - e)[1]
        assert math.isclose((up - down) / (2 * eps), grad[j], rel_tol=1e-4, abs_tol=1e-4)
    # records and a batch give the same partial
    recs = [(float(b), a) for a, b in zip(x, y)]
    batch = np.column_stack([y, x])
    for a, b in zip(glm.partial_gradient(glm.MODELS[kind], recs, w), glm.partial_gradient(glm.MODELS[kind], batch, w)):
        assert np.allclose(a, b, rtol=1e-12)


def test_check_catches_a_wrong_result(data):
    d = data["lr", "npy"]
    m = read_manifest(d)
    x, y = _xy(d)
    good = glm.train_numpy(x, y, "lr", 5)
    good.points = len(y)
    assert glm._check("lr", good, d, m, 5, 1.0, 0.0, 1e-9) == "ok"
    bad = glm.train_numpy(x, y, "lr", 5, step=1.001)
    bad.points = len(y)
    assert "weights differ" in glm._check("lr", bad, d, m, 5, 1.0, 0.0, 1e-9)


# -- the workloads on every level and both APIs ---------------------------------------------------------------
@pytest.mark.parametrize("kind, api, level", every_pair(list(glm.KINDS), ["records", "batches"], LEVELS))
def test_result_check_passes_on_every_level(kind, api, level, data):
    report = run_workload(kind, data[kind, "text"], api=api, level=level, memory=MEMORY, parallelism=2)
    assert report["result_check"] == "ok"
    extra = report["extra"]
    assert len(report["iteration_s"]) == 5 and len(extra["losses"]) == 5
    assert extra["points"] == POINTS
    assert extra["loss"] < extra["losses"][0]
    assert extra["hidden_weights_cosine"] > 0.95
    if kind != "linear":
        assert extra["accuracy"] > 0.8
    if level.startswith("MEMORY_AND_DISK") or level == "DISK_ONLY":
        assert report["cached_disk_bytes"] > 0  # the budget is small enough that blocks reach the disk
    if level == "NONE":
        assert report["cached_bytes"] == 0


@pytest.mark.parametrize("api", ["records", "batches"])
@pytest.mark.parametrize("kind", glm.KINDS)
def test_npy_input(kind, api, data):
    report = run_workload(kind, data[kind, "npy"], api=api, level="MEMORY_AND_DISK_SER", memory=MEMORY,
                          parallelism=2, iterations=3)
    assert report["result_check"] == "ok"
    assert len(report["extra"]["losses"]) == 3


def test_options_reach_the_workload(data):
    base = run_workload("svm", data["svm", "npy"], level="MEMORY_ONLY", memory="64MB", parallelism=2)
    other = run_workload("svm", data["svm", "npy"], level="MEMORY_ONLY", memory="64MB", parallelism=2,
                         reg=0.0, step=0.5, num_partitions=3)
    assert base["extra"]["reg"] == 0.01 and other["extra"]["reg"] == 0.0 and other["extra"]["step"] == 0.5
    assert other["result_check"] == "ok" and other["extra"]["loss"] != base["extra"]["loss"]
    assert other["stages"][0]["tasks"] == 3


def test_wrong_data_is_refused(data):
    with pytest.raises(ValueError, match="not svm"):
        run_workload("svm", data["lr", "npy"], memory="64MB")
