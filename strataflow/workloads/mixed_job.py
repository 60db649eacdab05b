"""The mixed pipeline for ``gen``, ``run`` and ``bench auto``: one job whose datasets
want different storage levels (data and kernels in mixed_data.py).

Why. AUTO's reason to exist is that one fixed level cannot suit every dataset of a job
(issue 43). This job persists four datasets, all at the level under test:

- ``signals`` (cheap, numeric, the largest): rows of 128 channels from an ``.npy``
  source, copied and scaled. Recomputing a block costs about a copy out of the page
  cache, so dropping it is right; a mapped or serialized level writes it for nothing. It
  is read by the feature extraction and once more by the assignment pass.
- ``features`` (dear, numeric): a 3-layer network per row over 32 of the channels
  (mixed_data.FeatureExtractor), about ten times a disk round trip of its row; read by
  every K-means iteration. Dropping it (MEMORY_ONLY under pressure) recomputes
  the network; mapping reads it without decoding.
- ``records`` (Python records): ``(id, dict)`` parsed from text, read by every query
  round. No mapped layout exists for them; pickling costs about what parsing does.
- ``events`` (an Arrow table): Parquet row groups with two derived columns, read by every
  query round; mapped zero-copy, or serialized as Arrow buffers.

The job: load (the centres' sample computes signals and features; records and events are
counted), ``iterations`` K-means steps over the features, one assignment pass over
features and signals (each point's cluster, the clusters' mean signal), then ``rounds``
queries joining the assignment (broadcast, by id) with the records (count and score per
cluster and region, then per cluster and tier, over a score threshold) and the events
(cents per cluster and channel in one week).

The check: the same steps in plain numpy and Python over the files (np.load,
``parse_record`` in a loop, pyarrow's reader), the same kernels and initial centres.
``Outcome.iteration_s`` holds the K-means iterations' and the query rounds' seconds.
"""

from __future__ import annotations

import os
import time

import numpy as np

from strataflow.common import npy_headers
from strataflow.workloads.api import Outcome, Progress
from strataflow.workloads.kmeans import kmeans_partition, new_centres, sample_centres
from strataflow.workloads.mixed_data import (CHANNELS, FeatureExtractor, enrich_events, gen_mixed,
                                             nearest, parse_record, prepare)
from strataflow.workloads.reference import reference

__all__ = ["gen", "run", "mixed_numpy"]

_BYTES_PER_ROW_AND_DIM = 8
#: a record's score must reach this times the round's number to count in that round
_SCORE_STEP = 20.0


