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
import importlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Outcome", "WORKLOADS", "workload_module", "write_manifest", "read_manifest", "MANIFEST", "APIS"]

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
}


@dataclass
class Outcome:
    """What a workload's ``run`` reports (the runner adds times, stages and metrics)."""

    iteration_s: list[float] = field(default_factory=list)
    result_check: str = "ok"  # "ok" or a sentence saying what differs
    extra: dict[str, Any] = field(default_factory=dict)  # workload figures: cost, accuracy, ...
    check_s: float = 0.0  # time spent checking the result independently (not the run's time)

    @contextlib.contextmanager
    def checking(self):
        """Times the independent check, which the runner leaves out of ``total_s`` (a numpy
        reference run can take as long as the run it checks)."""
        t0 = time.perf_counter()
        try:
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
