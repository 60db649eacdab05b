"""Where B's first pass over a stored dataset spends what the engine's ``DISK_MMAP`` pass does
not (issue 42's pressure target): one process, one thread, no executors, so each cost is
timed alone, in fresh processes.

- "store": a fresh process reads each block of a stored dataset as an executor of B does
  (``find_block``, ``read_block``: stat, map, header and keyed tag, the digest over the
  whole extent at the first read of a file in a process), then runs the K-means kernel on
  the values; and the kernel a second time (the pages now mapped in this process);
- "store, verify=store": the same reads of a store with ``verify="store"`` (no digest: the
  writer's record is trusted, ``store/verified.py``);
- each mapped three ways (``STRATAFLOW_STORE_MAP``): "plain" (pages at their first touch),
  "populate" (``MAP_POPULATE``), "populate_read" (the plain map, then
  ``MADV_POPULATE_READ``: every page's table entry at once; the default);
- "DISK_MMAP": a region store (the level's files, in the temp directory) filled with the
  same blocks, read once (its first pass: map, digest, kernel), then timed on its second
  pass, as the benchmark's ``DISK_MMAP`` pass is.

Both stores' files are warm in the page cache (the quarter-tier store: a quarter in
``/dev/shm``, the rest in the temp directory). Times are the processes' CPU seconds
(``process_time``; BLAS on one thread), which other sessions' load on the machine changes
less than wall time; the region store's readahead thread is counted in its first pass.
Medians of ``--rounds`` fresh processes.

    flock /tmp/sf-bench.lock python benchmarks/store_gap.py --mb 1024 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: BLAS on one thread, so a process's CPU seconds are its one thread's work
#: (label, which store: 0 verify="process", 1 verify="store", how its blocks are mapped)
_ROWS = [("store, plain map", 0, "plain"), ("store, MADV_POPULATE_READ (default map)", 0, "populate_read"),
         ("store, verify=store, plain map", 1, "plain"), ("store, verify=store, MAP_POPULATE", 1, "populate"),
         ("store, verify=store, MADV_POPULATE_READ", 1, "populate_read")]
_ONE_THREAD = {v: "1" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}

SETUP = """
import sys, numpy as np
from strataflow import Context
from strataflow.store import Store
work, mb, roots = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
np.save(work + '/points.npy', np.random.default_rng(0).random((mb * (1 << 20) // 160, 20)))
for root, verify in zip(roots, ("process", "store")):
    Store(root, verify=verify, tiers=[{"name": "mem", "dir": root, "capacity": f"{mb // 4}MB"},
                                      {"name": "disk", "dir": work + "/disk-" + verify}])
    with Context(parallelism=2, progress=False, store=root) as ctx:
        ctx.store.save(ctx.npy_file(work + '/points.npy', 8).map_partitions(np.array), 'points')
"""

READ = """
import json, sys, time, numpy as np
from strataflow.workloads.kmeans import kmeans_partition
from strataflow.store.source import root_for, find_block
from strataflow.store.blockfile import read_block
from strataflow.store.catalog import read_entry
C = np.random.default_rng(1).random((10, 20))
root = root_for(sys.argv[1])
did = read_entry(root.path, 'points', root.auth).id
t0 = time.process_time()
vals = [read_block(find_block(root, did, p), did, p, root.auth, 'b', root.records_dir(did)) for p in range(8)]
t1 = time.process_time()
for v in vals:
    kmeans_partition(v, C)
t2 = time.process_time()
for v in vals:
    kmeans_partition(v, C)
t3 = time.process_time()
print(json.dumps({"read (map, tag, digest)": t1 - t0, "kernel, first touch": t2 - t1, "kernel, pages mapped": t3 - t2}))
"""

REGION = """
import json, sys, tempfile, time, numpy as np
from strataflow.workloads.kmeans import kmeans_partition
from strataflow.storage.mapped.region_store import RegionStore
from strataflow.storage.blocks.block import BlockId
C = np.random.default_rng(1).random((10, 20))
pts = np.load(sys.argv[1] + '/points.npy', mmap_mode='r')
step = -(-len(pts) // 8)
rs = RegionStore([tempfile.mkdtemp(dir=sys.argv[1])])
for i in range(8):
    rs.put(BlockId(1, i), np.array(pts[i * step:(i + 1) * step]))
t0 = time.process_time()
for i in range(8):
    kmeans_partition(rs.get(BlockId(1, i)), C)
t1 = time.process_time()
for i in range(8):
    kmeans_partition(rs.get(BlockId(1, i)), C)
t2 = time.process_time()
print(json.dumps({"first pass": t1 - t0, "checksum (first pass, wall)": rs.stats()["checksum_s"], "second pass": t2 - t1}))
rs.close()
"""


def _run(code: str, *args: str, env: dict | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": REPO, **_ONE_THREAD, **(env or {})}, timeout=900)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1]) if code is not SETUP else {}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="sf-store-gap-")
    roots = [f"/dev/shm/sf-store-gap-{os.getpid()}", f"/dev/shm/sf-store-gapv-{os.getpid()}"]
    try:
        _run(SETUP, work, str(args.mb), *roots)
        got: dict[str, list[dict]] = {label: [] for label, _, _ in _ROWS}
        got["DISK_MMAP"] = []
        for _ in range(args.rounds):
            for label, which, mode in _ROWS:
                got[label].append(_run(READ, roots[which], env={"STRATAFLOW_STORE_MAP": mode}))
            got["DISK_MMAP"].append(_run(REGION, work))
        print(f"| {args.mb} MB, 8 blocks, one thread, medians of {args.rounds} fresh processes | CPU s |\n|---|---|")
        for name, runs in got.items():
            for key in runs[0]:
                print(f"| {name}: {key} | {statistics.median(r[key] for r in runs):.3f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for r in roots:
            shutil.rmtree(r, ignore_errors=True)


if __name__ == "__main__":
    main()
