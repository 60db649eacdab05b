"""The ALS workload for ``gen``, ``run`` and ``bench``: MLlib's explicit alternating least
squares (rank 10, regularization ``reg`` scaled by each row's rating count, "ALS-WR") on
(user, item, rating) triples from low-rank factors (format and generator in als_data.py).

Each iteration solves every user's factors given the item factors, then every item's
given the user factors, from the normal equations

    (Y_u^T Y_u + reg * n_u * I) x_u = Y_u^T r_u

(``Y_u``: the factors of the ``n_u`` items user u rated, ``r_u`` their ratings). As MLlib
caches its in/out blocks, the ratings are persisted at the level twice: grouped by user
and grouped by item. Factors travel to the tasks as numpy arrays captured by closures
(the engine is local, so that is its broadcast). Item factors start as seeded random unit
rows (MLlib's initialization); a user or item without ratings keeps a zero factor. The
RMSE over all ratings after each iteration comes from the item pass itself (each item
task holds its ratings, the new item factors and the user factors).

- records API: ratings are ``(user, item, rating)`` tuples, grouped with
  ``group_by_key`` into ``(key, (other ids, ratings))`` records, solved one key at a time.
- batches API: pyarrow Tables keyed by a block column (``key * blocks // keys``, so each
  partition holds a contiguous range of ids) and moved with ``partition_by``; each
  persisted block is sorted by key, and a task pads the ratings of keys of similar
  counts into blocks and builds their Gram matrices with stacked matrix products
  (``np.matmul`` on ``(keys, ratings, rank)`` arrays) and solves them with one stacked
  ``np.linalg.solve`` a block.

The check: the same ALS as a plain numpy loop (one solve per user and per item) over the
file, from the same initial factors, gives the same factors and RMSEs (``np.allclose``),
and the RMSE decreases.
"""

from __future__ import annotations

import math
import os

import numpy as np

from strataflow.workloads.als import RANK, als, als_numpy
from strataflow.workloads.als_data import gen_als, read_ratings
from strataflow.workloads.api import Outcome, Progress, write_manifest
from strataflow.workloads.generators import mean_digits
from strataflow.workloads.reference import reference

__all__ = ["gen", "run", "load", "grouped"]

_RATING_CHARS = 8.4  # measured: a rating of about N(0, 1) at 3 decimals ("-0.123"), two spaces, a newline
_NPY_BYTES_PER_RATING = 24


