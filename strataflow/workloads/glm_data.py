"""The labelled points of the ``lr``, ``linear`` and ``svm`` workloads: generating them,
and reading them into the engine (:func:`load`) or, for the check, without it
(:func:`read_all_points`).

Data: dense labelled points from a hidden weight vector ``w`` (drawn from the seed,
entries N(0, 1) scaled to norm about 3) and standard normal features rounded to
``decimals`` (default 4) places:

- ``lr``: label = Bernoulli(sigmoid(x.w)), in {0, 1};
- ``svm``: label = 1 if x.w + N(0, noise^2) > 0 else 0, {0, 1} as MLlib's SVMWithSGD
  wants (the hinge gradient maps it to -1/+1, as MLlib's HingeGradient does);
- ``linear``: label = x.w + N(0, noise^2), rounded like the features.

Formats (the manifest's ``format``; ``files[0]`` is the data file):

- ``text`` (``points.txt``): one point a line, ``label f1 f2 ... fd`` separated by
  single spaces, no header: LIBSVM's label-first order with dense, index-free features
  (HiBench's dense text records). Labels of ``lr``/``svm`` are written as ``0``/``1``;
  numbers are written in their shortest round-trip form, so text and npy hold identical
  values.
- ``npy`` (``points.npy``): one float64 array of shape ``(points, 1 + dims)``, the label
  in column 0 and the features after it: the same layout as a text line.

Generation streams: features, and the label noise, come from two independent random
streams (spawned from the seed) drawn in order, and each row's margin is computed by
elementwise operations only, so the bytes written do not depend on the chunk size
(``chunk_rows``), only on the seed; memory is bounded by one chunk.

The records API parses each line into a ``(label, features ndarray)`` record (MLlib's
``LabeledPoint``) and each partition's records are stacked into one matrix per
iteration; the batches API holds each partition as one ``(rows, 1 + dims)`` array,
parsed from text by pyarrow's vectorized CSV reader or copied from the ``.npy`` file, in
column-major (Fortran) order: the labels ``a[:, 0]`` and the features ``a[:, 1:]`` are
then contiguous, so ``x @ w`` and ``x.T @ r`` are plain BLAS calls (on the row-major
slice ``x.T @ r`` was 4x slower and a whole linear-regression step 3x slower).

Apart from the models (``glm_losses.py``) and the training (``glm_train.py``): the files'
layout is fixed here alone, and a generated file is read back by both paths.
"""

from __future__ import annotations

import math
import os

import numpy as np

from strataflow.common import npy_headers
from strataflow.workloads.api import Progress, write_manifest
from strataflow.workloads.glm_losses import model_for

__all__ = ["DIMS", "DECIMALS", "WEIGHT_NORM", "NOISE", "CHUNK_ROWS", "FORMATS", "hidden_weights", "gen_glm", "gen",
           "parse_labeled_point", "load", "read_all_points", "data_path"]

DIMS = 20
DECIMALS = 4
WEIGHT_NORM = 3.0  # the hidden weights' expected norm: margins x.w have a std of about 3
NOISE = 0.5  # the std of the noise added to x.w (svm, linear)
CHUNK_ROWS = 1 << 16
FORMATS = ("text", "npy")


def hidden_weights(seed: int, dims: int) -> np.ndarray:
    """The hidden weight vector of a seed: N(0, 1) entries scaled to a norm of about 3."""
    w_seq = np.random.SeedSequence(seed).spawn(3)[0]
    return np.random.default_rng(w_seq).standard_normal(dims) * (WEIGHT_NORM / math.sqrt(dims))


