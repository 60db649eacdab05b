"""Memory-hit latency while another task evicts synchronously: does a hit wait for a disk write?

One block manager (sync eviction, ``no-recache``, 512 MB) holds a small hot dataset
(MEMORY_ONLY, read over and over by a reader thread) and a MEMORY_AND_DISK dataset that
fills the rest. A putter thread puts blocks of a second such dataset into the full memory,
so every put evicts a block of the first (Spark's rule: never one of its own dataset),
which is serialized and written to the cache directory. ``--kind batches``: 16 MB numpy
blocks (pickle5 out of band: the drop is the write, which releases the GIL); ``records``:
Python tuples (the drop is ``pickle.dumps``, one C call that holds the GIL, so a hit waits
for the GIL whether or not the lock is held: the lock is not what such a hit waits for).
``--device-mbps N`` emulates a device of N MB/s under the cache directory: each block
write is followed by a sleep of its bytes / N (a blocking write releases the GIL, as the
sleep does); 0 writes to the page cache only, as this machine's disk absorbs 16 MB writes.
Spark (and strataflow before issue 12) dropped victims while holding the memory manager's
lock, which every memory hit takes: a hit waited for a whole drop. Now victims are chosen
under the lock and written outside it.

Measured: the reader's per-hit latency (p50, p99, max) and its hits per second while the
putter runs; the putter's milliseconds per put with the reader running (``put_ms``: the
reader is a tight Python loop, so once it no longer sits blocked on the lock it shares
the GIL with the putter) and alone, before the reader starts (``put_alone_ms``: the
eviction's own cost). Each tree named
with ``--tree`` runs in its own subprocess; trees alternate, ``--repeat`` rounds, medians.

    python benchmarks/eviction_hits.py [--tree NAME=PATH ...] [--kind batches|records] [--device-mbps 200] [--repeat 3] [--puts 24] [--out FILE]

Default: the checkout this script is in. To compare with an older commit:
``git worktree add /tmp/old <commit>`` and ``--tree old=/tmp/old --tree new=.``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r'''
import json, os, sys, tempfile, threading, time
import numpy as np
import strataflow
from strataflow.storage.memory.unified import MemoryManager
from strataflow.storage.disk.disk_store import DiskStore
from strataflow.storage.level import StorageLevel
from strataflow.storage.manager import BlockId, BlockManager
from strataflow.storage.policies import make_policy

MB = 1 << 20
puts, record_rows, kind, mbps = int(sys.argv[1]), int(sys.argv[2]), sys.argv[4], float(sys.argv[5])
mm = MemoryManager(512 * MB, 0.5)
with tempfile.TemporaryDirectory(dir=sys.argv[3]) as d:
    store = DiskStore([d])
    if mbps > 0:
        real_put = store.put

        def device_put(block_id, frames, size, ser, *a, **k):
            entry = real_put(block_id, frames, size, ser, *a, **k)
            time.sleep(size / (mbps * MB))  # the device's time for these bytes, GIL released
            return entry

        store.put = device_put
    bm = BlockManager(mm, store, make_policy("no-recache"))
    bm.register(1, lambda: "hot", StorageLevel.MEMORY_ONLY, None, 8)
    ser = "pickle" if kind == "records" else None
    bm.register(2, lambda: "cold", StorageLevel.MEMORY_AND_DISK, ser, 10_000)
    bm.register(3, lambda: "new", StorageLevel.MEMORY_AND_DISK, ser, 10_000)
    hot = [np.full(MB // 8, i, dtype=np.float64) for i in range(8)]
    for i in range(8):
        bm.get_or_compute(BlockId(1, i), StorageLevel.MEMORY_ONLY, lambda i=i: hot[i])

    def records(split):
        if kind == "batches":
            return np.full(16 * MB // 8, float(split))
        return [(split, j, float(j), "r%d" % j) for j in range(record_rows)]

    split = 0
    while True:  # fill memory with record blocks: from now on every put of dataset 3 evicts one
        bm.get_or_compute(BlockId(2, split), StorageLevel.MEMORY_AND_DISK, lambda s=split: records(s))
        split += 1
        if BlockId(2, split - 1) not in bm.memory_store:
            break  # the first that found no room went to disk
    assert split > puts, f"only {split} blocks fit: fewer than the puts that evict them"
    ready = [records(k) for k in range(puts)]  # computed ahead: the putter only puts
    stop = threading.Event()
    lat = []

    def reader():
        i = 0
        while not stop.is_set():
            t0 = time.perf_counter()
            bm.get_or_compute(BlockId(1, i % 8), StorageLevel.MEMORY_ONLY, lambda: None)
            lat.append(time.perf_counter() - t0)
            i += 1

    alone = max(1, puts // 6)  # the first puts with no reader: the eviction's own cost
    t0 = time.perf_counter()
    for k in range(alone):
        bm.get_or_compute(BlockId(3, k), StorageLevel.MEMORY_AND_DISK, lambda k=k: ready[k])
    alone_s = time.perf_counter() - t0
    r = threading.Thread(target=reader)
    t0 = time.perf_counter()
    r.start()
    for k in range(alone, puts):
        bm.get_or_compute(BlockId(3, k), StorageLevel.MEMORY_AND_DISK, lambda k=k: ready[k])
    put_s = time.perf_counter() - t0
    puts_shared = puts - alone
    stop.set()
    r.join()
    m = bm.metrics.snapshot()
    assert m["sync_evictions"] >= puts, m
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1e6
    print(json.dumps({"tree": os.path.dirname(os.path.dirname(strataflow.__file__)), "hits": len(lat), "hits_per_s": len(lat) / put_s, "p50_us": q(0.5), "p99_us": q(0.99),
                      "max_us": lat[-1] * 1e6, "put_ms": put_s / puts_shared * 1e3,
                      "put_alone_ms": alone_s / alone * 1e3,
                      "evicted": m["sync_evictions"], "bytes_written_mb": m["disk_bytes_written"] / MB}))
    bm.close()
'''


def run_tree(path: str, puts: int, rows: int, work: str, kind: str, mbps: float) -> dict:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
    # cwd: ``python -c`` puts the current directory first on sys.path, which would shadow PYTHONPATH
    out = subprocess.run([sys.executable, "-c", CHILD, str(puts), str(rows), work, kind, str(mbps)], env=env,
                         cwd=work, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", action="append", default=[], help="NAME=PATH of a strataflow checkout")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--puts", type=int, default=24)
    ap.add_argument("--rows", type=int, default=40_000, help="records per block (--kind records)")
    ap.add_argument("--kind", choices=["batches", "records"], default="batches")
    ap.add_argument("--device-mbps", type=float, default=200.0, help="emulated device bandwidth; 0: page cache only")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    trees = dict(t.split("=", 1) for t in args.tree) or {"this": os.path.join(HERE, "..")}
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(args.repeat):  # interleaved: each round runs every tree once
            for name, path in trees.items():
                runs[name].append(run_tree(path, args.puts, args.rows, work, args.kind, args.device_mbps))
    keys = ["hits_per_s", "p50_us", "p99_us", "max_us", "put_ms", "put_alone_ms"]
    summary = {name: {k: statistics.median(r[k] for r in rs) for k in keys} for name, rs in runs.items()}
    print(f"{'tree':<10}" + "".join(f"{k:>14}" for k in keys))
    for name, s in summary.items():
        print(f"{name:<10}" + "".join(f"{s[k]:>14,.1f}" for k in keys))
    result = {"summary": summary, "runs": runs, "repeat": args.repeat, "puts": args.puts, "rows": args.rows,
              "kind": args.kind, "device_mbps": args.device_mbps}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
