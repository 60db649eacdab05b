"""The shape every workload has, and the registry ``gen``, ``run`` and ``bench`` use.

A workload is a module with two functions:

    gen(out_dir, *, size, seed, fmt, progress) -> manifest dict
        Writes data under ``out_dir`` in bounded memory (chunks), deterministic for the
        seed, and returns the manifest (``write_manifest`` stores it beside the data).
        ``size`` is the approximate bytes of the main data file(s).

    run(ctx, data_dir, manifest, *, api, level, serializer, iterations, seed) -> Outcome
        Reads the data, persists what the algorithm re-reads at ``level``, runs, and
        checks its own result against an independent computation (numpy or plain Python
        on the same data), returning an :class:`Outcome`.

The runner (``runner.py``) wraps ``run`` with a Context, timings per stage, metrics and
the JSON report, so workload modules hold only the algorithm and its check.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Outcome", "WORKLOADS", "SUMMARIES", "workload_module", "check_status", "write_manifest", "read_manifest", "MANIFEST", "APIS"]

MANIFEST = "manifest.json"
APIS = ("records", "batches")

# name -> module under strataflow.workloads (each has gen() and run())
WORKLOADS: dict[str, str] = {
    "kmeans": "kmeans_job",
    "lr": "lr_job",
    "linear": "linear_job",
    "svm": "svm_job",
    "bayes": "bayes_job",
    "als": "als_job",
    "pagerank": "pagerank_job",
    "sort": "sort_job",
    "wordcount": "wordcount_job",
    "rddtest": "rddtest_job",
    "mixed": "mixed_job",
}

# name -> what it is, for ``run --help`` and ``gen --help``
SUMMARIES: dict[str, str] = {
    "kmeans": "K-means clustering of dense points (MLlib's DenseKMeans; the main job)",
    "lr": "logistic regression by gradient descent on labelled points",
    "linear": "linear regression (least squares) by gradient descent",
    "svm": "linear SVM (hinge loss) by gradient descent",
    "bayes": "multinomial naive Bayes over sparse term counts",
    "als": "alternating least squares on a ratings matrix (explicit feedback)",
    "pagerank": "PageRank over an edge list (a shuffle per iteration)",
    "sort": "TeraSort-like sort of fixed-size records (one shuffle)",
    "wordcount": "word count over text (one shuffle)",
    "rddtest": "the paper's synthetic caching test (RDDTest): re-reads of a persisted dataset",
    "mixed": "a pipeline of four datasets that want different levels: features -> K-means -> joins (bench auto)",
}

#: Set by a runner that wants the independent check announced (``strataflow run`` shows
#: a status line): a callable taking what is checked, returning a context manager. The
#: check reads the whole input again and can take longer than the run it checks, so a
#: silent one looks like a hang.
check_status: contextvars.ContextVar[Callable[[str], Any] | None] = contextvars.ContextVar(
    "check_status", default=None)


@dataclass
class Outcome:
    """What a workload's ``run`` reports (the runner adds times, stages and metrics)."""

    iteration_s: list[float] = field(default_factory=list)
    result_check: str = "ok"  # "ok", "skipped" (run without a check) or a sentence saying what differs
    extra: dict[str, Any] = field(default_factory=dict)  # workload figures: cost, accuracy, ...
    check_s: float = 0.0  # time spent checking the result independently (not the run's time)

    @contextlib.contextmanager
    def checking(self):
        """Times the independent check, which the runner leaves out of ``total_s`` (a numpy
        reference run can take as long as the run it checks), and announces it where a
        runner asked (:data:`check_status`)."""
        announce = check_status.get()
        t0 = time.perf_counter()
        try:
            with (announce("checking the result against an independent run over the whole input")
                  if announce else contextlib.nullcontext()):
                yield
        finally:
            self.check_s += time.perf_counter() - t0


def workload_module(name: str):
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose one of {', '.join(sorted(WORKLOADS))}")
    return importlib.import_module(f".{WORKLOADS[name]}", __package__)


def write_manifest(out_dir: str, manifest: dict) -> dict:
    with open(os.path.join(out_dir, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)
    return manifest


def read_manifest(data_dir: str) -> dict:
    path = os.path.join(data_dir, MANIFEST)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no {MANIFEST} in {data_dir!r}: generate data with `strataflow gen`")
    with open(path) as f:
        try:
            manifest = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path!r} is not a manifest written by `strataflow gen` (not JSON: {exc})") from None
    if not isinstance(manifest, dict):
        raise ValueError(f"{path!r} is not a manifest written by `strataflow gen` (not a JSON object)")
    return manifest


Progress = Callable[[int], None]
