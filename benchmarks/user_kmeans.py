"""A user's K-means over a CSV of points, as the README's first examples would have them
write it: ``csv_file`` (types inferred) -> one numpy batch per partition ->
``persist(MEMORY_AND_DISK)`` in a 128 MB budget -> 5 passes of ``map_partitions`` and
``collect``. ``benchmarks/input_cache.py`` runs it, unchanged, as separate applications.

    python benchmarks/user_kmeans.py POINTS.txt [K]

Prints one JSON line: seconds to the points cached (``load_s``, from the Context's start),
in all (``total_s``, from before the Context to after its end), per pass, and the
application's input-cache figures.
"""

import json
import sys
import time

t_start = time.perf_counter()

import numpy as np  # noqa: E402

from strataflow import Context, StorageLevel  # noqa: E402


def to_batch(table):
    return np.vstack([c.to_numpy() for c in table.columns]).T  # a row per point


def main() -> None:
    path, k = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10
    with Context(memory="128MB", parallelism=2) as ctx:
        t0 = time.perf_counter()
        points = ctx.csv_file(path, delimiter=" ").map_partitions(to_batch)
        points.persist(StorageLevel.MEMORY_AND_DISK)
        centres = points.map_partitions(lambda b: b[:k]).collect_partitions()[0].copy()
        load_s = time.perf_counter() - t0
        passes = []
        for _ in range(5):
            t = time.perf_counter()

            def partial(b, c=centres):
                near = ((c * c).sum(1) - 2 * (b @ c.T)).argmin(1)  # |b|^2 is the same for every centre
                sums = np.stack([np.bincount(near, weights=b[:, j], minlength=len(c)) for j in range(b.shape[1])], 1)
                return [(sums, np.bincount(near, minlength=len(c)))]

            parts = points.map_partitions(partial).collect()
            sums = sum(p[0] for p in parts)
            counts = sum(p[1] for p in parts)
            centres = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centres)
            passes.append(time.perf_counter() - t)
        m = ctx.metrics()
    total = time.perf_counter() - t_start
    print(json.dumps({"load_s": load_s, "total_s": total, "pass_s": passes,
                      "check": float(np.round(centres.sum(), 3)),
                      "input": {k: v for k, v in m.items() if k.startswith("input_")}}))


if __name__ == "__main__":
    main()
