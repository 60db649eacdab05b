"""The mixed pipeline's data and its per-partition kernels (the job is in mixed_job.py).

Three files, one row of each per entity id ``0 .. rows - 1`` (the events: several per id):

- ``signals.npy``: float64 ``(rows, 1 + dims)``, column 0 the id, then ``dims`` channels
  near one of ``clusters`` generator centres (as K-means' data: Uniform(0, 1000) centres,
  a per-channel spread from Uniform(1, 60)); the numeric source. The features are
  extracted from the first ``feature_dims`` channels; all of them are summed per cluster.
- ``records.tsv``: ``id, name, region, score, tier`` a line: the Python records.
- ``events.parquet``: ``id, day, amount, channel`` (``events_per_row`` a row on average,
  ids uniform), row groups of ``ceil(events / 32)`` rows: the Arrow table.

The kernels are shared by the engine's run and the independent numpy reference (as
K-means' ``kmeans_partition`` is): the reference differs in how the data are read and
cut, never in the arithmetic a row gets.
"""

from __future__ import annotations

import math
import os
from typing import Callable

import numpy as np

from strataflow.workloads.api import write_manifest

__all__ = ["gen_mixed", "prepare", "FeatureExtractor", "parse_record", "enrich_events", "nearest", "REGIONS",
           "TIERS", "CHANNELS"]

REGIONS = ("north", "south", "east", "west", "centre", "coast", "hills", "lakes", "plains", "isles", "forest",
           "delta")
TIERS = ("bronze", "silver", "gold", "platinum")
CHANNELS = ("web", "store", "phone", "partner", "app")
_SIGNAL_SCALE = 1.0 / 500.0  # the cheap transform: coordinates of ~0..1000 to ~0..2
_CHUNK = 1 << 13


