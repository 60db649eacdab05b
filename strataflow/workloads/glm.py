"""Generalized linear models trained by full-batch gradient descent: the shared part of
the ``lr`` (logistic regression), ``linear`` (least squares) and ``svm`` (hinge loss)
workloads.

The workload's run (load, persist, train, evaluate, check) and the contract's ``gen`` and
``run`` for each kind are here; the parts are in modules of their own, whose names are
importable from here as before: the models' losses (``glm_losses.py``), the data's
generation, formats and reading (``glm_data.py``) and the gradient descent
(``glm_train.py``).
"""

from __future__ import annotations

import math

import numpy as np

from strataflow.workloads.api import Outcome, Progress
from strataflow.workloads.glm_data import (CHUNK_ROWS, DECIMALS, DIMS, FORMATS, NOISE, WEIGHT_NORM, data_path, gen, gen_glm,
                       hidden_weights, load, parse_labeled_point, read_all_points)  # noqa: F401 (re-exported)
from strataflow.workloads.glm_losses import (KINDS, MODELS, GLMModel, hinge_gradient, least_squares_gradient, logistic_gradient,
                         model_for)
from strataflow.workloads.glm_train import GLMResult, as_xy, evaluate, partial_gradient, train, train_numpy
from strataflow.workloads.reference import reference

__all__ = ["KINDS", "MODELS", "GLMModel", "GLMResult", "hidden_weights", "gen_glm", "gen", "run", "load",
           "read_all_points", "parse_labeled_point", "as_xy", "partial_gradient", "train", "evaluate", "train_numpy",
           "logistic_gradient", "least_squares_gradient", "hinge_gradient"]


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

    model = model_for(kind)
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

    ref, points = reference(kind, compute, inputs=[data_path(data_dir, manifest)], iterations=iterations, step=step,
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
