"""Every storage level with every policy gives the same results as NONE, on pipelines with
two or more persisted datasets, shuffles and unions.

Two pipelines, each run once at StorageLevel.NONE for the reference and then at every
level x policy x serializer under a 1 MB budget (half of it the protected storage
region), with 64-160 KB blocks, so that blocks really are dropped, spilled, re-cached,
discarded and recomputed while the results must not change:

- records: text-like tuples; three persisted datasets (pairs, a filtered subset, a
  reduce_by_key of the pairs), a join, a union of two persisted datasets, and several
  actions in a row so that cached blocks are read back;
- batches: from_numpy -> map_partitions -> persist, a second persisted dataset derived
  from it (row norms, as MLlib's K-means caches them), a repartition shuffle, a union,
  and iterative sums over both persisted datasets for four passes.

A roomy variant (64 MB) checks the other side: nothing is dropped and every read after
the first is a hit.
"""

from __future__ import annotations

import operator
from collections import Counter

import numpy as np
import pytest

from conftest import registered_policies
from strataflow import Context
from strataflow.storage.level import StorageLevel

pytestmark = pytest.mark.usefixtures("no_leaks")

LEVELS = StorageLevel.all()
POLICIES = registered_policies()
DISK_AND_MEMORY = {"MEMORY_AND_DISK", "MEMORY_AND_DISK_SER"}
MEMORY_ONLY = {"MEMORY_ONLY", "MEMORY_ONLY_SER", "OFF_HEAP"}

N_RECORDS = 4000
N_ROWS = 32768  # 4 float64 columns: 1 MB in 8 blocks of 128 KB; the norms 8 x 32 KB


def _context(tmp_path, memory, policy, serializer=None) -> Context:
    local, shuffle = tmp_path / "local", tmp_path / "shuffle"
    local.mkdir(exist_ok=True)
    shuffle.mkdir(exist_ok=True)
    return Context(memory=memory, parallelism=2, progress=False, policy=policy, serializer=serializer, locality_wait=60,
                   local_dirs=[str(local)], shuffle_dirs=[str(shuffle)])


# -- the pipelines ------------------------------------------------------------------------------
def _record(i: int) -> tuple:
    return (i, f"w{(i * 7919) % 131:03d}", "lorem ipsum dolor sit amet " * (1 + i % 13) + str(i))


def records_pipeline(c: Context, level, serializer) -> tuple[dict, list]:
    lines = c.parallelize([_record(i) for i in range(N_RECORDS)], 6)
    pairs = lines.map(lambda t: (t[1], (t[0], t[2]))).set_name("pairs").persist(level, serializer)
    subset = (lines.filter(lambda t: t[0] % 3 != 1).map(lambda t: (t[1], t[2][::-1]))
              .set_name("subset").persist(level, serializer))
    counts = (pairs.map_values(lambda v: len(v[1])).reduce_by_key(operator.add, 4)
              .set_name("counts").persist(level, serializer))
    out = {
        "pairs": pairs.count(),
        "counts": sorted(counts.collect()),
        "subset_sum": subset.values().map(len).sum(),
        "join": sorted(counts.join(subset.map_values(len).reduce_by_key(max, 3)).collect()),
        "union": sorted(pairs.map_values(lambda v: v[1]).union(subset.map_values(lambda s: s[::-1])).collect()),
        "union_keys": sorted(pairs.union(subset).count_by_key().items()),
        "pairs_again": pairs.map(lambda kv: kv[1][0]).sum(),
        "subset_first": subset.take(5),
        "counts_again": counts.values().sum(),
        "longest": pairs.map_values(lambda v: len(v[1])).reduce_by_key(max, 2).collect_partitions(),
    }
    return out, [pairs, subset, counts]


