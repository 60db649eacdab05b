"""(user, item, rating) triples from low-rank factors, for the ALS workload.

Hidden factors ``P`` (users x rank) and ``Q`` (items x rank) have independent normal
entries of variance ``1/sqrt(rank)``, so a true rating ``p_u . q_i`` has variance 1; each
(user, item) pair is rated with probability ``density``, and its rating is
``p_u . q_i + noise * N(0, 1)``, rounded to ``decimals`` places (so that the text and npy
forms hold the same numbers). Ratings are centred on 0 (no offset, which would add a
rank to the matrix).

Formats: ``ratings.txt``, one rating a line, ``user item rating`` separated by single
spaces (user and item are 0-based integers), written by pyarrow's CSV writer; or
``ratings.npy``, an ``(n, 3)`` float64 array of the same columns. Lines are ordered by
user, then item.

Generation runs over chunks of users (at most ``2**22`` candidate pairs a chunk, each
chunk with its own random stream keyed by ``(seed, first user)``), so memory is bounded
and the data depend only on the parameters and the seed.
"""

from __future__ import annotations

import os
import shutil
from typing import Callable, Iterator

import numpy as np

from strataflow.common import npy_headers

__all__ = ["gen_als", "hidden_factors", "read_ratings"]

_PAIRS_PER_CHUNK = 1 << 22


def hidden_factors(users: int, items: int, rank: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scale = rank ** -0.25
    return rng.standard_normal((users, rank)) * scale, rng.standard_normal((items, rank)) * scale


def _chunks(users: int, items: int, density: float, rank: int, noise: float, seed: int,
            decimals: int | None) -> Iterator[np.ndarray]:
    p, q = hidden_factors(users, items, rank, seed)
    step = max(1, _PAIRS_PER_CHUNK // items)
    for start in range(0, users, step):
        rows = min(users, start + step) - start
        rng = np.random.default_rng([seed, start])
        u, i = np.nonzero(rng.random((rows, items)) < density)
        u = u + start
        r = np.einsum("ij,ij->i", p[u], q[i]) + noise * rng.standard_normal(len(u))
        if decimals is not None:
            r = np.round(r, decimals)
        yield np.column_stack([u.astype(np.float64), i.astype(np.float64), r])


def gen_als(out_dir: str, users: int, items: int, density: float = 0.05, rank: int = 10, noise: float = 0.1,
            seed: int = 0, fmt: str = "text", decimals: int | None = 3,
            progress: Callable[[int], None] | None = None) -> dict:
    """Writes the ratings under ``out_dir`` and returns the manifest (the caller stores
    it). ``progress`` receives the number of ratings written."""
    if users < 1 or items < 1 or rank < 1:
        raise ValueError(f"gen als: users, items and rank must be >= 1 (got {users}, {items}, {rank})")
    if not 0.0 < density <= 1.0:
        raise ValueError(f"gen als: density must be in (0, 1], got {density}")
    if fmt not in ("text", "npy"):
        raise ValueError(f"gen als: format must be text or npy, got {fmt!r}")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "ratings.txt" if fmt == "text" else "ratings.npy")
    tmp = path + ".tmp"
    n = 0
    chunks = _chunks(users, items, density, rank, noise, seed, decimals)
    if fmt == "text":
        import pyarrow as pa
        import pyarrow.csv as pacsv

        schema = pa.schema([("user", pa.int64()), ("item", pa.int64()), ("rating", pa.float64())])
        opts = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
        with pacsv.CSVWriter(tmp, schema, write_options=opts) as writer:
            for c in chunks:
                writer.write_table(pa.table([c[:, 0].astype(np.int64), c[:, 1].astype(np.int64), c[:, 2]],
                                            schema=schema))
                n += len(c)
                if progress:
                    progress(len(c))
    else:
        raw = path + ".raw"
        with open(raw, "wb") as f:  # rows first (their count is known only at the end) ...
            for c in chunks:
                f.write(np.ascontiguousarray(c).tobytes())
                n += len(c)
                if progress:
                    progress(len(c))
        with open(tmp, "wb") as out, open(raw, "rb") as f:  # ... then the .npy header and the rows
            np.lib.format.write_array_header_1_0(out, {"descr": "<f8", "fortran_order": False, "shape": (n, 3)})
            shutil.copyfileobj(f, out, 1 << 22)
        os.remove(raw)
    os.replace(tmp, path)
    return {"workload": "als", "format": fmt, "users": users, "items": items, "ratings": n, "density": density,
            "rank": rank, "noise": noise, "decimals": decimals, "seed": seed, "bytes": os.path.getsize(path),
            "files": [os.path.basename(path)]}


def read_ratings(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(users, items, ratings)`` of a ratings file, read independently of the engine."""
    if path.endswith(".npy"):
        a = npy_headers.load(path, mmap_mode="r")
        return a[:, 0].astype(np.int64), a[:, 1].astype(np.int64), np.array(a[:, 2])
    import pyarrow as pa
    import pyarrow.csv as pacsv

    t = pacsv.read_csv(path, read_options=pacsv.ReadOptions(column_names=["user", "item", "rating"]),
                       parse_options=pacsv.ParseOptions(delimiter=" "),
                       convert_options=pacsv.ConvertOptions(column_types={
                           "user": pa.int64(), "item": pa.int64(), "rating": pa.float64()}))
    return (t.column("user").to_numpy(), t.column("item").to_numpy(), t.column("rating").to_numpy())
