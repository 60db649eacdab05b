"""Generalized linear models trained by full-batch gradient descent: the shared part of
the ``lr`` (logistic regression), ``linear`` (least squares) and ``svm`` (hinge loss)
workloads.

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

Training (as MLlib's ``GradientDescent`` with ``miniBatchFraction = 1.0``): weights start
at zero; iteration ``i`` (from 1) is one job over the persisted points that computes
each partition's gradient sum, loss sum and count with vectorized numpy; the partials are
combined on the driver in partition order (deterministic) and the weights move by
``step / sqrt(i)`` times the mean gradient. ``reg`` is an L2 penalty applied as MLlib's
``SquaredL2Updater`` (``w <- w (1 - s reg) - s g``); 0 means MLlib's ``SimpleUpdater``.
Defaults: step 1.0 for all three (MLlib's default; the features have unit variance, so
the least-squares Hessian is about the identity and step 1 is near the best fixed step),
``reg`` 0 for ``lr`` and ``linear`` (``LogisticRegressionWithSGD.train`` and
``LinearRegressionWithSGD``) and 0.01 for ``svm`` (``SVMWithSGD``'s default). The loss
history is MLlib's ``stochasticLossHistory``: the mean loss at the weights before each
update plus the penalty. After the iterations one evaluation job computes the loss (and,
for ``lr``/``svm``, the training accuracy) at the final weights.

The records API parses each line into a ``(label, features ndarray)`` record (MLlib's
``LabeledPoint``) and each partition's records are stacked into one matrix per
iteration; the batches API holds each partition as one ``(rows, 1 + dims)`` array,
parsed from text by pyarrow's vectorized CSV reader or copied from the ``.npy`` file, in
column-major (Fortran) order: the labels ``a[:, 0]`` and the features ``a[:, 1:]`` are
then contiguous, so ``x @ w`` and ``x.T @ r`` are plain BLAS calls (on the row-major
slice ``x.T @ r`` was 4x slower and a whole linear-regression step 3x slower).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from strataflow.workloads.api import Outcome, Progress, write_manifest
from strataflow.workloads.reference import reference

__all__ = ["KINDS", "MODELS", "GLMModel", "GLMResult", "hidden_weights", "gen_glm", "gen", "run", "load",
           "read_all_points", "parse_labeled_point", "as_xy", "partial_gradient", "train", "evaluate", "train_numpy",
           "logistic_gradient", "least_squares_gradient", "hinge_gradient"]

KINDS = ("lr", "linear", "svm")
DIMS = 20
DECIMALS = 4
WEIGHT_NORM = 3.0  # the hidden weights' expected norm: margins x.w have a std of about 3
NOISE = 0.5  # the std of the noise added to x.w (svm, linear)
CHUNK_ROWS = 1 << 16
FORMATS = ("text", "npy")


# -- the losses -------------------------------------------------------------------------------
def logistic_gradient(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float, int]:
    """MLlib's binary LogisticGradient summed over the rows: gradient ``(sigmoid(x.w) -
    y) x``, loss ``log(1 + exp(-x.w)) + (1 - y) x.w``; and the rows predicted right
    (probability above 1/2, i.e. x.w > 0)."""
    z = x @ w
    softplus_neg = np.logaddexp(0.0, -z)  # log(1 + exp(-z)), without overflow
    loss = float(softplus_neg.sum() + ((1.0 - y) * z).sum())
    grad = x.T @ (np.exp(-softplus_neg) - y)  # exp(-log(1 + exp(-z))) = sigmoid(z)
    correct = int(np.count_nonzero((z > 0) == (y > 0.5)))
    return grad, loss, correct


def least_squares_gradient(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float, int]:
    """MLlib's LeastSquaresGradient summed: gradient ``(x.w - y) x``, loss ``(x.w - y)^2 / 2``
    (no accuracy: the count is 0)."""
    diff = x @ w - y
    return x.T @ diff, float(0.5 * (diff @ diff)), 0


def hinge_gradient(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float, int]:
    """MLlib's HingeGradient summed, labels {0, 1} scaled to s = 2y - 1: where
    ``s x.w < 1`` the gradient is ``-s x`` and the loss ``1 - s x.w``, else both are 0;
    and the rows predicted right (x.w > 0 predicts 1, MLlib's threshold 0)."""
    z = x @ w
    s = 2.0 * y - 1.0
    slack = 1.0 - s * z
    active = slack > 0
    grad = x.T @ np.where(active, -s, 0.0)
    correct = int(np.count_nonzero((z > 0) == (y > 0.5)))
    return grad, float(slack[active].sum()), correct


@dataclass(frozen=True)
class GLMModel:
    name: str
    gradient: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, float, int]]
    binary: bool  # labels in {0, 1}; accuracy is reported
    step: float  # MLlib's stepSize; iteration i moves by step / sqrt(i)
    reg: float  # L2 penalty (MLlib's regParam with SquaredL2Updater); 0: SimpleUpdater


