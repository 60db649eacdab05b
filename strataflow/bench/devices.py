"""The device probe for ``bench devices`` and the benchmarks: defined in
:mod:`strataflow.storage.disk.probe` (the tiers measure themselves with it, and storage may not
import bench) and re-exported here, where bench code has always found it."""

from __future__ import annotations

from strataflow.storage.disk.probe import probe_bandwidth

__all__ = ["probe_bandwidth"]
