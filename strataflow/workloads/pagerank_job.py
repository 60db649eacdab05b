"""The PageRank workload for ``gen``, ``run`` and ``bench``.

Data: a directed graph whose out- and in-degrees follow Zipf's law, as web graphs do.
Each edge picks its source rank from a Zipf distribution of exponent ``out_exponent``
(default 0.6) over the ``vertices`` ranks and, independently, its destination rank with
``in_exponent`` (default 0.9); each rank is mapped to a vertex id by its own affine
bijection of ``[0, vertices)``, so the out-hubs and the in-hubs are different vertices
and neither sits at id 0. The exponents are the rank-frequency forms of the power laws
measured on the web (in-degree ~ d^-2.1, out-degree ~ d^-2.7: exponent 1/(a-1)).
``degree`` (default 10) is the mean out-degree, so ``vertices = edges / degree``.
Edges are generated in blocks of 65,536 (bounded memory), each from its own random
stream keyed by ``(seed, block)``, so the graph depends on the seed and sizes only. Formats: ``text`` (``edges.txt``, one edge a
line, ``"src dst"``) and ``npy`` (``edges.npy``, an ``(edges, 2)`` int64 array).
Duplicate edges and self-loops are kept: each line is one edge (the Spark example's
``distinct()`` is not applied, by the engine nor by the check).

The graph's vertices are the ids that occur in some edge; ``N`` is their number.

Formula (mass-keeping, so the ranks always sum to ``N``): with ``r`` starting at 1.0 for
every vertex, each iteration

    r'(v) = 0.15 + 0.85 * (sum over edges u->v of r(u) / outdeg(u)  +  D / N)

where ``D`` is the total rank of the dangling vertices (no out-edge), spread evenly over
all vertices, as in the usual random-surfer model. (The Spark example drops dangling mass
and vertices without in-edges; here every vertex keeps a rank.)

Run:
- ``records``: the Spark example's loop. ``links`` = the edges grouped by source
  (``group_by_key``; every destination also sends a marker so that vertices without
  out-edges get an empty list and keep a rank), persisted at the level; ``ranks =
  links.map_values(1.0)``; each iteration ``links.join(ranks).flat_map(contributions)``
  then ``reduce_by_key(add)``. Contributions also carry ``(v, 0.0)`` for every vertex
  (so vertices without in-edges stay in ``ranks``) and ``(-1, r)`` for a dangling one;
  the iteration's job collects the key -1 (``D``) and the next ranks are
  ``0.15 + 0.85 * (sum + D / N)``.
- ``batches``: the edges as int64 ``(m, 2)`` arrays, hash-partitioned by source
  (``partition_by``) and sorted by destination within each partition, persisted at the
  level. The driver holds the rank vector (as K-means holds its centres); each task
  gathers ``r[src] / outdeg[src]`` and sums it per destination with ``np.bincount`` over
  the runs of equal destinations, returning ``(destinations, sums)``; the driver adds the
  partitions' sums into one vector.

Check: a numpy power iteration of the same formula on the same edges (``np.bincount``
over all edges): ranks ``np.allclose`` and their sum equal to ``N``.
"""

from __future__ import annotations

import math
import operator
import os
import time

import numpy as np

from strataflow.common import npy_headers
from strataflow.workloads.api import Outcome, Progress, write_manifest
from strataflow.workloads.generators import mean_digits

__all__ = ["gen", "run", "gen_edges", "read_all_edges", "pagerank_numpy", "DAMPING"]

DAMPING = 0.85
DEGREE = 10
OUT_EXPONENT = 0.6
IN_EXPONENT = 0.9
BLOCK_EDGES = 1 << 16
FORMATS = ("text", "npy")
_DANGLING = -1  # the key under which records carry the dangling vertices' rank