MODELS: dict[str, GLMModel] = {
    "lr": GLMModel("lr", logistic_gradient, True, 1.0, 0.0),
    "linear": GLMModel("linear", least_squares_gradient, False, 1.0, 0.0),
    "svm": GLMModel("svm", hinge_gradient, True, 1.0, 0.01),
}


def _model(kind: str) -> GLMModel:
    if kind not in MODELS:
        raise ValueError(f"unknown GLM {kind!r}; choose one of {', '.join(KINDS)}")
    return MODELS[kind]


# -- the generator --------------------------------------------------------------------------------
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
    _model(kind)
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


def _data_path(data_dir: str, manifest: dict) -> str:
    return os.path.join(data_dir, manifest["files"][0])


def load(ctx, data_dir: str, manifest: dict, api: str, num_partitions: int | None = None):
    """The labelled points, unpersisted: ``(label, features)`` records, or column-major
    ndarray batches of shape ``(rows, 1 + dims)`` with the label in column 0."""
    import pyarrow as pa

    path = _data_path(data_dir, manifest)
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
    path = _data_path(data_dir, manifest)
    if manifest["format"] == "npy":
        a = np.load(path)
    else:
        import pyarrow.csv as pacsv

        t = pacsv.read_csv(path, read_options=pacsv.ReadOptions(autogenerate_column_names=True),
                           parse_options=pacsv.ParseOptions(delimiter=" "))
        a = _table_to_array(t, manifest["dims"])
    return np.ascontiguousarray(a[:, 1:]), np.ascontiguousarray(a[:, 0])


def as_xy(value) -> tuple[np.ndarray, np.ndarray]:
    """A partition as ``(features matrix, labels)``: a batch is split by columns (views;
    contiguous when the batch is column-major), records are stacked."""
    if isinstance(value, np.ndarray):
        return value[:, 1:], value[:, 0]
    if not len(value):
        return np.zeros((0, 0)), np.zeros(0)
    return np.stack([p[1] for p in value]), np.fromiter((p[0] for p in value), dtype=np.float64, count=len(value))


def partial_gradient(model: GLMModel, value, w: np.ndarray) -> tuple[np.ndarray, float, int, int]:
    """``(gradient sum, loss sum, rows, rows predicted right)`` of one partition."""
    x, y = as_xy(value)
    if len(y) == 0:
        return np.zeros_like(w), 0.0, 0, 0
    grad, loss, correct = model.gradient(x, y, w)
    return grad, loss, len(y), correct


# -- training ------------------------------------------------------------------------------------------
@dataclass
class GLMResult:
    weights: np.ndarray
    losses: list[float] = field(default_factory=list)  # MLlib's loss history: before each update
    iteration_s: list[float] = field(default_factory=list)
    loss: float = float("nan")  # at the final weights, with the penalty
    accuracy: float | None = None  # at the final weights (lr, svm)
    points: int = 0


def _update(w: np.ndarray, grad_mean: np.ndarray, step: float, it: int, reg: float) -> tuple[np.ndarray, float]:
    """MLlib's SimpleUpdater (reg 0) or SquaredL2Updater: the new weights and the penalty
    ``reg |w|^2 / 2`` at them."""
    s = step / math.sqrt(it)
    if reg:
        w = w * (1.0 - s * reg) - s * grad_mean
    else:
        w = w - s * grad_mean
    return w, 0.5 * reg * float(w @ w)


def _combine(parts: list) -> tuple[np.ndarray, float, int, int]:
    """The partials summed in partition order (so results are deterministic)."""
    grad = parts[0][0].copy()
    loss, n, correct = parts[0][1], parts[0][2], parts[0][3]
    for g, lo, c, k in parts[1:]:
        grad += g
        loss += lo
        n += c
        correct += k
    return grad, loss, n, correct


