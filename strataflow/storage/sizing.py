"""Sizes of partition values and of Python object graphs.

Batches are measured exactly (``nbytes``). A Python object graph is measured by sampling:
the container's own size plus its length times the mean deep size of a few evenly spaced
elements, recursively to a small depth. Sampling keeps the cost per estimate bounded (tens
of microseconds for a million-record list) at the price of an error the tests bound.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["estimate_size"]

_SAMPLES = 24
_SCALARS = (int, float, complex, bool, str, bytes, type(None))


def estimate_size(obj: Any, depth: int = 4) -> int:
    """Estimated bytes held by ``obj`` and what it references (sampled for containers)."""
    if isinstance(obj, np.ndarray):
        base = obj.nbytes if obj.base is not None else 0
        inner = 0
        if obj.dtype == object and obj.size:
            flat = obj.ravel()
            idx = np.linspace(0, flat.size - 1, min(_SAMPLES, flat.size)).astype(np.int64)
            inner = int(flat.size * np.mean([estimate_size(flat[i], depth - 1) for i in idx]))
        return sys.getsizeof(obj) + base + inner
    if isinstance(obj, (pa.Table, pa.RecordBatch, pa.Array, pa.ChunkedArray)):
        return int(obj.nbytes)
    size = sys.getsizeof(obj)
    if isinstance(obj, _SCALARS) or depth <= 0:
        return size
    if isinstance(obj, dict):
        n = len(obj)
        if n == 0:
            return size
        items = list(obj.items()) if n <= _SAMPLES else _sample_dict(obj)
        per = sum(estimate_size(k, depth - 1) + estimate_size(v, depth - 1) for k, v in items) / len(items)
        return int(size + n * per)
    if isinstance(obj, (list, tuple, set, frozenset)):
        n = len(obj)
        if n == 0:
            return size
        seq = obj if isinstance(obj, (list, tuple)) else list(obj)
        items = _sample(seq, n)
        per = sum(estimate_size(x, depth - 1) for x in items) / len(items)
        return int(size + n * per)
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        size += estimate_size(d, depth - 1)
    return size


def _sample(seq, n: int) -> list:
    if n <= _SAMPLES:
        return list(seq)
    step = n / _SAMPLES
    return [seq[int(i * step)] for i in range(_SAMPLES)]


def _sample_dict(d: dict) -> list:
    out = []
    step = max(1, len(d) // _SAMPLES)
    for i, item in enumerate(d.items()):
        if i % step == 0:
            out.append(item)
            if len(out) == _SAMPLES:
                break
    return out
