"""Generated data for the experiments, made once and reused while its manifest matches."""

from __future__ import annotations

import os

from rich.console import Console

from strataflow.workloads.api import read_manifest, workload_module

__all__ = ["ensure_data", "data_path", "data_path_size", "DEFAULT_BYTES"]

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
    "mixed": 192 * MB,  # signals.npy; records and events add a fifth
}


def ensure_data(workload: str, root: str, scale: float, seed: int = 0, fmt: str = "text",
                console: Console | None = None, size: int | None = None, **params) -> str:
    """The directory of ``workload``'s data at ``scale`` (or of about ``size`` bytes, when
    given: ``bench scale`` sizes its inputs by the memory budget), generated if missing."""
    size = data_path_size(workload, scale, size)
    out = data_path(workload, root, size, seed, fmt, **params)
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


def data_path_size(workload: str, scale: float, size: int | None = None) -> int:
    """The bytes :func:`ensure_data` asks the generator for."""
    return max(64 * 1024, int(size if size is not None else DEFAULT_BYTES.get(workload, 64 * MB) * scale))


def data_path(workload: str, root: str, size: int, seed: int = 0, fmt: str = "text", **params) -> str:
    """Where :func:`ensure_data` keeps ``workload``'s data of ``size`` bytes (whether or not
    it is there yet: ``bench scale`` counts the disk the missing ones will take)."""
    extra = "".join(f"-{k}{v}" for k, v in sorted(params.items()))
    return os.path.join(root, f"{workload}-{fmt}-{size}-s{seed}{extra}")
