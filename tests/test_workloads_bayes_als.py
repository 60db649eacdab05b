"""The naive Bayes and ALS workloads: their generators' statistics and determinism, the
parsers, and each workload's own result check on every storage level and both APIs
under a memory budget small enough that cached blocks spill."""

from __future__ import annotations

import os

import numpy as np
import pytest

from strataflow.storage.level import StorageLevel
from strataflow.workloads.als_data import gen_als, hidden_factors, read_ratings
from strataflow.workloads.api import APIS, read_manifest, workload_module
from strataflow.workloads.bayes_data import (class_distributions, docs_table, gen_bayes, parse_doc, parse_docs,
                                             table_arrays)
from strataflow.workloads.runner import run_workload

LEVELS = StorageLevel.all()

# The smallest budget (1MB) and data that exceed it in both APIs, so blocks spill: the
# documents take ~2.0MB as Tables and ~3.6MB as records, the ratings (~50k) grouped by
# user and by item ~1.5MB as Tables and ~2MB as records. Small data keep the records
# runs short: they regroup the ratings whenever grouped blocks were dropped.
MEMORY = "1MB"
BAYES = dict(docs=6000, vocab=2000, classes=6, doc_length=40.0, class_share=0.05)
ALS = dict(users=900, items=550, density=0.1)


@pytest.fixture(scope="module")
def bayes_dir(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("bayes"))
    workload_module("bayes").gen(d, size=0, seed=7, **BAYES)
    return d


@pytest.fixture(scope="module")
def als_dir(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("als"))
    workload_module("als").gen(d, size=0, seed=7, **ALS)
    return d


def _read_docs(d: str):
    with open(os.path.join(d, read_manifest(d)["files"][0])) as f:
        return parse_docs(f.read().splitlines())


