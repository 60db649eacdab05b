"""The three generalized linear models of the ``lr``, ``linear`` and ``svm`` workloads:
each one's loss and gradient (MLlib's LogisticGradient, LeastSquaresGradient and
HingeGradient, summed over a partition's rows with vectorized numpy) and its MLlib
defaults (step, L2 penalty), as :data:`MODELS`.

Apart from the data (``glm_data.py``) and the descent (``glm_train.py``) because the
models are what the three workloads differ in; everything else is shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["KINDS", "MODELS", "GLMModel", "model_for", "logistic_gradient", "least_squares_gradient",
           "hinge_gradient"]

KINDS = ("lr", "linear", "svm")


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


def model_for(kind: str) -> GLMModel:
    """The model of workload ``kind``; ValueError naming the kinds for any other."""
    if kind not in MODELS:
        raise ValueError(f"unknown GLM {kind!r}; choose one of {', '.join(KINDS)}")
    return MODELS[kind]