def batches_pipeline(c: Context, level, serializer) -> tuple[dict, list]:
    data = (np.arange(N_ROWS * 4, dtype=np.int64).reshape(N_ROWS, 4) * 7919 % 1009).astype(np.float64)
    x = c.from_numpy(data, 8).map_partitions(lambda a: a * 2.0 + 1.0).set_name("points")
    x = x.persist(level)  # the context's serializer
    norms = x.map_partitions(lambda a: (a * a).sum(axis=1)).set_name("norms").persist(level, serializer)
    out: dict = {"count": x.count()}
    shuffled = x.repartition(3)
    rows = np.concatenate(shuffled.collect_partitions())
    out["repartition"] = rows[np.lexsort(rows.T[::-1])]
    out["repartition_sizes"] = sorted(len(p) for p in shuffled.glom().collect())
    u = x.union(norms.map_partitions(lambda n: np.stack([n, n, -n, n], axis=1)))
    out["union_count"] = u.count()
    out["union_sum"] = u.sum()
    centre = np.zeros(4)
    for it in range(4):  # iterative passes over both persisted datasets
        stats = x.zip_partitions(
            norms, f=lambda a, n, c0=centre: [np.concatenate([np.abs(a - c0).sum(axis=0), [n.sum(), len(n)]])]
        ).collect()
        total = np.sum(stats, axis=0)
        out[f"pass{it}"] = total
        centre = np.floor(total[:4] / total[5]) + it
    out["norms_max"] = norms.map_partitions(lambda n: [n.max()]).collect()
    return out, [x, norms]


PIPELINES = {"records": records_pipeline, "batches": batches_pipeline}
_reference: dict = {}


def reference(tmp_path_factory, kind: str) -> dict:
    """The pipeline's results at StorageLevel.NONE (computed once per kind)."""
    if kind not in _reference:
        with _context(tmp_path_factory.mktemp(f"ref-{kind}"), "1MB", "no-recache") as c:
            out, _ = PIPELINES[kind](c, StorageLevel.NONE, None)
            m = c.metrics()
            assert m["misses"] == m["memory_hits"] == m["disk_hits"] == 0  # nothing persisted
        _reference[kind] = out
    return _reference[kind]