# -- generation -------------------------------------------------------------------------------------
def _zipf_ranks(rng: np.random.Generator, n: int, vertices: int, exponent: float) -> np.ndarray:
    """``n`` ranks in ``[0, vertices)`` with P(rank r) ~ (r + 1)^-exponent: the inverse CDF
    of the continuous power law on ``[1, vertices + 1)``, floored."""
    u = rng.random(n)
    if abs(exponent - 1.0) < 1e-12:
        x = np.exp(u * math.log(vertices + 1.0))
    else:
        e = 1.0 - exponent
        x = ((math.pow(vertices + 1.0, e) - 1.0) * u + 1.0) ** (1.0 / e)
    return np.minimum(x.astype(np.int64) - 1, vertices - 1).clip(0)


def _bijection(rng: np.random.Generator, vertices: int) -> tuple[int, int]:
    """``(a, b)`` of ``id = (a * rank + b) mod vertices``, a permutation (gcd(a, V) = 1)."""
    if vertices == 1:
        return 1, 0
    while True:
        a = int(rng.integers(1, vertices))
        if math.gcd(a, vertices) == 1:
            return a, int(rng.integers(0, vertices))


def _edge_chunks(edges: int, vertices: int, seed: int, out_exponent: float, in_exponent: float):
    """``(src, dst)`` int64 arrays, block by block, each block's stream keyed by ``(seed,
    block index)``."""
    rng = np.random.default_rng([seed, 0x9A6E, 1])  # not a block stream (those have two keys)
    a_out, b_out = _bijection(rng, vertices)
    a_in, b_in = _bijection(rng, vertices)
    for i, start in enumerate(range(0, edges, BLOCK_EDGES)):
        n = min(BLOCK_EDGES, edges - start)
        crng = np.random.default_rng([seed, i])
        src = (_zipf_ranks(crng, BLOCK_EDGES, vertices, out_exponent)[:n] * a_out + b_out) % vertices
        dst = (_zipf_ranks(crng, BLOCK_EDGES, vertices, in_exponent)[:n] * a_in + b_in) % vertices
        yield src, dst


def gen_edges(out_dir: str, edges: int, vertices: int, *, seed: int = 0, fmt: str = "text",
              out_exponent: float = OUT_EXPONENT, in_exponent: float = IN_EXPONENT,
              progress: Progress | None = None) -> dict:
    """Writes ``edges`` edges over ids ``[0, vertices)`` and the manifest; returns it."""
    if edges < 1 or vertices < 1:
        raise ValueError(f"gen pagerank: edges and vertices must be >= 1 (got {edges}, {vertices})")
    if vertices >= 1 << 31:
        raise ValueError(f"gen pagerank: at most 2**31 - 1 vertices, got {vertices}")
    if fmt not in FORMATS:
        raise ValueError(f"gen pagerank: format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if out_exponent <= 0 or in_exponent <= 0:
        raise ValueError("gen pagerank: the Zipf exponents must be > 0")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "edges.npy" if fmt == "npy" else "edges.txt")
    tmp = path + ".tmp"
    chunks = _edge_chunks(edges, vertices, seed, out_exponent, in_exponent)
    if fmt == "npy":
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.int64, shape=(edges, 2))
        try:
            start = 0
            for src, dst in chunks:
                out[start : start + len(src), 0] = src
                out[start : start + len(src), 1] = dst
                start += len(src)
                if progress:
                    progress(len(src))
            out.flush()
        finally:
            del out
    else:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        schema = pa.schema([("src", pa.int64()), ("dst", pa.int64())])
        opts = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
        with pacsv.CSVWriter(tmp, schema, write_options=opts) as writer:
            for src, dst in chunks:
                writer.write_table(pa.table({"src": src, "dst": dst}, schema=schema))
                if progress:
                    progress(len(src))
    os.replace(tmp, path)
    return write_manifest(out_dir, {
        "workload": "pagerank", "format": fmt, "edges": edges, "vertices": vertices,
        "degree": edges / vertices, "out_exponent": out_exponent, "in_exponent": in_exponent,
        "seed": seed, "bytes": os.path.getsize(path),
        "files": [os.path.basename(path)],
    })