def _glm_chunks(kind: str, points: int, dims: int, seed: int, chunk_rows: int, decimals: int, noise: float):
    """``(features, labels)`` chunks in row order. Features and label noise come from two
    streams drawn sequentially, and the margin is a column-by-column sum (elementwise,
    never a BLAS call whose summation order could depend on the row count), so every
    row is the same whatever ``chunk_rows`` is."""
    w = hidden_weights(seed, dims)
    _, x_seq, n_seq = np.random.SeedSequence(seed).spawn(3)
    rx, rn = np.random.default_rng(x_seq), np.random.default_rng(n_seq)
    for start in range(0, points, chunk_rows):
        rows = min(chunk_rows, points - start)
        x = np.round(rx.standard_normal((rows, dims)), decimals)
        x += 0.0  # -0.0 -> 0.0, so that text reads "0", never "-0"
        margin = x[:, 0] * w[0]
        for j in range(1, dims):
            margin += x[:, j] * w[j]
        if kind == "lr":
            prob = 1.0 / (1.0 + np.exp(-margin))
            y = (rn.random(rows) < prob).astype(np.int8)
        elif kind == "svm":
            y = (margin + noise * rn.standard_normal(rows) > 0).astype(np.int8)
        else:
            y = np.round(margin + noise * rn.standard_normal(rows), decimals) + 0.0
        yield x, y


def gen_glm(kind: str, out_dir: str, points: int, dims: int = DIMS, seed: int = 0, fmt: str = "text",
            progress: Progress | None = None, chunk_rows: int = CHUNK_ROWS, decimals: int = DECIMALS,
            noise: float = NOISE) -> dict:
    """Writes ``points`` labelled points to ``out_dir`` (see the module's docstring for
    the formats) and the manifest beside them; returns the manifest."""
    model_for(kind)
    if points < 1 or dims < 1 or chunk_rows < 1:
        raise ValueError(f"gen {kind}: points, dims and chunk_rows must be >= 1 (got {points}, {dims}, {chunk_rows})")
    if fmt not in FORMATS:
        raise ValueError(f"gen {kind}: format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "points.npy" if fmt == "npy" else "points.txt")
    tmp = path + ".tmp"
    chunks = _glm_chunks(kind, points, dims, seed, chunk_rows, decimals, noise)
    labels_seen = np.zeros(2, dtype=np.int64)  # binary: count of 0s and 1s, for the manifest
    if fmt == "npy":
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float64, shape=(points, 1 + dims))
        try:
            start = 0
            for x, y in chunks:
                out[start : start + len(x), 0] = y
                out[start : start + len(x), 1:] = x
                start += len(x)
                if kind != "linear":
                    labels_seen += np.bincount(y, minlength=2)
                if progress:
                    progress(len(x))
            out.flush()
        finally:
            del out
    else:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        names = ["label"] + [f"x{i}" for i in range(dims)]
        label_type = pa.float64() if kind == "linear" else pa.int8()
        schema = pa.schema([("label", label_type)] + [(n, pa.float64()) for n in names[1:]])
        opts = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
        with pacsv.CSVWriter(tmp, schema, write_options=opts) as writer:
            for x, y in chunks:
                writer.write_table(pa.Table.from_arrays([pa.array(y, type=label_type)] + list(x.T), schema=schema))
                if kind != "linear":
                    labels_seen += np.bincount(y, minlength=2)
                if progress:
                    progress(len(x))
    os.replace(tmp, path)
    manifest = {"workload": kind, "format": fmt, "points": points, "dims": dims, "seed": seed,
                "decimals": decimals, "noise": noise if kind != "lr" else None,
                "labels": "real" if kind == "linear" else "0/1",
                "bytes": os.path.getsize(path), "files": [os.path.basename(path)],
                "layout": "label f1 ... fd" if fmt == "text" else "(points, 1 + dims) float64, label in column 0",
                "hidden_weights": hidden_weights(seed, dims).tolist()}
    if kind != "linear":
        manifest["positives"] = int(labels_seen[1])
    return write_manifest(out_dir, manifest)


