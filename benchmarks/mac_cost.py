"""What the keyed MAC on pickled frames costs (issue 14, point 4), on ``bench pressure``'s runs.

Every pickled frame the engine writes to a file (cache blocks, mapped extents, shuffle
buckets, spills) carries a keyed BLAKE2b-256 tag, checked before unpickling; raw numeric
buffers are only checksummed (XXH3). This compares, on the pressure experiment's runs
(MEMORY_AND_DISK with the cached data at 4x the memory budget), each with the MAC as
shipped and with the MAC replaced by a no-op (a hasher that ignores its input: writers and
readers agree, so nothing else changes):

- K-means on numpy batches: ``bench pressure``'s own configuration; the MAC covers only the
  pickle5 header and stream of each block, not its buffers, so its cost should be nil;
- K-means on Python records: every byte of a spilled block is pickled, so every byte is
  tagged: the worst case.

Both on the threads backend, because the no-op is installed by patching this process
(executor processes would keep the real MAC). Variants interleaved (MAC, no MAC, then the
reverse order), ``--repeat`` times; the median total seconds of each and their ratio.

    python benchmarks/mac_cost.py [--scale 0.25] [--repeat 3] [--policy spark]

Measured here (2 cores, 160 MB of K-means text, 4x pressure, spark policy, ~1.1 GB moved to
and from disk per run, medians of 3): batches 0.65 s with the MAC, 0.77 s without (noise:
the MAC covers a few hundred bytes a block); records 8.54 s against 8.28 s, 1.03x.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from contextlib import contextmanager

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from strataflow.bench.data import ensure_data  # noqa: E402
from strataflow.storage.blocks import frame_auth
from strataflow.workloads.runner import run_workload  # noqa: E402

MB = 1 << 20


class _NoTag:
    """A hasher that ignores its input: every tag is 32 zero bytes."""

    def update(self, _data) -> None:
        pass

    def digest(self) -> bytes:
        return bytes(frame_auth.TAG_BYTES)


@contextmanager
def mac(enabled: bool):
    if enabled:
        yield
        return
    real = frame_auth.FrameAuth.hasher
    frame_auth.FrameAuth.hasher = lambda self, domain: _NoTag()
    try:
        yield
    finally:
        frame_auth.FrameAuth.hasher = real


def run(data: str, api: str, memory: int, policy: str, enabled: bool) -> dict:
    with mac(enabled), tempfile.TemporaryDirectory(prefix="sf-mac-") as tmp:
        return run_workload("kmeans", data, api=api, level="MEMORY_AND_DISK", policy=policy, memory=memory,
                            parallelism=2, local_dirs=[tmp], check=False, iterations=5,
                            context_options={"backend": "threads"})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=float, default=0.25)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--policy", default="spark", help="spark moves the most bytes to and from disk")
    p.add_argument("--pressure", type=float, default=4.0)
    p.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", "data"))
    a = p.parse_args(argv)
    data = ensure_data("kmeans", a.root, a.scale)
    print(f"data: {data}; policy {a.policy}; pressure {a.pressure}x; threads backend, parallelism 2")
    for api in ("batches", "records"):
        sized = run_workload("kmeans", data, api=api, level="MEMORY_ONLY", memory="4GB", parallelism=2,
                             check=False, iterations=1, context_options={"backend": "threads"})
        memory = max(MB, int(sized["cached_memory_bytes"] / a.pressure))
        times: dict[bool, list[float]] = {True: [], False: []}
        moved = 0
        for r in range(a.repeat):
            for enabled in ((True, False) if r % 2 == 0 else (False, True)):
                rep = run(data, api, memory, a.policy, enabled)
                times[enabled].append(rep["total_s"])
                moved = rep["metrics"].get("disk_bytes_written", 0) + rep["metrics"].get("disk_bytes_read", 0)
        on, off = statistics.median(times[True]), statistics.median(times[False])
        print(f"{api:8s} memory {memory / MB:6.1f} MB  disk bytes moved {moved / MB:7.0f} MB  "
              f"MAC {on:6.2f} s  no MAC {off:6.2f} s  ratio {on / off:5.3f}  "
              f"(runs: {[round(t, 2) for t in times[True]]} / {[round(t, 2) for t in times[False]]})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