def _pass(points, model: GLMModel, w: np.ndarray, name: str) -> tuple[np.ndarray, float, int, int]:
    step = points.map_partitions(lambda v, w=w: [partial_gradient(model, v, w)])
    step.name = name
    grad, loss, n, correct = _combine(step.collect())
    if n == 0:
        raise ValueError(f"{model.name}: the data set holds no points")
    return grad, loss, n, correct


def train(points, kind: str, dims: int, iterations: int = 5, step: float | None = None,
          reg: float | None = None) -> GLMResult:
    """Full-batch gradient descent over a dataset of points (batches or records): one job
    per iteration, weights from zero, step ``step / sqrt(i)``."""
    model = _model(kind)
    step = model.step if step is None else float(step)
    reg = model.reg if reg is None else float(reg)
    w = np.zeros(dims)
    reg_val = 0.0
    result = GLMResult(w)
    for it in range(1, iterations + 1):
        t0 = time.perf_counter()
        grad, loss, n, _ = _pass(points, model, w, f"{kind} iteration {it}")
        result.losses.append(loss / n + reg_val)
        w, reg_val = _update(w, grad / n, step, it, reg)
        result.iteration_s.append(time.perf_counter() - t0)
    result.weights = w
    return result


def evaluate(points, kind: str, w: np.ndarray, reg: float | None = None) -> tuple[float, float | None, int]:
    """One job: the mean loss (plus the penalty) at ``w``, the training accuracy (lr,
    svm; None for linear) and the number of points."""
    model = _model(kind)
    reg = model.reg if reg is None else float(reg)
    _, loss, n, correct = _pass(points, model, w, f"{kind} evaluate")
    return loss / n + 0.5 * reg * float(w @ w), (correct / n if model.binary else None), n


def train_numpy(x: np.ndarray, y: np.ndarray, kind: str, iterations: int = 5, step: float | None = None,
                reg: float | None = None) -> GLMResult:
    """The same gradient descent as a plain numpy loop over all points at once, with the
    losses written out afresh (not the kernels above), as the reference of the check."""
    model = _model(kind)
    step = model.step if step is None else float(step)
    reg = model.reg if reg is None else float(reg)
    n, d = x.shape
    w = np.zeros(d)

    def loss_grad(w):
        z = x @ w
        if kind == "lr":
            p = 1.0 / (1.0 + np.exp(-z))
            loss = np.where(y > 0, np.log1p(np.exp(-z)), np.log1p(np.exp(-z)) + z)
            return loss.mean(), x.T @ (p - y) / n, np.mean((p > 0.5) == (y > 0))
        if kind == "linear":
            r = z - y
            return np.mean(r * r) / 2, x.T @ r / n, None
        s = np.where(y > 0, 1.0, -1.0)
        hinge = np.maximum(0.0, 1.0 - s * z)
        g = -(x * (s * (hinge > 0))[:, None]).sum(axis=0)
        return hinge.mean(), g / n, np.mean((z > 0) == (y > 0))

    result = GLMResult(w, points=n)
    for it in range(1, iterations + 1):
        t0 = time.perf_counter()
        loss, g, _ = loss_grad(w)
        result.losses.append(float(loss) + 0.5 * reg * float(w @ w))
        s = step / math.sqrt(it)
        w = w * (1.0 - s * reg) - s * g
        result.iteration_s.append(time.perf_counter() - t0)
    loss, _, acc = loss_grad(w)
    result.weights = w
    result.loss = float(loss) + 0.5 * reg * float(w @ w)
    result.accuracy = None if acc is None else float(acc)
    return result


# -- the workload ---------------------------------------------------------------------------------------
def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(a @ b) / (na * nb) if na and nb else float("nan")


