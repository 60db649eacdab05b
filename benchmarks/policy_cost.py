"""What a policy's own bookkeeping costs per block access, as the number of blocks grows.

Every policy is driven through the simulator's block-manager model (``CacheModel``: the
same calls, in the same order, as ``BlockManager`` makes) over a synthetic trace at 4x
memory pressure, and the wall time of the whole replay is divided by the reads. No data
moves, so this is the policy's cost alone (plus the model's, which is the same for all):
what ``lineage``'s predictions cost at the scale of a Spark job with thousands of
partitions, against Spark's O(1) LRU.

    python benchmarks/policy_cost.py [--blocks 32,256,2048,16384] [--kind cyclic] [--repeat 3] [--out FILE]

Prints a table (microseconds per read, median of the repeats) and the JSON.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from strataflow.bench.report import emit_json  # noqa: E402
from strataflow.simulate.model import CacheModel  # noqa: E402
from strataflow.simulate.synthetic import KINDS, synthetic  # noqa: E402
from strataflow.storage.policies import POLICIES  # noqa: E402


def cost_us(policy: str, kind: str, blocks: int, repeat: int) -> float:
    extra = {"rounds": 8} if kind == "hotset" else {"iterations": 4}
    trace = synthetic(kind, 4.0, blocks=blocks, **extra)
    reads = sum(1 for op in trace.ops if op[0] == "read")
    runs = []
    for _ in range(repeat):
        model = CacheModel(POLICIES[policy](), trace.capacity, trace.storage_fraction)
        t0 = time.perf_counter()
        model.run(trace)
        runs.append((time.perf_counter() - t0) / reads * 1e6)
    return statistics.median(runs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--blocks", default="32,256,2048,16384")
    p.add_argument("--kind", default="cyclic", choices=KINDS)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out")
    args = p.parse_args()
    sizes = [int(x) for x in args.blocks.split(",")]
    rows = {name: {n: cost_us(name, args.kind, n, args.repeat) for n in sizes} for name in POLICIES}
    print(f"{args.kind} trace, 4x pressure: microseconds per read (median of {args.repeat})")
    print("policy".ljust(12) + "".join(f"{n:>10}" for n in sizes))
    for name, by_size in rows.items():
        print(name.ljust(12) + "".join(f"{by_size[n]:>10.1f}" for n in sizes))
    emit_json({"kind": args.kind, "pressure": 4.0, "us_per_read": rows}, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
