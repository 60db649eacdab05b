"""Generated data for the experiments, made once and reused while its manifest matches."""

from __future__ import annotations

import os

from rich.console import Console

from strataflow.workloads.api import read_manifest, workload_module

__all__ = ["ensure_data", "DEFAULT_BYTES"]

MB = 1 << 20

# Data size of each workload at --scale 1 (the K-means: 4M text points, ~700 MB).
DEFAULT_BYTES = {
    "kmeans": 640 * MB,
    "lr": 256 * MB,
    "linear": 256 * MB,
    "svm": 256 * MB,
    "bayes": 128 * MB,
    "als": 64 * MB,
    "pagerank": 64 * MB,
    "sort": 256 * MB,
    "wordcount": 128 * MB,
    "rddtest": 512 * MB,
}


def ensure_data(workload: str, root: str, scale: float, seed: int = 0, fmt: str = "text",
                console: Console | None = None, **params) -> str:
    """The directory of ``workload``'s data at ``scale``, generated if missing."""
    size = max(64 * 1024, int(DEFAULT_BYTES.get(workload, 64 * MB) * scale))
    extra = "".join(f"-{k}{v}" for k, v in sorted(params.items()))
    out = os.path.join(root, f"{workload}-{fmt}-{size}-s{seed}{extra}")
    try:
        manifest = read_manifest(out)
        if manifest.get("workload") == workload:
            return out
    except FileNotFoundError:
        pass
    if console:
        console.print(f"generating {workload} data ({size / MB:,.1f} MB, {fmt}) in {out}")
    module = workload_module(workload)
    module.gen(out, size=size, seed=seed, fmt=fmt, **params)
    return out