def gen(out_dir: str, *, size: int, seed: int = 0, fmt: str = "text", progress: Progress | None = None,
        users: int | None = None, items: int | None = None, density: float = 0.05, rank: int = RANK,
        noise: float = 0.1) -> dict:
    """About ``size`` bytes of ratings: users = items = sqrt(ratings / density) unless given."""
    per = 16.0 if fmt == "text" else _NPY_BYTES_PER_RATING
    for _ in range(3):  # in text, the bytes of a rating depend on the digits of the ids
        n = max(1, int(size // per))
        if users is None and items is None:
            u = i = max(rank, int(round(math.sqrt(n / density))))
        else:
            u = users if users is not None else max(1, int(round(n / (density * items))))
            i = items if items is not None else max(1, int(round(n / (density * u))))
        if fmt == "text":
            per = mean_digits(u) + mean_digits(i) + _RATING_CHARS
    users, items = u, i
    return write_manifest(out_dir, gen_als(out_dir, users, items, density=density, rank=rank, noise=noise,
                                           seed=seed, fmt=fmt, progress=progress))


def _data_path(data_dir: str, manifest: dict) -> str:
    return os.path.join(data_dir, manifest["files"][0])


# -- loading and grouping ---------------------------------------------------------------------
def _parse_rating(line: str) -> tuple[int, int, float]:
    u, i, r = line.split()
    return int(u), int(i), float(r)


def _array_to_table(a: np.ndarray):
    import pyarrow as pa

    return pa.table({"user": a[:, 0].astype(np.int64), "item": a[:, 1].astype(np.int64),
                     "rating": np.array(a[:, 2], dtype=np.float64)})


def load(ctx, data_dir: str, manifest: dict, api: str, num_partitions: int | None = None):
    """The ratings, unpersisted: ``(user, item, rating)`` records or Tables of those columns."""
    import pyarrow as pa

    path = _data_path(data_dir, manifest)
    if manifest["format"] == "npy":
        ds = ctx.npy_file(path, num_partitions)
        if api == "records":
            return ds.map_partitions(lambda a: [(int(u), int(i), r) for u, i, r in a.tolist()])
        return ds.map_partitions(_array_to_table)
    if api == "records":
        return ctx.text_file(path, num_partitions).map(_parse_rating)
    types = {"user": pa.int64(), "item": pa.int64(), "rating": pa.float64()}
    return ctx.csv_file(path, num_partitions, delimiter=" ", column_names=list(types), column_types=types)


def _as_arrays(values: list) -> tuple[np.ndarray, np.ndarray]:
    a = np.array(values, dtype=np.float64).reshape(-1, 2)
    return a[:, 0].astype(np.int64), a[:, 1]


def _keyed(t, by: str, other: str, blocks: int, keys: int):
    import pyarrow as pa

    key = t.column(by).to_numpy()
    if len(key) and (key.min() < 0 or key.max() >= keys):
        raise ValueError(f"als: {by} ids must lie in [0, {keys}), found {key.min()}..{key.max()}")
    return pa.table({"block": key * blocks // keys, "key": key, "other": t.column(other), "rating": t.column("rating")})


def _sorted_block(t):
    """A block of one key range, sorted by key (stable), without the block column."""
    import pyarrow as pa

    key = t.column("key").to_numpy() if t.num_rows else np.zeros(0, np.int64)
    order = np.argsort(key, kind="stable")
    other = t.column("other").to_numpy() if t.num_rows else np.zeros(0, np.int64)
    rating = t.column("rating").to_numpy() if t.num_rows else np.zeros(0)
    return pa.table({"key": key[order].astype(np.int32), "other": other[order].astype(np.int32),
                     "rating": rating[order]})


def grouped(ratings, api: str, by: str, blocks: int, keys: int):
    """The ratings grouped by ``by`` ("user" or "item") into ``blocks`` partitions."""
    k, o = (0, 1) if by == "user" else (1, 0)
    if api == "records":
        return (ratings.map(lambda t: (t[k], (t[o], t[2])))
                .group_by_key(blocks)
                .map_values(_as_arrays))
    other = "item" if by == "user" else "user"
    return (ratings.map_partitions(lambda t: _keyed(t, by, other, blocks, keys))
            .partition_by(blocks)
            .map_partitions(_sorted_block))


# -- the workload -----------------------------------------------------------------------------------
def run(ctx, data_dir: str, manifest: dict, *, api: str = "batches", level=None, serializer=None,
        iterations: int = 5, seed: int = 0, check: bool = True, rank: int = RANK, reg: float = 0.1,
        num_partitions: int | None = None) -> Outcome:
    from strataflow.storage.level import StorageLevel

    level = StorageLevel.NONE if level is None else StorageLevel.parse(level)
    users, items = int(manifest["users"]), int(manifest["items"])
    blocks = num_partitions or 4 * ctx.default_parallelism
    ratings = load(ctx, data_dir, manifest, api, blocks)
    by_user = grouped(ratings, api, "user", blocks, users)
    by_user.name = "ratings by user"
    by_item = grouped(ratings, api, "item", blocks, items)
    by_item.name = "ratings by item"
    for ds in (by_user, by_item):  # as MLlib materializes its in/out blocks before iterating
        ds.persist(level, serializer)
        ds.count()
    x, y, rmse, seconds = als(by_user, by_item, api, users, items, rank, reg, iterations, seed)
    outcome = Outcome(seconds, "ok", {"rmse": rmse[-1] if rmse else float("nan"), "rmse_per_iteration": rmse,
                                      "rank": rank, "reg": reg, "users": users, "items": items,
                                      "ratings": manifest.get("ratings"), "blocks": blocks})
    if check:
        with outcome.checking():  # not part of the run's time
            path = _data_path(data_dir, manifest)
            rx, ry, rr = reference("als", lambda: als_numpy(*read_ratings(path), users, items, rank, reg, iterations, seed),
                                   inputs=[path], users=users, items=items, rank=rank, reg=reg, iterations=iterations,
                                   seed=seed)
            problems = []
            for name, a, b in (("user factors", x, rx), ("item factors", y, ry)):
                if not np.allclose(a, b, rtol=1e-7, atol=1e-9):
                    problems.append(f"{name} differ from a numpy loop's by up to {float(np.abs(a - b).max()):.3g}")
            if not np.allclose(rmse, rr, rtol=1e-9, atol=0):
                problems.append(f"RMSE {rmse} differs from a numpy loop's {rr}")
            if len(rmse) >= 2 and not rmse[-1] < rmse[0]:
                problems.append(f"RMSE does not decrease: {rmse}")
            if problems:
                outcome.result_check = "; ".join(problems)
    return outcome
