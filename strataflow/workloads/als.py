"""Alternating least squares (MLlib's explicit ALS) on the engine, and the same as a plain
numpy loop (the reference). The workload around it (data, grouping, check) is als_job.py.

Both sides of an iteration solve, for every key (user or item) with ratings, the
regularized normal equations ``(F_k^T F_k + reg * n_k * I) x_k = F_k^T r_k`` over the
factors ``F_k`` of the ``n_k`` other-side ids it rated. A key without ratings gets a
zero factor. The RMSE after an iteration is computed in the item pass, which holds every
rating with the new item factors and the user factors.
"""

from __future__ import annotations

import math
import time

import numpy as np

from strataflow.workloads.ragged import length_blocks, padded_index

__all__ = ["RANK", "init_factors", "solve_sorted", "als", "als_numpy"]

RANK = 10
_BLOCK_CELLS = 1 << 15  # (key, rating) cells of a padded block: 2.6 MB of gathered factors at rank 10


def init_factors(n: int, rank: int, seed: int) -> np.ndarray:
    """Seeded normal rows scaled to unit norm (MLlib's initialization)."""
    f = np.random.default_rng([seed, 0xA15]).standard_normal((n, rank))
    return f / np.linalg.norm(f, axis=1, keepdims=True)


def solve_sorted(keys: np.ndarray, others: np.ndarray, r: np.ndarray, f: np.ndarray, reg: float,
                 sse: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
    """The factors of every key of ratings sorted by key, vectorized: ``(keys, factors,
    squared error of the ratings under the new factors)``. Keys of similar rating counts
    are padded into blocks (ragged.py): one gather of the other side's factors, stacked
    matrix products for the Gram matrices and right-hand sides, one stacked solve."""
    n, rank = len(keys), f.shape[1]
    if n == 0:
        return np.zeros(0, np.int64), np.zeros((0, rank)), 0.0
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    lengths = np.diff(np.append(starts, n))
    x = np.empty((len(starts), rank))
    diag = np.arange(rank)
    err = 0.0
    for rows in length_blocks(lengths, _BLOCK_CELLS):
        index, mask = padded_index(starts[rows], lengths[rows])
        fo = f[others[index]]  # (keys, longest, rank)
        fo[~mask] = 0.0
        rr = np.where(mask, r[index], 0.0)
        fot = fo.transpose(0, 2, 1)
        gram = fot @ fo
        gram[:, diag, diag] += reg * lengths[rows, None]
        xb = np.linalg.solve(gram, fot @ rr[:, :, None])
        x[rows] = xb[:, :, 0]
        if sse:  # padded cells are 0 in both, so they add nothing
            err += float(np.sum(np.square(rr - (fo @ xb)[:, :, 0])))
    return keys[starts].astype(np.int64), x, err


def _solve_table(t, f: np.ndarray, reg: float, sse: bool):
    keys = t.column("key").to_numpy() if t.num_rows else np.zeros(0, np.int32)
    others = t.column("other").to_numpy() if t.num_rows else np.zeros(0, np.int32)
    r = t.column("rating").to_numpy() if t.num_rows else np.zeros(0)
    ukeys, x, err = solve_sorted(keys, others, r, f, reg, sse)
    return ukeys, x, err, len(r)


def _solve_records(recs, f: np.ndarray, reg: float, sse: bool):
    rank = f.shape[1]
    keys, xs, err, n = [], [], 0.0, 0
    eye = np.eye(rank)
    for key, (others, r) in recs:
        fo = f[others]
        x = np.linalg.solve(fo.T @ fo + reg * len(r) * eye, fo.T @ r)
        keys.append(key)
        xs.append(x)
        if sse:
            err += float(np.sum(np.square(r - fo @ x)))
        n += len(r)
    return np.array(keys, dtype=np.int64), np.array(xs).reshape(-1, rank), err, n


def _solve_all(ds, api: str, f: np.ndarray, reg: float, num_keys: int, sse: bool, name: str):
    kernel = _solve_records if api == "records" else _solve_table
    step = ds.map_partitions(lambda v: [kernel(v, f, reg, sse)])
    step.name = name
    out = np.zeros((num_keys, f.shape[1]))
    err = n = 0
    for keys, x, e, c in step.collect():
        out[keys] = x
        err += e
        n += c
    return out, err, n


def als(by_user, by_item, api: str, users: int, items: int, rank: int = RANK, reg: float = 0.1,
        iterations: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[float], list[float]]:
    """``(user factors, item factors, RMSE after each iteration, seconds of each)``."""
    y = init_factors(items, rank, seed)
    x = np.zeros((users, rank))
    rmse, seconds = [], []
    for it in range(iterations):
        t0 = time.perf_counter()
        x, _, _ = _solve_all(by_user, api, y, reg, users, False, f"als iteration {it + 1}: users")
        y, err, n = _solve_all(by_item, api, x, reg, items, True, f"als iteration {it + 1}: items")
        rmse.append(math.sqrt(err / n) if n else float("nan"))
        seconds.append(time.perf_counter() - t0)
    return x, y, rmse, seconds


def als_numpy(u: np.ndarray, i: np.ndarray, r: np.ndarray, users: int, items: int, rank: int = RANK,
              reg: float = 0.1, iterations: int = 5, seed: int = 0):
    """The reference: the same ALS as a plain loop, one ``np.linalg.solve`` per user and
    per item; ``(user factors, item factors, RMSE after each iteration)``."""

    def groups(keys):  # the positions of each key's ratings, once for all iterations
        order = np.argsort(keys, kind="stable")
        return np.split(order, np.flatnonzero(np.diff(keys[order])) + 1) if len(order) else []

    def half(keys, others, groups_, f, num_keys):
        out = np.zeros((num_keys, rank))
        eye = np.eye(rank)
        for idx in groups_:
            fo = f[others[idx]]
            out[keys[idx[0]]] = np.linalg.solve(fo.T @ fo + reg * len(idx) * eye, fo.T @ r[idx])
        return out

    by_user, by_item = groups(u), groups(i)
    y = init_factors(items, rank, seed)
    x = np.zeros((users, rank))
    rmse = []
    for _ in range(iterations):
        x = half(u, i, by_user, y, users)
        y = half(i, u, by_item, x, items)
        rmse.append(math.sqrt(np.mean(np.square(r - np.einsum("ij,ij->i", x[u], y[i])))) if len(r) else float("nan"))
    return x, y, rmse
