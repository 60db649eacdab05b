"""The ``lr`` workload (logistic regression) for ``gen``, ``run`` and ``bench``.

Labels in {0, 1} drawn as Bernoulli(sigmoid(x.w)) from hidden weights; trained as
MLlib's ``LogisticRegressionWithSGD.train`` does: LogisticGradient, SimpleUpdater (no
penalty), step 1.0 decaying as 1/sqrt(i), full batch, one job per iteration. Data,
formats, training and the check are in glm.py.
"""

from __future__ import annotations

from strataflow.workloads import glm

__all__ = ["gen", "run", "KIND"]

KIND = "lr"

gen, run = glm.job(KIND)
