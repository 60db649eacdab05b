"""How a disk tier's cold blocks are best read from the device (issue 52, point 2: profile
before changing the read path).

    python benchmarks/device_reads.py [--machine-memory 2GB] [--blocks 24] [--block-mb 64]
        [--repeat 3] [--dir DIR] [--bandwidth-mb 1024] [--out FILE]

Writes ``--blocks`` K-means-like blocks (float64 arrays, the ``pickle5`` serializer) through
the disk tier's own store (``DiskStore.put``), then, inside a machine of
``--machine-memory`` (a memory cgroup: ``strataflow/bench/machine.py``) so that the page
cache cannot hold them, reads them all back cold, one variant at a time, interleaved
``--repeat`` times (the order reversed every other repeat); before each pass every block
file's pages are dropped (``posix_fadvise(DONTNEED)``). Each read decodes the block and sums
the array (a compute step that touches every byte, as an iteration does). Variants:

- ``mapped``: the engine's path today (``DiskStore.get``: the file mapped, its checksum
  verified over the map, the arrays views of it): the kernel's readahead fills the map;
- ``populate``: the map populated first in 32 MiB ``madvise(MADV_POPULATE_READ)`` requests
  (what the region store's readahead does), then read as ``mapped``;
- ``readahead-2``: ``populate`` on a background thread for the block read and the next two
  (``page_cache.ReadAhead``): reads overlap the compute of the block before;
- ``pread``: the whole file read into a fresh buffer (``preadv``), its pages then dropped:
  no page cache kept, but a zero-fill and a copy.

Beside them: the device's own sequential read and write bandwidth with ``O_DIRECT``
(``device_bandwidth.direct_bandwidth``), the kernel's readahead window of the device, and
the device's counters over each pass (``device_counters``: the bytes read really came
from the device). Reports MB/s per variant (median over repeats) and as a share of the
O_DIRECT read.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

from strataflow.bench.device_bandwidth import device_counters, direct_bandwidth
from strataflow.bench.machine import call_in_machine
from strataflow.config import parse_size
from strataflow.storage.blocks.serde import get_serializer
from strataflow.storage.disk.disk_store import DiskStore
from strataflow.storage.mapped import page_cache

MB = 1 << 20
VARIANTS = ("mapped", "populate", "readahead-2", "pread")


def _readahead_kb(path: str) -> int | None:
    """The kernel's readahead window (KB) of the block device holding ``path``."""
    dev = os.stat(path).st_dev
    sys_dir = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    for candidate in (f"{sys_dir}/queue/read_ahead_kb", f"{sys_dir}/../queue/read_ahead_kb"):
        try:
            with open(candidate) as f:
                return int(f.read())
        except (OSError, ValueError):
            continue
    return None


def _drop(store: DiskStore) -> None:
    for _, entry in store.items():
        fd = os.open(entry.path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def passes(directory: str, blocks: int, block_mb: int, repeat: int) -> dict:
    """Inside the machine: write the blocks, then the cold read passes. JSON result."""
    ser = get_serializer("pickle5")
    store = DiskStore([directory])
    rng = np.random.default_rng(0)
    for i in range(blocks):
        frames = ser.dumps(rng.random(block_mb * MB // 8))
        store.put(i, frames, sum(memoryview(f).nbytes for f in frames), "pickle5")
    os.sync()
    ahead = page_cache.ReadAhead()
    maps: dict[int, pa.Buffer] = {}

    def mapped_buffer(i: int) -> tuple[str, pa.Buffer]:
        entry = store.entry(i)
        f = pa.memory_map(entry.path, "r")
        try:
            return entry.path, f.read_buffer()
        finally:
            f.close()

    def compute(i: int) -> float:
        payload, _ = store.get(i)
        return float(ser.loads(payload).sum())

    def populate(i: int) -> float:
        path, buf = mapped_buffer(i)
        page_cache.populate(path, buf, 0, buf.size)
        return compute(i)

    def readahead(i: int) -> float:
        for j in (i, i + 1, i + 2):
            if j < blocks and j not in maps:
                path, maps[j] = mapped_buffer(j)
                fut = ahead.request(j, path, maps[j], 0, maps[j].size)
                if j == i and fut is not None:
                    fut.result()
        value = compute(i)
        maps.pop(i, None)
        return value

    def pread(i: int) -> float:
        entry = store.entry(i)
        fd = os.open(entry.path, os.O_RDONLY)
        try:
            buf = bytearray(entry.size)
            os.preadv(fd, [buf], 0)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        return float(np.frombuffer(buf, dtype=np.uint8, count=entry.size - entry.size % 8).view(np.float64).sum())

    readers = {"mapped": compute, "populate": populate, "readahead-2": readahead, "pread": pread}
    rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
    device_gb: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for r in range(repeat):
        for v in (VARIANTS if r % 2 == 0 else tuple(reversed(VARIANTS))):
            _drop(store)
            before = device_counters(directory)
            t0 = time.perf_counter()
            for i in range(blocks):
                readers[v](i)
            seconds = time.perf_counter() - t0
            after = device_counters(directory)
            rates[v].append(blocks * block_mb / seconds)
            if before and after:
                device_gb[v].append((after[0] - before[0]) / (1 << 30))
    ahead.close()
    return {"mb_per_s": rates, "device_read_gb": device_gb}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--machine-memory", default="2GB")
    p.add_argument("--blocks", type=int, default=24)
    p.add_argument("--block-mb", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dir", default=tempfile.gettempdir())
    p.add_argument("--bandwidth-mb", type=int, default=1024, help="bytes of the O_DIRECT measure (MB)")
    p.add_argument("--out")
    a = p.parse_args(argv)
    limit = parse_size(a.machine_memory, "--machine-memory")
    if a.blocks * a.block_mb * MB <= limit // 2:
        print(f"note: {a.blocks} x {a.block_mb} MB fits in half the machine: reads may come from the page cache",
              file=sys.stderr)
    here = os.path.dirname(os.path.abspath(__file__))  # the machine's Python imports this module by name
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory(prefix="sf-device-reads-", dir=a.dir) as tmp:
        device = direct_bandwidth(tmp, a.bandwidth_mb * MB)
        spec = {"directory": tmp, "blocks": a.blocks, "block_mb": a.block_mb, "repeat": a.repeat}
        result, info = call_in_machine(limit, "device_reads:passes", spec, tmp)
    if result is None:
        print(f"the passes did not finish: {info.get('outcome')}", file=sys.stderr)
        return 1
    doc = {"device": device, "readahead_kb": _readahead_kb(a.dir), "machine": info, **spec, **result}
    print(f"device (O_DIRECT, 1 MiB): read {device['read_mb_per_s']:,.0f} MB/s, write {device['write_mb_per_s']:,.0f} "
          f"MB/s; readahead {doc['readahead_kb']} KB; machine {a.machine_memory}, peak {info['peak_mb']:,.0f} MB",
          file=sys.stderr)
    for v in VARIANTS:
        med = statistics.median(result["mb_per_s"][v])
        dev = result["device_read_gb"][v]
        print(f"{v:12s} {med:8,.0f} MB/s  {med / device['read_mb_per_s']:5.2f}x the O_DIRECT read  "
              f"(passes {', '.join(f'{x:,.0f}' for x in result['mb_per_s'][v])}; device read per pass "
              f"{statistics.median(dev) if dev else float('nan'):.2f} GB)", file=sys.stderr)
    text = json.dumps(doc, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
