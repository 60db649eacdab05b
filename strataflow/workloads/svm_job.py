"""The ``svm`` workload (linear SVM, hinge loss) for ``gen``, ``run`` and ``bench``.

Labels in {0, 1} (as MLlib wants them): 1 where x.w + N(0, 0.5^2) > 0 for hidden
weights w; trained as MLlib's ``SVMWithSGD`` does: HingeGradient (labels scaled to
-1/+1), SquaredL2Updater with regParam 0.01, step 1.0 decaying as 1/sqrt(i), full batch,
one job per iteration. Data, formats, training and the check are in glm.py.
"""

from __future__ import annotations

from . import glm
from .api import Outcome, Progress

__all__ = ["gen", "run", "KIND"]

KIND = "svm"


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
