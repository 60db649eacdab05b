"""The ``svm`` workload (linear SVM, hinge loss) for ``gen``, ``run`` and ``bench``.

Labels in {0, 1} (as MLlib wants them): 1 where x.w + N(0, 0.5^2) > 0 for hidden
weights w; trained as MLlib's ``SVMWithSGD`` does: HingeGradient (labels scaled to
-1/+1), SquaredL2Updater with regParam 0.01, step 1.0 decaying as 1/sqrt(i), full batch,
one job per iteration. Data, formats, training and the check are in glm.py.
"""

from __future__ import annotations

from strataflow.workloads import glm

__all__ = ["gen", "run", "KIND"]

KIND = "svm"

gen, run = glm.job(KIND)
