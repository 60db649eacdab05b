"""HiBench-like data generators that stream to disk in bounded memory.

K-means points follow HiBench's GenKMeansDataset: a few generator centres with
coordinates drawn from Uniform(0, 1000) and a per-dimension standard deviation from
Uniform(0.01, 100); points are split evenly among the centres. Generation is chunked
(``chunk_rows`` rows at a time), deterministic for a seed, and writes a small JSON
manifest beside the data so a reader needs no other flag.
"""

from __future__ import annotations

import json
import os
from typing import Callable

import numpy as np

__all__ = ["gen_kmeans", "read_manifest", "MANIFEST"]

MANIFEST = "manifest.json"


def gen_kmeans(out_dir: str, points: int, dims: int = 20, centres: int = 5, seed: int = 0,
               chunk_rows: int = 1 << 16, progress: Callable[[int], None] | None = None) -> str:
    """Writes ``points x dims`` float64 points to ``out_dir/points.npy``; returns its path."""
    if points < 1 or dims < 1 or centres < 1:
        raise ValueError(f"gen kmeans: points, dims and centres must be >= 1 (got {points}, {dims}, {centres})")
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(seed)
    means = rng.uniform(0, 1000, size=(centres, dims))
    stds = rng.uniform(0.01, 100, size=(centres, dims))
    path = os.path.join(out_dir, "points.npy")
    tmp = path + ".tmp"
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float64, shape=(points, dims))
    try:
        for start in range(0, points, chunk_rows):
            stop = min(points, start + chunk_rows)
            idx = np.arange(start, stop)
            # points split evenly among centres: point i belongs to centre i * centres // points
            which = (idx * centres) // points
            crng = np.random.default_rng([seed, start])  # one stream per chunk: same data for a seed
            out[start:stop] = means[which] + stds[which] * crng.standard_normal((stop - start, dims))
            if progress:
                progress(stop - start)
        out.flush()
    finally:
        del out
    os.replace(tmp, path)
    manifest = {"workload": "kmeans", "format": "npy", "points": points, "dims": dims, "centres": centres,
                "seed": seed, "bytes": points * dims * 8, "files": ["points.npy"],
                "generator_means": means.tolist(), "generator_stds": stds.tolist()}
    with open(os.path.join(out_dir, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)
    return path


def read_manifest(data_dir: str) -> dict:
    path = os.path.join(data_dir, MANIFEST)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no {MANIFEST} in {data_dir!r}: generate data with `strataflow gen`")
    with open(path) as f:
        return json.load(f)
