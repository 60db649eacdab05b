"""Full-batch gradient descent of the ``lr``, ``linear`` and ``svm`` workloads over a
dataset of labelled points (:func:`train`, :func:`evaluate`), and the same descent as a
plain numpy loop (:func:`train_numpy`), the reference of the check.

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

Apart from the data (``glm_data.py``) and the workload's run (``glm.py``) because it is
the algorithm: it takes any dataset of points, batches or records.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from strataflow.workloads.glm_losses import GLMModel, model_for

__all__ = ["GLMResult", "as_xy", "partial_gradient", "train", "evaluate", "train_numpy"]


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
    model = model_for(kind)
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
    model = model_for(kind)
    reg = model.reg if reg is None else float(reg)
    _, loss, n, correct = _pass(points, model, w, f"{kind} evaluate")
    return loss / n + 0.5 * reg * float(w @ w), (correct / n if model.binary else None), n


def train_numpy(x: np.ndarray, y: np.ndarray, kind: str, iterations: int = 5, step: float | None = None,
                reg: float | None = None) -> GLMResult:
    """The same gradient descent as a plain numpy loop over all points at once, with the
    losses written out afresh (not the kernels above), as the reference of the check."""
    model = model_for(kind)
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