def _text_bytes_per_point(kind: str, dims: int, decimals: int) -> float:
    """About the bytes of one text line (measured: 120 bytes a point at 16 dimensions): a
    N(0, 1) value rounded to 4 places averages 6.4 characters ("-0.1234", "1.2345", a
    few with trailing zeros dropped) and a separator; the label is "0 "/"1 " (lr, svm)
    or a value like the features (linear)."""
    per_value = decimals + 3.4
    return (dims + (kind == "linear")) * per_value + (2 if kind != "linear" else 0)


def gen(kind: str, out_dir: str, *, size: int, seed: int = 0, fmt: str = "text", progress: Progress | None = None,
        points: int | None = None, dims: int = DIMS, chunk_rows: int = CHUNK_ROWS, decimals: int = DECIMALS,
        noise: float = NOISE) -> dict:
    """The workload contract's ``gen``: ``points`` or, without it, as many points as make
    about ``size`` bytes of data."""
    per_point = _text_bytes_per_point(kind, dims, decimals) if fmt == "text" else (1 + dims) * 8
    n = points or max(1, int(size // per_point))
    return gen_glm(kind, out_dir, n, dims, seed=seed, fmt=fmt, progress=progress, chunk_rows=chunk_rows,
                   decimals=decimals, noise=noise)


# -- reading ----------------------------------------------------------------------------------------
def parse_labeled_point(line: str) -> tuple[float, np.ndarray]:
    """One text line ``label f1 ... fd`` as a ``(label, features)`` record (the records
    API's parse, MLlib's ``LabeledPoint(parts(0).toDouble, Vectors.dense(...))``)."""
    parts = line.split()
    return float(parts[0]), np.array(parts[1:], dtype=np.float64)


def _rows_to_records(a: np.ndarray) -> list:
    return [(float(r[0]), np.array(r[1:], dtype=np.float64)) for r in a]


def _table_to_array(t, dims: int) -> np.ndarray:
    """A table of the label and feature columns as one column-major float64 array."""
    out = np.empty((t.num_rows, 1 + dims), dtype=np.float64, order="F")
    for j, c in enumerate(t.columns):
        out[:, j] = c.to_numpy()
    return out


def data_path(data_dir: str, manifest: dict) -> str:
    """The data file a manifest names (``files[0]``)."""
    return os.path.join(data_dir, manifest["files"][0])


def load(ctx, data_dir: str, manifest: dict, api: str, num_partitions: int | None = None):
    """The labelled points, unpersisted: ``(label, features)`` records, or column-major
    ndarray batches of shape ``(rows, 1 + dims)`` with the label in column 0."""
    import pyarrow as pa

    path = data_path(data_dir, manifest)
    dims = manifest["dims"]
    if api not in ("records", "batches"):
        raise ValueError(f"api must be records or batches, got {api!r}")
    if manifest["format"] == "npy":
        ds = ctx.npy_file(path, num_partitions)
        return ds.map_partitions(np.asfortranarray) if api == "batches" else ds.map_partitions(_rows_to_records)
    if api == "records":
        return ctx.text_file(path, num_partitions).map(parse_labeled_point)
    names = ["label"] + [f"x{i}" for i in range(dims)]
    table = ctx.csv_file(path, num_partitions, delimiter=" ", column_names=names,
                         column_types={n: pa.float64() for n in names})
    return table.map_partitions(lambda t: _table_to_array(t, dims))


def read_all_points(data_dir: str, manifest: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(features, labels)`` of every point, read without the engine (for the check):
    ``np.load`` or pyarrow's CSV reader on the whole file."""
    path = data_path(data_dir, manifest)
    if manifest["format"] == "npy":
        a = npy_headers.load(path)
    else:
        import pyarrow.csv as pacsv

        t = pacsv.read_csv(path, read_options=pacsv.ReadOptions(autogenerate_column_names=True),
                           parse_options=pacsv.ParseOptions(delimiter=" "))
        a = _table_to_array(t, manifest["dims"])
    return np.ascontiguousarray(a[:, 1:]), np.ascontiguousarray(a[:, 0])
