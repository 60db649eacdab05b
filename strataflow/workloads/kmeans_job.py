"""The K-means workload for ``gen``, ``run`` and ``bench`` (the algorithm is in kmeans.py).

Data: HiBench's GenKMeansDataset scheme (see generators.py), 20 dimensions, coordinates
rounded to 3 decimals as HiBench's text records are, so the text and npy forms hold
identical numbers (about 170 bytes a point as text: 4M points ~ 700 MB).

Run: points and, as MLlib does, their norms persisted at the level; K=10 centres drawn
from the points with a seeded generator; ``iterations`` Lloyd steps, no early stop. The
records API parses each line into a small ndarray (the paper's RDD path); the batches
API parses text with pyarrow's vectorized CSV reader per partition, or maps .npy rows.
The check: the same init and iterations as a plain numpy loop over the same data.
"""

from __future__ import annotations

import os

import numpy as np

from strataflow.common import npy_headers
from strataflow.workloads.api import Outcome, Progress
from strataflow.workloads.generators import gen_kmeans
from strataflow.workloads.kmeans import kmeans, kmeans_numpy, parse_point, point_norms, sample_centres
from strataflow.workloads.reference import reference

__all__ = ["gen", "run", "load", "read_all_points"]

DIMS = 20
_TEXT_BYTES_PER_POINT = 157  # measured on generated data: 20 coordinates of ~6.8 chars + spaces


def gen(out_dir: str, *, size: int, seed: int = 0, fmt: str = "text", progress: Progress | None = None,
        points: int | None = None, dims: int = DIMS) -> dict:
    per_point = _TEXT_BYTES_PER_POINT * dims // DIMS if fmt == "text" else dims * 8
    n = points or max(1, size // per_point)
    gen_kmeans(out_dir, n, dims, seed=seed, fmt=fmt, progress=progress, decimals=3)
    from strataflow.workloads.api import read_manifest

    return read_manifest(out_dir)


def _data_path(data_dir: str, manifest: dict) -> str:
    return os.path.join(data_dir, manifest["files"][0])


def load(ctx, data_dir: str, manifest: dict, api: str, num_partitions: int | None = None):
    """The points, unpersisted: records (small ndarrays) or ndarray batches."""
    import pyarrow as pa

    path = _data_path(data_dir, manifest)
    dims = manifest["dims"]
    if manifest["format"] == "npy":
        ds = ctx.npy_file(path, num_partitions)
        if len(ds.node.shape) != 2 or ds.node.shape[1] != dims:
            raise ValueError(f"kmeans: {path!r} holds an array of shape {ds.node.shape}; its manifest says "
                             f"points of {dims} dimensions, so (rows, {dims})")
        return ds.map_partitions(np.array) if api == "batches" else ds.map_partitions(lambda a: list(np.array(a)))
    if manifest["format"] == "parquet":
        ds = ctx.parquet_file(path, num_partitions).map_partitions(_table_to_array)
        return ds if api == "batches" else ds.map_partitions(lambda a: list(np.ascontiguousarray(a)))
    if api == "records":
        return ctx.text_file(path, num_partitions).map(parse_point)
    names = [f"x{i}" for i in range(dims)]
    table = ctx.csv_file(path, num_partitions, delimiter=" ", column_names=names,
                         column_types={n: pa.float64() for n in names})
    return table.map_partitions(_table_to_array)


def _table_to_array(t) -> np.ndarray:
    """A table of float columns as one (rows, columns) array in column-major order: each
    column is one contiguous copy (a row-major ``column_stack`` writes with a stride of a
    whole row and ran 3x slower here); the kernel's BLAS calls take either layout. The
    parser's chunks (one per 1 MB of text) are copied straight into place: one copy."""
    out = np.empty((t.num_rows, t.num_columns), dtype=np.float64, order="F")
    for i, col in enumerate(t.columns):
        row = 0
        for chunk in col.chunks:  # chunk by chunk: ``col.to_numpy()`` would concatenate first
            n = len(chunk)
            out[row : row + n, i] = chunk.to_numpy(zero_copy_only=chunk.null_count == 0)
            row += n
    return out


def read_all_points(data_dir: str, manifest: dict) -> np.ndarray:
    """All points in one array, read independently of the engine (for the check)."""
    path = _data_path(data_dir, manifest)
    if manifest["format"] == "npy":
        return npy_headers.load(path)
    if manifest["format"] == "parquet":
        import pyarrow.parquet as pq

        return _table_to_array(pq.read_table(path))
    import pyarrow.csv as pacsv

    t = pacsv.read_csv(path, read_options=pacsv.ReadOptions(autogenerate_column_names=True),
                       parse_options=pacsv.ParseOptions(delimiter=" "))
    return _table_to_array(t)


def run(ctx, data_dir: str, manifest: dict, *, api: str = "batches", level=None, serializer=None,
        iterations: int = 5, seed: int = 0, k: int = 10, num_partitions: int | None = None,
        check: bool = True) -> Outcome:
    from strataflow.storage.level import StorageLevel

    level = StorageLevel.NONE if level is None else StorageLevel.parse(level)
    points = load(ctx, data_dir, manifest, api, num_partitions or 4 * ctx.default_parallelism)
    points.name = "points"
    points.persist(level, serializer)
    # The pass that computes and caches the points also draws the initial centres, so the
    # points are cached before their norms are derived, as in DenseKMeans (count first).
    init = sample_centres(points, k, seed)
    norms = points.map_partitions(point_norms)
    norms.name = "norms"
    norms.persist(level, serializer)
    res = kmeans(points, k=k, iterations=iterations, seed=seed, init=init, norms=norms)
    outcome = Outcome(res.iteration_s, "ok", {"cost": res.cost, "k": k})
    if check:
        with outcome.checking():  # not part of the run's time
            ref = reference("kmeans", lambda: kmeans_numpy(read_all_points(data_dir, manifest), init, iterations),
                            inputs=[_data_path(data_dir, manifest)], init=init, iterations=iterations)
            if not (np.allclose(ref.centres, res.centres, rtol=1e-7, atol=1e-6) and np.isclose(ref.cost, res.cost, rtol=1e-7)):
                outcome.result_check = (f"centres differ from a numpy run by up to "
                                        f"{float(np.abs(ref.centres - res.centres).max()):.3g}")
    return outcome

