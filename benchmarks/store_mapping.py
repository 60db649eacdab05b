"""How a store reader should map its block files, measured: the first pass over freshly
mapped float64 data in ``/dev/shm`` (page faults: the issue-42 "first touch"), per way of
mapping, with the K-means kernel and with a plain sum as the pass.

Ways (each in a fresh process, so nothing is mapped before; interleaved, ``--rounds``
times; the medians and the ratio to ``pa.memory_map``, the store's first read path):

- ``arrow``: ``pa.memory_map(path).read_buffer()`` (one mapping per file, faults on touch);
- ``mmap``: ``mmap.mmap`` read-only, faults on touch;
- ``populate``: ``mmap`` with ``MAP_POPULATE`` (the kernel maps every page at ``mmap``);
- ``willneed`` / ``sequential`` / ``populate_read``: ``madvise`` after the ``mmap``
  (``MADV_POPULATE_READ`` is Linux 5.14's, 22, absent from Python 3.11's constants);
- ``hugepage``: ``madvise(MADV_HUGEPAGE)``; on tmpfs it only helps where
  ``/sys/kernel/mm/transparent_hugepage/shmem_enabled`` allows (printed);
- ``one-map``: every block in one file and one populated mapping (vs one per file).

    flock /tmp/sf-bench.lock python benchmarks/store_mapping.py --mb 512 --files 8 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WAYS = ["arrow", "mmap", "populate", "willneed", "sequential", "populate_read", "hugepage", "one-map"]

CHILD = r"""
import mmap, os, sys, time, json
import numpy as np, pyarrow as pa
from strataflow.workloads.kmeans import kmeans_partition
way, d, n, kernel = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
C = np.random.default_rng(1).random((10, 20))
def run(a):
    return float(a.sum()) if kernel == "sum" else kmeans_partition(a.reshape(-1, 20), C)[2]
def mapped(path, flags=mmap.MAP_SHARED, advice=None):
    with open(path, "rb") as fh:
        m = mmap.mmap(fh.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
    if advice is not None:
        try:
            m.madvise(advice)
        except OSError:
            pass
    return m
ADVICE = {"willneed": mmap.MADV_WILLNEED, "sequential": mmap.MADV_SEQUENTIAL, "populate_read": 22,
          "hugepage": mmap.MADV_HUGEPAGE}
t0 = time.perf_counter()
total = 0.0
if way == "one-map":
    m = mapped(os.path.join(d, "all.bin"), mmap.MAP_SHARED | mmap.MAP_POPULATE)
    a = np.frombuffer(m, dtype=np.float64)
    per = len(a) // n
    for i in range(n):
        total += run(a[i * per:(i + 1) * per])
else:
    for i in range(n):
        p = os.path.join(d, f"b{i}.bin")
        if way == "arrow":
            buf = pa.memory_map(p, "r").read_buffer()
        elif way == "populate":
            buf = mapped(p, mmap.MAP_SHARED | mmap.MAP_POPULATE)
        else:
            buf = mapped(p, advice=ADVICE.get(way))
        total += run(np.frombuffer(buf, dtype=np.float64, offset=4096))
print(json.dumps({"s": time.perf_counter() - t0, "total": total}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=512)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import numpy as np

    d = f"/dev/shm/sf-map-bench-{os.getpid()}"
    os.makedirs(d)
    try:
        rows = args.mb * (1 << 20) // args.files // 160 * 20
        rng = np.random.default_rng(0)
        with open(os.path.join(d, "all.bin"), "wb") as whole:
            for i in range(args.files):
                a = rng.random(rows)
                with open(os.path.join(d, f"b{i}.bin"), "wb") as fh:
                    fh.write(b"\0" * 4096)
                    a.tofile(fh)
                a.tofile(whole)
        try:
            with open("/sys/kernel/mm/transparent_hugepage/shmem_enabled") as fh:
                print("shmem_enabled:", fh.read().strip())
        except OSError as exc:
            print("shmem_enabled: unreadable", exc)
        env = {**os.environ, "PYTHONPATH": REPO}
        for kernel in ("kmeans", "sum"):
            times: dict[str, list[float]] = {w: [] for w in WAYS}
            for _ in range(args.rounds):
                for way in WAYS:
                    out = subprocess.run([sys.executable, "-c", CHILD, way, d, str(args.files), kernel], env=env,
                                         capture_output=True, text=True, check=True)
                    times[way].append(json.loads(out.stdout)["s"])
            base = statistics.median(times["arrow"])
            print(f"\n| way ({args.mb} MB in {args.files} files, /dev/shm, pass: {kernel}; median of {args.rounds}) "
                  f"| first pass s | x arrow |\n|---|---|---|")
            for way, ts in times.items():
                print(f"| {way} | {statistics.median(ts):.3f} | {statistics.median(ts) / base:.2f} |")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
