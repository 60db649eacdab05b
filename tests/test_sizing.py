"""``estimate_size``: exact for batches, within 25% of the truth for Python object graphs.

The truth is what tracemalloc sees allocated while the object is built (numpy reports its
data buffers to tracemalloc too), so it counts what the object really owns: shared and
cached objects (small ints, interned dict keys) are not counted per reference.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

from strataflow.storage.blocks import sizing
from strataflow.storage.blocks.sizing import estimate_size

N = 30_000


def measured(build):
    """``(object, bytes allocated while building it and still held)``."""
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        obj = build()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return obj, after - before


SHAPES = {
    "tuples of int and float": lambda: [(i, i * 0.5) for i in range(N)],
    "tuples of large ints and floats": lambda: [(i * 10**12, float(i), -i - 1000) for i in range(N)],
    "tuples with small-int keys": lambda: [(i % 10, i * 0.25) for i in range(N)],
    "ascii strings": lambda: [f"record-{i}-payload" for i in range(N)],
    "non-ascii strings": lambda: [f"ключ-{i}-日本語-é" for i in range(N)],
    "strings of varying length": lambda: ["x" * (i % 150) + str(i) for i in range(N)],
    "dicts": lambda: [{"id": i, "score": i * 0.1, "name": f"user{i}"} for i in range(N // 2)],
    "small numpy arrays": lambda: [np.full(8, i, dtype=np.float64) for i in range(N // 2)],
    "pairs of key and small array": lambda: [(i, np.arange(4, dtype=np.int32) + i) for i in range(N // 2)],
    "dict of lists": lambda: {f"key{i}": [i, i * 2.0, str(i)] for i in range(N // 2)},
}


@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
def test_object_graphs_within_10_percent_of_tracemalloc(shape):
    obj, truth = measured(SHAPES[shape])
    assert truth > 1_000_000  # big enough for the allocator's noise not to matter
    est = estimate_size(obj)
    assert abs(est - truth) <= 0.10 * truth, f"{shape}: estimated {est}, tracemalloc {truth} ({est / truth:.2f}x)"


def test_estimate_cost_is_bounded(monkeypatch):
    """A sampling estimator: a list 10x longer costs the same to measure. The cost is
    counted as the objects it sizes (calls of ``_size``): the same few hundred for 10,000
    and 100,000 records, where an exact walk would size every one of them."""
    calls = 0
    real = sizing._size

    def counted(*a, **kw):
        nonlocal calls
        calls += 1
        return real(*a, **kw)

    monkeypatch.setattr(sizing, "_size", counted)

    def cost(obj) -> int:
        nonlocal calls
        calls = 0
        assert estimate_size(obj) > 0
        return calls

    small = [(i, float(i), str(i)) for i in range(10_000)]
    large = [(i, float(i), str(i)) for i in range(100_000)]
    assert cost(large) == cost(small) < 500
    mapping = {f"k{i}": (i, str(i)) for i in range(100_000)}  # no random access: sampled too
    assert cost(mapping) < 500


def test_shared_element_counted_once():
    shared = list(range(1000, 2000))  # one list referenced by every record
    records = [(i, shared) for i in range(10_000)]
    alone = estimate_size(shared)
    est = estimate_size(records)
    own = sys.getsizeof(records) + 10_000 * (sys.getsizeof((1, 2)) + sys.getsizeof(10_000))
    assert est < own + 2 * alone  # not 10,000 copies of the shared list


@pytest.mark.parametrize(
    "array",
    [
        np.zeros(1000),
        np.arange(12, dtype=np.int32).reshape(3, 4),
        np.ones((50, 20, 3), dtype=np.float32),
        np.zeros(0),
        np.arange(100.0)[::3],  # a strided view
        np.arange(200.0).reshape(20, 10).T,  # Fortran-ordered view
        np.asfortranarray(np.ones((7, 9))),
    ],
    ids=["1d", "2d-int32", "3d-float32", "empty", "strided-view", "transposed-view", "fortran"],
)
def test_numpy_arrays_exact(array):
    header = sys.getsizeof(array.view())  # a view owns no data: its size is the header alone
    assert estimate_size(array) == array.nbytes + header


def test_numpy_array_inside_records_counts_its_data():
    arrays = [np.ones(1000) for _ in range(10)]
    est = estimate_size(arrays)
    assert 10 * 8000 <= est <= 10 * 8000 * 1.1


@pytest.mark.parametrize(
    "table",
    [
        pa.table({"a": np.arange(10_000), "b": np.ones(10_000)}),
        pa.table({"s": [f"row{i}" for i in range(5000)], "n": pa.array([None, 1] * 2500, pa.int64())}),
        pa.table({"a": pa.array([], pa.float64())}),
    ],
    ids=["numeric", "strings-and-nulls", "empty"],
)
def test_arrow_tables_exact(table):
    assert estimate_size(table) == table.nbytes
    batch = table.to_batches()[0] if table.num_rows else None
    if batch is not None:
        assert estimate_size(batch) == batch.nbytes