# -- bayes data ---------------------------------------------------------------------------------
def test_bayes_generator_statistics(bayes_dir):
    m = read_manifest(bayes_dir)
    assert (m["workload"], m["format"], m["docs"], m["classes"], m["vocab"]) == ("bayes", "text", 6000, 6, 2000)
    assert m["bytes"] == os.path.getsize(os.path.join(bayes_dir, m["files"][0]))
    labels, indptr, words, counts = _read_docs(bayes_dir)
    assert len(labels) == m["docs"] and indptr[-1] == m["pairs"] == len(words)
    # every class, about equally often
    per_class = np.bincount(labels, minlength=m["classes"])
    assert len(per_class) == m["classes"] and per_class.min() > 0.8 * m["docs"] / m["classes"]
    # word ids in range, increasing within a document, counts >= 1, lengths as asked
    assert words.min() >= 0 and words.max() < m["vocab"] and counts.min() >= 1
    doc_of = np.repeat(np.arange(len(labels)), np.diff(indptr))
    assert np.all((np.diff(words) > 0) | (np.diff(doc_of) > 0))
    tokens = np.add.reduceat(counts, indptr[:-1])
    assert abs(tokens.mean() - m["doc_length"]) < 0.05 * m["doc_length"]
    # sparse: a document holds fewer distinct words than tokens, and a tiny part of the vocabulary
    distinct = np.diff(indptr).mean()
    assert 0.5 * m["doc_length"] < distinct < m["doc_length"]
    assert distinct / m["vocab"] < 0.03
    # Zipf-like: the most frequent tenth of the words carries most of the tokens
    freq = np.sort(np.bincount(words, weights=counts, minlength=m["vocab"]))[::-1]
    assert freq[: m["vocab"] // 10].sum() > 0.5 * freq.sum()


def test_bayes_class_distributions_differ(bayes_dir):
    m = read_manifest(bayes_dir)
    labels, indptr, words, counts = _read_docs(bayes_dir)
    c, v = m["classes"], m["vocab"]
    emp = np.zeros((c, v))
    np.add.at(emp, (np.repeat(labels, np.diff(indptr)), words), counts)
    emp /= emp.sum(axis=1, keepdims=True)
    probs = class_distributions(c, v, m["seed"], m["zipf_s"], m["class_share"])
    assert np.allclose(probs.sum(axis=1), 1.0)
    # each class's word frequencies are nearest to its own distribution, by a clear margin
    dist = np.abs(emp[:, None, :] - probs[None, :, :]).sum(axis=2)  # L1, (empirical, true)
    margin = dist - np.diag(dist)[:, None]
    assert margin[~np.eye(c, dtype=bool)].min() > 0.02
    # the true distributions of two classes differ in most of the class-specific share
    between = np.abs(probs[:, None] - probs[None, :]).sum(axis=2)[~np.eye(c, dtype=bool)]
    assert between.min() > m["class_share"]


def test_bayes_generator_is_deterministic(tmp_path):
    small = dict(vocab=300, classes=3, doc_length=20, chunk_docs=64)
    a = gen_bayes(str(tmp_path / "a"), 200, seed=5, **small)
    b = gen_bayes(str(tmp_path / "b"), 200, seed=5, **small)
    c = gen_bayes(str(tmp_path / "c"), 200, seed=6, **small)
    read = lambda d: (tmp_path / d / "docs.txt").read_bytes()  # noqa: E731
    assert a == b and read("a") == read("b")
    assert read("a") != read("c")


def test_bayes_parsers_agree(bayes_dir):
    with open(os.path.join(bayes_dir, "docs.txt")) as f:
        lines = f.read().splitlines()[:500]
    labels, indptr, words, counts = parse_docs(lines)
    bytes_form = parse_docs([ln.encode() + b"\n" for ln in lines])
    for a, b in zip((labels, indptr, words, counts), bytes_form):
        assert np.array_equal(a, b)
    for k, line in enumerate(lines):
        label, w, c = parse_doc(line)
        assert label == labels[k]
        assert np.array_equal(w, words[indptr[k] : indptr[k + 1]])
        assert np.array_equal(c, counts[indptr[k] : indptr[k + 1]])
    t = docs_table(labels, indptr, words, counts).slice(100, 50)  # a sliced Table reads back right
    l2, p2, w2, c2 = table_arrays(t)
    assert np.array_equal(l2, labels[100:150]) and np.array_equal(p2, indptr[100:151] - indptr[100])
    lo, hi = indptr[100], indptr[150]
    assert np.array_equal(w2, words[lo:hi]) and np.array_equal(c2, counts[lo:hi])
    with pytest.raises(ValueError, match="malformed"):
        parse_docs(["1 2:3 4"])


# -- als data ---------------------------------------------------------------------------------
def test_als_generator_statistics(als_dir):
    m = read_manifest(als_dir)
    assert (m["workload"], m["users"], m["items"], m["rank"]) == ("als", 900, 550, 10)
    u, i, r = read_ratings(os.path.join(als_dir, m["files"][0]))
    assert len(r) == m["ratings"]
    assert u.min() >= 0 and u.max() < m["users"] and i.min() >= 0 and i.max() < m["items"]
    key = u * m["items"] + i
    assert np.all(np.diff(key) > 0)  # ordered by user then item, no pair twice
    pairs = m["users"] * m["items"]
    sd = np.sqrt(pairs * m["density"] * (1 - m["density"]))
    assert abs(len(r) - pairs * m["density"]) < 4 * sd
    # ratings are the hidden low-rank product plus noise of the stated size
    p, q = hidden_factors(m["users"], m["items"], m["rank"], m["seed"])
    resid = r - np.einsum("ij,ij->i", p[u], q[i])
    assert abs(resid.std() - m["noise"]) < 0.1 * m["noise"]
    assert 0.8 < r.std() < 1.25


def test_als_ratings_are_low_rank(tmp_path):
    m = gen_als(str(tmp_path), 120, 90, density=1.0, rank=10, noise=0.1, seed=3)
    u, i, r = read_ratings(os.path.join(tmp_path, m["files"][0]))
    assert len(r) == 120 * 90
    dense = np.zeros((120, 90))
    dense[u, i] = r
    s = np.linalg.svd(dense, compute_uv=False)
    energy = np.cumsum(s**2) / np.sum(s**2)
    assert energy[9] > 0.98  # a rank-10 SVD explains nearly all the variance
    assert energy[4] < 0.9  # and fewer ranks do not
    assert s[10] < 0.2 * s[9]


def test_als_generator_is_deterministic_and_formats_agree(tmp_path):
    kw = dict(density=0.2, seed=11)
    a = gen_als(str(tmp_path / "a"), 150, 80, **kw)
    b = gen_als(str(tmp_path / "b"), 150, 80, **kw)
    n = gen_als(str(tmp_path / "n"), 150, 80, fmt="npy", **kw)
    c = gen_als(str(tmp_path / "c"), 150, 80, density=0.2, seed=12)
    assert a == b and (tmp_path / "a" / "ratings.txt").read_bytes() == (tmp_path / "b" / "ratings.txt").read_bytes()
    assert (tmp_path / "a" / "ratings.txt").read_bytes() != (tmp_path / "c" / "ratings.txt").read_bytes()
    ta = read_ratings(str(tmp_path / "a" / "ratings.txt"))
    tn = read_ratings(str(tmp_path / "n" / "ratings.npy"))
    assert n["ratings"] == a["ratings"]
    for x, y in zip(ta, tn):
        assert np.array_equal(x, y)


# -- the workloads, checked against numpy, on every level and API ---------------------------------
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("level", LEVELS, ids=str)
def test_bayes_result_check(bayes_dir, api, level):
    r = run_workload("bayes", bayes_dir, api=api, level=level.name, memory=MEMORY, parallelism=2)
    assert r["result_check"] == "ok"
    extra = r["extra"]
    assert extra["docs"] == 6000 and extra["classes"] == 6
    assert 0.5 < extra["accuracy"] < 1.0  # errors exist, so the check compares predictions that matter
    assert len(r["iteration_s"]) == 2
    if level == StorageLevel.MEMORY_AND_DISK:  # the documents spill: both tiers hold blocks
        assert r["cached_memory_bytes"] > 0 and r["cached_disk_bytes"] > 0


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("level", LEVELS, ids=str)
def test_als_result_check(als_dir, api, level):
    r = run_workload("als", als_dir, api=api, level=level.name, memory=MEMORY, parallelism=2, iterations=3)
    assert r["result_check"] == "ok"
    rmse = r["extra"]["rmse_per_iteration"]
    assert len(rmse) == len(r["iteration_s"]) == 3
    assert all(b < a for a, b in zip(rmse, rmse[1:]))
    persisted = [d["name"].split("#")[0] for d in r["storage"]]
    assert persisted == (["ratings by user", "ratings by item"] if level.is_valid else [])
    if level == StorageLevel.MEMORY_AND_DISK:
        assert r["cached_memory_bytes"] > 0 and r["cached_disk_bytes"] > 0


def test_als_npy_input(tmp_path):
    d = str(tmp_path)
    workload_module("als").gen(d, size=0, seed=2, fmt="npy", users=200, items=150, density=0.1)
    for api in APIS:
        r = run_workload("als", d, api=api, level="MEMORY_ONLY", memory="64MB", parallelism=2, iterations=2)
        assert r["result_check"] == "ok", r["result_check"]