def gen_mixed(out_dir: str, rows: int, *, dims: int = 128, feature_dims: int = 32, clusters: int = 8,
              events_per_row: float = 4.0, seed: int = 0, progress: Callable[[int], None] | None = None) -> dict:
    """Writes the three files (deterministic for the seed, in chunks) and returns the manifest."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if rows < 1 or dims < 1 or clusters < 1 or events_per_row <= 0 or not 1 <= feature_dims <= dims:
        raise ValueError(f"gen mixed: rows, dims, clusters and events_per_row must be positive and feature_dims "
                         f"within 1..dims (got {rows}, {dims}, {clusters}, {events_per_row}, {feature_dims})")
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(seed)
    means = rng.uniform(0, 1000, size=(clusters, dims))
    spread = rng.uniform(1, 60, size=(clusters, dims))
    sig_path = os.path.join(out_dir, "signals.npy")
    out = np.lib.format.open_memmap(sig_path + ".tmp", mode="w+", dtype=np.float64, shape=(rows, 1 + dims))
    rec_path = os.path.join(out_dir, "records.tsv")
    try:
        with open(rec_path + ".tmp", "w") as rec:
            for start in range(0, rows, _CHUNK):
                stop = min(rows, start + _CHUNK)
                crng = np.random.default_rng([seed, start])
                ids = np.arange(start, stop)
                which = crng.integers(0, clusters, size=stop - start)
                out[start:stop, 0] = ids
                out[start:stop, 1:] = means[which] + spread[which] * crng.standard_normal((stop - start, dims))
                region = crng.integers(0, len(REGIONS), size=stop - start)
                tier = crng.integers(0, len(TIERS), size=stop - start)
                score = np.round(crng.uniform(0, 100, size=stop - start), 2)
                rec.write("".join(f"{i}\tuser{i:07d}\t{REGIONS[r]}\t{s:.2f}\t{TIERS[t]}\n"
                                  for i, r, s, t in zip(ids.tolist(), region.tolist(), score.tolist(), tier.tolist())))
                if progress:
                    progress(stop - start)
        out.flush()
    finally:
        del out
    os.replace(sig_path + ".tmp", sig_path)
    os.replace(rec_path + ".tmp", rec_path)
    events = max(1, int(rows * events_per_row))
    ev_path = os.path.join(out_dir, "events.parquet")
    erng = np.random.default_rng([seed, 1 << 40])
    table = pa.table({
        "id": erng.integers(0, rows, size=events).astype(np.int64),
        "day": erng.integers(0, 30, size=events).astype(np.int16),
        "amount": np.round(erng.exponential(40.0, size=events), 2),
        "channel": pa.array(np.array(CHANNELS)[erng.integers(0, len(CHANNELS), size=events)]),
    })
    pq.write_table(table, ev_path + ".tmp", row_group_size=max(1, math.ceil(events / 32)), compression="none")
    os.replace(ev_path + ".tmp", ev_path)
    files = ["signals.npy", "records.tsv", "events.parquet"]
    manifest = {"workload": "mixed", "format": "mixed", "rows": rows, "dims": dims, "feature_dims": feature_dims,
                "clusters": clusters,
                "events": events, "seed": seed, "files": files,
                "bytes": sum(os.path.getsize(os.path.join(out_dir, f)) for f in files)}
    return write_manifest(out_dir, manifest)


def prepare(a: np.ndarray) -> np.ndarray:
    """The cheap transform: a float64 copy of the source's rows with the coordinates
    scaled (one pass; recomputing it costs about what copying it out of a cache does)."""
    out = np.array(a, dtype=np.float64)
    out[:, 1:] *= _SIGNAL_SCALE
    return out


class FeatureExtractor:
    """The dear transform: a fixed random 3-layer network (tanh, tanh, linear) from the
    first ``dims`` channels to ``features`` features per row, with the id kept as column 0.
    About ``2 (dims h + h h + h features)`` flops and ``2 h`` tanh a row: with ``h = 96``
    ``h = 192`` and 16 features some 90 kflop: 1.8 us a row measured on 2 cores, where a
    disk round trip of its 136-byte output row costs about a tenth of that."""

    def __init__(self, dims: int, seed: int, hidden: int = 192, features: int = 16) -> None:
        rng = np.random.default_rng([seed, 7])
        self.w1 = rng.standard_normal((dims, hidden)) / math.sqrt(dims)
        self.b1 = rng.standard_normal(hidden) * 0.5
        self.w2 = rng.standard_normal((hidden, hidden)) / math.sqrt(hidden)
        self.w3 = rng.standard_normal((hidden, features)) * (4.0 / math.sqrt(hidden))

    def __call__(self, signals: np.ndarray) -> np.ndarray:
        out = np.empty((len(signals), 1 + self.w3.shape[1]))
        out[:, 0] = signals[:, 0]
        centred = signals[:, 1 : 1 + self.w1.shape[0]] - 1.0
        for start in range(0, len(signals), 1024):  # chunks keep the hidden layers in cache
            x = centred[start : start + 1024]
            h = np.tanh(x @ self.w1 + self.b1)
            h = np.tanh(h @ self.w2)
            out[start : start + 1024, 1:] = h @ self.w3
        return out


def parse_record(line: str) -> tuple[int, dict]:
    """One line of records.tsv as ``(id, {name, region, score, tier})``."""
    i, name, region, score, tier = line.split("\t")
    return int(i), {"name": name, "region": region, "score": float(score), "tier": tier}


def enrich_events(table):
    """The Arrow step: the events with their amount in cents (int64) and a week column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cents = pc.cast(pc.round(pc.multiply(table["amount"], 100.0)), pa.int64())
    week = pc.cast(pc.divide(pc.cast(table["day"], pa.int32()), 7), pa.int16())
    return table.append_column("cents", cents).append_column("week", week)


def nearest(x: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """The index of each row's nearest centre (ties to the lower index)."""
    d = (centres * centres).sum(axis=1)[None, :] - 2.0 * (x @ centres.T)
    return d.argmin(axis=1)