def gen(out_dir: str, *, size: int, seed: int = 0, fmt: str = "text", progress: Progress | None = None,
        rows: int | None = None, dims: int = 128, feature_dims: int = 32, clusters: int = 8,
        events_per_row: float = 4.0) -> dict:
    """``size``: the bytes of ``signals.npy`` (records and events add a fifth more)."""
    if fmt not in ("text", "mixed"):
        raise ValueError(f"gen mixed: its data have one form (an .npy, a text and a Parquet file); "
                         f"--format does not apply (got {fmt!r})")
    n = rows or max(clusters, size // (_BYTES_PER_ROW_AND_DIM * (1 + dims)))
    return gen_mixed(out_dir, n, dims=dims, feature_dims=feature_dims, clusters=clusters,
                     events_per_row=events_per_row, seed=seed, progress=progress)


def _paths(data_dir: str, manifest: dict) -> tuple[str, str, str]:
    sig, rec, ev = (os.path.join(data_dir, f) for f in manifest["files"])
    return sig, rec, ev


def _assign(features: np.ndarray, signals: np.ndarray, centres: np.ndarray):
    """(ids, cluster of each row, per-cluster sums of the rows' signals)."""
    labels = nearest(features[:, 1:], centres)
    onehot = np.equal(labels[None, :], np.arange(len(centres))[:, None]).astype(np.float64)
    return features[:, 0].astype(np.int64), labels.astype(np.int32), onehot @ signals[:, 1:]


def _record_keys(rnd: int) -> tuple[str, float]:
    """The record field a round groups by (with the cluster), and its score threshold."""
    return ("region", "tier")[rnd % 2], _SCORE_STEP * rnd


def _records_round(rows, assignment: np.ndarray, rnd: int) -> dict:
    """{(cluster, field value): [count, score sum]} over the records of one round."""
    field, threshold = _record_keys(rnd)
    out: dict = {}
    for i, rec in rows:
        if rec["score"] >= threshold:
            acc = out.setdefault((int(assignment[i]), rec[field]), [0, 0.0])
            acc[0] += 1
            acc[1] += rec["score"]
    return out


def _events_round(table, assignment: np.ndarray, k: int, rnd: int) -> np.ndarray:
    """Cents per (cluster, channel) of the events in week ``rnd % 5``, flattened."""
    import pyarrow.compute as pc

    week = table["week"].to_numpy()
    keep = week == rnd % 5
    cl = assignment[table["id"].to_numpy()[keep]]
    ch = pc.index_in(table["channel"], value_set=_channel_set()).to_numpy(zero_copy_only=False)[keep]
    cents = table["cents"].to_numpy()[keep]
    return np.bincount(cl * len(CHANNELS) + ch.astype(np.int64), weights=cents, minlength=k * len(CHANNELS))


def _channel_set():
    import pyarrow as pa

    return pa.array(CHANNELS)


def _merge(parts: list[dict]) -> dict:
    out: dict = {}
    for p in parts:
        for key, (n, s) in p.items():
            acc = out.setdefault(key, [0, 0.0])
            acc[0] += n
            acc[1] += s
    return out


def run(ctx, data_dir: str, manifest: dict, *, api: str = "batches", level=None, serializer=None,
        iterations: int = 10, seed: int = 0, k: int | None = None, rounds: int = 3, num_partitions: int | None = None,
        check: bool = True, level_of: dict[str, str] | None = None) -> Outcome:
    """``level_of``: levels of some datasets by their first word (``signals``, ``features``,
    ``records``, ``events``) in place of ``level``: a per-dataset choice made by hand, to
    measure what choosing per dataset can gain over any single level."""
    from strataflow.storage.level import StorageLevel

    if api != "batches":
        raise ValueError("mixed: the pipeline holds records and batches by design (its datasets fix their forms); "
                         f"run it with api='batches', not {api!r}")
    level = StorageLevel.NONE if level is None else StorageLevel.parse(level)
    unknown = set(level_of or {}) - {"signals", "features", "records", "events"}
    if unknown:
        raise ValueError(f"mixed: level_of names no dataset {sorted(unknown)}; its datasets are signals, features, "
                         "records and events")
    k = k or manifest["clusters"]
    n = num_partitions or 4 * ctx.default_parallelism
    sig_path, rec_path, ev_path = _paths(data_dir, manifest)
    extract = FeatureExtractor(manifest["feature_dims"], manifest["seed"])
    signals = ctx.npy_file(sig_path, n).map_partitions(prepare)
    features = signals.map_partitions(extract)
    records = ctx.text_file(rec_path, n).map(parse_record)
    events = ctx.parquet_file(ev_path, n).map_partitions(enrich_events)
    for ds, name in ((signals, "signals (cheap)"), (features, "features (dear)"), (records, "records"),
                     (events, "events (Arrow)")):
        ds.name = name
        ds.persist(StorageLevel.parse((level_of or {}).get(name.split()[0], level)), serializer)
    stage: dict[str, float] = {}
    t0 = time.perf_counter()
    init = sample_centres(features, k, seed)[:, 1:]  # computes and caches signals and features
    counted = (records.count(), events.count())
    stage["load_s"] = time.perf_counter() - t0

    iteration_s, centres = [], init
    for it in range(iterations):
        t = time.perf_counter()
        step = features.map_partitions(lambda f, c=centres: [kmeans_partition(f[:, 1:], c)])
        step.name = f"mixed: kmeans iteration {it + 1}"
        parts = step.collect()
        cost = sum(p[2] for p in parts)
        centres = new_centres(centres, sum(p[0] for p in parts), sum(p[1] for p in parts))
        iteration_s.append(time.perf_counter() - t)

    t = time.perf_counter()
    assigning = features.zip_partitions(signals, f=lambda f, s, c=centres: [_assign(f, s, c)])
    assigning.name = "mixed: assign points to clusters"
    assignment = np.full(manifest["rows"], -1, dtype=np.int32)
    profile = np.zeros((k, manifest["dims"]))
    for ids, labels, sums in assigning.collect():
        assignment[ids] = labels
        profile += sums
    stage["assign_s"] = time.perf_counter() - t

    shared = ctx.broadcast(assignment)
    rec_rounds, ev_rounds = [], []
    for rnd in range(rounds):
        t = time.perf_counter()
        by_record = records.map_partitions(lambda rows, r=rnd: [_records_round(rows, shared.value, r)])
        by_record.name = f"mixed: records round {rnd + 1}"
        rec_rounds.append(_merge(by_record.collect()))
        by_event = events.map_partitions(lambda t, r=rnd: [_events_round(t, shared.value, k, r)])
        by_event.name = f"mixed: events round {rnd + 1}"
        ev_rounds.append(sum(by_event.collect()))
        iteration_s.append(time.perf_counter() - t)

    sizes = np.bincount(assignment[assignment >= 0], minlength=k)
    outcome = Outcome(iteration_s, "ok", {"cost": float(cost) if iterations else None, "k": k, **stage,
                                          "cluster_sizes": sizes.tolist(), "records": counted[0],
                                          "events": counted[1]})
    if not check:
        return outcome
    with outcome.checking():  # not part of the run's time
        ref = reference("mixed", lambda: mixed_numpy(data_dir, manifest, init, iterations, rounds),
                        inputs=[sig_path, rec_path, ev_path], init=init, iterations=iterations, rounds=rounds)
        outcome.result_check = _compare(ref, centres, assignment, profile, counted, rec_rounds, ev_rounds)
    return outcome


def _compare(ref: dict, centres, assignment, profile, counted, rec_rounds, ev_rounds) -> str:
    """"ok", or a sentence naming the first part of the result that differs from ``ref``."""
    if counted != (ref["rows"], ref["events"]):
        return f"counted {counted} (records, events); the files hold {(ref['rows'], ref['events'])}"
    if not np.allclose(ref["centres"], centres, rtol=1e-7, atol=1e-9):
        return f"centres differ from a numpy run by up to {float(np.abs(ref['centres'] - centres).max()):.3g}"
    if (assignment < 0).any():
        return f"{int((assignment < 0).sum())} points got no cluster"
    if not np.array_equal(ref["assignment"], assignment):
        return f"{int((ref['assignment'] != assignment).sum())} points are assigned to another cluster than numpy's"
    if not np.allclose(ref["profile"], profile, rtol=1e-9):
        return "the clusters' signal sums differ from numpy's"
    for rnd, (want, got) in enumerate(zip(ref["records"], rec_rounds)):
        if want.keys() != got.keys() or any(want[key][0] != got[key][0] or not np.isclose(want[key][1], got[key][1])
                                            for key in want):
            return f"records round {rnd + 1}: the counts or score sums per cluster differ from a Python loop's"
    for rnd, (want, got) in enumerate(zip(ref["event_rounds"], ev_rounds)):
        if not np.array_equal(want, got):
            return f"events round {rnd + 1}: cents per cluster and channel differ from numpy's"
    return "ok"


def mixed_numpy(data_dir: str, manifest: dict, init: np.ndarray, iterations: int, rounds: int) -> dict:
    """The whole pipeline in numpy and plain Python over the files (the reference)."""
    import pyarrow.parquet as pq

    sig_path, rec_path, ev_path = _paths(data_dir, manifest)
    signals = prepare(npy_headers.load(sig_path))
    features = FeatureExtractor(manifest["feature_dims"], manifest["seed"])(signals)
    centres = np.asarray(init, dtype=np.float64)
    for _ in range(iterations):
        sums, counts, _cost = kmeans_partition(features[:, 1:], centres)
        centres = new_centres(centres, sums, counts)
    k = len(centres)
    labels = nearest(features[:, 1:], centres)
    assignment = np.full(manifest["rows"], -1, dtype=np.int32)
    assignment[features[:, 0].astype(np.int64)] = labels
    profile = np.zeros((k, manifest["dims"]))
    np.add.at(profile, labels, signals[:, 1:])
    with open(rec_path) as f:
        rows = [parse_record(line.rstrip("\n")) for line in f]
    table = enrich_events(pq.read_table(ev_path))
    channel = np.array([CHANNELS.index(c) for c in table["channel"].to_pylist()])
    ids, week, cents = (table[c].to_numpy() for c in ("id", "week", "cents"))
    ev_rounds = []
    for rnd in range(rounds):
        keep = week == rnd % 5
        totals = np.zeros(k * len(CHANNELS))
        np.add.at(totals, assignment[ids[keep]] * len(CHANNELS) + channel[keep], cents[keep])
        ev_rounds.append(totals)
    return {"rows": len(rows), "events": table.num_rows, "centres": centres, "assignment": assignment,
            "profile": profile, "records": [_records_round(rows, assignment, rnd) for rnd in range(rounds)],
            "event_rounds": ev_rounds}
