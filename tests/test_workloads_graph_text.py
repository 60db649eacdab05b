"""The ``pagerank``, ``sort``, ``wordcount`` and ``rddtest`` workloads: the generators'
statistics (degree skew, Zipf's law, record layout) and determinism, and each workload's
result check on every storage level and both APIs under a memory budget small enough
that blocks reach the disk or are dropped and recomputed."""

from __future__ import annotations

import hashlib
import math
import os
import zlib
from collections import Counter

import numpy as np
import pytest

from conftest import every_pair
from strataflow.storage.level import StorageLevel
from strataflow.workloads import pagerank_job, rddtest_job, sort_job, wordcount_job
from strataflow.workloads.api import WORKLOADS, read_manifest, workload_module
from strataflow.workloads.runner import run_workload

MEMORY = "1MB"  # the smallest budget a Context accepts; every data set below is larger
LEVELS = [lv.name for lv in StorageLevel.all()]
APIS = ["records", "batches"]
NAMES = ["pagerank", "sort", "wordcount", "rddtest"]

EDGES = 100_000  # 1.6 MB as batches (the records path runs on a smaller graph: it is ~20x slower)
SMALL_EDGES = 24_000  # ~1.1 MB as records
SORT_RECORDS = 20_000  # 2 MB
WORDS_BYTES = 1_200_000  # ~200k words
RDD_BYTES = 3 << 20  # 3 MB in 4 tasks


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _data_file(d: str) -> str:
    return os.path.join(d, read_manifest(d)["files"][0])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """``(workload, variant) -> data directory``, generated once for the module."""
    base = tmp_path_factory.mktemp("graph-text")
    out = {}
    for variant, edges, fmt in (("npy", EDGES, "npy"), ("small", SMALL_EDGES, "npy"), ("text", SMALL_EDGES, "text")):
        d = str(base / f"pagerank-{variant}")
        pagerank_job.gen_edges(d, edges, edges // 10, seed=11, fmt=fmt)
        out["pagerank", variant] = d
        d = str(base / f"sort-{fmt}")
        sort_job.gen_records(d, SORT_RECORDS, seed=12, fmt=fmt)
        out["sort", fmt] = d
    d = str(base / "wordcount")
    wordcount_job.gen_text(d, WORDS_BYTES, seed=13, vocabulary=5_000)
    out["wordcount", "text"] = d
    for kind in rddtest_job.KINDS:
        d = str(base / f"rddtest-{kind}")
        rddtest_job.gen(d, size=RDD_BYTES, seed=14, kind=kind, partitions=4)
        out["rddtest", kind] = d
    return out


# -- registry and the gen contract -----------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_registered_and_gen_follows_the_contract(name, tmp_path):
    assert WORKLOADS[name] == f"{name}_job"
    mod = workload_module(name)
    seen: list[int] = []
    m = mod.gen(str(tmp_path), size=300_000, seed=3, fmt="text", progress=seen.append)
    assert m == read_manifest(str(tmp_path))
    assert m["workload"] == name and m["seed"] == 3
    if name == "rddtest":
        assert m["files"] == [] and os.listdir(tmp_path) == ["manifest.json"]  # the tasks generate the data
        assert m["bytes"] == 300_000 and m["partitions"] == 1
        return
    assert 0.9 * 300_000 < m["bytes"] <= 1.02 * 300_000, m["bytes"]  # size is honoured
    assert m["bytes"] == os.path.getsize(_data_file(str(tmp_path)))
    unit = {"pagerank": "edges", "sort": "records", "wordcount": "lines"}[name]
    assert sum(seen) == m[unit]


def test_unknown_formats_and_kinds_are_refused(tmp_path):
    with pytest.raises(ValueError, match="format"):
        pagerank_job.gen(str(tmp_path / "a"), size=1000, fmt="parquet")
    with pytest.raises(ValueError, match="format"):
        sort_job.gen(str(tmp_path / "b"), size=1000, fmt="parquet")
    with pytest.raises(ValueError, match="format"):
        wordcount_job.gen(str(tmp_path / "c"), size=1000, fmt="npy")
    with pytest.raises(ValueError, match="kind"):
        rddtest_job.gen(str(tmp_path / "d"), size=1000, kind="ints")


# -- pagerank: the graph ---------------------------------------------------------------------------------
def test_pagerank_degrees_are_skewed_with_heavy_tails(data):
    d = data["pagerank", "npy"]
    m = read_manifest(d)
    e = pagerank_job.read_all_edges(d, m)
    assert e.shape == (EDGES, 2) and e.min() >= 0 and e.max() < m["vertices"]
    for col, exponent in ((0, m["out_exponent"]), (1, m["in_exponent"])):
        deg = np.bincount(e[:, col], minlength=m["vertices"])
        ordered = np.sort(deg)[::-1]
        assert deg.mean() == pytest.approx(10.0)
        assert ordered[0] > 25 * deg.mean()  # hubs far above the mean degree
        top = ordered[: len(ordered) // 100].sum() / ordered.sum()
        assert top > 0.1  # the top 1% of vertices hold over 10% of the edges (1% if uniform)
        ranks = np.arange(1, 101)
        slope = np.polyfit(np.log(ranks), np.log(ordered[:100]), 1)[0]
        assert abs(-slope - exponent) < 0.15, (col, slope)  # Zipf: degree ~ rank^-exponent
    out_deg = np.bincount(e[:, 0])
    in_deg = np.bincount(e[:, 1])
    assert in_deg.max() > out_deg.max()  # the in-degree exponent is the larger one
    assert int(np.argmax(in_deg)) != 0 and int(np.argmax(out_deg)) != int(np.argmax(in_deg))


def test_pagerank_generation_is_deterministic_and_formats_agree(data, tmp_path):
    digests = {}
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        m = pagerank_job.gen_edges(str(tmp_path / name), 70_000, 7_000, seed=seed, fmt="text")  # two blocks
        digests[name] = _digest(_data_file(str(tmp_path / name)))
    assert digests["a"] == digests["b"] != digests["c"]
    t = pagerank_job.read_all_edges(data["pagerank", "text"], read_manifest(data["pagerank", "text"]))
    n = pagerank_job.read_all_edges(data["pagerank", "small"], read_manifest(data["pagerank", "small"]))
    assert np.array_equal(t, n)
    with open(_data_file(data["pagerank", "text"])) as f:
        s, dst = f.readline().rstrip("\n").split(" ")
    assert (int(s), int(dst)) == tuple(t[0])


def test_pagerank_reference_keeps_mass_and_check_catches_a_wrong_result(data):
    d = data["pagerank", "npy"]
    e = pagerank_job.read_all_edges(d, read_manifest(d))
    ranks, present = pagerank_job.pagerank_numpy(e, 5)
    n = int(present.sum())
    assert (present & (np.bincount(e[:, 0], minlength=len(present)) == 0)).any()  # dangling vertices exist
    assert math.isclose(ranks.sum(), n, rel_tol=1e-12)
    ids = np.flatnonzero(present)
    good = ranks[ids]
    assert pagerank_job._check(ids, good, n, e, 5, 1e-9) == "ok"
    assert "differ" in pagerank_job._check(ids, good, n, e, 4, 1e-9)
    bad = good.copy()
    bad[0] *= 1.001
    assert "differ" in pagerank_job._check(ids, bad, n, e, 5, 1e-9)
    assert "vertices differ" in pagerank_job._check(ids[1:], good[1:], n - 1, e, 5, 1e-9)


def test_pagerank_batch_contributions_sum_runs_of_destinations():
    a = np.array([[0, 1], [2, 1], [3, 4], [0, 4], [0, 7]], dtype=np.int64)
    share = np.array([1.0, 0, 10.0, 100.0])
    dst, sums = pagerank_job.contributions_batch(a, share)
    assert dst.tolist() == [1, 4, 7] and sums.tolist() == [11.0, 101.0, 1.0]


# -- sort: the records ---------------------------------------------------------------------------------
def test_sort_records_are_100_bytes_with_unique_keys(data):
    with open(_data_file(data["sort", "text"]), "rb") as f:
        lines = f.read().split(b"\n")
    assert lines[-1] == b"" and len(lines) - 1 == SORT_RECORDS
    lines = lines[:-1]
    assert {len(ln) for ln in lines} == {100}
    keys = [ln[:10] for ln in lines]
    assert len(set(keys)) == SORT_RECORDS  # unique keys
    assert all(0x20 <= c <= 0x7E for ln in lines[:500] for c in ln)  # printable
    assert len({c for k in keys for c in k}) == 95  # keys use all 95 printable characters
    assert [int(ln[12:44], 16) for ln in lines[:3]] == [0, 1, 2]  # the row number in the value
    b = np.load(_data_file(data["sort", "npy"]))
    assert b.shape == (SORT_RECORDS, 100) and b.dtype == np.uint8
    assert len({bytes(r[:10]) for r in b}) == SORT_RECORDS
    assert int.from_bytes(bytes(b[7, 10:18]), "big") == 7
    assert np.bincount(b[:, :10].ravel(), minlength=256).min() > 0  # binary keys: every byte value


@pytest.mark.parametrize("fmt", ["text", "npy"])
def test_sort_generation_is_deterministic(fmt, tmp_path):
    digests = {}
    for name, seed, n in (("a", 5, 40_000), ("b", 5, 40_000), ("c", 6, 40_000), ("prefix", 5, 1_000)):
        m = sort_job.gen_records(str(tmp_path / name), n, seed=seed, fmt=fmt)
        digests[name] = _digest(_data_file(str(tmp_path / name)))
        assert m["records"] == n
    assert digests["a"] == digests["b"] != digests["c"]
    if fmt == "text":  # the data depend on the seed, not on how much is written
        with open(_data_file(str(tmp_path / "a")), "rb") as fa, open(_data_file(str(tmp_path / "prefix")), "rb") as fp:
            assert fa.read(101_000) == fp.read()


def test_sort_check_catches_unsorted_and_altered_output(data, tmp_path):
    path = _data_file(data["sort", "npy"])
    recs = np.load(path)
    hi, lo = sort_job.key_parts(recs)
    ordered = recs[np.lexsort((lo, hi))]
    assert sort_job.keys_sorted(ordered) and not sort_job.keys_sorted(recs)
    assert sorted(bytes(r[:10]) for r in recs) == [bytes(r[:10]) for r in ordered]  # integer order = memcmp
    out = tmp_path / "out"
    out.mkdir()
    ordered[:10_000].tofile(out / "part-00000")
    ordered[10_000:].tofile(out / "part-00001")
    files = sort_job.part_files(str(out))
    assert sort_job._check(files, False, path) == "ok"
    ordered[10_000:].tofile(out / "part-00000")  # the two halves swapped
    ordered[:10_000].tofile(out / "part-00001")
    assert "not sorted" in sort_job._check(files, False, path)
    altered = ordered.copy()
    altered[5, 50] ^= 1
    altered[:10_000].tofile(out / "part-00000")
    altered[10_000:].tofile(out / "part-00001")
    assert "checksum" in sort_job._check(files, False, path)
    altered[:9_999].tofile(out / "part-00000")
    assert "records" in sort_job._check(files, False, path)


# -- wordcount: the text ----------------------------------------------------------------------------------
@pytest.mark.parametrize("exponent", [1.0, 1.3])
def test_wordcount_follows_zipfs_law(exponent, data, tmp_path):
    if exponent == 1.0:
        d = data["wordcount", "text"]
    else:
        d = str(tmp_path / "wc")
        wordcount_job.gen_text(d, 600_000, seed=2, vocabulary=5_000, exponent=exponent)
    m = read_manifest(d)
    counts = wordcount_job.count_file(_data_file(d))
    assert sum(counts.values()) == m["words"] and len(counts) <= m["vocabulary"]
    freq = np.array(sorted(counts.values(), reverse=True), dtype=float)
    ranks = np.arange(1, 201)
    slope = np.polyfit(np.log(ranks), np.log(freq[:200]), 1)[0]
    assert abs(-slope - exponent) < 0.1, slope  # rank-frequency: f ~ r^-exponent
    vocab = wordcount_job.vocabulary_words(m["vocabulary"], m["seed"])
    top = counts.most_common(3)
    assert [w.encode() for w, _ in top] == vocab[:3]  # the first words of the vocabulary lead
    with open(_data_file(d)) as f:
        per_line = [len(line.split()) for line in f]
    assert len(per_line) == m["lines"] and min(per_line) >= 5 and max(per_line) <= 15


def test_wordcount_generation_is_deterministic(tmp_path):
    digests = {}
    for name, seed, size in (("a", 5, 300_000), ("b", 5, 300_000), ("c", 6, 300_000), ("small", 5, 20_000)):
        wordcount_job.gen_text(str(tmp_path / name), size, seed=seed, vocabulary=2_000)
        digests[name] = _digest(_data_file(str(tmp_path / name)))
    assert digests["a"] == digests["b"] != digests["c"]
    with open(_data_file(str(tmp_path / "a")), "rb") as fa, open(_data_file(str(tmp_path / "small")), "rb") as fs:
        small = fs.read()
        assert fa.read(len(small)) == small and small.endswith(b"\n")  # whole lines, a prefix of the larger


def test_split_words_agrees_with_str_split():
    import pyarrow as pa

    lines = ["  alpha beta\tgamma ", "", "delta", " ", "x  y", "last"]
    arr = pa.array(["skipped"] + lines).slice(1)  # an offset into the buffers, as a sliced column has
    got = wordcount_job.split_words(pa.table({"line": arr})).column(0).to_pylist()
    assert got == [w for line in lines for w in line.split()]
    assert wordcount_job._check({"a": 2}, 2, Counter({"a": 2})) == "ok"
    assert "differ" in wordcount_job._check({"a": 1, "b": 1}, 2, Counter({"a": 2}))


# -- rddtest ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", rddtest_job.KINDS)
def test_rddtest_payload_is_deterministic_and_both_forms_hold_it(kind):
    a = rddtest_job.payload(kind, 2, 100, seed=1)
    assert zlib.crc32(a) == zlib.crc32(rddtest_job.payload(kind, 2, 100, seed=1))
    assert zlib.crc32(a) != zlib.crc32(rddtest_job.payload(kind, 3, 100, seed=1))
    assert zlib.crc32(a) != zlib.crc32(rddtest_job.payload(kind, 2, 100, seed=2))
    recs = rddtest_job.partition_records(kind, "records", a)
    batch = rddtest_job.partition_records(kind, "batches", a)
    assert len(recs) == 100 and len(batch) == 100
    if kind == "strings":
        assert all(isinstance(s, str) and len(s) == 100 for s in recs)
        assert batch.column(0).to_pylist() == recs
    else:
        assert all(r.shape == (20,) and r.base is None for r in recs)  # each record owns its data
        assert np.array_equal(np.stack(recs), batch)
    assert rddtest_job._payload_crc(kind, recs) == rddtest_job._payload_crc(kind, batch) == zlib.crc32(a)


# -- the workloads on every level and both APIs ------------------------------------------------------------
CASES = [("pagerank", "npy"), ("sort", "text"), ("wordcount", "text"), ("rddtest", "strings"), ("rddtest", "vectors")]


@pytest.mark.parametrize("case, api, level", every_pair(CASES, APIS, LEVELS), ids=lambda v: "-".join(v) if isinstance(v, tuple) else v)
def test_result_check_passes_on_every_level(case, api, level, data):
    name, variant = case
    opts = {"iterations": 3} if name == "pagerank" else {}
    if name == "pagerank" and api == "records":
        variant = "small"
    report = run_workload(name, data[name, variant], api=api, level=level, memory=MEMORY, parallelism=2, **opts)
    assert report["result_check"] == "ok"
    extra = report["extra"]
    if name == "pagerank":
        assert len(report["iteration_s"]) == 3 and extra["rank_sum"] == pytest.approx(extra["vertices"], rel=1e-9)
    elif name == "sort":
        assert extra["records"] == SORT_RECORDS and extra["partitions"] == 8
    elif name == "wordcount":
        assert extra["words"] == read_manifest(data[name, variant])["words"]
    else:
        assert extra["cache_s"] > 0 and extra["read_s"] > 0 and extra["cached_bytes"] == report["cached_bytes"]
    if level in ("MEMORY_AND_DISK", "DISK_ONLY"):
        assert report["cached_disk_bytes"] > 0  # the budget is small enough that blocks reach the disk
    if level == "NONE":
        assert report["cached_bytes"] == 0


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("name,variant", [("pagerank", "text"), ("sort", "npy")])
def test_other_formats(name, variant, api, data):
    report = run_workload(name, data[name, variant], api=api, level="MEMORY_AND_DISK", memory=MEMORY, parallelism=2)
    assert report["result_check"] == "ok"
    if name == "pagerank":
        assert len(report["iteration_s"]) == 5  # the default


def test_options_reach_the_workloads(data, tmp_path):
    out = str(tmp_path / "sorted")
    rep = run_workload("sort", data["sort", "npy"], api="batches", level="MEMORY_ONLY", memory="64MB",
                       parallelism=2, num_partitions=3, output=out)
    assert rep["result_check"] == "ok" and rep["extra"]["partitions"] == 3
    assert len(sort_job.part_files(out)) == 3 and os.path.exists(os.path.join(out, "_SUCCESS"))  # kept
    rep = run_workload("rddtest", data["rddtest", "strings"], api="batches", level="MEMORY_ONLY", memory="64MB",
                       parallelism=2, kind="vectors", partitions=2, iterations=3)
    assert rep["result_check"] == "ok" and rep["extra"]["kind"] == "vectors" and len(rep["iteration_s"]) == 3
    assert RDD_BYTES - 160 < rep["extra"]["payload_bytes"] <= RDD_BYTES <= rep["cached_bytes"]
