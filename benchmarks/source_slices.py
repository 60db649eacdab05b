"""What verifying a source slice costs an executor, against the unverified read it replaced.

Issue 38: a ``from_numpy`` slice was read with ``np.load`` and used unchecked, so one
flipped byte gave wrong sums with no error. Each numeric slice is now read into memory in
one pass and its XXH3-64 compared with the digest the driver recorded
(``executor/source_slices.py``). This times, per slice size, the two reads of the same
file from the page cache (warm: the common case, a slice read again when a partition is
recomputed), interleaved, and prints the medians and their ratio.

    python benchmarks/source_slices.py [--sizes-mb 1,8,64] [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from strataflow.shipping.source_slices import SliceRef, read_slice, write_slice  # noqa: E402
from strataflow.storage.blocks.frame_auth import FrameAuth  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes-mb", default="1,8,64")
    p.add_argument("--repeat", type=int, default=15)
    args = p.parse_args(argv)
    print(f"{'slice':>8} {'np.load ms':>11} {'verified ms':>12} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as d:
        for mb in (float(x) for x in args.sizes_mb.split(",")):
            arr = np.random.default_rng(0).random(int(mb * (1 << 20) / 8 / 4) * 4).reshape(-1, 4)
            check = write_slice(d, 0, arr, FrameAuth())
            ref = SliceRef("bench", d, (check,))
            path = ref.file(0)
            plain, verified = [], []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                np.load(path, allow_pickle=False)
                t1 = time.perf_counter()
                read_slice(ref, 0)
                t2 = time.perf_counter()
                plain.append(t1 - t0)
                verified.append(t2 - t1)
            a, b = statistics.median(plain) * 1e3, statistics.median(verified) * 1e3
            print(f"{mb:>6g}MB {a:>11.2f} {b:>12.2f} {b / a:>6.2f}")


if __name__ == "__main__":
    main()
