"""The ``linear`` workload (linear regression, least squares) for ``gen``, ``run`` and
``bench``.

Labels x.w + N(0, 0.5^2) from hidden weights; trained as MLlib's
``LinearRegressionWithSGD`` does: LeastSquaresGradient, SimpleUpdater (no penalty), step
1.0 decaying as 1/sqrt(i), full batch, one job per iteration. Data, formats, training
and the check are in glm.py.
"""

from __future__ import annotations

from strataflow.workloads import glm

__all__ = ["gen", "run", "KIND"]

KIND = "linear"

gen, run = glm.job(KIND)
