"""The checks of a PySpark peer run's result against numpy on the same data files:
K-means centres (:func:`kmeans_check`) and logistic-regression weights (:func:`lr_check`).

Apart from ``pyspark_peer.py`` because they depend on the workloads' numpy references, not
on how Spark is run; each returns ``"ok"`` or what is wrong, and figures for the report.
"""

from __future__ import annotations

import math

__all__ = ["kmeans_check", "lr_check"]


def kmeans_check(data_dir: str, manifest: dict, centres, training_cost: float | None, k: int, iterations: int,
                seed: int) -> tuple[str, dict]:
    """What can be checked without Spark's random init (an XORShift sample we cannot
    replay): ``k`` finite centres inside the data's bounding box, and the cost of Spark's
    final centres, computed with numpy on the same data, not above Spark's training cost
    (the cost of the centres before the last update: a Lloyd step never raises it), to a
    relative 1e-6. The cost of our numpy K-means (our init, same k and iterations) is
    reported beside it, not compared: different inits reach different local optima."""
    import numpy as np

    from strataflow.workloads.kmeans import init_centres, kmeans_numpy, kmeans_partition
    from strataflow.workloads.kmeans_job import read_all_points

    data = read_all_points(data_dir, manifest)
    c = np.asarray(centres, dtype=np.float64)
    _, _, final_cost = kmeans_partition(data, c)
    ref = kmeans_numpy(data, init_centres(data, k, seed), iterations)
    extra = {"final_cost_numpy": float(final_cost), "numpy_reference_cost": float(ref.cost),
             "cost_ratio_vs_numpy_reference": float(final_cost / ref.cost) if ref.cost else None}
    lo, hi = data.min(axis=0), data.max(axis=0)
    if c.shape != (k, data.shape[1]):
        return f"Spark returned centres of shape {c.shape}, expected {(k, data.shape[1])}", extra
    if not np.isfinite(c).all():
        return "Spark's centres are not all finite", extra
    if ((c < lo - 1e-9 * np.abs(lo)) | (c > hi + 1e-9 * np.abs(hi))).any():
        return "a Spark centre lies outside the data's bounding box", extra
    if training_cost is not None and final_cost > training_cost * (1 + 1e-6) + 1e-9:
        return (f"the cost of Spark's final centres ({final_cost:.6g}) exceeds its training cost "
                f"({training_cost:.6g})"), extra
    return "ok", extra


def lr_check(data_dir: str, manifest: dict, path: str, res: dict, iterations: int) -> tuple[str, dict]:
    """``rdd`` (LogisticRegressionWithSGD: our algorithm, full-batch gradient descent from
    zero with step 1/sqrt(i)): the weights equal our numpy loop's to a relative 1e-6.
    ``df`` (ml.LogisticRegression, L-BFGS: another algorithm): the mean logistic loss at
    Spark's weights, computed with numpy, equals the last value of Spark's objective
    history (relative 1e-6) and is below the loss at the zero start, log 2. Our numpy
    gradient descent's loss is reported beside it."""
    import numpy as np

    from strataflow.workloads.glm import read_all_points, train_numpy

    x, y = read_all_points(data_dir, manifest)
    w = np.asarray(res["weights"], dtype=np.float64)
    z = x @ w
    loss = float(np.mean(np.logaddexp(0.0, -z) + (1.0 - y) * z))
    ref = train_numpy(x, y, "lr", iterations, step=1.0, reg=0.0)
    extra = {"loss": loss, "accuracy": float(np.mean((z > 0) == (y > 0.5))), "numpy_gd_loss": ref.loss,
             "weights_norm": float(np.linalg.norm(w))}
    if res.get("objective_history"):
        extra["objective_history"] = res["objective_history"]
    if w.shape != ref.weights.shape or not np.isfinite(w).all():
        return f"Spark returned weights of shape {w.shape} (finite: {bool(np.isfinite(w).all())})", extra
    if path == "rdd":
        if not np.allclose(w, ref.weights, rtol=1e-6, atol=1e-9):
            return f"weights differ from our numpy gradient descent by up to {float(np.abs(w - ref.weights).max()):.3g}", extra
        return "ok", extra
    hist = res.get("objective_history") or []
    if hist and not np.isclose(loss, hist[-1], rtol=1e-6):
        return f"the numpy loss at Spark's weights ({loss:.9g}) differs from Spark's final objective ({hist[-1]:.9g})", extra
    if not loss < math.log(2.0):
        return f"the loss at Spark's weights ({loss:.6g}) is not below the loss at zero (log 2)", extra
    return "ok", extra
