"""Shared hypothesis strategies and helpers for the tests that compare datasets with
plain Python: partition *layouts* (1..9 partitions, often empty) and value normalizing."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

ints = st.integers(-1000, 1000)
small_keys = st.integers(0, 6)
pair = st.tuples(small_keys, ints)


def layouts(elem, max_part=8, max_parts=9):
    """1..``max_parts`` partitions of up to ``max_part`` records each (often empty)."""
    return st.lists(st.lists(elem, max_size=max_part), min_size=1, max_size=max_parts)


def flat(parts):
    return [x for p in parts for x in p]


def py(x):
    """numpy scalars and rows, and Arrow rows, as plain Python values (rows as tuples)."""
    if isinstance(x, np.ndarray):
        return tuple(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, tuple):
        return tuple(py(y) for y in x)
    if isinstance(x, list):
        return [py(y) for y in x]
    return x