def gen(out_dir: str, *, size: int, seed: int = 0, fmt: str = "text", progress: Progress | None = None,
        edges: int | None = None, vertices: int | None = None, degree: float = DEGREE,
        out_exponent: float = OUT_EXPONENT, in_exponent: float = IN_EXPONENT) -> dict:
    """About ``size`` bytes of edges (or exactly ``edges``), ``vertices = edges / degree``
    unless given. ``progress`` receives the edges written."""
    if edges is None:
        edges = max(1, size // 16)
        if fmt == "text":  # a line is two ids, a space and "\n"; ids spread over [0, V)
            for _ in range(4):
                v = vertices or max(1, int(round(edges / degree)))
                edges = max(1, int(size / (2 * mean_digits(v) + 2)))
    if vertices is None:
        vertices = max(1, int(round(edges / degree)))
    return gen_edges(out_dir, edges, vertices, seed=seed, fmt=fmt, out_exponent=out_exponent,
                     in_exponent=in_exponent, progress=progress)


# -- reading ----------------------------------------------------------------------------------------
def _data_path(data_dir: str, manifest: dict) -> str:
    return os.path.join(data_dir, manifest["files"][0])


def read_all_edges(data_dir: str, manifest: dict) -> np.ndarray:
    """Every edge as an ``(E, 2)`` int64 array, read without the engine (for the check)."""
    path = _data_path(data_dir, manifest)
    if manifest["format"] == "npy":
        return np.asarray(npy_headers.load(path), dtype=np.int64)
    import pyarrow as pa
    import pyarrow.csv as pacsv

    t = pacsv.read_csv(path, read_options=pacsv.ReadOptions(column_names=["src", "dst"]),
                       parse_options=pacsv.ParseOptions(delimiter=" "),
                       convert_options=pacsv.ConvertOptions(column_types={"src": pa.int64(), "dst": pa.int64()}))
    return _table_to_edges(t)


def _table_to_edges(t) -> np.ndarray:
    if t.num_rows == 0:
        return np.zeros((0, 2), dtype=np.int64)
    return np.column_stack([t.column(0).to_numpy(), t.column(1).to_numpy()]).astype(np.int64, copy=False)


def _parse_edge(line: str) -> tuple[int, int]:
    s, d = line.split()
    return int(s), int(d)


def _edge_records(a: np.ndarray) -> list:
    return [(s, d) for s, d in np.asarray(a, dtype=np.int64).tolist()]


def load_edges(ctx, data_dir: str, manifest: dict, api: str, num_partitions: int):
    """The edges, unpersisted: ``(src, dst)`` int records, or ``(m, 2)`` int64 batches."""
    import pyarrow as pa

    path = _data_path(data_dir, manifest)
    if manifest["format"] == "npy":
        ds = ctx.npy_file(path, num_partitions)
        return ds.map_partitions(_edge_records) if api == "records" else ds.map_partitions(np.asarray)
    if api == "records":
        return ctx.text_file(path, num_partitions).map(_parse_edge)
    table = ctx.csv_file(path, num_partitions, delimiter=" ", column_names=["src", "dst"],
                         column_types={"src": pa.int64(), "dst": pa.int64()})
    return table.map_partitions(_table_to_edges)


# -- the reference ----------------------------------------------------------------------------------
def pagerank_numpy(edges: np.ndarray, iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ranks, present)`` over ids ``[0, max id]``: the formula of this module as a plain
    numpy power iteration (ranks of absent ids are 0)."""
    src, dst = edges[:, 0], edges[:, 1]
    size = int(edges.max()) + 1 if len(edges) else 0
    outdeg = np.bincount(src, minlength=size)
    present = (outdeg + np.bincount(dst, minlength=size)) > 0
    n = int(present.sum())
    dangling = present & (outdeg == 0)
    ranks = present.astype(np.float64)
    for _ in range(iterations):
        d = ranks[dangling].sum()
        share = np.zeros(size)
        np.divide(ranks, outdeg, out=share, where=outdeg > 0)
        s = np.bincount(dst, weights=share[src], minlength=size)
        ranks = np.where(present, (1 - DAMPING) + DAMPING * (s + d / n), 0.0)
    return ranks, present


# -- records ----------------------------------------------------------------------------------------
def _links_pairs(e: tuple) -> list:
    """An edge as its link, plus a marker (-1) making its destination a vertex of ``links``."""
    return [(e[0], e[1]), (e[1], -1)]


def _drop_markers(dsts: list) -> list:
    return [d for d in dsts if d >= 0]


def _contributions(kv: tuple) -> list:
    v, (dsts, rank) = kv
    out = [(v, 0.0)]  # every vertex stays in the ranks, with or without in-edges
    if dsts:
        share = rank / len(dsts)
        out.extend((d, share) for d in dsts)
    else:
        out.append((_DANGLING, rank))
    return out


def _run_records(ctx, data_dir, manifest, level, serializer, iterations, n):
    edges = load_edges(ctx, data_dir, manifest, "records", n)
    links = edges.flat_map(_links_pairs).group_by_key(n).map_values(_drop_markers)
    links.name = "links"
    links.persist(level, serializer)
    t0 = time.perf_counter()
    vertices = links.count()  # caches the links, as the Spark example's first job does
    load_s = time.perf_counter() - t0
    ranks = links.map_values(lambda _: 1.0)
    times: list[float] = []
    for it in range(iterations):
        t0 = time.perf_counter()
        contribs = links.join(ranks, n).flat_map(_contributions)
        sums = contribs.reduce_by_key(operator.add, n)
        sums.name = f"pagerank sums {it + 1}"
        dangling = dict(sums.filter(lambda kv: kv[0] == _DANGLING).collect()).get(_DANGLING, 0.0)
        base = (1 - DAMPING) + DAMPING * dangling / vertices
        ranks = sums.filter(lambda kv: kv[0] != _DANGLING).map_values(lambda s, base=base: base + DAMPING * s)
        times.append(time.perf_counter() - t0)
    pairs = ranks.collect()
    ids = np.fromiter((v for v, _ in pairs), dtype=np.int64, count=len(pairs))
    values = np.fromiter((r for _, r in pairs), dtype=np.float64, count=len(pairs))
    order = np.argsort(ids)
    return ids[order], values[order], vertices, times, load_s


# -- batches ----------------------------------------------------------------------------------------
def _by_destination(a) -> np.ndarray:
    a = np.asarray(a, dtype=np.int64).reshape(-1, 2)
    return a[np.argsort(a[:, 1])]  # the order within a destination does not matter (deterministic)


def _run_starts(dst: np.ndarray) -> np.ndarray:
    """Where each run of equal values of a sorted array begins (a mask)."""
    starts = np.empty(len(dst), dtype=bool)
    if len(dst):
        starts[0] = True
        np.not_equal(dst[1:], dst[:-1], out=starts[1:])
    return starts


def _degrees(a: np.ndarray) -> list:
    """``(sources, out-degrees, destinations)`` of one partition (all of a source's edges
    are in its partition, so its out-degree is complete here)."""
    counts = np.bincount(a[:, 0]) if len(a) else np.zeros(0, dtype=np.int64)
    src = np.flatnonzero(counts)
    dst = a[:, 1]
    return [(src, counts[src], dst[_run_starts(dst)])]


def contributions_batch(a: np.ndarray, share: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(destinations, sums)`` of ``share[src]`` over one partition's edges, sorted by
    destination: ``np.bincount`` over the runs of equal destinations (no sort, O(m))."""
    if len(a) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    dst = a[:, 1]
    starts = _run_starts(dst)
    run = np.cumsum(starts) - 1
    return dst[starts], np.bincount(run, weights=share[a[:, 0]])


def _run_batches(ctx, data_dir, manifest, level, serializer, iterations, n):
    edges = load_edges(ctx, data_dir, manifest, "batches", n)
    links = edges.partition_by(n).map_partitions(_by_destination, preserves_partitioning=True)
    links.name = "edges by source"
    links.persist(level, serializer)
    t0 = time.perf_counter()
    parts = links.map_partitions(_degrees).collect()  # caches the edges
    size = 1 + max((int(ids[-1]) for p in parts for ids in (p[0], p[2]) if len(ids)), default=-1)
    outdeg = np.zeros(size, dtype=np.int64)
    present = np.zeros(size, dtype=bool)
    for src, counts, dst in parts:
        outdeg[src] += counts
        present[src] = True
        present[dst] = True
    vertices = int(present.sum())
    dangling = present & (outdeg == 0)
    has_out = outdeg > 0
    load_s = time.perf_counter() - t0
    ranks = present.astype(np.float64)
    times: list[float] = []
    for it in range(iterations):
        t0 = time.perf_counter()
        share = np.zeros(size)
        np.divide(ranks, outdeg, out=share, where=has_out)
        d = ranks[dangling].sum()
        step = links.map_partitions(lambda a, share=share: [contributions_batch(a, share)])
        step.name = f"pagerank iteration {it + 1}"
        s = np.zeros(size)
        for dst, sums in step.collect():
            s[dst] += sums  # destinations are unique within a partition
        ranks = np.where(present, (1 - DAMPING) + DAMPING * (s + d / vertices), 0.0)
        times.append(time.perf_counter() - t0)
    ids = np.flatnonzero(present)
    return ids, ranks[ids], vertices, times, load_s


# -- run --------------------------------------------------------------------------------------------
def run(ctx, data_dir: str, manifest: dict, *, api: str = "batches", level=None, serializer=None,
        iterations: int = 5, seed: int = 0, check: bool = True, num_partitions: int | None = None,
        rtol: float = 1e-9) -> Outcome:
    from strataflow.storage.level import StorageLevel

    level = StorageLevel.NONE if level is None else StorageLevel.parse(level)
    n = num_partitions or 4 * ctx.default_parallelism
    if api == "records":
        ids, ranks, vertices, times, load_s = _run_records(ctx, data_dir, manifest, level, serializer, iterations, n)
    elif api == "batches":
        ids, ranks, vertices, times, load_s = _run_batches(ctx, data_dir, manifest, level, serializer, iterations, n)
    else:
        raise ValueError(f"api must be records or batches, got {api!r}")
    total = math.fsum(ranks)
    top = np.lexsort((ids, -ranks))[:5]  # highest ranks first, ties by id
    outcome = Outcome(times, "ok", {"vertices": vertices, "edges": manifest.get("edges"), "rank_sum": total,
                                    "load_s": load_s, "top": [[int(ids[i]), float(ranks[i])] for i in top]})
    if check:
        with outcome.checking():  # not part of the run's time
            outcome.result_check = _check(ids, ranks, vertices, read_all_edges(data_dir, manifest), iterations, rtol)
    return outcome


def _check(ids: np.ndarray, ranks: np.ndarray, vertices: int, edges: np.ndarray, iterations: int,
           rtol: float) -> str:
    """``ids`` (ascending) and their ``ranks`` against :func:`pagerank_numpy`."""
    ref, present = pagerank_numpy(edges, iterations)
    want = np.flatnonzero(present)
    if vertices != len(want) or not np.array_equal(ids, want):
        return f"vertices differ: {vertices} ({len(ids)}) ranked, {len(want)} in the edges"
    if not np.allclose(ranks, ref[want], rtol=rtol, atol=0):
        worst = int(np.argmax(np.abs(ranks - ref[want])))
        return (f"ranks differ from a numpy power iteration: vertex {int(want[worst])} has {ranks[worst]!r}, "
                f"numpy {ref[want][worst]!r}")
    total = math.fsum(ranks)
    if not math.isclose(total, vertices, rel_tol=1e-9):
        return f"ranks sum to {total!r}, not the vertex count {vertices}"
    return "ok"
