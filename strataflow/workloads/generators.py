"""HiBench-like data generators that stream to disk in bounded memory.

K-means points follow HiBench's GenKMeansDataset: a few generator centres with
coordinates drawn from Uniform(0, 1000) and a per-dimension standard deviation from
Uniform(0.01, 100); points are split evenly among the centres. Generation is chunked
(``chunk_rows`` rows at a time), deterministic for a seed, and writes a small JSON
manifest beside the data so a reader needs no other flag.
"""

from __future__ import annotations

import os
from typing import Callable

import numpy as np

from strataflow.workloads.api import write_manifest

__all__ = ["gen_kmeans", "mean_digits"]


def _kmeans_chunks(points: int, dims: int, centres: int, seed: int, chunk_rows: int, decimals: int | None = None):
    """``(start, rows)`` chunks of points; each chunk has its own random stream keyed by
    ``(seed, start)``, so data depend only on the seed (and chunk size), never on memory."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(0, 1000, size=(centres, dims))
    stds = rng.uniform(0.01, 100, size=(centres, dims))
    for start in range(0, points, chunk_rows):
        stop = min(points, start + chunk_rows)
        which = (np.arange(start, stop) * centres) // points  # points split evenly among centres
        crng = np.random.default_rng([seed, start])
        chunk = means[which] + stds[which] * crng.standard_normal((stop - start, dims))
        yield start, chunk if decimals is None else np.round(chunk, decimals)


def gen_kmeans(out_dir: str, points: int, dims: int = 20, centres: int = 5, seed: int = 0,
               chunk_rows: int = 1 << 16, progress: Callable[[int], None] | None = None,
               fmt: str = "npy", decimals: int | None = None) -> str:
    """Writes ``points x dims`` float64 points to ``out_dir`` as ``points.npy`` or as text
    (``points.txt``: one point a line, coordinates separated by spaces, HiBench's record
    form, written at full precision so both formats hold the same numbers); returns the
    data file's path."""
    if points < 1 or dims < 1 or centres < 1:
        raise ValueError(f"gen kmeans: points, dims and centres must be >= 1 (got {points}, {dims}, {centres})")
    if fmt not in ("npy", "text", "parquet"):
        raise ValueError(f"gen kmeans: format must be text, npy or parquet, got {fmt!r}")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, {"npy": "points.npy", "text": "points.txt", "parquet": "points.parquet"}[fmt])
    tmp = path + ".tmp"
    if fmt == "npy":
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float64, shape=(points, dims))
        try:
            for start, chunk in _kmeans_chunks(points, dims, centres, seed, chunk_rows, decimals):
                out[start : start + len(chunk)] = chunk
                if progress:
                    progress(len(chunk))
            out.flush()
        finally:
            del out
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        names = [f"x{i}" for i in range(dims)]
        schema = pa.schema([(n, pa.float64()) for n in names])
        with pq.ParquetWriter(tmp, schema, compression="none") as writer:
            for _, chunk in _kmeans_chunks(points, dims, centres, seed, chunk_rows, decimals):
                writer.write_table(pa.Table.from_arrays(list(chunk.T), names=names))  # a row group a chunk
                if progress:
                    progress(len(chunk))
    else:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        names = [f"x{i}" for i in range(dims)]
        opts = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
        schema = pa.schema([(n, pa.float64()) for n in names])
        with pacsv.CSVWriter(tmp, schema, write_options=opts) as writer:
            for _, chunk in _kmeans_chunks(points, dims, centres, seed, chunk_rows, decimals):
                writer.write_table(pa.Table.from_arrays(list(chunk.T), names=names))
                if progress:
                    progress(len(chunk))
    os.replace(tmp, path)
    manifest = {"workload": "kmeans", "format": fmt, "points": points, "dims": dims, "centres": centres,
                "seed": seed, "decimals": decimals, "bytes": os.path.getsize(path), "files": [os.path.basename(path)]}
    write_manifest(out_dir, manifest)
    return path


def mean_digits(n: int) -> float:
    """The mean number of decimal digits of 0, 1, ..., n - 1 (sizes text of integer ids)."""
    total, low, digits = 0, 0, 1
    while low < n:
        high = min(n, 10 ** digits)
        total += (high - low) * digits
        low, digits = high, digits + 1
    return total / max(1, n)