def run(kind: str, ctx, data_dir: str, manifest: dict, *, api: str = "batches", level=None, serializer=None,
        iterations: int = 5, seed: int = 0, check: bool = True, step: float | None = None, reg: float | None = None,
        num_partitions: int | None = None, rtol: float = 1e-9) -> Outcome:
    """Loads and persists the points at ``level``, counts them (the load stage), runs
    ``iterations`` gradient steps and one evaluation pass, and checks the weights and
    losses against :func:`train_numpy` on the same data read independently. ``seed`` is
    accepted for the contract; nothing here is random (weights start at zero and every
    iteration uses every point)."""
    from strataflow.storage.level import StorageLevel

    model = _model(kind)
    if manifest.get("workload") != kind:
        raise ValueError(f"{data_dir!r} holds {manifest.get('workload')!r} data, not {kind}")
    level = StorageLevel.NONE if level is None else StorageLevel.parse(level)
    step = model.step if step is None else float(step)
    reg = model.reg if reg is None else float(reg)
    dims = manifest["dims"]
    points = load(ctx, data_dir, manifest, api, num_partitions or 4 * ctx.default_parallelism)
    points.name = "points"
    points.persist(level, serializer)
    points.count()
    res = train(points, kind, dims, iterations, step, reg)
    res.loss, res.accuracy, res.points = evaluate(points, kind, res.weights, reg)
    extra = {"loss": res.loss, "losses": res.losses, "points": res.points, "dims": dims, "step": step, "reg": reg,
             "weights_norm": float(np.linalg.norm(res.weights))}
    if model.binary:
        extra["accuracy"] = res.accuracy
    if manifest.get("hidden_weights") is not None:
        extra["hidden_weights_cosine"] = _cosine(res.weights, np.asarray(manifest["hidden_weights"]))
    outcome = Outcome(res.iteration_s, "ok", extra)
    if check:
        with outcome.checking():  # not part of the run's time
            outcome.result_check = _check(kind, res, data_dir, manifest, iterations, step, reg, rtol)
    return outcome


def _check(kind: str, res: GLMResult, data_dir: str, manifest: dict, iterations: int, step: float, reg: float,
           rtol: float) -> str:
    def compute() -> tuple:
        x, y = read_all_points(data_dir, manifest)
        return train_numpy(x, y, kind, iterations, step, reg), len(y)

    ref, points = reference(kind, compute, inputs=[_data_path(data_dir, manifest)], iterations=iterations, step=step,
                            reg=reg)
    problems = []
    if res.points != points:
        problems.append(f"trained on {res.points} points, the file holds {points}")
    if not np.allclose(res.weights, ref.weights, rtol=rtol, atol=rtol * 1e-3):
        diff = float(np.abs(res.weights - ref.weights).max())
        problems.append(f"weights differ from a numpy run by up to {diff:.3g}")
    if not np.allclose(res.losses, ref.losses, rtol=rtol, atol=0.0):
        problems.append(f"losses {res.losses} differ from a numpy run's {ref.losses}")
    if not math.isclose(res.loss, ref.loss, rel_tol=rtol):
        problems.append(f"final loss {res.loss!r} differs from a numpy run's {ref.loss!r}")
    if ref.accuracy is not None and not math.isclose(res.accuracy, ref.accuracy, rel_tol=0.0, abs_tol=1.5 / points):
        problems.append(f"accuracy {res.accuracy!r} differs from a numpy run's {ref.accuracy!r}")
    if iterations >= 1 and not res.loss < res.losses[0]:
        problems.append(f"the loss did not decrease: {res.losses[0]!r} at the start, {res.loss!r} at the end")
    return "ok" if not problems else "; ".join(problems)


def job(kind: str):
    """The ``gen`` and ``run`` functions of the workload ``kind`` (lr, linear, svm): the
    three workload modules differ only in their loss, which ``kind`` selects."""

    def gen_job(out_dir: str, *, size: int, seed: int = 0, fmt: str = "text", progress: Progress | None = None,
                points: int | None = None, dims: int = DIMS, **options) -> dict:
        """Labelled points (``label f1 ... fd`` text lines or a ``(points, 1 + dims)`` .npy);
        ``options``: chunk_rows, decimals, noise."""
        return gen(kind, out_dir, size=size, seed=seed, fmt=fmt, progress=progress, points=points, dims=dims,
                   **options)

    def run_job(ctx, data_dir: str, manifest: dict, *, api: str = "batches", level=None, serializer=None,
                iterations: int = 5, seed: int = 0, check: bool = True, **options):
        """Persists the parsed points at ``level``, trains, evaluates and checks against a
        numpy loop; ``options``: step, reg, num_partitions, rtol."""
        return run(kind, ctx, data_dir, manifest, api=api, level=level, serializer=serializer,
                   iterations=iterations, seed=seed, check=check, **options)

    return gen_job, run_job
