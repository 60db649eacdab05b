"""Memory honesty (issue 14, point 7): the application's anonymous memory, driver and
executor processes together, stays within the ceiling the README states:

    budget + (task slots x 3 + writing executors x 2) x largest block + idle footprint + 32 MB per process

measured by ``benchmarks/memory_bound.py`` (each variant in a fresh interpreter) on a small
K-means under pressure, for Python records (whose read-back from disk once cost five
blocks' worth per task) and numpy batches, on both backends."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

_PATH = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "memory_bound.py")


def _bench():
    spec = importlib.util.spec_from_file_location("memory_bound", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc for memory figures")
def test_anonymous_memory_stays_within_the_stated_ceiling(tmp_path):
    bench = _bench()
    rc = bench.main(["--size", "48MB", "--memory", "16MB", "--iterations", "2", "--apis", "records,batches",
                     "--levels", "MEMORY_AND_DISK", "--backends", "threads,processes", "--out", str(tmp_path)])
    rows = json.loads((tmp_path / "memory_bound.json").read_text())["rows"]
    assert len(rows) == 4
    for r in rows:
        # the pressure is real: blocks went to disk, and the largest block is known
        assert r["disk_bytes_written"] > 0 and r["largest_block"] > 0, r
        assert r["peak"] <= r["bound"], (
            f"{r['api']} {r['backend']}: peak {r['peak'] >> 20} MB over the ceiling {r['bound'] >> 20} MB")
    assert rc == 0