def assert_same(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for k in want:
        g, w = got[k], want[k]
        if isinstance(w, np.ndarray) or isinstance(g, np.ndarray):
            assert np.array_equal(np.asarray(g), np.asarray(w)), f"{k} differs from NONE"
        elif k == "longest":  # a list of partition values; compare them as record lists
            assert [sorted(p) for p in g] == [sorted(p) for p in w], f"{k} differs from NONE"
        else:
            assert g == w, f"{k} differs from NONE"


def test_the_references_match_plain_python(tmp_path_factory):
    """The NONE results are themselves right, so equality with them means something."""
    recs = [_record(i) for i in range(N_RECORDS)]
    ref = reference(tmp_path_factory, "records")
    counts: Counter = Counter()
    for _, w, s in recs:
        counts[w] += len(s)
    assert ref["pairs"] == N_RECORDS and ref["counts"] == sorted(counts.items())
    subset = [(w, s) for i, w, s in recs if i % 3 != 1]
    assert ref["subset_sum"] == sum(len(s) for _, s in subset)
    longest: dict = {}
    for w, s in subset:
        longest[w] = max(longest.get(w, 0), len(s))
    assert ref["join"] == sorted((w, (counts[w], longest[w])) for w in longest)
    assert ref["union"] == sorted([(w, s) for _, w, s in recs] + subset)
    assert ref["pairs_again"] == sum(range(N_RECORDS))

    data = (np.arange(N_ROWS * 4, dtype=np.int64).reshape(N_ROWS, 4) * 7919 % 1009).astype(np.float64) * 2 + 1
    ref = reference(tmp_path_factory, "batches")
    assert ref["count"] == N_ROWS and ref["union_count"] == 2 * N_ROWS
    assert np.array_equal(ref["repartition"], data[np.lexsort(data.T[::-1])])
    assert sum(ref["repartition_sizes"]) == N_ROWS
    assert np.array_equal(ref["pass0"], np.concatenate([data.sum(axis=0), [(data * data).sum(), N_ROWS]]))


def _cases():
    """Every pair of level, policy and serializer, per pipeline (not every triple: the
    serializer writes a block's bytes and the policy picks which block goes, so each
    meets the other at a level that spills, MEMORY_AND_DISK): every level with every
    policy (the default serializer), every level with every serializer (the ``spark``
    policy), every policy with every serializer (MEMORY_AND_DISK). 130 cases where the
    full product is 220."""
    seen = set()
    for kind, sers in (("records", [None, "pickle"]), ("batches", [None, "pickle", "arrow"])):
        triples = ([(level, policy, None) for level in LEVELS for policy in POLICIES]
                   + [(level, "spark", ser) for level in LEVELS for ser in sers]
                   + [(StorageLevel.MEMORY_AND_DISK, policy, ser) for policy in POLICIES for ser in sers])
        for level, policy, ser in triples:
            if (kind, level.name, policy, ser) not in seen:
                seen.add((kind, level.name, policy, ser))
                yield pytest.param(kind, level, policy, ser, id=f"{kind}-{level.name}-{policy}-{ser or 'auto'}")


@pytest.mark.parametrize("kind, level, policy, serializer", list(_cases()))
def test_every_level_policy_and_serializer_gives_the_results_of_none(tmp_path, tmp_path_factory, kind, level,
                                                                     policy, serializer):
    want = reference(tmp_path_factory, kind)
    ctx_ser = serializer if kind == "batches" else None  # records: the serializer comes per persist
    with _context(tmp_path, "1MB", policy, ctx_ser) as c:
        got, persisted = PIPELINES[kind](c, level, serializer)
        assert_same(got, want)
        m = c.metrics()
        status = c.storage_status()
        for per in c.metrics(by_executor=True).values():  # every executor kept to its share
            assert per["storage_memory_used"] <= c.config.executor_memory
        if not level.is_valid:
            assert len(status) == 0
            assert m["misses"] == m["memory_hits"] == m["disk_hits"] == m["blocks_dropped"] == 0
            return
        assert [s.level.split(":")[0] for s in status] == [level.name] * len(persisted)
        assert [s.serializer for s in status] == [serializer or "auto"] * len(persisted)
        blocks = sum(ds.num_partitions for ds in persisted)
        if level.auto:  # its own choices per dataset: tested in test_auto_level.py; here, the answers
            assert m["auto_level_changes"] >= len(persisted) and m["memory_hits"] + m["disk_hits"] > 0
            for ds in persisted:
                ds.unpersist()
            assert_nothing_stored(c)
            return
        if level.use_disk:  # every block is computed once: it is always in memory or on disk
            assert m["misses"] == blocks, m
        else:
            assert m["misses"] > blocks, m  # some were discarded and recomputed
        assert m["memory_hits"] + m["disk_hits"] > 0, "cached blocks were never read back"
        if level.name in DISK_AND_MEMORY:
            assert m["disk_hits"] > 0 and m["disk_bytes_written"] > 0, m
            if policy != "lineage":  # lineage may admit straight to disk instead of dropping
                assert m["blocks_dropped"] > 0, m
            if policy == "spark":
                assert m["blocks_recached"] > 0, m
        if level.name in MEMORY_ONLY:
            # blocks were discarded or never stored, and recomputed from lineage
            assert m["blocks_dropped"] + m["blocks_not_stored"] > 0, m
            assert m["disk_bytes_written"] == 0 and m["disk_hits"] == 0
        if level is StorageLevel.DISK_ONLY:
            assert m["disk_hits"] > 0 and m["memory_hits"] == 0 and m["storage_memory_used"] == 0
        if policy == "no-recache":
            assert m["blocks_recached"] == 0
        for ds in persisted:
            ds.unpersist()
        assert_nothing_stored(c)


def assert_nothing_stored(c: Context) -> None:
    """No executor holds a byte in memory, on disk or mapped, nor a dataset."""
    for eid, status in c.storage_status(by_executor=True).items():
        assert len(status) == 0, (eid, str(status))
        assert not any(status.tier_bytes.values()), (eid, status.tier_bytes)
    for eid, m in c.metrics(by_executor=True).items():
        assert m["storage_memory_used"] == 0 and m["mmap_bytes_mapped"] == 0, (eid, m)


@pytest.mark.parametrize("kind", ["records", "batches"])
@pytest.mark.parametrize("level", [l for l in LEVELS if l.is_valid], ids=str)
def test_with_room_for_everything_every_read_after_the_first_is_a_hit(tmp_path, tmp_path_factory, kind, level):
    want = reference(tmp_path_factory, kind)
    with _context(tmp_path, "64MB", "spark") as c:
        got, persisted = PIPELINES[kind](c, level, None)
        assert_same(got, want)
        m = c.metrics()
        assert m["blocks_dropped"] == 0 and m["blocks_not_stored"] == 0
        assert m["misses"] == sum(ds.num_partitions for ds in persisted)  # each block computed once
        on_disk = not level.use_memory  # DISK_ONLY, DISK_MMAP
        hits = m["disk_hits"] if on_disk else m["memory_hits"]
        assert hits > 0 and m["memory_hits"] + m["disk_hits"] == hits
        status = c.storage_status()
        where = "disk_partitions" if on_disk else "memory_partitions"
        assert [getattr(s, where) for s in status] == [ds.num_partitions for ds in persisted]
