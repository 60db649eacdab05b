"""The ``lr`` workload (logistic regression) for ``gen``, ``run`` and ``bench``.

Labels in {0, 1} drawn as Bernoulli(sigmoid(x.w)) from hidden weights; trained as
MLlib's ``LogisticRegressionWithSGD.train`` does: LogisticGradient, SimpleUpdater (no
penalty), step 1.0 decaying as 1/sqrt(i), full batch, one job per iteration. Data,
formats, training and the check are in glm.py.
"""

from __future__ import annotations

from . import glm
from .api import Outcome, Progress

__all__ = ["gen", "run", "KIND"]

KIND = "lr"


def gen(out_dir: str, *, size: int, seed: int = 0, fmt: str = "text", progress: Progress | None = None,
        points: int | None = None, dims: int = glm.DIMS, **options) -> dict:
    """Labelled points (``label f1 ... fd`` text lines or a ``(points, 1 + dims)`` .npy);
    ``options``: chunk_rows, decimals, noise."""
    return glm.gen(KIND, out_dir, size=size, seed=seed, fmt=fmt, progress=progress, points=points, dims=dims,
                   **options)


def run(ctx, data_dir: str, manifest: dict, *, api: str = "batches", level=None, serializer=None,
        iterations: int = 5, seed: int = 0, check: bool = True, **options) -> Outcome:
    """Persists the parsed points at ``level``, trains, evaluates and checks against a
    numpy loop; ``options``: step, reg, num_partitions, rtol."""
    return glm.run(KIND, ctx, data_dir, manifest, api=api, level=level, serializer=serializer,
                   iterations=iterations, seed=seed, check=check, **options)
